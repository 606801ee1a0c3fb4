/* `icsim bench training`'s third table: Korthikanti et al., "Reducing Activation Recomputation
 * in Large Transformer Models" (MLSys 2023; validate/data/training/korthikanti_mlsys23.json,
 * provenance beside it). Why this table besides SC'21: the same Selene cluster and GPT shapes,
 * but each model measured twice, with full recomputation and with sequence parallelism plus
 * selective recomputation, on tiny batches without data parallelism; so the *difference*
 * between two rows isolates what recomputation and sequence parallelism cost, and Table 4 gives
 * one 22B layer's time alone, with no pipeline, no optimizer and no data parallelism around it.
 * Predicted on superpod-a100-hdr; nothing is fitted to the table. */
#include "cli/cli.h"
#include "cli/cli_common.h"
#include "replay/replay.h"
#include "workload/workload.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "cli/bench_training_internal.h"

#define KORTHIKANTI_DATA ICS_HWMODELS_DIR "/../validate/data/training/korthikanti_mlsys23.json"
#define SELENE           ICS_HWMODELS_DIR "/superpod-a100-hdr.json"
#define SEQ              2048
#define VOCAB            51200

/* The two ways each model ran (Table 5's columns). */
typedef enum { MODE_FULL, MODE_SELECTIVE_SP, MODE_COUNT } k_mode;

static const char *const mode_names[MODE_COUNT] = {"full", "sel+sp"};
static const char *const mode_keys[MODE_COUNT] = {"iteration_s_full", "iteration_s_selective_sp"};

static int num(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItem(o, key);
    return cJSON_IsNumber(v) ? v->valueint : 0;
}

/* Megatron-LM's GPT of 2022 (the paper's): GeLU MLP of 4h, LayerNorm, biases, learned
 * positions, tied embeddings, dropout; attention that writes its s x s scores. */
static ics_model gpt_of(const cJSON *row, int layers)
{
    int h = num(row, "hidden");
    const char *name = cJSON_GetStringValue(cJSON_GetObjectItem(row, "model"));
    return ics_model_make(name, layers, h, num(row, "heads"), 4 * h, VOCAB, SEQ);
}

static ics_layout layout_of(const cJSON *row, bool sp, ics_recompute rc)
{
    ics_layout l = ics_layout_defaults();
    l.tp = num(row, "tp");
    l.pp = num(row, "pp");
    l.vp = MAX(1, num(row, "vp"));
    l.dp = MAX(1, num(row, "dp"));
    l.mbs = num(row, "micro_batch");
    l.gbs = num(row, "global_batch");
    l.sp = sp;
    l.recompute = rc;
    l.dtype = ICS_DTYPE_BF16;
    l.attention = ICS_ATTN_UNFUSED;
    /* Megatron-LM of 2022 reduced gradients after the backward pass (its local DDP) */
    l.overlap_grad_reduce = false;
    l.fold = true;
    return l;
}

/* Seconds of rank 0's optimizer ops (their durations are fixed when the trace is built). */
static double optimizer_s(const ics_trace *tr)
{
    double s = 0;
    for (int i = 0; i < ics_trace_nops(tr, 0); i++) {
        const ics_trace_op *op = ics_trace_get_op(tr, 0, i);
        if (op->name && g_str_has_prefix(op->name, "optimizer"))
            s += ics_time_to_s(op->duration_ps);
    }
    return s;
}

/* The step of model m on layout l, seconds, with where the critical rank's time went and, when
 * opt is not NULL, the optimizer's part; NAN (with the reason printed) when it cannot run. */
static double step_of(const ics_model *m, const ics_layout *l,
                      double shares[ICS_REPORT_STEP_NPARTS], double *opt)
{
    ics_bench_step st = {0};
    GError *err = NULL;
    int gpus = l->tp * l->pp * l->dp;
    double step = NAN;
    if (ics_bench__step_run(&st, SELENE, gpus, m, l, &err)) {
        step = ics_time_to_s(st.res.step_ps);
        if (shares)
            ics_bench__step_shares(&st, shares);
        if (opt)
            *opt = optimizer_s(st.tr);
    } else {
        printf("not expressible: %s\n", err ? err->message : "?");
    }
    g_clear_error(&err);
    ics_bench__step_free(&st);
    return step;
}

/* Table 5: one line per model and mode with a published iteration time. Errors are of
 * throughput (published / predicted step - 1), as the other tables'. */
static int print_table5(const cJSON *rows, double *errs)
{
    printf("# %-5s %5s %-11s %4s %4s %-7s %8s %8s %8s  %4s %4s %4s %4s %4s %4s\n", "model", "gpus",
           "tp/pp/vp/dp", "mbs", "gbs", "mode", "publ_s", "pred_s", "error", "comp", "tp", "pp",
           "dp", "bubl", "host");
    int n = 0;
    const cJSON *row;
    cJSON_ArrayForEach(row, rows)
    {
        for (int k = 0; k < MODE_COUNT; k++) {
            const cJSON *pub = cJSON_GetObjectItem(row, mode_keys[k]);
            if (!cJSON_IsNumber(pub))
                continue;
            ics_model m = gpt_of(row, num(row, "layers"));
            bool sel = k == MODE_SELECTIVE_SP;
            ics_layout l = layout_of(row, sel, sel ? ICS_RECOMPUTE_SELECTIVE : ICS_RECOMPUTE_FULL);
            printf("  %-5s %5d %2d/%2d/%d/%-2d %4d %4d %-7s %8.2f ", m.name, num(row, "gpus"), l.tp,
                   l.pp, l.vp, l.dp, l.mbs, l.gbs, mode_names[k], pub->valuedouble);
            double sh[ICS_REPORT_STEP_NPARTS] = {0}, s = step_of(&m, &l, sh, NULL);
            if (!isfinite(s))
                continue;
            double e = 100 * (pub->valuedouble / s - 1);
            printf("%8.2f %+7.1f%%  %4.1f %4.1f %4.1f %4.1f %4.1f %4.1f\n", s, e,
                   sh[ICS_CAT_COMPUTE], sh[ICS_CAT_TP], sh[ICS_CAT_PP], sh[ICS_CAT_DP],
                   sh[ICS_CAT_COUNT], sh[ICS_CAT_COUNT + 1]);
            errs[n++] = fabs(e);
        }
    }
    return n;
}

/* Table 4: one 22B layer, forward plus backward, as the difference between the steps of the
 * model with all its layers and with half of them, over the layers removed: what a layer adds,
 * its TP communication included. The optimizer's step grows with the layers too but is not
 * part of Table 4's layer: it is taken out of both steps (pp 1: all of it is on the path). */
static void print_table4(const cJSON *t22, const cJSON *row22)
{
    const cJSON *rows = cJSON_GetObjectItem(t22, "rows"), *r;
    if (!cJSON_IsArray(rows) || !row22)
        return;
    int layers = num(row22, "layers"), half = layers / 2;
    printf("# one 22B layer (Table 4), forward + backward, ms: the step's growth per layer "
           "from %d to %d layers\n",
           half, layers);
    printf("# %-34s %8s %8s %8s\n", "config", "publ_ms", "pred_ms", "error");
    int n = 0;
    double worst = 0;
    cJSON_ArrayForEach(r, rows)
    {
        const char *rc_name = cJSON_GetStringValue(cJSON_GetObjectItem(r, "recompute"));
        ics_recompute rc = ICS_RECOMPUTE_NONE;
        if (rc_name && strcmp(rc_name, "full") == 0)
            rc = ICS_RECOMPUTE_FULL;
        else if (rc_name && strcmp(rc_name, "selective") == 0)
            rc = ICS_RECOMPUTE_SELECTIVE;
        ics_layout l = layout_of(row22, cJSON_IsTrue(cJSON_GetObjectItem(r, "sp")), rc);
        double pub = cJSON_GetNumberValue(cJSON_GetObjectItem(r, "combined_ms"));
        printf("  %-34s %8.1f ", cJSON_GetStringValue(cJSON_GetObjectItem(r, "config")), pub);
        ics_model all = gpt_of(row22, layers), some = gpt_of(row22, half);
        double oa = 0, ob = 0, a = step_of(&all, &l, NULL, &oa);
        double b = isfinite(a) ? step_of(&some, &l, NULL, &ob) : NAN;
        if (!isfinite(b))
            continue;
        double per = 1e3 * ((a - oa) - (b - ob)) / (layers - half);
        /* the layer's time: a time error, not a throughput one */
        printf("%8.2f %+7.1f%%\n", per, 100 * (per / pub - 1));
        worst = MAX(worst, fabs(100 * (per / pub - 1)));
        n++;
    }
    printf("layer configs predicted: %d; max |error| of a layer's time: %.1f%%\n", n, worst);
}

int ics_bench__training_korthikanti(void)
{
    char *text = NULL;
    if (!g_file_get_contents(KORTHIKANTI_DATA, &text, NULL, NULL)) {
        fprintf(stderr, "icsim bench training: %s: cannot read\n", KORTHIKANTI_DATA);
        return 0;
    }
    cJSON *doc = cJSON_Parse(text);
    g_free(text);
    const cJSON *rows = cJSON_GetObjectItem(doc, "rows");
    if (!cJSON_IsArray(rows)) {
        fprintf(stderr, "icsim bench training: %s: expected a \"rows\" array\n", KORTHIKANTI_DATA);
        cJSON_Delete(doc);
        return 0;
    }
    printf("\n# Korthikanti et al., MLSys 2023, Tables 4 and 5 (Selene, DGX A100 80GB, tp 8, "
           "no data parallelism unless dp says) vs icsim (superpod-a100-hdr, analytic, folded)\n"
           "# iteration time; error of throughput; the critical rank's step in %% (compute, TP, "
           "PP, DP exposed, bubble, host)\n");
    double *errs = g_new(double, MODE_COUNT *cJSON_GetArraySize(rows) + 1);
    int n = print_table5(rows, errs);
    printf("rows predicted: %d; median |error| of throughput: %.1f%%\n", n,
           ics_bench__median(errs, n));
    print_table4(cJSON_GetObjectItem(doc, "layer_22b"), cJSON_GetArrayItem(rows, 0));
    g_free(errs);
    cJSON_Delete(doc);
    return n;
}
