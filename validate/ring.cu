/* ring.cu: ring all_reduce, all_gather and reduce_scatter written the way NCCL's Simple
 * protocol runs them (src/device/all_reduce.h, all_gather.h, reduce_scatter.h in NCCL): one
 * CTA per channel, each channel a contiguous part of every loop over the buffer, each step a
 * chunk moved slice by slice through the next rank's FIFO.
 * Invariant: every rank runs the same sequence of steps with the same sizes, so the n-th
 * slice a rank sends is the n-th its successor receives. */
#include "coll_impl.cuh"

struct ring_args {
    const char *in;
    char *out;
    int64_t count; /* all_reduce: elements; all_gather, reduce_scatter: per-rank block */
    int rank, nranks;
    icsv_op op;
    conn_chan *chans;
    conn_geom geom;
};

/* Reduce-scatter then all-gather around the ring, 2(n-1) steps per loop: each rank ends
 * with chunk `rank` reduced, then passes reduced chunks on. Chunk k of a loop is at
 * grid + (channel * n + k) * real. */
template <typename T, int U> __device__ void all_reduce(conn_chan &c, const ring_args &a)
{
    const T *in = (const T *)a.in;
    T *out = (T *)a.out;
    const int64_t n = a.nranks, nch = gridDim.x, ch = blockIdx.x, V = 16 / sizeof(T);
    const int64_t chunk = a.geom.chunk_bytes / (int64_t)sizeof(T);
    for (int64_t grid = 0; grid < a.count; grid += nch * n * chunk) {
        /* smaller chunks near the end, so that every channel and rank gets a share */
        int64_t real = align_up(div_up(a.count - grid, nch * n), V);
        real = real < chunk ? real : chunk;
        auto at = [&](int64_t k) { return grid + (ch * n + mod_ranks(k, n)) * real; };
        auto len = [&](int64_t off) { return clamp_len(a.count - off, real); };
        int64_t o = at(a.rank - 1);
        step<T, U, false, true>(c, a.geom, in + o, nullptr, len(o)); /* send */
        for (int j = 2; j < n; j++) {
            o = at(a.rank - j);
            step<T, U, true, true>(c, a.geom, in + o, nullptr, len(o)); /* recvReduceSend */
        }
        o = at(a.rank);
        step<T, U, true, true>(c, a.geom, in + o, out + o, len(o)); /* recvReduceCopySend */
        for (int j = 1; j < n - 1; j++) {
            o = at(a.rank - j);
            step<T, U, true, true>(c, a.geom, nullptr, out + o, len(o)); /* recvCopySend */
        }
        o = at(a.rank + 1);
        step<T, U, true, false>(c, a.geom, nullptr, out + o, len(o)); /* recv */
    }
}

/* n-1 steps: send our block, then forward each block that arrives; block k of the output
 * belongs to rank k. In place, our block already sits in the output and is only sent. */
template <typename T, int U> __device__ void all_gather(conn_chan &c, const ring_args &a)
{
    const T *in = (const T *)a.in;
    T *out = (T *)a.out;
    const int64_t n = a.nranks, nch = gridDim.x, ch = blockIdx.x, V = 16 / sizeof(T);
    const int64_t chunk = a.geom.chunk_bytes / (int64_t)sizeof(T), pc = a.count;
    for (int64_t grid = 0; grid < pc; grid += nch * chunk) {
        int64_t real = align_up(div_up(pc - grid, nch), V);
        real = real < chunk ? real : chunk;
        const int64_t o = grid + ch * real, nelem = clamp_len(pc - o, real);
        auto block = [&](int64_t k) { return out + mod_ranks(k, n) * pc + o; };
        T *mine = block(a.rank);
        step<T, U, false, true>(c, a.geom, in + o, in + o == mine ? nullptr : mine, nelem);
        for (int j = 1; j < n - 1; j++)
            step<T, U, true, true>(c, a.geom, nullptr, block(a.rank - j), nelem);
        step<T, U, true, false>(c, a.geom, nullptr, block(a.rank + 1), nelem);
    }
}

/* n-1 steps: block k of the input is reduced on its way round the ring and lands, complete,
 * at rank k. */
template <typename T, int U> __device__ void reduce_scatter(conn_chan &c, const ring_args &a)
{
    const T *in = (const T *)a.in;
    T *out = (T *)a.out;
    const int64_t n = a.nranks, nch = gridDim.x, ch = blockIdx.x, V = 16 / sizeof(T);
    const int64_t chunk = a.geom.chunk_bytes / (int64_t)sizeof(T), pc = a.count;
    for (int64_t grid = 0; grid < pc; grid += nch * chunk) {
        int64_t real = align_up(div_up(pc - grid, nch), V);
        real = real < chunk ? real : chunk;
        const int64_t o = grid + ch * real, nelem = clamp_len(pc - o, real);
        auto block = [&](int64_t k) { return in + mod_ranks(k, n) * pc + o; };
        step<T, U, false, true>(c, a.geom, block(a.rank - 1), nullptr, nelem);
        for (int j = 2; j < n; j++)
            step<T, U, true, true>(c, a.geom, block(a.rank - j), nullptr, nelem);
        step<T, U, true, false>(c, a.geom, block(a.rank), out + o, nelem); /* recvReduceCopy */
    }
}

template <typename T, int U>
__global__ void __launch_bounds__(ICSV_THREADS) ring_kernel(ring_args a)
{
    __shared__ conn_chan c;
    chan_load(c, a.chans);
    switch (a.op) {
    case ICSV_OP_ALL_REDUCE:
        all_reduce<T, U>(c, a);
        break;
    case ICSV_OP_ALL_GATHER:
        all_gather<T, U>(c, a);
        break;
    case ICSV_OP_REDUCE_SCATTER:
        reduce_scatter<T, U>(c, a);
        break;
    default:
        break;
    }
    chan_store(c, a.chans);
}

struct ring_fn {
    template <typename T, int U>
    static void run(const icsv_conn *c, const coll_call *call, const icsv_kernel_params *p)
    {
        const icsv_gpus *g = call->g;
        bool whole = call->op == ICSV_OP_ALL_REDUCE;
        for (int r = 0; r < g->n; r++) {
            ring_args a = {call->in[r],
                           call->out[r],
                           (int64_t)(whole ? call->counts.send_count : call->counts.count),
                           r,
                           g->n,
                           call->op,
                           conn_chans(c, r),
                           conn_geometry(c)};
            ICSV_CUDA(cudaSetDevice(g->dev[r]));
            ring_kernel<T, U><<<p->ctas, ICSV_THREADS, 0, g->stream[r]>>>(a);
            ICSV_LAUNCHED();
        }
    }
};

void ring_launch(const icsv_conn *c, const coll_call *call, const icsv_kernel_params *p)
{
    dispatch<ring_fn>(call->dtype, p->unroll, c, call, p);
}

/* Each CTA copies a contiguous part: a one-rank collective is its input copied out. */
template <typename T, int U>
__global__ void __launch_bounds__(ICSV_THREADS) local_copy_kernel(const T *in, T *out, int64_t n)
{
    int64_t per = align_up(div_up(n, gridDim.x), 16 / sizeof(T));
    int64_t off = blockIdx.x * per;
    reduce_copy<T, U>(nullptr, in + off, out + off, nullptr, clamp_len(n - off, per));
}

struct local_copy_fn {
    template <typename T, int U> static void run(const coll_call *call, const icsv_kernel_params *p)
    {
        const icsv_gpus *g = call->g;
        if (call->in[0] == call->out[0])
            return;
        ICSV_CUDA(cudaSetDevice(g->dev[0]));
        local_copy_kernel<T, U><<<p->ctas, ICSV_THREADS, 0, g->stream[0]>>>(
            (const T *)call->in[0], (T *)call->out[0], (int64_t)call->counts.recv_count);
        ICSV_LAUNCHED();
    }
};

void local_copy_launch(const coll_call *call, const icsv_kernel_params *p)
{
    dispatch<local_copy_fn>(call->dtype, p->unroll, call, p);
}
