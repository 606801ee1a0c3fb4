/* Parallel layouts (layout.h): defaults, the rules a layout must satisfy, and rank arithmetic.
 * Messages name the field to change and the numbers that clash. */
#include "workload/layout.h"

#include <inttypes.h>
#include <stdarg.h>
#include <string.h>

#include <glib.h>

static const char *const recompute_names[] = {"none", "selective", "full", NULL};
static const char *const placement_names[] = {"tp-pp-dp", "tp-dp-pp", NULL};
static const char *const attention_names[] = {"flash", "unfused", NULL};
static const char *const fp8_recipe_names[] = {"delayed", "current", "mxfp8", NULL};
static const char *const graph_names[] = {"none", "moe_router", "full", NULL};

/* Megatron-core's DistributedDataParallelConfig.bucket_size default: max(40,000,000,
 * 1,000,000 x dp) parameters ("larger DP sizes need larger buckets to ensure collectives do not
 * become latency-bound"). */
#define BUCKET_MIN_PARAMS    40000000ULL
#define BUCKET_PARAMS_PER_DP 1000000ULL

ics_layout ics_layout_defaults(void)
{
    return (ics_layout){.tp = 1,
                        .pp = 1,
                        .vp = 1,
                        .dp = 1,
                        .ep = 1,
                        .cp = 1,
                        .mbs = 1,
                        .gbs = 1,
                        .recompute = ICS_RECOMPUTE_NONE,
                        .dtype = ICS_DTYPE_BF16,
                        .grad_dtype = ICS_DTYPE_FP32,
                        .overlap_grad_reduce = true,
                        .placement = ICS_PLACE_TP_PP_DP,
                        .attention = ICS_ATTN_FLASH};
}

int ics_layout_etp(const ics_layout *l)
{
    return l->etp > 0 ? l->etp : l->tp;
}

int ics_layout_edp(const ics_layout *l)
{
    return l->tp * l->dp / (l->ep * ics_layout_etp(l));
}

int ics_layout_world(const ics_layout *l)
{
    return l->tp * l->cp * l->pp * l->dp;
}

/* With the embedding and (or) the loss counted in the split: layers per virtual stage, the
 * first and last holding one fewer each for what they count. */
static bool split_edges(const ics_layout *l)
{
    return l->split_embedding || l->split_loss;
}

/* Virtual stages of unequal layers: an explicit layout, or a split counting the embedding and
 * loss. Their stages' layers are found by walking the stage's chunks. */
static bool uneven_chunks(const ics_layout *l)
{
    return l->chunk_layout || split_edges(l);
}

int ics_layout_stage_layer(const ics_layout *l, const ics_model *m, int stage, int i)
{
    if (uneven_chunks(l)) { /* walk the stage's chunks */
        for (int c = 0; c < l->vp; c++) {
            int v = c * l->pp + stage, n = ics_layout_chunk_layers(l, m, v);
            if (i < n)
                return ics_layout_chunk_first_layer(l, m, v) + i;
            i -= n;
        }
        g_return_val_if_reached(-1); /* i past the stage's layers: a caller's error */
    }
    int per_chunk = ics_layout_stage_layers(l, m, stage) / l->vp;
    if (l->vp > 1)
        return ((i / per_chunk) * l->pp + stage) * per_chunk + i % per_chunk;
    /* stages 1 .. pp - 2 hold the same count; the last comes after them all */
    int before = stage == 0 ? 0
                            : ics_layout_stage_layers(l, m, 0) +
                                  (stage - 1) * ics_layout_stage_layers(l, m, MIN(1, l->pp - 1));
    return before + i;
}

bool ics_layout_recomputes(const ics_layout *l, int i)
{
    return l->recompute == ICS_RECOMPUTE_FULL &&
           (l->recompute_layers == 0 || i < l->recompute_layers);
}

int ics_layout_recomputed_layers(const ics_layout *l, const ics_model *m)
{
    if (l->recompute != ICS_RECOMPUTE_FULL)
        return 0;
    int n = 0;
    for (int v = 0; v < l->pp * l->vp; v++) {
        int c = ics_layout_chunk_layers(l, m, v);
        n += l->recompute_layers > 0 ? MIN(c, l->recompute_layers) : c;
    }
    return n;
}

int ics_layout_microbatches(const ics_layout *l)
{
    return l->gbs / (l->mbs * l->dp);
}

int ics_layout_rank_cp(const ics_layout *l, int tp, int cp, int pp, int dp)
{
    int inner = cp * l->tp + tp, width = l->tp * l->cp;
    if (l->placement == ICS_PLACE_TP_DP_PP)
        return (pp * l->dp + dp) * width + inner;
    return (dp * l->pp + pp) * width + inner;
}

int ics_layout_rank(const ics_layout *l, int tp, int pp, int dp)
{
    return ics_layout_rank_cp(l, tp, 0, pp, dp);
}

int ics_layout_act_bytes(const ics_layout *l)
{
    (void)l;
    return 2;
}

int ics_layout_grad_bytes(const ics_layout *l)
{
    return l->grad_dtype == ICS_DTYPE_FP32 ? 4 : 2;
}

uint64_t ics_layout_bucket_params(const ics_layout *l)
{
    if (l->bucket_bytes > 0) {
        uint64_t p = l->bucket_bytes / (uint64_t)ics_layout_grad_bytes(l);
        return p > 0 ? p : 1;
    }
    uint64_t by_dp = BUCKET_PARAMS_PER_DP * (uint64_t)l->dp;
    return by_dp > BUCKET_MIN_PARAMS ? by_dp : BUCKET_MIN_PARAMS;
}

const char *ics_recompute_name(ics_recompute r)
{
    return (unsigned)r < ICS_RECOMPUTE_COUNT ? recompute_names[r] : "?";
}

const char *ics_placement_name(ics_placement p)
{
    return (unsigned)p < ICS_PLACE_COUNT ? placement_names[p] : "?";
}

static int parse(const char *const *names, const char *s)
{
    for (int i = 0; s && names[i]; i++)
        if (strcmp(names[i], s) == 0)
            return i;
    return -1;
}

int ics_recompute_parse(const char *s)
{
    return parse(recompute_names, s);
}

int ics_placement_parse(const char *s)
{
    return parse(placement_names, s);
}

const char *ics_attention_name(ics_attention a)
{
    return (unsigned)a < ICS_ATTN_COUNT ? attention_names[a] : "?";
}

int ics_attention_parse(const char *s)
{
    return parse(attention_names, s);
}

const char *ics_fp8_recipe_name(ics_fp8_recipe r)
{
    return (unsigned)r < ICS_FP8_RECIPE_COUNT ? fp8_recipe_names[r] : "?";
}

int ics_fp8_recipe_parse(const char *s)
{
    return parse(fp8_recipe_names, s);
}

const char *ics_graph_scope_name(ics_graph_scope g)
{
    return (unsigned)g < ICS_GRAPH_COUNT ? graph_names[g] : "?";
}

int ics_graph_scope_parse(const char *s)
{
    return parse(graph_names, s);
}

/* ---- the rules ------------------------------------------------------------------------------- */

/* The one set of ranges (layout.h): as large as any machine could hold (2^16-way tensor or
 * pipeline parallelism, 2^20 replicas); the products are bounded below (2^24 GPUs, 2^20
 * micro-batches per stage). */
static const ics_field_range layout_ranges[ICS_LAYOUT_INT_FIELDS] = {
    [ICS_LAYOUT_TP] = {"tp", 1, 1 << 16},   [ICS_LAYOUT_PP] = {"pp", 1, 1 << 16},
    [ICS_LAYOUT_VP] = {"vp", 1, 1 << 10},   [ICS_LAYOUT_DP] = {"dp", 1, 1 << 20},
    [ICS_LAYOUT_MBS] = {"mbs", 1, 1 << 16}, [ICS_LAYOUT_GBS] = {"gbs", 1, 1 << 30},
};

const ics_field_range *ics_layout_field_range(ics_layout_field f)
{
    g_assert((unsigned)f < ICS_LAYOUT_INT_FIELDS);
    return &layout_ranges[f];
}

bool ics_layout_check_field(ics_layout_field f, int64_t v, const char *name, GError **error)
{
    const ics_field_range *r = ics_layout_field_range(f);
    return ics_check_int(name, v, r->lo, r->hi, error);
}

bool ics_layout_check_bucket_mb(double mb, const char *name, GError **error)
{
    return ics_check_num(name, mb, ICS_LAYOUT_BUCKET_MB_MIN, ICS_LAYOUT_BUCKET_MB_MAX, error);
}

/* Messages name fields as the caller's user gave them. */
typedef struct {
    const char *const *names; /* NULL: the library's own "layout: KEY" */
    char *buf[ICS_LAYOUT_FIELD_COUNT];
} namer;

static const char *name_of(namer *nm, ics_layout_field f)
{
    static const char *const keys[ICS_LAYOUT_FIELD_COUNT] = {
        [ICS_LAYOUT_TP] = "tp",   [ICS_LAYOUT_PP] = "pp",
        [ICS_LAYOUT_VP] = "vp",   [ICS_LAYOUT_DP] = "dp",
        [ICS_LAYOUT_MBS] = "mbs", [ICS_LAYOUT_GBS] = "gbs",
        [ICS_LAYOUT_SP] = "sp",   [ICS_LAYOUT_BUCKET_MB] = "bucket_mb"};
    if (nm->names && nm->names[f])
        return nm->names[f];
    if (!nm->buf[f])
        nm->buf[f] = g_strdup_printf("layout: %s", keys[f]);
    return nm->buf[f];
}

static bool fail(GError **error, int code, const char *fmt, ...) G_GNUC_PRINTF(3, 4);

/* Sets *error (domain ICS_ERROR); returns false. */
static bool fail(GError **error, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *msg = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    g_set_error_literal(error, ICS_ERROR, code, msg);
    g_free(msg);
    return false;
}

static int int_field(const ics_layout *l, ics_layout_field f)
{
    const int v[ICS_LAYOUT_INT_FIELDS] = {
        [ICS_LAYOUT_TP] = l->tp, [ICS_LAYOUT_PP] = l->pp,   [ICS_LAYOUT_VP] = l->vp,
        [ICS_LAYOUT_DP] = l->dp, [ICS_LAYOUT_MBS] = l->mbs, [ICS_LAYOUT_GBS] = l->gbs};
    return v[f];
}

/* bucket_bytes as a scenario or the command line set it: 0 (the rule) or bucket_mb MiB */
static bool bucket_ok(const ics_layout *l)
{
    return l->bucket_bytes == 0 ||
           (l->bucket_bytes >= (uint64_t)(ICS_LAYOUT_BUCKET_MB_MIN * 1024 * 1024) &&
            l->bucket_bytes <= (uint64_t)(ICS_LAYOUT_BUCKET_MB_MAX * 1024 * 1024));
}

static bool check_sizes(const ics_layout *l, namer *nm, GError **error)
{
    for (int f = 0; f < ICS_LAYOUT_INT_FIELDS; f++)
        if (!ics_layout_check_field((ics_layout_field)f, int_field(l, (ics_layout_field)f),
                                    name_of(nm, (ics_layout_field)f), error))
            return false;
    if (l->cp < 1 || l->cp > 1 << 16)
        return fail(error, ICS_ERROR_INPUT, "layout: cp: expected an integer in 1..%d, got %d",
                    1 << 16, l->cp);
    int64_t world = (int64_t)l->tp * l->cp * l->pp * l->dp;
    if (world > 1 << 24)
        return fail(error, ICS_ERROR_LIMIT,
                    "%s: expected tp x cp x pp x dp at most %d GPUs, got %lld",
                    name_of(nm, ICS_LAYOUT_TP), 1 << 24, (long long)world);
    if (!bucket_ok(l))
        return fail(error, ICS_ERROR_INPUT, "%s: expected %g..%g MiB, got %" PRIu64 " bytes",
                    name_of(nm, ICS_LAYOUT_BUCKET_MB), ICS_LAYOUT_BUCKET_MB_MIN,
                    ICS_LAYOUT_BUCKET_MB_MAX, l->bucket_bytes);
    if (l->dtype != ICS_DTYPE_BF16 && l->dtype != ICS_DTYPE_FP16 && l->dtype != ICS_DTYPE_FP8)
        return fail(error, ICS_ERROR_INPUT, "layout: dtype: expected bf16, fp16 or fp8, got %s",
                    ics_dtype_name(l->dtype));
    if (l->grad_dtype != ICS_DTYPE_FP32 && l->grad_dtype != ICS_DTYPE_BF16 &&
        l->grad_dtype != ICS_DTYPE_FP16)
        return fail(error, ICS_ERROR_INPUT,
                    "layout: grad_dtype: expected fp32, bf16 or fp16, got %s",
                    ics_dtype_name(l->grad_dtype));
    if (l->dtype != ICS_DTYPE_FP8 && l->fp8_recipe != ICS_FP8_DELAYED)
        return fail(error, ICS_ERROR_INPUT,
                    "layout: fp8_recipe: expected dtype fp8 with it (it says how FP8 is scaled), "
                    "got %s with dtype %s",
                    ics_fp8_recipe_name(l->fp8_recipe), ics_dtype_name(l->dtype));
    if ((unsigned)l->recompute >= ICS_RECOMPUTE_COUNT ||
        (unsigned)l->placement >= ICS_PLACE_COUNT || (unsigned)l->attention >= ICS_ATTN_COUNT ||
        (unsigned)l->fp8_recipe >= ICS_FP8_RECIPE_COUNT ||
        (unsigned)l->cuda_graph >= ICS_GRAPH_COUNT)
        return fail(error, ICS_ERROR_INPUT,
                    "layout: recompute, placement, attention, fp8_recipe or cuda_graph_scope: "
                    "expected a known value, got another");
    return true;
}

static bool divides(namer *nm, GError **error, ics_layout_field f, int d, const char *of, int n)
{
    if (n % d == 0)
        return true;
    return fail(error, ICS_ERROR_INPUT, "%s: expected a divisor of the model's %s (%d), got %d",
                name_of(nm, f), of, n, d);
}

static int split_per_chunk(const ics_layout *l, const ics_model *m)
{
    return (m->layers + l->split_embedding + l->split_loss) / (l->pp * l->vp);
}

int ics_layout_chunk_layers(const ics_layout *l, const ics_model *m, int v)
{
    int V = l->pp * l->vp;
    if (l->chunk_layout)
        return l->chunk_layout[v + 1] - l->chunk_layout[v];
    if (split_edges(l))
        return split_per_chunk(l, m) - (v == 0 && l->split_embedding) -
               (v == V - 1 && l->split_loss);
    if (l->vp == 1)
        return ics_layout_stage_layers(l, m, v);
    return m->layers / V;
}

int ics_layout_mtp(const ics_layout *l)
{
    return l->chunk_layout ? l->chunk_layout[l->chunk_layout_n + 1] : 0;
}

int ics_layout_chunk_first_layer(const ics_layout *l, const ics_model *m, int v)
{
    if (l->chunk_layout)
        return l->chunk_layout[v];
    if (split_edges(l))
        return v == 0 ? 0 : v * split_per_chunk(l, m) - l->split_embedding;
    if (l->vp == 1)
        return ics_layout_stage_layer(l, m, v, 0);
    return v * (m->layers / (l->pp * l->vp));
}

int ics_layout_stage_layers(const ics_layout *l, const ics_model *m, int stage)
{
    if (uneven_chunks(l)) {
        int n = 0;
        for (int c = 0; c < l->vp; c++)
            n += ics_layout_chunk_layers(l, m, c * l->pp + stage);
        return n;
    }
    if (!l->first_layers && !l->last_layers)
        return m->layers / (l->pp * l->vp) * l->vp;
    if (stage == 0 && l->first_layers)
        return l->first_layers;
    if (stage == l->pp - 1 && l->last_layers)
        return l->last_layers;
    int edges = (l->first_layers > 0) + (l->last_layers > 0);
    return (m->layers - l->first_layers - l->last_layers) / (l->pp - edges);
}

/* Megatron-Core's uneven stages: the edge stages' layers given, the others' equal, all >= 1,
 * adding up to the model's; without interleaving (as icsim runs them). */
static bool check_uneven(const ics_layout *l, const ics_model *m, namer *nm, GError **error)
{
    int edges = (l->first_layers > 0) + (l->last_layers > 0);
    int rest = m->layers - l->first_layers - l->last_layers, middle = l->pp - edges;
    if (l->first_layers < 0 || l->last_layers < 0 || l->vp != 1 || l->pp < edges ||
        (middle > 0 && (rest < middle || rest % middle)) || (middle == 0 && rest != 0))
        return fail(error, ICS_ERROR_INPUT,
                    "%s: expected uneven edge stages (first %d, last %d layers) that leave the "
                    "model's other %d layers evenly to the %d stages between, without "
                    "interleaving (vp %d), got otherwise",
                    name_of(nm, ICS_LAYOUT_PP), l->first_layers, l->last_layers, rest, middle,
                    l->vp);
    return true;
}

static bool check_options(const ics_layout *l, const ics_model *m, namer *nm, GError **error);

/* The embedding and loss counted in the split: layers plus what they count divide evenly over
 * the virtual stages; not with explicit edge stages. An edge virtual stage may be left with the
 * embedding or the loss alone (126 + 2 over 16 x 8), as Megatron-Core allows. */
static bool check_split(const ics_layout *l, const ics_model *m, namer *nm, GError **error)
{
    int64_t chunks = (int64_t)l->pp * l->vp, units = m->layers + l->split_embedding + l->split_loss;
    if (l->first_layers || l->last_layers || units % chunks)
        return fail(error, ICS_ERROR_INPUT,
                    "%s: expected pp x vp (%lld) a divisor of the layers with the embedding and "
                    "loss counted (%lld), without first or last stage layers, got otherwise",
                    name_of(nm, ICS_LAYOUT_PP), (long long)chunks, (long long)units);
    return true;
}
/* An explicit layout (--pipeline-model-parallel-layout): a virtual stage for each of pp x vp,
 * the model's layers in all, and none of the other ways of splitting with it. */
static bool check_explicit(const ics_layout *l, const ics_model *m, GError **error)
{
    int64_t chunks = (int64_t)l->pp * l->vp;
    if (l->chunk_layout_n != chunks || l->chunk_layout[l->chunk_layout_n] != m->layers)
        return fail(error, ICS_ERROR_INPUT,
                    "%s: expected pp x vp (%d x %d = %lld) stages holding the model's %d layers, "
                    "got %d stages holding %d",
                    l->chunk_layout_name ? l->chunk_layout_name : "pipeline_model_parallel_layout",
                    l->pp, l->vp, (long long)chunks, m->layers, l->chunk_layout_n,
                    l->chunk_layout[l->chunk_layout_n]);
    if (l->first_layers || l->last_layers || split_edges(l))
        return fail(error, ICS_ERROR_INPUT,
                    "%s: expected no other way of splitting the layers beside it (the layout "
                    "places every layer), got %s too",
                    l->chunk_layout_name ? l->chunk_layout_name : "pipeline_model_parallel_layout",
                    l->first_layers || l->last_layers ? "decoder_first/last_pipeline_num_layers"
                                                      : "account_for_*_in_pipeline_split");
    /* the MTP layer's parameters sit in no FSDP unit or gather bucket icsim builds */
    if (ics_layout_mtp(l) > 0 && (l->fsdp || l->overlap_param_gather))
        return fail(error, ICS_ERROR_INPUT,
                    "%s: expected no multi-token-prediction layers (m) with %s (not modelled "
                    "together), got %d",
                    l->chunk_layout_name ? l->chunk_layout_name : "pipeline_model_parallel_layout",
                    l->fsdp ? "fsdp" : "overlap_param_gather", ics_layout_mtp(l));
    return true;
}

static bool check_experts(const ics_layout *l, const ics_model *m, namer *nm, GError **error);
static bool check_context(const ics_layout *l, const ics_model *m, namer *nm, GError **error);
static bool check_peft(const ics_layout *l, const ics_model *m, GError **error);

static bool check_model(const ics_layout *l, const ics_model *m, namer *nm, GError **error)
{
    if (!divides(nm, error, ICS_LAYOUT_TP, l->tp, "heads", m->heads) ||
        !divides(nm, error, ICS_LAYOUT_TP, l->tp, "kv_heads", m->kv_heads) ||
        !divides(nm, error, ICS_LAYOUT_TP, l->tp, "ffn", m->ffn))
        return false;
    if (l->chunk_layout) {
        if (!check_explicit(l, m, error))
            return false;
    } else if (split_edges(l)) {
        if (!check_split(l, m, nm, error))
            return false;
    } else if (l->first_layers || l->last_layers) {
        if (!check_uneven(l, m, nm, error))
            return false;
    } else {
        int64_t chunks = (int64_t)l->pp * l->vp;
        if (chunks > m->layers || m->layers % chunks)
            return fail(error, ICS_ERROR_INPUT,
                        "%s: expected pp x vp a divisor of the model's layers (%d), got %d x %d = "
                        "%lld",
                        name_of(nm, ICS_LAYOUT_PP), m->layers, l->pp, l->vp, (long long)chunks);
    }
    return check_options(l, m, nm, error) && check_experts(l, m, nm, error) &&
           check_context(l, m, nm, error) && check_peft(l, m, error);
}

/* The options that need a partner, and the sequence's split. */
static bool check_options(const ics_layout *l, const ics_model *m, namer *nm, GError **error)
{
    if (l->fsdp_shard > 0 && !l->fsdp)
        return fail(error, ICS_ERROR_INPUT,
                    "layout: fsdp_shard: expected fsdp on with it (HSDP shards inside groups of "
                    "dp), got fsdp off");
    if (l->fsdp_shard == 1 || l->fsdp_shard < 0)
        return fail(error, ICS_ERROR_INPUT,
                    "layout: fsdp_shard: expected 2 or more (a shard group), got %d",
                    l->fsdp_shard);
    if (l->zero2 && (!l->dist_opt || l->fsdp))
        return fail(error, ICS_ERROR_INPUT,
                    "layout: zero2: expected the distributed optimizer (dist_opt) with it and "
                    "not fsdp (ZeRO-2 shards gradients on top of ZeRO-1; fsdp is ZeRO-3), got "
                    "%s",
                    l->fsdp ? "fsdp" : "no dist_opt");
    if (l->overlap_param_gather && !l->dist_opt)
        return fail(error, ICS_ERROR_INPUT,
                    "layout: overlap_param_gather: expected the distributed optimizer (dist_opt) "
                    "with it, as Megatron-Core requires, got none");
    if (l->fsdp_shard > 0 && l->dp % l->fsdp_shard)
        return fail(error, ICS_ERROR_INPUT, "%s: expected a multiple of fsdp_shard (%d), got %d",
                    name_of(nm, ICS_LAYOUT_DP), l->fsdp_shard, l->dp);
    if (l->tp_comm_overlap && !l->sp && l->tp > 1)
        return fail(error, ICS_ERROR_INPUT,
                    "%s: expected sequence parallelism with tp_comm_overlap (Megatron-Core "
                    "overlaps the sequence-parallel all-gathers and reduce-scatters), got none",
                    name_of(nm, ICS_LAYOUT_SP));
    if (l->sp && m->seq % l->tp)
        return fail(error, ICS_ERROR_INPUT,
                    "%s: expected the sequence (%d) divisible by tp (%d), got a remainder",
                    name_of(nm, ICS_LAYOUT_SP), m->seq, l->tp);
    return true;
}

/* Expert parallelism and the MoE layer's rules, as Megatron-Core states them: EP ranks are
 * data-parallel ranks (expert data parallelism is dp / ep), experts split evenly over them,
 * expert weights split over tensor parallelism like the dense MLP's, and tensor parallelism
 * with experts needs sequence parallelism (the token dispatcher works on the sequence shards).
 * With etp = 1 (MoE parallel folding) the expert side of a stage's tp x dp ranks is laid out
 * apart from the dense side, tp innermost: rank q = dp rank x tp + tp rank is expert-parallel
 * rank q mod ep of expert-data-parallel group q / ep, so ep x etp must divide tp x dp. Other etp
 * (a part of tp) are not modelled: refused (as context parallelism with experts is, below). FSDP
 * and the overlapped parameter gather are not modelled with experts: refused, not ignored. */
static bool check_experts(const ics_layout *l, const ics_model *m, namer *nm, GError **error)
{
    const ics_moe *e = &m->moe;
    if (l->ep < 1 || l->ep > 1 << 16)
        return fail(error, ICS_ERROR_INPUT, "layout: ep: expected an integer in 1..%d, got %d",
                    1 << 16, l->ep);
    if (!(l->moe_capacity == 0 || (l->moe_capacity >= 1 && l->moe_capacity <= 64)))
        return fail(error, ICS_ERROR_INPUT,
                    "layout: moe_capacity_factor: expected 0 (dropless) or 1..64, got %g",
                    l->moe_capacity);
    if (l->nccl_buffsize < 0)
        return fail(error, ICS_ERROR_INPUT,
                    "layout: nccl_buffsize: expected 0 (NCCL's) or a size in bytes, got %d",
                    l->nccl_buffsize);
    if (l->node_gpus < 0 || l->node_gpus > 1 << 20)
        return fail(error, ICS_ERROR_INPUT,
                    "layout: node_gpus: expected 0 (unknown) or 1..%d, got %d", 1 << 20,
                    l->node_gpus);
    if (e->experts == 0) {
        if (l->ep > 1 || l->etp > 0 || l->moe_capacity > 0 || l->moe_deepep ||
            l->cuda_graph == ICS_GRAPH_MOE_ROUTER)
            return fail(error, ICS_ERROR_INPUT,
                        "layout: %s: expected a mixture-of-experts model with it (models.json's "
                        "\"moe\"), got dense model %s",
                        l->ep > 1             ? "ep"
                        : l->etp > 0          ? "etp"
                        : l->moe_capacity > 0 ? "moe_capacity_factor"
                        : l->moe_deepep       ? "moe_enable_deepep"
                                              : "cuda_graph_scope moe_router",
                        m->name);
        return true;
    }
    if (l->cuda_graph == ICS_GRAPH_FULL && l->moe_capacity <= 0)
        return fail(error, ICS_ERROR_INPUT,
                    "layout: cuda_graph_scope: full with a mixture-of-experts model: expected a "
                    "moe_capacity_factor (whole-layer graphs need the experts' static shapes; "
                    "dropless routing changes them every step), got dropless");
    if (!(l->etp == 0 || l->etp == 1 || l->etp == l->tp))
        return fail(error, ICS_ERROR_INPUT,
                    "layout: etp: expected 1 or tp (%d) (icsim models experts whole on a rank or "
                    "split like the dense MLP), got %d",
                    l->tp, l->etp);
    bool folded = ics_layout_etp(l) < l->tp;
    if (e->experts % l->ep || (folded ? l->tp * l->dp : l->dp) % l->ep)
        return fail(error, ICS_ERROR_INPUT,
                    "layout: ep: expected a divisor of the experts (%d) and of %s (%d), got %d%s",
                    e->experts, folded ? "tp x dp with etp 1" : "dp",
                    folded ? l->tp * l->dp : l->dp, l->ep,
                    !folded && l->tp > 1 && (l->tp * l->dp) % l->ep == 0
                        ? " (with etp 1 it may divide tp x dp instead)"
                        : "");
    int etp = ics_layout_etp(l);
    if (e->ffn % etp || e->shared_ffn % l->tp)
        return fail(error, ICS_ERROR_INPUT,
                    "%s: expected a divisor of moe.ffn (%d) and moe.shared_ffn (%d), got %d",
                    name_of(nm, ICS_LAYOUT_TP), e->ffn, e->shared_ffn, l->tp);
    if (l->tp > 1 && !l->sp)
        return fail(error, ICS_ERROR_INPUT,
                    "%s: expected sequence parallelism with tp > 1 and experts (Megatron-Core's "
                    "token dispatcher works on sequence shards), got none",
                    name_of(nm, ICS_LAYOUT_SP));
    /* the dispatch gathered over tp, the largest buffer the layer moves, within 1 TiB (the
     * byte counts stay exact in doubles and far from 64 bits) */
    double gathered = (double)l->mbs * m->seq * e->topk * MAX(l->moe_capacity, 1.0) * m->hidden * 2;
    if (gathered > (double)(UINT64_C(1) << 40))
        return fail(error, ICS_ERROR_LIMIT,
                    "layout: the token dispatch of one MoE layer (mbs x seq x topk x capacity x "
                    "hidden x 2 B = %.3g bytes) expected at most 1 TiB, got more",
                    gathered);
    if (l->fsdp || l->overlap_param_gather)
        return fail(error, ICS_ERROR_INPUT,
                    "layout: %s: expected off with a mixture-of-experts model (not modelled with "
                    "experts), got on",
                    l->fsdp ? "fsdp" : "overlap_param_gather");
    return true;
}

/* Context parallelism as Megatron-Core runs it: the sequence in 2 x cp chunks (each rank a
 * chunk from each end, so causal attention's work is even), then split over tp with sequence
 * parallelism. Not modelled with it, and refused: experts, FSDP, attention without
 * FlashAttention (the kernels that exchange K and V are flash). */
static bool check_context(const ics_layout *l, const ics_model *m, namer *nm, GError **error)
{
    if (l->cp == 1)
        return true;
    if (m->seq % (2 * l->cp))
        return fail(error, ICS_ERROR_INPUT,
                    "layout: cp: expected the sequence (%d) divisible by 2 x cp (%d), got a "
                    "remainder",
                    m->seq, 2 * l->cp);
    if (l->sp && (m->seq / l->cp) % l->tp)
        return fail(error, ICS_ERROR_INPUT,
                    "%s: expected the sequence per cp rank (%d) divisible by tp (%d), got a "
                    "remainder",
                    name_of(nm, ICS_LAYOUT_SP), m->seq / l->cp, l->tp);
    const char *off = m->moe.experts > 0               ? "a mixture-of-experts model"
                      : l->fsdp                        ? "fsdp"
                      : l->attention != ICS_ATTN_FLASH ? "unfused attention"
                                                       : NULL;
    if (off)
        return fail(error, ICS_ERROR_INPUT,
                    "layout: cp: expected 1 with %s (not modelled with context parallelism), got "
                    "%d",
                    off, l->cp);
    return true;
}

/* LoRA (adapters of rank 1..hidden; not with FSDP or experts, whose frozen shards are not
 * modelled) and packed sequences (samples 1..seq tokens; FlashAttention's varlen kernels). */
static bool check_peft(const ics_layout *l, const ics_model *m, GError **error)
{
    if (l->recompute_layers < 0 || l->recompute_layers > m->layers ||
        (l->recompute_layers > 0 && l->recompute != ICS_RECOMPUTE_FULL))
        return fail(error, ICS_ERROR_INPUT,
                    "layout: recompute_num_layers: expected 0 or 1..layers (%d) with full "
                    "recomputation, got %d with recompute %s",
                    m->layers, l->recompute_layers, ics_recompute_name(l->recompute));
    if (l->lora_rank < 0 || l->lora_rank > m->hidden)
        return fail(error, ICS_ERROR_INPUT,
                    "layout: lora_rank: expected 0 (off) or 1..hidden (%d), got %d", m->hidden,
                    l->lora_rank);
    if (l->lora_rank > 0 && (l->fsdp || m->moe.experts > 0))
        return fail(error, ICS_ERROR_INPUT,
                    "layout: lora_rank: expected 0 with %s (not modelled together), got %d",
                    l->fsdp ? "fsdp" : "a mixture-of-experts model", l->lora_rank);
    if (l->packed_len < 0 || l->packed_len > m->seq)
        return fail(error, ICS_ERROR_INPUT,
                    "layout: packed_len: expected 0 (unpacked) or 1..seq (%d), got %d", m->seq,
                    l->packed_len);
    if (l->packed_len > 0 && l->attention != ICS_ATTN_FLASH)
        return fail(error, ICS_ERROR_INPUT,
                    "layout: packed_len: expected flash attention with packed sequences, got "
                    "unfused");
    return true;
}

static bool check_batches(const ics_layout *l, namer *nm, GError **error)
{
    int64_t per_step = (int64_t)l->mbs * l->dp;
    if (l->gbs % per_step)
        return fail(error, ICS_ERROR_INPUT,
                    "%s: expected a multiple of mbs x dp (%d x %d = %lld), got %d",
                    name_of(nm, ICS_LAYOUT_GBS), l->mbs, l->dp, (long long)per_step, l->gbs);
    int m = ics_layout_microbatches(l);
    /* Megatron-LM once wanted more than 2 stages to interleave; Megatron-Core takes 2
     * (Megatron-Bridge's Qwen3 30B recipe on H100: PP 2, VP 24): the generator's sends then
     * match per channel (activations, gradients: workload.c's tags) */
    if (l->vp > 1 && l->pp < 2)
        return fail(error, ICS_ERROR_INPUT,
                    "%s: expected 1 with pp = %d (interleaving needs 2 stages or more), got %d",
                    name_of(nm, ICS_LAYOUT_VP), l->pp, l->vp);
    if (l->vp > 1 && m % l->pp)
        return fail(error, ICS_ERROR_INPUT,
                    "%s: interleaving expected micro-batches (gbs / (mbs x dp) = %d) divisible by "
                    "pp (%d), got a remainder",
                    name_of(nm, ICS_LAYOUT_VP), m, l->pp);
    if ((int64_t)m * l->vp > 1 << 20)
        return fail(error, ICS_ERROR_LIMIT,
                    "%s: expected at most %d micro-batches per stage, got %lld",
                    name_of(nm, ICS_LAYOUT_GBS), 1 << 20, (long long)m * l->vp);
    return true;
}

bool ics_layout_check_named(const ics_layout *l, const ics_model *m,
                            const char *const names[ICS_LAYOUT_FIELD_COUNT], GError **error)
{
    namer nm = {.names = names};
    bool ok =
        check_sizes(l, &nm, error) && check_model(l, m, &nm, error) && check_batches(l, &nm, error);
    for (int f = 0; f < ICS_LAYOUT_FIELD_COUNT; f++)
        g_free(nm.buf[f]);
    return ok;
}

bool ics_layout_check(const ics_layout *l, const ics_model *m, GError **error)
{
    return ics_layout_check_named(l, m, NULL, error);
}
