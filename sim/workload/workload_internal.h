/* Shared by the training generator's files (workload.c: the trace; workload_cost.c: what each
 * block of kernels costs and the FLOP counts; workload_sched.c: pipeline schedules). Not a
 * public header; names carry the ics_wl__ prefix. */
#ifndef ICS_WORKLOAD_INTERNAL_H
#define ICS_WORKLOAD_INTERNAL_H

#include "workload/workload.h"

/* The compute ops of a step: each is a block of kernels between two tensor-parallel
 * collectives (or a pass's start or end). */
typedef enum {
    ICS_WL_EMBED_FWD,   /* word (+ position) embedding lookup */
    ICS_WL_EMBED_BWD,   /* accumulating the embedding's gradient */
    ICS_WL_ATTN_FWD,    /* norm, QKV GEMM, attention core, projection GEMM, bias-dropout-add */
    ICS_WL_ATTN_BWD,    /* the same backward: data and weight gradients */
    ICS_WL_MLP_FWD,     /* norm, fc1 GEMM, activation, fc2 GEMM, bias-dropout-add */
    ICS_WL_MLP_BWD,     /* the same backward */
    ICS_WL_HEAD_FWD,    /* final norm, logits GEMM, cross-entropy */
    ICS_WL_HEAD_BWD,    /* the same backward */
    ICS_WL_ATTN_RECOMP, /* selective recomputation: the attention core's forward again */
    ICS_WL_BLOCK_COUNT
} ics_wl_block;

typedef struct {
    double flops;    /* GEMM and attention FLOPs (elementwise kernels count none) */
    double bytes;    /* HBM traffic */
    ics_time dur_ps; /* the compute model's time for every kernel of the block, launches included */
    int kernels;
    /* attention and MLP blocks: the GEMMs next to the tensor-parallel collectives, which
     * --tp-comm-overlap runs beside them: the first consumes the gathered input (QKV, fc1; in
     * backward the projection's or fc2's data and weight gradients), the last produces what
     * is reduce-scattered (projection, fc2; in backward QKV's or fc1's) */
    ics_time gemm_in_ps, gemm_out_ps;
} ics_wl_cost;

/* Costs of each block for one micro-batch on one tensor-parallel rank of layout l; g NULL:
 * FLOPs and bytes only (durations 0). */
void ics_wl__costs(const ics_model *m, const ics_layout *l, const ics_hw_gpu_type *g,
                   ics_wl_cost out[ICS_WL_BLOCK_COUNT]);

/* Parameters of one layer's attention part (QKV, projection, first norm) and MLP part (fc1,
 * fc2, second norm) held by one tensor-parallel rank. */
void ics_wl__layer_rank_params(const ics_model *m, int tp, double *attn, double *mlp);

/* The name its compute ops carry ("fwd.attn", ...). */
const char *ics_wl__block_name(ics_wl_block b);

#endif
