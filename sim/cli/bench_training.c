/* `icsim bench training`: every row of the published training tables in
 * validate/data/training/ that our hardware models describe, generated, replayed and compared:
 * predicted against published TFLOP/s per GPU, per row and as a median. Nothing here is fitted
 * to the tables: the compute model's efficiencies and the network's parameters come from specs
 * and kernel benchmarks (docs/workload.md); the rows are predictions. */
#include "cli/cli.h"
#include "cli/cli_common.h"
#include "replay/replay.h"
#include "workload/workload.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "cli/bench_training_internal.h"
#define ICS_TRAINING_DATA ICS_HWMODELS_DIR "/../validate/data/training/megatron_sc21_table1.json"

/* The SC'21 table's rows, as Megatron-LM's run_table_1.sh ran them (the JSON's "common" and
 * per-row fields): Selene's DGX A100 80GB nodes on HDR InfiniBand, full recomputation, torch
 * DDP (gradient reduction overlapping the backward pass) up to 18B and Megatron's local DDP
 * (reduction after the backward pass) from 39B, fp16 with fp32 gradient reduction, attention
 * unfused. */
typedef struct {
    const char *name;
    int gpus, tp, pp, vp, gbs, mbs, layers;
    double params_b;
    double published;
} row;

static bool read_rows(const char *path, GArray *rows, GError **error)
{
    char *text = NULL;
    if (!g_file_get_contents(path, &text, NULL, NULL)) {
        g_set_error(error, ICS_ERROR, ICS_ERROR_IO, "%s: cannot read", path);
        return false;
    }
    cJSON *doc = cJSON_Parse(text);
    g_free(text);
    cJSON *arr = cJSON_GetObjectItem(doc, "rows"), *it;
    if (!cJSON_IsArray(arr)) {
        g_set_error(error, ICS_ERROR, ICS_ERROR_INPUT, "%s: expected a \"rows\" array", path);
        cJSON_Delete(doc);
        return false;
    }
    cJSON_ArrayForEach(it, arr)
    {
        row r = {0};
        r.name = g_intern_string(cJSON_GetStringValue(cJSON_GetObjectItem(it, "model")));
        r.gpus = cJSON_GetObjectItem(it, "gpus")->valueint;
        r.tp = cJSON_GetObjectItem(it, "tp")->valueint;
        r.pp = cJSON_GetObjectItem(it, "pp")->valueint;
        r.gbs = cJSON_GetObjectItem(it, "global_batch")->valueint;
        r.mbs = cJSON_GetObjectItem(it, "micro_batch")->valueint;
        r.layers = cJSON_GetObjectItem(it, "layers")->valueint;
        r.published = cJSON_GetObjectItem(it, "tflops_per_gpu")->valuedouble;
        r.params_b = cJSON_GetObjectItem(it, "params_billion")->valuedouble;
        cJSON *lpv = cJSON_GetObjectItem(it, "layers_per_virtual_stage");
        r.vp = cJSON_IsNumber(lpv) ? r.layers / r.pp / lpv->valueint : 1;
        g_array_append_val(rows, r);
    }
    cJSON_Delete(doc);
    return true;
}

/* Predicted TFLOP/s per GPU of one row (Megatron's count: with recomputation), with the step,
 * its events and where the critical rank's step went; NAN on error. */
static double predict(const row *r, const ics_model_catalog *cat, double *step_s, uint64_t *ev,
                      double shares[ICS_REPORT_STEP_NPARTS])
{
    char *name = g_strdup_printf("gpt-%s", r->name);
    char *lower = g_ascii_strdown(name, -1);
    const ics_model *m = ics_model_find(cat, lower);
    g_free(name);
    g_free(lower);
    if (!m)
        return NAN;
    ics_layout l = ics_layout_defaults();
    l.tp = r->tp;
    l.pp = r->pp;
    l.vp = r->vp;
    l.dp = r->gpus / (r->tp * r->pp);
    l.mbs = r->mbs;
    l.gbs = r->gbs;
    l.recompute = ICS_RECOMPUTE_FULL;
    l.dtype = ICS_DTYPE_FP16;
    /* April 2021: Megatron-LM's attention wrote the s x s scores to HBM (FlashAttention came
     * in 2022) */
    l.attention = ICS_ATTN_UNFUSED;
    /* April 2021: the backward's tensor-parallel all-reduces in series with the GEMMs
     * (Megatron-LM's asynchronous all-reduce came in September 2021) */
    l.tp_sync_bwd = true;
    /* "ddp": torch (overlapped) for the 1.7B-18B rows, Megatron's local DDP from 39B */
    l.overlap_grad_reduce = r->params_b < 39;
    l.fold = true;
    GError *err = NULL;
    double tflops = NAN;
    ics_bench_step st = {0};
    if (ics_bench__step_run(&st, ICS_HWMODELS_DIR "/superpod-a100-hdr.json", r->gpus, m, &l,
                            &err)) {
        ics_step_flops fl;
        ics_workload_flops(m, &l, &fl);
        *step_s = ics_time_to_s(st.res.step_ps);
        *ev = st.res.events;
        ics_bench__step_shares(&st, shares);
        tflops = fl.hardware_flops / *step_s / r->gpus / 1e12;
    }
    if (err)
        fprintf(stderr, "icsim bench training: %s: %s\n", r->name, err->message);
    g_clear_error(&err);
    ics_bench__step_free(&st);
    return tflops;
}

bool ics_bench__step_run(ics_bench_step *s, const char *hw_file, int gpus, const ics_model *m,
                         const ics_layout *l, GError **error)
{
    *s = (ics_bench_step){0};
    if (!ics_layout_check(l, m, error) || !(s->hw = ics_hw_load(hw_file, 1, error)))
        return false;
    /* as many nodes as the GPUs need: 8 a DGX, 72 a GB200 NVL72 rack */
    int per = ics_hw_node_of(s->hw)->gpus;
    if (gpus > per) {
        ics_hw_free(s->hw);
        if (!(s->hw = ics_hw_load(hw_file, (gpus + per - 1) / per, error)))
            return false;
    }
    s->t = ics_topo_new(s->hw);
    ics_layout on = *l; /* on this system's nodes (the node-aware MoE dispatch) */
    on.node_gpus = per;
    s->tr = ics_workload_build(m, &on, ics_hw_node_of(s->hw)->gpu_type, error);
    ics_replay_opts o = {.backend = ics_net_backend("analytic"),
                         .tuning = {.nvls_enable = true},
                         .colls = ICS_REPLAY_MEMO,
                         .p2p_lat_ps = -1,
                         .host_launch_ps = ics_time_from_s(ICS_REPLAY_HOST_LAUNCH_US * 1e-6)};
    s->rp = s->tr ? ics_replay_new(s->tr, s->t, &o, error) : NULL;
    return s->rp && ics_replay_run(s->rp, &s->res, error);
}

void ics_bench__step_shares(const ics_bench_step *s, double shares[ICS_REPORT_STEP_NPARTS])
{
    double step = ics_time_to_s(s->res.step_ps);
    const ics_replay_rank *rs = ics_replay_rank_stats(s->rp, s->res.critical_rank);
    for (int c = 0; c < ICS_CAT_COUNT; c++)
        shares[c] = 100 * ics_time_to_s(rs->busy_ps[c] + rs->wait_ps[c]) / step;
    shares[ICS_CAT_COUNT] = 100 * ics_time_to_s(rs->bubble_ps) / step;
    shares[ICS_CAT_COUNT + 1] = 100 * ics_time_to_s(rs->host_ps) / step;
}

void ics_bench__step_free(ics_bench_step *s)
{
    ics_replay_free(s->rp);
    ics_trace_free(s->tr);
    ics_topo_free(s->t);
    ics_hw_free(s->hw);
    *s = (ics_bench_step){0};
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double ics_bench__median(double *v, int n)
{
    if (n == 0)
        return NAN;
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* Megatron-LM's SC'21 table; the rows predicted (0: a failure, printed to stderr). */
static int sc21_table(const ics_model_catalog *cat)
{
    GArray *rows = g_array_new(FALSE, FALSE, sizeof(row));
    GError *err = NULL;
    if (!read_rows(ICS_TRAINING_DATA, rows, &err)) {
        fprintf(stderr, "icsim bench training: %s\n", err->message);
        g_error_free(err);
        g_array_free(rows, TRUE);
        return 0;
    }
    printf("# Megatron-LM SC'21 Table 1 (Selene, DGX A100 80GB, HDR IB) vs icsim "
           "(superpod-a100-hdr, analytic engine, folded)\n");
    printf("# TFLOP/s per GPU; the critical rank's step in %% (compute, TP, PP, DP exposed, "
           "bubble, host)\n");
    printf("# %-6s %5s %3s %3s %3s %4s %4s %4s %10s %10s %8s %10s %9s  %4s %4s %4s %4s %4s %4s\n",
           "model", "gpus", "tp", "pp", "vp", "dp", "mbs", "gbs", "published", "predicted", "error",
           "step_s", "events", "comp", "tp", "pp", "dp", "bubl", "host");
    double *errs = g_new(double, rows->len + 1);
    int n = 0;
    for (guint i = 0; i < rows->len; i++) {
        const row *r = &g_array_index(rows, row, i);
        double step = 0, sh[ICS_REPORT_STEP_NPARTS] = {0};
        uint64_t ev = 0;
        double p = predict(r, cat, &step, &ev, sh);
        double e = 100 * (p - r->published) / r->published;
        printf(
            "  %-6s %5d %3d %3d %3d %4d %4d %4d %10.1f %10.1f %+7.1f%% %10.3f %9" G_GUINT64_FORMAT
            "  %4.1f %4.1f %4.1f %4.1f %4.1f %4.1f\n",
            r->name, r->gpus, r->tp, r->pp, r->vp, r->gpus / (r->tp * r->pp), r->mbs, r->gbs,
            r->published, p, e, step, ev, sh[ICS_CAT_COMPUTE], sh[ICS_CAT_TP], sh[ICS_CAT_PP],
            sh[ICS_CAT_DP], sh[ICS_CAT_COUNT], sh[ICS_CAT_COUNT + 1]);
        if (isfinite(e))
            errs[n++] = fabs(e);
    }
    double med = ics_bench__median(errs, n);
    printf("rows predicted: %d of %u\n", n, rows->len);
    printf("median |error| TFLOP/s per GPU: %.1f%%\n", med);
    g_free(errs);
    g_array_free(rows, TRUE);
    return n;
}

/* --tables: names separated by commas; false (nothing set) on a name no table has. */
static bool parse_tables(const char *text, unsigned *out)
{
    static const struct {
        const char *name;
        unsigned bit;
    } names[] = {{"sc21", ICS_BENCH_SC21},
                 {"korthikanti", ICS_BENCH_KORTHIKANTI},
                 {"h100", ICS_BENCH_H100},
                 {"b200", ICS_BENCH_B200},
                 {"gb200", ICS_BENCH_GB200}};
    unsigned set = 0;
    char **parts = g_strsplit(text, ",", -1);
    bool ok = parts[0] != NULL;
    for (int i = 0; parts[i] && ok; i++) {
        size_t j = 0;
        while (j < G_N_ELEMENTS(names) && strcmp(parts[i], names[j].name) != 0)
            j++;
        ok = j < G_N_ELEMENTS(names);
        if (ok)
            set |= names[j].bit;
    }
    g_strfreev(parts);
    if (ok)
        *out = set;
    return ok;
}

int ics_bench_training(int argc, char **argv)
{
    char *tables_text = NULL;
    const GOptionEntry opts[] = {
        {"tables", 0, 0, G_OPTION_ARG_STRING, &tables_text,
         "only these tables, separated by commas: sc21, korthikanti, h100, b200, gb200 (default: "
         "all)",
         "LIST"},
        G_OPTION_ENTRY_NULL};
    if (!ics_cli_parse("bench training", "",
                       "Predicted against published training throughput: Megatron-LM SC'21 Table "
                       "1 and Korthikanti et al. (MLSys 2023) on superpod-a100-hdr, "
                       "Megatron-Bridge's DGX-H100, DGX-B200 and DGX-GB200 rows on "
                       "superpod-h100-ndr, superpod-b200-ndr and gb200-nvl72-16tray-su.",
                       opts, &argc, &argv))
        return ICS_EXIT_USAGE;
    unsigned tables = ICS_BENCH_ALL;
    if (tables_text && !parse_tables(tables_text, &tables)) {
        fprintf(stderr,
                "icsim bench training: --tables: expected names among sc21, korthikanti, h100, "
                "b200, gb200 separated by commas, got \"%s\"\n",
                tables_text);
        g_free(tables_text);
        return ICS_EXIT_USAGE;
    }
    g_free(tables_text);
    if (argc > 1) {
        fprintf(stderr, "icsim bench training: expected no arguments, got \"%s\"\n", argv[1]);
        return ICS_EXIT_USAGE;
    }
    GError *err = NULL;
    ics_model_catalog *cat = ics_model_catalog_load_default(&err);
    if (!cat) {
        fprintf(stderr, "icsim bench training: %s\n", err->message);
        g_error_free(err);
        return ICS_EXIT_FAIL;
    }
    /* a table asked for that predicts nothing fails the bench */
    bool ok = !(tables & ICS_BENCH_SC21) || sc21_table(cat) > 0;
    ok &= ics_bench__training_bridge(cat, tables) >= 0;
    ok &= !(tables & ICS_BENCH_KORTHIKANTI) || ics_bench__training_korthikanti() > 0;
    ics_model_catalog_free(cat);
    return ok ? ICS_EXIT_OK : ICS_EXIT_FAIL;
}
