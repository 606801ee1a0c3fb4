/* How long a GPU takes for a compute op that gives work (FLOPs, bytes, a GEMM shape) rather than
 * a duration: a roofline, max(FLOP time, memory time), with an achievable efficiency per kind of
 * work at the clock a power-bound GPU sustains (compute.sustained), plus fixed per-kernel costs.
 * GEMMs reach gemm_eff of the dense peak on the tiles they compute (m and n rounded up to the tile)
 * and pay a fill-and-drain time, so their efficiency grows with size and saturates; fused attention
 * runs at attn_eff of peak; memory-bound kernels stream at mem_eff of HBM bandwidth. The parameters
 * are the GPU type's (ics_hw_compute, docs/workload.md), so a calibrator can replace them. */
#ifndef ICS_COMPUTE_H
#define ICS_COMPUTE_H

#include "hw/hw.h"
#include "trace/trace.h"

/* The duration of compute op `op` on GPU type g (op->duration_ps when it is > 0). Ops of a
 * dtype the GPU has no peak for use bf16's, then fp16's, then fp32's. Saturates at
 * ICS_TIME_LIMIT (time.h): an op that long does not end within the simulator's horizon. */
ics_time ics_compute_time(const ics_hw_gpu_type *g, const ics_trace_op *op);

/* The duration of one kernel given as its work: kind w, dtype d, FLOPs, HBM bytes and, for a
 * GEMM, its m x n x k shape (doubles: a dimension past 2^31 saturates, which only the tile
 * utilization reads, and it is 1 there). What the training and inference generators price
 * their kernels with. */
ics_time ics_compute_kernel(const ics_hw_gpu_type *g, ics_work_kind w, ics_dtype d, double flops,
                            double bytes, double m, double n, double k);

/* The same for `batch` products of m x n x k in one kernel (a batched GEMM, or a grouped one
 * whose groups get m rows each, m possibly fractional: rows / groups), whose tiles are each
 * product's; batch 0: FLOPs / 2mnk. */
ics_time ics_compute_batched(const ics_hw_gpu_type *g, ics_work_kind w, ics_dtype d, double flops,
                             double bytes, double batch, double m, double n, double k);

/* `groups` GEMMs of one m x n x k shape, one per expert, issued round-robin on `streams` streams
 * as Transformer Engine's GroupedLinear issues a rank's experts (ICS_TE_COMPUTE_STREAMS): rounds
 * of up to `streams` GEMMs, each round one batched kernel whose tiles share the SMs (and one
 * launch), the next round after it. bytes_each: one GEMM's HBM bytes. The training generator's
 * grouped GEMMs (workload_cost.c: grouped) are priced by the same rounds; `icsim calibrate`
 * compares a runner's --groups rows with this. */
#define ICS_TE_COMPUTE_STREAMS 4 /* transformer_engine/common/util/multi_stream.cpp: a constant */
ics_time ics_compute_grouped(const ics_hw_gpu_type *g, ics_dtype d, double groups, int streams,
                             double m, double n, double k, double bytes_each);

/* The same in seconds, unsaturated (possibly huge or infinite: a GPU of 1e-9 TFLOP/s), for
 * messages that say how far past the horizon an op goes. */
double ics_compute_seconds(const ics_hw_gpu_type *g, const ics_trace_op *op);

/* The fraction of the dense peak an m x n x k GEMM of dtype d reaches on g at the boost clock, as
 * a GEMM benchmark measures it, fill and drain and launch included (what ics_compute_time implies
 * when FLOPs bound it, times the type's compute.sustained). */
double ics_compute_gemm_eff(const ics_hw_gpu_type *g, int m, int n, int k, ics_dtype d);

/* The peak, FLOP/s, ops of dtype d run at on g (after the fallbacks above); 0 if none. */
double ics_compute_peak(const ics_hw_gpu_type *g, ics_dtype d);

#endif
