/* The packet backend against closed forms and the physics it must reproduce: one transfer on an
 * idle path to the picosecond; N senders into one receiver share it fairly; two GPUs behind one
 * PCIe uplink get half each; a 2:1 fat-tree halves cross-spine throughput; trains agree with
 * per-packet runs; packets of shrinking size converge; bytes are conserved; runs repeat. */
#include "sim/engine.h"
#include "sim/hw.h"
#include "sim/net.h"
#include "sim/route.h"
#include "sim/topo.h"

#include <glib.h>
#include <glib/gstdio.h>
#include <math.h>
#include <string.h>

typedef struct {
    ics_hw *hw;
    ics_topo *t;
    ics_engine *e;
    ics_net *n;
} rig;

static void rig_open(rig *g, const char *model, int nodes, const ics_net_params *p)
{
    char *path = g_path_is_absolute(model)
                     ? g_strdup(model)
                     : g_build_filename(ICS_SOURCE_DIR, "hwmodels", model, NULL);
    GError *err = NULL;
    g->hw = ics_hw_load(path, nodes, &err);
    g_assert_no_error(err);
    g->t = ics_topo_new(g->hw);
    g->e = ics_engine_new(0);
    g->n = ics_net_new(ics_net_backend("packet"), g->t, g->e, p);
    g_free(path);
}

static void rig_close(rig *g)
{
    g_assert_cmpuint(ics_engine_pending(g->e), ==, 0); /* drained: nothing outstanding */
    ics_net_free(g->n);
    ics_engine_free(g->e);
    ics_topo_free(g->t);
    ics_hw_free(g->hw);
}

static void record_done(ics_engine *e, void *ctx, uint64_t tag)
{
    ics_time *at = ctx;
    at[tag] = ics_engine_now(e);
}

static void send(rig *g, int src, int dst, uint64_t bytes, uint64_t hash, ics_time *done,
                 uint64_t tag)
{
    ics_net_xfer x = {.src = src,
                      .dst = dst,
                      .bytes = bytes,
                      .flow_hash = hash,
                      .done = record_done,
                      .ctx = done,
                      .tag = tag};
    ics_net_send(g->n, &x);
}

/* The route's closed form: the slowest path of the striped transfer, as the backend splits. */
static ics_time closed_form(rig *g, int src, int dst, uint64_t bytes, uint32_t packet_bytes)
{
    ics_route r;
    g_assert_true(ics_route_find(g->t, src, dst, 0, &r));
    ics_time worst = 0;
    uint64_t left = bytes;
    for (int i = 0; i < r.n_paths; i++) {
        uint32_t payload = ics_net_packet_payload(g->t, &r.paths[i], packet_bytes);
        uint64_t share = left;
        if (i + 1 < r.n_paths)
            share = MIN(left, (uint64_t)(bytes * r.paths[i].weight / payload) * payload);
        left -= share;
        worst = MAX(worst, ics_net_idle_path_time(g->t, &r.paths[i], share, payload));
    }
    ics_route_clear(&r);
    return worst;
}

/* ---- closed forms ------------------------------------------------------------------------- */

static void check_idle(const char *model, int nodes, const char *a, const char *b, uint64_t bytes,
                       bool per_packet)
{
    ics_net_params p = {.per_packet = per_packet};
    rig g;
    rig_open(&g, model, nodes, &p);
    int src = ics_topo_find(g.t, a), dst = ics_topo_find(g.t, b);
    g_assert_cmpint(src, >=, 0);
    g_assert_cmpint(dst, >=, 0);
    ics_time done[1] = {-1};
    send(&g, src, dst, bytes, 0, done, 0);
    ics_engine_run(g.e, ICS_TIME_MAX);
    ics_time want = closed_form(&g, src, dst, bytes, 0);
    g_test_message("%s %s->%s %" G_GUINT64_FORMAT " B %s: %.3f us (closed form %.3f us)", model, a,
                   b, bytes, per_packet ? "per packet" : "trains", done[0] / 1e6, want / 1e6);
    g_assert_cmpint(done[0], ==, want);
    rig_close(&g);
}

static void test_idle_nvlink(void)
{
    /* DGX-1V: gpu0-gpu3 is a direct NV2 bond */
    for (int pp = 0; pp < 2; pp++) {
        check_idle("dgx1-v100.json", 0, "gpu0", "gpu3", 1 << 20, pp);
        check_idle("dgx1-v100.json", 0, "gpu0", "gpu3", 1000, pp);
    }
}

static void test_idle_nvswitch(void)
{
    for (int pp = 0; pp < 2; pp++)
        check_idle("dgx-h100.json", 0, "gpu0", "gpu5", 8 << 20, pp);
}

static void test_idle_pcie(void)
{
    for (int pp = 0; pp < 2; pp++) {
        check_idle("pcie-8gpu.json", 0, "gpu0", "gpu1", 1 << 20, pp);
        check_idle("pcie-8gpu.json", 0, "gpu0", "gpu7", 1 << 20, pp);
    }
}

static void test_idle_ib(void)
{
    for (int pp = 0; pp < 2; pp++)
        check_idle("superpod-h100-ndr.json", 2, "0:gpu0", "1:gpu0", 4 << 20, pp);
}

/* ---- sharing ------------------------------------------------------------------------------ */

static void test_incast(void)
{
    const uint64_t bytes = 2 << 20;
    ics_net_params p = {0};
    rig g;
    rig_open(&g, "dgx-h100.json", 0, &p);
    int dst = ics_topo_gpu(g.t, 0, 0);
    /* one sender moving all seven shares: the receiver's links are the bottleneck either way,
     * and the fixed part (latency, pipeline fill) is the same */
    ics_time alone[1];
    send(&g, ics_topo_gpu(g.t, 0, 1), dst, 7 * bytes, 0, alone, 0);
    ics_engine_run(g.e, ICS_TIME_MAX);
    rig_close(&g);

    rig_open(&g, "dgx-h100.json", 0, &p);
    ics_time done[8] = {0};
    for (int s = 1; s < 8; s++)
        send(&g, ics_topo_gpu(g.t, 0, s), dst, bytes, 0, done, (uint64_t)s);
    ics_engine_run(g.e, ICS_TIME_MAX);
    ics_time lo = done[1], hi = done[1];
    for (int s = 2; s < 8; s++) {
        lo = MIN(lo, done[s]);
        hi = MAX(hi, done[s]);
    }
    double share = (double)alone[0] / hi;
    g_test_message("incast 7->1: one sender with 7 shares %.2f us; 7 senders %.2f..%.2f us; "
                   "each got %.4f of 1/7",
                   alone[0] / 1e6, lo / 1e6, hi / 1e6, share);
    /* each sender gets 1/N of the receiver's links: all finish together, at ~N x alone */
    g_assert_cmpfloat((double)(hi - lo) / hi, <, 0.01);
    g_assert_cmpfloat(fabs(share - 1.0), <, 0.01);
    rig_close(&g);
}

static void test_pcie_shared_uplink(void)
{
    /* pcie-8gpu: gpu0 and gpu1 share a switch; gpu4 and gpu5 sit on the other socket */
    const uint64_t bytes = 8 << 20;
    ics_net_params p = {0};
    rig g;
    rig_open(&g, "pcie-8gpu.json", 0, &p);
    ics_time one[1];
    send(&g, ics_topo_gpu(g.t, 0, 0), ics_topo_gpu(g.t, 0, 4), bytes, 0, one, 0);
    ics_engine_run(g.e, ICS_TIME_MAX);
    rig_close(&g);
    rig_open(&g, "pcie-8gpu.json", 0, &p);
    ics_time two[2];
    send(&g, ics_topo_gpu(g.t, 0, 0), ics_topo_gpu(g.t, 0, 4), bytes, 0, two, 0);
    send(&g, ics_topo_gpu(g.t, 0, 1), ics_topo_gpu(g.t, 0, 5), bytes, 0, two, 1);
    ics_engine_run(g.e, ICS_TIME_MAX);
    double ratio = (double)MAX(two[0], two[1]) / one[0];
    g_test_message("PCIe shared path: one %.2f us, two %.2f us, ratio %.3f", one[0] / 1e6,
                   MAX(two[0], two[1]) / 1e6, ratio);
    g_assert_cmpfloat(ratio, >, 1.97);
    g_assert_cmpfloat(ratio, <, 2.03);
    rig_close(&g);
}

static void test_trains_match_packets(void)
{
    /* contended: 3 flows through NVSwitch into one GPU plus one passing; compare modes */
    ics_time done[2][4];
    for (int pp = 0; pp < 2; pp++) {
        ics_net_params p = {.per_packet = pp, .train_bytes = 256 << 10};
        rig g;
        rig_open(&g, "dgx-h100.json", 0, &p);
        send(&g, ics_topo_gpu(g.t, 0, 1), ics_topo_gpu(g.t, 0, 0), 4 << 20, 0, done[pp], 0);
        send(&g, ics_topo_gpu(g.t, 0, 2), ics_topo_gpu(g.t, 0, 3), 4 << 20, 0, done[pp], 1);
        send(&g, ics_topo_gpu(g.t, 0, 4), ics_topo_gpu(g.t, 0, 0), 2 << 20, 0, done[pp], 2);
        send(&g, ics_topo_gpu(g.t, 0, 2), ics_topo_gpu(g.t, 0, 0), 1 << 20, 0, done[pp], 3);
        ics_engine_run(g.e, ICS_TIME_MAX);
        rig_close(&g);
    }
    for (int i = 0; i < 4; i++) {
        double rel = fabs((double)done[0][i] - done[1][i]) / done[1][i];
        g_test_message("flow %d: trains %.3f us, packets %.3f us (%.2f%%)", i, done[0][i] / 1e6,
                       done[1][i] / 1e6, 100 * rel);
        g_assert_cmpfloat(rel, <, 0.05);
    }
}

static void test_packet_size_converges(void)
{
    /* Simulated packets of 4 KiB down to 256 B on a contended NVSwitch path: each is still a
     * whole number of NVLink packets, so the wire bytes are the same and only the simulation's
     * granularity (pipeline fill, arbitration) changes; the results must converge. */
    enum { N = 5 };
    ics_time t[N];
    uint32_t sizes[N] = {4096, 2048, 1024, 512, 256};
    for (int i = 0; i < N; i++) {
        ics_net_params p = {.packet_bytes = sizes[i], .per_packet = true};
        rig g;
        rig_open(&g, "dgx-h100.json", 0, &p);
        ics_time d[3];
        for (int s = 0; s < 3; s++)
            send(&g, ics_topo_gpu(g.t, 0, s + 1), ics_topo_gpu(g.t, 0, 0), 2 << 20, 0, d,
                 (uint64_t)s);
        ics_engine_run(g.e, ICS_TIME_MAX);
        t[i] = MAX(d[0], MAX(d[1], d[2]));
        rig_close(&g);
        g_test_message("packet %u B: %.4f us", sizes[i], t[i] / 1e6);
    }
    for (int i = 2; i < N; i++)
        g_assert_cmpint(llabs(t[i] - t[i - 1]), <=, llabs(t[i - 1] - t[i - 2]));
    g_assert_cmpfloat(fabs((double)t[N - 1] - t[N - 2]) / t[N - 1], <, 0.002);
}

/* ---- invariants --------------------------------------------------------------------------- */

static void test_conservation_and_rates(void)
{
    ics_net_params p = {.per_packet = true};
    rig g;
    rig_open(&g, "dgx-h100.json", 0, &p);
    ics_time done[8];
    const uint64_t bytes = 1 << 20;
    for (int s = 0; s < 8; s++) /* a ring: every GPU to its neighbour */
        send(&g, ics_topo_gpu(g.t, 0, s), ics_topo_gpu(g.t, 0, (s + 1) % 8), bytes, 0, done,
             (uint64_t)s);
    ics_engine_run(g.e, ICS_TIME_MAX);
    ics_time end = 0;
    for (int s = 0; s < 8; s++)
        end = MAX(end, done[s]);
    /* bytes out of each GPU's NVLinks = bytes sent; no channel beyond its bandwidth */
    uint64_t total = 0;
    for (int c = 0; c < ics_topo_nchans(g.t); c++) {
        const ics_topo_chan *ch = ics_topo_chan_get(g.t, c);
        uint64_t b = ics_net_chan_bytes(g.n, c);
        if (ics_topo_dev_get(g.t, ch->src)->kind == ICS_DEV_GPU)
            total += b;
        double rate = (double)b / ics_time_to_s(end);
        g_assert_cmpfloat(rate, <=, (double)ch->bw_bytes_per_s);
    }
    g_assert_cmpuint(total, ==, 8 * bytes);
    ics_net_stats st;
    ics_net_get_stats(g.n, &st);
    g_assert_cmpuint(st.transfers, ==, 8);
    g_assert_cmpuint(st.bytes_delivered, ==, 8 * bytes);
    rig_close(&g);
}

static void test_deterministic(void)
{
    ics_time a[16], b[16];
    for (int run = 0; run < 2; run++) {
        ics_net_params p = {0};
        rig g;
        rig_open(&g, "superpod-h100-ndr.json", 64, &p);
        ics_time *d = run ? b : a;
        for (int i = 0; i < 16; i++)
            send(&g, ics_topo_gpu(g.t, i, i % 8), ics_topo_gpu(g.t, 63 - i, (i + 3) % 8), 3 << 20,
                 (uint64_t)i * 7919, d, (uint64_t)i);
        ics_engine_run(g.e, ICS_TIME_MAX);
        rig_close(&g);
    }
    g_assert_cmpmem(a, sizeof a, b, sizeof b);
}

static void test_reduce_multicast(void)
{
    /* NVLS on DGX H100: 8 GPUs reduce through one NVSwitch; every GPU gets the result */
    ics_net_params p = {0};
    rig g;
    rig_open(&g, "dgx-h100.json", 0, &p);
    int sw = ics_topo_find(g.t, "nvsw0");
    g_assert_cmpint(sw, >=, 0);
    int gpus[8];
    for (int i = 0; i < 8; i++)
        gpus[i] = ics_topo_gpu(g.t, 0, i);
    ics_time done[2] = {0};
    const uint64_t bytes = 1 << 20;
    ics_net_reduce(g.n, gpus, 8, sw, gpus, 8, bytes, record_done, done, 0);
    ics_engine_run(g.e, ICS_TIME_MAX);
    /* at least one pass up and one pass down the slowest bond */
    int c = ics_topo_chan_between(g.t, gpus[0], sw);
    uint64_t bw = ics_topo_chan_get(g.t, c)->bw_bytes_per_s;
    for (int i = 0; i < 8; i++) {
        int ci = ics_topo_chan_between(g.t, gpus[i], sw);
        bw = MIN(bw, ics_topo_chan_get(g.t, ci)->bw_bytes_per_s);
    }
    double floor_us = (double)bytes / bw * 1e6;
    g_test_message("NVLS reduce 8 x 1 MiB on nvsw0: %.2f us (one bond pass %.2f us)", done[0] / 1e6,
                   floor_us);
    g_assert_cmpfloat(done[0] / 1e6, >, floor_us);
    g_assert_cmpfloat(done[0] / 1e6, <, 3 * floor_us);
    ics_net_multicast(g.n, gpus[0], sw, gpus + 1, 7, bytes, record_done, done, 1);
    ics_engine_run(g.e, ICS_TIME_MAX);
    g_assert_cmpint(done[1], >, done[0]);
    rig_close(&g);
}

static void test_join_trains(void)
{
    /* an uncontended NVLS reduction and multicast move as one train: the same time as the
     * packets, to the picosecond (the GPUs' bonds to nvsw0 are all alike) */
    ics_time t[2][2];
    for (int pp = 0; pp < 2; pp++) {
        ics_net_params p = {.per_packet = pp};
        rig g;
        rig_open(&g, "dgx-h100.json", 0, &p);
        int sw = ics_topo_find(g.t, "nvsw0"), gpus[8];
        for (int i = 0; i < 8; i++)
            gpus[i] = ics_topo_gpu(g.t, 0, i);
        ics_net_reduce(g.n, gpus, 8, sw, gpus, 8, (3 << 20) + 77, record_done, t[pp], 0);
        ics_engine_run(g.e, ICS_TIME_MAX);
        ics_net_multicast(g.n, gpus[2], sw, gpus + 3, 5, (1 << 20) + 5, record_done, t[pp], 1);
        ics_engine_run(g.e, ICS_TIME_MAX);
        rig_close(&g);
    }
    g_test_message("reduce: trains %.4f us, packets %.4f us; multicast: %.4f / %.4f us",
                   t[0][0] / 1e6, t[1][0] / 1e6, t[0][1] / 1e6, t[1][1] / 1e6);
    g_assert_cmpint(t[0][0], ==, t[1][0]);
    g_assert_cmpint(t[0][1] - t[0][0], ==, t[1][1] - t[1][0]);
}

static void test_adaptive_routing(void)
{
    /* 2:1 fat-tree, not rail-optimized: node 0's and node 1's NICs sit on leaf 0, nodes 6-7's
     * on leaf 1. Sixteen flows with one flow hash all climb to the same spine under ECMP;
     * adaptive routing spreads them over the three spines. */
    ics_time t[2];
    for (int adaptive = 0; adaptive < 2; adaptive++) {
        ics_net_params p = {.adaptive_routing = adaptive};
        rig g;
        rig_open(&g, "fattree-2tier.json", 0, &p);
        ics_time done[16];
        for (int i = 0; i < 16; i++)
            send(&g, ics_topo_gpu(g.t, i / 8, i % 8), ics_topo_gpu(g.t, 6 + i / 8, i % 8), 4 << 20,
                 0, done, (uint64_t)i);
        ics_engine_run(g.e, ICS_TIME_MAX);
        t[adaptive] = 0;
        for (int i = 0; i < 16; i++)
            t[adaptive] = MAX(t[adaptive], done[i]);
        rig_close(&g);
    }
    g_test_message("16 flows, one hash: ECMP %.1f us, adaptive %.1f us", t[0] / 1e6, t[1] / 1e6);
    g_assert_cmpfloat((double)t[1], <, 0.6 * t[0]);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/net/packet/idle/nvlink", test_idle_nvlink);
    g_test_add_func("/net/packet/idle/nvswitch", test_idle_nvswitch);
    g_test_add_func("/net/packet/idle/pcie", test_idle_pcie);
    g_test_add_func("/net/packet/idle/ib", test_idle_ib);
    g_test_add_func("/net/packet/incast", test_incast);
    g_test_add_func("/net/packet/pcie-shared-uplink", test_pcie_shared_uplink);
    g_test_add_func("/net/packet/trains-match-packets", test_trains_match_packets);
    g_test_add_func("/net/packet/packet-size-converges", test_packet_size_converges);
    g_test_add_func("/net/packet/conservation", test_conservation_and_rates);
    g_test_add_func("/net/packet/deterministic", test_deterministic);
    g_test_add_func("/net/packet/reduce-multicast", test_reduce_multicast);
    g_test_add_func("/net/packet/adaptive-routing", test_adaptive_routing);
    g_test_add_func("/net/packet/join-trains", test_join_trains);
    return g_test_run();
}
