/* The defaults of a GPU type's compute-model parameters (ics_hw_compute, read by the workload's
 * compute model, workload/compute.c): where a catalog entry gives no "compute" object. */
#include "hw/hw.h"

#include <string.h>

/* The defaults, in one place. Each comes from public GEMM measurements on H100 SXM (H800 SXM
 * has its compute), read through the wave model of workload/compute.c: a GEMM runs in waves of
 * one 128 x 128 output tile per SM, each wave costing a fixed prologue and epilogue (gemm_wave)
 * plus its K loop at gemm_eff of the SM's share of the peak. Two sizes per dtype give the two
 * unknowns, and both dtypes give the same wave cost, which is what a per-tile fixed cost
 * should do (docs/workload.md shows the arithmetic):
 *   - bf16: 797.5 TFLOP/s at 8192^3 and 676.6 at 2048^3 in PyTorch/cuBLAS
 *     (github.com/zzc0721/torch-performance-test-data issue 79): 32 waves of 8192-deep tiles
 *     and 2 waves of 2048-deep ones give gemm_eff 0.877 and a wave cost of 1.9 us.
 *   - fp8: DeepGEMM's 128-row FP8 kernel, 4096 x 7168 at K 16384 and K 2048: 1404 and 1031
 *     TFLOP/s (github.com/deepseek-ai/DeepGEMM pull request 73, the "Base" column): 14 waves
 *     each, gemm_eff_fp8 0.771 and a wave cost of 2.45 us.
 *   Taken: a wave cost of 2.2 us for both, and the efficiencies that reproduce the deep-K
 *   points with it, 0.877 and 0.767; the shallow points then come out at 665 (-1.7%) and 1059
 *   (+2.7%) TFLOP/s. Stas Bekman's best-shape MAMF figures (ml-engineering, "Maximum
 *   Achievable Matmul FLOPS") check it from outside: H100 SXM 792.1 at 6144 x 17920 x 2816
 *   (the model: 748, -5.6%), A100 SXM 267.9 at 6912 x 16384 x 2048 (the model: 253, -5.6%).
 *   - tiles 128 x 128: cuBLAS computes whole output tiles of 64..256 rows and columns, so a
 *     dimension that is not a multiple wastes the rest of its last tile (NVIDIA's Matrix
 *     Multiplication Background guide, DU-09799-001, "tile quantization"), and a last wave
 *     with fewer tiles than SMs leaves the others idle ("wave quantization").
 *     The GPU type's `sms` gives the wave width; without it a GEMM pays one wave cost and
 *     no wave quantization.
 *   - attn_eff 0.52, of the FLOPs the fused kernel runs (a causal mask's skipped tiles not
 *     counted, workload_cost.c): cuDNN's fused attention, which Transformer Engine runs on
 *     Hopper, at head dim 128 and 8k tokens on H100 SXM5 reaches 529 TFLOP/s forward (causal)
 *     and 518 backward, 53.5% and 52.4% of the bf16 peak (FlashAttention-3 paper, Shah et al.,
 *     arXiv:2407.08608, figures 5 and 6); the backward, two thirds of the time, is taken.
 *     FlashAttention-2 reaches 50-73% of A100 peak forward (arXiv:2307.08691).
 *   - mem_eff 0.85: streaming copies reach ~90% of HBM bandwidth, fused elementwise kernels
 *     (layer norm, bias-dropout-add, GeLU) a little less.
 *   - launch 1 us: kernels queued back to back on a stream start about a microsecond apart.
 *   - sustained 1: the efficiencies above are what short GEMM benchmarks measure, at the boost
 *     clock; a GPU type whose power-bound (sustained) rate has been measured sets its own share in
 *     the catalog (h100-sxm, h200-sxm, b200: docs/workload.md, "Sustained clocks"). */
void ics_hw_compute_defaults(ics_hw_compute *c)
{
    *c = (ics_hw_compute){.gemm_eff = 0.877,
                          .gemm_eff_fp8 = 0.767,
                          .gemm_tile_m = 128,
                          .gemm_tile_n = 128,
                          .gemm_wave_ps = 2200 * ICS_PS_PER_NS,
                          .attn_eff = 0.52,
                          .mem_eff = 0.85,
                          .launch_ps = 1 * ICS_PS_PER_US,
                          .sustained = 1,
                          .source = NULL};
}

/* Hopper (sm90): cuBLASLt's kernels are persistent (one CTA per SM walks a list of tiles) and
 * spread a partial last wave's work over every SM, splitting its tiles along K (stream-K),
 * so a remainder of r tiles costs about r / SMs of a wave, not a whole one. Measured with our
 * runner on one H200 (cuBLASLt 13.1, validate/data/compute/h200_icsim_validate_wave_*.json):
 * at m = 1536, k = 8192 the time grows about linearly in n, with no step where 132 tiles fill
 * the SMs (n 1408 -> 1409: 46.1 -> 49.6 us bf16; whole waves would make it ~85). NVIDIA's
 * wave-quantization guide (DU-09799-001) measured the whole-wave steps on V100/A100 with the
 * cuBLAS of its day, which older architectures keep here. Blackwell's cuBLAS has persistent
 * kernels too, but nobody here has measured it: sm100 keeps whole waves until someone does. */
void ics_hw_compute_defaults_for(ics_hw_compute *c, const char *arch)
{
    ics_hw_compute_defaults(c);
    if (!arch || strcmp(arch, "sm90") != 0)
        return;
    c->gemm_stream_k = true;
    /* The same public points read through the stream-K waves: 8192^3 bf16 (797.5 TFLOP/s) is
     * 31 whole waves and 4 tiles, FP8 4096 x 7168 x 16384 (1404) 13 waves and 76 tiles, where
     * whole waves made them 32 and 14; with the wave cost kept at 2.2 us, the K loops' shares
     * that reproduce them are 0.850 and 0.744 (docs/workload.md shows the arithmetic). */
    c->gemm_eff = 0.850;
    c->gemm_eff_fp8 = 0.744;
}
