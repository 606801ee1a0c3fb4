/* What a what-if changed, for `icsim collective --fail ... --compare`: the failures as header
 * lines, the sweep on the intact and the failed system side by side as comment lines (so the
 * output still reads as an nccl-tests log), and sweeps as a picture (busbw against size, a
 * measured log beside the simulation). */
#include "report/report.h"

#include <math.h>

void ics_report_failures(const ics_topo *t, GString *out)
{
    for (int i = 0; i < ics_topo_nfailures(t); i++)
        g_string_append_printf(out, "# failure: %s\n", ics_topo_failure(t, i));
}

static void choice(const ics_coll_result *r, char *buf, size_t n)
{
    if (r->local)
        g_snprintf(buf, n, "local");
    else
        g_snprintf(buf, n, "%s/%s/%d", ics_coll_algo_name(r->algo), ics_coll_proto_name(r->proto),
                   r->nchannels);
}

void ics_report_coll_compare(const ics_coll_row *intact, const ics_coll_result *ri,
                             const ics_coll_row *failed, const ics_coll_result *rf, int n,
                             GString *out)
{
    g_string_append(out, "# what the failures changed (intact -> with failures): "
                         "algorithm/protocol/channels, bus bandwidth, time\n");
    g_string_append_printf(out, "# %12s  %-22s %-22s %9s %9s %8s %10s %10s\n", "size", "intact",
                           "with failures", "busbw", "busbw", "change", "time", "time");
    double worst = 0, sum = 0;
    int counted = 0;
    for (int i = 0; i < n; i++) {
        char a[64], b[64];
        choice(&ri[i], a, sizeof a);
        choice(&rf[i], b, sizeof b);
        double ba = intact[i].busbw_gbps, bb = failed[i].busbw_gbps;
        double change = ba > 0 ? 100 * (bb / ba - 1) : 0;
        g_string_append_printf(out, "# %12llu  %-22s %-22s %9.2f %9.2f %+7.1f%% %10.2f %10.2f\n",
                               (unsigned long long)intact[i].size_bytes, a, b, ba, bb, change,
                               intact[i].time_us, failed[i].time_us);
        if (ba > 0) {
            worst = MIN(worst, change);
            sum += change;
            counted++;
        }
    }
    g_string_append_printf(out, "# bus bandwidth change: mean %+.1f%%, worst %+.1f%%\n",
                           counted ? sum / counted : 0.0, worst);
}

void ics_report_coll_svg(const char *title, ics_coll_op op, const ics_coll_curve *curves, int n,
                         GString *out)
{
    ics_plot_series *series = g_new0(ics_plot_series, n + 1);
    double **xy = g_new0(double *, 2 * n + 1);
    for (int c = 0; c < n; c++) {
        xy[2 * c] = g_new(double, curves[c].n + 1);
        xy[2 * c + 1] = g_new(double, curves[c].n + 1);
        for (int i = 0; i < curves[c].n; i++) {
            xy[2 * c][i] = (double)curves[c].rows[i].size_bytes;
            xy[2 * c + 1][i] = curves[c].rows[i].busbw_gbps;
        }
        series[c] = (ics_plot_series){.name = curves[c].name,
                                      .n = curves[c].n,
                                      .x = xy[2 * c],
                                      .y = xy[2 * c + 1],
                                      .dashed = curves[c].measured,
                                      .markers = true};
    }
    char *ylabel = g_strdup_printf("%s bus bandwidth (GB/s)", ics_coll_op_name(op));
    ics_plot p = {.title = title,
                  .x_label = "size",
                  .y_label = ylabel,
                  .log_x = true,
                  .nseries = n,
                  .series = series};
    ics_plot_svg_lines(&p, out);
    g_free(ylabel);
    for (int k = 0; k < 2 * n; k++)
        g_free(xy[k]);
    g_free(xy);
    g_free(series);
}
