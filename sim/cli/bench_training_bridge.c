/* `icsim bench training`'s Megatron-Bridge tables: the DGX-H100, DGX-B200 and DGX-GB200 rows of
 * NVIDIA's Megatron-Bridge (NeMo) performance tables (validate/data/training/megatron_bridge_h100,
 * _b200 and _gb200.json, provenance beside them), predicted on cluster models of those nodes and
 * compared on tokens/s per GPU, with where the critical rank's step goes. A row icsim cannot
 * express (a model not in the catalog, a layout its rules refuse) is listed with the reason, never
 * dropped silently. Nothing is fitted to the table. */
#include "cli/cli.h"
#include "cli/cli_common.h"
#include "replay/replay.h"
#include "workload/workload.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "cli/bench_training_internal.h"

/* A table of one system's rows and the cluster model it is predicted on. */
typedef struct {
    unsigned bit;       /* ICS_BENCH_H100 ... */
    const char *system; /* as the tables name it */
    const char *data, *data_name;
    const char *hw, *hw_name;
    const char *prefix; /* of its summary lines: "" for the first table (the ratchets read it) */
} bridge_table;

static const bridge_table bridge_tables[] = {
    {ICS_BENCH_H100, "DGX-H100",
     ICS_HWMODELS_DIR "/../validate/data/training/megatron_bridge_h100.json",
     "megatron_bridge_h100.json", ICS_HWMODELS_DIR "/superpod-h100-ndr.json", "superpod-h100-ndr",
     ""},
    {ICS_BENCH_B200, "DGX-B200",
     ICS_HWMODELS_DIR "/../validate/data/training/megatron_bridge_b200.json",
     "megatron_bridge_b200.json", ICS_HWMODELS_DIR "/superpod-b200-ndr.json", "superpod-b200-ndr",
     "B200 "},
    {ICS_BENCH_GB200, "DGX-GB200",
     ICS_HWMODELS_DIR "/../validate/data/training/megatron_bridge_gb200.json",
     "megatron_bridge_gb200.json", ICS_HWMODELS_DIR "/gb200-nvl72-16tray-su.json",
     "gb200-nvl72-16tray-su", "GB200 "}};

typedef struct {
    const char *container, *model, *precision;
    int gpus, gbs, mbs, seq, fsdp, tp, pp, cp, vp, ep;
    double tokens; /* published tokens/s per GPU */
} bridge_row;

static int int_or(const cJSON *o, const char *key, int dflt)
{
    const cJSON *v = cJSON_GetObjectItem(o, key);
    return cJSON_IsNumber(v) ? v->valueint : dflt;
}

static const char *str_or(const cJSON *o, const char *key, const char *dflt)
{
    const char *s = cJSON_GetStringValue(cJSON_GetObjectItem(o, key));
    return s ? g_intern_string(s) : dflt;
}

static GArray *read_bridge(const char *path, GError **error)
{
    char *text = NULL;
    if (!g_file_get_contents(path, &text, NULL, NULL)) {
        g_set_error(error, ICS_ERROR, ICS_ERROR_IO, "%s: cannot read", path);
        return NULL;
    }
    cJSON *doc = cJSON_Parse(text), *it;
    g_free(text);
    const cJSON *arr = cJSON_GetObjectItem(doc, "rows");
    if (!cJSON_IsArray(arr)) {
        g_set_error(error, ICS_ERROR, ICS_ERROR_INPUT, "%s: expected a \"rows\" array", path);
        cJSON_Delete(doc);
        return NULL;
    }
    GArray *rows = g_array_new(FALSE, FALSE, sizeof(bridge_row));
    cJSON_ArrayForEach(it, arr)
    {
        bridge_row r = {.container = str_or(it, "container", "?"),
                        .model = str_or(it, "model", "?"),
                        .precision = str_or(it, "precision", NULL),
                        .gpus = int_or(it, "gpus", 0),
                        .gbs = int_or(it, "gbs", 0),
                        .mbs = int_or(it, "mbs", 1),
                        .seq = int_or(it, "seq", 0),
                        .fsdp = int_or(it, "fsdp", 0),
                        .tp = int_or(it, "tp", 1),
                        .pp = int_or(it, "pp", 1),
                        .cp = int_or(it, "cp", 1),
                        .vp = int_or(it, "vp", 1),
                        .ep = int_or(it, "ep", 1)};
        const cJSON *tok = cJSON_GetObjectItem(it, "tokens_per_s_per_gpu");
        r.tokens = cJSON_IsNumber(tok) ? tok->valuedouble : NAN;
        g_array_append_val(rows, r);
    }
    cJSON_Delete(doc);
    return rows;
}

/* The catalog model of a table's model name (NULL: not in the catalog). */
static const ics_model *model_of(const ics_model_catalog *cat, const char *name)
{
    static const struct {
        const char *prefix, *model;
    } names[] = {{"LLAMA3_8B", "llama3-8b"},
                 {"LLAMA3_70B", "llama3-70b"},
                 {"LLAMA3.1_405B", "llama3-405b"},
                 {"DeepSeekV3", "deepseek-v3"},
                 {"Qwen3_30B_a3B", "qwen3-30b-a3b"},
                 {"GPT OSS 120B", "gpt-oss-120b"},
                 {"Qwen3_235B_a22B", "qwen3-235b-a22b"}};
    for (size_t i = 0; i < G_N_ELEMENTS(names); i++)
        if (g_str_has_prefix(name, names[i].prefix))
            return ics_model_find(cat, names[i].model);
    return NULL;
}

/* DeepSeek-V3's 61 layers divide over no pipeline, so its Megatron-Bridge recipes place them by
 * an explicit layout (Megatron-Core's --pipeline-model-parallel-layout): the one
 * set_deepseek_v3_pipeline_model_parallel_layout picks for (pp, vp) in
 * recipes/deepseek/deepseek_v3.py, and the performance recipes' "Et|(tt|)*30mL" for 8 x 4,
 * each ending with the MTP layer (m) before the loss. NULL: no recipe layout for (pp, vp). */
static const char *deepseek_layout(int pp, int vp)
{
    static const struct {
        int pp, vp;
        const char *layout;
    } recipes[] = {{4, 1, "Et*16|t*16|t*16|t*13mL"}, {8, 1, "Et*8|(t*8|)*6t*5mL"},
                   {4, 2, "Et*8|(t*8|)*6t*5mL"},     {16, 1, "Et*4|(t*4|)*14tmL"},
                   {8, 2, "Et*4|(t*4|)*14tmL"},      {4, 4, "Et*4|(t*4|)*14tmL"},
                   {8, 4, "Et|(tt|)*30mL"}};
    for (size_t i = 0; i < G_N_ELEMENTS(recipes); i++)
        if (recipes[i].pp == pp && recipes[i].vp == vp)
            return recipes[i].layout;
    return NULL;
}

/* What the recipes capture into CUDA graphs (Megatron-Bridge's performance configs, read from
 * its source): in the 25.09 container (v0.1.0rc4) whole layers of the token-dropping Qwen3 runs,
 * Qwen3-30B-A3B on DGX-B200 and DGX-GB200 and Qwen3-235B-A22B on DGX-GB200 (Megatron-Core's
 * local graphs; never on H100); from 25.11 on (v0.2.0, v0.3.0) Transformer Engine's graphs of
 * the router and the dispatcher's preprocessing for Qwen3-30B-A3B on Blackwell (and on H100 in
 * BF16, which the tables do not list), Qwen3-235B-A22B and DeepSeek-V3 on GB200 (their attention
 * graphs there are not modelled). */
static ics_graph_scope graph_of(const bridge_table *t, const bridge_row *r)
{
    bool q30 = g_str_has_prefix(r->model, "Qwen3_30B"),
         q235 = g_str_has_prefix(r->model, "Qwen3_235B");
    bool gb = t->bit == ICS_BENCH_GB200, blackwell = gb || t->bit == ICS_BENCH_B200;
    if (strcmp(r->container, "25.09") == 0)
        return strstr(r->model, "tokendrop") && ((q30 && blackwell) || (q235 && gb))
                   ? ICS_GRAPH_FULL
                   : ICS_GRAPH_NONE;
    if ((q30 && blackwell) || (gb && (q235 || g_str_has_prefix(r->model, "DeepSeekV3"))))
        return ICS_GRAPH_MOE_ROUTER;
    return ICS_GRAPH_NONE;
}

/* The layout a row's recipe runs, from the table's columns and what every Megatron-Bridge
 * performance recipe sets: FP8 (current scaling) or bf16 math, the gradient reduction's dtype;
 * sequence parallelism and the TP
 * communication overlap with tp > 1; the distributed optimizer with overlapped gradient
 * reduction and parameter gathering, or Megatron FSDP where the table says so; no
 * recomputation (the table does not give it); Megatron-Core's rank order (tp, cp, dp, pp); m
 * (may be NULL) for the pipeline split; *owned (g_free it) the explicit layout's array, if
 * the recipe gives one (DeepSeek-V3). */
static ics_layout layout_of(const bridge_table *t, const bridge_row *r, const ics_model *m,
                            int **owned)
{
    *owned = NULL;
    ics_layout l = ics_layout_defaults();
    l.tp = r->tp;
    l.pp = r->pp;
    l.cp = r->cp;
    l.vp = MAX(r->vp, 1);
    l.ep = MAX(r->ep, 1);
    l.dp = MAX(1, r->gpus / MAX(1, r->tp * r->pp * r->cp));
    /* the table gives no expert tensor parallelism: Megatron-Core's default (tp) where the
     * expert-parallel groups fit in dp, else they must take in the tp ranks: 1 (MoE parallel
     * folding, as the large MoE recipes run) */
    l.etp = r->tp > 1 && l.ep > 1 && l.dp % l.ep ? 1 : 0;
    l.mbs = r->mbs;
    l.gbs = r->gbs;
    l.sp = r->tp > 1;
    l.tp_comm_overlap = r->tp > 1;
    l.dtype = r->precision && strcmp(r->precision, "BF16") == 0 ? ICS_DTYPE_BF16 : ICS_DTYPE_FP8;
    /* the tables' FP8 recipes: FP8-MX and MXFP8 block scaling; FP8-CS per-tensor current
     * scaling, and so, an assumption, the 25.09 tables' unlabeled per-tensor figures (the
     * H100 25.11 table gives those rows as FP8-CS; the 25.09 scripts' default recipe was
     * delayed scaling) and the 26.02 tables' "FP8" */
    if (l.dtype == ICS_DTYPE_FP8)
        l.fp8_recipe = r->precision && strstr(r->precision, "MX") ? ICS_FP8_MX : ICS_FP8_CURRENT;
    /* the Llama, GPT-OSS and DeepSeek performance recipes reduce gradients in bf16
     * (grad_reduce_in_fp32 = False in their scripts/performance configs); Qwen3's keep the
     * default, fp32 */
    l.grad_dtype = strncmp(r->model, "Qwen3", 5) == 0 ? ICS_DTYPE_FP32 : ICS_DTYPE_BF16;
    l.fsdp = r->fsdp > 0;
    l.dist_opt = !l.fsdp;
    /* overlapped with experts icsim does not model (refused): gathered after the optimizer */
    l.overlap_param_gather = !l.fsdp && !(m && m->moe.experts > 0);
    /* DeepSeek-V3's recipes dispatch with DeepEP (enable_deepep=True on H100 in the 2025
     * performance scripts) or HybridEP (moe_flex_dispatcher_backend="hybridep" since): across
     * nodes once per node (workload_moe.c); the other recipes keep the all-to-all dispatcher */
    l.moe_deepep = g_str_has_prefix(r->model, "DeepSeekV3");
    /* the 25.09 Qwen3 recipes drop tokens: capacity factor 1, inputs padded to it
     * (moe_expert_capacity_factor, moe_pad_expert_input_to_capacity) */
    if (strstr(r->model, "tokendrop") && g_str_has_prefix(r->model, "Qwen3"))
        l.moe_capacity = 1;
    l.cuda_graph = graph_of(t, r);
    l.placement = ICS_PLACE_TP_DP_PP;
    l.fold = true;
    /* layers that do not divide over the virtual stages: the recipes count the embedding and
     * the loss in the split (Megatron-Core's account_for_*_in_pipeline_split), which is what
     * makes Llama 3.1 405B's 126 + 2 fill 64 virtual stages */
    int chunks = l.pp * l.vp;
    const char *recipe =
        g_str_has_prefix(r->model, "DeepSeekV3") ? deepseek_layout(l.pp, l.vp) : NULL;
    if (recipe) { /* the recipe places every layer: no split rule beside it */
        *owned = ics_pp_layout_parse(recipe, NULL, &l.chunk_layout_n, NULL);
        g_assert(*owned); /* the table above is ours: a string that does not parse is a bug */
        l.chunk_layout = *owned;
    } else if (m && m->layers % chunks && (m->layers + 2) % chunks == 0) {
        l.split_embedding = l.split_loss = true;
    }
    return l;
}

/* One row predicted: tokens/s per GPU, the step, the critical rank's shares (percent of the
 * step: the categories, the bubble and the host); false with *why when the row cannot be expressed.
 */
static bool predict_row(const bridge_table *t, const bridge_row *r, const ics_model *m,
                        const ics_layout *l, double *tokens, double *step_s,
                        double shares[ICS_REPORT_STEP_NPARTS], char **why)
{
    if (r->precision && strstr(r->precision, "FP4")) {
        *why = g_strdup_printf("precision %s: icsim has no 4-bit GEMMs (bf16, fp16, fp8)",
                               r->precision);
        return false;
    }
    ics_model mm = *m;
    mm.seq = r->seq;
    GError *err = NULL;
    ics_bench_step st;
    bool ok = ics_bench__step_run(&st, t->hw, r->gpus, &mm, l, &err);
    if (ok) {
        *step_s = ics_time_to_s(st.res.step_ps);
        *tokens = (double)r->gbs * mm.seq / *step_s / r->gpus;
        ics_bench__step_shares(&st, shares);
    } else {
        *why = g_strdup(err ? err->message : "no result");
    }
    g_clear_error(&err);
    ics_bench__step_free(&st);
    return ok;
}

/* |errors| of the rows predicted, of dense models and of mixtures of experts apart */
typedef struct {
    double *err[2];
    int n[2];
} bridge_errs;

static void print_row(const bridge_table *t, const bridge_row *r, const ics_layout *l,
                      const ics_model_catalog *cat, bridge_errs *be)
{
    /* an ep the tp ranks fold into (etp 1) is starred */
    char *par = g_strdup_printf("%d/%d/%d/%d/%d%s/%d", r->tp, r->pp, r->cp, l->vp, l->ep,
                                l->etp == 1 ? "*" : "", l->dp);
    printf("  %-5s %-14.14s %5d %-15s %5d %-6s %7.0f ", r->container, r->model, r->gpus, par,
           r->gbs, r->precision ? r->precision : "(FP8)", r->tokens);
    g_free(par);
    const ics_model *m = model_of(cat, r->model);
    double tokens = 0, step = 0, sh[ICS_REPORT_STEP_NPARTS] = {0};
    char *why = NULL;
    if (!m) {
        printf("not expressible: no such model in models/models.json\n");
        return;
    }
    if (!predict_row(t, r, m, l, &tokens, &step, sh, &why)) {
        printf("not expressible: %s\n", why);
        g_free(why);
        return;
    }
    double e = 100 * (tokens - r->tokens) / r->tokens;
    printf("%7.0f %+6.1f%% %7.3f  %4.1f %4.1f %4.1f %4.1f %4.1f %4.1f %4.1f %4.1f\n", tokens, e,
           step, sh[ICS_CAT_COMPUTE], sh[ICS_CAT_TP], sh[ICS_CAT_PP], sh[ICS_CAT_DP],
           sh[ICS_CAT_EP], sh[ICS_CAT_CP], sh[ICS_CAT_COUNT], sh[ICS_CAT_COUNT + 1]);
    int kind = m->moe.experts > 0;
    be->err[kind][be->n[kind]++] = fabs(e);
}

static int bridge_table_run(const bridge_table *t, const ics_model_catalog *cat)
{
    GError *err = NULL;
    GArray *rows = read_bridge(t->data, &err);
    if (!rows) {
        fprintf(stderr, "icsim bench training: %s\n", err->message);
        g_error_free(err);
        return 0;
    }
    printf("\n# Megatron-Bridge performance tables, %s rows (validate/data/training/%s) vs icsim "
           "(%s, analytic, folded):\n"
           "# tokens/s per GPU; the critical rank's step in %% (compute, TP, PP, DP, EP, CP "
           "exposed, bubble, host launching kernels); ep* with expert tensor parallelism 1 (MoE "
           "parallel folding)\n"
           "# DeepSeek-V3: its recipe's pipeline layout with its MTP layer, attention as MHA of "
           "the same width (models/models.json), the DeepEP dispatch\n",
           t->system, t->data_name, t->hw_name);
    printf("# %-5s %-14s %5s %-15s %5s %-6s %7s %7s %7s %7s  %4s %4s %4s %4s %4s %4s %4s %4s\n",
           "ctr", "model", "gpus", "tp/pp/cp/vp/ep/dp", "gbs", "prec", "publ", "pred", "error",
           "step_s", "comp", "tp", "pp", "dp", "ep", "cp", "bubl", "host");
    bridge_errs be = {{g_new(double, rows->len + 1), g_new(double, rows->len + 1)}, {0, 0}};
    for (guint i = 0; i < rows->len; i++) {
        const bridge_row *r = &g_array_index(rows, bridge_row, i);
        int *owned = NULL;
        ics_layout l = layout_of(t, r, model_of(cat, r->model), &owned);
        print_row(t, r, &l, cat, &be);
        g_free(owned);
    }
    /* dense and MoE models apart: one summary would let either hide the other */
    static const char *const kinds[] = {"dense", "MoE"};
    for (int k = 0; k < 2; k++) {
        double max = 0;
        for (int i = 0; i < be.n[k]; i++)
            max = MAX(max, be.err[k][i]);
        printf("%s%s rows predicted: %d; median |error| tokens/s per GPU: %.1f%%, max %.1f%%\n",
               t->prefix, kinds[k], be.n[k], ics_bench__median(be.err[k], be.n[k]), max);
    }
    printf("%srows predicted: %d of %u\n", t->prefix, be.n[0] + be.n[1], rows->len);
    g_free(be.err[0]);
    g_free(be.err[1]);
    g_array_free(rows, TRUE);
    return be.n[0] + be.n[1];
}

int ics_bench__training_bridge(const ics_model_catalog *cat, unsigned tables)
{
    int n = 0;
    for (size_t i = 0; i < G_N_ELEMENTS(bridge_tables); i++) {
        if (!(tables & bridge_tables[i].bit))
            continue;
        int rows = bridge_table_run(&bridge_tables[i], cat);
        if (rows == 0)
            return -1; /* a table with nothing predicted is a failure of the bench */
        n += rows;
    }
    return n;
}
