/* The analytic (fluid) backend against closed forms and the physics it must reproduce: one
 * transfer on an idle path to the picosecond, striped or not; agreement with the packet backend
 * where nothing contends; N senders into one receiver share it fairly; two GPUs behind one PCIe
 * uplink get half each; NVLS reduce and multicast sharing links get half each; a 2:1 fat-tree
 * halves cross-spine throughput; bytes are conserved and no channel runs above its bandwidth;
 * runs repeat exactly. */
#include "core/core.h"
#include "hw/hw.h"
#include "net/net.h"
#include "topo/topo.h"

#include "net_rig.h"

#include <glib.h>
#include <glib/gstdio.h>
#include <math.h>
#include <string.h>

static void rig_open(rig *g, const char *model, int nodes)
{
    rig_open_with(g, model, nodes, "analytic", NULL);
}

/* The split the backends share: each path's weight in whole packets (rounded down), the rest
 * on the last path. */
static void split(const rig *g, const ics_route *r, uint64_t bytes, uint64_t *out)
{
    uint64_t left = bytes;
    for (int i = 0; i < r->n_paths; i++) {
        uint32_t payload = ics_net_packet_payload(g->t, &r->paths[i], 0);
        uint64_t share = left;
        if (i + 1 < r->n_paths)
            share = MIN(left, (uint64_t)(bytes * r->paths[i].weight / payload) * payload);
        out[i] = share;
        left -= share;
    }
}

/* One transfer alone: its time, run from t = 0. */
static ics_time run_one(rig *g, int src, int dst, uint64_t bytes)
{
    ics_time done[1] = {-1};
    send(g, src, dst, bytes, 0, done, 0);
    ics_engine_run(g->e, ICS_TIME_MAX);
    return done[0];
}

/* ---- closed forms ------------------------------------------------------------------------- */

static const uint64_t sizes[] = {1, 1000, 4096 + 7, 1 << 20, (64 << 20) + 123};

static void check_idle(const char *model, int nodes, const char *a, const char *b,
                       ics_chan_kind kind)
{
    for (size_t i = 0; i < G_N_ELEMENTS(sizes); i++) {
        rig g;
        rig_open(&g, model, nodes);
        int src = dev(&g, a), dst = dev(&g, b);
        ics_route r;
        g_assert_true(ics_route_find(g.t, src, dst, 0, &r));
        g_assert_cmpint(r.n_paths, ==, 1);
        g_assert_cmpint(ics_topo_chan_get(g.t, r.paths[0].chans[0])->kind, ==, kind);
        uint32_t payload = ics_net_packet_payload(g.t, &r.paths[0], 0);
        ics_time want = ics_net_idle_path_time(g.t, &r.paths[0], sizes[i], payload);
        ics_time got = run_one(&g, src, dst, sizes[i]);
        g_test_message("%s %s->%s (%d hops) %" G_GUINT64_FORMAT " B: %.6f us, closed form %.6f us",
                       model, a, b, r.paths[0].n_hops, sizes[i], got / 1e6, want / 1e6);
        g_assert_cmpint(got, ==, want);
        ics_route_clear(&r);
        rig_close(&g);
    }
}

static void test_idle_nvlink(void)
{
    rig g;
    rig_open(&g, "dgx1-v100.json", 0);
    int c = ics_topo_chan_between(g.t, dev(&g, "gpu0"), dev(&g, "gpu3"));
    g_assert_cmpint(ics_topo_chan_get(g.t, c)->width, ==, 2); /* NV2 */
    rig_close(&g);
    check_idle("dgx1-v100.json", 0, "gpu0", "gpu3", ICS_CHAN_NVLINK);
}

static void test_idle_pcie(void)
{
    check_idle("pcie-8gpu.json", 0, "gpu0", "gpu1", ICS_CHAN_PCIE);
}

static void test_idle_ib(void)
{
    check_idle("superpod-h100-ndr.json", 2, "0:gpu0", "1:gpu0", ICS_CHAN_PCIE);
}

/* NVSwitch striping on DGX H100: four paths (5/5/4/4 links), each an idle path of its own. */
static void test_idle_striped(void)
{
    const uint64_t bytes = (64 << 20) + 123;
    rig g;
    rig_open(&g, "dgx-h100.json", 0);
    int src = dev(&g, "gpu0"), dst = dev(&g, "gpu1");
    ics_route r;
    g_assert_true(ics_route_find(g.t, src, dst, 0, &r));
    g_assert_cmpint(r.n_paths, ==, 4);
    ics_time got = run_one(&g, src, dst, bytes);
    uint64_t share[4], total = 0;
    split(&g, &r, bytes, share);
    ics_time want = 0;
    for (int i = 0; i < 4; i++) {
        const ics_route_path *p = &r.paths[i];
        uint32_t payload = ics_net_packet_payload(g.t, p, 0);
        for (int h = 0; h < p->n_hops; h++)
            g_assert_cmpuint(ics_net_chan_bytes(g.n, p->chans[h]), ==, share[i]);
        if (i < 3)
            g_assert_cmpuint(share[i] % payload, ==, 0);
        total += share[i];
        ics_time t = ics_net_idle_path_time(g.t, p, share[i], payload);
        g_test_message("path %d (weight %.3f): %" G_GUINT64_FORMAT " B, %.4f us", i, p->weight,
                       share[i], t / 1e6);
        want = MAX(want, t);
    }
    g_assert_cmpuint(total, ==, bytes);
    g_test_message("striped 64 MiB gpu0->gpu1: %.4f us, slowest path %.4f us", got / 1e6,
                   want / 1e6);
    g_assert_cmpint(got, ==, want);
    ics_route_clear(&r);
    rig_close(&g);
}

/* Nothing to move: done fires at the current time, from an event, never inside the call. */
static void test_nothing_to_move(void)
{
    rig g;
    rig_open(&g, "dgx-h100.json", 0);
    ics_time done[2] = {-1, -1};
    ics_engine_run(g.e, 12345);
    send(&g, dev(&g, "gpu0"), dev(&g, "gpu0"), 1 << 20, 0, done, 0);
    send(&g, dev(&g, "gpu0"), dev(&g, "gpu1"), 0, 0, done, 1);
    g_assert_cmpint(done[0], ==, -1);
    g_assert_cmpint(done[1], ==, -1);
    ics_engine_run(g.e, ICS_TIME_MAX);
    g_assert_cmpint(done[0], ==, 12345);
    g_assert_cmpint(done[1], ==, 12345);
    ics_net_stats st;
    ics_net_get_stats(g.n, &st);
    g_assert_cmpuint(st.transfers, ==, 2);
    g_assert_cmpuint(st.bytes_delivered, ==, 0);
    rig_close(&g);
}

/* ---- agreement with the packet backend ------------------------------------------------------ */

typedef enum { OP_SEND, OP_MULTICAST, OP_REDUCE } op_kind;

static ics_time run_op(const char *backend, const char *model, int nodes, op_kind op, const char *a,
                       const char *b, uint64_t bytes)
{
    /* the packet backend one packet at a time: the reference its trains approximate */
    ics_net_params p = {.per_packet = true};
    rig g;
    rig_open_with(&g, model, nodes, backend, &p);
    ics_time done[1] = {-1};
    int gpus[8];
    for (int i = 0; i < 8; i++)
        gpus[i] = ics_topo_gpu(g.t, 0, i);
    if (op == OP_SEND)
        send(&g, dev(&g, a), dev(&g, b), bytes, 0, done, 0);
    else if (op == OP_MULTICAST)
        ics_net_multicast(g.n, dev(&g, a), dev(&g, b), gpus + 1, 7, bytes, record_done, done, 0);
    else
        ics_net_reduce(g.n, gpus, 8, dev(&g, b), gpus, 8, bytes, record_done, done, 0);
    ics_engine_run(g.e, ICS_TIME_MAX);
    rig_close(&g);
    return done[0];
}

static void test_agrees_with_packet(void)
{
    const struct {
        const char *model;
        int nodes;
        op_kind op;
        const char *a, *b;
    } cases[] = {
        {"dgx1-v100.json", 0, OP_SEND, "gpu0", "gpu3"},
        {"pcie-8gpu.json", 0, OP_SEND, "gpu0", "gpu7"},
        {"dgx-h100.json", 0, OP_SEND, "gpu0", "gpu5"},
        /* across nodes on one rail: one path (to another rail a send's NVSwitch paths meet
         * again at its PXN relay, where the backends share them differently: test_coll_streams,
         * /streams/backends-agree) */
        {"superpod-h100-ndr.json", 2, OP_SEND, "0:gpu0", "1:gpu0"},
        {"dgx-h100.json", 0, OP_MULTICAST, "gpu0", "nvsw0"},
        {"dgx-h100.json", 0, OP_REDUCE, "gpu0", "nvsw0"},
    };
    const uint64_t op_sizes[] = {1000, 1 << 20, (8 << 20) + 123};
    static const char *const names[] = {"send", "multicast", "reduce"};
    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++)
        for (size_t s = 0; s < G_N_ELEMENTS(op_sizes); s++) {
            ics_time an = run_op("analytic", cases[i].model, cases[i].nodes, cases[i].op,
                                 cases[i].a, cases[i].b, op_sizes[s]);
            ics_time pk = run_op("packet", cases[i].model, cases[i].nodes, cases[i].op, cases[i].a,
                                 cases[i].b, op_sizes[s]);
            g_test_message("%s %s %s->%s %" G_GUINT64_FORMAT " B: analytic %.6f us, packet "
                           "%.6f us",
                           cases[i].model, names[cases[i].op], cases[i].a, cases[i].b, op_sizes[s],
                           an / 1e6, pk / 1e6);
            g_assert_cmpint(an, ==, pk);
        }
}

/* ---- sharing ------------------------------------------------------------------------------ */

static void test_incast(void)
{
    const uint64_t bytes = 64 << 20;
    rig g;
    rig_open(&g, "dgx-h100.json", 0);
    int dst = ics_topo_gpu(g.t, 0, 0);
    ics_time alone = run_one(&g, ics_topo_gpu(g.t, 0, 1), dst, bytes);
    rig_close(&g);

    rig_open(&g, "dgx-h100.json", 0);
    ics_time done[8] = {0};
    for (int s = 1; s < 8; s++)
        send(&g, ics_topo_gpu(g.t, 0, s), dst, bytes, 0, done, (uint64_t)s);
    ics_engine_run(g.e, ICS_TIME_MAX);
    ics_time lo = done[1], hi = done[1];
    for (int s = 2; s < 8; s++) {
        lo = MIN(lo, done[s]);
        hi = MAX(hi, done[s]);
    }
    double ratio = (double)hi / (7.0 * alone);
    g_test_message("incast 7->1, 64 MiB each: alone %.3f us; together %.3f..%.3f us; "
                   "last / (7 x alone) = %.5f",
                   alone / 1e6, lo / 1e6, hi / 1e6, ratio);
    g_assert_cmpfloat((double)(hi - lo) / hi, <, 0.01);
    /* together = fixed part + 7 fluid parts, 7 x alone = 7 fixed parts + 7 fluid parts: just
     * under 1 by 6 fixed parts (well under a microsecond each) */
    g_assert_cmpfloat(ratio, >, 0.99);
    g_assert_cmpfloat(ratio, <=, 1.0);
    rig_close(&g);
}

static void test_pcie_shared_uplink(void)
{
    /* pcie-8gpu: gpu0 and gpu1 share switch pex0 and its uplink; gpu4 and gpu5 sit on the
     * other socket */
    const uint64_t bytes = 64 << 20;
    rig g;
    rig_open(&g, "pcie-8gpu.json", 0);
    ics_time one = run_one(&g, dev(&g, "gpu0"), dev(&g, "gpu4"), bytes);
    rig_close(&g);
    rig_open(&g, "pcie-8gpu.json", 0);
    ics_time two[2];
    send(&g, dev(&g, "gpu0"), dev(&g, "gpu4"), bytes, 0, two, 0);
    send(&g, dev(&g, "gpu1"), dev(&g, "gpu5"), bytes, 0, two, 1);
    ics_engine_run(g.e, ICS_TIME_MAX);
    double ratio = (double)MAX(two[0], two[1]) / one;
    g_test_message("PCIe shared uplink, 64 MiB: one %.3f us, two %.3f / %.3f us, ratio %.5f",
                   one / 1e6, two[0] / 1e6, two[1] / 1e6, ratio);
    g_assert_cmpint(two[0], ==, two[1]);
    /* 2 x (fixed + fluid) vs fixed + 2 x fluid: short of 2 by fixed / one (< 0.1% here) */
    g_assert_cmpfloat(ratio, >, 1.98);
    g_assert_cmpfloat(ratio, <=, 2.0);
    rig_close(&g);
}

/* NVLS: a reduce of all 8 GPUs and a multicast from gpu0, both through nvsw0, share gpu0's
 * uplink and the downlinks to gpus 1..7: each coupled op runs at half its rate. */
static void test_ops_share(void)
{
    const uint64_t bytes = 16 << 20;
    ics_time alone[2], both[2];
    for (int run = 0; run < 3; run++) {
        rig g;
        rig_open(&g, "dgx-h100.json", 0);
        int sw = dev(&g, "nvsw0"), gpus[8];
        for (int i = 0; i < 8; i++)
            gpus[i] = ics_topo_gpu(g.t, 0, i);
        ics_time *done = run < 2 ? alone : both;
        if (run != 1)
            ics_net_reduce(g.n, gpus, 8, sw, gpus, 8, bytes, record_done, done, 0);
        if (run != 0)
            ics_net_multicast(g.n, gpus[0], sw, gpus + 1, 7, bytes, record_done, done, 1);
        ics_engine_run(g.e, ICS_TIME_MAX);
        if (run == 2) {
            int up = ics_topo_chan_between(g.t, gpus[0], sw);
            int down0 = ics_topo_chan_between(g.t, sw, gpus[0]);
            int down1 = ics_topo_chan_between(g.t, sw, gpus[1]);
            g_assert_cmpuint(ics_net_chan_bytes(g.n, up), ==, 2 * bytes);
            g_assert_cmpuint(ics_net_chan_bytes(g.n, down0), ==, bytes);
            g_assert_cmpuint(ics_net_chan_bytes(g.n, down1), ==, 2 * bytes);
            ics_net_stats st;
            ics_net_get_stats(g.n, &st);
            g_assert_cmpuint(st.transfers, ==, 2);
            g_assert_cmpuint(st.bytes_delivered, ==, 15 * bytes);
        }
        rig_close(&g);
    }
    for (int i = 0; i < 2; i++) {
        double ratio = (double)both[i] / alone[i];
        g_test_message("%s 16 MiB on nvsw0: alone %.3f us, shared %.3f us, ratio %.5f",
                       i ? "multicast" : "reduce", alone[i] / 1e6, both[i] / 1e6, ratio);
        g_assert_cmpfloat(ratio, >, 1.99);
        g_assert_cmpfloat(ratio, <=, 2.0);
    }
}

/* The leaf a GPU's NIC hangs from. */
static int leaf_of_gpu(const rig *g, int gpu)
{
    int n, nic = ics_route_nic_of_gpu(g->t, gpu);
    const int *out = ics_topo_out(g->t, nic, &n);
    for (int i = 0; i < n; i++)
        if (ics_topo_chan_get(g->t, out[i])->kind == ICS_CHAN_NETWORK)
            return ics_topo_dev_get(g->t, ics_topo_chan_get(g->t, out[i])->dst)->local;
    return -1;
}

/* A multicast through a leaf switch that the GPUs reach through their NICs, to one GPU under
 * the same leaf, crosses exactly the channels of a send between the two: same time. */
static void test_multicast_via_nic(void)
{
    const uint64_t bytes = (4 << 20) + 5;
    ics_time t[2];
    for (int run = 0; run < 2; run++) {
        rig g;
        rig_open(&g, "superpod-h100-ndr.json", 2);
        int src = dev(&g, "0:gpu0"), dst = dev(&g, "1:gpu0");
        int leaf = ics_topo_net_switch(g.t, 1, leaf_of_gpu(&g, src));
        g_assert_cmpint(leaf_of_gpu(&g, src), ==, leaf_of_gpu(&g, dst));
        if (run == 0)
            send(&g, src, dst, bytes, 0, t, 0);
        else
            ics_net_multicast(g.n, src, leaf, &dst, 1, bytes, record_done, t, 1);
        ics_engine_run(g.e, ICS_TIME_MAX);
        rig_close(&g);
    }
    g_test_message("0:gpu0 -> 1:gpu0, 4 MiB: send %.6f us, multicast via the leaf %.6f us",
                   t[0] / 1e6, t[1] / 1e6);
    g_assert_cmpint(t[0], ==, t[1]);
}

/* The fabric switch a path climbs to (tier 2), or -1. */
static int spine_of(const rig *g, const ics_route *r)
{
    for (int h = 0; h < r->paths[0].n_hops; h++) {
        const ics_topo_dev *d =
            ics_topo_dev_get(g->t, ics_topo_chan_get(g->t, r->paths[0].chans[h])->dst);
        if (d->kind == ICS_DEV_NET_SWITCH && d->tier == 2)
            return d->local;
    }
    return -1;
}

/* A flow hash whose route climbs to spine `want`. */
static uint64_t hash_for_spine(const rig *g, int src, int dst, int want)
{
    for (uint64_t h = 0; h < 4096; h++) {
        ics_route r;
        g_assert_true(ics_route_find(g->t, src, dst, h, &r));
        int s = spine_of(g, &r);
        ics_route_clear(&r);
        if (s == want)
            return h;
    }
    g_error("no hash reaches spine %d", want);
}

/* Leaf-pair exchange across the spines: the GPUs under full leaf i and under full leaf
 * i + L/2 swap 32 MiB, the k-th GPU of one with the k-th of the other, and the k-th pair
 * climbs to spine k mod S (balanced ECMP). Returns the last completion time. Each GPU sends by
 * its own NIC (NCCL_PXN_DISABLE=1), so that a pair's traffic leaves by its leaves. */
static ics_time leaf_exchange(const char *model, const char *backend, uint64_t bytes, int *flows)
{
    rig g;
    rig_open_with(&g, model, 0, backend, NULL);
    ics_topo_set_paths(g.t, &(ics_topo_paths){-1, -1, -1, 0, 1, ""});
    const ics_fattree_plan *plan = ics_topo_fattree(g.t);
    int nleaves = plan->leaves, spines = plan->spines_per_pod;
    GArray **under = g_new(GArray *, nleaves);
    for (int l = 0; l < nleaves; l++)
        under[l] = g_array_new(FALSE, FALSE, sizeof(int));
    for (int node = 0; node < ics_topo_nodes(g.t); node++)
        for (int i = 0; i < ics_topo_gpus_per_node(g.t); i++) {
            int gpu = ics_topo_gpu(g.t, node, i);
            g_array_append_val(under[leaf_of_gpu(&g, gpu)], gpu);
        }
    int full = 0;
    while (full < nleaves && under[full]->len == under[0]->len)
        full++;
    full -= full % 2;
    ics_time *done = g_new0(ics_time, 2 * (size_t)full * under[0]->len);
    int nf = 0;
    for (int l = 0; l < full / 2; l++)
        for (guint k = 0; k < under[l]->len; k++) {
            int a = g_array_index(under[l], int, k);
            int b = g_array_index(under[l + full / 2], int, k);
            int spine = (int)(k % (guint)spines);
            send(&g, a, b, bytes, hash_for_spine(&g, a, b, spine), done, (uint64_t)nf++);
            send(&g, b, a, bytes, hash_for_spine(&g, b, a, spine), done, (uint64_t)nf++);
        }
    ics_engine_run(g.e, ICS_TIME_MAX);
    ics_time last = 0;
    for (int i = 0; i < nf; i++)
        last = MAX(last, done[i]);
    g_test_message("%s: %d leaves (%d exchanging, %u GPUs each), %d spines, %d flows: %.3f us",
                   model, nleaves, full, under[0]->len, spines, nf, last / 1e6);
    *flows = nf;
    for (int l = 0; l < nleaves; l++)
        g_array_free(under[l], TRUE);
    g_free(under);
    g_free(done);
    rig_close(&g);
    return last;
}

static void test_oversubscription(void)
{
    char *dir = g_build_filename(ICS_BINARY_DIR, "test_net_analytic_tmp", NULL);
    g_mkdir_with_parents(dir, 0755);
    char *node = g_build_filename(ICS_SOURCE_DIR, "hwmodels", "dgx-h100.json", NULL);
    char *cat = g_build_filename(ICS_SOURCE_DIR, "hwmodels", "catalog.json", NULL);
    char *text = g_strdup_printf(
        "{\"kind\": \"cluster\", \"name\": \"fattree-2tier at 1:1\", \"catalog\": \"%s\",\n"
        " \"node\": \"%s\", \"nodes\": 32,\n"
        " \"fabric\": {\"topology\": \"fat-tree\", \"tiers\": 2, \"switch\": \"quantum2\",\n"
        "            \"oversubscription\": 1, \"rail_optimized\": false, \"sharp\": false}}\n",
        cat, node);
    char *path = g_build_filename(dir, "fattree-2tier-1to1.json", NULL);
    g_assert_true(g_file_set_contents(path, text, -1, NULL));
    /* both backends: the packet one on smaller transfers, to stay quick */
    const char *backends[] = {"analytic", "packet"};
    const uint64_t xfer_bytes[] = {32 << 20, 2 << 20};
    for (int b = 0; b < 2; b++) {
        int f2, f1;
        ics_time t2 = leaf_exchange("fattree-2tier.json", backends[b], xfer_bytes[b], &f2);
        ics_time t1 = leaf_exchange(path, backends[b], xfer_bytes[b], &f1);
        double ratio = (double)t2 / t1;
        g_test_message("%s: per-flow cross-spine throughput, 1:1 over 2:1: %.4f", backends[b],
                       ratio);
        g_assert_cmpfloat(ratio, >=, 1.9);
        g_assert_cmpfloat(ratio, <=, 2.1);
    }
    g_free(text);
    g_free(path);
    g_free(node);
    g_free(cat);
    g_free(dir);
}

/* ---- invariants --------------------------------------------------------------------------- */

static void test_conservation_and_rates(void)
{
    rig g;
    rig_open(&g, "dgx-h100.json", 0);
    later l[MIXED];
    ics_time done[MIXED];
    mixed_scenario(&g, l, done);
    ics_engine_run(g.e, ICS_TIME_MAX);
    ics_time end = 0;
    uint64_t *want = g_new0(uint64_t, ics_topo_nchans(g.t));
    uint32_t *payload = g_new0(uint32_t, ics_topo_nchans(g.t));
    uint64_t sent = 0;
    for (int i = 0; i < MIXED; i++) {
        end = MAX(end, done[i]);
        ics_route r;
        g_assert_true(ics_route_find(g.t, l[i].x.src, l[i].x.dst, 0, &r));
        uint64_t share[16];
        g_assert_cmpint(r.n_paths, <=, 16);
        split(&g, &r, l[i].x.bytes, share);
        for (int p = 0; p < r.n_paths; p++)
            for (int h = 0; h < r.paths[p].n_hops; h++) {
                want[r.paths[p].chans[h]] += share[p];
                payload[r.paths[p].chans[h]] = ics_net_packet_payload(g.t, &r.paths[p], 0);
            }
        sent += l[i].x.bytes;
        ics_route_clear(&r);
    }
    double busiest = 0;
    for (int c = 0; c < ics_topo_nchans(g.t); c++) {
        uint64_t b = ics_net_chan_bytes(g.n, c);
        g_assert_cmpuint(b, ==, want[c]);
        if (b == 0)
            continue;
        /* in wire bytes, against the channel's capacity, over the whole run */
        double wire = (double)b * ics_net_wire_bytes(g.t, c, payload[c]) / payload[c];
        double use = wire / ics_time_to_s(end) / ics_topo_chan_get(g.t, c)->bw_bytes_per_s;
        busiest = MAX(busiest, use);
        g_assert_cmpfloat(use, <=, 1.0);
    }
    g_test_message("mixed: %d transfers, %.3f us; busiest channel at %.4f of its wire rate", MIXED,
                   end / 1e6, busiest);
    ics_net_stats st;
    ics_net_get_stats(g.n, &st);
    g_assert_cmpuint(st.transfers, ==, MIXED);
    g_assert_cmpuint(st.bytes_delivered, ==, sent);
    g_free(want);
    g_free(payload);
    rig_close(&g);
}

static void test_deterministic(void)
{
    ics_time a[MIXED], b[MIXED];
    for (int run = 0; run < 2; run++) {
        rig g;
        rig_open(&g, "dgx-h100.json", 0);
        later l[MIXED];
        mixed_scenario(&g, l, run ? b : a);
        ics_engine_run(g.e, ICS_TIME_MAX);
        rig_close(&g);
    }
    g_assert_cmpmem(a, sizeof a, b, sizeof b);
}

/* The local computation (net_analytic.c, "Locality") gives the global one's times to the
 * picosecond: mixed
 * transfers inside a DGX H100 (shared NVSwitch links) and random ones across a 4-node fat-tree
 * with 2:1 leaves (shared uplinks), starting at staggered and at equal instants. */
static void run_random(const char *model, int nodes, bool full, ics_time *done, int count)
{
    ics_net_params p = {.full_shares = full};
    rig g;
    rig_open_with(&g, model, nodes, "analytic", &p);
    later *l = g_new(later, count);
    int ngpu = ics_topo_nodes(g.t) * ics_topo_gpus_per_node(g.t);
    GRand *rnd = g_rand_new_with_seed(7);
    for (int i = 0; i < count; i++) {
        int src = g_rand_int_range(rnd, 0, ngpu),
            dst = (src + 1 + g_rand_int_range(rnd, 0, ngpu - 1)) % ngpu;
        int gpn = ics_topo_gpus_per_node(g.t);
        l[i] = (later){&g,
                       {.src = ics_topo_gpu(g.t, src / gpn, src % gpn),
                        .dst = ics_topo_gpu(g.t, dst / gpn, dst % gpn),
                        .bytes = (uint64_t)g_rand_int_range(rnd, 1, 64 << 20),
                        .flow_hash = (uint64_t)i,
                        .done = record_done,
                        .ctx = done,
                        .tag = (uint64_t)i}};
        /* in bursts of four at one instant */
        ics_engine_at(g.e, (ics_time)(i / 4) * 50 * ICS_PS_PER_US, ev_send, &l[i], 0);
    }
    ics_engine_run(g.e, ICS_TIME_MAX);
    g_rand_free(rnd);
    g_free(l);
    rig_close(&g);
}

static void test_locality(void)
{
    const struct {
        const char *model;
        int nodes;
    } cases[] = {{"dgx-h100.json", 0}, {"superpod-h100-ndr.json", 4}};
    enum { N = 200 };
    for (size_t c = 0; c < G_N_ELEMENTS(cases); c++) {
        ics_time a[N], b[N];
        run_random(cases[c].model, cases[c].nodes, false, a, N);
        run_random(cases[c].model, cases[c].nodes, true, b, N);
        for (int i = 0; i < N; i++)
            g_assert_cmpint(a[i], ==, b[i]);
    }
    ics_time a[MIXED], b[MIXED];
    for (int full = 0; full < 2; full++) {
        ics_net_params p = {.full_shares = full};
        rig g;
        rig_open_with(&g, "dgx-h100.json", 0, "analytic", &p);
        later l[MIXED];
        mixed_scenario(&g, l, full ? b : a);
        ics_engine_run(g.e, ICS_TIME_MAX);
        rig_close(&g);
    }
    g_assert_cmpmem(a, sizeof a, b, sizeof b);
}

/* Dominance (net_analytic.c): resources that can never saturate (a GPU's PCIe hops to its NIC,
 * which carry the NIC link's flows at more capacity) are left out of the fair share, with the
 * same speeds to the bit. Every GPU of 4 DGX H100 on the 2:1 fat-tree sends to every GPU of
 * the other nodes, sizes varied so that flows end at many instants; full_shares (no locality,
 * no dominance) must give the same completion times, while walking at least twice the uses
 * per flow (measured: 10 against 2; the 4 nodes share a leaf, so only the NICs' links bind). */
static void test_dominance(void)
{
    enum { NODES = 4, GPN = 8, N = NODES * GPN * (NODES - 1) * GPN };
    static ics_time done[2][N];
    double per_flow[2];
    for (int full = 0; full < 2; full++) {
        ics_net_params p = {.full_shares = full};
        rig g;
        rig_open_with(&g, "fattree-2tier.json", NODES, "analytic", &p);
        int i = 0;
        for (int a = 0; a < NODES * GPN; a++)
            for (int b = 0; b < NODES * GPN; b++) {
                if (a / GPN == b / GPN)
                    continue;
                ics_net_xfer x = {.src = ics_topo_gpu(g.t, a / GPN, a % GPN),
                                  .dst = ics_topo_gpu(g.t, b / GPN, b % GPN),
                                  .bytes = (uint64_t)(1 + (a * 7 + b * 13) % 16) << 20,
                                  .flow_hash = (uint64_t)i,
                                  .done = record_done,
                                  .ctx = done[full],
                                  .tag = (uint64_t)i};
                ics_net_send(g.n, &x);
                i++;
            }
        g_assert_cmpint(i, ==, N);
        ics_engine_run(g.e, ICS_TIME_MAX);
        ics_net_stats st;
        ics_net_get_stats(g.n, &st);
        g_assert_cmpuint(st.transfers, ==, N);
        per_flow[full] = (double)st.share_uses / (double)MAX(st.share_flows, 1);
        g_test_message("%s: %" G_GUINT64_FORMAT " flow speeds, %.2f uses each",
                       full ? "full shares" : "default", st.share_flows, per_flow[full]);
        rig_close(&g);
    }
    g_assert_cmpmem(done[0], sizeof done[0], done[1], sizeof done[1]);
    g_assert_cmpfloat(per_flow[0], <, 0.5 * per_flow[1]);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/net/analytic/idle/nvlink", test_idle_nvlink);
    g_test_add_func("/net/analytic/idle/pcie", test_idle_pcie);
    g_test_add_func("/net/analytic/idle/ib", test_idle_ib);
    g_test_add_func("/net/analytic/idle/striped", test_idle_striped);
    g_test_add_func("/net/analytic/nothing-to-move", test_nothing_to_move);
    g_test_add_func("/net/analytic/agrees-with-packet", test_agrees_with_packet);
    g_test_add_func("/net/analytic/incast", test_incast);
    g_test_add_func("/net/analytic/pcie-shared-uplink", test_pcie_shared_uplink);
    g_test_add_func("/net/analytic/ops-share", test_ops_share);
    g_test_add_func("/net/analytic/multicast-via-nic", test_multicast_via_nic);
    g_test_add_func("/net/analytic/oversubscription", test_oversubscription);
    g_test_add_func("/net/analytic/conservation", test_conservation_and_rates);
    g_test_add_func("/net/analytic/deterministic", test_deterministic);
    g_test_add_func("/net/analytic/locality", test_locality);
    g_test_add_func("/net/analytic/dominance", test_dominance);
    return g_test_run();
}
