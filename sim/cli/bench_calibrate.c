/* `icsim bench calibrate`: does a calibration carry? For every system of validate/data/nccl with
 * two or more operations or rank counts, calibrate on one log and predict the others: their
 * median busbw error below and from 1 MiB with the model as shipped and with the calibration.
 * A calibration that only fits its own log shows here as no better, or worse, on the others. */
#include "calibrate/calibrate.h"
#include "cli/cli.h"
#include "cli/cli_common.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef ICS_HWMODELS_DIR
#define ICS_HWMODELS_DIR "hwmodels"
#endif
#define DATA_DIR ICS_HWMODELS_DIR "/../validate/data/nccl"
#define MIB      (1ULL << 20)
#define MAX_LOGS 30

/* A system and its logs: each log's operation and node count (a prediction is of another
 * operation, or of the same operation at another node or rank count: the two goals;
 * or of the same operation and scale on another cluster). A log
 * marked slow (80 ranks: a minute per prediction) is predicted only with --all and never
 * calibrated on; one marked no_fit is predicted but not calibrated on (a fit across nodes that
 * takes minutes). */
typedef struct {
    const char *id;
    const char *op;
    int nodes;
    bool slow, no_fit;
} bench_log;

static const struct {
    const char *system;
    const char *model;
    bench_log logs[MAX_LOGS];
} systems[] = {
    {"DGX H100 (3 clusters)",
     "dgx-h100.json",
     {{"nvidia_dgxc_dgxh100_1node_allreduce", "all_reduce", 1, false, false},
      {"xxrjun_h100_1node_8gpu_all_gather", "all_gather", 1, false, false},
      {"xxrjun_h100_1node_8gpu_sendrecv", "sendrecv", 1, false, false},
      {"xxrjun_h100_1node_8gpu_all_reduce", "all_reduce", 1, false, false},
      {"xxrjun_h100_1node_8gpu_reduce_scatter", "reduce_scatter", 1, false, false},
      {"xxrjun_h100_1node_8gpu_alltoall", "alltoall", 1, false, false}}},
    {"H100 cluster, 1, 2 and 10 nodes (xxrjun)",
     "superpod-h100-ndr.json",
     {{"xxrjun_h100_1node_8gpu_all_gather", "all_gather", 1, false, false},
      {"xxrjun_h100_2node_1gpn_alltoall", "alltoall", 2, false, true},
      {"xxrjun_h100_2node_1gpn_sendrecv", "sendrecv", 2, false, true},
      {"xxrjun_h100_2node_2gpn_alltoall", "alltoall", 2, false, true},
      {"xxrjun_h100_2node_2gpn_sendrecv", "sendrecv", 2, false, true},
      {"xxrjun_h100_2node_4gpn_alltoall", "alltoall", 2, false, true},
      {"xxrjun_h100_2node_4gpn_sendrecv", "sendrecv", 2, false, true},
      {"xxrjun_h100_2node_8gpn_alltoall", "alltoall", 2, false, true},
      {"xxrjun_h100_2node_8gpn_sendrecv", "sendrecv", 2, false, true},
      {"xxrjun_h100_10node_1gpn_all_reduce", "all_reduce", 10, false, false},
      {"xxrjun_h100_10node_1gpn_all_gather", "all_gather", 10, false, true},
      {"xxrjun_h100_10node_1gpn_reduce_scatter", "reduce_scatter", 10, false, true},
      {"xxrjun_h100_10node_1gpn_alltoall", "alltoall", 10, false, true},
      {"xxrjun_h100_10node_1gpn_sendrecv", "sendrecv", 10, false, true},
      {"xxrjun_h100_10node_2gpn_all_reduce", "all_reduce", 10, false, true},
      {"xxrjun_h100_10node_2gpn_all_gather", "all_gather", 10, false, true},
      {"xxrjun_h100_10node_2gpn_reduce_scatter", "reduce_scatter", 10, false, true},
      {"xxrjun_h100_10node_2gpn_alltoall", "alltoall", 10, false, true},
      {"xxrjun_h100_10node_2gpn_sendrecv", "sendrecv", 10, false, true},
      {"xxrjun_h100_10node_4gpn_all_reduce", "all_reduce", 10, false, true},
      {"xxrjun_h100_10node_4gpn_all_gather", "all_gather", 10, false, true},
      {"xxrjun_h100_10node_4gpn_reduce_scatter", "reduce_scatter", 10, false, true},
      {"xxrjun_h100_10node_4gpn_alltoall", "alltoall", 10, false, true},
      {"xxrjun_h100_10node_4gpn_sendrecv", "sendrecv", 10, false, true},
      {"xxrjun_h100_10node_8gpn_all_gather", "all_gather", 10, true, false},
      {"xxrjun_h100_10node_8gpn_all_reduce", "all_reduce", 10, true, false},
      {"xxrjun_h100_10node_8gpn_reduce_scatter", "reduce_scatter", 10, true, false},
      {"xxrjun_h100_10node_8gpn_alltoall", "alltoall", 10, true, false},
      {"xxrjun_h100_10node_8gpn_sendrecv", "sendrecv", 10, true, false}}},
    {"DGX A100, 1 and 2 nodes (OCI, Sophia)",
     "superpod-a100-hdr.json",
     {{"oci_bm_gpu4_8_a100_1node_allreduce_fullsweep", "all_reduce", 1, false, false},
      {"alcf_sophia_dgxa100_2node_all_reduce", "all_reduce", 2, false, false}}},
    {"Snellius 4 x H100, 1 and 2 nodes",
     "snellius-h100.json",
     {{"snellius_h100x4_1node_all_reduce", "all_reduce", 1, false, false},
      {"snellius_h100x4_1node_all_gather", "all_gather", 1, false, false},
      {"snellius_h100x4_1node_reduce_scatter", "reduce_scatter", 1, false, false},
      {"snellius_h100x4_2node_all_reduce", "all_reduce", 2, false, true},
      {"snellius_h100x4_2node_all_gather", "all_gather", 2, false, true},
      {"snellius_h100x4_2node_reduce_scatter", "reduce_scatter", 2, false, true}}},
    {"Polaris 4 x A100, 2 and 8 nodes (Slingshot dragonfly)",
     "polaris.json",
     {{"alcf_polaris_a100x4_2node_all_reduce", "all_reduce", 2, false, false},
      {"alcf_polaris_a100x4_2node_all_gather", "all_gather", 2, false, false},
      {"alcf_polaris_a100x4_2node_alltoall", "alltoall", 2, false, false},
      {"alcf_polaris_a100x4_8node_all_reduce", "all_reduce", 8, false, true},
      {"alcf_polaris_a100x4_8node_all_gather", "all_gather", 8, false, true},
      {"alcf_polaris_a100x4_8node_alltoall", "alltoall", 8, false, true}}},
};

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median |busbw error| (measured / simulated time - 1) of c's points in [lo, hi). */
static double busbw_median(const ics_calib *c, uint64_t lo, uint64_t hi, bool after)
{
    double *e = g_new(double, ics_calib_n_points(c) + 1);
    int n = 0;
    for (int i = 0; i < ics_calib_n_points(c); i++) {
        const ics_calib_point *p = ics_calib_point_at(c, i);
        if (p->size_bytes >= lo && p->size_bytes < hi)
            e[n++] = fabs(p->measured_us / (after ? p->after_us : p->before_us) - 1);
    }
    qsort(e, n, sizeof(double), cmp_double);
    double m = n == 0 ? NAN : (n % 2 ? e[n / 2] : (e[n / 2 - 1] + e[n / 2]) / 2);
    g_free(e);
    return m;
}

/* A log and the calibration set up on it (the calibration reads the log's tables). */
typedef struct {
    ics_meas *m;
    ics_calib *c;
} log_fit;

static bool open_log(const char *model, const char *id, log_fit *lf, GError **err)
{
    char *path = g_strdup_printf("%s/%s.json", DATA_DIR, id);
    ics_calib_opts o = {0};
    lf->m = ics_meas_new();
    lf->c =
        ics_meas_read_file(lf->m, path, NULL, err) ? ics_calib_new(model, lf->m, &o, err) : NULL;
    g_free(path);
    return lf->c != NULL;
}

/* The rank count the log's first table was measured on. */
static int log_ranks(const log_fit *lf)
{
    return ics_meas_n_tables(lf->m) > 0 ? ics_meas_table_at(lf->m, 0)->nranks : 0;
}

static void close_log(log_fit *lf)
{
    ics_calib_free(lf->c);
    ics_meas_free(lf->m);
}

void ics_bench__calib_pct(GString *out, double x)
{
    if (isfinite(x))
        g_string_append_printf(out, " %7.1f%%", 100 * x);
    else
        g_string_append_printf(out, " %8s", "-");
}

/* Calibrates on log `t` of system s and predicts its others; appends the predictions' errors
 * from 1 MiB (before, after) to large[0] (another operation), large[1] (the same operation at
 * another node or rank count) or large[2] (the same operation at the same scale: another
 * cluster's log of it, e.g. two DGX H100 all-reduces, which neither goal asks about). */
static bool one(int s, int t, bool all, GArray *large[3], GString *out, GError **err)
{
    char *model = g_strdup_printf("%s/%s", ICS_HWMODELS_DIR, systems[s].model);
    const char *train = systems[s].logs[t].id;
    gint64 t0 = g_get_monotonic_time();
    log_fit fit;
    bool ok = open_log(model, train, &fit, err) && ics_calib_fit(fit.c, err);
    double secs = (g_get_monotonic_time() - t0) / 1e6;
    if (ok)
        g_string_append_printf(out, "  fit on %-44s %5.1f s\n", train, secs);
    for (int k = 0; ok && k < MAX_LOGS && systems[s].logs[k].id; k++) {
        if (k == t || (systems[s].logs[k].slow && !all))
            continue;
        log_fit lf;
        ok = open_log(model, systems[s].logs[k].id, &lf, err) &&
             ics_calib_predict_with(lf.c, fit.c, err);
        const ics_calib *c = lf.c;
        if (ok) {
            double row[4] = {busbw_median(c, 0, MIB, false), busbw_median(c, 0, MIB, true),
                             busbw_median(c, MIB, UINT64_MAX, false),
                             busbw_median(c, MIB, UINT64_MAX, true)};
            g_string_append_printf(out, "    predict %-42s", systems[s].logs[k].id);
            for (int i = 0; i < 4; i++)
                ics_bench__calib_pct(out, row[i]);
            g_string_append_c(out, '\n');
            /* the same operation at another node count, or on as many nodes with another
             * count of GPUs each (the 2-node pairwise logs): another scale, not another op */
            const bench_log *a = &systems[s].logs[t], *b = &systems[s].logs[k];
            bool same_op = strcmp(a->op, b->op) == 0;
            bool same_scale = a->nodes == b->nodes && log_ranks(&fit) == log_ranks(&lf);
            int bucket = !same_op ? 0 : !same_scale ? 1 : 2;
            if (isfinite(row[2]))
                g_array_append_vals(large[bucket], &row[2], 2);
        }
        close_log(&lf);
    }
    close_log(&fit);
    g_free(model);
    return ok;
}

static double median_of(GArray *v, int offset)
{
    int n = (int)v->len / 2;
    double *x = g_new(double, n + 1);
    for (int i = 0; i < n; i++)
        x[i] = g_array_index(v, double, 2 * i + offset);
    qsort(x, n, sizeof(double), cmp_double);
    double m = n == 0 ? NAN : (n % 2 ? x[n / 2] : (x[n / 2 - 1] + x[n / 2]) / 2);
    g_free(x);
    return m;
}

int ics_bench_calibrate(int argc, char **argv)
{
    gboolean all = FALSE;
    const GOptionEntry entries[] = {
        {"all", 0, 0, G_OPTION_ARG_NONE, &all, "also predict the 80-rank logs (minutes)", NULL},
        G_OPTION_ENTRY_NULL};
    if (!ics_cli_parse("bench calibrate", "",
                       "Calibrate on one real log of a system, predict its others.", entries, &argc,
                       &argv))
        return ICS_EXIT_USAGE;
    if (argc > 1) {
        fprintf(stderr, "icsim bench calibrate: expected no arguments, got \"%s\"\n", argv[1]);
        return ICS_EXIT_USAGE;
    }
    GString *out = g_string_new(NULL);
    g_string_append_printf(out,
                           "# median |busbw error| of the logs not fitted on: as shipped -> "
                           "calibrated\n#   %-50s %8s %8s %8s %8s\n",
                           "", "<1MiB", "cal", ">=1MiB", "cal");
    GArray *large[3] = {g_array_new(FALSE, FALSE, sizeof(double)),
                        g_array_new(FALSE, FALSE, sizeof(double)),
                        g_array_new(FALSE, FALSE, sizeof(double))};
    GError *err = NULL;
    bool ok = true;
    for (size_t s = 0; ok && s < G_N_ELEMENTS(systems); s++) {
        g_string_append_printf(out, "%s (%s)\n", systems[s].system, systems[s].model);
        for (int t = 0; ok && t < MAX_LOGS && systems[s].logs[t].id; t++)
            if (!systems[s].logs[t].slow && !systems[s].logs[t].no_fit)
                ok = one((int)s, t, all, large, out, &err);
    }
    if (ok) {
        g_string_append_printf(out,
                               "median over predictions >= 1MiB of another operation: %.1f%% -> "
                               "%.1f%% (%u)\n",
                               100 * median_of(large[0], 0), 100 * median_of(large[0], 1),
                               large[0]->len / 2);
        g_string_append_printf(out,
                               "median over predictions >= 1MiB of another node or rank count: "
                               "%.1f%% -> %.1f%% (%u)\n",
                               100 * median_of(large[1], 0), 100 * median_of(large[1], 1),
                               large[1]->len / 2);
        g_string_append_printf(out,
                               "median over predictions >= 1MiB of the same operation and scale "
                               "on another cluster: %.1f%% -> %.1f%% (%u)\n",
                               100 * median_of(large[2], 0), 100 * median_of(large[2], 1),
                               large[2]->len / 2);
        ok = ics_bench__calibrate_compute(out, &err);
    }
    if (ok) {
        ics_cli_emit(out);
    } else {
        fprintf(stderr, "icsim bench calibrate: %s\n", err->message);
        g_error_free(err);
    }
    g_string_free(out, TRUE);
    for (int i = 0; i < 3; i++)
        g_array_free(large[i], TRUE);
    return ok ? ICS_EXIT_OK : ICS_EXIT_FAIL;
}
