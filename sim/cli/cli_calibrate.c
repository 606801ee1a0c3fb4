/* `icsim calibrate -s MODEL.json MEASUREMENT... [-o CALIBRATED.json]`: fits the model's free
 * parameters to measured nccl-tests logs or validation-runner JSON (calibrate/calibrate.h) and
 * prints, per point, the measured time and the model's before and after; per parameter, how
 * it moved and how well the data fix it; the median errors; and cross-validation. */
#include "calibrate/calibrate.h"
#include "calibrate/compute_calib.h"
#include "cli/cli.h"
#include "cli/cli_calibrate_compute.h"
#include "cli/cli_common.h"
#include "cli/cli_progress.h"
#include "report/report.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

typedef struct {
    char *system, *out, *op, *engine, *params;
    gboolean no_cv, quiet;
} calib_args;

static int usage_error(const char *msg)
{
    fprintf(stderr, "icsim calibrate: %s\nRun `icsim calibrate --help` for its options.\n", msg);
    return ICS_EXIT_USAGE;
}

/* --params a,b,c: the parameters to fit, a bit each; 0 with *bad set on an unknown name. */
static unsigned parse_params(const char *list, char **bad)
{
    unsigned mask = 0;
    char **names = g_strsplit(list, ",", -1);
    for (int i = 0; names[i]; i++) {
        int p = ics_hw_cal_param_find(g_strstrip(names[i]));
        if (p < 0) {
            *bad = g_strdup(names[i]);
            mask = 0;
            break;
        }
        mask |= 1u << p;
    }
    g_strfreev(names);
    return mask;
}

static void print_points(const ics_calib *c, GString *out)
{
    g_string_append_printf(out, "# %-34s %-14s %5s %12s %10s %10s %10s %8s %8s\n", "point", "op",
                           "ranks", "size", "measured", "before", "after", "err bef", "err aft");
    for (int i = 0; i < ics_calib_n_points(c); i++) {
        const ics_calib_point *p = ics_calib_point_at(c, i);
        char where[256];
        const char *base = strrchr(p->source, '/') ? strrchr(p->source, '/') + 1 : p->source;
        if (p->line > 0)
            snprintf(where, sizeof where, "%s:%d", base, p->line);
        else
            snprintf(where, sizeof where, "%s", base);
        g_string_append_printf(
            out,
            "  %-34.34s %-14s %5d %12" G_GUINT64_FORMAT " %10.2f %10.2f %10.2f %+7.1f%% %+7.1f%%\n",
            where, ics_coll_op_name(p->op), p->nranks, p->size_bytes, p->measured_us, p->before_us,
            p->after_us, 100 * (p->before_us / p->measured_us - 1),
            100 * (p->after_us / p->measured_us - 1));
    }
}

static void print_params(const ics_calib *c, GString *out)
{
    g_string_append_printf(out, "#\n# %-20s %-5s %10s %10s %8s\n", "parameter", "unit", "before",
                           "after", "+-");
    for (int p = 0; p < ICS_CAL_COUNT; p++) {
        const ics_calib_param *cp = ics_calib_param_of(c, (ics_cal_param)p);
        const ics_cal_param_info *in = ics_hw_cal_param((ics_cal_param)p);
        g_string_append_printf(out, "  %-20s %-5s %10.4g %10.4g ", in->key, in->unit, cp->before,
                               cp->after);
        if (cp->determined)
            g_string_append_printf(out, "%7.1f%%  fitted\n", 100 * cp->rel_sigma);
        else
            g_string_append_printf(out, "%8s  not determined: %s\n", "-", cp->why ? cp->why : "");
    }
}

void ics_cli__calib_pct(GString *out, double x)
{
    if (isfinite(x))
        g_string_append_printf(out, " %12.1f%%", 100 * x);
    else
        g_string_append_printf(out, " %13s", "-");
}

static void print_summary(const ics_calib *c, GString *out)
{
    g_string_append_printf(out, "#\n# median |time error| %13s %13s\n", "below 1 MiB",
                           "from 1 MiB");
    for (int after = 0; after < 2; after++) {
        g_string_append_printf(out, "  %-20s", after ? "after" : "before");
        ics_cli__calib_pct(out, ics_calib_median_error(c, 0, 1 << 20, after));
        ics_cli__calib_pct(out, ics_calib_median_error(c, 1 << 20, UINT64_MAX, after));
        g_string_append_c(out, '\n');
    }
}

/* Table `table`'s points: sizes in b, measured, before and after times in t[0..2]; returns how
 * many (0: no such table), its operation, ranks and file in *op, *nranks, *source. */
static int table_points(const ics_calib *c, int table, double *b, double *t[3], ics_coll_op *op,
                        int *nranks, const char **source)
{
    int m = 0;
    for (int i = 0; i < ics_calib_n_points(c); i++) {
        const ics_calib_point *p = ics_calib_point_at(c, i);
        if (p->table != table)
            continue;
        *op = p->op;
        *nranks = p->nranks;
        *source = p->source;
        b[m] = (double)p->size_bytes;
        t[0][m] = p->measured_us;
        t[1][m] = p->before_us;
        t[2][m] = p->after_us;
        m++;
    }
    return m;
}

/* Per table, T = a + S / B over its largest sizes (report.h, ics_report_tail_fit_top), measured,
 * before and after: whether what is left after the fit is a rate or a fixed cost per call,
 * which no parameter may provide (docs/collectives.md, "The large sizes as two numbers"). A
 * table with fewer than 3 such sizes, or whose times do not grow with them, is left out. */
static void print_tail(const ics_calib *c, GString *out)
{
    int n = ics_calib_n_points(c), tables = 0, printed = 0;
    for (int i = 0; i < n; i++)
        tables = MAX(tables, ics_calib_point_at(c, i)->table + 1);
    double *b = g_new(double, n + 1), *t[3];
    for (int k = 0; k < 3; k++)
        t[k] = g_new(double, n + 1);
    for (int table = 0; table < tables; table++) {
        ics_coll_op op = ICS_COLL_ALL_REDUCE;
        int nranks = 0;
        const char *source = NULL;
        int m = table_points(c, table, b, t, &op, &nranks, &source);
        ics_report_tail f[3];
        double bf = m > 0 ? ics_coll_busbw_factor(op, nranks) : 0;
        bool ok = bf > 0;
        for (int k = 0; k < 3 && ok; k++)
            ok = ics_report_tail_fit_top(b, t[k], m, &f[k]);
        if (!ok)
            continue;
        if (printed++ == 0)
            g_string_append_printf(out,
                                   "#\n# tail: T = a + S / B over each table's largest sizes; "
                                   "busbw in GB/s, a in us\n"
                                   "# %-44s %4s %9s %9s %9s %9s %9s %9s\n",
                                   "table", "rows", "busbw", "before", "after", "a", "before",
                                   "after");
        const char *base = strrchr(source, '/') ? strrchr(source, '/') + 1 : source;
        char *name =
            g_str_has_suffix(base, ".json") ? g_strndup(base, strlen(base) - 5) : g_strdup(base);
        g_string_append_printf(out, "  %-44s %4d %9.1f %9.1f %9.1f %9.1f %9.1f %9.1f\n", name,
                               f[0].rows, f[0].algbw_gbps * bf, f[1].algbw_gbps * bf,
                               f[2].algbw_gbps * bf, f[0].a_us, f[1].a_us, f[2].a_us);
        g_free(name);
    }
    g_free(b);
    for (int k = 0; k < 3; k++)
        g_free(t[k]);
}

void ics_cli__calib_folds(const GArray *folds, GString *out)
{
    g_string_append_printf(out,
                           "#\n# cross-validation: fit without the fold, predict it\n"
                           "# %-30s %6s %14s %14s\n",
                           "left out", "points", "err loaded", "err predicted");
    for (guint i = 0; i < folds->len; i++) {
        const ics_calib_fold *f = &g_array_index(folds, ics_calib_fold, i);
        g_string_append_printf(out, "  %-30s %6d", f->what, f->n);
        ics_cli__calib_pct(out, f->median_before);
        ics_cli__calib_pct(out, f->median_after);
        g_string_append_c(out, '\n');
    }
}

/* A fit of a multi-node log can take minutes: the simulations so far on stderr (a terminal's). */
static void say_progress(void *ctx, int sims, int points)
{
    ics_cli_progress_say(ctx, 0, "calibrate: %d passes over %d points", sims, points);
}

/* Reads the measurements, fits, cross-validates, writes; returns an exit status. */
static int calibrate(const calib_args *a, int nfiles, char **files, unsigned mask)
{
    GError *err = NULL;
    ics_meas *m = ics_meas_new();
    for (int i = 0; i < nfiles && !err; i++)
        ics_meas_read_file(m, files[i], a->op, &err);
    ics_cli_progress progress;
    ics_cli_progress_init(&progress);
    ics_calib_opts o = {
        .engine = a->engine, .params = mask, .progress = say_progress, .progress_ctx = &progress};
    ics_calib *c = err ? NULL : ics_calib_new(a->system, m, &o, &err);
    GArray *folds = g_array_new(FALSE, FALSE, sizeof(ics_calib_fold));
    bool ok = c && ics_calib_fit(c, &err) && (a->no_cv || ics_calib_cross_validate(c, folds, &err));
    ics_cli_progress_end(&progress);
    ok = ok && (!a->out || ics_calib_write_overlay(c, a->out, &err));
    int rc = ICS_EXIT_OK;
    if (ok) {
        GString *out = g_string_new(NULL);
        g_string_append_printf(out, "# icsim calibrate: %s (%s), %d points\n",
                               ics_calib_model_name(c), a->system, ics_calib_n_points(c));
        if (!a->quiet)
            print_points(c, out);
        print_params(c, out);
        print_summary(c, out);
        print_tail(c, out);
        if (!a->no_cv)
            ics_cli__calib_folds(folds, out);
        if (a->out)
            g_string_append_printf(out, "# wrote %s\n", a->out);
        ics_cli_emit(out);
        g_string_free(out, TRUE);
    } else {
        fprintf(stderr, "%s\n", err->message);
        rc = err->domain == ICS_MEAS_ERROR ? ICS_EXIT_USAGE : ics_error_exit_status(err);
        g_error_free(err);
    }
    g_array_free(folds, TRUE);
    ics_calib_free(c);
    ics_meas_free(m);
    return rc;
}

int ics_cli_calibrate(int argc, char **argv)
{
    calib_args a = {0};
    const GOptionEntry entries[] = {
        {"system", 's', 0, G_OPTION_ARG_FILENAME, &a.system, "hardware model to calibrate", "FILE"},
        {"output", 'o', 0, G_OPTION_ARG_FILENAME, &a.out,
         "write the calibrated model (an overlay naming FILE) here", "OUT.json"},
        {"op", 0, 0, G_OPTION_ARG_STRING, &a.op,
         "operation of logs that do not name theirs (all_gather, alltoall, ...)", "OP"},
        {"engine", 0, 0, G_OPTION_ARG_STRING, &a.engine, "network backend (default analytic)",
         "ENGINE"},
        {"params", 0, 0, G_OPTION_ARG_STRING, &a.params,
         "fit only these parameters (comma-separated keys; default: all)", "LIST"},
        {"no-cv", 0, 0, G_OPTION_ARG_NONE, &a.no_cv, "skip the cross-validation", NULL},
        {"quiet", 'q', 0, G_OPTION_ARG_NONE, &a.quiet, "no per-point table", NULL},
        G_OPTION_ENTRY_NULL};
    int rc = ICS_EXIT_USAGE;
    unsigned mask = 0;
    char *bad = NULL;
    if (!ics_cli_parse("calibrate", "MEASUREMENT...",
                       "Fit a hardware model to measured nccl-tests logs (or icsim-validate JSON).",
                       entries, &argc, &argv))
        goto done;
    if (!a.system || argc < 2) {
        rc = usage_error("expected -s MODEL.json and at least one MEASUREMENT file");
        goto done;
    }
    if (a.params && !(mask = parse_params(a.params, &bad))) {
        char *msg = g_strdup_printf("--params: expected keys of docs/hwmodel-format.md "
                                    "(\"Calibration\"), got \"%s\"",
                                    bad ? bad : a.params);
        rc = usage_error(msg);
        g_free(msg);
        goto done;
    }
    if (a.engine && !ics_net_backend(a.engine)) {
        rc = usage_error("--engine: expected analytic, packet or flow");
        goto done;
    }
    if (a.out && !ics_cli_output_ok("calibrate", "-o", a.out))
        goto done;
    int compute = 0;
    for (int i = 1; i < argc; i++)
        compute += ics_ccal_is_compute_file(argv[i]);
    if (compute > 0 && (compute < argc - 1 || a.params || a.op || a.engine)) {
        rc = usage_error("compute measurements (icsim-validate compute --json) calibrate the "
                         "compute model alone: expected only such files, without --params, --op "
                         "or --engine");
        goto done;
    }
    if (compute > 0)
        rc = ics_cli__calibrate_compute(a.system, a.out, a.no_cv, a.quiet, argc - 1, argv + 1);
    else
        rc = calibrate(&a, argc - 1, argv + 1, mask);
done:
    g_free(bad);
    g_free(a.system);
    g_free(a.out);
    g_free(a.op);
    g_free(a.engine);
    g_free(a.params);
    return rc;
}
