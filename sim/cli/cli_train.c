/* `icsim train [SCENARIO.json] -s SYSTEM --model NAME --tp T --pp P ...`: one training step of
 * a model under a 3D-parallel layout, generated (workload.h), replayed (replay.h) and reported
 * with Megatron's throughput figures. Options override the scenario's values. Every option is
 * checked against the ranges a scenario is (model.h, layout.h) before any file but the catalog
 * and the scenario is read: ics_cli_train_prepare, which the fuzz target drives. */
#include "cli/cli.h"
#include "cli/cli_common.h"
#include "cli/cli_step.h"
#include "trace/trace.h"
#include "workload/workload.h"

#include <stdio.h>
#include <string.h>

/* The options as given: strings, NULL when not given (cli_common.h says why numbers are text). */
typedef struct {
    char *system, *model, *models, *recompute, *dtype, *placement, *attention, *grad_dtype,
        *fp8_recipe, *graph;
    char *trace_out, *nodes, *bucket_mb, *fsdp_shard, *first_layers, *last_layers, *ep, *etp,
        *capacity, *cp, *lora, *packed, *rec_layers, *pp_layout;
    char *model_text[ICS_MODEL_FIELD_COUNT];  /* --layers ...; kv_heads is never an option */
    char *layout_text[ICS_LAYOUT_INT_FIELDS]; /* --tp ... --gbs */
    gboolean sp, dist_opt, zero2, no_overlap, no_fold, ignore_memory, tp_comm_overlap, tp_sync,
        deepep;
    gboolean overlap_param_gather, fsdp, split_embedding, split_loss;
    ics_cli_step_args step;
} train_args;

struct ics_cli_train_job {
    train_args a;
    ics_model_catalog *cat;
    ics_train_scenario s;
    int nodes; /* --nodes, else the scenario's; 0: what the layout needs */
    /* how each field is named in messages: the option, or where the scenario gave it */
    char *model_names[ICS_MODEL_FIELD_COUNT];
    char *layout_names[ICS_LAYOUT_FIELD_COUNT];
    bool layout_checked;
};

static bool usage(const char *fmt, const char *what)
{
    char *esc = g_strescape(what, NULL);
    ics_cli_fail("train", g_error_new(ICS_ERROR, ICS_ERROR_INPUT, fmt, esc));
    g_free(esc);
    return false;
}

static bool failed(GError *err)
{
    ics_cli_fail("train", err);
    return false;
}

/* --layers ... --ffn: each in the model's range, all five of the shape given (ffn: 4H). */
static bool model_by_shape(ics_cli_train_job *j)
{
    int64_t v[ICS_MODEL_FIELD_COUNT] = {0};
    GError *err = NULL;
    for (int f = 0; f < ICS_MODEL_FIELD_COUNT; f++) {
        const char *opt = j->model_names[f];
        if (!j->a.model_text[f])
            continue;
        if (!ics_cli_int(opt, j->a.model_text[f], &v[f], &err) ||
            !ics_model_check_field((ics_model_field)f, v[f], opt, &err))
            return failed(err);
    }
    const ics_model_field need[] = {ICS_MODEL_LAYERS, ICS_MODEL_HIDDEN, ICS_MODEL_HEADS,
                                    ICS_MODEL_VOCAB, ICS_MODEL_SEQ};
    for (size_t i = 0; i < G_N_ELEMENTS(need); i++)
        if (!j->a.model_text[need[i]])
            return usage("a model by shape needs --layers, --hidden, --heads, --vocab and --seq, "
                         "got no %s",
                         j->model_names[need[i]]);
    if (!j->a.model_text[ICS_MODEL_FFN])
        v[ICS_MODEL_FFN] = 4 * v[ICS_MODEL_HIDDEN]; /* in range: hidden <= 2^22 */
    j->s.model = ics_model_make("custom", (int)v[ICS_MODEL_LAYERS], (int)v[ICS_MODEL_HIDDEN],
                                (int)v[ICS_MODEL_HEADS], (int)v[ICS_MODEL_FFN],
                                (int)v[ICS_MODEL_VOCAB], (int)v[ICS_MODEL_SEQ]);
    j->s.have_model = true;
    return true;
}

/* The model: --model NAME, or --layers/--hidden/--heads/... (all of them), over the scenario's. */
static bool pick_model(ics_cli_train_job *j)
{
    bool shape = false;
    for (int f = 0; f < ICS_MODEL_FIELD_COUNT; f++)
        shape |= j->a.model_text[f] != NULL;
    if (j->a.model && shape)
        return usage("expected --model NAME or the model's shape (--layers ...), not both%s", "");
    if (j->a.model) {
        const ics_model *m = ics_model_find(j->cat, j->a.model);
        if (!m)
            return usage("--model: expected a model of the catalog (models/models.json: "
                         "gpt3-175b, llama3-70b, ...), got \"%s\"",
                         j->a.model);
        j->s.model = *m;
        j->s.have_model = true;
    } else if (shape && !model_by_shape(j)) {
        return false;
    }
    if (!j->s.have_model)
        return usage("expected a model: --model NAME, --layers ... or a scenario file%s", "");
    GError *err = NULL;
    if (shape && !ics_model_check_named(&j->s.model, (const char *const *)j->model_names, &err))
        return failed(err);
    return true;
}

/* --tp ... --gbs, each in the layout's range, over the scenario's; --bucket-mb likewise. */
static bool layout_numbers(ics_cli_train_job *j)
{
    ics_layout *l = &j->s.layout;
    int *dst[ICS_LAYOUT_INT_FIELDS] = {
        [ICS_LAYOUT_TP] = &l->tp, [ICS_LAYOUT_PP] = &l->pp,   [ICS_LAYOUT_VP] = &l->vp,
        [ICS_LAYOUT_DP] = &l->dp, [ICS_LAYOUT_MBS] = &l->mbs, [ICS_LAYOUT_GBS] = &l->gbs};
    GError *err = NULL;
    for (int f = 0; f < ICS_LAYOUT_INT_FIELDS; f++) {
        const char *text = j->a.layout_text[f], *opt = j->layout_names[f];
        int64_t v = 0;
        if (!text)
            continue;
        if (!ics_cli_int(opt, text, &v, &err) ||
            !ics_layout_check_field((ics_layout_field)f, v, opt, &err))
            return failed(err);
        *dst[f] = (int)v;
    }
    j->s.layout_dp |= j->a.layout_text[ICS_LAYOUT_DP] != NULL;
    double mb = 0;
    if (!ics_cli_num("--bucket-mb", j->a.bucket_mb, &mb, &err) ||
        (j->a.bucket_mb && !ics_layout_check_bucket_mb(mb, "--bucket-mb", &err)))
        return failed(err);
    if (j->a.bucket_mb)
        l->bucket_bytes = (uint64_t)(mb * 1024 * 1024);
    if (!ics_cli_int_in("--fsdp-shard", j->a.fsdp_shard, 2, 1 << 16, &l->fsdp_shard, &err) ||
        !ics_cli_int_in("--decoder-first-pipeline-num-layers", j->a.first_layers, 1, 1 << 20,
                        &l->first_layers, &err) ||
        !ics_cli_int_in("--decoder-last-pipeline-num-layers", j->a.last_layers, 1, 1 << 20,
                        &l->last_layers, &err) ||
        !ics_cli_int_in("--expert-model-parallel-size", j->a.ep, 1, 1 << 16, &l->ep, &err) ||
        !ics_cli_int_in("--expert-tensor-parallel-size", j->a.etp, 1, 1 << 16, &l->etp, &err) ||
        !ics_cli_int_in("--context-parallel-size", j->a.cp, 1, 1 << 16, &l->cp, &err) ||
        !ics_cli_int_in("--lora-rank", j->a.lora, 1, 1 << 22, &l->lora_rank, &err) ||
        !ics_cli_int_in("--recompute-num-layers", j->a.rec_layers, 1, 1 << 20, &l->recompute_layers,
                        &err) ||
        !ics_cli_int_in("--packed-sample-len", j->a.packed, 1, 1 << 24, &l->packed_len, &err) ||
        !ics_cli_num("--moe-expert-capacity-factor", j->a.capacity, &l->moe_capacity, &err))
        return failed(err);
    return true;
}

/* A word option's enum value into *out (untouched when not given); false, having said what it
 * expects, when the word is not one of them. */
static bool word(const char *flag, const char *given, int (*parse)(const char *),
                 const char *expected, int *out)
{
    if (!given)
        return true;
    int v = parse(given);
    if (v < 0) {
        char *fmt = g_strdup_printf("%s: expected %s, got \"%%s\"", flag, expected);
        usage(fmt, given); /* escapes the word given */
        g_free(fmt);
        return false;
    }
    *out = v;
    return true;
}

static bool layout_words(const train_args *a, ics_layout *l)
{
    int rec = (int)l->recompute, place = (int)l->placement, fp8 = (int)l->fp8_recipe,
        graph = (int)l->cuda_graph, attn = (int)l->attention;
    if (!word("--recompute", a->recompute, ics_recompute_parse, "none, selective or full", &rec) ||
        !word("--placement", a->placement, ics_placement_parse, "tp-pp-dp or tp-dp-pp", &place) ||
        !word("--fp8-recipe", a->fp8_recipe, ics_fp8_recipe_parse, "delayed, current or mxfp8",
              &fp8) ||
        !word("--cuda-graph-scope", a->graph, ics_graph_scope_parse, "none, moe_router or full",
              &graph) ||
        !word("--attention", a->attention, ics_attention_parse, "flash or unfused", &attn))
        return false;
    l->recompute = (ics_recompute)rec;
    l->placement = (ics_placement)place;
    l->fp8_recipe = (ics_fp8_recipe)fp8;
    l->cuda_graph = (ics_graph_scope)graph;
    l->attention = (ics_attention)attn;
    if (a->grad_dtype) {
        if (strcmp(a->grad_dtype, "fp32") == 0)
            l->grad_dtype = ICS_DTYPE_FP32;
        else if (strcmp(a->grad_dtype, "bf16") == 0)
            l->grad_dtype = ICS_DTYPE_BF16;
        else if (strcmp(a->grad_dtype, "fp16") == 0)
            l->grad_dtype = ICS_DTYPE_FP16;
        else
            return usage("--grad-dtype: expected fp32, bf16 or fp16, got \"%s\"", a->grad_dtype);
    }
    if (a->dtype) {
        if (strcmp(a->dtype, "bf16") == 0)
            l->dtype = ICS_DTYPE_BF16;
        else if (strcmp(a->dtype, "fp16") == 0)
            l->dtype = ICS_DTYPE_FP16;
        else if (strcmp(a->dtype, "fp8") == 0)
            l->dtype = ICS_DTYPE_FP8;
        else
            return usage("--dtype: expected bf16, fp16 or fp8, got \"%s\"", a->dtype);
    }
    return true;
}

static bool pick_layout(ics_cli_train_job *j)
{
    const train_args *a = &j->a;
    ics_layout *l = &j->s.layout;
    if (!layout_numbers(j))
        return false;
    l->sp |= a->sp;
    l->dist_opt |= a->dist_opt || a->zero2;
    l->zero2 |= a->zero2;
    l->tp_comm_overlap |= a->tp_comm_overlap;
    l->moe_deepep |= a->deepep;
    l->tp_sync_bwd |= a->tp_sync;
    l->overlap_param_gather |= a->overlap_param_gather;
    l->split_embedding |= a->split_embedding;
    l->split_loss |= a->split_loss;
    l->fsdp |= a->fsdp;
    if (a->pp_layout) { /* over the scenario's */
        GError *err = NULL;
        int n = 0, *first = ics_pp_layout_parse(a->pp_layout, "--pipeline-model-parallel-layout",
                                                &n, &err);
        if (!first)
            return failed(err);
        g_free(j->s.chunk_layout);
        j->s.chunk_layout = first;
        l->chunk_layout = first;
        l->chunk_layout_n = n;
        l->chunk_layout_name = "--pipeline-model-parallel-layout";
    }
    if (l->fsdp_shard > 0 && !l->fsdp)
        return usage("--fsdp-shard: expected --fsdp with it (HSDP shards FSDP's groups)%s", "");
    if (l->overlap_param_gather && !l->dist_opt)
        return usage("--overlap-param-gather: expected --dist-opt with it (Megatron-Core "
                     "gathers parameters only with its distributed optimizer)%s",
                     "");
    if (a->no_overlap)
        l->overlap_grad_reduce = false;
    if (a->no_fold)
        l->fold = false;
    return layout_words(a, l);
}

/* Each field named as the user gave it: the option, the scenario's location, or the option
 * with what it defaults to for a value nobody gave. */
static void name_fields(ics_cli_train_job *j)
{
    static const char *const layout_opts[ICS_LAYOUT_FIELD_COUNT] = {
        [ICS_LAYOUT_TP] = "--tp",   [ICS_LAYOUT_PP] = "--pp",
        [ICS_LAYOUT_VP] = "--vp",   [ICS_LAYOUT_DP] = "--dp",
        [ICS_LAYOUT_MBS] = "--mbs", [ICS_LAYOUT_GBS] = "--gbs",
        [ICS_LAYOUT_SP] = "--sp",   [ICS_LAYOUT_BUCKET_MB] = "--bucket-mb"};
    for (int f = 0; f < ICS_MODEL_FIELD_COUNT; f++)
        j->model_names[f] = g_strdup_printf("--%s", ics_model_field_range(f)->key);
    for (int f = 0; f < ICS_LAYOUT_FIELD_COUNT; f++) {
        bool given = f < ICS_LAYOUT_INT_FIELDS ? j->a.layout_text[f] != NULL
                     : f == ICS_LAYOUT_SP      ? j->a.sp
                                               : j->a.bucket_mb != NULL;
        const char *where = j->s.layout_where[f];
        if (given || !where)
            j->layout_names[f] = g_strdup_printf(
                "%s%s", layout_opts[f],
                given                ? ""
                : f == ICS_LAYOUT_DP ? " (default: every GPU of the system over tp x cp x pp)"
                                     : " (default)");
        else
            j->layout_names[f] = g_strdup(where);
    }
}

static bool check_layout(ics_cli_train_job *j)
{
    GError *err = NULL;
    j->layout_checked = true;
    if (!ics_layout_check_named(&j->s.layout, &j->s.model, (const char *const *)j->layout_names,
                                &err))
        return failed(err);
    return true;
}

/* Everything that needs no system: the options, merged over the scenario, each checked. */
static bool settle(ics_cli_train_job *j)
{
    train_args *a = &j->a;
    if (a->system) {
        g_free(j->s.system);
        j->s.system = g_strdup(a->system);
    }
    if (!j->s.system)
        return usage("expected -s FILE (or a scenario naming its system)%s", "");
    GError *err = NULL;
    j->nodes = j->s.nodes;
    if (!ics_cli_nodes(a->nodes, &j->nodes, &err))
        return failed(err);
    name_fields(j);
    if (!pick_model(j) || !pick_layout(j))
        return false;
    if (!a->step.engine && j->s.engine)
        a->step.engine = g_strdup(j->s.engine);
    if (!a->step.host_launch_us_text && j->s.have_host_launch) /* exact: 17 digits */
        a->step.host_launch_us_text = g_strdup_printf("%.17g", j->s.host_launch_us);
    if (!ics_cli_step_check("train", &a->step))
        return false;
    if (a->trace_out && !ics_cli_output_ok("train", "--trace-out", a->trace_out))
        return false;
    /* dp given: the whole layout now; else once the system says how many GPUs there are */
    return !j->s.layout_dp || check_layout(j);
}

/* Loads the system with as many nodes as the job needs (clusters), and checks it has the GPUs.
 * dp not given: every GPU of the system. */
static ics_hw *load_system(ics_cli_train_job *j, ics_topo **t)
{
    ics_train_scenario *s = &j->s;
    ics_hw *hw = ics_cli_load_hw(s->system, j->nodes);
    if (!hw)
        return NULL;
    *t = ics_topo_new(hw);
    int per = ics_topo_gpus_per_node(*t), have = per * ics_topo_nodes(*t);
    ics_layout *l = &s->layout;
    if (!s->layout_dp)
        l->dp = (int)MAX(1, have / MAX(1, (int64_t)l->tp * l->cp * l->pp));
    int64_t need = (int64_t)l->tp * l->cp * l->pp * l->dp;
    bool cluster = ics_topo_nodes(*t) > 1;
    if (cluster && j->nodes == 0 && need != have && need <= ICS_SCENARIO_NODES_MAX * (int64_t)per) {
        ics_topo_free(*t); /* fit the cluster to the job */
        ics_hw_free(hw);
        hw = ics_cli_load_hw(s->system, (int)((need + per - 1) / per));
        if (!hw)
            return NULL;
        *t = ics_topo_new(hw);
        have = per * ics_topo_nodes(*t);
    }
    if (need > have) {
        fprintf(stderr,
                "icsim train: the layout needs %lld GPUs (tp %d x pp %d x dp %d), %s has %d\n",
                (long long)need, l->tp, l->pp, l->dp, s->system, have);
        ics_topo_free(*t);
        *t = NULL;
        ics_hw_free(hw);
        return NULL;
    }
    return hw;
}

void ics_cli_train_job_free(ics_cli_train_job *j)
{
    if (!j)
        return;
    train_args *a = &j->a;
    ics_model_catalog_free(j->cat);
    ics_train_scenario_clear(&j->s);
    ics_cli_step_args_clear(&a->step);
    char **strs[] = {&a->system,     &a->model,      &a->models,       &a->recompute,   &a->dtype,
                     &a->placement,  &a->attention,  &a->grad_dtype,   &a->trace_out,   &a->nodes,
                     &a->bucket_mb,  &a->fsdp_shard, &a->first_layers, &a->last_layers, &a->ep,
                     &a->etp,        &a->capacity,   &a->cp,           &a->lora,        &a->packed,
                     &a->rec_layers, &a->pp_layout,  &a->fp8_recipe,   &a->graph};
    for (size_t i = 0; i < G_N_ELEMENTS(strs); i++)
        g_free(*strs[i]);
    for (int f = 0; f < ICS_MODEL_FIELD_COUNT; f++) {
        g_free(a->model_text[f]);
        g_free(j->model_names[f]);
    }
    for (int f = 0; f < ICS_LAYOUT_INT_FIELDS; f++)
        g_free(a->layout_text[f]);
    for (int f = 0; f < ICS_LAYOUT_FIELD_COUNT; f++)
        g_free(j->layout_names[f]);
    g_free(j);
}

int ics_cli_train_prepare(int argc, char **argv, bool help, ics_cli_train_job **out)
{
    ics_cli_train_job *j = g_new0(ics_cli_train_job, 1);
    *out = j;
    ics_train_scenario_init(&j->s);
    train_args *a = &j->a;
    char **m = a->model_text, **l = a->layout_text;
    const GOptionEntry base[] = {
        {"system", 's', 0, G_OPTION_ARG_FILENAME, &a->system, "hardware model (node or cluster)",
         "FILE"},
        {"nodes", 0, 0, G_OPTION_ARG_STRING, &a->nodes,
         "node count of a cluster (default: what the layout needs)", "N"},
        {"model", 0, 0, G_OPTION_ARG_STRING, &a->model, "a model of the catalog", "NAME"},
        {"models", 0, 0, G_OPTION_ARG_FILENAME, &a->models,
         "model catalog (default: models/models.json)", "FILE"},
        {"layers", 0, 0, G_OPTION_ARG_STRING, &m[ICS_MODEL_LAYERS], "model by shape: layers", "L"},
        {"hidden", 0, 0, G_OPTION_ARG_STRING, &m[ICS_MODEL_HIDDEN], "hidden size", "H"},
        {"heads", 0, 0, G_OPTION_ARG_STRING, &m[ICS_MODEL_HEADS], "attention heads", "A"},
        {"ffn", 0, 0, G_OPTION_ARG_STRING, &m[ICS_MODEL_FFN], "MLP width (default 4H)", "F"},
        {"vocab", 0, 0, G_OPTION_ARG_STRING, &m[ICS_MODEL_VOCAB], "vocabulary", "V"},
        {"seq", 0, 0, G_OPTION_ARG_STRING, &m[ICS_MODEL_SEQ], "sequence length", "S"},
        {"tp", 0, 0, G_OPTION_ARG_STRING, &l[ICS_LAYOUT_TP], "tensor-parallel size", "T"},
        {"pp", 0, 0, G_OPTION_ARG_STRING, &l[ICS_LAYOUT_PP], "pipeline stages", "P"},
        {"vp", 0, 0, G_OPTION_ARG_STRING, &l[ICS_LAYOUT_VP],
         "virtual stages per rank (interleaved 1F1B)", "V"},
        {"dp", 0, 0, G_OPTION_ARG_STRING, &l[ICS_LAYOUT_DP],
         "data-parallel replicas (default: every GPU of the system)", "D"},
        {"mbs", 0, 0, G_OPTION_ARG_STRING, &l[ICS_LAYOUT_MBS], "micro-batch size", "M"},
        {"gbs", 0, 0, G_OPTION_ARG_STRING, &l[ICS_LAYOUT_GBS], "global batch size", "B"},
        {"recompute", 0, 0, G_OPTION_ARG_STRING, &a->recompute,
         "activation recomputation: none (default), selective, full", "MODE"},
        {"sp", 0, 0, G_OPTION_ARG_NONE, &a->sp, "sequence parallelism", NULL},
        {"dist-opt", 0, 0, G_OPTION_ARG_NONE, &a->dist_opt, "distributed optimizer (ZeRO-1)", NULL},
        {"zero2", 0, 0, G_OPTION_ARG_NONE, &a->zero2,
         "ZeRO-2: the distributed optimizer with gradients sharded too", NULL},
        {"fsdp", 0, 0, G_OPTION_ARG_NONE, &a->fsdp,
         "fully sharded data parallelism (ZeRO-3, FSDP2): per-block gathers and reduce-scatters",
         NULL},
        {"decoder-first-pipeline-num-layers", 0, 0, G_OPTION_ARG_STRING, &a->first_layers,
         "layers of the first pipeline stage; the rest evenly (Megatron-Core)", "N"},
        {"decoder-last-pipeline-num-layers", 0, 0, G_OPTION_ARG_STRING, &a->last_layers,
         "layers of the last pipeline stage; the rest evenly (Megatron-Core)", "N"},
        {"pipeline-model-parallel-layout", 0, 0, G_OPTION_ARG_STRING, &a->pp_layout,
         "the layers of each virtual stage, as Megatron-Core writes it: E embedding, t layer, m "
         "multi-token prediction, L loss, | between stages, (...)*N repeats "
         "(\"Et|(tt|)*30mL\")",
         "LAYOUT"},
        {"expert-model-parallel-size", 0, 0, G_OPTION_ARG_STRING, &a->ep,
         "expert parallelism of a MoE model: experts over groups of N dp ranks (Megatron-Core)",
         "N"},
        {"ep", 0, 0, G_OPTION_ARG_STRING, &a->ep, "the same, short", "N"},
        {"expert-tensor-parallel-size", 0, 0, G_OPTION_ARG_STRING, &a->etp,
         "tensor parallelism of the experts: tp (default: split like the MLP) or 1 (whole, the tp "
         "ranks joining expert parallelism; Megatron-Core's MoE parallel folding)",
         "N"},
        {"etp", 0, 0, G_OPTION_ARG_STRING, &a->etp, "the same, short", "N"},
        {"context-parallel-size", 0, 0, G_OPTION_ARG_STRING, &a->cp,
         "context parallelism: the sequence over N ranks, K and V around their ring "
         "(Megatron-Core)",
         "N"},
        {"cp", 0, 0, G_OPTION_ARG_STRING, &a->cp, "the same, short", "N"},
        {"recompute-num-layers", 0, 0, G_OPTION_ARG_STRING, &a->rec_layers,
         "with --recompute full: only the first N layers of each model chunk (Megatron-Core's "
         "block method)",
         "N"},
        {"lora-rank", 0, 0, G_OPTION_ARG_STRING, &a->lora,
         "LoRA fine-tuning: rank-R adapters on QKV, proj, fc1, fc2; base weights frozen (NeMo)",
         "R"},
        {"packed-sample-len", 0, 0, G_OPTION_ARG_STRING, &a->packed,
         "packed sequences: samples of L tokens, attention inside each (THD format)", "L"},
        {"moe-expert-capacity-factor", 0, 0, G_OPTION_ARG_STRING, &a->capacity,
         "each expert's input padded to F x its balanced share (default: dropless)", "F"},
        {"fsdp-shard", 0, 0, G_OPTION_ARG_STRING, &a->fsdp_shard,
         "HSDP: shard over groups of N dp ranks, replicate across them (with --fsdp)", "N"},
        {"account-for-embedding-in-pipeline-split", 0, 0, G_OPTION_ARG_NONE, &a->split_embedding,
         "count the embedding as a layer when splitting layers over (virtual) stages "
         "(Megatron-Core)",
         NULL},
        {"account-for-loss-in-pipeline-split", 0, 0, G_OPTION_ARG_NONE, &a->split_loss,
         "count the output layer and loss as a layer likewise (Megatron-Core)", NULL},
        {"overlap-param-gather", 0, 0, G_OPTION_ARG_NONE, &a->overlap_param_gather,
         "all-gather updated parameters beside the next forward (Megatron-Core, needs "
         "--dist-opt)",
         NULL},
        {"moe-enable-deepep", 0, 0, G_OPTION_ARG_NONE, &a->deepep,
         "MoE token dispatch as DeepEP / HybridEP run it (Megatron-Core's flex dispatcher): once "
         "per node across nodes, then NVLink",
         NULL},
        {"tp-comm-overlap", 0, 0, G_OPTION_ARG_NONE, &a->tp_comm_overlap,
         "overlap the sequence-parallel collectives with the GEMMs (Megatron-Core, needs --sp)",
         NULL},
        {"no-async-tensor-model-parallel-allreduce", 0, 0, G_OPTION_ARG_NONE, &a->tp_sync,
         "the backward's tensor-parallel reductions in series with the GEMMs (Megatron-LM before "
         "September 2021), not beside the weight gradients",
         NULL},
        {"dtype", 0, 0, G_OPTION_ARG_STRING, &a->dtype, "bf16 (default), fp16 or fp8", "TYPE"},
        {"fp8-recipe", 0, 0, G_OPTION_ARG_STRING, &a->fp8_recipe,
         "with --dtype fp8, how Transformer Engine scales: delayed (default), current, mxfp8",
         "RECIPE"},
        {"cuda-graph-scope", 0, 0, G_OPTION_ARG_STRING, &a->graph,
         "what the host launches as CUDA graphs: none (default), moe_router (a MoE layer's "
         "router and dispatch preprocessing), full (each layer; MoE needs a capacity factor)",
         "SCOPE"},
        {"attention", 0, 0, G_OPTION_ARG_STRING, &a->attention,
         "flash (default) or unfused (s x s scores in HBM, Megatron before 2022)", "KIND"},
        {"grad-dtype", 0, 0, G_OPTION_ARG_STRING, &a->grad_dtype,
         "gradient reduction type: fp32 (default), bf16, fp16", "TYPE"},
        {"bucket-mb", 0, 0, G_OPTION_ARG_STRING, &a->bucket_mb,
         "gradient bucket, MiB (default: Megatron's rule)", "MB"},
        {"no-overlap", 0, 0, G_OPTION_ARG_NONE, &a->no_overlap,
         "reduce gradients after the backward pass, not during it", NULL},
        {"placement", 0, 0, G_OPTION_ARG_STRING, &a->placement,
         "rank order: tp-pp-dp (default) or tp-dp-pp", "ORDER"},
        {"trace-out", 0, 0, G_OPTION_ARG_FILENAME, &a->trace_out,
         "also write the generated trace (icsim JSON; replay it with `icsim replay`)", "FILE"},
        {"no-fold", 0, 0, G_OPTION_ARG_NONE, &a->no_fold,
         "simulate every rank, not one per symmetric set (docs/replay.md)", NULL},
        {"ignore-memory", 0, 0, G_OPTION_ARG_NONE, &a->ignore_memory,
         "run a layout whose memory per GPU exceeds the GPU's (docs/workload.md)", NULL},
        G_OPTION_ENTRY_NULL};
    GOptionEntry step[ICS_CLI_STEP_ENTRIES];
    ics_cli_step_entries(&a->step, step);
    const GOptionEntry *const entries[] = {base, step, NULL};
    if (!ics_cli_parse_help("train", "[SCENARIO.json]",
                            "Simulate one step of 3D-parallel training and report where the time "
                            "goes.",
                            entries, help, &argc, &argv))
        return ICS_EXIT_USAGE;
    if (argc > 2)
        return usage("expected at most one SCENARIO file, got \"%s\"", argv[2]), ICS_EXIT_USAGE;
    GError *gerr = NULL;
    /* the catalog where a model may be named: --model, a scenario, or a catalog asked for */
    if (a->models)
        j->cat = ics_model_catalog_load(a->models, &gerr);
    else if (a->model || argc == 2)
        j->cat = ics_model_catalog_load_default(&gerr);
    if (!gerr && argc == 2)
        ics_train_scenario_load(argv[1], j->cat, &j->s, &gerr);
    if (gerr) {
        fprintf(stderr, "%s\n", gerr->message);
        g_error_free(gerr);
        return ICS_EXIT_USAGE;
    }
    return settle(j) ? ICS_EXIT_OK : ICS_EXIT_USAGE;
}

/* A layout that cannot run: its peak stage needs more memory per GPU than the GPU has
 * (workload/memory.h). Exit 2 with the figures, as Megatron would fail with an out-of-memory
 * error, and what usually makes it fit. */
static void refuse_memory(const ics_memory *m, const ics_hw_gpu_type *g)
{
    fprintf(stderr,
            "icsim train: the layout does not fit: pipeline stage %d needs %.1f GB per GPU, the "
            "%s has %.1f GB (weights %.1f, gradients %.1f, optimizer %.1f, activations %.1f, "
            "NCCL buffers %.1f); shard more (--tp, --pp, --dist-opt), recompute (--recompute), "
            "lower --mbs, or run it anyway with --ignore-memory\n",
            m->stage, m->total / 1e9, g->product, (double)g->hbm_bytes / 1e9, m->weights / 1e9,
            m->grads / 1e9, m->optimizer / 1e9, m->activations / 1e9, m->nccl / 1e9);
}

static int run(ics_cli_train_job *j)
{
    ics_train_scenario *s = &j->s;
    ics_topo *t = NULL;
    ics_hw *hw = load_system(j, &t);
    if (!hw)
        return ICS_EXIT_USAGE;
    int rc = ICS_EXIT_USAGE;
    GError *err = NULL;
    ics_trace *tr = NULL;
    const ics_hw_gpu_type *g = ics_hw_node_of(hw)->gpu_type;
    s->layout.node_gpus = ics_hw_node_of(hw)->gpus; /* the node-aware MoE dispatch's nodes */
    ics_coll_tuning tu; /* NCCL_BUFFSIZE as the run sets it, for the buffers' memory */
    ics_coll_tuning_from_env(&tu, hw, NULL);
    s->layout.nccl_buffsize = tu.buffsize;
    if (!j->layout_checked && !check_layout(j))
        goto done;
    ics_memory mem;
    ics_memory_peak(&s->model, &s->layout, &mem);
    if (mem.total > (double)g->hbm_bytes && !j->a.ignore_memory) {
        refuse_memory(&mem, g);
        goto done;
    }
    tr = ics_workload_build(&s->model, &s->layout, g, &err);
    if (!tr) {
        fprintf(stderr, "icsim train: %s\n", err->message);
        rc = ics_error_exit_status(err);
        goto done;
    }
    if (j->a.trace_out && !ics_trace_write_json(tr, j->a.trace_out, &err)) {
        fprintf(stderr, "icsim train: --trace-out: %s\n", err->message);
        rc = ics_error_exit_status(err); /* a file that cannot be written: 1 */
        goto done;
    }
    ics_step_flops fl;
    ics_workload_flops(&s->model, &s->layout, &fl);
    /* MFU over the training type's peak; an fp8 run keeps attention in bf16, so on a GPU whose
     * fp8 peak were below its bf16 one the larger is the bound (report_step.c checks it) */
    double peak = g->tflops[s->layout.dtype];
    if (s->layout.dtype == ICS_DTYPE_FP8 && peak > 0)
        peak = MAX(peak, g->tflops[ICS_DTYPE_BF16]);
    ics_step_info info = {.tokens = fl.tokens,
                          .model_flops = fl.model_flops,
                          .hw_flops = fl.hardware_flops,
                          .peak_tflops = peak,
                          .memory = &mem,
                          .hbm_bytes = (double)g->hbm_bytes};
    rc = ics_cli_step_run("train", &j->a.step, tr, t, NULL, &info);
done:
    g_clear_error(&err);
    ics_trace_free(tr);
    ics_topo_free(t);
    ics_hw_free(hw);
    return rc;
}

int ics_cli_train(int argc, char **argv)
{
    ics_cli_train_job *j = NULL;
    int rc = ics_cli_train_prepare(argc, argv, true, &j);
    if (rc == ICS_EXIT_OK)
        rc = run(j);
    ics_cli_train_job_free(j);
    return rc;
}
