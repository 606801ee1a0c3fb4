/* NCCL's point-to-point batches (p2p_waves.c): which of an all-to-all's sends run at once. The
 * wave counts below are worked out by hand from NCCL 2.29's rules (init.cc's schedule,
 * channel.h's channel of a round, enqueue.cc's batches), not read off the code's output. */
#include "coll_rig.h"
#include "collectives/algo.h"
#include "collectives/p2p_waves.h"
#include "collectives/tuner.h"

#include <glib.h>
#include <string.h>

/* The waves of a size's all-to-all over every GPU of `nodes` nodes (gpn 0) or gpn of each, with
 * the channels NCCL's tuner gives it. */
/* ... with NCCL_P2P_SCHEDULE_GROUP_SIZE `group` (0: NCCL's 8) and a caller's own kernel on
 * `sms` SMs (0: NCCL's). */
static ics_p2p_waves *waves_grouped(rig *g, const char *model, int nodes, int gpn, uint64_t size,
                                    int group, int sms)
{
    rig_open(g, model, nodes, gpn, "analytic");
    ics_tuner tu;
    ics_tuner_init(&tu, g->t, g->ranks, g->n);
    ics_coll_req req = {.op = ICS_COLL_ALLTOALL, .size_bytes = size, .dtype_bytes = 4};
    ics_coll_tuning want = {.nvls_enable = true};
    ics_tuner_price p;
    ics_tuner_price_call(&tu, &req, &want, ICS_ALGO_DIRECT, ICS_PROTO_SIMPLE, &p);
    ics_algo_ctx c = {.t = g->t,
                      .ranks = g->ranks,
                      .n = g->n,
                      .nch = p.nch,
                      .p2p_channels = ics_tuner_p2p_channels(&tu),
                      .p2p_group = group};
    c.req.sms = sms;
    return ics_p2p_waves_new(&c);
}

static ics_p2p_waves *waves_of(rig *g, const char *model, int nodes, int gpn, uint64_t size)
{
    return waves_grouped(g, model, nodes, gpn, size, 0, 0);
}

/* Every round is a permutation (each rank receives from exactly one sender, so a send and its
 * matching receive share the round), a rank meets every peer once over its rounds, and a
 * send's wave is its round's. */
static void check_rounds(const ics_p2p_waves *w, int n)
{
    gboolean *seen = g_new0(gboolean, n);
    for (int k = 0; k < ics_p2p_waves_count(w); k++) {
        const int *rounds;
        int nr = ics_p2p_waves_rounds(w, k, &rounds);
        for (int i = 0; i < nr; i++) {
            memset(seen, 0, sizeof(gboolean) * (size_t)n);
            for (int a = 0; a < n; a++) {
                int b = ics_p2p_waves_receiver(w, a, rounds[i]);
                g_assert_false(seen[b]);
                seen[b] = TRUE;
            }
        }
    }
    for (int a = 0; a < n; a++) {
        memset(seen, 0, sizeof(gboolean) * (size_t)n);
        for (int k = 0; k < ics_p2p_waves_count(w); k++) {
            const int *rounds;
            int nr = ics_p2p_waves_rounds(w, k, &rounds);
            for (int i = 0; i < nr; i++) {
                int b = ics_p2p_waves_receiver(w, a, rounds[i]);
                g_assert_false(seen[b]);
                seen[b] = TRUE;
                if (b != a)
                    g_assert_cmpint(ics_p2p_waves_of(w, a, b), ==, k);
                else
                    g_assert_cmpint(rounds[i], ==, 0);
            }
        }
        for (int b = 0; b < n; b++)
            g_assert_true(seen[b]);
    }
    g_free(seen);
}

/* Where every peer fits one batch of its channels: one wave. One DGX H100 (8 rounds, one group
 * of 8), two (each node's 8 rounds on its own channel), the 80 GPUs of the 10 x 8 logs (10
 * node deltas over 16 p2p channels, one a channel). */
static void test_one_wave(void)
{
    struct {
        const char *model;
        int nodes, gpn;
    } cases[] = {{"dgx-h100.json", 0, 0},
                 {"superpod-h100-ndr.json", 2, 0},
                 {"superpod-h100-ndr.json", 10, 0},
                 {"polaris.json", 2, 0}};
    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        rig g;
        ics_p2p_waves *w = waves_of(&g, cases[i].model, cases[i].nodes, cases[i].gpn, 1 << 20);
        g_assert_cmpint(ics_p2p_waves_count(w), ==, 1);
        check_rounds(w, g.n);
        ics_p2p_waves_free(w);
        rig_close(&g);
    }
}

/* 8 Polaris nodes (4 GPUs, 4 p2p channels, one a peer): groups are nodes; the walk visits node
 * deltas 0, 1, 3, 6, 2, 7, 5, 4; the i-th delta runs on channel reverse2(i mod 4): 0, 2, 1, 3,
 * 0, ... Deltas 2, 7, 5, 4 come back to channels 0, 2, 1, 3 in another group of 8 rounds, so
 * they make a second batch: the second wave. */
static void test_polaris_eight(void)
{
    rig g;
    ics_p2p_waves *w = waves_of(&g, "polaris.json", 8, 0, 1 << 20);
    g_assert_cmpint(g.n, ==, 32);
    g_assert_cmpint(ics_p2p_waves_count(w), ==, 2);
    static const int second[8] = {0, 0, 1, 0, 1, 1, 0, 1}; /* by node delta */
    for (int a = 0; a < g.n; a++)
        for (int b = 0; b < g.n; b++)
            if (a != b)
                g_assert_cmpint(ics_p2p_waves_of(w, a, b), ==, second[(b / 4 - a / 4 + 8) % 8]);
    check_rounds(w, g.n);
    ics_p2p_waves_free(w);
    rig_close(&g);
}

/* 540 Polaris nodes: 540 node deltas over 4 channels, each batch one node's 4 rounds: 135. */
static void test_polaris_full(void)
{
    rig g;
    ics_p2p_waves *w = waves_of(&g, "polaris.json", 540, 0, 1 << 30);
    g_assert_cmpint(g.n, ==, 2160);
    g_assert_cmpint(ics_p2p_waves_count(w), ==, 135);
    ics_p2p_waves_free(w);
    rig_close(&g);
}

/* 10 nodes of one GPU (the 10 x 1 logs): groups of one, 10 rounds; 4 p2p channels, 2 a peer
 * from 1 MiB: rounds 0-7 share their channels' first batches, rounds 8 and 9 (a second group of
 * 8) open second ones. */
static void test_one_gpu_nodes(void)
{
    rig g;
    ics_p2p_waves *w = waves_of(&g, "superpod-h100-ndr.json", 10, 1, 32 << 20);
    g_assert_cmpint(ics_p2p_waves_count(w), ==, 2);
    const int *rounds;
    g_assert_cmpint(ics_p2p_waves_rounds(w, 1, &rounds), ==, 2);
    g_assert_cmpint(rounds[0], ==, 8);
    g_assert_cmpint(rounds[1], ==, 9);
    check_rounds(w, g.n);
    ics_p2p_waves_free(w);
    rig_close(&g);
}

/* NCCL_P2P_SCHEDULE_GROUP_SIZE=1 on 8 Polaris nodes: every GPU its own group, 32 rounds, the
 * i-th on channel reverse2(i mod 4); a channel takes rounds x, x + 4, ..., x + 28, two from each
 * group of 8 rounds: 4 batches, 4 waves (2 with NCCL's 8, test_polaris_eight). */
static void test_group_size(void)
{
    rig g;
    ics_p2p_waves *w = waves_grouped(&g, "polaris.json", 8, 0, 1 << 20, 1, 0);
    g_assert_cmpint(ics_p2p_waves_count(w), ==, 4);
    check_rounds(w, g.n);
    ics_p2p_waves_free(w);
    rig_close(&g);
}

/* A caller's own kernel (DeepEP's SMs, req.sms) is not batched by NCCL: 540 Polaris nodes in one
 * wave. */
static void test_own_kernel(void)
{
    rig g;
    ics_p2p_waves *w = waves_grouped(&g, "polaris.json", 540, 0, 1 << 30, 0, 24);
    g_assert_cmpint(ics_p2p_waves_count(w), ==, 1);
    ics_p2p_waves_free(w);
    rig_close(&g);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/p2p-waves/one-wave", test_one_wave);
    g_test_add_func("/p2p-waves/polaris-eight", test_polaris_eight);
    g_test_add_func("/p2p-waves/polaris-full", test_polaris_full);
    g_test_add_func("/p2p-waves/one-gpu-nodes", test_one_gpu_nodes);
    g_test_add_func("/p2p-waves/group-size", test_group_size);
    g_test_add_func("/p2p-waves/own-kernel", test_own_kernel);
    return g_test_run();
}
