/* Collectives: every operation runs on every shipped single-node model and on a cluster, on both
 * backends, with times that grow with size; the backends agree; the tuner obeys NCCL's
 * variables; the bandwidths at large sizes are what the links and NCCL's documented
 * efficiencies allow; runs repeat exactly. */
#include "collectives/comm.h"
#include "collectives/ring_order.h"
#include "collectives/tuner.h"
#include "hw/hw.h"
#include "coll_rig.h"

#include <glib.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>

static const ics_coll_tuning auto_tuning = {.nvls_enable = true};

static double busbw(const rig *g, ics_coll_op op, uint64_t size, ics_time t)
{
    return (double)size / ics_time_to_s(t) / 1e9 * ics_coll_busbw_factor(op, ics_comm_nranks(g->c));
}

static void test_factors(void)
{
    g_assert_cmpfloat(ics_coll_busbw_factor(ICS_COLL_ALL_REDUCE, 8), ==, 14.0 / 8);
    g_assert_cmpfloat(ics_coll_busbw_factor(ICS_COLL_ALL_GATHER, 8), ==, 7.0 / 8);
    g_assert_cmpfloat(ics_coll_busbw_factor(ICS_COLL_ALLTOALL, 16), ==, 15.0 / 16);
    g_assert_cmpfloat(ics_coll_busbw_factor(ICS_COLL_BROADCAST, 8), ==, 1.0);
    g_assert_cmpfloat(ics_coll_busbw_factor(ICS_COLL_SENDRECV, 8), ==, 1.0);
}

static void test_every_op_everywhere(void)
{
    const char *models[] = {"dgx1-p100.json", "dgx1-v100.json",          "dgx2.json",
                            "dgx-a100.json",  "dgx-h100.json",           "hgx-b200.json",
                            "pcie-8gpu.json", "pcie-nvlink-bridge.json", "gb200-nvl72.json"};
    for (size_t m = 0; m < G_N_ELEMENTS(models); m++)
        for (int be = 0; be < 2; be++) {
            rig g;
            rig_open(&g, models[m], 0, 0, be ? "packet" : "analytic");
            for (int op = 0; op < ICS_COLL_OP_COUNT; op++) {
                ics_time prev = 0;
                for (uint64_t size = 1024; size <= (64u << 20); size *= 64) {
                    ics_coll_result r = rig_run(&g, (ics_coll_op)op, size, &auto_tuning);
                    g_assert_cmpint(r.time_ps, >, prev);
                    prev = r.time_ps;
                }
            }
            rig_close(&g);
        }
}

/* The seven operations also run on every shipped cluster (2 nodes), on both backends, with
 * times that grow with size. */
static void test_every_op_clusters(void)
{
    const char *models[] = {"superpod-a100-hdr.json", "superpod-h100-ndr.json",
                            "fattree-2tier.json", "fattree-3tier.json"};
    for (size_t m = 0; m < G_N_ELEMENTS(models); m++)
        for (int be = 0; be < 2; be++) {
            rig g;
            rig_open(&g, models[m], 2, 0, be ? "packet" : "analytic");
            for (int op = 0; op < ICS_COLL_OP_COUNT; op++) {
                ics_time prev = 0;
                for (uint64_t size = 4096; size <= (16u << 20); size *= 64) {
                    ics_coll_result r = rig_run(&g, (ics_coll_op)op, size, &auto_tuning);
                    g_assert_cmpint(r.time_ps, >, prev);
                    prev = r.time_ps;
                }
            }
            rig_close(&g);
        }
}

/* DGX-1's hybrid cube-mesh: every channel's ring crosses NVLinks only (as NCCL's search finds
 * them), and the 12 channels load each bonded link evenly; on NVSwitch the rings stay rotations
 * of rank order. */
static void test_nvlink_rings(void)
{
    rig g;
    rig_open(&g, "dgx1-v100.json", 0, 0, "analytic");
    int ranks[8];
    for (int i = 0; i < 8; i++)
        ranks[i] = ics_topo_gpu(g.t, 0, i);
    g_assert_true(ics_ring_orders_differ(g.t, ranks, 8));
    int load[8][8] = {{0}};
    for (int ch = 0; ch < 12; ch++) {
        int order[8];
        ics_ring_order(g.t, ranks, 8, ch, order);
        bool seen[8] = {false};
        for (int i = 0; i < 8; i++) {
            int a = order[i], b = order[(i + 1) % 8];
            g_assert_false(seen[a]);
            seen[a] = true;
            int c = ics_topo_chan_between(g.t, ranks[a], ranks[b]);
            g_assert_cmpint(c, >=, 0);
            g_assert_cmpint(ics_topo_chan_get(g.t, c)->kind, ==, ICS_CHAN_NVLINK);
            load[a][b]++;
        }
    }
    /* 12 channels x 8 hops over 24 bonded links (48 NVLinks one way): 2 channels per NVLink */
    for (int a = 0; a < 8; a++)
        for (int b = 0; b < 8; b++) {
            int c = a == b ? -1 : ics_topo_chan_between(g.t, ranks[a], ranks[b]);
            if (c >= 0)
                g_assert_cmpint(load[a][b], ==, 2 * ics_topo_chan_get(g.t, c)->width);
        }
    rig_close(&g);
    rig_open(&g, "dgx-h100.json", 0, 0, "analytic");
    for (int i = 0; i < 8; i++)
        ranks[i] = ics_topo_gpu(g.t, 0, i);
    g_assert_false(ics_ring_orders_differ(g.t, ranks, 8));
    int order[8];
    ics_ring_order(g.t, ranks, 8, 3, order);
    for (int i = 0; i < 8; i++)
        g_assert_cmpint(order[i], ==, (3 + i) % 8);
    rig_close(&g);
}

static void test_cluster(void)
{
    rig g;
    rig_open(&g, "superpod-h100-ndr.json", 2, 0, "packet");
    /* the ring: NCCL's tuner takes NVLS-Tree here (test_coll_tree.c), whose busbw the ring's
     * normalization does not bound */
    ics_coll_tuning ring = auto_tuning;
    ring.algos = ICS_COLL_SET(ICS_ALGO_RING);
    ics_coll_result r = rig_run(&g, ICS_COLL_ALL_REDUCE, 256u << 20, &ring);
    double bw = busbw(&g, ICS_COLL_ALL_REDUCE, 256u << 20, r.time_ps);
    g_test_message("2 x DGX H100 all-reduce 256 MiB: %s %s, busbw %.1f GB/s",
                   ics_coll_algo_name(r.algo), ics_coll_proto_name(r.proto), bw);
    /* Every ring link carries 2(n-1)/n of a channel's data, busbw's own normalization, and
     * the 8 channels leave each node over its 8 NDR NICs: busbw is bounded by 8 x 50 GB/s.
     * (10 real DGX H100-class nodes measure 345 GB/s: xxrjun_h100_10node_8gpn_all_reduce.) */
    g_assert_cmpfloat(bw, <, 400.0);
    g_assert_cmpfloat(bw, >, 100.0);
    rig_close(&g);
}

static void test_backends_agree(void)
{
    ics_time t[2][ICS_COLL_OP_COUNT];
    for (int be = 0; be < 2; be++) {
        rig g;
        rig_open(&g, "dgx-h100.json", 0, 0, be ? "packet" : "analytic");
        for (int op = 0; op < ICS_COLL_OP_COUNT; op++)
            t[be][op] = rig_run(&g, (ics_coll_op)op, 256u << 20, &auto_tuning).time_ps;
        rig_close(&g);
    }
    for (int op = 0; op < ICS_COLL_OP_COUNT; op++) {
        double rel = fabs((double)t[0][op] - t[1][op]) / t[1][op];
        g_test_message("%s 256 MiB: analytic %.2f us, packet %.2f us (%.3f%%)",
                       ics_coll_op_name((ics_coll_op)op), t[0][op] / 1e6, t[1][op] / 1e6,
                       100 * rel);
        g_assert_cmpfloat(rel, <, 0.01);
    }
}

static void test_tuner_obeys(void)
{
    rig g;
    rig_open(&g, "dgx-h100.json", 0, 0, "analytic");
    ics_coll_result r = rig_run(&g, ICS_COLL_ALL_REDUCE, 1u << 30, &auto_tuning);
    g_assert_cmpint(r.algo, ==, ICS_ALGO_NVLS); /* large all-reduce on NVSwitch gen3 */
    ics_coll_tuning no_nvls = auto_tuning;
    no_nvls.nvls_enable = false;
    r = rig_run(&g, ICS_COLL_ALL_REDUCE, 1u << 30, &no_nvls);
    g_assert_cmpint(r.algo, ==, ICS_ALGO_RING);
    ics_coll_tuning ll = auto_tuning;
    ll.protos = ICS_COLL_SET(ICS_PROTO_LL);
    ll.algos = ICS_COLL_SET(ICS_ALGO_RING);
    ll.max_channels = 2;
    r = rig_run(&g, ICS_COLL_ALL_REDUCE, 1u << 30, &ll);
    g_assert_cmpint(r.proto, ==, ICS_PROTO_LL);
    g_assert_cmpint(r.nchannels, <=, 2);
    r = rig_run(&g, ICS_COLL_ALL_REDUCE, 8, &auto_tuning);
    g_assert_cmpint(r.proto, ==, ICS_PROTO_LL); /* tiny messages: lowest latency */
    rig_close(&g);

    rig_open(&g, "dgx-a100.json", 0, 0, "analytic");
    ics_coll_req req = {.op = ICS_COLL_ALL_REDUCE, .size_bytes = 1 << 20, .dtype_bytes = 4};
    ics_coll_tuning nvls = auto_tuning;
    nvls.algos = ICS_COLL_SET(ICS_ALGO_NVLS);
    ics_coll_result out;
    g_assert_false(ics_comm_run(g.c, &req, &nvls, &out)); /* NVSwitch gen2 has no NVLS */
    rig_close(&g);

    g_setenv("NCCL_ALGO", "ring", TRUE);
    g_setenv("NCCL_PROTO", "bogus", TRUE);
    ics_coll_tuning env;
    GError *err = NULL;
    ics_coll_tuning_from_env(&env, NULL, &err);
    g_assert_cmpuint(env.algos, ==, ICS_COLL_SET(ICS_ALGO_RING));
    g_assert_cmpuint(env.protos, ==, 0);
    g_assert_error(err, ICS_ERROR, ICS_ERROR_INPUT); /* a warning: the rest still applies */
    g_clear_error(&err);
    g_unsetenv("NCCL_ALGO");
    g_unsetenv("NCCL_PROTO");
}

/* NCCL_ALGO and NCCL_PROTO as NCCL's parseList reads them: lists, '^' negation, any case;
 * unknown names skipped and reported. */
/* NCCL's LL128 default (tuning.cc): off on a PCIe-only node (the ranks' rings are not on NVLink)
 * and before Volta, on with NVLink (DGX A100, the DGX-1V mesh whose rings are NVLink-only, a
 * 2-node SuperPOD with PXB NICs); naming it in NCCL_PROTO enables it anyway. Sizes 8 B..1 GiB. */
static bool picks_ll128(const char *model, int nodes, const ics_coll_tuning *tu)
{
    rig g;
    rig_open(&g, model, nodes, 0, "analytic");
    bool any = false;
    for (uint64_t size = 8; size <= (1u << 30); size *= 8)
        any |= rig_run(&g, ICS_COLL_ALL_REDUCE, size, tu).proto == ICS_PROTO_LL128;
    rig_close(&g);
    return any;
}

/* Out of place, an all-gather's first step copies the rank's own part to its output as it
 * sends it (directCopySend). On 2 ranks that is every step: each CTA stores twice what it
 * sends, so 2 B200s (32 channels at 35 GB/s a CTA, 1120 GB/s) run at most 560 GB/s where their
 * NVLinks carry 715 (the GKE A4 log: 483 out of place, 564 in place, at 8 GiB); on 8 DGX H100
 * GPUs the extra eighth hides in the CTAs' slack over the links (24 x 19.35 = 464 GB/s against
 * NCCL's 371), so the all-gather keeps the links' rate. */
static void test_all_gather_copy(void)
{
    const ics_coll_tuning simple = {.algos = ICS_COLL_SET(ICS_ALGO_RING),
                                    .protos = ICS_COLL_SET(ICS_PROTO_SIMPLE)};
    rig g;
    rig_open(&g, "hgx-b200.json", 0, 2, "analytic");
    ics_tuner tu;
    ics_tuner_init(&tu, g.t, g.ranks, g.n);
    ics_coll_req req = {.op = ICS_COLL_ALL_GATHER, .size_bytes = 1u << 30, .dtype_bytes = 4};
    ics_tuner_price p;
    ics_tuner_price_call(&tu, &req, &simple, ICS_ALGO_RING, ICS_PROTO_SIMPLE, &p);
    ics_coll_result r = rig_run(&g, ICS_COLL_ALL_GATHER, 1u << 30, &simple);
    /* each rank sends its half, storing it twice */
    double stores = (double)(1u << 30), cta = (double)r.nchannels * (double)p.cta_bytes_per_s;
    g_assert_cmpfloat(r.time_ps / 1e12, >=, stores / cta);
    g_test_message("2 x B200 1 GiB: all-gather %.1f us, CTA bound %.1f us", r.time_ps / 1e6,
                   stores / cta * 1e6);
    rig_close(&g);
    rig_open(&g, "dgx-h100.json", 0, 0, "analytic");
    double bus = 1e12 * (double)(1u << 30) * 7 / 8 /
                 (double)rig_run(&g, ICS_COLL_ALL_GATHER, 1u << 30, &simple).time_ps / 1e9;
    g_test_message("8 x H100 1 GiB all-gather: %.1f GB/s busbw", bus);
    g_assert_cmpfloat(bus, >, 0.97 * 18 * 20.6); /* within 3% of NCCL's 18 x 20.6 GB/s */
    rig_close(&g);
}

static void test_ll128_default(void)
{
    g_assert_false(picks_ll128("pcie-8gpu.json", 0, &auto_tuning));
    g_assert_false(picks_ll128("dgx1-p100.json", 0, &auto_tuning));
    g_assert_true(picks_ll128("dgx-a100.json", 0, &auto_tuning));
    g_assert_true(picks_ll128("dgx1-v100.json", 0, &auto_tuning));
    g_assert_true(picks_ll128("superpod-h100-ndr.json", 2, &auto_tuning));
    /* across nodes on Hopper: up to PXN (tuning.cc). GH200 reaches its NIC through its Grace
     * (P2C): on; Snellius, each GPU PIX from a NIC with GDR: on. Without GDR the traffic goes
     * through host memory (a PHB step at the CPU): off, on Ampere at PHB (Polaris' default
     * rules) and on a DGX H100 with NCCL_NET_GDR_LEVEL=LOC */
    g_assert_true(picks_ll128("alps-gh200.json", 2, &auto_tuning));
    g_assert_true(picks_ll128("snellius-h100.json", 2, &auto_tuning));
    g_assert_false(picks_ll128("polaris.json", 2, &auto_tuning));
    rig g; /* the rule set before the communicator, as the CLI sets NCCL_NET_GDR_LEVEL */
    rig_open(&g, "superpod-h100-ndr.json", 2, 0, "analytic");
    ics_comm_free(g.c);
    ics_topo_set_paths(g.t, &(ics_topo_paths){-1, ICS_PATH_LOC, -1, 0, 0, ""});
    g.c = ics_comm_new(g.t, ics_net_backend("analytic"), g.ranks, g.n, NULL);
    for (uint64_t size = 8; size <= (1u << 30); size *= 8)
        g_assert_cmpint(rig_run(&g, ICS_COLL_ALL_REDUCE, size, &auto_tuning).proto, !=,
                        ICS_PROTO_LL128);
    rig_close(&g);
    ics_coll_tuning forced = auto_tuning;
    forced.protos = ICS_COLL_SET(ICS_PROTO_LL128);
    g_assert_true(picks_ll128("pcie-8gpu.json", 0, &forced));
}

/* NCCL's graphs across nodes (search.cc): a channel per NIC at the fastest speed of its list
 * the NIC carries, doubled from 25 GB/s except on Hopper+ below 50 GB/s with more than 4
 * channels. DGX H100 on NDR: 8 at 48 GB/s; DGX A100 on HDR: 8 at 24; Snellius (4 x 200 Gb/s):
 * 4 at 24. On two nodes NCCL prices every algorithm by its intra-node bandwidth, which a tree
 * graph raises up to twice the network's: a 1 GiB all-reduce on 2 Snellius nodes runs Tree
 * (measured 154 GB/s busbw, above the ring's 100), on 2 DGX A100 Ring (8 tree channels at
 * Ampere's 23.6 GB/s ceiling price the tree at 94 GB/s algbw, the ring at 102). */
static int graph_channels(const char *model)
{
    rig g;
    rig_open(&g, model, 2, 0, "analytic");
    ics_tuner tu;
    ics_tuner_init(&tu, g.t, g.ranks, g.n);
    int nch = tu.graph_channels;
    rig_close(&g);
    return nch;
}

/* What NCCL printed for a real run (validate/data/nccl/info/, NCCL INFO lines kept verbatim):
 * every rank's "N coll channels, ..." line agrees, and the model's tuner runs N; with `gdr`,
 * every network connection is "/GDRDMA" and the model's ranks reach their NICs with GDR. */
static void check_nccl_info(const char *file, const char *model, int nodes, bool gdr)
{
    char *path = g_build_filename(ICS_SOURCE_DIR, "validate", "data", "nccl", "info", file, NULL);
    char *text = NULL;
    g_assert_true(g_file_get_contents(path, &text, NULL, NULL));
    GRegex *re = g_regex_new("NCCL INFO (\\d+) coll channels", 0, 0, NULL);
    GMatchInfo *mi = NULL;
    int coll = -1, lines = 0, net = 0;
    g_regex_match(re, text, 0, &mi);
    for (; g_match_info_matches(mi); g_match_info_next(mi, NULL), lines++) {
        char *n = g_match_info_fetch(mi, 1);
        g_assert_true(coll < 0 || coll == atoi(n)); /* every rank the same */
        coll = atoi(n);
        g_free(n);
    }
    g_match_info_free(mi);
    g_regex_unref(re);
    char **rows = g_strsplit(text, "\n", -1);
    for (char **r = rows; *r; r++)
        if (strstr(*r, " via NET/") && **r != '#') {
            net++;
            g_assert_true(!gdr || g_str_has_suffix(g_strchomp(*r), "/GDRDMA"));
        }
    g_strfreev(rows);
    g_assert_cmpint(lines, ==, 8); /* 2 nodes x 4 GPUs */
    g_assert_cmpint(net, >, 0);
    rig g;
    rig_open(&g, model, nodes, 0, "analytic");
    ics_tuner tu;
    ics_tuner_init(&tu, g.t, g.ranks, g.n);
    g_test_message("%s: NCCL printed %d coll channels; the model runs %d", file, coll,
                   ics_tuner_nccl_channels(&tu));
    g_assert_cmpint(ics_tuner_nccl_channels(&tu), ==, coll);
    for (int i = 0; gdr && i < g.n; i++) {
        int nic = ics_route_nic_of_gpu(g.t, g.ranks[i]);
        g_assert_true(ics_topo_uses_gdr(g.t, g.ranks[i], nic, true));
        g_assert_true(ics_topo_uses_gdr(g.t, g.ranks[i], nic, false));
    }
    /* "A[a] -> B[b] [send] via NET/IB/n(p)": rank A sends to B through rank p's NIC (PXN);
     * without "(p)" through its own. The model's sends leave by the same GPU (route.c,
     * ics_route_send_nic). */
    GRegex *send_re = g_regex_new(
        "(\\d+)\\[\\d+\\] -> (\\d+)\\[\\d+\\] \\[send\\] via NET/[^/]+/\\d+(\\((\\d+)\\))?", 0, 0,
        NULL);
    int sends = 0, relayed = 0;
    g_regex_match(send_re, text, 0, &mi);
    for (; g_match_info_matches(mi); g_match_info_next(mi, NULL), sends++) {
        char *a = g_match_info_fetch(mi, 1), *b = g_match_info_fetch(mi, 2),
             *p = g_match_info_fetch(mi, 4);
        int want = p && *p ? atoi(p) : atoi(a), via;
        relayed += want != atoi(a);
        ics_route_send_nic(g.t, g.ranks[atoi(a)], g.ranks[atoi(b)], 0, &via);
        g_assert_cmpint(via, ==, g.ranks[want]);
        g_free(a);
        g_free(b);
        g_free(p);
    }
    g_match_info_free(mi);
    g_regex_unref(send_re);
    g_test_message("%s: %d sends across the network, %d through a peer's NIC (PXN)", file, sends,
                   relayed);
    g_assert_cmpint(sends, >, 0);
    rig_close(&g);
    g_free(text);
    g_free(path);
}

/* Snellius (NCCL 2.22.3 at its default GDR level) and Polaris (NCCL 2.20.5, a run of the same
 * repository that printed its NCCL INFO lines; GDR there needs NCCL_NET_GDR_LEVEL=PHB, which
 * ALCF sets, so it is not checked against the default rules). */
static void test_nccl_info(void)
{
    check_nccl_info("snellius_h100x4_2node_nccl_info.txt", "snellius-h100.json", 2, true);
    check_nccl_info("alcf_polaris_a100x4_2node_nccl_info.txt", "polaris.json", 2, false);
}

static void test_two_node_graphs(void)
{
    g_assert_cmpint(graph_channels("superpod-h100-ndr.json"), ==, 8);
    g_assert_cmpint(graph_channels("superpod-a100-hdr.json"), ==, 8);
    g_assert_cmpint(graph_channels("snellius-h100.json"), ==, 4);
    g_assert_cmpint(graph_channels("aws-p4de.json"), ==, 4); /* 4 EFA at 12 GB/s, not doubled */
    ics_coll_tuning no_nvls = auto_tuning;
    no_nvls.nvls_enable = false;
    rig g;
    rig_open(&g, "snellius-h100.json", 2, 0, "analytic");
    ics_coll_result r = rig_run(&g, ICS_COLL_ALL_REDUCE, 1u << 30, &auto_tuning);
    g_assert_cmpint(r.algo, ==, ICS_ALGO_TREE);
    /* its log: "8 coll channels, ..., 8 p2p channels, 2 p2p channels per peer" (twice the
     * graph's 4; ncclTopoComputeP2pChannels): 8 ranks share the 8 p2p channels, one each while
     * a peer's part is at most one 128 KiB network step, then the peer's two (enqueue.cc: parts
     * of half to one step across nodes) */
    ics_tuner tu;
    ics_tuner_init(&tu, g.t, g.ranks, g.n);
    g_assert_cmpint(ics_tuner_nccl_channels(&tu), ==, 8);
    g_assert_cmpint(rig_run(&g, ICS_COLL_ALLTOALL, 1u << 20, &auto_tuning).nchannels, ==, 1);
    g_assert_cmpint(rig_run(&g, ICS_COLL_ALLTOALL, 8u << 20, &auto_tuning).nchannels, ==, 2);
    g_assert_cmpint(rig_run(&g, ICS_COLL_ALLTOALL, 1u << 30, &auto_tuning).nchannels, ==, 2);
    rig_close(&g);
    /* NCCL 2.29 across nodes: the channels per peer halved until every peer fits one round of
     * the p2p channels, 8 a channel (paths.cc): 80 ranks over 16 p2p channels get one (4, then
     * 2, x 10 rounds > 16), which is what the 10 x 8 H100 send/recv log runs at (15.2 GB/s);
     * 10 ranks of one GPU a node over 4 p2p channels keep two */
    rig_open(&g, "superpod-h100-ndr.json", 10, 0, "analytic");
    g_assert_cmpint(rig_run(&g, ICS_COLL_SENDRECV, 1u << 30, &auto_tuning).nchannels, ==, 1);
    rig_close(&g);
    rig_open(&g, "superpod-h100-ndr.json", 10, 1, "analytic");
    g_assert_cmpint(rig_run(&g, ICS_COLL_SENDRECV, 1u << 30, &auto_tuning).nchannels, ==, 2);
    rig_close(&g);
    /* and a peer across the network gets a channel per 14 GB/s of its GPU's NICs (paths.cc):
     * 4 for a DGX H100's 400 Gb/s NIC, where the two DGX nodes' send/recv logs reach 44-46 GB/s
     * (two channels gave 30.9) */
    rig_open(&g, "superpod-h100-ndr.json", 2, 0, "analytic");
    ics_coll_result sr = rig_run(&g, ICS_COLL_SENDRECV, 4ull << 30, &auto_tuning);
    g_assert_cmpint(sr.nchannels, ==, 4);
    double gbps = (double)(4ull << 30) / ics_time_to_s(sr.time_ps) / 1e9;
    g_assert_cmpfloat(gbps, >, 42.0);
    g_assert_cmpfloat(gbps, <, 50.0);
    rig_close(&g);
    /* AWS p4de, 2 x 8 A100 on 4 x 100 Gb/s EFA: Tree too (the log's 78 GB/s busbw at 2 GiB is
     * above the 50 a ring can reach through 4 EFAs) */
    rig_open(&g, "aws-p4de.json", 2, 0, "analytic");
    r = rig_run(&g, ICS_COLL_ALL_REDUCE, 1u << 30, &auto_tuning);
    g_assert_cmpint(r.algo, ==, ICS_ALGO_TREE);
    rig_close(&g);
    rig_open(&g, "superpod-a100-hdr.json", 2, 0, "analytic");
    r = rig_run(&g, ICS_COLL_ALL_REDUCE, 1u << 30, &no_nvls);
    g_assert_cmpint(r.algo, ==, ICS_ALGO_RING);
    rig_close(&g);
}

/* NCCL's point-to-point protocol (enqueue.cc): LL while a peer's bytes fit in 16 KiB
 * (NCCL_P2P_LL_THRESHOLD) per channel, Simple beyond, never LL128 and no cost estimate. A 2 x 8
 * H100 all-to-all of 256 KiB sends 16 KiB to each peer: LL; of 1 MiB, 64 KiB: Simple (it ran
 * LL128 up to 64 MiB before). A DGX H100 send/recv of 8 KiB: LL; of 64 KiB: Simple. */
static void test_p2p_protocol(void)
{
    rig g;
    rig_open(&g, "superpod-h100-ndr.json", 2, 0, "analytic");
    g_assert_cmpint(rig_run(&g, ICS_COLL_ALLTOALL, 256 << 10, &auto_tuning).proto, ==,
                    ICS_PROTO_LL);
    for (uint64_t size = 1 << 20; size <= (256u << 20); size *= 4)
        g_assert_cmpint(rig_run(&g, ICS_COLL_ALLTOALL, size, &auto_tuning).proto, ==,
                        ICS_PROTO_SIMPLE);
    rig_close(&g);
    rig_open(&g, "dgx-h100.json", 0, 0, "analytic");
    g_assert_cmpint(rig_run(&g, ICS_COLL_SENDRECV, 8 << 10, &auto_tuning).proto, ==, ICS_PROTO_LL);
    g_assert_cmpint(rig_run(&g, ICS_COLL_SENDRECV, 64 << 10, &auto_tuning).proto, ==,
                    ICS_PROTO_SIMPLE);
    rig_close(&g);
}

/* NCCL_P2P_NET_CHUNKSIZE and NCCL_BUFFSIZE (init.cc computeBuffSizes): a 512 KiB point-to-point
 * step across nodes takes a quarter of the default 128 KiB steps' synchronizations, so the
 * all-to-all is faster; a 1 MiB Simple buffer caps a step at 128 KiB, the default again. The
 * variables are read from the environment, a bad value named in the warning. */
static void test_p2p_chunks(void)
{
    rig g;
    rig_open(&g, "superpod-h100-ndr.json", 4, 0, "analytic");
    uint64_t size = 64 << 20;
    ics_time def = rig_run(&g, ICS_COLL_ALLTOALL, size, &auto_tuning).time_ps;
    ics_coll_tuning big = auto_tuning;
    big.p2p_net_chunk = 512 << 10;
    ics_time fast = rig_run(&g, ICS_COLL_ALLTOALL, size, &big).time_ps;
    g_assert_cmpint(fast, <, def);
    big.buffsize = 1 << 20;
    g_assert_cmpint(rig_run(&g, ICS_COLL_ALLTOALL, size, &big).time_ps, ==, def);
    rig_close(&g);
    g_setenv("NCCL_P2P_NET_CHUNKSIZE", "524288", TRUE);
    g_setenv("NCCL_BUFFSIZE", "lots", TRUE);
    ics_coll_tuning env;
    GError *err = NULL;
    ics_coll_tuning_from_env(&env, NULL, &err);
    g_assert_cmpint(env.p2p_net_chunk, ==, 512 << 10);
    g_assert_cmpint(env.buffsize, ==, 0);
    g_assert_error(err, ICS_ERROR, ICS_ERROR_INPUT);
    g_assert_nonnull(strstr(err->message, "NCCL_BUFFSIZE"));
    g_clear_error(&err);
    g_unsetenv("NCCL_P2P_NET_CHUNKSIZE");
    g_unsetenv("NCCL_BUFFSIZE");
}

/* NCCL_BUFFSIZE sets a ring's Simple chunk (4 steps of an eighth of it) and a chain's step:
 * smaller buffers cut a ring all-reduce into more slices, each followed by its CTA's sync
 * (slower), and pipeline a broadcast's chain more finely (faster). */
static void test_ring_buffsize(void)
{
    rig g;
    rig_open(&g, "dgx-h100.json", 0, 0, "analytic");
    ics_coll_tuning ring = auto_tuning;
    ring.algos = ICS_COLL_SET(ICS_ALGO_RING);
    ring.protos = ICS_COLL_SET(ICS_PROTO_SIMPLE);
    ics_time t[3];
    const int buff[3] = {256 << 10, 1 << 20, 0};
    for (int i = 0; i < 3; i++) {
        ring.buffsize = buff[i];
        t[i] = rig_run(&g, ICS_COLL_ALL_REDUCE, 1u << 30, &ring).time_ps;
        g_test_message("ring all-reduce 1 GiB, NCCL_BUFFSIZE %d: %.1f us", buff[i], t[i] / 1e6);
    }
    g_assert_cmpint(t[0], >, t[1]);
    g_assert_cmpint(t[1], >, t[2]);
    ring.buffsize = 1 << 20;
    ics_time fine = rig_run(&g, ICS_COLL_BROADCAST, 64 << 20, &ring).time_ps;
    ring.buffsize = 0;
    ics_time def = rig_run(&g, ICS_COLL_BROADCAST, 64 << 20, &ring).time_ps;
    g_test_message("broadcast 64 MiB: %.1f us with 1 MiB buffers, %.1f us with 4 MiB", fine / 1e6,
                   def / 1e6);
    g_assert_cmpint(fine, <, def);
    rig_close(&g);
}

/* One node without NVLink: NCCL's 128 KiB PCIe step makes a peer's parts an eighth to 32 steps
 * (16 KiB to 4 MiB, enqueue.cc), so send/recv runs a second channel above 4 MiB (the NVLink
 * step's 16 MiB held until 2026-11-30). */
static void test_pcie_p2p_parts(void)
{
    rig g;
    rig_open(&g, "pcie-8gpu.json", 0, 0, "analytic");
    g_assert_cmpint(rig_run(&g, ICS_COLL_SENDRECV, 4u << 20, &auto_tuning).nchannels, ==, 1);
    g_assert_cmpint(rig_run(&g, ICS_COLL_SENDRECV, 8u << 20, &auto_tuning).nchannels, ==, 2);
    rig_close(&g);
}

/* NCCL_NCHANNELS_PER_NET_PEER sets the channels of a peer across the network, and NCCL then
 * keeps them at scale (paths.cc); NCCL_P2P_PER_CHANNEL_NET_BW is what each of NCCL's own
 * counts for: 30 GB/s a channel gives a 400 Gb/s NIC 2 channels, not 4. Out of range: warned
 * about, NCCL's default kept. */
static void test_net_peer_env(void)
{
    rig g;
    rig_open(&g, "superpod-h100-ndr.json", 10, 0, "analytic");
    ics_coll_tuning set = auto_tuning;
    set.net_peer_channels = 4;
    g_assert_cmpint(rig_run(&g, ICS_COLL_SENDRECV, 1u << 30, &auto_tuning).nchannels, ==, 1);
    g_assert_cmpint(rig_run(&g, ICS_COLL_SENDRECV, 1u << 30, &set).nchannels, ==, 4);
    rig_close(&g);
    rig_open(&g, "superpod-h100-ndr.json", 2, 0, "analytic");
    ics_coll_tuning wide = auto_tuning;
    wide.p2p_channel_net_gbps = 30;
    g_assert_cmpint(rig_run(&g, ICS_COLL_SENDRECV, 1u << 30, &wide).nchannels, ==, 2);
    rig_close(&g);
    g_setenv("NCCL_NCHANNELS_PER_NET_PEER", "0", TRUE);
    g_setenv("NCCL_P2P_PER_CHANNEL_NET_BW", "30", TRUE);
    ics_coll_tuning env;
    GError *err = NULL;
    ics_coll_tuning_from_env(&env, NULL, &err);
    g_assert_cmpint(env.net_peer_channels, ==, 0);
    g_assert_cmpint(env.p2p_channel_net_gbps, ==, 30);
    g_assert_error(err, ICS_ERROR, ICS_ERROR_INPUT);
    g_assert_nonnull(strstr(err->message, "NCCL_NCHANNELS_PER_NET_PEER"));
    g_clear_error(&err);
    g_unsetenv("NCCL_NCHANNELS_PER_NET_PEER");
    g_unsetenv("NCCL_P2P_PER_CHANNEL_NET_BW");
}

static void test_tuning_sets(void)
{
    char *bad = NULL;
    g_assert_cmpuint(ics_coll_algos_parse("Ring,Tree", &bad), ==,
                     ICS_COLL_SET(ICS_ALGO_RING) | ICS_COLL_SET(ICS_ALGO_TREE));
    g_assert_null(bad);
    g_assert_cmpuint(ics_coll_algos_parse("ring,,TREE", &bad), ==,
                     ICS_COLL_SET(ICS_ALGO_RING) | ICS_COLL_SET(ICS_ALGO_TREE));
    unsigned all = ICS_COLL_SET(ICS_ALGO_COUNT) - 1;
    g_assert_cmpuint(ics_coll_algos_parse("^NVLS", &bad), ==, all & ~ICS_COLL_SET(ICS_ALGO_NVLS));
    g_assert_cmpuint(ics_coll_algos_parse("^", &bad), ==, all);
    g_assert_cmpuint(ics_coll_protos_parse("^LL128", &bad), ==,
                     ICS_COLL_SET(ICS_PROTO_LL) | ICS_COLL_SET(ICS_PROTO_SIMPLE));
    g_assert_cmpuint(ics_coll_algos_parse("Ring,foo,bar", &bad), ==, ICS_COLL_SET(ICS_ALGO_RING));
    g_assert_cmpstr(bad, ==, "foo");
    g_clear_pointer(&bad, g_free);
    g_assert_cmpuint(ics_coll_protos_parse("^LL,LL128,Simple", &bad), ==, 0);
    g_assert_null(bad);

    /* the tuner takes the cheapest allowed: NVLS on one DGX H100 at 1 GiB, else the ring */
    rig g;
    rig_open(&g, "dgx-h100.json", 0, 0, "analytic");
    ics_coll_tuning tu = auto_tuning;
    g_assert_cmpint(rig_run(&g, ICS_COLL_ALL_REDUCE, 1u << 30, &tu).algo, ==, ICS_ALGO_NVLS);
    tu.algos = ics_coll_algos_parse("^NVLS", &bad);
    g_assert_cmpint(rig_run(&g, ICS_COLL_ALL_REDUCE, 1u << 30, &tu).algo, ==, ICS_ALGO_RING);
    tu.algos = ics_coll_algos_parse("Ring,Tree", &bad);
    g_assert_cmpint(rig_run(&g, ICS_COLL_ALL_REDUCE, 1u << 30, &tu).algo, ==, ICS_ALGO_RING);
    /* Tree inside one node only when nothing else may run */
    tu.algos = ics_coll_algos_parse("Tree", &bad);
    g_assert_cmpint(rig_run(&g, ICS_COLL_ALL_REDUCE, 1u << 30, &tu).algo, ==, ICS_ALGO_TREE);
    tu.protos = ics_coll_protos_parse("^Simple,LL128", &bad);
    g_assert_cmpint(rig_run(&g, ICS_COLL_ALL_REDUCE, 1u << 30, &tu).proto, ==, ICS_PROTO_LL);
    rig_close(&g);
}

/* One rank: no algorithm, whatever the tuning; a copy that reads and writes the buffer at the
 * GPU's streaming HBM rate after a launch. */
static void test_one_rank(void)
{
    rig g;
    rig_open(&g, "dgx-h100.json", 0, 1, "packet");
    g_assert_cmpint(ics_comm_nranks(g.c), ==, 1);
    const ics_hw_gpu_type *gpu = ics_hw_node_of(g.hw)->gpu_type;
    ics_coll_tuning forced = {.algos = ICS_COLL_SET(ICS_ALGO_NVLS), .nvls_enable = false};
    for (int op = 0; op < ICS_COLL_OP_COUNT; op++) {
        ics_coll_result r = rig_run(&g, (ics_coll_op)op, 1u << 30, &forced);
        g_assert_true(r.local);
        double rate = (double)gpu->hbm_bw_bytes_per_s * gpu->compute.mem_eff;
        double want_ps = (double)gpu->compute.launch_ps + 2.0 * (1u << 30) / rate * 1e12;
        g_assert_cmpfloat(fabs((double)r.time_ps - want_ps), <, 2);
    }
    rig_close(&g);
}

/* At 8 GiB the busbw follows from the links and NCCL's documented efficiencies, which are what
 * its kernels reach on large messages (channels.c charges the synchronization apart and takes
 * its large-message share out of the links' rate): ring = 18 NVLinks x 20.6 GB/s (NCCL's SM90
 * figure) = 370.8; NVLS = 370.8 x 0.85 (NCCL's NVLS efficiency) / (1 + 1/8) (what a GPU's links
 * carry per byte) x 14/8 = 490.3. Within 1%: the pipeline's fill and drain. Measured on real
 * DGX H100: 362 (all-gather, 16 GiB) and 480 (validate/data/nccl). */
static void test_large_bandwidth(void)
{
    rig g;
    rig_open(&g, "dgx-h100.json", 0, 0, "packet");
    ics_coll_tuning ring = auto_tuning;
    ring.nvls_enable = false;
    uint64_t size = 8ull << 30;
    double ring_bw =
        busbw(&g, ICS_COLL_ALL_REDUCE, size, rig_run(&g, ICS_COLL_ALL_REDUCE, size, &ring).time_ps);
    double nvls_bw = busbw(&g, ICS_COLL_ALL_REDUCE, size,
                           rig_run(&g, ICS_COLL_ALL_REDUCE, size, &auto_tuning).time_ps);
    double want_nvls = 370.8 * 0.85 / (1 + 1.0 / 8) * 14 / 8;
    g_test_message("DGX H100 8 GiB all-reduce busbw: ring %.1f GB/s (370.8; measured 362), "
                   "NVLS %.1f GB/s (%.1f; measured 480)",
                   ring_bw, nvls_bw, want_nvls);
    g_assert_cmpfloat(fabs(ring_bw - 370.8) / 370.8, <, 0.01);
    g_assert_cmpfloat(fabs(nvls_bw - want_nvls) / want_nvls, <, 0.01);
    g_assert_cmpfloat(fabs(nvls_bw - 480) / 480, <, 0.05); /* within 5% of the measurement */
    rig_close(&g);
}

static void test_deterministic(void)
{
    ics_time t[2];
    for (int i = 0; i < 2; i++) {
        rig g;
        rig_open(&g, "superpod-a100-hdr.json", 4, 0, "packet");
        t[i] = rig_run(&g, ICS_COLL_ALL_GATHER, 96u << 20, &auto_tuning).time_ps;
        rig_close(&g);
    }
    g_assert_cmpint(t[0], ==, t[1]);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/coll/factors", test_factors);
    g_test_add_func("/coll/every-op-everywhere", test_every_op_everywhere);
    g_test_add_func("/coll/cluster", test_cluster);
    g_test_add_func("/coll/every-op-clusters", test_every_op_clusters);
    g_test_add_func("/coll/nvlink-rings", test_nvlink_rings);
    g_test_add_func("/coll/backends-agree", test_backends_agree);
    g_test_add_func("/coll/tuner-obeys", test_tuner_obeys);
    g_test_add_func("/coll/tuning-sets", test_tuning_sets);
    g_test_add_func("/coll/all-gather-copy", test_all_gather_copy);
    g_test_add_func("/coll/ll128-default", test_ll128_default);
    g_test_add_func("/coll/two-node-graphs", test_two_node_graphs);
    g_test_add_func("/coll/nccl-info", test_nccl_info);
    g_test_add_func("/coll/p2p-protocol", test_p2p_protocol);
    g_test_add_func("/coll/p2p-chunks", test_p2p_chunks);
    g_test_add_func("/coll/ring-buffsize", test_ring_buffsize);
    g_test_add_func("/coll/net-peer-env", test_net_peer_env);
    g_test_add_func("/coll/pcie-p2p-parts", test_pcie_p2p_parts);
    g_test_add_func("/coll/one-rank", test_one_rank);
    g_test_add_func("/coll/large-bandwidth", test_large_bandwidth);
    g_test_add_func("/coll/deterministic", test_deterministic);
    return g_test_run();
}
