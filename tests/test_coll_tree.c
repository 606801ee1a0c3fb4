/* Tree, NVLS-Tree, CollNet and PAT: NCCL's double binary tree as its source draws it; the bytes
 * each algorithm puts on the network (a tree sends half the data per tree edge each way, SHARP
 * once per node, PAT n-1 blocks per rank); closed-form times on an idle network; every
 * algorithm completing on every shipped cluster; NCCL_ALGO forcing and its refusals; the
 * tuner's choices as NCCL makes them. */
#include "collectives/algo.h"
#include "collectives/tuner.h"
#include "hw/hw.h"
#include "coll_rig.h"

#include <glib.h>
#include <math.h>

static ics_coll_tuning force(int algo, int proto)
{
    return (ics_coll_tuning){.algos = algo < 0 ? 0 : ICS_COLL_SET(algo),
                             .protos = proto < 0 ? 0 : ICS_COLL_SET(proto),
                             .nvls_enable = true,
                             .collnet_enable = true};
}

static bool try_run(rig *g, ics_coll_op op, uint64_t size, ics_coll_tuning tu, ics_coll_result *r)
{
    ics_coll_req req = {.op = op, .size_bytes = size, .dtype_bytes = 4};
    return ics_comm_run(g->c, &req, &tu, r);
}

static ics_coll_result run(rig *g, ics_coll_op op, uint64_t size, ics_coll_tuning tu)
{
    ics_coll_result r;
    g_assert_true(try_run(g, op, size, tu, &r));
    return r;
}

/* ---- the double binary tree ----------------------------------------------------------------- */

/* Parent of every node in one tree, through ics_algo_dtree. */
static void parents(int m, int tree, int *up)
{
    for (int k = 0; k < m; k++) {
        int child[2];
        ics_algo_dtree(m, tree, k, &up[k], child);
    }
}

/* The trees NCCL's src/graph/trees.cc draws: 14 nodes (tree 0), 13 nodes (tree 1, shifted) and
 * 12 nodes (tree 1, mirrored). */
static void test_dtree_figures(void)
{
    static const int t0_14[14] = {-1, 2, 4, 2, 8, 6, 4, 6, 0, 10, 12, 10, 8, 12};
    static const int t1_13[13] = {9, -1, 3, 5, 3, 9, 7, 5, 7, 1, 11, 0, 11};
    static const int t1_12[12] = {1, 3, 1, 11, 5, 7, 5, 3, 9, 7, 9, -1};
    int up[14];
    parents(14, 0, up);
    for (int k = 0; k < 14; k++)
        g_assert_cmpint(up[k], ==, t0_14[k]);
    parents(13, 1, up);
    for (int k = 0; k < 13; k++)
        g_assert_cmpint(up[k], ==, t1_13[k]);
    parents(12, 1, up);
    for (int k = 0; k < 12; k++)
        g_assert_cmpint(up[k], ==, t1_12[k]);
}

/* For every size: both trees span all nodes from one root, parents and children agree, at most
 * two children, and no node is a leaf in both (with an even count: a leaf in exactly one). */
static void test_dtree_shape(void)
{
    for (int m = 1; m <= 70; m++) {
        int leaves[70] = {0};
        for (int tree = 0; tree < 2; tree++) {
            int roots = 0, reached = 0;
            for (int k = 0; k < m; k++) {
                int up, child[2];
                ics_algo_dtree(m, tree, k, &up, child);
                roots += up < 0;
                if (up >= 0) {
                    int pu, pc[2];
                    ics_algo_dtree(m, tree, up, &pu, pc);
                    g_assert_true(pc[0] == k || pc[1] == k);
                }
                for (int i = 0; i < 2; i++)
                    if (child[i] >= 0) {
                        int cu, cc[2];
                        ics_algo_dtree(m, tree, child[i], &cu, cc);
                        g_assert_cmpint(cu, ==, k);
                    }
                leaves[k] += child[0] < 0 && child[1] < 0;
                /* walk up: reaches the root within m steps (no cycle) */
                int at = k, steps = 0;
                while (at >= 0 && steps <= m) {
                    int cc[2];
                    ics_algo_dtree(m, tree, at, &at, cc);
                    steps++;
                }
                reached += at < 0;
            }
            g_assert_cmpint(roots, ==, 1);
            g_assert_cmpint(reached, ==, m);
        }
        for (int k = 0; m >= 2 && k < m; k++) {
            g_assert_cmpint(leaves[k], <=, 1);
            if (m % 2 == 0)
                g_assert_cmpint(leaves[k], ==, 1);
        }
    }
}

/* ---- bytes on the network ------------------------------------------------------------------- */

static void ignore_done(ics_engine *e, void *ctx, uint64_t tag)
{
    (void)e;
    (void)ctx;
    (void)tag;
}

/* Plays the call's schedule (the tuner's choice under tu) and returns, per node, the payload
 * its NICs sent into the fabric. */
static void nic_bytes(rig *g, ics_coll_op op, uint64_t size, ics_coll_tuning tu, uint64_t *out,
                      ics_coll_result *res)
{
    ics_coll_req req = {.op = op, .size_bytes = size, .dtype_bytes = 4};
    ics_sched *s = ics_comm_plan(g->c, &req, &tu, res);
    g_assert_nonnull(s);
    ics_engine *e = ics_engine_new(0);
    ics_net *net = ics_net_new(ics_net_backend("analytic"), g->t, e, NULL);
    ics_sched_start(s, e, net, ignore_done, NULL, 0);
    ics_engine_run(e, ICS_TIME_MAX);
    for (int k = 0; k < ics_topo_nodes(g->t); k++)
        out[k] = 0;
    for (int ch = 0; ch < ics_topo_nchans(g->t); ch++) {
        const ics_topo_chan *c = ics_topo_chan_get(g->t, ch);
        const ics_topo_dev *src = ics_topo_dev_get(g->t, c->src);
        if (src->kind == ICS_DEV_NIC && c->kind == ICS_CHAN_NETWORK)
            out[src->node] += ics_net_chan_bytes(net, ch);
    }
    ics_net_free(net);
    ics_engine_free(e);
}

/* Each tree edge carries half the data each way, so node k's NICs send D/2 x (its degree in
 * tree 0 + in tree 1): with 4 nodes, tree 0 is 0-2, 2-1, 2-3 and tree 1 its mirror 3-1, 1-2,
 * 1-0, so nodes 0..3 send D, 2D, 2D, D; 2(N-1)D in all, the same as a ring. Inside the node the
 * chain adds nothing to the network. */
static void test_tree_bytes(void)
{
    const uint64_t D = 48ull << 20;
    const uint64_t want[4] = {D, 2 * D, 2 * D, D};
    for (int gpn = 1; gpn <= 8; gpn += 7) {
        rig g;
        rig_open(&g, "superpod-h100-ndr.json", 4, gpn, "analytic");
        uint64_t got[4];
        ics_coll_result r;
        nic_bytes(&g, ICS_COLL_ALL_REDUCE, D, force(ICS_ALGO_TREE, ICS_PROTO_SIMPLE), got, &r);
        g_assert_cmpint(r.algo, ==, ICS_ALGO_TREE);
        for (int k = 0; k < 4; k++)
            g_assert_cmpuint(got[k], ==, want[k]);
        rig_close(&g);
    }
    /* 10 nodes: 2(N-1)D in all, no node more than 2D */
    rig g;
    rig_open(&g, "superpod-h100-ndr.json", 10, 1, "analytic");
    uint64_t got[10], total = 0;
    ics_coll_result r;
    nic_bytes(&g, ICS_COLL_ALL_REDUCE, D, force(ICS_ALGO_TREE, ICS_PROTO_SIMPLE), got, &r);
    for (int k = 0; k < 10; k++) {
        g_assert_cmpuint(got[k], <=, 2 * D);
        total += got[k];
    }
    g_assert_cmpuint(total, ==, 18 * D);
    rig_close(&g);
}

/* NVLS-Tree moves the node sums over the same double binary tree: the same bytes per node. */
static void test_nvls_tree_bytes(void)
{
    const uint64_t D = 48ull << 20;
    const uint64_t want[4] = {D, 2 * D, 2 * D, D};
    rig g;
    rig_open(&g, "superpod-h100-ndr.json", 4, 0, "analytic");
    uint64_t got[4];
    ics_coll_result r;
    nic_bytes(&g, ICS_COLL_ALL_REDUCE, D, force(ICS_ALGO_NVLS_TREE, ICS_PROTO_SIMPLE), got, &r);
    g_assert_cmpint(r.algo, ==, ICS_ALGO_NVLS_TREE);
    for (int k = 0; k < 4; k++)
        g_assert_cmpuint(got[k], ==, want[k]);
    rig_close(&g);
}

/* Bytes node 0's GPUs send into the NVSwitches and receive from them, per GPU on average. */
static void nvlink_bytes(rig *g, uint64_t size, ics_coll_tuning tu, double *tx, double *rx)
{
    ics_coll_req req = {.op = ICS_COLL_ALL_REDUCE, .size_bytes = size, .dtype_bytes = 4};
    ics_coll_result res;
    ics_sched *s = ics_comm_plan(g->c, &req, &tu, &res);
    g_assert_nonnull(s);
    ics_engine *e = ics_engine_new(0);
    ics_net *net = ics_net_new(ics_net_backend("analytic"), g->t, e, NULL);
    ics_sched_start(s, e, net, ignore_done, NULL, 0);
    ics_engine_run(e, ICS_TIME_MAX);
    uint64_t up = 0, down = 0;
    int gpus = ics_topo_gpus_per_node(g->t);
    for (int ch = 0; ch < ics_topo_nchans(g->t); ch++) {
        const ics_topo_chan *c = ics_topo_chan_get(g->t, ch);
        const ics_topo_dev *a = ics_topo_dev_get(g->t, c->src), *b = ics_topo_dev_get(g->t, c->dst);
        if (a->node != 0 || b->node != 0)
            continue;
        if (a->kind == ICS_DEV_GPU && b->kind == ICS_DEV_NVSWITCH)
            up += ics_net_chan_bytes(net, ch);
        if (a->kind == ICS_DEV_NVSWITCH && b->kind == ICS_DEV_GPU)
            down += ics_net_chan_bytes(net, ch);
    }
    *tx = (double)up / gpus;
    *rx = (double)down / gpus;
    ics_net_free(net);
    ics_engine_free(e);
}

/* Inside a node NVLS-Tree moves each byte about once each way per GPU: every GPU pushes its
 * data into the switches (D) and multicasts its part's result (D/8 with 8 heads): D (1 + 1/8)
 * out; it reads its part's sum (D/8) and receives the 7 other parts (7D/8): D in. Both times
 * the NVLS wire factor (protocol, NCCL's kernel rate, NVLS efficiency). The stand-ins this
 * replaced (a reduction returning the sum to every GPU, the hand-out as 7 sends) moved about
 * 2D each way. */
static void test_nvls_tree_nvlink_bytes(void)
{
    const uint64_t D = 48ull << 20;
    rig g;
    rig_open(&g, "superpod-h100-ndr.json", 4, 0, "analytic");
    double tx, rx;
    nvlink_bytes(&g, D, force(ICS_ALGO_NVLS_TREE, ICS_PROTO_SIMPLE), &tx, &rx);
    g_assert_cmpfloat(fabs(tx / rx - 1.125), <, 0.001);
    /* the wire factor is 1 / (0.85 NVLS x NCCL's 20.6 GB/s of what a link carries): 1.2-1.4 */
    g_assert_cmpfloat(rx / (double)D, >, 1.2);
    g_assert_cmpfloat(rx / (double)D, <, 1.4);
    rig_close(&g);
}

/* SHARP: each node's sum enters the network once; both variants, 8 GPUs per node. */
static void test_collnet_bytes(void)
{
    const uint64_t D = 48ull << 20;
    for (int a = ICS_ALGO_COLLNET_DIRECT; a <= ICS_ALGO_COLLNET_CHAIN; a++) {
        rig g;
        rig_open(&g, "superpod-h100-ndr.json", 3, 0, "analytic");
        uint64_t got[3];
        ics_coll_result r;
        nic_bytes(&g, ICS_COLL_ALL_REDUCE, D, force(a, ICS_PROTO_SIMPLE), got, &r);
        g_assert_cmpint(r.algo, ==, a);
        for (int k = 0; k < 3; k++)
            g_assert_cmpuint(got[k], ==, D);
        rig_close(&g);
    }
}

/* PAT: every rank sends n-1 blocks of size/n, for all-gather and reduce-scatter alike. */
static void test_pat_bytes(void)
{
    for (int n = 2; n <= 10; n += 3) {
        rig g;
        rig_open(&g, "superpod-h100-ndr.json", n, 1, "analytic");
        uint64_t size = (uint64_t)n << 22, got[10];
        for (int op = ICS_COLL_ALL_GATHER; op <= ICS_COLL_REDUCE_SCATTER; op++) {
            ics_coll_result r;
            nic_bytes(&g, (ics_coll_op)op, size, force(ICS_ALGO_PAT, ICS_PROTO_SIMPLE), got, &r);
            g_assert_cmpint(r.algo, ==, ICS_ALGO_PAT);
            for (int k = 0; k < n; k++)
                g_assert_cmpuint(got[k], ==, (uint64_t)(n - 1) << 22);
        }
        rig_close(&g);
    }
}

/* ---- closed forms on an idle network -------------------------------------------------------- */

/* Time for `bytes` alone from device a to b (one fabric path). */
static ics_time idle(const ics_topo *t, int a, int b, uint64_t bytes, uint64_t hash)
{
    ics_route r;
    g_assert_true(ics_route_find(t, a, b, hash, &r));
    g_assert_cmpint(r.n_paths, ==, 1);
    ics_time x =
        ics_net_idle_path_time(t, &r.paths[0], bytes, ics_net_packet_payload(t, &r.paths[0], 0));
    ics_route_clear(&r);
    return x;
}

/* What the tuner charges a call of `size` bytes run with (a, p), NCCL's defaults otherwise. */
static ics_tuner_price price_of(const ics_tuner *tu, ics_coll_op op, uint64_t size, ics_coll_algo a,
                                ics_coll_proto p)
{
    ics_coll_req req = {.op = op, .size_bytes = size, .dtype_bytes = 4};
    ics_coll_tuning want = {
        .algos = ICS_COLL_SET(a), .protos = ICS_COLL_SET(p), .nvls_enable = true};
    ics_tuner_price out;
    ics_tuner_price_call(tu, &req, &want, a, p, &out);
    return out;
}

/* Two nodes, one GPU each, one chunk: each tree's leaf waits NCCL's network hop and sends its
 * half up (C), the root reduces it, waits the hop again and sends it down (NCCL's model: 2
 * log2(nNodes) network hops); the two trees run on opposite directions. A send takes its
 * transfer or its CTA's copy, whichever is longer, then the CTA's sync, which is part of NCCL's
 * hop (channels.c):
 *   base + 2 (max(T(C), C / CTA) + sync) + reduce(C) + 2 (hop - sync).
 * At 1 MiB each tree's half is one chunk too: NCCL's Simple tree chunk is its 512 KiB step,
 * never halved since 2.20 (tree.c ics_algo_tree_chunk); 2.19's rule cut it into four of
 * 128 KiB. (The plan runs both trees even on one channel, NCCL_MAX_NCHANNELS=1, where NCCL
 * would run one; the case pins the chunk, not that split.) */
static void test_tree_closed_form(void)
{
    for (int be = 0; be < 4; be++) {
        rig g;
        rig_open(&g, "superpod-h100-ndr.json", 2, 1, be % 2 ? "packet" : "analytic");
        ics_tuner tu;
        ics_tuner_init(&tu, g.t, g.ranks, g.n);
        uint64_t size = be < 2 ? 32 * 1024 : 1024 * 1024, C = size / 2;
        ics_coll_tuning one = force(ICS_ALGO_TREE, ICS_PROTO_SIMPLE);
        one.max_channels = 1; /* NCCL_MAX_NCHANNELS=1: the 1 MiB call would take 4 */
        ics_coll_result r = run(&g, ICS_COLL_ALL_REDUCE, size, one);
        g_assert_cmpint(r.nchannels, ==, 1);
        ics_time T = idle(g.t, g.ranks[1], g.ranks[0], C, 0);
        g_assert_cmpint(T, ==, idle(g.t, g.ranks[0], g.ranks[1], C, 0));
        ics_tuner_price p =
            price_of(&tu, ICS_COLL_ALL_REDUCE, size, ICS_ALGO_TREE, ICS_PROTO_SIMPLE);
        ics_time sync = p.sync_ps;
        ics_time send = MAX(T, ics_time_serialize(C, p.cta_bytes_per_s)) + sync;
        ics_time want = p.base_lat_ps + 2 * send +
                        ics_time_serialize(3 * C, tu.reduce_bytes_per_s) +
                        2 * (p.net_step_lat_ps - sync);
        g_test_message("tree 2x1 %" G_GUINT64_FORMAT " KiB (%s): %.3f us, closed form %.3f us",
                       size >> 10, be % 2 ? "packet" : "analytic", r.time_ps / 1e6, want / 1e6);
        g_assert_cmpint(r.time_ps, ==, want);
        if (size > 512 * 1024) { /* NCCL_BUFFSIZE=1 MiB: 128 KiB chunks, pipelined */
            one.buffsize = 1 << 20;
            ics_coll_result q = run(&g, ICS_COLL_ALL_REDUCE, size, one);
            g_test_message("  with NCCL_BUFFSIZE=1048576: %.3f us", q.time_ps / 1e6);
            g_assert_cmpint(q.time_ps, <, want - want / 10);
        }
        rig_close(&g);
    }
}

/* NCCL 2.29's tree chunks (enqueue.cc calcCollChunking), worked by hand from its rule: LL128
 * halves 576,000 B while a channel has fewer than s x 64 / ppn chunks (over 128 KiB), then
 * s x 16 / ppn (over 32 KiB), s = 1 + log2(nNodes) + 0.1 ppn, and rounds down to 1,920 B;
 * Simple is an eighth of NCCL_BUFFSIZE rounded down to 512 B; LL 32 KiB. */
static void test_tree_chunks(void)
{
    const struct {
        ics_coll_proto proto;
        int n, nnodes, nch;
        uint64_t size;
        int buffsize;
        uint64_t want;
    } cases[] = {
        /* 2 x 8, 16 channels, 4 MiB: s = 2.8; 0 < 22.4 thrice (72,000), 3 < 5.6 once: 36,000 */
        {ICS_PROTO_LL128, 16, 2, 16, 4 << 20, 0, 34560},
        /* 2 x 4, 8 channels, 8 MiB: s = 2.4; 0, 1 < 38.4 (72,000); 14 >= 9.6: 72,000 */
        {ICS_PROTO_LL128, 8, 2, 8, 8 << 20, 0, 71040},
        /* 1 GiB: 116 chunks a channel, never halved; 576,000 is 300 grains */
        {ICS_PROTO_LL128, 16, 2, 16, 1u << 30, 0, 576000},
        /* 128 x 8, 16 channels, 1 MiB: s = 8.8; halved to 72,000, then 36,000 and 18,000
         * (18,000 is not over 32 KiB): 17,280 */
        {ICS_PROTO_LL128, 1024, 128, 16, 1 << 20, 0, 17280},
        {ICS_PROTO_SIMPLE, 16, 2, 16, 1 << 20, 0, 512 * 1024},
        {ICS_PROTO_SIMPLE, 16, 2, 16, 1 << 20, 1000000, 124928},
        {ICS_PROTO_LL, 16, 2, 16, 1 << 20, 0, 32 * 1024},
    };
    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        ics_algo_ctx c = {.n = cases[i].n,
                          .proto = cases[i].proto,
                          .nch = cases[i].nch,
                          .ctas_per_channel = 1,
                          .req = {.op = ICS_COLL_ALL_REDUCE, .size_bytes = cases[i].size},
                          .simple_buffsize =
                              cases[i].buffsize ? (uint64_t)cases[i].buffsize : 4u << 20};
        uint64_t got = ics_algo_tree_chunk(&c, cases[i].nnodes);
        g_test_message("%s, %d ranks on %d nodes, %d channels, %" G_GUINT64_FORMAT
                       " B: chunk %" G_GUINT64_FORMAT,
                       ics_coll_proto_name(cases[i].proto), cases[i].n, cases[i].nnodes,
                       cases[i].nch, cases[i].size, got);
        g_assert_cmpuint(got, ==, cases[i].want);
    }
}

/* NCCL 2.29's NVLS-Tree chunks, worked by hand: NCCL_NVLS_CHUNKSIZE 128 KiB, 64 KiB from 4
 * nodes, 64 KiB where the call gives its NVLS channels (Hopper 16, Blackwell across nodes 32) x
 * 8 heads fewer than 4 chunks each (64 MiB at 128 KiB on 16), 32 KiB where fewer than 1 (8 MiB
 * at 64 KiB on 16). */
static void test_nvls_tree_chunks(void)
{
    /* set: NCCL_NVLS_CHUNKSIZE, NCCL_NVLSTREE_MAX_CHUNKSIZE (0: unset). With 16 channels of 8
     * heads (128 operations) and 512 KiB, each cut against the chunk the last one left: below
     * 32 x 128 x 512 KiB = 2 GiB 256 KiB; below 16 x 128 x 256 KiB = 512 MiB 128 KiB; below
     * 4 x 128 x 128 KiB = 64 MiB 64 KiB: 1 GiB and 512 MiB keep 256 KiB, 256 MiB 128 KiB, 32 MiB
     * 64 KiB. */
    const struct {
        int nnodes, nvls;
        uint64_t size, want, set, most;
    } cases[] = {
        {2, 16, 1u << 30, 128 * 1024, 0, 0},
        {2, 16, 64 << 20, 128 * 1024, 0, 0},
        {2, 16, 32 << 20, 64 * 1024, 0, 0},
        {2, 16, 4 << 20, 32 * 1024, 0, 0},
        {10, 16, 1u << 30, 64 * 1024, 0, 0},
        {10, 16, 4 << 20, 32 * 1024, 0, 0},
        {2, 32, 128 << 20, 128 * 1024, 0, 0},
        {2, 32, 64 << 20, 64 * 1024, 0, 0},
        {2, 32, 8 << 20, 32 * 1024, 0, 0},
        {2, 16, 2ull << 30, 512 * 1024, 512 * 1024, 0},
        {2, 16, 1u << 30, 256 * 1024, 512 * 1024, 0},
        {2, 16, 512 << 20, 256 * 1024, 512 * 1024, 0},
        {2, 16, 256 << 20, 128 * 1024, 512 * 1024, 0},
        {2, 16, 32 << 20, 64 * 1024, 512 * 1024, 0},
        {10, 16, 2ull << 30, 64 * 1024, 512 * 1024, 0},         /* 4 nodes on: 64 KiB */
        {10, 16, 2ull << 30, 512 * 1024, 512 * 1024, 1u << 20}, /* unless told otherwise */
        {2, 16, 1u << 30, 96 * 1024, 0, 96 * 1024 + 100},       /* Simple's 512 B grain */
        {2, 16, 1u << 30, 16 * 1024, 16 * 1024, 0},             /* no cut raises it */
    };
    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        ics_algo_ctx c = {.n = 8 * cases[i].nnodes,
                          .proto = ICS_PROTO_SIMPLE,
                          .nch = 16,
                          .nvls_channels = cases[i].nvls,
                          .nvls_chunk = cases[i].set,
                          .nvlstree_max_chunk = cases[i].most,
                          .ctas_per_channel = 1,
                          .req = {.op = ICS_COLL_ALL_REDUCE, .size_bytes = cases[i].size}};
        uint64_t got = ics_algo_nvls_tree_chunk(&c, cases[i].nnodes, 8);
        g_test_message("%d nodes, %" G_GUINT64_FORMAT " B: chunk %" G_GUINT64_FORMAT,
                       cases[i].nnodes, cases[i].size, got);
        g_assert_cmpuint(got, ==, cases[i].want);
    }
}

/* PAT all-gather on 4 nodes: two steps, distance 2 then 1, one block then two, each after
 * NCCL's step latency (its model counts log2(nNodes) of them):
 *   base + 2 step latencies + T(block) + T(2 blocks)   (all ranks at once, one link each way). */
static void test_pat_closed_form(void)
{
    rig g;
    rig_open(&g, "superpod-h100-ndr.json", 4, 1, "analytic");
    ics_tuner tu;
    ics_tuner_init(&tu, g.t, g.ranks, g.n);
    uint64_t size = 4 * 65536, block = size / 4;
    ics_coll_result r = run(&g, ICS_COLL_ALL_GATHER, size, force(ICS_ALGO_PAT, ICS_PROTO_SIMPLE));
    ics_time last = 0;
    for (int i = 0; i < 4; i++) { /* rank i: gets a block from i + 2, sends two to i - 1 */
        ics_time t1 =
            idle(g.t, g.ranks[(i + 2) % 4], g.ranks[i], block, (uint64_t)(i + 2) % 4 * 64 + 1);
        ics_time t2 = idle(g.t, g.ranks[i], g.ranks[(i + 3) % 4], 2 * block, (uint64_t)i * 64);
        last = MAX(last, t1 + t2);
    }
    ics_tuner_price p = price_of(&tu, ICS_COLL_ALL_GATHER, size, ICS_ALGO_PAT, ICS_PROTO_SIMPLE);
    ics_time want = p.base_lat_ps + 2 * p.net_step_lat_ps + last;
    g_test_message("PAT all-gather 4x1 256 KiB: %.3f us, closed form %.3f us", r.time_ps / 1e6,
                   want / 1e6);
    g_assert_cmpint(r.time_ps, ==, want);
    /* NCCL's latency: 8 us + 2.8 us per rank */
    g_assert_cmpint(p.base_lat_ps, ==, (ics_time)llround((8.0 + 4 * 2.8) * ICS_PS_PER_US));
    rig_close(&g);
}

/* ---- everywhere, forcing, the tuner -----------------------------------------------------------
 */

static const char *const clusters[] = {"superpod-h100-ndr.json", "superpod-a100-hdr.json",
                                       "fattree-2tier.json", "fattree-3tier.json"};

/* Every new algorithm that can run on a shipped cluster completes, on both backends, with
 * times that grow with size; NVLS-Tree and CollNet run wherever their hardware is. */
static void test_every_cluster(void)
{
    static const int algos[] = {ICS_ALGO_TREE, ICS_ALGO_NVLS_TREE, ICS_ALGO_COLLNET_DIRECT,
                                ICS_ALGO_COLLNET_CHAIN, ICS_ALGO_PAT};
    for (size_t m = 0; m < G_N_ELEMENTS(clusters); m++)
        for (int gpn = 1; gpn <= 8; gpn += 7)
            for (int be = 0; be < 2; be++) {
                rig g;
                rig_open(&g, clusters[m], 3, gpn, be ? "packet" : "analytic");
                int ran = 0;
                for (size_t a = 0; a < G_N_ELEMENTS(algos); a++)
                    for (int op = 0; op < ICS_COLL_OP_COUNT; op++) {
                        ics_time prev = 0;
                        for (uint64_t size = 4096; size <= (16u << 20); size *= 64) {
                            ics_coll_result r;
                            if (!try_run(&g, (ics_coll_op)op, size, force(algos[a], -1), &r))
                                break;
                            g_assert_cmpint(r.algo, ==, algos[a]);
                            g_assert_cmpint(r.time_ps, >, prev);
                            prev = r.time_ps;
                            ran++;
                        }
                    }
                /* 3 sizes of: tree all-reduce; PAT all-gather and reduce-scatter with one GPU
                 * per node; NVLS-Tree on H100 nodes (several GPUs each); both CollNets where
                 * the fabric has SHARP (the SuperPODs) */
                bool h100 = m == 0 || m == 2, sharp = m <= 1;
                int want = 3 * (1 + (gpn == 1 ? 2 : 0) + (h100 && gpn > 1) + (sharp ? 2 : 0));
                g_test_message("%s %d GPU/node: %d runs", clusters[m], gpn, ran);
                g_assert_cmpint(ran, ==, want);
                rig_close(&g);
            }
}

static void test_single_node_chain(void)
{
    const char *models[] = {"dgx1-v100.json", "dgx2.json",     "dgx-a100.json",
                            "dgx-h100.json",  "hgx-b200.json", "pcie-8gpu.json"};
    for (size_t m = 0; m < G_N_ELEMENTS(models); m++) {
        rig g;
        rig_open(&g, models[m], 0, 0, "analytic");
        ics_coll_result r = run(&g, ICS_COLL_ALL_REDUCE, 1u << 20, force(ICS_ALGO_TREE, -1));
        g_assert_cmpint(r.algo, ==, ICS_ALGO_TREE);
        ics_coll_result no;
        for (int a = ICS_ALGO_NVLS_TREE; a <= ICS_ALGO_PAT; a++) /* all need several nodes */
            g_assert_false(try_run(&g, ICS_COLL_ALL_REDUCE, 1u << 20, force(a, -1), &no));
        /* NCCL's model never prefers a chain to the ring inside a node */
        for (uint64_t size = 8; size <= (1u << 30); size *= 4) {
            ics_coll_tuning any = {.nvls_enable = true};
            g_assert_cmpint(run(&g, ICS_COLL_ALL_REDUCE, size, any).algo, !=, ICS_ALGO_TREE);
        }
        rig_close(&g);
    }
}

static void test_forcing(void)
{
    static const char *const names[] = {"Ring",     "Tree",          "NVLS",         "Direct",
                                        "NVLSTree", "CollNetDirect", "CollNetChain", "PAT"};
    for (int a = 0; a < ICS_ALGO_COUNT; a++) {
        g_assert_cmpstr(ics_coll_algo_name((ics_coll_algo)a), ==, names[a]);
        g_setenv("NCCL_ALGO", names[a], TRUE);
        ics_coll_tuning env;
        GError *err = NULL;
        ics_coll_tuning_from_env(&env, NULL, &err);
        g_assert_no_error(err);
        g_assert_cmpuint(env.algos, ==, ICS_COLL_SET(a));
    }
    g_unsetenv("NCCL_ALGO");
    g_setenv("NCCL_COLLNET_ENABLE", "1", TRUE);
    ics_coll_tuning env;
    GError *err = NULL;
    ics_coll_tuning_from_env(&env, NULL, &err);
    g_assert_true(env.collnet_enable);
    g_unsetenv("NCCL_COLLNET_ENABLE");
    ics_coll_tuning_from_env(&env, NULL, &err);
    g_assert_false(env.collnet_enable); /* NCCL's default */

    ics_coll_result r;
    rig g;
    rig_open(&g, "superpod-h100-ndr.json", 2, 0, "analytic");
    g_assert_false(try_run(&g, ICS_COLL_ALL_GATHER, 1 << 20, force(ICS_ALGO_TREE, -1), &r));
    g_assert_false(try_run(&g, ICS_COLL_ALL_GATHER, 1 << 20, force(ICS_ALGO_PAT, -1), &r));
    g_assert_false(try_run(&g, ICS_COLL_ALL_REDUCE, 1 << 20, force(ICS_ALGO_PAT, -1), &r));
    g_assert_false(
        try_run(&g, ICS_COLL_ALL_REDUCE, 1 << 20, force(ICS_ALGO_NVLS_TREE, ICS_PROTO_LL), &r));
    g_assert_false(
        try_run(&g, ICS_COLL_ALL_REDUCE, 1 << 20, force(ICS_ALGO_COLLNET_CHAIN, ICS_PROTO_LL), &r));
    ics_coll_tuning off = force(ICS_ALGO_COLLNET_DIRECT, -1);
    off.collnet_enable = false; /* as NCCL: NCCL_ALGO alone does not turn CollNet on */
    g_assert_false(try_run(&g, ICS_COLL_ALL_REDUCE, 1 << 20, off, &r));
    off = force(ICS_ALGO_NVLS_TREE, -1);
    off.nvls_enable = false;
    g_assert_false(try_run(&g, ICS_COLL_ALL_REDUCE, 1 << 20, off, &r));
    rig_close(&g);

    rig_open(&g, "superpod-a100-hdr.json", 2, 0, "analytic"); /* NVSwitch gen2: no NVLS */
    g_assert_false(try_run(&g, ICS_COLL_ALL_REDUCE, 1 << 20, force(ICS_ALGO_NVLS_TREE, -1), &r));
    rig_close(&g);
    rig_open(&g, "fattree-2tier.json", 2, 0, "analytic"); /* Quantum-2, SHARP off */
    g_assert_false(
        try_run(&g, ICS_COLL_ALL_REDUCE, 1 << 20, force(ICS_ALGO_COLLNET_DIRECT, -1), &r));
    g_assert_false(
        try_run(&g, ICS_COLL_ALL_REDUCE, 1 << 20, force(ICS_ALGO_COLLNET_CHAIN, -1), &r));
    rig_close(&g);
    /* 40 nodes span two scalable units: a rail's NICs sit on two leaves, one SHARP op cannot
     * reach them all */
    rig_open(&g, "superpod-h100-ndr.json", 40, 1, "analytic");
    g_assert_false(
        try_run(&g, ICS_COLL_ALL_REDUCE, 1 << 20, force(ICS_ALGO_COLLNET_CHAIN, -1), &r));
    rig_close(&g);
}

/* The tuner considers the new algorithms as NCCL's cost model does: PAT for small all-gathers
 * with one GPU per node, never with more; Tree or NVLS-Tree for some multi-node all-reduce
 * sizes; CollNet only when enabled. */
static void test_tuner_picks(void)
{
    ics_coll_tuning any = {.nvls_enable = true};
    rig g;
    rig_open(&g, "superpod-h100-ndr.json", 16, 1, "analytic");
    g_assert_cmpint(run(&g, ICS_COLL_ALL_GATHER, 16 * 1024, any).algo, ==, ICS_ALGO_PAT);
    g_assert_cmpint(run(&g, ICS_COLL_REDUCE_SCATTER, 16 * 1024, any).algo, ==, ICS_ALGO_PAT);
    g_assert_cmpint(run(&g, ICS_COLL_ALL_GATHER, 1u << 30, any).algo, ==, ICS_ALGO_RING);
    rig_close(&g);

    rig_open(&g, "superpod-h100-ndr.json", 4, 0, "analytic");
    bool seen[ICS_ALGO_COUNT] = {false};
    for (uint64_t size = 1024; size <= (1u << 30); size *= 8) {
        seen[run(&g, ICS_COLL_ALL_REDUCE, size, any).algo] = true;
        g_assert_cmpint(run(&g, ICS_COLL_ALL_GATHER, size, any).algo, !=, ICS_ALGO_PAT);
    }
    g_assert_true(seen[ICS_ALGO_TREE] || seen[ICS_ALGO_NVLS_TREE]);
    g_assert_false(seen[ICS_ALGO_COLLNET_DIRECT] || seen[ICS_ALGO_COLLNET_CHAIN]);
    any.collnet_enable = true;
    bool collnet = false;
    for (uint64_t size = 1024; size <= (1u << 30); size *= 8) {
        int a = run(&g, ICS_COLL_ALL_REDUCE, size, any).algo;
        collnet |= a == ICS_ALGO_COLLNET_DIRECT || a == ICS_ALGO_COLLNET_CHAIN;
    }
    g_assert_true(collnet);
    rig_close(&g);
}

static void test_deterministic(void)
{
    ics_time t[2];
    for (int i = 0; i < 2; i++) {
        rig g;
        rig_open(&g, "superpod-h100-ndr.json", 5, 0, "packet");
        t[i] = run(&g, ICS_COLL_ALL_REDUCE, 24u << 20, force(ICS_ALGO_TREE, -1)).time_ps;
        rig_close(&g);
    }
    g_assert_cmpint(t[0], ==, t[1]);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/coll-tree/dtree-figures", test_dtree_figures);
    g_test_add_func("/coll-tree/dtree-shape", test_dtree_shape);
    g_test_add_func("/coll-tree/tree-bytes", test_tree_bytes);
    g_test_add_func("/coll-tree/nvls-tree-bytes", test_nvls_tree_bytes);
    g_test_add_func("/coll-tree/nvls-tree-nvlink-bytes", test_nvls_tree_nvlink_bytes);
    g_test_add_func("/coll-tree/collnet-bytes", test_collnet_bytes);
    g_test_add_func("/coll-tree/pat-bytes", test_pat_bytes);
    g_test_add_func("/coll-tree/tree-closed-form", test_tree_closed_form);
    g_test_add_func("/coll-tree/tree-chunks", test_tree_chunks);
    g_test_add_func("/coll-tree/nvls-tree-chunks", test_nvls_tree_chunks);
    g_test_add_func("/coll-tree/pat-closed-form", test_pat_closed_form);
    g_test_add_func("/coll-tree/every-cluster", test_every_cluster);
    g_test_add_func("/coll-tree/single-node-chain", test_single_node_chain);
    g_test_add_func("/coll-tree/forcing", test_forcing);
    g_test_add_func("/coll-tree/tuner-picks", test_tuner_picks);
    g_test_add_func("/coll-tree/deterministic", test_deterministic);
    return g_test_run();
}
