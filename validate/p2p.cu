/* p2p.cu: what one GPU pair can do, as p2pBandwidthLatencyTest measures it: unidirectional and
 * bidirectional bandwidth of large copies (SM stores over peer pointers, or copy engines), and
 * one-way latency from a flag ping-pong in peer memory.
 * Invariant: only one pair is measured at a time; every other GPU is idle. */
#include "gpus_impl.cuh"
#include "proto.cuh"

#define PINGPONG_WARMUP 1000
#define PINGPONG_ROUNDS 10000
#define CE_LAT_COPIES   1000

/* Grid-stride 16-byte copy; U loads in flight per thread before any store. When dst is a
 * peer's memory every store crosses the link: this is "P2P writes". */
template <int U>
__global__ void __launch_bounds__(ICSV_THREADS) copy_kernel(const uint4 *src, uint4 *dst, int64_t n)
{
    const int64_t nt = (int64_t)gridDim.x * blockDim.x;
    for (int64_t base = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; base < n; base += nt * U) {
        uint4 v[U];
#pragma unroll
        for (int u = 0; u < U; u++)
            if (base + u * nt < n)
                v[u] = src[base + u * nt];
#pragma unroll
        for (int u = 0; u < U; u++)
            if (base + u * nt < n)
                dst[base + u * nt] = v[u];
    }
}

/* Thread 0 of each block works. Block 0 (the pinger) writes k into its partner's flag and waits for
 * k back in its own; block 1 (or the kernel on the other GPU) echoes. Flags live in the
 * waiter's memory, so each spin is a local load and each post one store across the link: a
 * round trip is two one-way flag latencies, with the release/acquire pair our protocol pays
 * per slice. */
__global__ void pingpong_kernel(uint64_t *my_flag, uint64_t *peer_flag, int pinger, double *ns)
{
    if (threadIdx.x != 0)
        return;
    const bool ping = blockIdx.x == 0 && pinger;
    uint64_t *mine = blockIdx.x == 0 ? my_flag : peer_flag; /* one GPU: two blocks, two flags */
    uint64_t *theirs = blockIdx.x == 0 ? peer_flag : my_flag;
    uint64_t t0 = 0;
    for (uint64_t k = 1; k <= PINGPONG_WARMUP + PINGPONG_ROUNDS; k++) {
        if (ping && k == PINGPONG_WARMUP + 1)
            t0 = globaltimer_ns();
        if (ping) {
            st_release_sys(theirs, k);
            wait_ge(mine, k, "ping-pong");
        } else {
            wait_ge(mine, k, "ping-pong");
            st_release_sys(theirs, k);
        }
    }
    if (ping)
        *ns = (double)(globaltimer_ns() - t0) / (2.0 * PINGPONG_ROUNDS);
}

struct p2p_bufs {
    const icsv_gpus *g;
    int64_t bytes;
    char *a[ICSV_MAX_GPUS], *b[ICSV_MAX_GPUS]; /* source, destination */
    uint64_t *flag[ICSV_MAX_GPUS];             /* two flags 128 bytes apart */
    double *ns[ICSV_MAX_GPUS];
    cudaEvent_t start[ICSV_MAX_GPUS], stop[ICSV_MAX_GPUS];
    bool sm;
    int ctas, unroll;
};

static void copy_once(const p2p_bufs *s, int from, int to, const char *src, char *dst,
                      cudaStream_t stream)
{
    const icsv_gpus *g = s->g;
    if (!s->sm || !g->access[from][to]) { /* what the sample falls back to without P2P */
        ICSV_CUDA(cudaMemcpyPeerAsync(dst, g->dev[to], src, g->dev[from], s->bytes, stream));
        return;
    }
    const uint4 *s4 = (const uint4 *)src;
    uint4 *d4 = (uint4 *)dst;
    int64_t n = s->bytes / 16;
    switch (s->unroll) {
    case 1:
        copy_kernel<1><<<s->ctas, ICSV_THREADS, 0, stream>>>(s4, d4, n);
        break;
    case 2:
        copy_kernel<2><<<s->ctas, ICSV_THREADS, 0, stream>>>(s4, d4, n);
        break;
    case 8:
        copy_kernel<8><<<s->ctas, ICSV_THREADS, 0, stream>>>(s4, d4, n);
        break;
    default:
        copy_kernel<4><<<s->ctas, ICSV_THREADS, 0, stream>>>(s4, d4, n);
        break;
    }
    ICSV_LAUNCHED();
}

static double elapsed_ms(cudaEvent_t a, cudaEvent_t b)
{
    float ms = 0;
    ICSV_CUDA(cudaEventSynchronize(b));
    ICSV_CUDA(cudaEventElapsedTime(&ms, a, b));
    return ms;
}

/* GB/s of `iters` copies from -> to on from's stream (SM copies run on the writer). */
static double uni_gbps(const p2p_bufs *s, int from, int to, int warmup, int iters)
{
    const icsv_gpus *g = s->g;
    ICSV_CUDA(cudaSetDevice(g->dev[from]));
    cudaStream_t st = g->stream[from];
    for (int i = 0; i < warmup; i++)
        copy_once(s, from, to, s->a[from], s->b[to], st);
    ICSV_CUDA(cudaEventRecord(s->start[from], st));
    for (int i = 0; i < iters; i++)
        copy_once(s, from, to, s->a[from], s->b[to], st);
    ICSV_CUDA(cudaEventRecord(s->stop[from], st));
    return (double)s->bytes * iters / 1e9 / (elapsed_ms(s->start[from], s->stop[from]) / 1e3);
}

/* Records on stream `s` of GPU `dev` an event that `waiter` then waits for. */
static void join(const icsv_gpus *g, int dev, cudaStream_t s, cudaEvent_t e, cudaStream_t waiter)
{
    ICSV_CUDA(cudaSetDevice(g->dev[dev]));
    ICSV_CUDA(cudaEventRecord(e, s));
    ICSV_CUDA(cudaStreamWaitEvent(waiter, e, 0));
}

static void copy_both(const p2p_bufs *s, int i, int j, cudaStream_t si, cudaStream_t sj)
{
    const icsv_gpus *g = s->g;
    ICSV_CUDA(cudaSetDevice(g->dev[i]));
    copy_once(s, i, j, s->a[i], s->b[j], si);
    ICSV_CUDA(cudaSetDevice(g->dev[j]));
    if (i == j) /* one GPU: the second copy goes the other way between its two buffers */
        copy_once(s, i, i, s->b[i], s->a[i], sj);
    else
        copy_once(s, j, i, s->a[j], s->b[i], sj);
}

/* Both directions at once: i -> j on i's stream, j -> i on j's (i == j: on a second stream),
 * started and stopped together through events, bytes counted in both directions. */
static double bi_gbps(const p2p_bufs *s, int i, int j, int warmup, int iters)
{
    const icsv_gpus *g = s->g;
    cudaStream_t si = g->stream[i], sj = i == j ? g->aux[i] : g->stream[j];
    for (int k = 0; k < warmup; k++)
        copy_both(s, i, j, si, sj);
    join(g, j, sj, s->stop[j], si);  /* i's clock starts after j's warmup too */
    join(g, i, si, s->start[i], sj); /* and j's copies after the clock starts */
    for (int k = 0; k < iters; k++)
        copy_both(s, i, j, si, sj);
    join(g, j, sj, s->stop[j], si);
    ICSV_CUDA(cudaSetDevice(g->dev[i]));
    ICSV_CUDA(cudaEventRecord(s->stop[i], si));
    return 2.0 * s->bytes * iters / 1e9 / (elapsed_ms(s->start[i], s->stop[i]) / 1e3);
}

/* One-way flag latency in us: SM ping-pong where i may store to j and back; otherwise (and
 * for copy engines) the time of one 8-byte cudaMemcpyPeerAsync, back to back. */
static double latency_us(const p2p_bufs *s, int i, int j)
{
    const icsv_gpus *g = s->g;
    bool sm = s->sm && g->access[i][j] && g->access[j][i];
    if (!sm) {
        ICSV_CUDA(cudaSetDevice(g->dev[i]));
        ICSV_CUDA(cudaEventRecord(s->start[i], g->stream[i]));
        for (int k = 0; k < CE_LAT_COPIES; k++)
            ICSV_CUDA(cudaMemcpyPeerAsync(s->b[j], g->dev[j], s->a[i], g->dev[i], 8, g->stream[i]));
        ICSV_CUDA(cudaEventRecord(s->stop[i], g->stream[i]));
        return elapsed_ms(s->start[i], s->stop[i]) * 1e3 / CE_LAT_COPIES;
    }
    const int stride = 128 / sizeof(uint64_t);
    for (int r : {i, j}) {
        ICSV_CUDA(cudaSetDevice(g->dev[r]));
        ICSV_CUDA(cudaMemset(s->flag[r], 0, 2 * stride * sizeof(uint64_t)));
    }
    if (i == j) { /* two blocks of one GPU, each spinning on its own flag */
        pingpong_kernel<<<2, 32, 0, g->stream[i]>>>(s->flag[i], s->flag[i] + stride, 1, s->ns[i]);
        ICSV_LAUNCHED();
    } else { /* both kernels must run at once: different GPUs, so they do */
        ICSV_CUDA(cudaSetDevice(g->dev[j]));
        pingpong_kernel<<<1, 32, 0, g->stream[j]>>>(s->flag[j], s->flag[i], 0, s->ns[j]);
        ICSV_LAUNCHED();
        ICSV_CUDA(cudaSetDevice(g->dev[i]));
        pingpong_kernel<<<1, 32, 0, g->stream[i]>>>(s->flag[i], s->flag[j], 1, s->ns[i]);
        ICSV_LAUNCHED();
    }
    icsv_gpus_sync(g);
    double ns = 0;
    ICSV_CUDA(cudaMemcpy(&ns, s->ns[i], sizeof ns, cudaMemcpyDeviceToHost));
    return ns / 1e3;
}

static void bufs_alloc(p2p_bufs *s)
{
    for (int r = 0; r < s->g->n; r++) {
        ICSV_CUDA(cudaSetDevice(s->g->dev[r]));
        ICSV_CUDA(cudaMalloc(&s->a[r], s->bytes));
        ICSV_CUDA(cudaMalloc(&s->b[r], s->bytes));
        ICSV_CUDA(cudaMemset(s->a[r], 1, s->bytes));
        ICSV_CUDA(cudaMalloc(&s->flag[r], 256));
        ICSV_CUDA(cudaMalloc(&s->ns[r], sizeof(double)));
        ICSV_CUDA(cudaEventCreate(&s->start[r]));
        ICSV_CUDA(cudaEventCreate(&s->stop[r]));
    }
}

static void bufs_free(p2p_bufs *s)
{
    for (int r = 0; r < s->g->n; r++) {
        ICSV_CUDA(cudaSetDevice(s->g->dev[r]));
        ICSV_CUDA(cudaFree(s->a[r]));
        ICSV_CUDA(cudaFree(s->b[r]));
        ICSV_CUDA(cudaFree(s->flag[r]));
        ICSV_CUDA(cudaFree(s->ns[r]));
        ICSV_CUDA(cudaEventDestroy(s->start[r]));
        ICSV_CUDA(cudaEventDestroy(s->stop[r]));
    }
}

void icsv_p2p_measure(icsv_gpus *g, icsv_kernel copy, const icsv_kernel_params *p, uint64_t bytes,
                      int warmup, int iters, double *uni, double *bi, double *lat, int *access)
{
    p2p_bufs s = {};
    s.g = g;
    s.bytes = (int64_t)(bytes / 16 * 16);
    s.sm = copy != ICSV_KERNEL_CE;
    s.ctas = p->ctas > 0 ? p->ctas : g->prop[0].multiProcessorCount;
    s.unroll = p->unroll;
    bufs_alloc(&s);
    const int n = g->n;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            access[i * n + j] = g->access[i][j];
            uni[i * n + j] = uni_gbps(&s, i, j, warmup, iters);
            bi[i * n + j] = bi_gbps(&s, i, j, warmup, iters);
            lat[i * n + j] = latency_us(&s, i, j);
        }
    icsv_gpus_sync(g);
    bufs_free(&s);
}
