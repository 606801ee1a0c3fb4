/* Transformer models as the training generator sees them: the shapes that set every GEMM, every
 * activation and every gradient (layers, hidden size, heads, grouped-query KV heads, FFN width,
 * vocabulary, sequence), read from a catalog (models/models.json, docs/workload.md) or built
 * from numbers given on the command line. A model is a plain struct; a valid one satisfies
 * ics_model_check. */
#ifndef ICS_MODEL_H
#define ICS_MODEL_H

#include <stdbool.h>
#include <stdint.h>

#include <glib.h>

typedef enum { ICS_ACT_GELU, ICS_ACT_SWIGLU, ICS_ACT_COUNT } ics_activation;
typedef enum { ICS_NORM_LAYERNORM, ICS_NORM_RMSNORM, ICS_NORM_COUNT } ics_norm;
typedef enum { ICS_POS_LEARNED, ICS_POS_ROPE, ICS_POS_COUNT } ics_position;

/* A mixture-of-experts MLP (Megatron-Core's MoE layer, docs/workload.md "Mixture of experts"):
 * a router sends each token to `topk` of `experts` MLPs of width `ffn`; `shared_ffn` is the
 * width of shared experts every token also passes (DeepSeek's; 0: none); the first
 * `dense_layers` layers keep the model's dense MLP (DeepSeek-V3's first_k_dense_replace).
 * Group-limited routing (DeepSeek-V3's n_group, topk_group; Megatron-Core's
 * --moe-router-num-groups, --moe-router-group-topk): the experts in `groups` equal groups of
 * consecutive experts, a token's experts all in `group_topk` of them; 0: no limit.
 * experts 0: a dense model, the other fields unused. */
typedef struct {
    int experts, topk, ffn, shared_ffn, dense_layers;
    int groups, group_topk;
} ics_moe;

typedef struct {
    char name[64];
    const char *source; /* citation (transfer none: the catalog's, or a static string) */
    int layers, hidden, heads;
    int kv_heads; /* grouped-query attention: K and V heads (= heads for multi-head) */
    int head_dim; /* each head's width; 0: hidden / heads (Qwen3's are wider: heads x head_dim
                     need not be hidden) */
    int ffn;      /* MLP inner width (swiglu: of each of the two input projections) */
    int vocab, seq;
    ics_activation act;
    ics_norm norm;
    bool bias;            /* linear layers have biases (GPT) or not (Llama) */
    ics_position pos;     /* learned absolute position embeddings add seq x hidden parameters */
    bool tied_embeddings; /* the output layer reuses the input embedding */
    ics_moe moe;
} ics_model;

/* The integer fields a model is given by, in the order they are checked. */
typedef enum {
    ICS_MODEL_LAYERS,
    ICS_MODEL_HIDDEN,
    ICS_MODEL_HEADS,
    ICS_MODEL_KV_HEADS,
    ICS_MODEL_FFN,
    ICS_MODEL_VOCAB,
    ICS_MODEL_SEQ,
    ICS_MODEL_FIELD_COUNT
} ics_model_field;

/* A field's key (the catalog's, the scenario's and, with "--", the command line's) and its
 * range. The model's and the layout's (layout.h) are the one set of ranges the catalog, the
 * scenario reader and the command line all check against (docs/limits.md). */
typedef struct {
    const char *key;
    int64_t lo, hi;
} ics_field_range;

const ics_field_range *ics_model_field_range(ics_model_field f);
/* Whether v is in field f's range; if not, false and *error (ICS_ERROR_INPUT, core/error.h's
 * ics_check_int) "NAME: expected an integer in LO..HI, got V"; name is how the user gave the
 * field ("--hidden"; NULL: the message starts at "expected"). */
bool ics_model_check_field(ics_model_field f, int64_t v, const char *name, GError **error);

/* A GPT-style model (gelu, layernorm, biases, learned positions, tied embeddings, multi-head)
 * from the numbers a command line gives. Check it with ics_model_check. */
ics_model ics_model_make(const char *name, int layers, int hidden, int heads, int ffn, int vocab,
                         int seq);

/* Whether the shapes make sense (each field in its range, hidden divisible by heads, heads by
 * kv_heads); on failure false and sets *error (ICS_ERROR_INPUT) "model NAME: KEY: expected ...".
 * The _named form names field f names[f] instead ("--heads", a scenario's
 * "file:line:col: $.model.heads"; a NULL entry: "model NAME: KEY"). */
bool ics_model_check(const ics_model *m, GError **error);
bool ics_model_check_named(const ics_model *m, const char *const names[ICS_MODEL_FIELD_COUNT],
                           GError **error);

/* Each attention head's width: head_dim, or hidden / heads when it is 0. */
double ics_model_head_dim(const ics_model *m);

/* Parameter counts. Per (dense) layer: `sharded` are split over tensor-parallel ranks (QKV,
 * projection and MLP weights, column-parallel biases), `replicated` are copied on each (norms,
 * row-parallel biases). */
void ics_model_layer_params(const ics_model *m, double *sharded, double *replicated);
/* Word embedding (vocab x hidden), position embedding (0 with rope), final norm, untied output
 * layer (0 when tied). */
void ics_model_edge_params(const ics_model *m, double *word, double *position, double *final_norm,
                           double *output);
/* All parameters (a tied embedding counted once). */
double ics_model_params(const ics_model *m);
/* The attention part of a layer (QKV, projection, their biases, the norm before them). */
void ics_model_attn_params(const ics_model *m, double *sharded, double *replicated);
/* LoRA adapters of rank r on a layer's four linear layers (NeMo's defaults: QKV, the attention
 * projection, fc1, fc2), each an in x r and an r x out matrix: those of the attention part and
 * of the MLP part. */
void ics_model_lora_params(const ics_model *m, int r, double *attn, double *mlp);
/* Whether layer `layer` (0-based) has a mixture-of-experts MLP; how many do. */
bool ics_model_is_moe_layer(const ics_model *m, int layer);
int ics_model_moe_layers(const ics_model *m);
/* A MoE layer's MLP part, in place of ics_model_layer_params' dense MLP: the router (experts x
 * hidden) and the MLP's norm, replicated on tensor-parallel ranks; the shared experts, sharded
 * like a dense MLP; one routed expert, sharded over tensor (expert-tensor) parallelism. */
void ics_model_moe_params(const ics_model *m, double *replicated, double *shared, double *expert);
/* The expected number of `nodes` nodes a token's experts sit on, the experts spread evenly over
 * them in order (expert-parallel ranks node by node), each token's topk experts drawn uniformly
 * (Megatron's benchmarks force balanced routing) from its groups: exact where groups and nodes
 * nest (each node whole groups, or each group whole nodes), else as if ungrouped. nodes <= 1: 1. */
double ics_model_moe_nodes_hit(const ics_model *m, int nodes);
/* Parameters a token passes through: all but the experts it is not routed to (= all, dense). */
double ics_model_active_params(const ics_model *m);
/* Parameters that take part in a matrix multiply: the 6*N*T rule's N without embeddings,
 * norms and biases (the output layer counts, tied or not). */
double ics_model_matmul_params(const ics_model *m);

/* ---- the catalog ---- */

typedef struct ics_model_catalog ics_model_catalog;

/* Loads a models file. Errors (domain ICS_JSON_ERROR) read "file:line:col: $.path: expected
 * ..., got ..."; unknown keys are errors. Transfer full. */
ics_model_catalog *ics_model_catalog_load(const char *path, GError **err);
/* The same from memory (tests, fuzzing); `name` is used in messages. */
ics_model_catalog *ics_model_catalog_load_text(const char *name, const char *text, size_t len,
                                               GError **err);
/* The shipped catalog (models/models.json of the source tree). */
ics_model_catalog *ics_model_catalog_load_default(GError **err);
void ics_model_catalog_free(ics_model_catalog *c);

/* Lookups (transfer none; live as long as the catalog). */
const ics_model *ics_model_find(const ics_model_catalog *c, const char *name);
int ics_model_count(const ics_model_catalog *c);
const ics_model *ics_model_get(const ics_model_catalog *c, int i); /* in file order */

const char *ics_activation_name(ics_activation a); /* "gelu", "swiglu" */

#endif
