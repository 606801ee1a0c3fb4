/* The defaults of a GPU type's compute-model parameters (ics_hw_compute, read by the workload's
 * compute model, workload/compute.c): where a catalog entry gives no "compute" object. */
#include "hw/hw.h"

/* The defaults, in one place. Each is an estimate from public measurements (docs/workload.md):
 *   - gemm_eff 0.80: a large bf16 GEMM on H100 SXM sustains 797.5 TFLOP/s at 8192^3 in
 *     PyTorch/cuBLAS (github.com/zzc0721/torch-performance-test-data issue 79), 80.6% of the
 *     989.4 dense peak; large fp16 GEMMs on A100 reach a similar fraction (NVIDIA's Matrix
 *     Multiplication Background guide, DU-09799-001, figures of cuBLAS GEMM throughput).
 *   - gemm_eff_fp8 0.71: FP8 GEMMs sustain a smaller share of their (twice as high) peak: on
 *     H800 SXM (H100 SXM's compute) DeepGEMM's 128 x 128-tile FP8 kernel runs 4096 x 7168 x
 *     16384 at 1404 TFLOP/s, 70.9% of 1979, and shorter K lower (1031 at K 2048, its ramp)
 *     (github.com/deepseek-ai/DeepGEMM pull request 73, the "Base" column).
 *   - tiles 128 x 128: cuBLAS computes whole output tiles of 64..256 rows and columns, so a
 *     dimension that is not a multiple wastes the rest of its last tile (the same guide, "tile
 *     quantization"); 128 is the common size of the large-GEMM kernels.
 *   - gemm_ramp 4 us: the same measurements give 676.6 TFLOP/s at 2048^3 against 797.5 at
 *     8192^3, i.e. 25.4 us where the asymptote gives 21.5: about 4 us of fill and drain.
 *   - attn_eff 0.50: FlashAttention-2 (Dao, arXiv:2307.08691) reaches 50-73% of A100 peak in
 *     the forward pass and less in the backward; FlashAttention-1 25-40%.
 *   - mem_eff 0.85: streaming copies reach ~90% of HBM bandwidth, fused elementwise kernels
 *     (layer norm, bias-dropout-add, GeLU) a little less.
 *   - launch 1 us: kernels queued back to back on a stream start about a microsecond apart. */
void ics_hw_compute_defaults(ics_hw_compute *c)
{
    *c = (ics_hw_compute){.gemm_eff = 0.80,
                          .gemm_eff_fp8 = 0.71,
                          .gemm_tile_m = 128,
                          .gemm_tile_n = 128,
                          .gemm_ramp_ps = 4 * ICS_PS_PER_US,
                          .attn_eff = 0.50,
                          .mem_eff = 0.85,
                          .launch_ps = 1 * ICS_PS_PER_US,
                          .source = NULL};
}
