/* The network plugin's latency (hw.h: ics_hw_nic_type.plugin_latency_ps): what a plugin reports
 * to NCCL (ncclNetProperties_t.latency) and NCCL adds to every network hop of its cost model,
 * which icsim charges as what the hop costs. Checked against NCCL's closed forms on AWS p4de
 * (aws-ofi-nccl reports 75 us there), by running each call twice: with the catalog's EFA and
 * with the same EFA reporting 0 (a cluster override), so that everything else cancels. */
#include "coll_rig.h"
#include "collectives/tuner.h"

#include <glib.h>

#define PLUGIN_US 75.0

/* Two p4de nodes, the first `gpn` GPUs of each (0: all 8), their EFA's plugin latency as the
 * catalog says, or overridden to 0. */
static void plug_open(rig *g, int gpn, bool zero)
{
    char *text = g_strdup_printf(
        "{\"kind\": \"cluster\", \"name\": \"p4de\", \"source\": \"test\","
        " \"catalog\": \"%s/hwmodels/catalog.json\", \"node\": \"%s/hwmodels/aws-p4de-node.json\","
        " \"nodes\": 2, \"fabric\": {\"topology\": \"fat-tree\", \"tiers\": 2,"
        " \"switch\": \"spectrum4\", \"standard\": \"eth100\", \"oversubscription\": 1}%s}",
        ICS_SOURCE_DIR, ICS_SOURCE_DIR,
        zero ? ", \"nics\": {\"efa-v1\": {\"plugin_latency_us\": 0}}" : "");
    char *path = rig_write_model("p4de.json", text);
    rig_open_file(g, path, 2, gpn, "analytic");
    rig_remove_model(path);
    g_free(text);
}

/* The time of one call of `size` bytes with algorithm and protocol forced, us. */
static double run_us(rig *g, ics_coll_op op, uint64_t size, ics_coll_algo a, ics_coll_proto p)
{
    ics_coll_tuning tu = {.algos = 1u << a, .protos = 1u << p, .nvls_enable = true};
    ics_coll_req req = {.op = op, .size_bytes = size, .dtype_bytes = 4};
    ics_coll_result r;
    g_assert_true(ics_comm_run(g->c, &req, &tu, &r));
    return ics_time_to_us(r.time_ps);
}

/* What the plugin's latency adds to a call on 2 nodes of `gpn` GPUs: the same call with and
 * without it, in units of the plugin's latency. */
static double added(ics_coll_op op, int gpn, uint64_t size, ics_coll_algo a, ics_coll_proto p)
{
    rig with, without;
    plug_open(&with, gpn, false);
    plug_open(&without, gpn, true);
    double d = run_us(&with, op, size, a, p) - run_us(&without, op, size, a, p);
    rig_close(&with);
    rig_close(&without);
    return d / PLUGIN_US;
}

#define AR ICS_COLL_ALL_REDUCE

/* The catalog's figure reaches NCCL's model (the tuner's latencyInter) only across nodes. */
static void test_reported(void)
{
    rig g;
    plug_open(&g, 0, false);
    ics_tuner tu;
    ics_tuner_init(&tu, g.t, g.ranks, g.n);
    g_assert_cmpfloat_with_epsilon(tu.net_lat_us, PLUGIN_US, 1e-9);
    ics_tuner_init(&tu, g.t, g.ranks, 8); /* node 0's GPUs alone: no network */
    g_assert_cmpfloat(tu.net_lat_us, ==, 0);
    rig_close(&g);
}

/* NCCL's tree on 2 nodes is a chain with one network hop up and one down (tuning.cc: 2 x
 * log2(nNodes) x interLat): a small call pays the plugin's latency twice, four times with
 * Simple, whose every network hop pays it again for the receive flush; with one GPU a node too
 * (the leaf's hop up included). */
static void test_tree(void)
{
    g_assert_cmpfloat_with_epsilon(added(AR, 0, 512, ICS_ALGO_TREE, ICS_PROTO_LL), 2, 1e-4);
    g_assert_cmpfloat_with_epsilon(added(AR, 0, 512, ICS_ALGO_TREE, ICS_PROTO_SIMPLE), 4, 1e-4);
    g_assert_cmpfloat_with_epsilon(added(AR, 1, 512, ICS_ALGO_TREE, ICS_PROTO_LL), 2, 1e-4);
}

/* PAT (one GPU a node, Simple): NCCL prices log2(nNodes) network hops at interLat / 3.5, the
 * plugin's latency twice in interLat: on 2 nodes 2 / 3.5 of it. */
static void test_pat(void)
{
    g_assert_cmpfloat_with_epsilon(
        added(ICS_COLL_ALL_GATHER, 1, 4096, ICS_ALGO_PAT, ICS_PROTO_SIMPLE), 2 / 3.5, 1e-4);
}

/* A ring pays it on every network edge of a slice's path, the first and the last included. With
 * one GPU a node that is NCCL's own count (2.23 on: 2(nNodes - 1) network steps for an
 * all-reduce, nNodes - 1 otherwise): 2 and 1. With 8, a slice's 2(n - 1) = 30 edges cross the
 * network 4 times where NCCL's model counts 2: the simulation follows the slice. */
static void test_ring(void)
{
    g_assert_cmpfloat_with_epsilon(added(AR, 1, 512, ICS_ALGO_RING, ICS_PROTO_LL), 2, 1e-4);
    g_assert_cmpfloat_with_epsilon(added(ICS_COLL_ALL_GATHER, 1, 512, ICS_ALGO_RING, ICS_PROTO_LL),
                                   1, 1e-4);
    g_assert_cmpfloat_with_epsilon(added(AR, 0, 512, ICS_ALGO_RING, ICS_PROTO_LL), 4, 1e-4);
    g_assert_cmpfloat_with_epsilon(added(AR, 0, 512, ICS_ALGO_RING, ICS_PROTO_SIMPLE), 8, 1e-4);
}

/* Large calls pay it on the pipeline's fill and drain, not per slice: at 1 GiB no more than a
 * small call's 4 (part of it hides behind the NICs' queues), under 2% of the call. */
static void test_pipelined(void)
{
    double d = added(AR, 0, 1u << 30, ICS_ALGO_TREE, ICS_PROTO_SIMPLE);
    g_assert_cmpfloat(d, >, 1);
    g_assert_cmpfloat(d, <=, 4 + 1e-4);
    rig g;
    plug_open(&g, 0, false);
    double call = run_us(&g, AR, 1u << 30, ICS_ALGO_TREE, ICS_PROTO_SIMPLE);
    g_assert_cmpfloat(d * PLUGIN_US, <, 0.02 * call);
    rig_close(&g);
}

/* Point-to-point: every send across nodes goes through the plugin once (NCCL's model has no
 * term for it; the message still pays it), all in parallel in an all-to-all: once, twice with
 * Simple. */
static void test_p2p(void)
{
    g_assert_cmpfloat_with_epsilon(
        added(ICS_COLL_ALLTOALL, 0, 64 << 10, ICS_ALGO_DIRECT, ICS_PROTO_LL), 1, 1e-4);
    g_assert_cmpfloat_with_epsilon(
        added(ICS_COLL_ALLTOALL, 0, 512 << 10, ICS_ALGO_DIRECT, ICS_PROTO_SIMPLE), 2, 1e-4);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/net-plugin/reported", test_reported);
    g_test_add_func("/net-plugin/tree", test_tree);
    g_test_add_func("/net-plugin/ring", test_ring);
    g_test_add_func("/net-plugin/pat", test_pat);
    g_test_add_func("/net-plugin/pipelined", test_pipelined);
    g_test_add_func("/net-plugin/p2p", test_p2p);
    return g_test_run();
}
