/* compute.cu: what one GPU computes and streams, timed for icsim's compute model: GEMMs through
 * cuBLASLt (bf16, fp16, fp8 E4M3; fp32 accumulation; its first heuristic algorithm, which is what
 * a framework's plain matmul gets) and device-to-device copies.
 * Invariant: every timed call runs on GPU 0's stream between two events, alone on the GPU (a
 * group's GEMMs on streams forked from it and joined back before the second event). */
#include "gpus_impl.cuh"
#include "plan_compute.h"

#include <algorithm>
#include <cstring>
#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#define WORKSPACE_BYTES ICSV_COMPUTE_WORKSPACE_BYTES
#define FILL_BLOCKS     1024
#define FILL_THREADS    256

/* Like ICSV_CUDA, for cuBLASLt's status codes. */
#define ICSV_LT(call)                                                                              \
    do {                                                                                           \
        cublasStatus_t icsv_s_ = (call);                                                           \
        if (icsv_s_ != CUBLAS_STATUS_SUCCESS)                                                      \
            icsv_die(__FILE__, __LINE__, #call, cublasLtGetStatusString(icsv_s_));                 \
    } while (0)

struct icsv_compute {
    icsv_gpus *g;
    cublasLtHandle_t lt;
    void *workspace;
    float *one; /* 1.0f on the GPU: fp8's per-tensor scales of A and B */
    cudaEvent_t start, stop;
};

/* One GEMM shape as cuBLASLt takes it, and the operands of each of its `count` GEMMs (one, or a
 * group's: compute --groups). */
struct lt_gemm {
    cublasLtMatmulDesc_t op;
    cublasLtMatrixLayout_t a, b, d;
    cublasLtMatmulAlgo_t algo;
    int count;
    void **A, **B, **D;
};

/* Where a group's GEMMs run: Transformer Engine's multi_stream_cublas_gemm forks `used` compute
 * streams off the caller's with one event, issues GEMM i on stream i mod streams with that
 * stream's own workspace, and joins them back with one event each. Its streams are created with
 * priority -1, as TE's are. */
struct lt_streams {
    int used;
    cudaStream_t s[ICSV_COMPUTE_STREAMS_MAX];
    void *workspace[ICSV_COMPUTE_STREAMS_MAX];
    cudaEvent_t fork, join[ICSV_COMPUTE_STREAMS_MAX];
};

/* splitmix64's finalizer: a well-mixed 32 bits per element index. */
__device__ uint32_t mix(uint64_t x)
{
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return (uint32_t)((x ^ (x >> 31)) >> 32);
}

/* Pseudo-random values in [-1, 1). Not a memset: tensor cores fed zeros or one repeated value
 * toggle fewer bits, draw less power and hold a higher clock, so the GEMMs would run faster
 * than on a model's data. */
template <typename T> __global__ void fill_kernel(T *p, int64_t n, uint64_t seed)
{
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += stride)
        p[i] = T((float)(mix(seed + (uint64_t)i) >> 8) * (1.0f / 8388608.0f) - 1.0f);
}

static cudaDataType_t in_type(icsv_gemm_dtype t)
{
    return t == ICSV_GEMM_FP8 ? CUDA_R_8F_E4M3 : t == ICSV_GEMM_FP16 ? CUDA_R_16F : CUDA_R_16BF;
}

/* D's type: the inputs' for bf16 and fp16; bf16 for fp8, as Transformer Engine's layers. */
static cudaDataType_t out_type(icsv_gemm_dtype t)
{
    return t == ICSV_GEMM_FP16 ? CUDA_R_16F : CUDA_R_16BF;
}

static void *alloc_filled(icsv_compute *c, cudaDataType_t type, int64_t n, uint64_t seed)
{
    void *p = nullptr;
    ICSV_CUDA(cudaMalloc(&p, (size_t)n * (type == CUDA_R_8F_E4M3 ? 1 : 2)));
    cudaStream_t s = c->g->stream[0];
    if (type == CUDA_R_8F_E4M3)
        fill_kernel<<<FILL_BLOCKS, FILL_THREADS, 0, s>>>((__nv_fp8_e4m3 *)p, n, seed);
    else if (type == CUDA_R_16F)
        fill_kernel<<<FILL_BLOCKS, FILL_THREADS, 0, s>>>((__half *)p, n, seed);
    else
        fill_kernel<<<FILL_BLOCKS, FILL_THREADS, 0, s>>>((__nv_bfloat16 *)p, n, seed);
    ICSV_LAUNCHED();
    return p;
}

/* The TN layout for every type (icsv_gemm_lt_dims): A is K x M and B is K x N, both with leading
 * dimension K; A is transposed; D is M x N with leading dimension M. */
static void gemm_describe(const icsv_compute *c, const icsv_compute_row *r, lt_gemm *x)
{
    int64_t m = 0, n = 0;
    icsv_gemm_lt_dims(r, &m, &n);
    const cudaDataType_t in = in_type(r->dtype), out = out_type(r->dtype);
    const cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
    ICSV_LT(cublasLtMatmulDescCreate(&x->op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    ICSV_LT(cublasLtMatmulDescSetAttribute(x->op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
    ICSV_LT(cublasLtMatmulDescSetAttribute(x->op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
    if (r->dtype == ICSV_GEMM_FP8) { /* unit scales: what the GEMM costs, not what TE's are */
        const float *one = c->one;
        ICSV_LT(cublasLtMatmulDescSetAttribute(x->op, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &one,
                                               sizeof one));
        ICSV_LT(cublasLtMatmulDescSetAttribute(x->op, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &one,
                                               sizeof one));
    }
    ICSV_LT(cublasLtMatrixLayoutCreate(&x->a, in, (uint64_t)r->k, (uint64_t)m, r->k));
    ICSV_LT(cublasLtMatrixLayoutCreate(&x->b, in, (uint64_t)r->k, (uint64_t)n, r->k));
    ICSV_LT(cublasLtMatrixLayoutCreate(&x->d, out, (uint64_t)m, (uint64_t)n, m));
}

/* cuBLASLt's first choice within the workspace; none is a failure that names the shape. */
static void gemm_pick(const icsv_compute *c, const icsv_compute_row *r, lt_gemm *x)
{
    cublasLtMatmulPreference_t pref = nullptr;
    const uint64_t ws = WORKSPACE_BYTES;
    ICSV_LT(cublasLtMatmulPreferenceCreate(&pref));
    ICSV_LT(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                 &ws, sizeof ws));
    cublasLtMatmulHeuristicResult_t res;
    std::memset(&res, 0, sizeof res);
    int found = 0;
    cublasStatus_t st =
        cublasLtMatmulAlgoGetHeuristic(c->lt, x->op, x->a, x->b, x->d, x->d, pref, 1, &res, &found);
    ICSV_LT(cublasLtMatmulPreferenceDestroy(pref));
    if (st != CUBLAS_STATUS_SUCCESS || found < 1) {
        char what[160];
        std::snprintf(
            what, sizeof what, "cublasLtMatmulAlgoGetHeuristic(gemm %s m %lld n %lld k %lld)",
            icsv_gemm_dtype_name(r->dtype), (long long)r->m, (long long)r->n, (long long)r->k);
        icsv_die(__FILE__, __LINE__, what,
                 st != CUBLAS_STATUS_SUCCESS ? cublasLtGetStatusString(st)
                                             : "cuBLASLt has no algorithm for this GEMM here");
    }
    x->algo = res.algo;
}

static void gemm_call(const icsv_compute *c, const lt_gemm *x, int i, void *workspace,
                      cudaStream_t s)
{
    const float alpha = 1.0f, beta = 0.0f; /* D = A B: C is D, never read */
    ICSV_LT(cublasLtMatmul(c->lt, x->op, &alpha, x->A[i], x->a, x->B[i], x->b, &beta, x->D[i], x->d,
                           x->D[i], x->d, &x->algo, workspace, WORKSPACE_BYTES, s));
}

static void streams_open(lt_streams *st, int streams, int gemms)
{
    std::memset(st, 0, sizeof *st);
    st->used = std::min(streams, gemms);
    ICSV_CUDA(cudaEventCreateWithFlags(&st->fork, cudaEventDisableTiming));
    for (int j = 0; j < st->used; j++) {
        ICSV_CUDA(cudaStreamCreateWithPriority(&st->s[j], cudaStreamNonBlocking, -1));
        ICSV_CUDA(cudaMalloc(&st->workspace[j], WORKSPACE_BYTES));
        ICSV_CUDA(cudaEventCreateWithFlags(&st->join[j], cudaEventDisableTiming));
    }
}

static void streams_close(lt_streams *st)
{
    for (int j = 0; j < st->used; j++) {
        ICSV_CUDA(cudaEventDestroy(st->join[j]));
        ICSV_CUDA(cudaFree(st->workspace[j]));
        ICSV_CUDA(cudaStreamDestroy(st->s[j]));
    }
    ICSV_CUDA(cudaEventDestroy(st->fork));
}

/* One call of a group: fork, every GEMM on its stream, join. Captured into a graph, the events
 * become the graph's edges, so the replay runs the same concurrency. */
static void group_call(const icsv_compute *c, const lt_gemm *x, const lt_streams *st,
                       cudaStream_t s)
{
    ICSV_CUDA(cudaEventRecord(st->fork, s));
    for (int j = 0; j < st->used; j++)
        ICSV_CUDA(cudaStreamWaitEvent(st->s[j], st->fork, 0));
    for (int i = 0; i < x->count; i++)
        gemm_call(c, x, i, st->workspace[i % st->used], st->s[i % st->used]);
    for (int j = 0; j < st->used; j++) {
        ICSV_CUDA(cudaEventRecord(st->join[j], st->s[j]));
        ICSV_CUDA(cudaStreamWaitEvent(s, st->join[j], 0));
    }
}

/* The `iters` calls captured once into an executable graph, uploaded by one untimed replay. */
template <typename F> static cudaGraphExec_t capture_calls(cudaStream_t s, int iters, F call)
{
    cudaGraph_t g = nullptr;
    cudaGraphExec_t exec = nullptr;
    ICSV_CUDA(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    for (int i = 0; i < iters; i++)
        call(s);
    ICSV_CUDA(cudaStreamEndCapture(s, &g));
    ICSV_CUDA(cudaGraphInstantiate(&exec, g, 0));
    ICSV_CUDA(cudaGraphDestroy(g));
    ICSV_CUDA(cudaGraphLaunch(exec, s));
    return exec;
}

/* Mean us of one call(stream) over `iters` between the events, after `warmup` untimed ones.
 * Back to back on a stream, a call shorter than the host's cost of issuing it (cuBLASLt's
 * matmul is several microseconds of CPU) measures the host. With `graph` the calls are captured
 * once and the GPU replays them with no host in between: the GPU-side floor, which is what the
 * compute model's launch_us is (a training step's CPU runs ahead of its GPU). */
template <typename F>
static double time_calls(icsv_compute *c, int warmup, int iters, bool graph, F call)
{
    cudaStream_t s = c->g->stream[0];
    for (int i = 0; i < warmup; i++)
        call(s);
    cudaGraphExec_t exec = graph ? capture_calls(s, iters, call) : nullptr;
    ICSV_CUDA(cudaEventRecord(c->start, s));
    if (graph) {
        ICSV_CUDA(cudaGraphLaunch(exec, s));
    } else {
        for (int i = 0; i < iters; i++)
            call(s);
    }
    ICSV_CUDA(cudaEventRecord(c->stop, s));
    ICSV_CUDA(cudaEventSynchronize(c->stop));
    if (exec)
        ICSV_CUDA(cudaGraphExecDestroy(exec));
    float ms = 0;
    ICSV_CUDA(cudaEventElapsedTime(&ms, c->start, c->stop));
    return (double)ms * 1e3 / iters;
}

/* Each GEMM of the row its own A, B and D (experts do not share inputs or weights, and shared
 * ones would sit in L2), with different pseudo-random values. */
static void gemm_alloc(icsv_compute *c, const icsv_compute_row *r, lt_gemm *x)
{
    int64_t m = 0, n = 0;
    icsv_gemm_lt_dims(r, &m, &n);
    x->count = icsv_compute_row_gemms(r);
    x->A = new void *[x->count];
    x->B = new void *[x->count];
    x->D = new void *[x->count];
    for (int i = 0; i < x->count; i++) {
        uint64_t seed = (uint64_t)i << 48;
        x->A[i] = alloc_filled(c, in_type(r->dtype), m * r->k, seed + 1);
        x->B[i] = alloc_filled(c, in_type(r->dtype), n * r->k, seed + ((uint64_t)1 << 40));
        ICSV_CUDA(cudaMalloc(&x->D[i], (size_t)(m * n) * 2)); /* bf16 or fp16 */
    }
}

static void gemm_release(lt_gemm *x)
{
    for (int i = 0; i < x->count; i++) {
        ICSV_CUDA(cudaFree(x->A[i]));
        ICSV_CUDA(cudaFree(x->B[i]));
        ICSV_CUDA(cudaFree(x->D[i]));
    }
    delete[] x->A;
    delete[] x->B;
    delete[] x->D;
}

static double gemm_time_us(icsv_compute *c, const icsv_compute_row *r, int warmup, int iters,
                           bool graph)
{
    lt_gemm x;
    std::memset(&x, 0, sizeof x);
    gemm_describe(c, r, &x);
    gemm_pick(c, r, &x);
    gemm_alloc(c, r, &x);
    double us = 0;
    if (x.count == 1) { /* one GEMM on the timed stream, as before --groups */
        us = time_calls(c, warmup, iters, graph,
                        [&](cudaStream_t s) { gemm_call(c, &x, 0, c->workspace, s); });
    } else {
        lt_streams st;
        streams_open(&st, r->streams > 0 ? r->streams : 1, x.count);
        us =
            time_calls(c, warmup, iters, graph, [&](cudaStream_t s) { group_call(c, &x, &st, s); });
        streams_close(&st);
    }
    gemm_release(&x);
    ICSV_LT(cublasLtMatrixLayoutDestroy(x.a));
    ICSV_LT(cublasLtMatrixLayoutDestroy(x.b));
    ICSV_LT(cublasLtMatrixLayoutDestroy(x.d));
    ICSV_LT(cublasLtMatmulDescDestroy(x.op));
    return us;
}

static double copy_time_us(icsv_compute *c, const icsv_compute_row *r, int warmup, int iters,
                           bool graph)
{
    void *src = alloc_filled(c, CUDA_R_16BF, (int64_t)(r->bytes / 2), 1), *dst = nullptr;
    ICSV_CUDA(cudaMalloc(&dst, r->bytes));
    double us = time_calls(c, warmup, iters, graph, [&](cudaStream_t s) {
        ICSV_CUDA(cudaMemcpyAsync(dst, src, r->bytes, cudaMemcpyDeviceToDevice, s));
    });
    ICSV_CUDA(cudaFree(src));
    ICSV_CUDA(cudaFree(dst));
    return us;
}

icsv_compute *icsv_compute_new(icsv_gpus *g)
{
    icsv_compute *c = new icsv_compute{};
    c->g = g;
    ICSV_CUDA(cudaSetDevice(g->dev[0]));
    ICSV_LT(cublasLtCreate(&c->lt));
    ICSV_CUDA(cudaMalloc(&c->workspace, WORKSPACE_BYTES));
    const float one = 1.0f;
    ICSV_CUDA(cudaMalloc(&c->one, sizeof one));
    ICSV_CUDA(cudaMemcpy(c->one, &one, sizeof one, cudaMemcpyHostToDevice));
    ICSV_CUDA(cudaEventCreate(&c->start));
    ICSV_CUDA(cudaEventCreate(&c->stop));
    return c;
}

void icsv_compute_free(icsv_compute *c)
{
    if (!c)
        return;
    ICSV_CUDA(cudaSetDevice(c->g->dev[0]));
    ICSV_CUDA(cudaEventDestroy(c->start));
    ICSV_CUDA(cudaEventDestroy(c->stop));
    ICSV_CUDA(cudaFree(c->one));
    ICSV_CUDA(cudaFree(c->workspace));
    ICSV_LT(cublasLtDestroy(c->lt));
    delete c;
}

void icsv_compute_describe(const icsv_compute *c, icsv_compute_hw *out)
{
    const cudaDeviceProp &p = c->g->prop[0];
    std::memset(out, 0, sizeof *out);
    std::snprintf(out->gpu, sizeof out->gpu, "%s", p.name);
    out->sms = p.multiProcessorCount;
    out->cc_major = p.major;
    out->cc_minor = p.minor;
    out->memory_bytes = p.totalGlobalMem;
    out->cublaslt_version = cublasLtGetVersion();
    ICSV_CUDA(cudaSetDevice(c->g->dev[0]));
    if (cudaDeviceGetAttribute(&out->clock_khz, cudaDevAttrClockRate, c->g->dev[0]) != cudaSuccess)
        out->clock_khz = 0; /* the JSON says null; the error is not sticky */
    (void)cudaGetLastError();
    size_t free_bytes = 0, total_bytes = 0;
    ICSV_CUDA(cudaMemGetInfo(&free_bytes, &total_bytes));
    out->free_bytes = free_bytes;
}

double icsv_compute_time_us(icsv_compute *c, const icsv_compute_row *r, int warmup, int iters,
                            bool graph)
{
    ICSV_CUDA(cudaSetDevice(c->g->dev[0]));
    return r->kernel == ICSV_COMPUTE_GEMM ? gemm_time_us(c, r, warmup, iters, graph)
                                          : copy_time_us(c, r, warmup, iters, graph);
}
