/* How long a GPU takes for a compute op that gives work (FLOPs, bytes) rather than a
 * duration: a roofline with achievable efficiencies. Tensor-core GEMMs reach a fraction of the
 * dense peak that grows with their size; attention a lower one; memory-bound kernels stream at
 * a fraction of HBM bandwidth. The fractions are parameters (documented where defined), so a
 * calibrator can replace them. */
#ifndef ICS_COMPUTE_H
#define ICS_COMPUTE_H

#include "sim/hw.h"
#include "sim/trace.h"

/* The duration of compute op `op` on GPU type g (op->duration_ps when it is > 0). */
ics_time ics_compute_time(const ics_hw_gpu_type *g, const ics_trace_op *op);

#endif
