/* How a training job spreads a model over GPUs, in Megatron-LM's terms: tensor (and sequence)
 * parallelism, pipeline stages with interleaved virtual stages, data-parallel replicas, batch
 * sizes, recomputation, the distributed optimizer, precision and gradient buckets. A layout is a
 * plain struct; start from ics_layout_defaults() and validate with ics_layout_check. */
#ifndef ICS_LAYOUT_H
#define ICS_LAYOUT_H

#include <stdbool.h>
#include <stdint.h>

#include "hw/hw.h"
#include "workload/model.h"
#include "workload/pp_layout.h"

typedef enum {
    ICS_RECOMPUTE_NONE,
    ICS_RECOMPUTE_SELECTIVE, /* the attention core (scores, softmax, values) again in backward */
    ICS_RECOMPUTE_FULL,      /* every layer's forward again before its backward */
    ICS_RECOMPUTE_COUNT
} ics_recompute;

/* How attention's core (scores, softmax, values) runs. */
typedef enum {
    ICS_ATTN_FLASH,   /* one fused kernel that never writes the s x s scores (FlashAttention) */
    ICS_ATTN_UNFUSED, /* batched GEMMs around a fused softmax and a dropout over the s x s
                         scores in HBM: Megatron-LM before FlashAttention (its SC'21 runs) */
    ICS_ATTN_COUNT
} ics_attention;

/* How Transformer Engine scales FP8 tensors (an fp8 layout; Megatron-Core's --fp8-recipe,
 * Megatron-Bridge's fp8_recipe): it decides how many kernels quantize a tensor, and whether a
 * grouped GEMM's per-expert pieces share one (workload_cost.c: fp8_quantize). */
typedef enum {
    ICS_FP8_DELAYED, /* per-tensor scales from an amax history (TE's DelayedScaling, its and
                        Megatron's default): one cast-transpose kernel, a fused multi-tensor one
                        for all of a grouped GEMM's pieces */
    ICS_FP8_CURRENT, /* per-tensor current scaling ("FP8-CS"): the amax of the tensor itself
                        first, so four kernels per tensor (zero the amax, reduce it, the scale,
                        the cast-transpose) and the input read twice */
    ICS_FP8_MX,      /* MXFP8 block scaling (32 values a scale; Blackwell): one kernel a tensor */
    ICS_FP8_RECIPE_COUNT
} ics_fp8_recipe;

/* What of each layer the framework captures into CUDA graphs, so that the host launches a
 * captured region once instead of kernel by kernel (Megatron-Core's --cuda-graph-scope;
 * docs/workload.md, "The host"). */
typedef enum {
    ICS_GRAPH_NONE,       /* every kernel launched by the host (the default) */
    ICS_GRAPH_MOE_ROUTER, /* a MoE layer's router and the dispatcher's preprocessing (TE's
                             graphs of scope moe_router + moe_preprocess) */
    ICS_GRAPH_FULL,       /* each transformer layer, forward and backward (Megatron-Core's
                             local graphs of whole layers); with experts only at a capacity
                             factor, whose shapes are static */
    ICS_GRAPH_COUNT
} ics_graph_scope;

/* Which parallel dimension varies fastest along global ranks (and so along GPUs, node by node). */
typedef enum {
    ICS_PLACE_TP_PP_DP, /* rank = (dp * PP + pp) * TP + tp: Megatron's default order */
    ICS_PLACE_TP_DP_PP, /* rank = (pp * DP + dp) * TP + tp */
    ICS_PLACE_COUNT
} ics_placement;

typedef struct {
    int tp;  /* tensor-parallel size */
    bool sp; /* sequence parallelism (needs tp > 1 to matter) */
    int pp;  /* pipeline stages */
    int vp;  /* model chunks per stage (interleaved 1F1B when > 1) */
    int dp;  /* data-parallel replicas */
    int mbs; /* micro-batch size, sequences */
    int gbs; /* global batch size, sequences */
    ics_recompute recompute;
    bool dist_opt;   /* distributed optimizer: reduce-scatter gradients, all-gather parameters */
    bool zero2;      /* ZeRO-2 (DeepSpeed's stage 2), with dist_opt: the same traffic, but each rank
                        keeps only its shard of the gradients, a bucket whole only until its
                        reduce-scatter (Megatron's distributed optimizer, ZeRO-1, keeps them all) */
    ics_dtype dtype; /* of the math: bf16, fp16 or fp8 (fp8: GEMMs only, the rest in bf16) */
    ics_fp8_recipe fp8_recipe;  /* with fp8: how TE scales (default delayed); else unused */
    ics_graph_scope cuda_graph; /* what is captured into CUDA graphs (default none) */
    ics_dtype grad_dtype;  /* of the gradient reduction: fp32 (default, Megatron with bf16) or the
                              math's 16-bit type */
    uint64_t bucket_bytes; /* gradient bucket; 0: Megatron's default, max(40M, 1M x dp)
                              parameters at the gradient's size */
    bool overlap_grad_reduce; /* buckets start as their gradients are ready, not after backward */
    bool fsdp; /* fully sharded data parallelism (ZeRO-3, PyTorch FSDP2 as torchtitan runs it):
                  each transformer block's parameters all-gathered before its forward and again
                  before its backward, its gradients reduce-scattered after, all sharded over
                  dp (docs/workload.md) */
    int first_layers; /* Megatron-Core's --decoder-first-pipeline-num-layers: the first stage's
                         layers, the rest spread evenly (the embedding's stage kept lighter);
                         0: even; vp 1 only */
    int last_layers;  /* --decoder-last-pipeline-num-layers: the last stage's (the output
                         layer's), likewise */
    int fsdp_shard;   /* HSDP (with fsdp): shard over groups of this many dp ranks and
                         replicate across them (torchtitan's dp_shard x dp_replicate); 0:
                         shard over all of dp */
    bool overlap_param_gather; /* Megatron-Core's --overlap-param-gather: with dist_opt, the
                                  updated parameters are all-gathered beside the next forward,
                                  bucket by bucket, not after the optimizer (docs/workload.md) */
    bool tp_sync_bwd;          /* the backward's tensor-parallel reductions in series with the
                                  GEMMs (Megatron-LM before September 2021; today's
                                  --no-async-tensor-model-parallel-allreduce); false: beside
                                  the weight-gradient GEMM, as Megatron's Linear runs them */
    bool tp_comm_overlap;      /* Megatron-Core's --tp-comm-overlap (Transformer Engine's
                                  userbuffers): each layer's sequence-parallel all-gather and
                                  reduce-scatter run beside the GEMM that consumes or produces
                                  them (docs/workload.md); needs sp, as in Megatron */
    int recompute_layers;      /* with full recomputation, only the first this many layers of each
                                  model chunk (Megatron-Core's --recompute-method block
                                  --recompute-num-layers N); 0: every layer */
    bool split_embedding;      /* Megatron-Core's --account-for-embedding-in-pipeline-split: the
                                  embedding counts as a layer when layers are split over the
                                  virtual stages, so the first holds one layer fewer */
    bool split_loss;           /* --account-for-loss-in-pipeline-split: the output layer and loss
                                  likewise, on the last virtual stage */
    const int *chunk_layout;   /* Megatron-Core's --pipeline-model-parallel-layout, parsed
                                  (pp_layout.h): chunk_layout_n virtual stages in model order,
                                  chunk_layout[v] the index of v's first decoder layer and
                                  chunk_layout[chunk_layout_n] the layers in all,
                                  chunk_layout[chunk_layout_n + 1] its multi-token-prediction
                                  layers (m) on the last virtual stage; NULL: the rules
                                  above, no MTP. Borrowed: whoever fills the layout (the
                                  scenario, the command line, a bench) owns the array and keeps
                                  it alive while the layout is used */
    int chunk_layout_n;
    const char *chunk_layout_name; /* how messages name it: the option, or where the scenario
                                      gave it (borrowed like chunk_layout); NULL: its key */
    int lora_rank;  /* LoRA fine-tuning (NeMo's PEFT defaults: adapters of this rank on QKV,
                       the attention projection, fc1 and fc2; every base weight frozen: no
                       weight gradients, reductions or optimizer for them); 0: all trained */
    int packed_len; /* packed sequences: each sequence holds samples of this mean length and
                       attention stays inside a sample (Megatron's packed THD format); 0: one
                       sample a sequence */
    int cp;  /* context parallelism (Megatron-Core's --context-parallel-size): the sequence split
                over cp ranks, attention's K and V passed around their ring (docs/workload.md) */
    int ep;  /* expert parallelism (MoE models): each expert's weights on one of ep
                data-parallel ranks in turn, tokens dispatched to them by all-to-all
                (Megatron-Core's --expert-model-parallel-size; docs/workload.md) */
    int etp; /* expert tensor parallelism (--expert-tensor-parallel-size): 0 takes tp, the
                default (experts split over tp like the dense MLP, EP groups inside dp); 1 keeps
                each expert whole on its rank and folds the tp ranks into the expert-parallel
                groups (Megatron-Core's "MoE parallel folding"): ep x etp ranks of a stage's
                tp x dp, tp innermost (ics_layout_etp) */
    double moe_capacity; /* Megatron-Core's --moe-expert-capacity-factor with its inputs padded
                            to capacity: each expert takes capacity x its balanced share of
                            tokens; 0: dropless (the balanced share) */
    bool moe_deepep;     /* Megatron-Core's --moe-enable-deepep (the flex dispatcher, DeepEP or
                            HybridEP): across nodes a token goes once to each node holding any of
                            its experts, to the GPU of the sender's local index there, and NVLink
                            takes it on (docs/workload.md); false: NCCL all-to-alls */
    int node_gpus;       /* GPUs per node of the system the trace runs on (rank r on GPU r), for the
                            node-aware dispatch; 0: unknown, taken as one node */
    int nccl_buffsize;   /* NCCL_BUFFSIZE as the run sets it (the environment, the system's
                            nccl_conf): each connection's Simple buffer, for the memory estimate;
                            0: NCCL's 4 MiB */
    ics_placement placement;
    ics_attention attention;
    bool fold; /* give ops only to tp rank 0 of data-parallel replica 0 of each stage (replay.h's
                  folded traces): the symmetric ranks' work is mirrored, not listed */
} ics_layout;

/* The fields a layout is given by: the integers (each with a range, ics_layout_field_range),
 * then sequence parallelism and the gradient bucket, which messages name too. */
typedef enum {
    ICS_LAYOUT_TP,
    ICS_LAYOUT_PP,
    ICS_LAYOUT_VP,
    ICS_LAYOUT_DP,
    ICS_LAYOUT_MBS,
    ICS_LAYOUT_GBS,
    ICS_LAYOUT_INT_FIELDS, /* the count of integer fields above */
    ICS_LAYOUT_SP = ICS_LAYOUT_INT_FIELDS,
    ICS_LAYOUT_BUCKET_MB,
    ICS_LAYOUT_FIELD_COUNT
} ics_layout_field;

/* An integer field's key ("tp") and range: with the model's (model.h), the one set of ranges
 * the scenario reader and the command line check against (docs/limits.md). */
const ics_field_range *ics_layout_field_range(ics_layout_field f);
/* Whether v is in integer field f's range; else false and *error "NAME: expected an integer in
 * LO..HI, got V" (name NULL: from "expected"), as ics_model_check_field. */
bool ics_layout_check_field(ics_layout_field f, int64_t v, const char *name, GError **error);
/* The gradient bucket in MiB, a number in ICS_LAYOUT_BUCKET_MB_MIN..MAX (NaN and infinities
 * refused); the same form of error. */
#define ICS_LAYOUT_BUCKET_MB_MIN 1e-3
#define ICS_LAYOUT_BUCKET_MB_MAX 1e6
bool ics_layout_check_bucket_mb(double mb, const char *name, GError **error);

/* tp = pp = vp = dp = ep = mbs = 1, gbs = 1, no sp, full recompute off (none), bf16 math with fp32
 * gradient reduction, Megatron's bucket rule, overlap on, no distributed optimizer, TP-PP-DP
 * placement, flash attention, not folded. */
ics_layout ics_layout_defaults(void);

/* Whether the layout fits the model: sizes >= 1; heads, kv_heads and ffn divisible by tp;
 * experts by ep, dp by ep (or tp x dp by ep with etp = 1), a MoE model's expert widths by etp
 * and sequence parallelism with
 * tp > 1 (Megatron-Core's rules), no FSDP or overlapped parameter gather with experts;
 * layers by pp x vp; gbs by mbs x dp; interleaving needs pp >= 2 and micro-batches divisible by
 * pp (Megatron's rules). On failure false and sets *error saying what to change (ICS_ERROR_INPUT,
 * or ICS_ERROR_LIMIT past 2^24 GPUs or 2^20 micro-batches per stage). */
bool ics_layout_check(const ics_layout *l, const ics_model *m, GError **error);
/* The same, naming field f names[f] ("--tp", a scenario's "file:line:col: $.layout.tp"; a NULL
 * entry: "layout: KEY") where the library's messages say "layout: tp". A rule between fields
 * (pp x vp against the layers) names the first of them. */
bool ics_layout_check_named(const ics_layout *l, const ics_model *m,
                            const char *const names[ICS_LAYOUT_FIELD_COUNT], GError **error);

int ics_layout_world(const ics_layout *l); /* tp x cp x pp x dp */
/* The expert tensor parallelism in effect: etp, or tp where it is 0. */
int ics_layout_etp(const ics_layout *l);
/* Expert data parallelism: the ranks of a stage holding the same experts, tp x dp / (ep x etp)
 * (dp / ep with the default etp = tp). */
int ics_layout_edp(const ics_layout *l);
/* Transformer layers on pipeline stage `stage` of a checked layout: layers / pp, or with
 * first_layers / last_layers those on the edge stages and the rest evenly in between, or what
 * an explicit layout (chunk_layout) or a split counting the embedding and loss gives the
 * stage's virtual stages. */
int ics_layout_stage_layers(const ics_layout *l, const ics_model *m, int stage);
/* Transformer layers of virtual stage v (0 .. pp x vp - 1; chunk c of stage s is virtual stage
 * c x pp + s), and the global index of its first. */
int ics_layout_chunk_layers(const ics_layout *l, const ics_model *m, int v);
int ics_layout_chunk_first_layer(const ics_layout *l, const ics_model *m, int v);
/* Megatron-Core's multi-token-prediction layers (the pipeline layout's m), on the last virtual
 * stage after its decoder layers: 0 without an explicit layout. */
int ics_layout_mtp(const ics_layout *l);
/* Whether the i-th layer of a model chunk is recomputed in full before its backward. */
bool ics_layout_recomputes(const ics_layout *l, int i);
/* Layers recomputed in full over the whole model (every chunk's first recompute_layers). */
int ics_layout_recomputed_layers(const ics_layout *l, const ics_model *m);
/* The global index of the i-th layer on stage `stage` (model chunks in order): with vp 1 the
 * stages' layers follow each other; interleaved (even stages), chunk c of the stage is virtual
 * stage c x pp + stage. O(1), or O(vp) with an explicit layout or a split counting the
 * embedding and loss. */
int ics_layout_stage_layer(const ics_layout *l, const ics_model *m, int stage, int i);
int ics_layout_microbatches(const ics_layout *l); /* gbs / (mbs x dp) */
/* The global rank (= trace rank, = GPU index) of a (tp, pp, dp) coordinate (context-parallel
 * rank 0), and of a (tp, cp, pp, dp) one: context parallelism varies right after tensor
 * parallelism, as in Megatron-Core's order. */
int ics_layout_rank(const ics_layout *l, int tp, int pp, int dp);
int ics_layout_rank_cp(const ics_layout *l, int tp, int cp, int pp, int dp);
/* Bytes of one element of activations (2: fp8 runs keep activations and their communication in
 * bf16) and of gradients as reduced. */
int ics_layout_act_bytes(const ics_layout *l);
int ics_layout_grad_bytes(const ics_layout *l);
/* The gradient bucket size in parameters (the rule when bucket_bytes is 0). */
uint64_t ics_layout_bucket_params(const ics_layout *l);

const char *ics_recompute_name(ics_recompute r); /* "none", "selective", "full" */
const char *ics_placement_name(ics_placement p); /* "tp-pp-dp", "tp-dp-pp" */
const char *ics_attention_name(ics_attention a); /* "flash", "unfused" */
/* The enum value of a name, or -1. */
int ics_recompute_parse(const char *s);
int ics_placement_parse(const char *s);
int ics_attention_parse(const char *s);
const char *ics_fp8_recipe_name(ics_fp8_recipe r); /* "delayed", "current", "mxfp8" */
/* The recipe named s, or -1. */
int ics_fp8_recipe_parse(const char *s);
const char *ics_graph_scope_name(ics_graph_scope g); /* "none", "moe_router", "full" */
int ics_graph_scope_parse(const char *s);

#endif
