/* alltoall.cu: all-to-all by direct stores: every rank writes block p of its input straight
 * into rank p's output (slot `rank`), no FIFO; then each CTA posts an arrival flag at every
 * peer, and CTA 0 of each rank waits for all of them, so that a kernel ends only once its
 * output is complete.
 * Invariant: arrival flags hold the launch number (epoch) and only grow. */
#include "coll_impl.cuh"

struct icsv_a2a {
    const icsv_gpus *g;
    int ctas;
    uint64_t *flags[ICSV_MAX_GPUS]; /* per rank: [sender * ctas + cta], 128 bytes apart */
    uint64_t epoch;                 /* launches so far */
};

static const int a2a_stride = 128 / sizeof(uint64_t);

struct a2a_args {
    const char *in;
    char *peer_out[ICSV_MAX_GPUS]; /* every rank's output for this call */
    uint64_t *peer_flags[ICSV_MAX_GPUS];
    int64_t block; /* elements per peer */
    int rank, nranks;
    uint64_t epoch;
};

/* Work items (peer, part): with more CTAs than peers, several CTAs share a peer; the order
 * starts at rank + 1 so that ranks do not all write to the same peer first. */
template <typename T, int U> __global__ void __launch_bounds__(ICSV_THREADS) a2a_kernel(a2a_args a)
{
    const int n = a.nranks, nch = gridDim.x;
    const int parts = nch > n ? nch / n : 1;
    const int64_t V = 16 / sizeof(T), per = align_up(div_up(a.block, parts), V);
    for (int item = blockIdx.x; item < n * parts; item += nch) {
        int peer = (a.rank + 1 + item % n) % n;
        int64_t off = (item / n) * per;
        const T *src = (const T *)a.in + peer * a.block + off;
        T *dst = (T *)a.peer_out[peer] + a.rank * a.block + off;
        reduce_copy<T, U>(nullptr, src, dst, nullptr, clamp_len(a.block - off, per));
    }
    __syncthreads(); /* all of this CTA's stores precede thread 0's releases */
    if (threadIdx.x == 0)
        for (int p = 0; p < n; p++)
            st_release_sys(a.peer_flags[p] + (a.rank * nch + blockIdx.x) * a2a_stride, a.epoch);
    if (blockIdx.x != 0)
        return;
    for (int k = threadIdx.x; k < n * nch; k += blockDim.x) /* every sender, every CTA */
        wait_ge(a.peer_flags[a.rank] + k * a2a_stride, a.epoch, "alltoall arrival");
}

icsv_a2a *a2a_new(const icsv_gpus *g, const icsv_kernel_params *p)
{
    icsv_a2a *a = new icsv_a2a{};
    a->g = g;
    a->ctas = p->ctas;
    size_t bytes = (size_t)g->n * p->ctas * a2a_stride * sizeof(uint64_t);
    for (int r = 0; r < g->n; r++) {
        ICSV_CUDA(cudaSetDevice(g->dev[r]));
        ICSV_CUDA(cudaMalloc(&a->flags[r], bytes));
        ICSV_CUDA(cudaMemset(a->flags[r], 0, bytes));
    }
    return a;
}

void a2a_free(icsv_a2a *a)
{
    if (!a)
        return;
    for (int r = 0; r < a->g->n; r++) {
        ICSV_CUDA(cudaSetDevice(a->g->dev[r]));
        ICSV_CUDA(cudaFree(a->flags[r]));
    }
    delete a;
}

struct a2a_fn {
    template <typename T, int U>
    static void run(icsv_a2a *s, const coll_call *call, const icsv_kernel_params *p)
    {
        const icsv_gpus *g = call->g;
        a2a_args a = {};
        a.block = (int64_t)call->counts.count;
        a.nranks = g->n;
        a.epoch = ++s->epoch;
        for (int r = 0; r < g->n; r++) {
            a.peer_out[r] = call->out[r];
            a.peer_flags[r] = s->flags[r];
        }
        for (int r = 0; r < g->n; r++) {
            a.in = call->in[r];
            a.rank = r;
            ICSV_CUDA(cudaSetDevice(g->dev[r]));
            a2a_kernel<T, U><<<p->ctas, ICSV_THREADS, 0, g->stream[r]>>>(a);
            ICSV_LAUNCHED();
        }
    }
};

void a2a_launch(icsv_a2a *a, const coll_call *call, const icsv_kernel_params *p)
{
    dispatch<a2a_fn>(call->dtype, p->unroll, a, call, p);
}
