/* plan_compute.h: what `icsim-validate compute` times, as a pure function of the GEMM types
 * asked for and the GPU's free memory: GEMM shapes that pin down each parameter of icsim's
 * compute model, then HBM copies from launch-bound to bandwidth-bound (docs/validate.md,
 * "Compute: GEMMs and HBM"). No GPU, no I/O, no GLib in this header: compute.cu includes it. */
#ifndef ICSV_PLAN_COMPUTE_H
#define ICSV_PLAN_COMPUTE_H

#include "icsv.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ICSV_COMPUTE_COPY_MIN (4ull << 10)   /* 4 KiB: launch-bound */
#define ICSV_COMPUTE_COPY_MAX (4ull << 30)   /* 4 GiB: far past any L2 */
#define ICSV_COMPUTE_HEADROOM (256ull << 20) /* free memory a copy leaves to the driver */
/* compute --groups: a shape timed as G GEMMs at once, one per expert, round-robin over S streams
 * (Transformer Engine's GroupedLinear on its 4 compute streams: docs/validate.md) */
#define ICSV_COMPUTE_GROUPS_MAX      256
#define ICSV_COMPUTE_STREAMS_MAX     16
#define ICSV_COMPUTE_STREAMS_DEFAULT 4
/* compute --graph with --groups: at most this many GEMMs (-n x G) in one graph */
#define ICSV_COMPUTE_GRAPH_GEMMS_MAX 100000
/* the cuBLASLt workspace of each stream a GEMM runs on: what PyTorch gives cuBLAS(Lt) on Hopper */
#define ICSV_COMPUTE_WORKSPACE_BYTES (32ull << 20)
#define ICSV_COMPUTE_LT_ALIGN        16 /* elements: cuBLASLt's M, and K (see icsv_gemm_lt_dims) */

/* The rows to time, every time_us 0. For each type in `dtypes` (a mask of 1 << icsv_gemm_dtype),
 * in enum order, the GEMMs C[m x n] = A[m x k] . B[k x n]:
 *   squares m = n = k = 256 .. 16384, doubling: launch-bound up to compute-bound;
 *   a K sweep at m = n = 8192, k = 128 .. 16384, doubling: a wave's fixed cost against its K loop;
 *   skinny m = 1, 8, 64, 512 at n = k = 8192: decoding, bound by reading B;
 *   wave quantization at m = 1536, k = 8192, n = 1408, 1409, 2816, 2817: 12 x 11 = 132 tiles of
 *     128 x 128 fill H100's 132 SMs once; one column more needs a second wave (and 2816, 2817:
 *     two waves, then three);
 * each shape once (8192^3 is both a square and in the K sweep). Then the copies: 4 KiB x 4^i up to
 * 4 GiB while two buffers of them and ICSV_COMPUTE_HEADROOM fit in free_bytes.
 * With n_shapes > 0 (--shapes), for each type those shapes instead, in the order given, each
 * once, and no copies: a user's sweep of one effect.
 * Returns a new array of *n rows (NULL when *n is 0). Transfer full: g_free. */
icsv_compute_row *icsv_plan_compute(unsigned dtypes, const icsv_gemm_shape *shapes, size_t n_shapes,
                                    uint64_t free_bytes, size_t *n);

/* Makes every GEMM row of rows[0..n) a group: `groups` GEMMs of its shape at once, issued
 * round-robin on `streams` streams (compute --groups, --streams). groups 1 leaves them single. */
void icsv_compute_set_groups(icsv_compute_row *rows, size_t n, int groups, int streams);
/* The GEMMs a row stands for: its groups, at least 1. */
int icsv_compute_row_gemms(const icsv_compute_row *r);

/* Whether two buffers of `bytes` fit in free_bytes with ICSV_COMPUTE_HEADROOM to spare. */
bool icsv_compute_copy_fits(uint64_t bytes, uint64_t free_bytes);

/* The bytes of a GEMM row's A, B (1 byte an element for fp8, else 2) and C (2: bf16 or fp16),
 * for each GEMM of its group (each expert has its own operands), and a group's workspaces, one
 * per stream it uses. */
uint64_t icsv_compute_gemm_bytes(const icsv_compute_row *r);
/* Whether those fit in free_bytes with ICSV_COMPUTE_HEADROOM to spare. */
bool icsv_compute_gemm_fits(const icsv_compute_row *r, uint64_t free_bytes);

/* The oldest GPU, as 10 x major + minor, with tensor cores for t: fp16 70, bf16 80, fp8 89. */
int icsv_gemm_dtype_min_sm(icsv_gemm_dtype t);

/* cuBLASLt's M and N for a GEMM row. cuBLASLt is column-major and runs every type here in the
 * "TN" layout FP8 requires (A transposed: A and B both K-contiguous, D = M x N with leading
 * dimension M), and FP8 kernels need that leading dimension 16-byte aligned. So M is m when m is
 * a multiple of ICSV_COMPUTE_LT_ALIGN, else n (computing C^T = B^T . A^T: the same work, tiles
 * and bytes): the skinny rows' m = 1 becomes N, as frameworks lay out decoding. */
void icsv_gemm_lt_dims(const icsv_compute_row *r, int64_t *lt_m, int64_t *lt_n);

/* TFLOP/s of a GEMM row (G x 2 m n k / time, G its GEMMs) and GB/s of a copy row (2 x bytes / time:
 * every byte is read and written, as bandwidthTest counts device-to-device copies; GB = 1e9 bytes).
 * 0 for the other kernel, or while time_us is 0. */
double icsv_compute_tflops(const icsv_compute_row *r);
double icsv_compute_gbps(const icsv_compute_row *r);

#ifdef __cplusplus
}
#endif

#endif /* ICSV_PLAN_COMPUTE_H */
