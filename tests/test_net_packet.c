/* The packet backend against closed forms and the physics it must reproduce: one transfer on an
 * idle path to the picosecond; N senders into one receiver share it fairly; two GPUs behind one
 * PCIe uplink get half each; a 2:1 fat-tree halves cross-spine throughput; trains agree with
 * per-packet runs; packets of shrinking size converge; bytes are conserved; runs repeat. Flows
 * that meet take turns (bounded trains): fair shares and max-min leftovers within stated
 * bounds of the fluid model and of packet-by-packet runs, a bounded number of turns whatever
 * the bytes, bytes conserved, runs repeated. */
#include "core/core.h"
#include "hw/hw.h"
#include "net/net.h"
#include "topo/topo.h"

#include "net_rig.h"

#include <glib.h>
#include <glib/gstdio.h>
#include <math.h>
#include <string.h>

static void rig_open(rig *g, const char *model, int nodes, const ics_net_params *p)
{
    rig_open_with(g, model, nodes, "packet", p);
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
    /* contended: 3 flows through NVSwitch into one GPU plus one passing; trains where a path is
     * free and packets where flows meet (per_packet_shared) against packets everywhere */
    ics_time done[2][4];
    for (int pp = 0; pp < 2; pp++) {
        ics_net_params p = {.per_packet = pp, .per_packet_shared = !pp, .train_bytes = 256 << 10};
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

/* ---- turns: flows that meet --------------------------------------------------------------- */

typedef struct {
    const char *a, *b; /* device names */
    uint64_t bytes, hash;
} flow_spec;

/* Runs flows on a fresh rig with params p (backend "packet" unless analytic); their ends in
 * done[], the channels' bytes in chan_bytes[] if not NULL, the stats in *st if not NULL. */
static void run_flows(const char *model, int nodes, const char *backend, const ics_net_params *p,
                      const flow_spec *fl, int nf, ics_time *done, uint64_t *chan_bytes,
                      ics_net_stats *st)
{
    rig g;
    rig_open(&g, model, nodes, p);
    if (strcmp(backend, "packet") != 0) {
        ics_net_free(g.n);
        g.n = ics_net_new(ics_net_backend(backend), g.t, g.e, p);
    }
    for (int i = 0; i < nf; i++) {
        int a = ics_topo_find(g.t, fl[i].a), b = ics_topo_find(g.t, fl[i].b);
        g_assert_cmpint(a, >=, 0);
        g_assert_cmpint(b, >=, 0);
        send(&g, a, b, fl[i].bytes, fl[i].hash, done, (uint64_t)i);
    }
    ics_engine_run(g.e, ICS_TIME_MAX);
    for (int c = 0; chan_bytes && c < ics_topo_nchans(g.t); c++)
        chan_bytes[c] = ics_net_chan_bytes(g.n, c);
    if (st)
        ics_net_get_stats(g.n, st);
    rig_close(&g);
}

static double rel_gap(ics_time a, ics_time b)
{
    return fabs((double)a - (double)b) / (double)b;
}

/* Four 16 MiB flows from one GPU to one GPU of the next node (the same NIC, its PCIe switch and
 * leaf): each gets a quarter, so all end when one flow of 64 MiB alone would, within 0.1% (the
 * fair share; measured 0.07%), and within 0.1% of the packet-by-packet run (0.04%); two flows
 * of 16 and 2 MiB: the small one ends when 2 x 2 MiB alone would, within 2% (one turn of it is
 * 1/32 of its bytes; measured 1.1%, packets 0.1%), the large one when 18 MiB alone would. */
static void test_turns_fair_share(void)
{
    const char *model = "superpod-h100-ndr.json";
    const flow_spec four[] = {{"0:gpu0", "1:gpu0", 16 << 20, 1},
                              {"0:gpu0", "1:gpu0", 16 << 20, 2},
                              {"0:gpu0", "1:gpu0", 16 << 20, 3},
                              {"0:gpu0", "1:gpu0", 16 << 20, 4}};
    const flow_spec one64[] = {{"0:gpu0", "1:gpu0", 64 << 20, 1}};
    ics_net_params turns = {0}, packets = {.per_packet = true};
    ics_time t[4], pk[4], fair[1];
    run_flows(model, 2, "packet", &turns, four, 4, t, NULL, NULL);
    run_flows(model, 2, "packet", &packets, four, 4, pk, NULL, NULL);
    run_flows(model, 2, "packet", &turns, one64, 1, fair, NULL, NULL);
    for (int i = 0; i < 4; i++) {
        g_test_message("4 x 16 MiB, flow %d: turns %.3f us, packets %.3f us, fair share %.3f us", i,
                       t[i] / 1e6, pk[i] / 1e6, fair[0] / 1e6);
        g_assert_cmpfloat(rel_gap(t[i], fair[0]), <, 0.001);
        g_assert_cmpfloat(rel_gap(t[i], pk[i]), <, 0.001);
    }
    const flow_spec two[] = {{"0:gpu0", "1:gpu0", 16 << 20, 1}, {"0:gpu0", "1:gpu0", 2 << 20, 2}};
    const flow_spec small2[] = {{"0:gpu0", "1:gpu0", 4 << 20, 1}};
    const flow_spec all18[] = {{"0:gpu0", "1:gpu0", 18 << 20, 1}};
    ics_time f2[2], p2[2], fs[1], fl[1];
    run_flows(model, 2, "packet", &turns, two, 2, f2, NULL, NULL);
    run_flows(model, 2, "packet", &packets, two, 2, p2, NULL, NULL);
    run_flows(model, 2, "packet", &turns, small2, 1, fs, NULL, NULL);
    run_flows(model, 2, "packet", &turns, all18, 1, fl, NULL, NULL);
    g_test_message("16 + 2 MiB: small %.3f us (packets %.3f, fair %.3f), large %.3f us "
                   "(packets %.3f, fair %.3f)",
                   f2[1] / 1e6, p2[1] / 1e6, fs[0] / 1e6, f2[0] / 1e6, p2[0] / 1e6, fl[0] / 1e6);
    g_assert_cmpfloat(rel_gap(f2[1], fs[0]), <, 0.02);
    g_assert_cmpfloat(rel_gap(f2[1], p2[1]), <, 0.02);
    g_assert_cmpfloat(rel_gap(f2[0], fl[0]), <, 0.001);
    g_assert_cmpfloat(rel_gap(f2[0], p2[0]), <, 0.001);
}

/* pcie-8gpu: gpu1, gpu2 and gpu3 each send 4 MiB to gpu0 (a third of its link each), and gpu1
 * also sends 8 MiB to gpu2 across the CPUs: that flow shares only gpu1's uplink with the first,
 * so it gets what the first leaves (max-min: the 20 GB/s CPU hop is then its bottleneck). The
 * analytic backend computes max-min exactly; the turns agree within 1.5% (measured 0.8%; 0.2%
 * with train_share 128). Packet by packet, the shared input buffers add head-of-line
 * blocking, so that flow takes 48% longer there: a difference the turns do not model. */
static void test_turns_max_min(void)
{
    const flow_spec fl[] = {{"gpu1", "gpu0", 4 << 20, 0},
                            {"gpu2", "gpu0", 4 << 20, 0},
                            {"gpu3", "gpu0", 4 << 20, 0},
                            {"gpu1", "gpu2", 8 << 20, 0}};
    ics_net_params turns = {0}, fine = {.train_share = 128};
    ics_time t[4], f[4], a[4];
    run_flows("pcie-8gpu.json", 0, "packet", &turns, fl, 4, t, NULL, NULL);
    run_flows("pcie-8gpu.json", 0, "packet", &fine, fl, 4, f, NULL, NULL);
    run_flows("pcie-8gpu.json", 0, "analytic", &turns, fl, 4, a, NULL, NULL);
    for (int i = 0; i < 4; i++) {
        g_test_message("flow %d: turns %.3f us, train_share 128 %.3f us, max-min %.3f us", i,
                       t[i] / 1e6, f[i] / 1e6, a[i] / 1e6);
        g_assert_cmpfloat(rel_gap(t[i], a[i]), <, 0.015);
        g_assert_cmpfloat(rel_gap(f[i], a[i]), <=, rel_gap(t[i], a[i]) + 0.001);
    }
}

/* An all-to-all inside a DGX H100 (every GPU 4 MiB to every other, 56 flows meeting on every
 * NVSwitch port): all end within 0.1% of the fluid model's common end (measured 0.05%); the
 * channels carry exactly the bytes they carry packet by packet; a second run is identical. */
static void test_turns_all_to_all(void)
{
    flow_spec fl[56];
    char names[56][2][8];
    int nf = 0;
    for (int a = 0; a < 8; a++)
        for (int b = 0; b < 8; b++)
            if (a != b) {
                g_snprintf(names[nf][0], 8, "gpu%d", a);
                g_snprintf(names[nf][1], 8, "gpu%d", b);
                fl[nf] = (flow_spec){names[nf][0], names[nf][1], 4 << 20, (uint64_t)nf};
                nf++;
            }
    rig g;
    rig_open(&g, "dgx-h100.json", 0, NULL);
    int nc = ics_topo_nchans(g.t);
    rig_close(&g);
    uint64_t *bytes[3] = {g_new(uint64_t, nc), g_new(uint64_t, nc), g_new(uint64_t, nc)};
    ics_time t[2][56], pk[56], fluid[56];
    ics_net_stats st[2];
    ics_net_params turns = {0}, packets = {.per_packet = true};
    for (int run = 0; run < 2; run++)
        run_flows("dgx-h100.json", 0, "packet", &turns, fl, nf, t[run], bytes[run], &st[run]);
    run_flows("dgx-h100.json", 0, "packet", &packets, fl, nf, pk, bytes[2], NULL);
    run_flows("dgx-h100.json", 0, "analytic", &turns, fl, nf, fluid, NULL, NULL);
    ics_time lo = t[0][0], hi = 0, end = 0;
    for (int i = 0; i < nf; i++) {
        lo = MIN(lo, t[0][i]);
        hi = MAX(hi, t[0][i]);
        end = MAX(end, fluid[i]);
    }
    g_test_message(
        "all-to-all 8 x 7 x 4 MiB: turns end %.3f..%.3f us, fluid %.3f us, %" G_GUINT64_FORMAT
        " turns",
        lo / 1e6, hi / 1e6, end / 1e6, st[0].trains);
    g_assert_cmpfloat(rel_gap(lo, end), <, 0.001);
    g_assert_cmpfloat(rel_gap(hi, end), <, 0.001);
    g_assert_cmpmem(t[0], sizeof t[0], t[1], sizeof t[1]);
    g_assert_cmpuint(st[0].trains, ==, st[1].trains);
    g_assert_cmpmem(bytes[0], sizeof(uint64_t) * (size_t)nc, bytes[1],
                    sizeof(uint64_t) * (size_t)nc);
    g_assert_cmpmem(bytes[0], sizeof(uint64_t) * (size_t)nc, bytes[2],
                    sizeof(uint64_t) * (size_t)nc);
    g_assert_cmpuint(st[0].bytes_delivered, ==, (uint64_t)nf * (4 << 20));
    for (int i = 0; i < 3; i++)
        g_free(bytes[i]);
}

/* A batch (ics_net_batch): one GPU's 64 messages of 480 KiB to the 8 GPUs of the next node
 * (through the 8 NICs: PXN relays each by the destination's rail). Its legs take turns sized by
 * the batch, one turn of 1/train_share of its bytes; so its last leg ends within one such turn
 * (1/32 of the batch's time) of when the same legs sent one by one end (measured 1.3% later:
 * coarser turns leave a NIC its last leg alone at the end; the fluid stream 1.5% before the
 * sends, 2.8% before the batch), with at most half their turns (measured 748 against 2,407;
 * the 540-rank Polaris all-to-all's smaller legs, 57 times fewer); runs repeat to the
 * picosecond. */
enum { BATCH_LEGS = 64 };

static ics_time run_batch(const char *backend, bool batch, ics_net_stats *st)
{
    rig g;
    rig_open_with(&g, "superpod-h100-ndr.json", 2, backend, NULL);
    ics_net_leg legs[BATCH_LEGS];
    for (int i = 0; i < BATCH_LEGS; i++) {
        char dst[16];
        g_snprintf(dst, sizeof dst, "1:gpu%d", i % 8);
        legs[i] = (ics_net_leg){dev(&g, "0:gpu0"), dev(&g, dst), 480 << 10, (uint64_t)i};
    }
    ics_time done[1] = {-1};
    if (batch)
        ics_net_batch(g.n, legs, BATCH_LEGS, record_done, done, 0);
    else
        ics_net_stream_as_sends(g.n, legs, BATCH_LEGS, record_done, done, 0);
    ics_engine_run(g.e, ICS_TIME_MAX);
    if (st)
        ics_net_get_stats(g.n, st);
    rig_close(&g);
    return done[0];
}

static void test_turns_batch(void)
{
    ics_net_stats as_batch, as_sends, again;
    ics_time b = run_batch("packet", true, &as_batch), s = run_batch("packet", false, &as_sends);
    ics_time fluid = run_batch("analytic", true, NULL);
    g_test_message("64 x 480 KiB by one NIC: batch %.3f us in %" G_GUINT64_FORMAT
                   " turns, sends %.3f us in %" G_GUINT64_FORMAT " turns, fluid %.3f us",
                   b / 1e6, as_batch.trains, s / 1e6, as_sends.trains, fluid / 1e6);
    g_assert_cmpfloat(rel_gap(b, s), <, 1.0 / 32);
    g_assert_cmpuint(as_batch.trains * 2, <=, as_sends.trains);
    g_assert_cmpint(run_batch("packet", true, &again), ==, b);
    g_assert_cmpuint(again.trains, ==, as_batch.trains);
    g_assert_cmpuint(as_batch.bytes_delivered, ==, (uint64_t)BATCH_LEGS * (480 << 10));
}

/* The events a flow costs do not grow with its bytes: two flows sharing a NIC take about
 * train_share turns each plus a few halving ones at the end, at 16 MiB as at 128 MiB (from
 * there on, turns of train_bytes: 1 GiB takes 256 each). No packet is simulated alone. */
static void test_turns_bounded(void)
{
    uint64_t sizes[2] = {16 << 20, 128 << 20}, turns[2];
    for (int i = 0; i < 2; i++) {
        const flow_spec fl[] = {{"0:gpu0", "1:gpu0", sizes[i], 1},
                                {"0:gpu0", "1:gpu0", sizes[i], 2}};
        ics_net_params p = {0};
        ics_time t[2];
        ics_net_stats st;
        run_flows("superpod-h100-ndr.json", 2, "packet", &p, fl, 2, t, NULL, &st);
        turns[i] = st.trains;
        g_assert_cmpuint(st.packets, ==, 0);
        g_test_message("2 x %" G_GUINT64_FORMAT " MiB on one NIC: %" G_GUINT64_FORMAT " turns",
                       sizes[i] >> 20, st.trains);
    }
    g_assert_cmpuint(turns[0], <=, 2 * (32 + 8));
    g_assert_cmpuint(turns[1], <=, 2 * (32 + 8));
}

/* ---- flows of 2^32 packets and more ------------------------------------------------------- */

/* When an NVLS reduce of `bytes` over gpu0..gpu(n-1) of a DGX H100, alone, ends. */
static ics_time reduce_alone(const ics_net_params *p, int n, uint64_t bytes)
{
    rig g;
    rig_open(&g, "dgx-h100.json", 0, p);
    int sw = ics_topo_find(g.t, "nvsw0"), gpus[8];
    for (int i = 0; i < n; i++)
        gpus[i] = ics_topo_gpu(g.t, 0, i);
    ics_time done[1] = {-1};
    ics_net_reduce(g.n, gpus, n, sw, gpus, n, bytes, record_done, done, 0);
    ics_engine_run(g.e, ICS_TIME_MAX);
    rig_close(&g);
    return done[0];
}

/* User sizes reach 2^32 packets (`icsim collective sendrecv -e 8192G` is 2^35 of 256 B), which
 * the hops' 32-bit counts cannot hold: trains and turns count in the flow's 64 bits. Here
 * 64-byte packets make 256 GiB 2^32 + 1 packets. A send alone takes the closed form to the
 * picosecond; two sharing a path each end within 0.1% of one flow of both their bytes (the
 * fair share), every byte delivered; an uncontended reduce grows by the same time for each
 * 2^31 packets more, below 2^32 and above it (its pipeline is linear in the packets). */
static void test_huge_flows(void)
{
    const uint64_t pk = 64, big = (pk << 32) + 5; /* 2^32 full packets, then one of 5 bytes */
    ics_net_params p = {.packet_bytes = pk};
    const flow_spec one[] = {{"gpu0", "gpu1", big, 0}};
    const flow_spec two[] = {{"gpu0", "gpu1", big, 0}, {"gpu0", "gpu1", big, 1}};
    const flow_spec both[] = {{"gpu0", "gpu1", 2 * big, 0}};
    ics_time alone[1], shared[2], fair[1];
    ics_net_stats st;
    run_flows("pcie-8gpu.json", 0, "packet", &p, one, 1, alone, NULL, NULL);
    run_flows("pcie-8gpu.json", 0, "packet", &p, two, 2, shared, NULL, &st);
    run_flows("pcie-8gpu.json", 0, "packet", &p, both, 1, fair, NULL, NULL);
    rig g;
    rig_open(&g, "pcie-8gpu.json", 0, &p);
    ics_time want =
        closed_form(&g, ics_topo_find(g.t, "gpu0"), ics_topo_find(g.t, "gpu1"), big, pk);
    rig_close(&g);
    g_test_message("2^32 + 1 packets: alone %.3f us (closed form %.3f us); two sharing %.3f, "
                   "%.3f us (fair share %.3f us)",
                   alone[0] / 1e6, want / 1e6, shared[0] / 1e6, shared[1] / 1e6, fair[0] / 1e6);
    g_assert_cmpint(alone[0], ==, want);
    for (int i = 0; i < 2; i++)
        g_assert_cmpfloat(rel_gap(shared[i], fair[0]), <, 0.001);
    g_assert_cmpuint(st.bytes_delivered, ==, 2 * big);
    g_assert_cmpuint(st.transfers, ==, 2);
    ics_time t[3];
    for (int i = 0; i < 3; i++) /* 2^30, 2^30 + 2^31 and 2^30 + 2^32 packets */
        t[i] = reduce_alone(&p, 2, (((uint64_t)1 << 30) + ((uint64_t)i << 31) - 1) * pk + 5);
    g_test_message("reduce of 2^30 (+ 2^31, + 2^32) packets: %.3f, %.3f, %.3f us", t[0] / 1e6,
                   t[1] / 1e6, t[2] / 1e6);
    g_assert_cmpint(t[1] - t[0], >, 0);
    g_assert_cmpint(t[2] - t[1], ==, t[1] - t[0]);
}

/* 100 queue pairs a connection (NCCL_IB_QPS_PER_CONNECTION, route.c): a route of 100 paths,
 * past the 64 flows a transfer may hold, whose last flow takes what the others leave: every
 * byte delivered, and no faster than one pair through the same NIC. */
static void test_many_queue_pairs(void)
{
    const uint64_t bytes = 64 << 20;
    ics_time t[2];
    for (int k = 0; k < 2; k++) {
        rig g;
        rig_open(&g, "superpod-h100-ndr.json", 2, &(ics_net_params){0});
        ics_topo_set_paths(g.t, &(ics_topo_paths){-1, -1, -1, k ? 100 : 1, 0, ""});
        send(&g, ics_topo_gpu(g.t, 0, 0), ics_topo_gpu(g.t, 1, 0), bytes, 0, &t[k], 0);
        ics_engine_run(g.e, ICS_TIME_MAX);
        ics_net_stats st;
        ics_net_get_stats(g.n, &st);
        g_assert_cmpuint(st.bytes_delivered, ==, bytes);
        rig_close(&g);
    }
    g_test_message("64 MiB: one queue pair %.3f us, 100 %.3f us", t[0] / 1e6, t[1] / 1e6);
    g_assert_cmpint(t[1], >=, t[0]);
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
    g_test_add_func("/net/packet/turns/fair-share", test_turns_fair_share);
    g_test_add_func("/net/packet/turns/max-min", test_turns_max_min);
    g_test_add_func("/net/packet/turns/all-to-all", test_turns_all_to_all);
    g_test_add_func("/net/packet/turns/bounded", test_turns_bounded);
    g_test_add_func("/net/packet/turns/batch", test_turns_batch);
    g_test_add_func("/net/packet/huge-flows", test_huge_flows);
    g_test_add_func("/net/packet/many-queue-pairs", test_many_queue_pairs);
    return g_test_run();
}
