/* NVLink planes (net_planes.c): which channels a fluid solver may see as one, and that the flow
 * backend's times do not change when it does (params.every_link hands SimGrid every channel). */
#include "collectives/comm.h"
#include "core/core.h"
#include "hw/hw.h"
#include "net/net.h"
#include "net/net_planes.h"
#include "topo/topo.h"

#include "coll_rig.h"

#include <glib.h>
#include <math.h>

static ics_topo *open_topo(const char *model, int nodes, const char *fail, ics_hw **hw)
{
    char *path = g_build_filename(ICS_SOURCE_DIR, "hwmodels", model, NULL);
    GError *err = NULL;
    *hw = ics_hw_load(path, nodes, &err);
    g_assert_no_error(err);
    ics_topo *t = ics_topo_new(*hw);
    if (fail) {
        g_assert_true(ics_topo_fail(t, fail, &err));
        g_assert_no_error(err);
    }
    g_free(path);
    return t;
}

static int chan(const ics_topo *t, const char *a, const char *b)
{
    int c = ics_topo_chan_between(t, ics_topo_find(t, a), ics_topo_find(t, b));
    g_assert_cmpint(c, >=, 0);
    return c;
}

/* GPU g's bonds to the node's n switches nvsw0..: each stands for the lowest of them, both ways,
 * the bundle has `links` links; or, when !merged, each stands for itself. */
static void check_gpu(ics_net_planes *p, const ics_topo *t, const char *gpu, int nsw, bool merged,
                      int links)
{
    int up = G_MAXINT, down = G_MAXINT, ups[64], downs[64];
    g_assert_cmpint(nsw, <=, 64);
    for (int s = 0; s < nsw; s++) {
        char sw[32];
        g_snprintf(sw, sizeof sw, "nvsw%d", s);
        ups[s] = chan(t, gpu, sw);
        downs[s] = chan(t, sw, gpu);
        up = MIN(up, ups[s]);
        down = MIN(down, downs[s]);
    }
    for (int s = 0; s < nsw; s++) {
        g_assert_cmpint(ics_net_planes_of(p, ups[s]), ==, merged ? up : ups[s]);
        g_assert_cmpint(ics_net_planes_of(p, downs[s]), ==, merged ? down : downs[s]);
    }
    g_assert_cmpint(ics_net_planes_width(p, up), ==, merged ? links : 0);
    g_assert_cmpint(ics_net_planes_width(p, down), ==, merged ? links : 0);
}

/* Which domains are symmetric. A DGX H100 GPU's 18 links (4/5/5/4 over 4 chips) are one bundle
 * each way, a GB200 NVL72 GPU's 18 (one per chip) too; a DGX-2's boards are joined by switch
 * trunks, which a route can cross on one plane: none. Failures that leave a GPU's bonds unlike
 * the others' (a lane lost, a link slowed) leave its domain as planes; a whole chip down leaves
 * the other three, alike for every GPU: a bundle of 13. Channels off NVLink stand for
 * themselves. */
static void test_domains(void)
{
    const struct {
        const char *model, *fail;
        int nsw, links;
        bool merged;
    } cases[] = {
        {"dgx-h100.json", NULL, 4, 18, true},
        {"gb200-nvl72.json", NULL, 18, 18, true},
        {"dgx2.json", NULL, 6, 0, false},
        {"dgx-h100.json", "lanes:gpu3-nvsw1=4", 4, 0, false},
        {"dgx-h100.json", "link:gpu5-nvsw0@0.5", 4, 0, false},
    };
    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        ics_hw *hw;
        ics_topo *t = open_topo(cases[i].model, 0, cases[i].fail, &hw);
        ics_net_planes *p = ics_net_planes_new(t);
        g_test_message("%s%s%s: %s", cases[i].model, cases[i].fail ? " with " : "",
                       cases[i].fail ? cases[i].fail : "", cases[i].merged ? "merged" : "planes");
        for (int g = 0; g < 8; g++) {
            char gpu[16];
            g_snprintf(gpu, sizeof gpu, "gpu%d", g);
            check_gpu(p, t, gpu, cases[i].nsw, cases[i].merged, cases[i].links);
        }
        g_assert_true(ics_net_planes_merges_at(p, ics_topo_find(t, "nvsw1")) == cases[i].merged);
        g_assert_false(ics_net_planes_merges_at(p, ics_topo_find(t, "gpu0")));
        ics_net_planes_free(p);
        ics_topo_free(t);
        ics_hw_free(hw);
    }
    /* nvsw2 down: the 3 chips left, 4 + 5 + 4 links, alike for every GPU */
    ics_hw *hw;
    ics_topo *t = open_topo("dgx-h100.json", 0, "nvswitch:nvsw2", &hw);
    ics_net_planes *p = ics_net_planes_new(t);
    int up = chan(t, "gpu2", "nvsw0"), other = chan(t, "gpu2", "nvsw3");
    g_assert_cmpint(ics_net_planes_of(p, other), ==, MIN(up, other));
    g_assert_cmpint(ics_net_planes_width(p, MIN(up, other)), ==, 13);
    int n, pcie = -1;
    const int *out = ics_topo_out(t, ics_topo_find(t, "gpu2"), &n);
    for (int i = 0; i < n; i++)
        if (ics_topo_chan_get(t, out[i])->kind != ICS_CHAN_NVLINK)
            pcie = out[i];
    g_assert_cmpint(pcie, >=, 0);
    g_assert_cmpint(ics_topo_chan_get(t, pcie)->kind, !=, ICS_CHAN_NVLINK);
    g_assert_cmpint(ics_net_planes_of(p, pcie), ==, pcie);
    g_assert_cmpint(ics_net_planes_width(p, pcie), ==, 0);
    ics_net_planes_free(p);
    ics_topo_free(t);
    ics_hw_free(hw);
}

/* One collective on the first gpn GPUs of each of `nodes` nodes (coll_rig.h); *algo: what the
 * tuner took. */
static ics_time coll_time(const char *model, int nodes, int gpn, ics_coll_op op, uint64_t bytes,
                          unsigned algos, bool every_link, ics_coll_algo *algo)
{
    char *path = g_build_filename(ICS_SOURCE_DIR, "hwmodels", model, NULL);
    ics_net_params params = {.every_link = every_link};
    rig g;
    rig_open_file_with(&g, path, nodes, gpn, "flow", &params);
    ics_coll_tuning tuning = {.algos = algos};
    ics_coll_result r = rig_run(&g, op, bytes, &tuning);
    *algo = r.algo;
    rig_close(&g);
    g_free(path);
    return r.time_ps;
}

/* Inside one domain the merge changes no share: rings, trees, all-to-all and point-to-point
 * on a DGX H100 and on a GB200 NVL72, with their flows contending on every plane, take the
 * same time with the planes merged as with every channel, to SimGrid's rounding (a few
 * picoseconds). */
static void test_exact(void)
{
    const struct {
        const char *model;
        int gpn;
        ics_coll_op op;
        unsigned algos;
    } cases[] = {
        {"dgx-h100.json", 8, ICS_COLL_ALL_REDUCE, ICS_COLL_SET(ICS_ALGO_RING)},
        {"dgx-h100.json", 8, ICS_COLL_ALL_REDUCE, ICS_COLL_SET(ICS_ALGO_TREE)},
        {"dgx-h100.json", 8, ICS_COLL_ALL_GATHER, 0},
        {"dgx-h100.json", 8, ICS_COLL_ALLTOALL, 0},
        {"dgx-h100.json", 8, ICS_COLL_SENDRECV, 0},
        {"gb200-nvl72.json", 72, ICS_COLL_ALL_REDUCE, ICS_COLL_SET(ICS_ALGO_RING)},
    };
    const uint64_t sizes[] = {64 << 10, 4 << 20, 256 << 20};
    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++)
        for (size_t s = 0; s < G_N_ELEMENTS(sizes); s++) {
            ics_coll_algo a, b;
            ics_time merged = coll_time(cases[i].model, 0, cases[i].gpn, cases[i].op, sizes[s],
                                        cases[i].algos, false, &a);
            ics_time every = coll_time(cases[i].model, 0, cases[i].gpn, cases[i].op, sizes[s],
                                       cases[i].algos, true, &b);
            g_test_message("%s %s %" G_GUINT64_FORMAT " B (%s): %.6f us merged, %.6f us not",
                           cases[i].model, ics_coll_op_name(cases[i].op), sizes[s],
                           ics_coll_algo_name(a), merged / 1e6, every / 1e6);
            g_assert_cmpint(a, ==, b);
            g_assert_cmpfloat(fabs((double)(merged - every)) / (double)every, <, 1e-3);
        }
}

/* Across nodes the merge is not exact, and says by how much. A stream's paths are cut into
 * SimGrid communications by their lengths (net_flow.c, group_max_links), which merging changes,
 * and those move apart under contention; a PXN relay's planes go on to share the NIC, so they
 * stay separate flows, each weighing one share on its GPU's bundle where it weighed one on its
 * plane. On 16 x DGX H100 (128 ranks, streams), measured: within 0.2%. */
static void test_across_nodes(void)
{
    const struct {
        ics_coll_op op;
        unsigned algos;
        uint64_t bytes;
    } cases[] = {
        {ICS_COLL_ALL_REDUCE, ICS_COLL_SET(ICS_ALGO_TREE), 1 << 20},
        {ICS_COLL_ALL_REDUCE, ICS_COLL_SET(ICS_ALGO_RING), 16 << 20},
        {ICS_COLL_ALL_GATHER, 0, 4 << 20},
        {ICS_COLL_ALLTOALL, 0, 64 << 20},
    };
    bool differs = false;
    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        ics_coll_algo a, b;
        ics_time merged = coll_time("superpod-h100-ndr.json", 16, 8, cases[i].op, cases[i].bytes,
                                    cases[i].algos, false, &a);
        ics_time every = coll_time("superpod-h100-ndr.json", 16, 8, cases[i].op, cases[i].bytes,
                                   cases[i].algos, true, &b);
        double d = (double)(merged - every) / (double)every;
        g_test_message("16 x DGX H100 %s %" G_GUINT64_FORMAT " B (%s): %.6f us merged, %.6f us "
                       "not, %+.4f%%",
                       ics_coll_op_name(cases[i].op), cases[i].bytes, ics_coll_algo_name(a),
                       merged / 1e6, every / 1e6, 100 * d);
        g_assert_cmpint(a, ==, b);
        g_assert_cmpfloat(fabs(d), <, 5e-3);
        differs |= merged != every;
    }
    /* and every_link does hand SimGrid every plane (else both runs merge and all of the above
     * compares a run with itself) */
    g_assert_true(differs);
}

/* SimGrid's platform is sealed at the first run: size it for the largest topologies first. */
static void reserve_largest(void)
{
    const char *models[] = {"superpod-h100-ndr.json", "gb200-nvl72.json"};
    for (size_t i = 0; i < G_N_ELEMENTS(models); i++) {
        ics_hw *hw;
        ics_topo *t = open_topo(models[i], i == 0 ? 16 : 0, NULL, &hw);
        GError *err = NULL;
        g_assert_true(ics_net_backend_ready(ics_net_backend("flow"), t, &err));
        g_assert_no_error(err);
        ics_topo_free(t);
        ics_hw_free(hw);
    }
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    reserve_largest();
    g_test_add_func("/net/planes/domains", test_domains);
    g_test_add_func("/net/planes/exact", test_exact);
    g_test_add_func("/net/planes/across-nodes", test_across_nodes);
    return g_test_run();
}
