/* The replayer: stream order and dependencies, collectives matched per communicator and run one
 * after another, sends and recvs as a rendezvous with the network's closed-form time, shared
 * links slowing concurrent traffic, memoized and fully simulated collectives agreeing on an idle
 * network, the breakdown adding up, stuck traces reported, runs repeating exactly. */
#include "replay/replay.h"
#include "replay_rig.h"
#include "report/report.h"
#include "hw/hw.h"

#include <cjson/cJSON.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <string.h>

static ics_replay_opts opts(ics_replay_colls colls)
{
    return (ics_replay_opts){.tuning = {.nvls_enable = true}, .colls = colls, .p2p_lat_ps = -1};
}

static ics_trace_op compute_us(int stream, double us)
{
    return (ics_trace_op){.kind = ICS_TOP_COMPUTE,
                          .stream = stream,
                          .cat = ICS_CAT_COMPUTE,
                          .duration_ps = (ics_time)(us * ICS_PS_PER_US)};
}

static ics_trace_op p2p(ics_top_kind kind, int peer, uint64_t bytes)
{
    return (ics_trace_op){
        .kind = kind, .stream = 1, .cat = ICS_CAT_PP, .peer = peer, .bytes = bytes};
}

/* Runs the trace; asserts it finishes. */
static ics_replay *play(const rig *g, const ics_trace *tr, const ics_replay_opts *o,
                        ics_replay_result *res)
{
    GError *err = NULL;
    ics_replay *r = ics_replay_new(tr, g->t, o, &err);
    g_assert_no_error(err);
    g_assert_nonnull(r);
    g_assert_true(ics_replay_run(r, res, &err));
    g_assert_no_error(err);
    return r;
}

static void add_streams(ics_trace *tr, int nstreams)
{
    for (int k = 0; k < ics_trace_nranks(tr); k++)
        for (int s = 0; s < nstreams; s++)
            ics_trace_add_stream(tr, k, s == 0 ? "compute" : "comm");
}

/* Ops on one stream run in order; on two streams they overlap; a dependency joins them. */
static void test_streams(void)
{
    rig g;
    rig_open(&g, "dgx-h100.json", 0);
    ics_trace *tr = ics_trace_new(1);
    add_streams(tr, 2);
    ics_trace_op a = compute_us(0, 10), b = compute_us(1, 25), c = compute_us(0, 5);
    int ia = ics_trace_add_op(tr, 0, &a, NULL, 0);
    int ib = ics_trace_add_op(tr, 0, &b, NULL, 0);
    int deps[2] = {ia, ib};
    ics_trace_add_op(tr, 0, &c, deps, 2); /* waits for b on the other stream: 25 + 5 */
    ics_replay_opts o = opts(ICS_REPLAY_AUTO);
    ics_replay_result res;
    ics_replay *r = play(&g, tr, &o, &res);
    g_assert_cmpint(res.step_ps, ==, 30 * ICS_PS_PER_US);
    const ics_replay_rank *rs = ics_replay_rank_stats(r, 0);
    /* stream 0: a runs 10, waits 15 for b (compute on another stream), c runs 5 */
    g_assert_cmpint(rs->busy_ps[ICS_CAT_COMPUTE], ==, 15 * ICS_PS_PER_US);
    g_assert_cmpint(rs->wait_ps[ICS_CAT_COMPUTE], ==, 15 * ICS_PS_PER_US);
    g_assert_cmpint(rs->bubble_ps, ==, 0);
    ics_replay_free(r);
    ics_trace_free(tr);
    rig_close(&g);
}

/* Sum of a rank's breakdown = its end. */
static void assert_adds_up(const ics_replay *r, int nranks);

/* Gradient all-reduces queued back to back on a dp stream after the backward, and an optimizer
 * that depends on the last: the whole queue is exposed DP time, not only the last call (the
 * others were once charged to the bubble). */
static void test_queued_colls(void)
{
    rig g;
    rig_open(&g, "dgx-h100.json", 0);
    ics_trace *tr = ics_trace_new(8);
    add_streams(tr, 3);
    int ranks[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    int c = ics_trace_add_comm(tr, ranks, 8, "dp");
    for (int k = 0; k < 8; k++) {
        ics_trace_op bwd = compute_us(0, 10), opt = compute_us(0, 1);
        int ib = ics_trace_add_op(tr, k, &bwd, NULL, 0), last = -1;
        for (int q = 0; q < 3; q++) {
            ics_trace_op ar = coll(c, ICS_COLL_ALL_REDUCE, 64 << 20, ICS_CAT_DP);
            ar.stream = 2;
            last = ics_trace_add_op(tr, k, &ar, &ib, 1);
        }
        ics_trace_add_op(tr, k, &opt, &last, 1);
    }
    ics_replay_opts o = opts(ICS_REPLAY_MEMO);
    ics_replay_result res;
    ics_replay *r = play(&g, tr, &o, &res);
    const ics_replay_rank *rs = ics_replay_rank_stats(r, 0);
    ics_time queue = res.step_ps - 11 * ICS_PS_PER_US;
    g_assert_cmpint(queue, >, 0);
    g_assert_cmpint(rs->wait_ps[ICS_CAT_DP], ==, queue);
    g_assert_cmpint(rs->bubble_ps, ==, 0);
    assert_adds_up(r, 8);
    ics_replay_free(r);
    ics_trace_free(tr);
    rig_close(&g);
}

/* Sum of a rank's breakdown = its end. */
static void assert_adds_up(const ics_replay *r, int nranks)
{
    for (int k = 0; k < nranks; k++) {
        const ics_replay_rank *rs = ics_replay_rank_stats(r, k);
        ics_time sum = rs->bubble_ps + rs->host_ps;
        for (int c = 0; c < ICS_CAT_COUNT; c++)
            sum += rs->busy_ps[c] + rs->wait_ps[c];
        g_assert_cmpint(sum, ==, rs->end_ps);
    }
}

/* Three compute ops of `us` each, launched as `launches` kernels, the third after a host sync,
 * on a host taking 5 us a launch; the step and rank 0's breakdown. */
static ics_time host_step(double us, int launches, ics_time *busy, ics_time *host)
{
    rig g;
    rig_open(&g, "dgx-h100.json", 0);
    ics_trace *tr = ics_trace_new(1);
    add_streams(tr, 1);
    for (int i = 0; i < 3; i++) {
        ics_trace_op op = compute_us(0, us);
        op.launches = launches;
        op.host_sync = i == 2;
        ics_trace_add_op(tr, 0, &op, NULL, 0);
    }
    ics_replay_opts o = opts(ICS_REPLAY_AUTO);
    o.host_launch_ps = 5 * ICS_PS_PER_US;
    ics_replay_result res;
    ics_replay *r = play(&g, tr, &o, &res);
    assert_adds_up(r, 1);
    *busy = ics_replay_rank_stats(r, 0)->busy_ps[ICS_CAT_COMPUTE];
    *host = ics_replay_rank_stats(r, 0)->host_ps;
    ics_time step = res.step_ps;
    ics_replay_free(r);
    ics_trace_free(tr);
    rig_close(&g);
    return step;
}

/* The host launches kernels one after another (replay.h). Small kernels: the host sets the pace.
 * Op 0 runs from its first launch (5 us) to its last kernel's share after its last launch
 * (20 + 10 / 4), op 1 from 25 to 42.5; op 2 syncs, so the host launches nothing before 42.5:
 * 47.5 to 62.5 + 2.5 = 65 us, of which the GPU computes 30. Long kernels: the host runs ahead,
 * and only the sync costs: the GPU waits one launch before the third op (5 + 100 + 100 + 5 +
 * 100 us, the first op's launch included). */
static void test_host(void)
{
    ics_time busy, host;
    g_assert_cmpint(host_step(10, 4, &busy, &host), ==, 65 * ICS_PS_PER_US);
    g_assert_cmpint(busy, ==, 30 * ICS_PS_PER_US);
    g_assert_cmpint(host, ==, 35 * ICS_PS_PER_US);
    g_assert_cmpint(host_step(100, 1, &busy, &host), ==, 310 * ICS_PS_PER_US);
    g_assert_cmpint(busy, ==, 300 * ICS_PS_PER_US);
    g_assert_cmpint(host, ==, 10 * ICS_PS_PER_US);
}

/* Only the first stream's ops wait for the host (their readiness is program order): 100
 * launches on another stream neither delay it nor hold back the compute stream's op. */
static void test_host_streams(void)
{
    rig g;
    rig_open(&g, "dgx-h100.json", 0);
    ics_trace *tr = ics_trace_new(1);
    add_streams(tr, 2);
    ics_trace_op side = compute_us(1, 1), comp = compute_us(0, 10);
    side.launches = 100;
    comp.launches = 1;
    ics_trace_add_op(tr, 0, &side, NULL, 0);
    ics_trace_add_op(tr, 0, &comp, NULL, 0);
    ics_replay_opts o = opts(ICS_REPLAY_AUTO);
    o.host_launch_ps = 5 * ICS_PS_PER_US;
    ics_replay_result res;
    ics_replay *r = play(&g, tr, &o, &res);
    g_assert_cmpint(res.step_ps, ==, 15 * ICS_PS_PER_US); /* one launch, then 10 us */
    g_assert_cmpint(ics_replay_rank_stats(r, 0)->host_ps, ==, 5 * ICS_PS_PER_US);
    assert_adds_up(r, 1);
    ics_replay_free(r);
    ics_trace_free(tr);
    rig_close(&g);
}

/* A send/recv pair between nodes: the receiver posts late (bubble), then the transfer takes
 * NCCL's fixed cost plus the network's closed form for the route. */
static void test_p2p_rendezvous(void)
{
    rig g;
    rig_open(&g, "superpod-h100-ndr.json", 2);
    int per = ics_topo_gpus_per_node(g.t);
    ics_trace *tr = ics_trace_new(2 * per);
    add_streams(tr, 2);
    int dst = per; /* GPU 0 of node 1 */
    uint64_t bytes = 64 << 20;
    ics_trace_op s = p2p(ICS_TOP_SEND, dst, bytes), rv = p2p(ICS_TOP_RECV, 0, bytes);
    ics_trace_op late = compute_us(0, 40), after = compute_us(0, 1);
    ics_trace_add_op(tr, 0, &s, NULL, 0);
    int il = ics_trace_add_op(tr, dst, &late, NULL, 0);
    int ir = ics_trace_add_op(tr, dst, &rv, &il, 1);
    ics_trace_add_op(tr, dst, &after, &ir, 1);
    ics_replay_opts o = opts(ICS_REPLAY_AUTO);
    o.p2p_lat_ps = 5 * ICS_PS_PER_US;
    ics_replay_result res;
    ics_replay *r = play(&g, tr, &o, &res);
    ics_route rt;
    int a = ics_topo_gpu(g.t, 0, 0), b = ics_topo_gpu(g.t, 1, 0);
    g_assert_true(ics_route_find(g.t, a, b, 0, &rt));
    g_assert_cmpint(rt.n_paths, ==, 1);
    ics_time xfer = ics_net_idle_path_time(g.t, &rt.paths[0], bytes,
                                           ics_net_packet_payload(g.t, &rt.paths[0], 0));
    ics_route_clear(&rt);
    ics_time want = 40 * ICS_PS_PER_US + 5 * ICS_PS_PER_US + xfer + 1 * ICS_PS_PER_US;
    /* ECMP may pick another (equal) fabric path than hash 0: same hop count and rates */
    g_assert_cmpint(res.step_ps, ==, want);
    g_assert_cmpint(res.critical_rank, ==, dst);
    const ics_replay_rank *rs = ics_replay_rank_stats(r, dst);
    g_assert_cmpint(rs->wait_ps[ICS_CAT_PP], ==, 5 * ICS_PS_PER_US + xfer);
    assert_adds_up(r, 2 * per);
    ics_replay_free(r);
    ics_trace_free(tr);
    rig_close(&g);
}

/* An all-reduce over the 8 GPUs of a DGX H100 takes in a replay what it takes alone, whether
 * memoized or fully simulated; its members wait for the last to arrive. */
static void test_coll_alone(void)
{
    rig g;
    rig_open(&g, "dgx-h100.json", 0);
    uint64_t bytes = 256 << 20;
    ics_replay_colls modes[3] = {ICS_REPLAY_AUTO, ICS_REPLAY_FULL, ICS_REPLAY_MEMO};
    ics_time got[3];
    for (int m = 0; m < 3; m++) {
        ics_trace *tr = ics_trace_new(8);
        add_streams(tr, 1);
        int ranks[8] = {0, 1, 2, 3, 4, 5, 6, 7};
        int c = ics_trace_add_comm(tr, ranks, 8, "tp");
        for (int k = 0; k < 8; k++) {
            ics_trace_op pre = compute_us(0, k == 5 ? 30 : 10),
                         ar = coll(c, ICS_COLL_ALL_REDUCE, bytes, ICS_CAT_TP);
            ics_trace_add_op(tr, k, &pre, NULL, 0);
            ics_trace_add_op(tr, k, &ar, NULL, 0);
        }
        ics_replay_opts o = opts(modes[m]);
        ics_replay_result res;
        ics_replay *r = play(&g, tr, &o, &res);
        got[m] = res.step_ps;
        g_assert_cmpuint(m == ICS_REPLAY_FULL ? res.colls_full : res.colls_memo, ==, 1);
        /* rank 0 waited 20 us for rank 5 inside the call: bubble, not TP time */
        const ics_replay_rank *rs = ics_replay_rank_stats(r, 0);
        g_assert_cmpint(rs->bubble_ps, ==, 20 * ICS_PS_PER_US);
        assert_adds_up(r, 8);
        ics_replay_free(r);
        ics_trace_free(tr);
    }
    int gpus[8];
    for (int k = 0; k < 8; k++)
        gpus[k] = ics_topo_gpu(g.t, 0, k);
    ics_comm *cm = ics_comm_new(g.t, ics_net_backend("packet"), gpus, 8, NULL);
    ics_coll_req req = {.op = ICS_COLL_ALL_REDUCE, .size_bytes = bytes, .dtype_bytes = 2};
    ics_coll_tuning tu = {.nvls_enable = true};
    ics_coll_result alone;
    g_assert_true(ics_comm_run(cm, &req, &tu, &alone));
    for (int m = 0; m < 3; m++)
        g_assert_cmpint(got[m], ==, 30 * ICS_PS_PER_US + alone.time_ps);
    ics_comm_free(cm);
    rig_close(&g);
}

/* Two calls on one communicator issued from two streams at once run one after the other; on
 * two communicators of disjoint GPUs they run side by side. */
static void test_coll_serialize(void)
{
    rig g;
    rig_open(&g, "dgx-h100.json", 0);
    uint64_t bytes = 64 << 20;
    ics_time step[2];
    for (int two_comms = 0; two_comms < 2; two_comms++) {
        ics_trace *tr = ics_trace_new(4);
        add_streams(tr, 2);
        int ra[4] = {0, 1, 2, 3}, rb[2] = {0, 1}, rc[2] = {2, 3};
        int c0 = ics_trace_add_comm(tr, two_comms ? rb : ra, two_comms ? 2 : 4, "a");
        int c1 = two_comms ? ics_trace_add_comm(tr, rc, 2, "b") : c0;
        for (int k = 0; k < 4; k++) {
            if (!two_comms || k < 2) {
                ics_trace_op x = coll(c0, ICS_COLL_ALL_GATHER, bytes, ICS_CAT_TP);
                ics_trace_add_op(tr, k, &x, NULL, 0);
            }
            if (!two_comms || k >= 2) {
                ics_trace_op y = coll(c1, ICS_COLL_ALL_GATHER, bytes, ICS_CAT_DP);
                y.stream = 1;
                ics_trace_add_op(tr, k, &y, NULL, 0);
            }
        }
        ics_replay_opts o = opts(ICS_REPLAY_FULL);
        ics_replay_result res;
        ics_replay *r = play(&g, tr, &o, &res);
        step[two_comms] = res.step_ps;
        ics_replay_free(r);
        ics_trace_free(tr);
    }
    int gpus[4];
    for (int k = 0; k < 4; k++)
        gpus[k] = ics_topo_gpu(g.t, 0, k);
    ics_coll_tuning tu = {.nvls_enable = true};
    ics_coll_req req = {.op = ICS_COLL_ALL_GATHER, .size_bytes = bytes, .dtype_bytes = 2};
    ics_coll_result r4, r2;
    ics_comm *c4 = ics_comm_new(g.t, ics_net_backend("packet"), gpus, 4, NULL);
    ics_comm *c2 = ics_comm_new(g.t, ics_net_backend("packet"), gpus, 2, NULL);
    g_assert_true(ics_comm_run(c4, &req, &tu, &r4));
    g_assert_true(ics_comm_run(c2, &req, &tu, &r2));
    g_assert_cmpint(step[0], ==, 2 * r4.time_ps);
    g_assert_cmpint(step[1], ==, r2.time_ps);
    ics_comm_free(c4);
    ics_comm_free(c2);
    rig_close(&g);
}

/* Sends from four GPUs of one node to four GPUs of another share the node's NICs when they
 * all use GPU 0's NIC... here: four GPUs each to their rail peer use four NICs (side by side),
 * while four GPUs all sending to one GPU share its NIC: slower by about 4x. */
static void test_contention(void)
{
    rig g;
    rig_open(&g, "superpod-h100-ndr.json", 2);
    int per = ics_topo_gpus_per_node(g.t);
    uint64_t bytes = 256 << 20;
    ics_time step[2];
    for (int incast = 0; incast < 2; incast++) {
        ics_trace *tr = ics_trace_new(2 * per);
        add_streams(tr, 2);
        for (int k = 0; k < 4; k++) {
            int dst = per + (incast ? 0 : k);
            ics_trace_op s = p2p(ICS_TOP_SEND, dst, bytes), rv = p2p(ICS_TOP_RECV, k, bytes);
            ics_trace_add_op(tr, k, &s, NULL, 0);
            ics_trace_add_op(tr, dst, &rv, NULL, 0);
        }
        ics_replay_opts o = opts(ICS_REPLAY_AUTO);
        ics_replay_result res;
        ics_replay *r = play(&g, tr, &o, &res);
        step[incast] = res.step_ps;
        ics_replay_free(r);
        ics_trace_free(tr);
    }
    double ratio = (double)step[1] / (double)step[0];
    g_assert_cmpfloat(ratio, >, 3.5);
    g_assert_cmpfloat(ratio, <, 4.5);
    rig_close(&g);
}

/* Two ranks that each wait to receive before sending never finish: the run says who waits. */
static void test_stuck(void)
{
    rig g;
    rig_open(&g, "dgx-h100.json", 0);
    ics_trace *tr = ics_trace_new(2);
    add_streams(tr, 2);
    for (int k = 0; k < 2; k++) {
        ics_trace_op rv = p2p(ICS_TOP_RECV, 1 - k, 1024), s = p2p(ICS_TOP_SEND, 1 - k, 1024);
        int i = ics_trace_add_op(tr, k, &rv, NULL, 0);
        ics_trace_add_op(tr, k, &s, &i, 1);
    }
    ics_replay_opts o = opts(ICS_REPLAY_AUTO);
    GError *err = NULL;
    ics_replay *r = ics_replay_new(tr, g.t, &o, &err);
    g_assert_nonnull(r);
    ics_replay_result res;
    g_assert_false(ics_replay_run(r, &res, &err));
    g_assert_nonnull(strstr(err->message, "cannot finish"));
    g_assert_nonnull(strstr(err->message, "rank 0 op 0"));
    g_clear_error(&err);
    ics_replay_free(r);
    ics_trace_free(tr);
    rig_close(&g);
}

/* More ranks than GPUs, and inconsistent collectives, are refused before running. */
static void test_refused(void)
{
    rig g;
    rig_open(&g, "dgx-h100.json", 0);
    ics_trace *tr = ics_trace_new(9);
    ics_replay_opts o = opts(ICS_REPLAY_AUTO);
    GError *err = NULL;
    g_assert_null(ics_replay_new(tr, g.t, &o, &err));
    g_assert_nonnull(strstr(err->message, "9 ranks"));
    g_clear_error(&err);
    ics_trace_free(tr);
    tr = ics_trace_new(2);
    add_streams(tr, 1);
    int ranks[2] = {0, 1};
    int c = ics_trace_add_comm(tr, ranks, 2, "x");
    ics_trace_op a = coll(c, ICS_COLL_ALL_REDUCE, 1024, ICS_CAT_TP);
    ics_trace_op b = coll(c, ICS_COLL_ALL_REDUCE, 2048, ICS_CAT_TP);
    ics_trace_add_op(tr, 0, &a, NULL, 0);
    ics_trace_add_op(tr, 1, &b, NULL, 0);
    g_assert_null(ics_replay_new(tr, g.t, &o, &err));
    g_assert_nonnull(strstr(err->message, "differs"));
    g_clear_error(&err);
    ics_trace_free(tr);
    rig_close(&g);
}

/* The same replay twice: the same times, op by op. */
static void test_repeat(void)
{
    rig g;
    rig_open(&g, "superpod-h100-ndr.json", 2);
    int n = 2 * ics_topo_gpus_per_node(g.t);
    ics_trace *tr = ics_trace_new(n);
    add_streams(tr, 2);
    int *all = g_new(int, n);
    for (int k = 0; k < n; k++)
        all[k] = k;
    int c = ics_trace_add_comm(tr, all, n, "dp");
    for (int k = 0; k < n; k++) {
        ics_trace_op x = compute_us(0, 3 + k),
                     y = coll(c, ICS_COLL_ALL_REDUCE, 8 << 20, ICS_CAT_DP);
        y.stream = 1;
        int i = ics_trace_add_op(tr, k, &x, NULL, 0);
        ics_trace_add_op(tr, k, &y, &i, 1);
    }
    ics_replay_opts o = opts(ICS_REPLAY_AUTO);
    ics_replay_result a, b;
    ics_replay *ra = play(&g, tr, &o, &a), *rb = play(&g, tr, &o, &b);
    g_assert_cmpint(a.step_ps, ==, b.step_ps);
    g_assert_cmpuint(a.events, ==, b.events);
    g_assert_cmpuint(a.colls_full, ==, 1); /* spans nodes: simulated on the shared network */
    size_t na, nb;
    const ics_replay_span *sa = ics_replay_spans(ra, &na), *sb = ics_replay_spans(rb, &nb);
    g_assert_cmpuint(na, ==, nb);
    g_assert_cmpmem(sa, na * sizeof *sa, sb, nb * sizeof *sb);
    assert_adds_up(ra, n);
    ics_replay_free(ra);
    ics_replay_free(rb);
    g_free(all);
    ics_trace_free(tr);
    rig_close(&g);
}

/* The timeline is valid JSON with a process per rank, a thread per stream, one complete event
 * per op, and counter tracks for the links that carried bytes. */
static void test_timeline(void)
{
    rig g;
    rig_open(&g, "superpod-h100-ndr.json", 2);
    int per = ics_topo_gpus_per_node(g.t);
    ics_trace *tr = ics_trace_new(2 * per);
    add_streams(tr, 2);
    ics_trace_op s = p2p(ICS_TOP_SEND, per, 32 << 20), rv = p2p(ICS_TOP_RECV, 0, 32 << 20);
    ics_trace_op x = compute_us(0, 20);
    x.name = "fwd \"quoted\"";
    ics_trace_add_op(tr, 0, &x, NULL, 0);
    ics_trace_add_op(tr, 0, &s, NULL, 0);
    ics_trace_add_op(tr, per, &rv, NULL, 0);
    ics_replay_opts o = opts(ICS_REPLAY_AUTO);
    o.sample_ps = 1 * ICS_PS_PER_US;
    ics_replay_result res;
    ics_replay *r = play(&g, tr, &o, &res);
    char *dir = g_dir_make_tmp("icsim-timeline-XXXXXX", NULL);
    char *path = g_build_filename(dir, "t.json", NULL);
    GError *err = NULL;
    g_assert_true(ics_timeline_write(r, tr, g.t, path, 0, &err));
    char *text;
    g_assert_true(g_file_get_contents(path, &text, NULL, NULL));
    cJSON *j = cJSON_Parse(text);
    g_assert_nonnull(j);
    cJSON *ev = cJSON_GetObjectItem(j, "traceEvents");
    int procs = 0, threads = 0, spans = 0, counters = 0;
    double link_peak = 0;
    cJSON *e;
    cJSON_ArrayForEach(e, ev)
    {
        const char *ph = cJSON_GetStringValue(cJSON_GetObjectItem(e, "ph"));
        const char *name = cJSON_GetStringValue(cJSON_GetObjectItem(e, "name"));
        if (strcmp(ph, "M") == 0 && strcmp(name, "process_name") == 0)
            procs++;
        else if (strcmp(ph, "M") == 0)
            threads++;
        else if (strcmp(ph, "X") == 0)
            spans++;
        else if (strcmp(ph, "C") == 0) {
            counters++;
            double v =
                cJSON_GetNumberValue(cJSON_GetObjectItem(cJSON_GetObjectItem(e, "args"), "GB/s"));
            link_peak = MAX(link_peak, v);
        }
    }
    g_assert_cmpint(procs, ==, 2 * per + 1); /* ranks + links */
    g_assert_cmpint(threads, ==, 2 * 2 * per);
    g_assert_cmpint(spans, ==, 3);
    g_assert_cmpint(counters, >, 0);
    /* no link carries more than its rate: 400 Gb/s NDR is 50 GB/s, NVLink/PCIe below 1 TB/s */
    g_assert_cmpfloat(link_peak, >, 1);
    g_assert_cmpfloat(link_peak, <, 1000);
    g_assert_nonnull(strstr(text, "fwd \\\"quoted\\\""));
    cJSON_Delete(j);
    g_free(text);
    g_unlink(path);
    g_rmdir(dir);
    g_free(path);
    g_free(dir);
    ics_replay_free(r);
    ics_trace_free(tr);
    rig_close(&g);
}

/* A folded trace: only ranks 0 and 8 of a 16-rank all-reduce have ops; the call starts when
 * they arrive and still moves all 16 ranks' bytes, so it lasts what the whole call lasts. */
static void test_folded(void)
{
    rig g;
    rig_open(&g, "superpod-h100-ndr.json", 2);
    int n = 2 * ics_topo_gpus_per_node(g.t);
    uint64_t bytes = 64 << 20;
    ics_trace *tr = ics_trace_new(n);
    add_streams(tr, 1);
    int *all = g_new(int, n), *gpus = g_new(int, n);
    for (int k = 0; k < n; k++) {
        all[k] = k;
        gpus[k] = ics_topo_gpu(g.t, k / (n / 2), k % (n / 2));
    }
    int c = ics_trace_add_comm(tr, all, n, "dp");
    for (int k = 0; k < n; k += n / 2) {
        ics_trace_op y = coll(c, ICS_COLL_ALL_REDUCE, bytes, ICS_CAT_DP);
        ics_trace_add_op(tr, k, &y, NULL, 0);
    }
    ics_replay_opts o = opts(ICS_REPLAY_FULL);
    ics_replay_result res;
    ics_replay *r = play(&g, tr, &o, &res);
    g_assert_true(res.folded);
    ics_comm *cm = ics_comm_new(g.t, ics_net_backend("packet"), gpus, n, NULL);
    ics_coll_req req = {.op = ICS_COLL_ALL_REDUCE, .size_bytes = bytes, .dtype_bytes = 2};
    ics_coll_result alone;
    g_assert_true(ics_comm_run(cm, &req, &o.tuning, &alone));
    g_assert_cmpint(res.step_ps, ==, alone.time_ps);
    g_assert_cmpint(ics_replay_rank_stats(r, 1)->end_ps, ==, 0); /* mirrored: never ran */
    ics_comm_free(cm);
    ics_replay_free(r);
    g_free(all);
    g_free(gpus);
    ics_trace_free(tr);
    rig_close(&g);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/replay/streams", test_streams);
    g_test_add_func("/replay/host", test_host);
    g_test_add_func("/replay/host-streams", test_host_streams);
    g_test_add_func("/replay/p2p_rendezvous", test_p2p_rendezvous);
    g_test_add_func("/replay/queued_colls", test_queued_colls);
    g_test_add_func("/replay/coll_alone", test_coll_alone);
    g_test_add_func("/replay/coll_serialize", test_coll_serialize);
    g_test_add_func("/replay/contention", test_contention);
    g_test_add_func("/replay/stuck", test_stuck);
    g_test_add_func("/replay/refused", test_refused);
    g_test_add_func("/replay/repeat", test_repeat);
    g_test_add_func("/replay/timeline", test_timeline);
    g_test_add_func("/replay/folded", test_folded);
    return g_test_run();
}
