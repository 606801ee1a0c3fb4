/* sendrecv.cu: nccl-tests' sendrecv (rank r sends to r+1, receives from r-1) over the same
 * Simple-protocol FIFOs as the ring: each channel sends a chunk, then receives one.
 * Invariant: the FIFO holds two chunks, so a send never waits for a receive that waits for
 * it: every rank sends chunk k before it receives chunk k. */
#include "coll_impl.cuh"

struct sendrecv_args {
    const char *in;
    char *out;
    int64_t count;
    conn_chan *chans;
    conn_geom geom;
};

template <typename T, int U>
__global__ void __launch_bounds__(ICSV_THREADS) sendrecv_kernel(sendrecv_args a)
{
    __shared__ conn_chan c;
    chan_load(c, a.chans);
    const T *in = (const T *)a.in;
    T *out = (T *)a.out;
    const int64_t V = 16 / sizeof(T), chunk = a.geom.chunk_bytes / (int64_t)sizeof(T);
    const int64_t part = align_up(div_up(a.count, gridDim.x), V);
    const int64_t begin = blockIdx.x * part, end = begin + clamp_len(a.count - begin, part);
    for (int64_t o = begin; o < end; o += chunk) {
        int64_t len = clamp_len(end - o, chunk);
        step<T, U, false, true>(c, a.geom, in + o, nullptr, len);
        step<T, U, true, false>(c, a.geom, nullptr, out + o, len);
    }
    chan_store(c, a.chans);
}

struct sendrecv_fn {
    template <typename T, int U>
    static void run(const icsv_conn *c, const coll_call *call, const icsv_kernel_params *p)
    {
        const icsv_gpus *g = call->g;
        for (int r = 0; r < g->n; r++) {
            sendrecv_args a = {call->in[r], call->out[r], (int64_t)call->counts.count,
                               conn_chans(c, r), conn_geometry(c)};
            ICSV_CUDA(cudaSetDevice(g->dev[r]));
            sendrecv_kernel<T, U><<<p->ctas, ICSV_THREADS, 0, g->stream[r]>>>(a);
            ICSV_LAUNCHED();
        }
    }
};

void sendrecv_launch(const icsv_conn *c, const coll_call *call, const icsv_kernel_params *p)
{
    dispatch<sendrecv_fn>(call->dtype, p->unroll, c, call, p);
}
