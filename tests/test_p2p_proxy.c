/* The network transport's per-message costs. Point-to-point across nodes as NCCL's proxy thread
 * posts it (direct.c): each GPU's proxy
 * posts its network receives and sends one after another, in NCCL's round order, each costing
 * NCCL's network overhead (tuning.cc getNetOverhead: 1 us on Intel hosts, 2 on AMD). A small
 * all-to-all's last send therefore waits 2 x (remote peers) postings: checked against that closed
 * form by the difference between two node counts, so that everything else cancels. */
#include "coll_rig.h"
#include "collectives/tuner.h"

#include <glib.h>
#include <math.h>

static double a2a_us(const char *model, int nodes, int gpn, uint64_t size)
{
    rig g;
    rig_open(&g, model, nodes, gpn, "analytic");
    ics_coll_tuning tu = {.nvls_enable = true};
    double us = ics_time_to_us(rig_run(&g, ICS_COLL_ALLTOALL, size, &tu).time_ps);
    rig_close(&g);
    return us;
}

/* The posting cost is NCCL's figure for the host's CPU, and only across nodes. */
static void test_price(void)
{
    struct {
        const char *model;
        int nodes;
        double us;
    } cases[] = {{"polaris.json", 2, 2.0}, {"aws-p4de.json", 2, 1.0}, {"dgx-h100.json", 0, 0}};
    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        rig g;
        rig_open(&g, cases[i].model, cases[i].nodes, 0, "analytic");
        ics_tuner tu;
        ics_tuner_init(&tu, g.t, g.ranks, g.n);
        ics_coll_req req = {.op = ICS_COLL_ALLTOALL, .size_bytes = 1024, .dtype_bytes = 4};
        ics_coll_tuning want = {.nvls_enable = true};
        ics_tuner_price p;
        ics_tuner_price_call(&tu, &req, &want, ICS_ALGO_DIRECT, ICS_PROTO_LL, &p);
        g_assert_cmpfloat_with_epsilon(ics_time_to_us(p.net_op_ps), cases[i].us, 1e-9);
        rig_close(&g);
    }
}

/* Polaris (AMD, 2 us): 8 nodes of 4 GPUs post 2 x 28 network operations a GPU, 2 nodes 2 x 4.
 * Two nodes run them in one wave: the last posting 7 x 2 us after the first. Eight run two
 * (NCCL's batches, p2p_waves.c: node deltas 0, 1, 3, 6, then 2, 7, 5, 4): 2 x 12 postings,
 * the last 23 x 2 us after the first; then, once that wave's sends have arrived (a 32 B send's
 * route, ~1.6 us), the second wave's 2 x 16, its first paid again (2 us) and its last 31 x 2 us
 * later. So the 1 KiB all-to-all's time grows by (23 + 1 + 31 - 7) x 2 = 96 us and one
 * arrival (the eight nodes share one dragonfly switch: the routes' latencies are the same; each
 * peer's part shrinks from 128 to 32 B, a fraction of a microsecond less). Before the proxy was
 * modelled both took ~12 us, where ALCF's logs measure ~60 and ~290. */
static void test_polaris(void)
{
    double two = a2a_us("polaris.json", 2, 0, 1024), eight = a2a_us("polaris.json", 8, 0, 1024);
    g_assert_cmpfloat(eight - two, >=, 96.5);
    g_assert_cmpfloat(eight - two, <=, 98.5);
}

/* AWS p4de (Intel, 1 us): 4 of each node's GPUs have 4 remote peers, all 8 have 8; the wait
 * grows by 2 x 4 postings, 8 us (less the shorter parts, 128 -> 64 B). */
static void test_p4de(void)
{
    double four = a2a_us("aws-p4de.json", 2, 4, 1024), eight = a2a_us("aws-p4de.json", 2, 0, 1024);
    g_assert_cmpfloat(eight - four, >=, 7.5);
    g_assert_cmpfloat(eight - four, <=, 9.0);
}

/* A calibration's proxy_us replaces NCCL's figure: 8 nodes post 2 x 28 operations a GPU, so
 * 10 us instead of 2 adds 56 x 8 us to a small all-to-all. */
static void test_calibrated(void)
{
    char *text = g_strdup_printf("{\"kind\": \"calibration\", \"name\": \"polaris, proxy\","
                                 " \"base\": \"%s/hwmodels/polaris.json\","
                                 " \"calibration\": {\"proxy_us\": 10}}",
                                 ICS_SOURCE_DIR);
    char *path = rig_write_model("polaris-proxy.json", text);
    rig g;
    rig_open_file(&g, path, 8, 0, "analytic");
    ics_coll_tuning tu = {.nvls_enable = true};
    double slow = ics_time_to_us(rig_run(&g, ICS_COLL_ALLTOALL, 1024, &tu).time_ps);
    rig_close(&g);
    rig_remove_model(path);
    g_free(text);
    double fast = a2a_us("polaris.json", 8, 0, 1024);
    g_assert_cmpfloat_with_epsilon(slow - fast, 56 * 8.0, 0.01);
}

/* A ring all-reduce on two DGX H100, one GPU each, Simple forced, with the transport's gap per
 * message (msg_us) calibrated to 2 us and without. 64 MiB is two steps of 16 MiB a rank over the
 * one network edge each way, in NCCL's 512 KiB slices: 64 messages, 128 us more on a NIC-bound
 * call, on the chunk plan message by message and on the stream plan, whose legs carry the gaps
 * in bulk. A broadcast of 256 MiB is a chain of one hop in NCCL's 512 KiB steps: 512 messages,
 * 1024 us. (An all-gather on 2 ranks would not show it: out of place its CTAs store twice what
 * they send, and they, not the NIC, bound it.) */
static double ring_us(ics_coll_op op, uint64_t size, bool gap, ics_coll_plan plan,
                      ics_coll_algo algo)
{
    char *text = g_strdup_printf(
        "{\"kind\": \"calibration\", \"name\": \"gap\", \"base\": "
        "\"%s/hwmodels/superpod-h100-ndr.json\", \"calibration\": {\"msg_us\": %s}}",
        ICS_SOURCE_DIR, gap ? "2" : "0");
    char *path = rig_write_model("gap.json", text);
    rig g;
    rig_open_file(&g, path, 2, 1, "analytic");
    ics_coll_tuning tu = {
        .nvls_enable = true, .algos = 1u << algo, .protos = 1u << ICS_PROTO_SIMPLE, .plan = plan};
    double us = ics_time_to_us(rig_run(&g, op, size, &tu).time_ps);
    rig_close(&g);
    rig_remove_model(path);
    g_free(text);
    return us;
}

static void test_ring_gap(void)
{
    struct {
        ics_coll_op op;
        uint64_t size;
        double us;
    } cases[] = {{ICS_COLL_ALL_REDUCE, 64 << 20, 128}, {ICS_COLL_BROADCAST, 256 << 20, 1024}};
    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        ics_coll_op op = cases[i].op;
        uint64_t b = cases[i].size;
        double chunks = ring_us(op, b, true, ICS_PLAN_CHUNKS, ICS_ALGO_RING) -
                        ring_us(op, b, false, ICS_PLAN_CHUNKS, ICS_ALGO_RING);
        double streams = ring_us(op, b, true, ICS_PLAN_STREAMS, ICS_ALGO_RING) -
                         ring_us(op, b, false, ICS_PLAN_STREAMS, ICS_ALGO_RING);
        g_test_message("%s: the gap adds %.1f us (chunks), %.1f us (streams)", ics_coll_op_name(op),
                       chunks, streams);
        g_assert_cmpfloat(fabs(chunks / cases[i].us - 1), <, 0.02);
        g_assert_cmpfloat(fabs(streams / cases[i].us - 1), <, 0.02);
    }
}

/* A send/recv of 1 KiB on two DGX H100 with proxy_us calibrated to `proxy`. */
static double sendrecv_us(int gpn, const char *proxy)
{
    char *text = g_strdup_printf(
        "{\"kind\": \"calibration\", \"name\": \"proxy\", \"base\": "
        "\"%s/hwmodels/superpod-h100-ndr.json\", \"calibration\": {\"proxy_us\": %s}}",
        ICS_SOURCE_DIR, proxy);
    char *path = rig_write_model("proxy.json", text);
    rig g;
    rig_open_file(&g, path, 2, gpn, "analytic");
    ics_coll_tuning tu = {.nvls_enable = true};
    double us = ics_time_to_us(rig_run(&g, ICS_COLL_SENDRECV, 1024, &tu).time_ps);
    rig_close(&g);
    rig_remove_model(path);
    g_free(text);
    return us;
}

/* Send/recv posts one round: with one GPU a node each rank posts its receive from the other node,
 * then its send: the send waits two postings (10 us instead of 1: 18 us more); with eight, the
 * node's last GPU receives from its neighbour on the node and sends across, its receiver's
 * first posting is that receive: one posting. */
static void test_sendrecv(void)
{
    double one = sendrecv_us(1, "10") - sendrecv_us(1, "1");
    double eight = sendrecv_us(8, "10") - sendrecv_us(8, "1");
    g_assert_cmpfloat_with_epsilon(one, 18.0, 0.01);
    g_assert_cmpfloat_with_epsilon(eight, 9.0, 0.01);
}

/* The same on a tree, 2 x 1: the leaf sends its 256 MiB up and the root the sum down, each way
 * across the network in NCCL's 512 KiB chunks, 512 messages, 1024 us at 2 us each. The stream
 * plan charges them on its legs in bulk (1030.5 us); the chunk plan chunk by chunk comes out
 * 5.7% under (966.1 us): its pipeline's ends overlap part of the gaps with latencies. */
static void test_tree_gap(void)
{
    uint64_t b = 256 << 20;
    double chunks = ring_us(ICS_COLL_ALL_REDUCE, b, true, ICS_PLAN_CHUNKS, ICS_ALGO_TREE) -
                    ring_us(ICS_COLL_ALL_REDUCE, b, false, ICS_PLAN_CHUNKS, ICS_ALGO_TREE);
    double streams = ring_us(ICS_COLL_ALL_REDUCE, b, true, ICS_PLAN_STREAMS, ICS_ALGO_TREE) -
                     ring_us(ICS_COLL_ALL_REDUCE, b, false, ICS_PLAN_STREAMS, ICS_ALGO_TREE);
    g_test_message("tree: the gap adds %.1f us (chunks), %.1f us (streams)", chunks, streams);
    g_assert_cmpfloat(fabs(chunks / 1024 - 1), <, 0.07);
    g_assert_cmpfloat(fabs(streams / 1024 - 1), <, 0.02);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/p2p-proxy/price", test_price);
    g_test_add_func("/p2p-proxy/polaris", test_polaris);
    g_test_add_func("/p2p-proxy/p4de", test_p4de);
    g_test_add_func("/p2p-proxy/calibrated", test_calibrated);
    g_test_add_func("/p2p-proxy/ring-gap", test_ring_gap);
    g_test_add_func("/p2p-proxy/sendrecv", test_sendrecv);
    g_test_add_func("/p2p-proxy/tree-gap", test_tree_gap);
    return g_test_run();
}
