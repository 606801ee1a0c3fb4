/* check.cu: nccl-tests' #wrong: inputs filled with a pattern that depends on rank and index,
 * outputs compared on the GPU with the value the collective must produce.
 * Invariant: pattern values are small integers, so every sum is exact in float and bf16
 * whatever the order of reduction; a mismatch is a misplaced or lost element, never rounding. */
#include "coll_impl.cuh"

/* float: -510..510, sums of 32 ranks < 2^24; bf16: -4..4, sums of 32 ranks <= 128 < 2^8. */
__device__ __forceinline__ int pattern(bool bf16, int64_t rank, int64_t i)
{
    return bf16 ? (int)((rank * 3 + i * 7) % 9) - 4 : (int)((rank * 131 + i * 17) % 1021) - 510;
}

template <typename T> __device__ __forceinline__ T from_int(int v);
template <> __device__ __forceinline__ float from_int<float>(int v)
{
    return (float)v;
}
template <> __device__ __forceinline__ __nv_bfloat16 from_int<__nv_bfloat16>(int v)
{
    return __int2bfloat16_rn(v);
}

__device__ __forceinline__ float to_float(float v)
{
    return v;
}
__device__ __forceinline__ float to_float(__nv_bfloat16 v)
{
    return __bfloat162float(v);
}

template <typename T> __global__ void fill_kernel(T *p, int64_t n, int rank)
{
    const bool bf16 = sizeof(T) == 2;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n;
         i += (int64_t)gridDim.x * blockDim.x)
        p[i] = from_int<T>(pattern(bf16, rank, i));
}

/* What element i of rank `rank`'s output must hold; pc = per-rank block elements. */
__device__ int expected(bool bf16, icsv_op op, int rank, int n, int64_t pc, int64_t i)
{
    int sum = 0;
    switch (op) {
    case ICSV_OP_ALL_REDUCE:
        for (int s = 0; s < n; s++)
            sum += pattern(bf16, s, i);
        return sum;
    case ICSV_OP_REDUCE_SCATTER:
        for (int s = 0; s < n; s++)
            sum += pattern(bf16, s, rank * pc + i);
        return sum;
    case ICSV_OP_ALL_GATHER: /* block s is rank s's input */
        return pattern(bf16, i / pc, i % pc);
    case ICSV_OP_ALLTOALL: /* block s is what rank s sent us: its block `rank` */
        return pattern(bf16, i / pc, rank * pc + i % pc);
    default: /* sendrecv: the previous rank's buffer */
        return pattern(bf16, (rank + n - 1) % n, i);
    }
}

template <typename T>
__global__ void check_kernel(const T *out, int64_t n_out, icsv_op op, int rank, int n, int64_t pc,
                             unsigned long long *wrong)
{
    const bool bf16 = sizeof(T) == 2;
    unsigned long long mine = 0;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n_out;
         i += (int64_t)gridDim.x * blockDim.x)
        mine += to_float(out[i]) != (float)expected(bf16, op, rank, n, pc, i);
    if (mine)
        atomicAdd(wrong, mine);
}

struct fill_fn {
    template <typename T, int U> static void run(const coll_call *call)
    {
        const icsv_gpus *g = call->g;
        size_t elt = sizeof(T);
        for (int r = 0; r < g->n; r++) {
            ICSV_CUDA(cudaSetDevice(g->dev[r]));
            /* outputs start at zero, so that a collective that writes nothing cannot pass
             * on the previous size's results; in place, the output holds the input (all but
             * all_gather, whose input is one block of it) */
            if (call->op == ICSV_OP_ALL_GATHER || !call->in_place)
                ICSV_CUDA(
                    cudaMemsetAsync(call->out[r], 0, call->counts.recv_count * elt, g->stream[r]));
            fill_kernel<T><<<256, 256, 0, g->stream[r]>>>((T *)call->in[r],
                                                          (int64_t)call->counts.send_count, r);
            ICSV_LAUNCHED();
        }
    }
};

void check_fill(const coll_call *call)
{
    dispatch<fill_fn>(call->dtype, 4, call);
}

struct check_fn {
    template <typename T, int U>
    static void run(const coll_call *call, unsigned long long *const *counters)
    {
        const icsv_gpus *g = call->g;
        for (int r = 0; r < g->n; r++) {
            ICSV_CUDA(cudaSetDevice(g->dev[r]));
            ICSV_CUDA(cudaMemsetAsync(counters[r], 0, sizeof(unsigned long long), g->stream[r]));
            check_kernel<T><<<256, 256, 0, g->stream[r]>>>(
                (const T *)call->out[r], (int64_t)call->counts.recv_count, call->op, r, g->n,
                (int64_t)call->counts.count, counters[r]);
            ICSV_LAUNCHED();
        }
    }
};

int64_t check_count_wrong(const coll_call *call, unsigned long long *const *counters)
{
    dispatch<check_fn>(call->dtype, 4, call, counters);
    icsv_gpus_sync(call->g);
    int64_t total = 0;
    for (int r = 0; r < call->g->n; r++) {
        unsigned long long w = 0;
        ICSV_CUDA(cudaSetDevice(call->g->dev[r]));
        ICSV_CUDA(cudaMemcpy(&w, counters[r], sizeof w, cudaMemcpyDeviceToHost));
        total += (int64_t)w;
    }
    return total;
}
