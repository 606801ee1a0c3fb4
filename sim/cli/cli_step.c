/* Shared by `icsim replay` and `icsim train`; see cli_step.h. */
#include "cli/cli_step.h"
#include "cli/cli.h"
#include "cli/cli_common.h"
#include "cli/cli_progress.h"
#include "report/report.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

void ics_cli_step_entries(ics_cli_step_args *a, GOptionEntry out[ICS_CLI_STEP_ENTRIES])
{
    const GOptionEntry v[ICS_CLI_STEP_ENTRIES] = {
        {"engine", 0, 0, G_OPTION_ARG_STRING, &a->engine,
         "network backend: analytic (default), packet or flow (SimGrid)", "ENGINE"},
        {"collectives", 0, 0, G_OPTION_ARG_STRING, &a->colls,
         "auto (packet's default: memoize communicators whose links nothing else uses), "
         "full, memo (analytic's default: every call as if alone)",
         "MODE"},
        {"timeline", 0, 0, G_OPTION_ARG_FILENAME, &a->timeline,
         "write a Chrome/Perfetto trace (open in ui.perfetto.dev)", "FILE"},
        {"timeline-ranks", 0, 0, G_OPTION_ARG_STRING, &a->timeline_ranks_text,
         "only the first N ranks in the timeline (default: all)", "N"},
        {"sample-us", 0, 0, G_OPTION_ARG_STRING, &a->sample_us_text,
         "timeline: link load sampling interval, microseconds (default 10; grows on long runs)",
         "US"},
        {"json", 0, 0, G_OPTION_ARG_NONE, &a->json, "print the report as JSON", NULL},
        {"plot", 0, 0, G_OPTION_ARG_FILENAME, &a->plot,
         "also draw where each rank's step went, a stacked bar per rank, as SVG", "FILE.svg"},
        {"fail", 0, 0, G_OPTION_ARG_STRING_ARRAY, &a->fails,
         "take a part down or slow it first (nvswitch:nvsw2, nic:5:mlx5_3, switch:spine3, "
         "link:leaf2-spine0@0.5, ...; repeatable; docs/whatif.md)",
         "SPEC"},
        {"packet-kib", 0, 0, G_OPTION_ARG_STRING, &a->packet_kib_text,
         "packet engine: payload per simulated packet, KiB (default 256; 4 is a network "
         "packet)",
         "KIB"},
        {"hotspots", 0, 0, G_OPTION_ARG_STRING, &a->hotspots_text,
         "also report the N busiest links over the step (utilization, bytes; memoized "
         "collectives' links included)",
         "N"},
        {"host-launch-us", 0, 0, G_OPTION_ARG_STRING, &a->host_launch_us_text,
         "the host's time to launch one kernel, microseconds (default 10, PyTorch eager; 0: the "
         "host is never the bottleneck; docs/replay.md)",
         "US"},
        G_OPTION_ENTRY_NULL};
    memcpy(out, v, sizeof v);
}

static bool fail(const char *cmd, const char *msg, const char *what)
{
    char *esc = g_strescape(what, NULL);
    GError *err = g_error_new(ICS_ERROR, ICS_ERROR_INPUT, msg, esc);
    g_free(esc);
    ics_cli_fail(cmd, err);
    return false;
}

static bool read_host(ics_cli_step_args *a, GError **err)
{
    a->host_launch_us = ICS_REPLAY_HOST_LAUNCH_US;
    return ics_cli_num("--host-launch-us", a->host_launch_us_text, &a->host_launch_us, err) &&
           ics_check_num("--host-launch-us", a->host_launch_us, 0, ICS_CLI_HOST_LAUNCH_US_MAX, err);
}

/* The numbers, each in its range. */
static bool read_numbers(ics_cli_step_args *a, GError **err)
{
    return ics_cli_int_in("--timeline-ranks", a->timeline_ranks_text, 1, INT_MAX,
                          &a->timeline_ranks, err) &&
           ics_cli_int_in("--packet-kib", a->packet_kib_text, 1, ICS_CLI_PACKET_KIB_MAX,
                          &a->packet_kib, err) &&
           ics_cli_int_in("--hotspots", a->hotspots_text, 1, ICS_CLI_HOTSPOTS_MAX, &a->hotspots,
                          err) &&
           ics_cli_num("--sample-us", a->sample_us_text, &a->sample_us, err) &&
           (!a->sample_us_text || ics_check_num("--sample-us", a->sample_us, ICS_CLI_SAMPLE_US_MIN,
                                                ICS_CLI_SAMPLE_US_MAX, err)) &&
           read_host(a, err);
}

bool ics_cli_step_check(const char *cmd, ics_cli_step_args *a)
{
    if (a->engine && !ics_net_backend(a->engine))
        return fail(cmd, "--engine: expected analytic, packet or flow, got \"%s\"", a->engine);
    if (a->colls && strcmp(a->colls, "auto") && strcmp(a->colls, "full") &&
        strcmp(a->colls, "memo"))
        return fail(cmd, "--collectives: expected auto, full or memo, got \"%s\"", a->colls);
    GError *err = NULL;
    if (!read_numbers(a, &err)) {
        ics_cli_fail(cmd, err);
        return false;
    }
    return (!a->timeline || ics_cli_output_ok(cmd, "--timeline", a->timeline)) &&
           (!a->plot || ics_cli_output_ok(cmd, "--plot", a->plot));
}

/* --plot: the step's breakdown per rank (report_step_svg.c). */
static bool write_plot(const ics_replay *r, const ics_replay_result *res, int nranks,
                       const ics_topo *t, const char *path, GError **err)
{
    GString *svg = g_string_new(NULL);
    ics_report_step_svg(r, res, nranks, ics_hw_name(ics_topo_hw(t)), svg);
    bool ok = g_file_set_contents(path, svg->str, (gssize)svg->len, err);
    g_string_free(svg, TRUE);
    return ok;
}

/* Not given: the fluid engines (analytic, flow) memoize every collective (their fidelity is the
 * isolated call: fast enough for a 1024-GPU step in well under a second), the packet engine
 * plays the calls that share links on the shared network (auto). */
static ics_replay_colls colls_mode(const char *s, const char *engine)
{
    if (s && strcmp(s, "full") == 0)
        return ICS_REPLAY_FULL;
    if (s && strcmp(s, "memo") == 0)
        return ICS_REPLAY_MEMO;
    if (!s && strcmp(engine, "packet") != 0)
        return ICS_REPLAY_MEMO;
    return ICS_REPLAY_AUTO;
}

/* Payload per channel over the run, memoized collectives' included (transfer full). */
static uint64_t *chan_bytes(const ics_replay *r, const ics_topo *t)
{
    int n = ics_topo_nchans(t);
    uint64_t *v = g_new(uint64_t, MAX(n, 1));
    for (int c = 0; c < n; c++)
        v[c] = ics_replay_chan_bytes(r, c);
    return v;
}

static void step_progress(void *ctx, ics_time now, uint64_t done, uint64_t total)
{
    ics_cli_progress_say(ctx, total ? (double)done / (double)total : 0,
                         "step: %.6f s simulated, %" G_GUINT64_FORMAT " of %" G_GUINT64_FORMAT
                         " ops done",
                         ics_time_to_s(now), done, total);
}

int ics_cli_step_run(const char *cmd, const ics_cli_step_args *a, const ics_trace *tr, ics_topo *t,
                     const int *gpu_of_rank, const ics_step_info *info)
{
    GError *warning = NULL;
    const char *engine = a->engine ? a->engine : "analytic";
    ics_cli_progress progress;
    ics_cli_progress_init(&progress);
    ics_replay_opts o = {.backend = ics_net_backend(engine),
                         .colls = colls_mode(a->colls, engine),
                         .gpu_of_rank = gpu_of_rank,
                         .p2p_lat_ps = -1,
                         .host_launch_ps = ics_time_from_s(a->host_launch_us * 1e-6),
                         .progress = progress.on ? step_progress : NULL,
                         .progress_ctx = &progress};
    /* A step lasts seconds and NCCL moves each channel's data in steps of 512 KiB (Simple:
     * a 4 MiB buffer in 8 slots), so links shared by concurrent calls interleave at that grain,
     * not at the 4 KiB of a network packet; simulating 256 KiB units keeps the interleaving finer
     * than NCCL's own and a 1024-GPU step to seconds (docs/replay.md measures the difference). */
    if (strcmp(engine, "packet") == 0)
        o.net.packet_bytes = (uint32_t)((a->packet_kib > 0 ? a->packet_kib : 256) * 1024);
    ics_coll_tuning_from_env(&o.tuning, ics_topo_hw(t), &warning);
    if (warning)
        fprintf(stderr, "icsim %s: warning: %s\n", cmd, warning->message);
    g_clear_error(&warning);
    ics_cli_nccl_paths(cmd, t);
    if (a->timeline)
        o.sample_ps = (ics_time)((a->sample_us > 0 ? a->sample_us : 10) * ICS_PS_PER_US);
    GError *err = NULL;
    for (char **f = a->fails; f && *f; f++)
        if (!ics_topo_fail(t, *f, &err)) {
            fprintf(stderr, "icsim %s: --fail: %s\n", cmd, err->message);
            g_error_free(err);
            return ICS_EXIT_USAGE;
        }
    ics_replay *r = ics_replay_new(tr, t, &o, &err);
    if (!r) {
        fprintf(stderr, "icsim %s: %s\n", cmd, err->message);
        g_error_free(err);
        return ICS_EXIT_USAGE;
    }
    ics_replay_result res;
    int rc = ICS_EXIT_OK;
    bool ran = ics_replay_run(r, &res, &err);
    ics_cli_progress_end(&progress);
    if (!ran) {
        fprintf(stderr, "icsim %s: %s\n", cmd, err->message);
        rc = ics_error_exit_status(err); /* a trace that cannot finish is bad input: 2 */
    } else if (a->timeline && !ics_timeline_write(r, tr, t, a->timeline, a->timeline_ranks, &err)) {
        fprintf(stderr, "icsim %s: --timeline: %s\n", cmd, err->message);
        rc = ics_error_exit_status(err); /* a file that cannot be written: 1 */
    } else if (a->plot && !write_plot(r, &res, ics_trace_nranks(tr), t, a->plot, &err)) {
        fprintf(stderr, "icsim %s: --plot: %s\n", cmd, err->message);
        rc = ICS_EXIT_FAIL;
    }
    if (rc == ICS_EXIT_OK) {
        GString *out = g_string_new(NULL);
        int nranks = ics_trace_nranks(tr);
        for (int i = 0; i < ics_topo_nfailures(t) && !a->json; i++)
            g_string_append_printf(out, "with failure: %s\n", ics_topo_failure(t, i));
        ics_hotspots h = {.t = t,
                          .chan_bytes = a->hotspots ? chan_bytes(r, t) : NULL,
                          .span_ps = res.step_ps,
                          .note = res.folded ? "the trace is folded: mirrored ranks' own calls "
                                               "and sends are not simulated, their links show "
                                               "no bytes"
                                             : NULL,
                          .top = a->hotspots};
        if (a->json)
            ics_report_step_json_hot(r, &res, nranks, info, a->hotspots ? &h : NULL, out);
        else
            ics_report_step_text(r, &res, nranks, info, out);
        if (a->hotspots && !a->json)
            ics_report_hotspots_text(&h, "", out);
        g_free((uint64_t *)h.chan_bytes);
        ics_cli_emit(out);
        g_string_free(out, TRUE);
    }
    g_clear_error(&err);
    ics_replay_free(r);
    return rc;
}

void ics_cli_step_args_clear(ics_cli_step_args *a)
{
    g_free(a->engine);
    g_free(a->colls);
    g_free(a->timeline);
    g_free(a->plot);
    g_strfreev(a->fails);
    g_free(a->timeline_ranks_text);
    g_free(a->sample_us_text);
    g_free(a->packet_kib_text);
    g_free(a->hotspots_text);
    g_free(a->host_launch_us_text);
    *a = (ics_cli_step_args){0};
}
