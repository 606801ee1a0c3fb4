/* A training step as a picture: one stacked bar per rank (or, past 16 ranks, per group of
 * consecutive ranks, their mean), its compute, exposed communication by kind, bubble and host,
 * which add up to the rank's end (replay.h). Folded replays simulate one rank per symmetric set, so
 * their bars are those ranks. */
#include "report/report.h"

#define MAX_BARS 16

const char *const ics_report_step_parts[ICS_REPORT_STEP_NPARTS] = {"compute",
                                                                   "TP comm (exposed)",
                                                                   "PP comm (exposed)",
                                                                   "DP comm (exposed)",
                                                                   "EP comm (exposed)",
                                                                   "CP comm (exposed)",
                                                                   "other",
                                                                   "bubble and waits",
                                                                   "host (launches)"};

void ics_report_step_svg(const ics_replay *r, const ics_replay_result *res, int nranks,
                         const char *title, GString *out)
{
    int *active = g_new(int, nranks + 1), n = 0;
    for (int k = 0; k < nranks; k++)
        if (ics_replay_rank_stats(r, k)->end_ps > 0)
            active[n++] = k;
    int nbars = MIN(n, MAX_BARS);
    const int np = ICS_REPORT_STEP_NPARTS;
    double *values = g_new0(double, (size_t)MAX(1, nbars) * np);
    char **names = g_new0(char *, nbars + 1);
    for (int b = 0; b < nbars; b++) {
        int from = (int)((int64_t)b * n / nbars), to = (int)((int64_t)(b + 1) * n / nbars);
        for (int i = from; i < to; i++) {
            const ics_replay_rank *rs = ics_replay_rank_stats(r, active[i]);
            for (int c = 0; c < ICS_CAT_COUNT; c++)
                values[b * np + c] += ics_time_to_s(rs->busy_ps[c] + rs->wait_ps[c]) / (to - from);
            values[b * np + ICS_CAT_COUNT] += ics_time_to_s(rs->bubble_ps) / (to - from);
            values[b * np + ICS_CAT_COUNT + 1] += ics_time_to_s(rs->host_ps) / (to - from);
        }
        names[b] = to - from == 1 ? g_strdup_printf("rank %d", active[from])
                                  : g_strdup_printf("ranks %d-%d", active[from], active[to - 1]);
    }
    char *full = g_strdup_printf("%s: step %.3f s, critical rank %d", title ? title : "step",
                                 ics_time_to_s(res->step_ps), res->critical_rank);
    ics_plot_bars bars = {.title = full,
                          .y_label = "seconds",
                          .nbars = nbars,
                          .nparts = np,
                          .bar_names = (const char *const *)names,
                          .part_names = ics_report_step_parts,
                          .values = values};
    ics_plot_svg_bars(&bars, out);
    g_free(full);
    g_strfreev(names);
    g_free(values);
    g_free(active);
}
