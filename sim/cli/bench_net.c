/* `icsim bench net`: how fast the packet backend simulates three standard loads — a ring of
 * 1 GiB sends on one DGX H100, the same ring over 128 DGX H100 on the NDR SuperPOD, and an
 * all-to-all of 64 MiB per GPU over 512 GPUs on a 2:1 oversubscribed fat-tree. Prints wall
 * time, events, events/s and peak memory per case; --json prints them as a JSON array. */
#include "cli/cli.h"
#include "cli/cli_common.h"
#include "net/net.h"

#include <stdio.h>
#include <sys/resource.h>

#ifndef ICS_HWMODELS_DIR
#define ICS_HWMODELS_DIR "hwmodels"
#endif

typedef struct {
    const char *name;
    const char *model;
    int nodes;
    void (*load)(ics_net *n, const ics_topo *t, uint64_t *count);
} bench_case;

static void done_count(ics_engine *e, void *ctx, uint64_t tag)
{
    (*(uint64_t *)ctx)++;
}

static void send1(ics_net *n, int src, int dst, uint64_t bytes, uint64_t hash, uint64_t *count)
{
    ics_net_xfer x = {.src = src,
                      .dst = dst,
                      .bytes = bytes,
                      .flow_hash = hash,
                      .done = done_count,
                      .ctx = count};
    ics_net_send(n, &x);
}

/* every GPU sends 1 GiB to the same GPU index of the next node (or the next GPU in a node) */
static void ring_load(ics_net *n, const ics_topo *t, uint64_t *count)
{
    int nodes = ics_topo_nodes(t), g = ics_topo_gpus_per_node(t);
    for (int node = 0; node < nodes; node++)
        for (int i = 0; i < g; i++) {
            int dst = nodes == 1 ? ics_topo_gpu(t, 0, (i + 1) % g)
                                 : ics_topo_gpu(t, (node + 1) % nodes, i);
            send1(n, ics_topo_gpu(t, node, i), dst, 1ULL << 30, (uint64_t)(node * g + i), count);
        }
}

/* every GPU sends 64 MiB in all, split evenly over every other GPU */
static void alltoall_load(ics_net *n, const ics_topo *t, uint64_t *count)
{
    int nodes = ics_topo_nodes(t), g = ics_topo_gpus_per_node(t), total = nodes * g;
    uint64_t each = (64ULL << 20) / (uint64_t)(total - 1);
    for (int a = 0; a < total; a++)
        for (int b = 0; b < total; b++)
            if (a != b)
                send1(n, ics_topo_gpu(t, a / g, a % g), ics_topo_gpu(t, b / g, b % g), each,
                      (uint64_t)a * (uint64_t)total + (uint64_t)b, count);
}

static const bench_case cases[] = {
    {.name = "dgx-h100 ring 8 x 1 GiB", .model = "dgx-h100.json", .load = ring_load},
    {.name = "superpod-h100 ring 1024 x 1 GiB",
     .model = "superpod-h100-ndr.json",
     .nodes = 128,
     .load = ring_load},
    {.name = "fattree 2:1 all-to-all 512 x 64 MiB",
     .model = "fattree-2tier.json",
     .nodes = 64,
     .load = alltoall_load},
};

static double peak_rss_mb(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_maxrss / 1024.0;
}

static int run_case(const bench_case *c, const char *dir, bool json, bool first)
{
    char *path = g_build_filename(dir, c->model, NULL);
    ics_hw *hw = ics_cli_load_hw(path, c->nodes);
    g_free(path);
    if (!hw)
        return ICS_EXIT_USAGE;
    ics_topo *t = ics_topo_new(hw);
    ics_engine *e = ics_engine_new(1 << 16);
    ics_net *n = ics_net_new(ics_net_backend("packet"), t, e, NULL);
    uint64_t completed = 0;
    gint64 t0 = g_get_monotonic_time();
    c->load(n, t, &completed);
    ics_engine_run(e, ICS_TIME_MAX);
    double wall = (g_get_monotonic_time() - t0) / 1e6;
    uint64_t events = ics_engine_events_processed(e);
    ics_net_stats st;
    ics_net_get_stats(n, &st);
    if (json)
        printf("%s{\"case\": \"%s\", \"wall_s\": %.3f, \"events\": %" G_GUINT64_FORMAT
               ", \"events_per_s\": %.0f, \"peak_rss_mb\": %.1f, \"simulated_s\": %.6f}",
               first ? "[" : ",\n ", c->name, wall, events, events / wall, peak_rss_mb(),
               ics_time_to_s(ics_engine_now(e)));
    else
        printf("%-38s wall %7.3f s  events %11" G_GUINT64_FORMAT "  %6.2f M events/s  "
               "peak %7.1f MB  simulated %.3f ms  (%" G_GUINT64_FORMAT
               " transfers, %" G_GUINT64_FORMAT " trains, %" G_GUINT64_FORMAT " packet-hops)\n",
               c->name, wall, events, events / wall / 1e6, peak_rss_mb(),
               ics_time_to_s(ics_engine_now(e)) * 1e3, completed, st.trains, st.packets);
    fflush(stdout);
    ics_net_free(n);
    ics_engine_free(e);
    ics_topo_free(t);
    ics_hw_free(hw);
    return ICS_EXIT_OK;
}

int ics_bench_net(int argc, char **argv)
{
    gboolean json = FALSE;
    char *dir = NULL;
    int one = 0;
    char *one_text = NULL;
    const GOptionEntry entries[] = {
        {"json", 0, 0, G_OPTION_ARG_NONE, &json, "print a JSON array", NULL},
        {"case", 0, 0, G_OPTION_ARG_STRING, &one_text, "run only case N (1-3)", "N"},
        {"hwmodels", 0, 0, G_OPTION_ARG_FILENAME, &dir,
         "directory of the models (default: " ICS_HWMODELS_DIR ")", "DIR"},
        G_OPTION_ENTRY_NULL};
    if (!ics_cli_parse("bench net", "", "Packet-backend speed on three standard loads.", entries,
                       &argc, &argv))
        return ICS_EXIT_USAGE;
    GError *err = NULL;
    if (argc > 1) {
        fprintf(stderr, "icsim bench net: expected no arguments, got \"%s\"\n", argv[1]);
        g_free(one_text);
        g_free(dir);
        return ICS_EXIT_USAGE;
    }
    if (one_text &&
        !ics_cli_int_in("--case", one_text, 1, (int64_t)G_N_ELEMENTS(cases), &one, &err)) {
        g_free(one_text);
        g_free(dir);
        return ics_cli_fail("bench net", err);
    }
    g_free(one_text);
    int rc = ICS_EXIT_OK;
    bool first = true;
    for (size_t i = 0; i < G_N_ELEMENTS(cases) && rc == ICS_EXIT_OK; i++) {
        if (one && one != (int)i + 1)
            continue;
        rc = run_case(&cases[i], dir ? dir : ICS_HWMODELS_DIR, json, first);
        first = false;
    }
    if (json && rc == ICS_EXIT_OK)
        printf("]\n");
    g_free(dir);
    return rc;
}
