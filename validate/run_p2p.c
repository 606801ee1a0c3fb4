/* run_p2p.c: the GPU-pair matrices as p2pBandwidthLatencyTest prints them, and their JSON.
 * Invariant: the JSON holds the numbers the matrices print, to the same two decimals. */
#include "format.h"
#include "gpu.h"
#include "json_out.h"
#include "run.h"
#include "sysinfo.h"

#include <stdio.h>

static bool write_json(const icsv_args *a, const icsv_hw *hw, const double *uni, const double *bi,
                       const double *lat)
{
    icsv_p2p_report rep = {.hw = hw,
                           .uni_gbps = uni,
                           .bi_gbps = bi,
                           .lat_us = lat,
                           .copy = a->kernel == ICSV_KERNEL_CE ? "ce" : "sm",
                           .bytes = a->min_bytes / 16 * 16};
    return icsv_json_emit(a->json_path, icsv_json_p2p_text(&rep));
}

static void append_note(GString *s, const icsv_args *a, const icsv_hw *hw)
{
    bool ce = a->kernel == ICSV_KERNEL_CE;
    int ctas = a->params.ctas ? a->params.ctas : hw->sm_count;
    g_string_append_printf(s, "\nNOTE: icsim-validate %s: %" G_GUINT64_FORMAT "-byte copies, ",
                           ICSV_VERSION, a->min_bytes / 16 * 16);
    if (ce)
        g_string_append(s, "copy engines (cudaMemcpyPeerAsync); latency: one 8-byte copy.\n");
    else
        g_string_append_printf(s,
                               "SM stores over peer pointers (%d CTAs x 512 threads, unroll %d); "
                               "latency: one-way flag, from a release/acquire ping-pong.\n",
                               ctas, a->params.unroll);
    g_string_append(s, "Pairs without P2P access use cudaMemcpyPeerAsync, staged by the driver.\n");
}

int icsv_run_p2p(const icsv_args *a)
{
    icsv_gpus *g = icsv_gpus_open(a->ngpus);
    if (!g)
        return ICSV_EXIT_INPUT;
    icsv_hw hw = {0};
    icsv_gpus_describe(g, &hw);
    icsv_system_name(hw.system, sizeof hw.system);
    int n = hw.ngpus;
    double *uni = g_new0(double, n *n), *bi = g_new0(double, n *n), *lat = g_new0(double, n *n);
    int *access = g_new0(int, n *n);
    icsv_p2p_measure(g, a->kernel, &a->params, a->min_bytes, a->warmup, a->iters, uni, bi, lat,
                     access);
    GString *s = g_string_new(NULL);
    icsv_format_p2p(s, &hw, access, uni, bi, lat);
    append_note(s, a, &hw);
    fputs(s->str, stdout);
    int rc = a->json_path && !write_json(a, &hw, uni, bi, lat) ? 1 : 0;
    g_string_free(s, TRUE);
    g_free(uni);
    g_free(bi);
    g_free(lat);
    g_free(access);
    icsv_gpus_free(g);
    return rc;
}
