/* `icsim infer`: a static batch served by one instance (tensor-parallel stages, optionally a
 * pipeline of them, experts split or spread over each stage): time to first token (the
 * prefill), time per output token (a decode step), output tokens per second, and memory per GPU
 * (weights, KV cache). The compute of each pass comes from the workload module's inference plan
 * (workload/infer.h); its two all-reduces per layer, and the activations a stage sends the next,
 * are simulated on the system's links as `icsim collective` runs them (NCCL's tuner and
 * protocols: at decode's small sizes, LL and latency). docs/cli.md, docs/workload.md
 * ("Inference"). */
#include "cli/cli.h"
#include "cli/cli_common.h"
#include "core/core.h"
#include "workload/workload.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

typedef struct {
    char *system, *model, *models, *tp, *batch, *input, *output, *dtype, *engine, *pp, *ep;
    gboolean json, ignore_memory;
} infer_args;

static void args_free(infer_args *a)
{
    char *strs[] = {a->system, a->model, a->models, a->tp, a->batch, a->input,
                    a->output, a->dtype, a->engine, a->pp, a->ep};
    for (size_t i = 0; i < G_N_ELEMENTS(strs); i++)
        g_free(strs[i]);
}

/* The numbers and words of the command line over the scenario's (or the defaults), checked
 * before anything loads. */
static bool read_layout(const infer_args *a, const ics_infer_scenario *s, ics_infer_layout *l,
                        GError **err)
{
    *l = (ics_infer_layout){.tp = 1,
                            .pp = 1,
                            .ep = 1,
                            .batch = 1,
                            .input = 128,
                            .output = 128,
                            .dtype = ICS_DTYPE_BF16};
    int *dst[] = {&l->tp, &l->batch, &l->input, &l->output, &l->pp, &l->ep};
    const int *src[] = {&s->layout.tp,     &s->layout.batch, &s->layout.input,
                        &s->layout.output, &s->layout.pp,    &s->layout.ep};
    for (int i = 0; i < 6; i++)
        if (s->given[i])
            *dst[i] = *src[i];
    if (s->given[6])
        l->dtype = s->layout.dtype;
    if (!ics_cli_int_in("--tp", a->tp, 1, 1 << 16, &l->tp, err) ||
        !ics_cli_int_in("--pp", a->pp, 1, 1 << 16, &l->pp, err) ||
        !ics_cli_int_in("--ep", a->ep, 1, 1 << 16, &l->ep, err) ||
        !ics_cli_int_in("--batch", a->batch, 1, 1 << 20, &l->batch, err) ||
        !ics_cli_int_in("--input", a->input, 1, 1 << 24, &l->input, err) ||
        !ics_cli_int_in("--output", a->output, 1, 1 << 24, &l->output, err))
        return false;
    if (a->dtype) {
        static const char *const names[] = {"bf16", "fp16", "fp8"};
        static const ics_dtype types[] = {ICS_DTYPE_BF16, ICS_DTYPE_FP16, ICS_DTYPE_FP8};
        size_t i = 0;
        while (i < G_N_ELEMENTS(names) && strcmp(names[i], a->dtype) != 0)
            i++;
        if (i == G_N_ELEMENTS(names)) {
            char *esc = g_strescape(a->dtype, NULL);
            g_set_error(err, ICS_ERROR, ICS_ERROR_INPUT,
                        "--dtype: expected bf16, fp16 or fp8, got \"%s\"", esc);
            g_free(esc);
            return false;
        }
        l->dtype = types[i];
    }
    if (a->engine && strcmp(a->engine, "analytic") != 0 && strcmp(a->engine, "packet") != 0) {
        char *esc = g_strescape(a->engine, NULL);
        g_set_error(err, ICS_ERROR, ICS_ERROR_INPUT,
                    "--engine: expected analytic or packet, got \"%s\"", esc);
        g_free(esc);
        return false;
    }
    if (!a->system || !a->model) {
        g_set_error(err, ICS_ERROR, ICS_ERROR_INPUT,
                    "%s: expected one (or a scenario that names it), got none",
                    a->system ? "--model" : "-s/--system");
        return false;
    }
    return true;
}

/* The scenario's system, model and engine where the command line gives none. */
static void take_scenario(infer_args *a, ics_infer_scenario *s)
{
    char **mine[] = {&a->system, &a->model, &a->engine};
    char **theirs[] = {&s->system, &s->model, &s->engine};
    for (size_t i = 0; i < G_N_ELEMENTS(mine); i++)
        if (!*mine[i]) {
            *mine[i] = *theirs[i];
            *theirs[i] = NULL;
        }
}

/* One call of `op` with `bytes` on comm (NULL: one GPU, nothing to do) as NCCL's variables
 * tune it, seconds; -1 if no algorithm runs it (the caller says so: never a free all-reduce). */
static double call_s(ics_comm *comm, const ics_coll_tuning *tu, ics_coll_op op, uint64_t bytes)
{
    if (!comm)
        return 0;
    ics_coll_req req = {.op = op, .size_bytes = bytes, .dtype_bytes = 2};
    ics_coll_result r;
    return ics_comm_run(comm, &req, tu, &r) ? ics_time_to_s(r.time_ps) : -1;
}

typedef struct {
    double ttft_s, tpot_s, tokens_per_s;
    double prefill_comm_s, decode_comm_s; /* all-reduces */
    double prefill_send_s, decode_send_s; /* between pipeline stages */
} figures;

/* A pass through every stage: the layers' compute, two all-reduces a layer, the head, and a send
 * of the activations from each stage to the next (a static batch: one stage works at a time). */
static bool pass_s(const ics_infer_plan *p, const ics_infer_pass *x, int pp, ics_comm *tp,
                   ics_comm *link, const ics_coll_tuning *tu, double *total, double *comm,
                   double *send)
{
    double ar = call_s(tp, tu, ICS_COLL_ALL_REDUCE, x->allreduce_bytes);
    double hop = call_s(link, tu, ICS_COLL_SENDRECV, x->allreduce_bytes);
    if (ar < 0 || hop < 0)
        return false;
    *comm = (p->dense_layers + p->moe_layers) * 2 * ar;
    *send = (pp - 1) * hop;
    *total = p->dense_layers * ics_time_to_s(x->layer_ps) +
             p->moe_layers * ics_time_to_s(x->moe_layer_ps) + *comm + *send +
             ics_time_to_s(x->head_ps);
    return true;
}

static bool figures_of(const ics_infer_layout *l, const ics_infer_plan *p, ics_comm *tp,
                       ics_comm *link, const ics_coll_tuning *tu, figures *out)
{
    figures f = {0};
    if (!pass_s(p, &p->prefill, l->pp, tp, link, tu, &f.ttft_s, &f.prefill_comm_s,
                &f.prefill_send_s) ||
        !pass_s(p, &p->decode, l->pp, tp, link, tu, &f.tpot_s, &f.decode_comm_s, &f.decode_send_s))
        return false;
    /* the prefill gives the first token; the rest take a decode step each */
    double total = f.ttft_s + (l->output - 1) * f.tpot_s;
    f.tokens_per_s = (double)l->batch * l->output / total;
    *out = f;
    return true;
}

static void report_text(const ics_model *m, const ics_infer_layout *l, const ics_infer_plan *p,
                        const figures *f, double hbm, GString *out)
{
    int gpus = l->tp * l->pp;
    char shape[64];
    int k = snprintf(shape, sizeof shape, "TP %d", l->tp);
    if (l->pp > 1)
        k += snprintf(shape + k, sizeof shape - (size_t)k, " x PP %d", l->pp);
    if (l->ep > 1)
        snprintf(shape + k, sizeof shape - (size_t)k, ", EP %d", l->ep);
    g_string_append_printf(out, "%s on %d GPU%s (%s), batch %d, %d prompt + %d output tokens, %s\n",
                           m->name, gpus, gpus > 1 ? "s" : "", shape, l->batch, l->input, l->output,
                           ics_dtype_name(l->dtype));
    const char *labels[] = {"time to first token         ", "time per output token        "};
    const double v[][3] = {{f->ttft_s, f->prefill_comm_s, f->prefill_send_s},
                           {f->tpot_s, f->decode_comm_s, f->decode_send_s}};
    for (int i = 0; i < 2; i++) {
        g_string_append_printf(out, "%s %12.3f ms   (all-reduces %.3f ms", labels[i], v[i][0] * 1e3,
                               v[i][1] * 1e3);
        if (l->pp > 1)
            g_string_append_printf(out, ", stage sends %.3f ms", v[i][2] * 1e3);
        g_string_append(out, ")\n");
    }
    g_string_append_printf(out, "output tokens/s              %12.1f   (%.1f per GPU)\n",
                           f->tokens_per_s, f->tokens_per_s / gpus);
    g_string_append_printf(
        out, "memory per GPU               %12.1f GB of %.1f: weights %.1f, KV cache %.1f\n",
        (p->weight_bytes + p->kv_bytes) / 1e9, hbm / 1e9, p->weight_bytes / 1e9, p->kv_bytes / 1e9);
}

static void report_json(const ics_model *m, const ics_infer_layout *l, const ics_infer_plan *p,
                        const figures *f, double hbm, GString *out)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "model", m->name);
    cJSON_AddNumberToObject(o, "tp", l->tp);
    cJSON_AddNumberToObject(o, "pp", l->pp);
    cJSON_AddNumberToObject(o, "ep", l->ep);
    cJSON_AddNumberToObject(o, "batch", l->batch);
    cJSON_AddNumberToObject(o, "input", l->input);
    cJSON_AddNumberToObject(o, "output", l->output);
    cJSON_AddStringToObject(o, "dtype", ics_dtype_name(l->dtype));
    cJSON_AddNumberToObject(o, "ttft_ms", f->ttft_s * 1e3);
    cJSON_AddNumberToObject(o, "tpot_ms", f->tpot_s * 1e3);
    cJSON_AddNumberToObject(o, "output_tokens_per_s", f->tokens_per_s);
    cJSON_AddNumberToObject(o, "prefill_allreduce_ms", f->prefill_comm_s * 1e3);
    cJSON_AddNumberToObject(o, "decode_allreduce_ms", f->decode_comm_s * 1e3);
    cJSON_AddNumberToObject(o, "prefill_send_ms", f->prefill_send_s * 1e3);
    cJSON_AddNumberToObject(o, "decode_send_ms", f->decode_send_s * 1e3);
    cJSON_AddNumberToObject(o, "weights_gb", p->weight_bytes / 1e9);
    cJSON_AddNumberToObject(o, "kv_cache_gb", p->kv_bytes / 1e9);
    cJSON_AddNumberToObject(o, "gpu_gb", hbm / 1e9);
    char *s = cJSON_PrintUnformatted(o);
    g_string_append_printf(out, "%s\n", s);
    cJSON_free(s);
    cJSON_Delete(o);
}

static int run(const infer_args *a, const ics_infer_layout *l)
{
    GError *err = NULL;
    ics_model_catalog *cat =
        a->models ? ics_model_catalog_load(a->models, &err) : ics_model_catalog_load_default(&err);
    if (!cat)
        return ics_cli_fail("infer", err);
    int rc = ICS_EXIT_USAGE;
    const ics_model *m = ics_model_find(cat, a->model);
    ics_cli_setup su = {0};
    if (!m) {
        char *esc = g_strescape(a->model, NULL);
        ics_cli_fail("infer",
                     g_error_new(ICS_ERROR, ICS_ERROR_INPUT,
                                 "--model: expected a model of the catalog, got \"%s\"", esc));
        g_free(esc);
        goto done;
    }
    if (!ics_cli_setup_open(&su, a->system, 0))
        goto done;
    const ics_hw_gpu_type *g = ics_hw_node_of(su.hw)->gpu_type;
    int gpn = ics_topo_gpus_per_node(su.t);
    if ((int64_t)l->tp * l->pp > gpn * ics_topo_nodes(su.t)) {
        ics_cli_fail("infer",
                     g_error_new(ICS_ERROR, ICS_ERROR_INPUT,
                                 "--tp x --pp: expected at most the system's %d GPUs, got %d x %d",
                                 gpn * ics_topo_nodes(su.t), l->tp, l->pp));
        goto done;
    }
    if (!ics_infer_check(m, l, g, &err)) {
        rc = ics_cli_fail("infer", err);
        goto done;
    }
    ics_infer_plan p;
    ics_infer_plan_make(m, l, g, &p);
    double hbm = (double)g->hbm_bytes;
    if (p.weight_bytes + p.kv_bytes > hbm && !a->ignore_memory) {
        fprintf(stderr,
                "icsim infer: the batch does not fit: %.1f GB per GPU (weights %.1f, KV cache "
                "%.1f), the %s has %.1f GB; raise --tp, lower --batch or the lengths, use "
                "--dtype fp8, or run it anyway with --ignore-memory\n",
                (p.weight_bytes + p.kv_bytes) / 1e9, p.weight_bytes / 1e9, p.kv_bytes / 1e9,
                g->product, hbm / 1e9);
        goto done;
    }
    /* the word was checked with the others (read_layout) */
    const ics_net_ops *backend = ics_net_backend(a->engine ? a->engine : "analytic");
    /* the instance's GPUs in node order, stage after stage: stage 0's tp GPUs stand for every
     * stage's all-reduces, its first GPU and stage 1's for every send between stages */
    ics_cli_setup_comm(&su, gpn, l->tp * l->pp, backend, NULL);
    ics_comm_free(su.comm);
    su.comm = l->tp > 1 ? ics_comm_new(su.t, backend, su.gpus, l->tp, NULL) : NULL;
    ics_comm *link = l->pp > 1
                         ? ics_comm_new(su.t, backend, (int[]){su.gpus[0], su.gpus[l->tp]}, 2, NULL)
                         : NULL;
    ics_coll_tuning tu; /* NCCL's variables, over the system's own settings (its nccl_conf) */
    GError *warning = NULL;
    ics_coll_tuning_from_env(&tu, su.hw, &warning);
    if (warning)
        fprintf(stderr, "icsim infer: warning: %s\n", warning->message);
    g_clear_error(&warning);
    figures f;
    bool ok = figures_of(l, &p, su.comm, link, &tu, &f);
    ics_comm_free(link);
    if (!ok) {
        fprintf(stderr, "icsim infer: no algorithm runs the all-reduces on these GPUs\n");
        rc = ICS_EXIT_FAIL;
        goto done;
    }
    GString *out = g_string_new(NULL);
    if (a->json)
        report_json(m, l, &p, &f, hbm, out);
    else
        report_text(m, l, &p, &f, hbm, out);
    ics_cli_emit(out);
    rc = ICS_EXIT_OK;
done:
    ics_cli_setup_close(&su);
    ics_model_catalog_free(cat);
    return rc;
}

int ics_cli_infer(int argc, char **argv)
{
    return ics_cli_infer_with(argc, argv, true);
}

int ics_cli_infer_with(int argc, char **argv, bool help)
{
    infer_args a = {0};
    const GOptionEntry entries[] = {
        {"system", 's', 0, G_OPTION_ARG_FILENAME, &a.system, "hardware model (node or cluster)",
         "FILE"},
        {"model", 0, 0, G_OPTION_ARG_STRING, &a.model, "a model of the catalog", "NAME"},
        {"models", 0, 0, G_OPTION_ARG_FILENAME, &a.models,
         "model catalog (default: models/models.json)", "FILE"},
        {"tp", 0, 0, G_OPTION_ARG_STRING, &a.tp, "tensor-parallel GPUs of a stage (default 1)",
         "T"},
        {"pp", 0, 0, G_OPTION_ARG_STRING, &a.pp, "pipeline stages (default 1)", "P"},
        {"ep", 0, 0, G_OPTION_ARG_STRING, &a.ep,
         "experts: 1 (default) splits each over the stage's GPUs, the stage's TP size spreads "
         "whole experts over them",
         "E"},
        {"batch", 0, 0, G_OPTION_ARG_STRING, &a.batch, "requests decoded together (default 1)",
         "B"},
        {"input", 0, 0, G_OPTION_ARG_STRING, &a.input, "prompt tokens (default 128)", "N"},
        {"output", 0, 0, G_OPTION_ARG_STRING, &a.output, "generated tokens (default 128)", "N"},
        {"dtype", 0, 0, G_OPTION_ARG_STRING, &a.dtype,
         "weights and GEMMs: bf16 (default), fp16 or fp8", "TYPE"},
        {"engine", 0, 0, G_OPTION_ARG_STRING, &a.engine,
         "network engine for the all-reduces: analytic (default) or packet", "ENGINE"},
        {"json", 0, 0, G_OPTION_ARG_NONE, &a.json, "the figures as one JSON object", NULL},
        {"ignore-memory", 0, 0, G_OPTION_ARG_NONE, &a.ignore_memory,
         "run a batch whose weights and KV cache exceed the GPU's memory", NULL},
        G_OPTION_ENTRY_NULL};
    int rc = ICS_EXIT_USAGE;
    ics_infer_scenario s = {0};
    GError *err = NULL;
    const GOptionEntry *groups[] = {entries, NULL};
    if (!ics_cli_parse_help("infer", "[SCENARIO.json]",
                            "Prefill and decode of a static batch on one TP (x PP) instance.",
                            groups, help, &argc, &argv))
        goto done;
    if (argc > 2) {
        char *esc = g_strescape(argv[2], NULL);
        rc = ics_cli_fail("infer",
                          g_error_new(ICS_ERROR, ICS_ERROR_INPUT,
                                      "expected at most one scenario, got \"%s\" too", esc));
        g_free(esc);
        goto done;
    }
    if (argc == 2) {
        if (!ics_infer_scenario_load(argv[1], &s, &err)) {
            rc = ics_cli_fail("infer", err);
            goto done;
        }
        take_scenario(&a, &s);
    }
    ics_infer_layout l;
    if (!read_layout(&a, &s, &l, &err)) {
        rc = ics_cli_fail("infer", err);
        goto done;
    }
    rc = run(&a, &l);
done:
    ics_infer_scenario_clear(&s);
    args_free(&a);
    return rc;
}
