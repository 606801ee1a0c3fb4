/* The GPU compute model (compute.h): a roofline, max(FLOP time, memory time), with efficiency
 * factors per kind of work. */
#include "compute.h"

#include <math.h>

/* Achievable fractions of peak. Large bf16 GEMMs on A100/H100 reach 70-80% of the dense peak
 * in cuBLAS; attention kernels about half; elementwise kernels stream near 80% of HBM. */
static const double flop_eff[ICS_WORK_KIND_COUNT] = {0.75, 0.5, 1.0};
static const double mem_eff = 0.8;

ics_time ics_compute_time(const ics_hw_gpu_type *g, const ics_trace_op *op)
{
    if (op->duration_ps > 0)
        return op->duration_ps;
    double peak = g->tflops[op->dtype] > 0 ? g->tflops[op->dtype] : g->tflops[ICS_DTYPE_FP32];
    double t_flop = peak > 0 ? op->flops / (peak * 1e12 * flop_eff[op->work]) : 0;
    double t_mem =
        g->hbm_bw_bytes_per_s ? op->mem_bytes / ((double)g->hbm_bw_bytes_per_s * mem_eff) : 0;
    return (ics_time)llround(fmax(t_flop, t_mem) * ICS_PS_PER_S);
}
