/* The training-scenario reader (scenario.h), on the located JSON reader (json.h). */
#include "workload/scenario.h"
#include "core/json.h"
#include "workload/workload_internal.h"

#include <string.h>

void ics_train_scenario_init(ics_train_scenario *s)
{
    *s = (ics_train_scenario){.layout = ics_layout_defaults()};
    s->layout.fold = true; /* training jobs are symmetric: simulate one rank per set */
}

void ics_train_scenario_clear(ics_train_scenario *s)
{
    g_free(s->system);
    g_free(s->engine);
    g_free(s->chunk_layout);
    g_free(s->chunk_layout_where);
    for (int f = 0; f < ICS_MODEL_FIELD_COUNT; f++)
        g_free(s->model_where[f]);
    for (int f = 0; f < ICS_LAYOUT_FIELD_COUNT; f++)
        g_free(s->layout_where[f]);
    ics_train_scenario_init(s);
}

/* Where o.key sits, kept for later checks (NULL when absent). */
static char *where(ics_jr *r, const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return v ? ics_jr_where(r, v, key) : NULL;
}

/* $.layout.pipeline_model_parallel_layout: parsed into the scenario's array (pp_layout.h), its
 * errors located at the string. */
static void read_pp_layout(ics_jr *r, const cJSON *o, ics_train_scenario *s)
{
    const char *key = "pipeline_model_parallel_layout", *text = NULL;
    if (!ics_jr_str(r, o, key, false, &text))
        return;
    GError *err = NULL;
    int n = 0, *first = ics_pp_layout_parse(text, NULL, &n, &err);
    if (!first) {
        ics_jr_fail(r, cJSON_GetObjectItemCaseSensitive(o, key), key, "%s", err->message);
        g_error_free(err);
        return;
    }
    g_free(s->chunk_layout);
    g_free(s->chunk_layout_where);
    s->chunk_layout = first;
    s->chunk_layout_where = where(r, o, key);
    s->layout.chunk_layout = first;
    s->layout.chunk_layout_n = n;
    s->layout.chunk_layout_name = s->chunk_layout_where;
}

static const char *const recompute_names[] = {"none", "selective", "full", NULL};
static const char *const placement_names[] = {"tp-pp-dp", "tp-dp-pp", NULL};
static const char *const attention_names[] = {"flash", "unfused", NULL};
static const char *const fp8_recipe_names[] = {"delayed", "current", "mxfp8", NULL};
static const char *const graph_names[] = {"none", "moe_router", "full", NULL};
static const char *const dtype_names[] = {"bf16", "fp16", "fp8", NULL};
static const ics_dtype dtype_values[] = {ICS_DTYPE_BF16, ICS_DTYPE_FP16, ICS_DTYPE_FP8};
static const char *const grad_names[] = {"fp32", "bf16", "fp16", NULL};
static const ics_dtype grad_values[] = {ICS_DTYPE_FP32, ICS_DTYPE_BF16, ICS_DTYPE_FP16};

static void read_model(ics_jr *r, const cJSON *root, const ics_model_catalog *cat,
                       ics_train_scenario *s)
{
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(root, "model");
    if (!m) {
        ics_jr_fail(r, root, NULL, "expected a \"model\" (a catalog name or an object)");
        return;
    }
    if (cJSON_IsString(m)) {
        const ics_model *found = ics_model_find(cat, m->valuestring);
        if (!found) {
            ics_jr_fail(r, m, "model",
                        "expected a model of the catalog (gpt3-175b, llama3-70b, "
                        "...), got \"%s\"",
                        m->valuestring);
            return;
        }
        s->model = *found;
        s->have_model = true;
        return;
    }
    size_t mark = ics_jr_push_key(r, "model");
    static const char *const keys[] = {"name", "layers", "hidden", "heads",
                                       "ffn",  "vocab",  "seq",    NULL};
    /* the fields by shape, in the one set of ranges (model.h); ffn defaults to 4 x hidden */
    static const ics_model_field given[] = {ICS_MODEL_LAYERS, ICS_MODEL_HIDDEN, ICS_MODEL_HEADS,
                                            ICS_MODEL_VOCAB,  ICS_MODEL_SEQ,    ICS_MODEL_FFN};
    int64_t v[ICS_MODEL_FIELD_COUNT] = {0};
    const char *name = "custom";
    if (!cJSON_IsObject(m)) {
        char *got = ics_json_describe(m);
        ics_jr_fail(r, m, NULL, "expected a catalog name or an object, got %s", got);
        g_free(got);
    } else if (ics_jr_keys(r, m, keys)) {
        ics_jr_str(r, m, "name", false, &name);
        for (size_t i = 0; i < G_N_ELEMENTS(given); i++) {
            const ics_field_range *range = ics_model_field_range(given[i]);
            if (given[i] == ICS_MODEL_FFN)
                v[ICS_MODEL_FFN] = 4 * v[ICS_MODEL_HIDDEN];
            ics_jr_int(r, m, range->key, given[i] != ICS_MODEL_FFN, range->lo, range->hi,
                       &v[given[i]]);
            s->model_where[given[i]] = where(r, m, range->key);
        }
    }
    if (ics_jr_ok(r)) {
        s->model = ics_model_make(name, (int)v[ICS_MODEL_LAYERS], (int)v[ICS_MODEL_HIDDEN],
                                  (int)v[ICS_MODEL_HEADS], (int)v[ICS_MODEL_FFN],
                                  (int)v[ICS_MODEL_VOCAB], (int)v[ICS_MODEL_SEQ]);
        s->have_model = true;
    }
    ics_jr_pop(r, mark);
}

/* A layout field in the one set of ranges (layout.h), and where the file gave it. */
static void read_field(ics_jr *r, const cJSON *o, ics_layout_field f, ics_train_scenario *s,
                       int *out)
{
    const ics_field_range *range = ics_layout_field_range(f);
    int64_t v;
    if (ics_jr_int(r, o, range->key, false, range->lo, range->hi, &v))
        *out = (int)v;
    s->layout_where[f] = where(r, o, range->key);
}

static void read_layout(ics_jr *r, const cJSON *root, ics_train_scenario *s)
{
    const cJSON *o = ics_jr_obj(r, root, "layout", true);
    if (!o)
        return;
    size_t mark = ics_jr_push_key(r, "layout");
    static const char *const keys[] = {"tp",
                                       "pp",
                                       "vp",
                                       "dp",
                                       "mbs",
                                       "gbs",
                                       "sp",
                                       "recompute",
                                       "dist_opt",
                                       "zero2",
                                       "dtype",
                                       "fp8_recipe",
                                       "cuda_graph_scope",
                                       "grad_dtype",
                                       "bucket_mb",
                                       "overlap_grad_reduce",
                                       "tp_comm_overlap",
                                       "async_tensor_model_parallel_allreduce",
                                       "overlap_param_gather",
                                       "fsdp",
                                       "fsdp_shard",
                                       "ep",
                                       "etp",
                                       "cp",
                                       "lora_rank",
                                       "recompute_num_layers",
                                       "account_for_embedding_in_pipeline_split",
                                       "account_for_loss_in_pipeline_split",
                                       "packed_sample_len",
                                       "moe_capacity_factor",
                                       "moe_enable_deepep",
                                       "decoder_first_pipeline_num_layers",
                                       "decoder_last_pipeline_num_layers",
                                       "pipeline_model_parallel_layout",
                                       "placement",
                                       "fold",
                                       "attention",
                                       NULL};
    ics_layout *l = &s->layout;
    if (ics_jr_keys(r, o, keys)) {
        read_field(r, o, ICS_LAYOUT_TP, s, &l->tp);
        read_field(r, o, ICS_LAYOUT_PP, s, &l->pp);
        read_field(r, o, ICS_LAYOUT_VP, s, &l->vp);
        s->layout_dp = cJSON_HasObjectItem(o, "dp");
        read_field(r, o, ICS_LAYOUT_DP, s, &l->dp);
        read_field(r, o, ICS_LAYOUT_MBS, s, &l->mbs);
        read_field(r, o, ICS_LAYOUT_GBS, s, &l->gbs);
        ics_jr_bool(r, o, "sp", false, &l->sp);
        s->layout_where[ICS_LAYOUT_SP] = where(r, o, "sp");
        ics_jr_bool(r, o, "dist_opt", false, &l->dist_opt);
        ics_jr_bool(r, o, "zero2", false, &l->zero2);
        ics_jr_bool(r, o, "overlap_grad_reduce", false, &l->overlap_grad_reduce);
        ics_jr_bool(r, o, "tp_comm_overlap", false, &l->tp_comm_overlap);
        bool async = true;
        if (ics_jr_bool(r, o, "async_tensor_model_parallel_allreduce", false, &async))
            l->tp_sync_bwd = !async;
        ics_jr_bool(r, o, "overlap_param_gather", false, &l->overlap_param_gather);
        ics_jr_bool(r, o, "fsdp", false, &l->fsdp);
        ics_jr_bool(r, o, "account_for_embedding_in_pipeline_split", false, &l->split_embedding);
        ics_jr_bool(r, o, "account_for_loss_in_pipeline_split", false, &l->split_loss);
        int64_t edge;
        if (ics_jr_int(r, o, "decoder_first_pipeline_num_layers", false, 1, 1 << 20, &edge))
            l->first_layers = (int)edge;
        if (ics_jr_int(r, o, "decoder_last_pipeline_num_layers", false, 1, 1 << 20, &edge))
            l->last_layers = (int)edge;
        read_pp_layout(r, o, s);
        int64_t shard;
        if (ics_jr_int(r, o, "fsdp_shard", false, 2, 1 << 16, &shard))
            l->fsdp_shard = (int)shard;
        int64_t ep, etp, cp;
        if (ics_jr_int(r, o, "ep", false, 1, 1 << 16, &ep))
            l->ep = (int)ep;
        if (ics_jr_int(r, o, "etp", false, 1, 1 << 16, &etp))
            l->etp = (int)etp;
        if (ics_jr_int(r, o, "cp", false, 1, 1 << 16, &cp))
            l->cp = (int)cp;
        int64_t lora, packed, rec_layers;
        if (ics_jr_int(r, o, "recompute_num_layers", false, 0, 1 << 20, &rec_layers))
            l->recompute_layers = (int)rec_layers;
        if (ics_jr_int(r, o, "lora_rank", false, 0, 1 << 22, &lora))
            l->lora_rank = (int)lora;
        if (ics_jr_int(r, o, "packed_sample_len", false, 0, 1 << 24, &packed))
            l->packed_len = (int)packed;
        ics_jr_num(r, o, "moe_capacity_factor", false, 0, 64, &l->moe_capacity);
        ics_jr_bool(r, o, "moe_enable_deepep", false, &l->moe_deepep);
        ics_jr_bool(r, o, "fold", false, &l->fold);
        int e;
        if (ics_jr_enum(r, o, "recompute", false, recompute_names, &e))
            l->recompute = (ics_recompute)e;
        if (ics_jr_enum(r, o, "attention", false, attention_names, &e))
            l->attention = (ics_attention)e;
        if (ics_jr_enum(r, o, "placement", false, placement_names, &e))
            l->placement = (ics_placement)e;
        if (ics_jr_enum(r, o, "dtype", false, dtype_names, &e))
            l->dtype = dtype_values[e];
        if (ics_jr_enum(r, o, "fp8_recipe", false, fp8_recipe_names, &e))
            l->fp8_recipe = (ics_fp8_recipe)e;
        if (ics_jr_enum(r, o, "cuda_graph_scope", false, graph_names, &e))
            l->cuda_graph = (ics_graph_scope)e;
        if (ics_jr_enum(r, o, "grad_dtype", false, grad_names, &e))
            l->grad_dtype = grad_values[e];
        double mb;
        if (ics_jr_num(r, o, "bucket_mb", false, ICS_LAYOUT_BUCKET_MB_MIN, ICS_LAYOUT_BUCKET_MB_MAX,
                       &mb))
            l->bucket_bytes = (uint64_t)(mb * 1024 * 1024);
        s->layout_where[ICS_LAYOUT_BUCKET_MB] = where(r, o, "bucket_mb");
    }
    ics_jr_pop(r, mark);
}

char *ics_wl__scenario_system(ics_jr *r, const cJSON *root, const char *path)
{
    const char *sys = NULL;
    if (!ics_jr_str(r, root, "system", true, &sys))
        return NULL;
    if (g_path_is_absolute(sys))
        return g_strdup(sys);
    char *dir = g_path_get_dirname(path), *p = g_build_filename(dir, sys, NULL);
    g_free(dir);
    return p;
}

bool ics_train_scenario_load(const char *path, const ics_model_catalog *catalog,
                             ics_train_scenario *s, GError **err)
{
    ics_jr *r = ics_jr_new();
    const cJSON *root = ics_jr_load(r, path);
    static const char *const keys[] = {"kind",   "system",  "nodes",          "model", "layout",
                                       "engine", "comment", "host_launch_us", NULL};
    static const char *const kinds[] = {"training", NULL};
    static const char *const engines[] = {"analytic", "packet", NULL};
    if (root && ics_jr_keys(r, root, keys)) {
        int e;
        ics_jr_enum(r, root, "kind", true, kinds, &e);
        s->system = ics_wl__scenario_system(r, root, path);
        int64_t nodes;
        if (ics_jr_int(r, root, "nodes", false, 1, ICS_SCENARIO_NODES_MAX, &nodes))
            s->nodes = (int)nodes;
        if (ics_jr_enum(r, root, "engine", false, engines, &e))
            s->engine = g_strdup(engines[e]);
        s->have_host_launch = ics_jr_num(r, root, "host_launch_us", false, 0,
                                         ICS_SCENARIO_HOST_LAUNCH_US_MAX, &s->host_launch_us);
        read_model(r, root, catalog, s);
        read_layout(r, root, s);
    }
    GError *e = ics_jr_take_error(r);
    ics_jr_free(r);
    /* a model by shape whose fields clash (heads against hidden), named where the file gives
     * them; the layout is checked against it once the command line's values are in */
    if (!e && s->have_model && s->model_where[ICS_MODEL_LAYERS])
        ics_model_check_named(&s->model, (const char *const *)s->model_where, &e);
    if (e) {
        g_propagate_error(err, e);
        return false;
    }
    return true;
}
