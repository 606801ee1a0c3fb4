/* The GPU compute model (compute.h). Time of an op: max(FLOP time, memory time) plus fixed
 * costs; the FLOP rate is the dense peak times an efficiency by kind of work. Pure functions of
 * the GPU type and the op: no state, so replays stay deterministic. */
#include "workload/compute.h"

#include <limits.h>
#include <math.h>

double ics_compute_peak(const ics_hw_gpu_type *g, ics_dtype d)
{
    const ics_dtype order[] = {d, ICS_DTYPE_BF16, ICS_DTYPE_FP16, ICS_DTYPE_FP32};
    for (size_t i = 0; i < G_N_ELEMENTS(order); i++)
        if ((unsigned)order[i] < ICS_DTYPE_COUNT && g->tflops[order[i]] > 0)
            return g->tflops[order[i]] * 1e12;
    return 0;
}

/* The share of a GEMM's computed tiles that holds real output. */
static double tile_util(const ics_hw_compute *c, int m, int n)
{
    if (m <= 0 || n <= 0)
        return 1;
    double mp = ceil((double)m / c->gemm_tile_m) * c->gemm_tile_m;
    double np = ceil((double)n / c->gemm_tile_n) * c->gemm_tile_n;
    return (double)m * n / (mp * np);
}

/* The shallowest K slice a split-K GEMM is cut into (a few of the kernels' K steps of 32-64). */
#define ICS_SPLIT_K_MIN 256
/* The most slices tried: past the SM count a split only adds partial sums. */
#define ICS_SPLIT_K_MAX 64

static double seconds(ics_time ps)
{
    return (double)ps / ICS_PS_PER_S;
}

/* Seconds of a GEMM's tiles on a persistent stream-K kernel (hw.h, gemm_stream_k): the whole
 * waves as whole waves, then the remainder's K loops shared out over the SMs, so r tiles left
 * over cost one more wave's fixed cost and r / SMs of a tile's K loop; no slice shallower than
 * ICS_SPLIT_K_MIN, so a shallow remainder spreads over fewer SMs. The partial sums of the
 * split tiles are left out: on H200 the step from 132 to 144 tiles measured about the share of
 * the K loop alone (hw_compute.c). */
static double stream_k_seconds(double tiles, int sms, int k, double fixed, double tile_k)
{
    double full = floor(tiles / sms), rest = tiles - full * sms;
    double units = fmin(sms, rest * fmax(1, floor((double)k / ICS_SPLIT_K_MIN)));
    return full * (fixed + tile_k) + (rest > 0 ? fixed + tile_k * rest / units : 0);
}

/* Seconds of a GEMM's math at efficiency eff of peak. cuBLAS launches one thread block per
 * output tile, one per SM at a time, so the tiles run in waves: each wave pays a fixed
 * prologue and epilogue (filling the operand pipeline, writing the tile out) plus its K loop,
 * and a last wave with fewer tiles than SMs takes as long as a full one (NVIDIA's "wave
 * quantization"), unless the library's kernels are persistent and share it out (stream-K,
 * Hopper's: stream_k_seconds). The K loop of one tile is its 2 x tile_m x tile_n x K FLOPs at the
 * SM's share of the peak. Shallow GEMMs (small K: a TP-split projection) thus lose more to the
 * fixed cost than deep ones. A GEMM whose tiles fill the SMs badly (a skinny one: decode's
 * single token, a TP chunk) can be split along K, as cuBLAS's split-K kernels do: s slices of
 * each tile (at least ICS_SPLIT_K_MIN deep) make s times the work units, each s times shallower,
 * and the partial sums (fp32) are written and read back once more. The split taken is the one
 * that finishes first, as the library's heuristics aim to pick. A batched GEMM's batch is its
 * FLOPs over one product's. Without the GPU's SM count or the op's shape: the FLOPs at eff x
 * tile utilization, plus one wave's fixed cost. */
static double gemm_seconds(const ics_hw_gpu_type *g, const ics_trace_op *op, double peak,
                           double eff)
{
    const ics_hw_compute *c = &g->compute;
    double fixed = seconds(c->gemm_wave_ps);
    bool shaped = op->m > 0 && op->n > 0 && op->k > 0 && op->m < INT_MAX && op->n < INT_MAX &&
                  op->k < INT_MAX;
    if (g->sms <= 0)
        return op->flops / (peak * eff * tile_util(c, op->m, op->n)) + fixed;
    if (!shaped) {
        /* FLOPs without a shape (a trace's compute op, a dimension past 2^31): at the rate of
         * a large square GEMM (8192^3), which is what the efficiencies were measured on */
        ics_trace_op sq = {.flops = 2.0 * 8192 * 8192 * 8192, .m = 8192, .n = 8192, .k = 8192};
        return op->flops * gemm_seconds(g, &sq, peak, eff) / sq.flops;
    }
    double one = 2.0 * op->m * op->n * op->k;
    double batch = op->batch > 0 ? ceil(op->batch) : fmax(1, round(op->flops / one));
    double tiles =
        batch * ceil((double)op->m / c->gemm_tile_m) * ceil((double)op->n / c->gemm_tile_n);
    double tile_k = 2.0 * c->gemm_tile_m * c->gemm_tile_n * op->k / (peak / g->sms * eff);
    double bw = (double)g->hbm_bw_bytes_per_s * c->mem_eff, partials = batch * op->m * op->n * 8.0;
    double best = ceil(tiles / g->sms) * (fixed + tile_k);
    int most = (int)fmin(floor(op->k / ICS_SPLIT_K_MIN), ICS_SPLIT_K_MAX);
    for (int s = 2; s <= most && bw > 0; s++)
        best = fmin(best, ceil(tiles * s / g->sms) * (fixed + tile_k / s) + s * partials / bw);
    if (c->gemm_stream_k)
        best = fmin(best, stream_k_seconds(tiles, g->sms, op->k, fixed, tile_k));
    return best;
}

/* Seconds of the op's math and of its memory traffic, and the fixed costs. */
static double op_seconds(const ics_hw_gpu_type *g, const ics_trace_op *op)
{
    const ics_hw_compute *c = &g->compute;
    /* tensor-core math at the power-bound clock (sustained); memory streams unaffected */
    double peak = ics_compute_peak(g, op->dtype) * c->sustained, eff = 1,
           fixed = seconds(c->launch_ps);
    double t_flop = -1;
    switch (op->work) {
    case ICS_WORK_GEMM: /* an FP8 GEMM at FP8's share, where the GPU has an FP8 peak */
        eff = op->dtype == ICS_DTYPE_FP8 && g->tflops[ICS_DTYPE_FP8] > 0 ? c->gemm_eff_fp8
                                                                         : c->gemm_eff;
        if (peak > 0 && op->flops > 0)
            t_flop = gemm_seconds(g, op, peak, eff);
        break;
    case ICS_WORK_ATTENTION:
        eff = c->attn_eff;
        break;
    case ICS_WORK_ELEMENTWISE:
        peak = 0; /* memory-bound by definition: its FLOPs are free */
        break;
    default:
        g_assert_not_reached();
    }
    if (t_flop < 0)
        t_flop = peak > 0 && op->flops > 0 ? op->flops / (peak * eff) : 0;
    double bw = (double)g->hbm_bw_bytes_per_s * c->mem_eff;
    double t_mem = bw > 0 && op->mem_bytes > 0 ? op->mem_bytes / bw : 0;
    /* a GEMM bound by its memory traffic still fills its pipeline and drains its last tiles
     * once: one wave's fixed cost that streaming cannot hide */
    if (op->work == ICS_WORK_GEMM && t_mem > 0)
        t_mem += seconds(c->gemm_wave_ps);
    return fmax(t_flop, t_mem) + fixed;
}

double ics_compute_seconds(const ics_hw_gpu_type *g, const ics_trace_op *op)
{
    if (op->duration_ps > 0)
        return (double)op->duration_ps / ICS_PS_PER_S;
    return op_seconds(g, op);
}

ics_time ics_compute_time(const ics_hw_gpu_type *g, const ics_trace_op *op)
{
    if (op->duration_ps > 0)
        return MIN(op->duration_ps, ICS_TIME_LIMIT);
    /* 1e24 FLOPs at a nano-TFLOP/s is 1e33 s: past the horizon, saturated rather than wrapped */
    return ics_time_from_s(op_seconds(g, op));
}

double ics_compute_gemm_eff(const ics_hw_gpu_type *g, int m, int n, int k, ics_dtype d)
{
    ics_hw_gpu_type burst = *g; /* what a GEMM benchmark measures: the boost clock */
    burst.compute.sustained = 1;
    g = &burst;
    double flops = 2.0 * m * n * k;
    ics_trace_op op = {.kind = ICS_TOP_COMPUTE,
                       .work = ICS_WORK_GEMM,
                       .flops = flops,
                       .dtype = d,
                       .m = m,
                       .n = n,
                       .k = k};
    double peak = ics_compute_peak(g, d);
    return peak > 0 ? flops / (peak * op_seconds(g, &op)) : 0;
}

/* A GEMM dimension as a trace op carries it (an int): larger ones (mbs x seq tokens) saturate
 * rather than overflow, and such a GEMM is timed at a large GEMM's rate (gemm_seconds). */
static int dim(double x)
{
    return x < INT_MAX ? (int)ceil(x) : INT_MAX; /* a fractional share of rows: its last tile */
}

ics_time ics_compute_kernel(const ics_hw_gpu_type *g, ics_work_kind w, ics_dtype d, double flops,
                            double bytes, double m, double n, double k)
{
    return ics_compute_batched(g, w, d, flops, bytes, 0, m, n, k);
}

ics_time ics_compute_batched(const ics_hw_gpu_type *g, ics_work_kind w, ics_dtype d, double flops,
                             double bytes, double batch, double m, double n, double k)
{
    ics_trace_op op = {.kind = ICS_TOP_COMPUTE,
                       .work = w,
                       .flops = flops,
                       .mem_bytes = bytes,
                       .dtype = d,
                       .m = dim(m),
                       .n = dim(n),
                       .k = dim(k),
                       .batch = batch};
    return ics_compute_time(g, &op);
}

ics_time ics_compute_grouped(const ics_hw_gpu_type *g, ics_dtype d, double groups, int streams,
                             double m, double n, double k, double bytes_each)
{
    ics_time t = 0;
    double per = streams > 0 ? streams : 1;
    for (double left = groups; left > 0; left -= per) {
        double r = fmin(left, per);
        t = ics_time_add(t, ics_compute_batched(g, ICS_WORK_GEMM, d, r * 2 * m * n * k,
                                                r * bytes_each, r, m, n, k));
    }
    return t;
}
