/* The 3D-parallel training generator: a model (model.h) and a layout (layout.h) become one
 * training step as every rank's operations (trace.h), the way Megatron-LM runs it: the
 * pipeline schedule (1F1B or interleaved 1F1B), per layer an attention block and an MLP block
 * with their tensor-parallel collectives, recomputation, pipeline sends and recvs, bucketed
 * gradient reduction overlapping the backward pass, the optimizer step. Compute ops carry their
 * duration from the GPU compute model (compute.h) and their FLOPs and bytes. docs/workload.md
 * describes every op.
 *
 * Streams of every rank (CUDA streams: ops on one run in order):
 *   0 "compute"       compute ops and tensor-parallel collectives (Megatron runs them blocking);
 *   1 "pp.send.act"   activation sends to the next stage;
 *   2 "dp"            gradient all-reduces / reduce-scatters per bucket, the tied-embedding
 *                     all-reduce, the distributed optimizer's parameter all-gathers;
 *   3 "pp.recv.act"   activation recvs from the previous stage;
 *   4 "pp.send.grad"  gradient sends to the previous stage;
 *   5 "pp.recv.grad"  gradient recvs from the next stage;
 *   6 "tp.overlap"    with --tp-comm-overlap, the tensor-parallel collectives that run beside
 *                     their GEMMs (Transformer Engine's userbuffers);
 *   7 "dp.gather"     with --fsdp, the parameter all-gathers (FSDP2's all-gather stream; its
 *                     reduce-scatters go on "dp").
 * Each point-to-point stream carries one (source, destination) channel, so matching in order
 * can never wait on an unrelated transfer (one shared stream would deadlock 1F1B, whose
 * Megatron implementation batches a send with the next recv). */
#ifndef ICS_WORKLOAD_H
#define ICS_WORKLOAD_H

#include <stdbool.h>

#include "hw/hw.h"
#include "trace/trace.h"
#include "workload/compute.h"
#include "workload/infer.h"
#include "workload/layout.h"
#include "workload/memory.h"
#include "workload/model.h"
#include "workload/scenario.h"

enum {
    ICS_WL_STREAM_COMPUTE,
    ICS_WL_STREAM_SEND_ACT,
    ICS_WL_STREAM_DP,
    ICS_WL_STREAM_RECV_ACT,
    ICS_WL_STREAM_SEND_GRAD,
    ICS_WL_STREAM_RECV_GRAD,
    ICS_WL_STREAM_TP_OVERLAP,
    ICS_WL_STREAM_GATHER,
    ICS_WL_STREAM_CP_SEND, /* context parallelism: K and V to the next rank of the ring */
    ICS_WL_STREAM_CP_RECV, /* and from the previous one */
    ICS_WL_STREAM_COUNT
};

/* One step of a stage's pipeline schedule: the forward or backward pass of micro-batch `mb`
 * through model chunk `chunk` (virtual stage chunk x pp + stage). */
typedef struct {
    bool fwd;
    int mb, chunk;
} ics_wl_step;

/* Stage `stage`'s order of passes: 2 x micro-batches x vp steps, Megatron's 1F1B (warm-up of
 * pp - stage - 1 forwards, then one forward one backward, then the remaining backwards), or its
 * interleaved schedule when vp > 1. The layout must pass ics_layout_check. Transfer full
 * (g_free); *n its length. */
ics_wl_step *ics_workload_schedule(const ics_layout *l, int stage, int *n);

/* The step as a trace of ics_layout_world(l) ranks (rank = ics_layout_rank), compute ops timed
 * for GPU type g. NULL and sets *error (as ics_model_check and ics_layout_check do, else
 * ICS_ERROR_INPUT) when the model or layout is invalid or the GPU cannot run the dtype;
 * ICS_ERROR_LIMIT, before anything is built, when a block of kernels takes longer than the
 * simulator's horizon (core/time.h, naming the model and the block) or the step's estimated ops
 * outgrow the memory budget (core/budget.h).
 * O(ranks x micro-batches x layers) ops (see docs/workload.md for counts); with l->fold, only
 * the representative ranks get ops. Transfer full. */
ics_trace *ics_workload_build(const ics_model *m, const ics_layout *l, const ics_hw_gpu_type *g,
                              GError **error);

/* FLOPs of one training step (all GPUs together), counted from the GEMM shapes the generator
 * uses (QKV with grouped-query heads, projection, 2 or 3 MLP matrices, attention scores and
 * values, logits; forward once, backward twice): */
typedef struct {
    double model_flops;    /* without recomputation: what model FLOPs utilization counts */
    double hardware_flops; /* with the layout's recomputation: what the GPUs execute */
    double tokens;         /* gbs x seq */
} ics_step_flops;

/* The layout gives the batch and the recomputation; its parallel sizes do not matter. */
void ics_workload_flops(const ics_model *m, const ics_layout *l, ics_step_flops *out);

/* Megatron-LM's closed formula (Narayanan et al., SC'21) for a GPT model and batch B:
 * 96 B s l h^2 (1 + s/(6h) + V/(16 l h)) with full recomputation, 72 B s l h^2 (1 + s/(6h) +
 * V/(12 l h)) without. */
double ics_workload_megatron_flops(const ics_model *m, double batch, bool full_recompute);

#endif
