/* `icsim bench collective`: how fast whole nccl-tests sweeps simulate — the default all-reduce
 * sweep (-b 8 -e 8G -f 2) on one DGX H100 and one DGX A100 with the packet backend, and on
 * 128 DGX H100 (1024 GPUs), where each channel plays as one stream (docs/collectives.md), with
 * the analytic and with the packet backend (whose flows that meet take turns: docs/network.md).
 * Prints per case the wall time, the sizes run, and the last size's time and bus bandwidth. */
#include "cli/cli.h"
#include "cli/cli_common.h"
#include "collectives/comm.h"

#include <stdio.h>

#ifndef ICS_HWMODELS_DIR
#define ICS_HWMODELS_DIR "hwmodels"
#endif

typedef struct {
    const char *name;
    const char *model;
    int nodes; /* 0: a node file */
    const char *backend;
    uint64_t max_bytes;
} bench_case;

static const bench_case cases[] = {
    {"dgx-h100 all_reduce 8B..8G packet", "dgx-h100.json", 0, "packet", 8ULL << 30},
    {"dgx-a100 all_reduce 8B..8G packet", "dgx-a100.json", 0, "packet", 8ULL << 30},
    {"1024 x H100 all_reduce 8B..8G analytic", "superpod-h100-ndr.json", 128, "analytic",
     8ULL << 30},
    {"1024 x H100 all_reduce 8B..8G packet", "superpod-h100-ndr.json", 128, "packet", 8ULL << 30},
};

static int run_case(const bench_case *c, const char *dir)
{
    char *path = g_build_filename(dir, c->model, NULL);
    ics_cli_setup su;
    bool ok = ics_cli_setup_open(&su, path, c->nodes);
    g_free(path);
    if (!ok)
        return ICS_EXIT_USAGE;
    int n = ics_topo_gpus_per_node(su.t) * ics_topo_nodes(su.t);
    ics_cli_setup_comm(&su, ics_topo_gpus_per_node(su.t), n, ics_net_backend(c->backend), NULL);
    ics_comm *comm = su.comm;
    ics_coll_tuning tu = {.nvls_enable = true};
    ics_coll_result res = {0};
    int sizes = 0;
    uint64_t last = 0;
    gint64 t0 = g_get_monotonic_time();
    for (uint64_t size = 8; size <= c->max_bytes; size *= 2, sizes++) {
        ics_coll_req req = {.op = ICS_COLL_ALL_REDUCE, .size_bytes = size, .dtype_bytes = 4};
        if (!ics_comm_run(comm, &req, &tu, &res))
            break;
        last = size;
    }
    double wall = (g_get_monotonic_time() - t0) / 1e6;
    double us = (double)res.time_ps / 1e6;
    printf("%-40s wall %8.3f s  %2d sizes  last %s %s: %.1f us, busbw %.1f GB/s\n", c->name, wall,
           sizes, ics_coll_algo_name(res.algo), res.streams ? "streams" : "chunks", us,
           us > 0 ? (double)last / us / 1e3 * ics_coll_busbw_factor(ICS_COLL_ALL_REDUCE, n) : 0);
    fflush(stdout);
    ics_cli_setup_close(&su);
    return ICS_EXIT_OK;
}

int ics_bench_collective(int argc, char **argv)
{
    char *dir = NULL;
    int one = 0;
    char *one_text = NULL;
    const GOptionEntry entries[] = {
        {"case", 0, 0, G_OPTION_ARG_STRING, &one_text, "run only case N (1-4)", "N"},
        {"hwmodels", 0, 0, G_OPTION_ARG_FILENAME, &dir,
         "directory of the models (default: " ICS_HWMODELS_DIR ")", "DIR"},
        G_OPTION_ENTRY_NULL};
    if (!ics_cli_parse("bench collective", "", "Speed of whole nccl-tests sweeps.", entries, &argc,
                       &argv))
        return ICS_EXIT_USAGE;
    GError *err = NULL;
    if (argc > 1) {
        fprintf(stderr, "icsim bench collective: expected no arguments, got \"%s\"\n", argv[1]);
        g_free(one_text);
        g_free(dir);
        return ICS_EXIT_USAGE;
    }
    if (one_text &&
        !ics_cli_int_in("--case", one_text, 1, (int64_t)G_N_ELEMENTS(cases), &one, &err)) {
        g_free(one_text);
        g_free(dir);
        return ics_cli_fail("bench collective", err);
    }
    g_free(one_text);
    int rc = ICS_EXIT_OK;
    for (size_t i = 0; i < G_N_ELEMENTS(cases) && rc == ICS_EXIT_OK; i++)
        if (!one || one == (int)i + 1)
            rc = run_case(&cases[i], dir ? dir : ICS_HWMODELS_DIR);
    g_free(dir);
    return rc;
}
