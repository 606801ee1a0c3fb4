/* Shared by the training generator's files (workload.c: the trace; workload_cost.c: what each
 * block of kernels costs and the FLOP counts; workload_sched.c: pipeline schedules). Not a
 * public header; names carry the ics_wl__ prefix. */
#ifndef ICS_WORKLOAD_INTERNAL_H
#define ICS_WORKLOAD_INTERNAL_H

#include "workload/workload.h"

#include "core/json.h"
#include "workload/compute.h"

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
    /* a mixture-of-experts MLP (workload_moe.c), in order */
    ICS_WL_ROUTER_FWD,    /* norm, router GEMM, top-k softmax, permuting tokens by expert */
    ICS_WL_ROUTER_BWD,    /* the same backward */
    ICS_WL_EXPERTS_FWD,   /* the rank's experts: grouped fc1 GEMM, activation, grouped fc2 */
    ICS_WL_EXPERTS_BWD,   /* the same backward */
    ICS_WL_UNPERMUTE_FWD, /* tokens back in order, weighted by their routing, residual add */
    ICS_WL_UNPERMUTE_BWD, /* the same backward */
    ICS_WL_SHARED_FWD,    /* shared experts: a dense MLP every token passes (no norm) */
    ICS_WL_SHARED_BWD,    /* the same backward */
    /* multi-token prediction (the pipeline layout's m), before its decoder layer and head */
    ICS_WL_MTP_FWD, /* the shifted tokens' embedding, two RMSNorms, the 2h -> h projection */
    ICS_WL_MTP_BWD, /* the same backward, the embedding's gradient included */
    ICS_WL_BLOCK_COUNT
} ics_wl_block;

typedef struct {
    double flops;    /* GEMM and attention FLOPs (elementwise kernels count none) */
    double bytes;    /* HBM traffic */
    ics_time dur_ps; /* the compute model's time for every kernel of the block, launches included */
    int kernels;
    int launches; /* what the host launches for them: a grouped GEMM's experts one by one */
    /* attention and MLP blocks: the GEMMs next to the tensor-parallel collectives, which
     * --tp-comm-overlap runs beside them: the first consumes the gathered input (QKV, fc1; in
     * backward the projection's or fc2's data and weight gradients), the last produces what
     * is reduce-scattered (projection, fc2; in backward QKV's or fc1's) */
    ics_time gemm_in_ps, gemm_out_ps;
    /* backward blocks with the reductions beside the GEMMs (workload.c, async_bwd_block): the
     * part of gemm_out_ps that is QKV's or fc1's data gradient (the rest, its weight's) */
    ics_time gemm_out_dx_ps;
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

/* ---- the generator's state, shared by workload.c and workload_moe.c ---- */

/* A set of gradients reduced over one communicator, in Megatron's buckets. */
typedef struct {
    int comm; /* the reduction's communicator on the rank being written, or -1 */
    /* the names its ops carry: "dp.all_reduce", ... ("ep.dp.*" for the experts') */
    const char *all_reduce, *reduce_scatter, *all_gather;
    int size;         /* its ranks */
    double fill;      /* gradient parameters of the bucket being filled */
    int last_grad_op; /* the compute op that produced the newest gradients */
    GArray *buckets;  /* double: parameters of each bucket, in order */
    GArray *deferred; /* double: buckets that wait for the end of the backward (no overlap) */
} ics_wl_grads;

struct ics_wl {
    const ics_model *m;
    const ics_layout *l;
    const ics_hw_gpu_type *g;
    ics_trace *trace;
    int p, t, d, nmb, L, V; /* stages, tp, dp, micro-batches, layers of the chunk written,
                               virtual stages */
    int Lmax;               /* the largest chunk's layers */
    ics_wl_cost cost[ICS_WL_BLOCK_COUNT];
    uint64_t act_bytes; /* one micro-batch's b x s x h activations */
    uint64_t p2p_bytes; /* what a pipeline send carries */
    int grad_bytes;
    double bucket_params;
    double attn_params, mlp_params, embed_params, head_params; /* per rank */
    int *tp_comm, *dp_comm, *emb_comm;                         /* -1: none */
    /* mixture of experts (workload_moe.c): per rank, one MoE layer's replicated part (router,
     * norm), shared experts and routed experts; expert tensor parallelism (etp: tp, or 1);
     * expert-parallel and expert-data-parallel groups, per stage x (edp x etp) and x (ep x
     * etp) */
    double moe_rep_params, moe_shared_params, moe_expert_params;
    int ep, etp, *ep_comm, *edp_comm;
    int epc, edpc;    /* the rank's, or -1 */
    uint64_t *ep_row; /* the rank's DeepEP dispatch row over epc (workload_moe.c), or NULL:
                         NCCL's all-to-all; owned, made once per rank */
    int layer0;       /* the global index of the chunk's first layer being written */
    int c, cpr;       /* context parallelism: cp, and the rank's index in its ring */
    int pending_cp;   /* the K/V ring's last recv the next compute-stream op waits for, or -1 */
    int pending_tp;   /* a backward reduction beside the GEMMs the next compute-stream op (and a
                         gradient send) waits for, or -1 */
    int sh;           /* FSDP's shard group: dp, or HSDP's fsdp_shard */
    int *shard_comm, *rep_comm; /* HSDP: per (tp, stage) x replica / x shard index */
    /* the rank being written */
    int rank, s, tpr, dpr, tpc, dpc, shc, repc; /* shc, repc: HSDP's groups, or -1 */
    int last_compute;                           /* its last op on the compute stream */
    bool host_sync_next; /* the next compute-stream op waits for the host's sync (ics_trace_op) */
    int pending_recv;    /* a recv the next compute-stream op waits for, or -1 */
    int last_dp;         /* its last op on the dp stream, or -1 */
    ics_wl_grads dense;  /* gradients reduced over dp (all but the experts') */
    ics_wl_grads expert; /* the experts', reduced over expert data parallelism (edp) */
    /* --overlap-param-gather: the buckets' parameter all-gathers in the order the first
     * micro-batch's forward needs them (params_gathered), the ops issued, how many are */
    GArray *gather;   /* double: parameters of each bucket, in forward order */
    GArray *gathers;  /* int: the all-gather op of each bucket issued so far */
    int pending_gate; /* an all-gather the next compute-stream op waits for, or -1 */
    int *gate;        /* per model chunk, per forward unit: its bucket in gather (chunk_buckets) */
    int *chunk_first; /* per model chunk (and one past): its first bucket in gather */
};

typedef struct ics_wl ics_wl;

/* workload.c: an op on the compute stream, after the recv and gathers it waits for, or `dep`;
 * a block's compute op; a tensor-parallel collective of `bytes` on the compute stream; op `op`
 * produced the final gradients of `params` parameters of set g (the last micro-batch's). */
int ics_wl__on_compute(ics_wl *w, ics_trace_op *op, int dep);
int ics_wl__compute(ics_wl *w, ics_wl_block b, const char *name);
void ics_wl__tp_coll(ics_wl *w, ics_coll_op kind, uint64_t bytes, const char *name);
void ics_wl__tp_before(ics_wl *w);
void ics_wl__tp_after(ics_wl *w);
void ics_wl__grads(ics_wl *w, ics_wl_grads *g, double params, int op, bool last_mb);
/* Whether (tp rank tr, dp rank dr) is mirrored by a folded trace's representative (no ops). */
bool ics_wl__mirrored(const ics_wl *w, int tr, int dr);

/* workload_moe.c: the MoE parameters per rank (setup), the expert groups (communicators), one
 * MoE MLP forward (again: recomputed) and backward. */
void ics_wl__moe_setup(ics_wl *w);
void ics_wl__moe_comms(ics_wl *w, int *ranks);
void ics_wl__moe_rank(ics_wl *w);
void ics_wl__moe_fwd(ics_wl *w, bool again);
void ics_wl__moe_bwd(ics_wl *w, bool last_mb);

/* scenario.c: a scenario's "system" key (required) as a path, resolved against the directory of
 * the scenario file `path` unless absolute; NULL when absent or not a string (the reader's
 * error is set). Transfer full. Training and inference scenarios (infer_scenario.c) alike. */
char *ics_wl__scenario_system(ics_jr *r, const cJSON *root, const char *path);

#endif
