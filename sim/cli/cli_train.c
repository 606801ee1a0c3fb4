/* `icsim train [SCENARIO.json] -s SYSTEM --model NAME --tp T --pp P ...`: one training step of
 * a model under a 3D-parallel layout, generated (workload.h), replayed (replay.h) and reported
 * with Megatron's throughput figures. Options override the scenario's values. */
#include "cli/cli.h"
#include "cli/cli_common.h"
#include "cli/cli_step.h"
#include "trace/trace.h"
#include "workload/workload.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* Integers start at -1: "not given". */
typedef struct {
    char *system, *model, *models, *recompute, *dtype, *placement, *attention, *grad_dtype;
    char *trace_out;
    int nodes, layers, hidden, heads, ffn, vocab, seq;
    int tp, pp, vp, dp, mbs, gbs;
    double bucket_mb;
    gboolean sp, dist_opt, no_overlap, no_fold;
    ics_cli_step_args step;
} train_args;

static bool usage(const char *fmt, const char *what)
{
    fprintf(stderr, "icsim train: ");
    fprintf(stderr, fmt, what);
    fprintf(stderr, "\nRun `icsim train --help` for its options.\n");
    return false;
}

static void set_int(int *dst, int v)
{
    if (v >= 0)
        *dst = v;
}

/* The model: --model NAME, or --layers/--hidden/--heads/... (all of them), over the scenario's. */
static bool pick_model(const train_args *a, const ics_model_catalog *cat, ics_train_scenario *s)
{
    bool shape = a->layers >= 0 || a->hidden >= 0 || a->heads >= 0 || a->vocab >= 0 ||
                 a->seq >= 0 || a->ffn >= 0;
    if (a->model && shape)
        return usage("expected --model NAME or the model's shape (--layers ...), not both%s", "");
    if (a->model) {
        const ics_model *m = ics_model_find(cat, a->model);
        if (!m)
            return usage("--model: expected a model of the catalog (models/models.json: "
                         "gpt3-175b, llama3-70b, ...), got \"%s\"",
                         a->model);
        s->model = *m;
        s->have_model = true;
    } else if (shape) {
        if (a->layers < 1 || a->hidden < 1 || a->heads < 1 || a->vocab < 1 || a->seq < 1)
            return usage("a model by shape needs --layers, --hidden, --heads, --vocab and --seq "
                         "(all >= 1)%s",
                         "");
        s->model = ics_model_make("custom", a->layers, a->hidden, a->heads,
                                  a->ffn > 0 ? a->ffn : 4 * a->hidden, a->vocab, a->seq);
        s->have_model = true;
    }
    if (!s->have_model)
        return usage("expected a model: --model NAME, --layers ... or a scenario file%s", "");
    GError *err = NULL;
    if (!ics_model_check(&s->model, &err)) {
        fprintf(stderr, "icsim train: model: %s\n", err->message);
        g_error_free(err);
        return false;
    }
    return true;
}

static bool pick_layout(const train_args *a, ics_train_scenario *s)
{
    ics_layout *l = &s->layout;
    set_int(&l->tp, a->tp);
    set_int(&l->pp, a->pp);
    set_int(&l->vp, a->vp);
    set_int(&l->mbs, a->mbs);
    set_int(&l->gbs, a->gbs);
    if (a->dp >= 0) {
        l->dp = a->dp;
        s->layout_dp = true;
    }
    l->sp |= a->sp;
    l->dist_opt |= a->dist_opt;
    if (a->no_overlap)
        l->overlap_grad_reduce = false;
    if (a->bucket_mb > 0)
        l->bucket_bytes = (uint64_t)(a->bucket_mb * 1024 * 1024);
    if (a->recompute) {
        int v = ics_recompute_parse(a->recompute);
        if (v < 0)
            return usage("--recompute: expected none, selective or full, got \"%s\"", a->recompute);
        l->recompute = (ics_recompute)v;
    }
    if (a->placement) {
        int v = ics_placement_parse(a->placement);
        if (v < 0)
            return usage("--placement: expected tp-pp-dp or tp-dp-pp, got \"%s\"", a->placement);
        l->placement = (ics_placement)v;
    }
    if (a->attention) {
        int v = ics_attention_parse(a->attention);
        if (v < 0)
            return usage("--attention: expected flash or unfused, got \"%s\"", a->attention);
        l->attention = (ics_attention)v;
    }
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

/* Loads the system with as many nodes as the job needs (clusters), and checks it has the GPUs.
 * dp not given: every GPU of the system. */
static ics_hw *load_system(const train_args *a, ics_train_scenario *s, ics_topo **t)
{
    int nodes = a->nodes > 0 ? a->nodes : s->nodes;
    ics_hw *hw = ics_cli_load_hw(s->system, nodes);
    if (!hw)
        return NULL;
    *t = ics_topo_new(hw);
    int per = ics_topo_gpus_per_node(*t), have = per * ics_topo_nodes(*t);
    ics_layout *l = &s->layout;
    if (!s->layout_dp)
        l->dp = MAX(1, have / MAX(1, l->tp * l->pp));
    int need = ics_layout_world(l);
    bool cluster = ics_topo_nodes(*t) > 1;
    if (cluster && nodes == 0 && need != have) { /* fit the cluster to the job */
        ics_topo_free(*t);
        ics_hw_free(hw);
        hw = ics_cli_load_hw(s->system, (need + per - 1) / per);
        if (!hw)
            return NULL;
        *t = ics_topo_new(hw);
        have = per * ics_topo_nodes(*t);
    }
    if (need > have) {
        fprintf(stderr,
                "icsim train: the layout needs %d GPUs (tp %d x pp %d x dp %d), %s has %d\n", need,
                l->tp, l->pp, l->dp, s->system, have);
        ics_topo_free(*t);
        *t = NULL;
        ics_hw_free(hw);
        return NULL;
    }
    return hw;
}

static int run(train_args *a, ics_train_scenario *s, const ics_model_catalog *cat)
{
    if (a->system) {
        g_free(s->system);
        s->system = g_strdup(a->system);
    }
    if (!s->system)
        return usage("expected -s FILE (or a scenario naming its system)%s", ""), ICS_EXIT_USAGE;
    if (a->nodes < -1 || a->nodes == 0)
        return usage("--nodes: expected N >= 1%s", ""), ICS_EXIT_USAGE;
    if (!pick_model(a, cat, s) || !pick_layout(a, s))
        return ICS_EXIT_USAGE;
    if (a->no_fold)
        s->layout.fold = false;
    if (!a->step.engine && s->engine)
        a->step.engine = g_strdup(s->engine);
    if (!ics_cli_step_check("train", &a->step))
        return ICS_EXIT_USAGE;
    ics_topo *t = NULL;
    ics_hw *hw = load_system(a, s, &t);
    if (!hw)
        return ICS_EXIT_USAGE;
    int rc = ICS_EXIT_USAGE;
    GError *err = NULL;
    ics_trace *tr = NULL;
    const ics_hw_gpu_type *g = ics_hw_node_of(hw)->gpu_type;
    if (!ics_layout_check(&s->layout, &s->model, &err)) {
        fprintf(stderr, "icsim train: layout: %s\n", err->message);
        goto done;
    }
    tr = ics_workload_build(&s->model, &s->layout, g, &err);
    if (!tr) {
        fprintf(stderr, "icsim train: %s\n", err->message);
        goto done;
    }
    if (a->trace_out && !ics_trace_write_json(tr, a->trace_out, &err)) {
        fprintf(stderr, "icsim train: --trace-out: %s\n", err->message);
        rc = ICS_EXIT_FAIL;
        goto done;
    }
    ics_step_flops fl;
    ics_workload_flops(&s->model, &s->layout, &fl);
    ics_step_info info = {.tokens = fl.tokens,
                          .model_flops = fl.model_flops,
                          .hw_flops = fl.hardware_flops,
                          .peak_tflops = g->tflops[s->layout.dtype]};
    rc = ics_cli_step_run("train", &a->step, tr, t, NULL, &info);
done:
    g_clear_error(&err);
    ics_trace_free(tr);
    ics_topo_free(t);
    ics_hw_free(hw);
    return rc;
}

int ics_cli_train(int argc, char **argv)
{
    train_args a = {.nodes = -1,
                    .layers = -1,
                    .hidden = -1,
                    .heads = -1,
                    .ffn = -1,
                    .vocab = -1,
                    .seq = -1,
                    .tp = -1,
                    .pp = -1,
                    .vp = -1,
                    .dp = -1,
                    .mbs = -1,
                    .gbs = -1};
    const GOptionEntry base[] = {
        {"system", 's', 0, G_OPTION_ARG_FILENAME, &a.system, "hardware model (node or cluster)",
         "FILE"},
        {"nodes", 0, 0, G_OPTION_ARG_INT, &a.nodes,
         "node count of a cluster (default: what the layout needs)", "N"},
        {"model", 0, 0, G_OPTION_ARG_STRING, &a.model, "a model of the catalog", "NAME"},
        {"models", 0, 0, G_OPTION_ARG_FILENAME, &a.models,
         "model catalog (default: models/models.json)", "FILE"},
        {"layers", 0, 0, G_OPTION_ARG_INT, &a.layers, "model by shape: layers", "L"},
        {"hidden", 0, 0, G_OPTION_ARG_INT, &a.hidden, "hidden size", "H"},
        {"heads", 0, 0, G_OPTION_ARG_INT, &a.heads, "attention heads", "A"},
        {"ffn", 0, 0, G_OPTION_ARG_INT, &a.ffn, "MLP width (default 4H)", "F"},
        {"vocab", 0, 0, G_OPTION_ARG_INT, &a.vocab, "vocabulary", "V"},
        {"seq", 0, 0, G_OPTION_ARG_INT, &a.seq, "sequence length", "S"},
        {"tp", 0, 0, G_OPTION_ARG_INT, &a.tp, "tensor-parallel size", "T"},
        {"pp", 0, 0, G_OPTION_ARG_INT, &a.pp, "pipeline stages", "P"},
        {"vp", 0, 0, G_OPTION_ARG_INT, &a.vp, "virtual stages per rank (interleaved 1F1B)", "V"},
        {"dp", 0, 0, G_OPTION_ARG_INT, &a.dp,
         "data-parallel replicas (default: every GPU of the system)", "D"},
        {"mbs", 0, 0, G_OPTION_ARG_INT, &a.mbs, "micro-batch size", "M"},
        {"gbs", 0, 0, G_OPTION_ARG_INT, &a.gbs, "global batch size", "B"},
        {"recompute", 0, 0, G_OPTION_ARG_STRING, &a.recompute,
         "activation recomputation: none (default), selective, full", "MODE"},
        {"sp", 0, 0, G_OPTION_ARG_NONE, &a.sp, "sequence parallelism", NULL},
        {"dist-opt", 0, 0, G_OPTION_ARG_NONE, &a.dist_opt, "distributed optimizer", NULL},
        {"dtype", 0, 0, G_OPTION_ARG_STRING, &a.dtype, "bf16 (default), fp16 or fp8", "TYPE"},
        {"attention", 0, 0, G_OPTION_ARG_STRING, &a.attention,
         "flash (default) or unfused (s x s scores in HBM, Megatron before 2022)", "KIND"},
        {"grad-dtype", 0, 0, G_OPTION_ARG_STRING, &a.grad_dtype,
         "gradient reduction type: fp32 (default), bf16, fp16", "TYPE"},
        {"bucket-mb", 0, 0, G_OPTION_ARG_DOUBLE, &a.bucket_mb,
         "gradient bucket, MiB (default: Megatron's rule)", "MB"},
        {"no-overlap", 0, 0, G_OPTION_ARG_NONE, &a.no_overlap,
         "reduce gradients after the backward pass, not during it", NULL},
        {"placement", 0, 0, G_OPTION_ARG_STRING, &a.placement,
         "rank order: tp-pp-dp (default) or tp-dp-pp", "ORDER"},
        {"trace-out", 0, 0, G_OPTION_ARG_FILENAME, &a.trace_out,
         "also write the generated trace (icsim JSON; replay it with `icsim replay`)", "FILE"},
        {"no-fold", 0, 0, G_OPTION_ARG_NONE, &a.no_fold,
         "simulate every rank, not one per symmetric set (docs/replay.md)", NULL},
        G_OPTION_ENTRY_NULL};
    GOptionEntry step[ICS_CLI_STEP_ENTRIES];
    ics_cli_step_entries(&a.step, step);
    const GOptionEntry *const entries[] = {base, step, NULL};
    int rc = ICS_EXIT_USAGE;
    ics_model_catalog *cat = NULL;
    ics_train_scenario s;
    ics_train_scenario_init(&s);
    if (!ics_cli_parse_groups("train", "[SCENARIO.json]",
                              "Simulate one step of 3D-parallel training and report where the time "
                              "goes.",
                              entries, &argc, &argv))
        goto done;
    if (argc > 2) {
        usage("expected at most one SCENARIO file, got \"%s\"", argv[2]);
        goto done;
    }
    GError *gerr = NULL;
    cat =
        a.models ? ics_model_catalog_load(a.models, &gerr) : ics_model_catalog_load_default(&gerr);
    if (cat && argc == 2)
        ics_train_scenario_load(argv[1], cat, &s, &gerr);
    if (gerr) {
        fprintf(stderr, "%s\n", gerr->message);
        g_error_free(gerr);
        goto done;
    }
    rc = run(&a, &s, cat);
done:
    ics_model_catalog_free(cat);
    ics_train_scenario_clear(&s);
    ics_cli_step_args_clear(&a.step);
    g_free(a.system);
    g_free(a.model);
    g_free(a.models);
    g_free(a.recompute);
    g_free(a.dtype);
    g_free(a.placement);
    g_free(a.attention);
    g_free(a.grad_dtype);
    g_free(a.trace_out);
    return rc;
}
