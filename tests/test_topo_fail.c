/* Failures and degradations (topo.h, ics_topo_fail) against hand-computed cases: a DGX H100
 * with one of its four NVSwitches down keeps 14 or 13 of 18 NVLinks per GPU and NCCL's ring
 * search gives 24 or 22 channels; a DGX-1V with one bond down finds fewer rings (6 -> 5 for a
 * single link, 4 for a double one); a 2-node all-reduce whose one leaf-spine bundle runs at half
 * rate moves at half the bus bandwidth; a dead spine, NIC or leaf is routed around; bad specs
 * are refused and change nothing. */
#include "coll_rig.h"
#include "collectives/comm.h"
#include "hw/hw.h"
#include "topo/topo.h"

#include <glib.h>
#include <glib/gstdio.h>
#include <math.h>
#include <string.h>

static ics_hw *load_path(const char *path, int nodes)
{
    GError *err = NULL;
    ics_hw *hw = ics_hw_load(path, nodes, &err);
    g_assert_no_error(err);
    return hw;
}

static ics_hw *load(const char *model, int nodes)
{
    char *path = g_build_filename(ICS_SOURCE_DIR, "hwmodels", model, NULL);
    ics_hw *hw = load_path(path, nodes);
    g_free(path);
    return hw;
}

static void fail_ok(ics_topo *t, const char *spec)
{
    GError *err = NULL;
    g_assert_true(ics_topo_fail(t, spec, &err));
    g_assert_no_error(err);
}

static int nvlinks(const ics_topo *t, int dev)
{
    int w;
    ics_topo_dev_bw(t, dev, ICS_CHAN_NVLINK, &w);
    return w;
}

/* One call on every GPU of t (gpn 0) or the first gpn of each node; the result. */
static ics_coll_result run(const ics_topo *t, int gpn, ics_coll_op op, uint64_t size,
                           const char *algo)
{
    int per = gpn > 0 ? gpn : ics_topo_gpus_per_node(t);
    int n = per * ics_topo_nodes(t), *ranks = g_new(int, n);
    ics_topo_gpus_by_node(t, per, n, ranks);
    ics_comm *c = ics_comm_new(t, ics_net_backend("analytic"), ranks, n, NULL);
    /* NCCL_ALGO as NCCL reads it (the tuning's defaults are the environment's) */
    if (algo)
        g_setenv("NCCL_ALGO", algo, TRUE);
    ics_coll_tuning tu;
    GError *warning = NULL;
    ics_coll_tuning_from_env(&tu, NULL, &warning);
    g_assert_no_error(warning);
    g_unsetenv("NCCL_ALGO");
    ics_coll_req req = {.op = op, .size_bytes = size, .dtype_bytes = 4};
    ics_coll_result r;
    g_assert_true(ics_comm_run(c, &req, &tu, &r));
    ics_comm_free(c);
    g_free(ranks);
    return r;
}

static double busbw_ar(const ics_coll_result *r, uint64_t size, int n)
{
    return (double)size / ics_time_to_s(r->time_ps) * 2.0 * (n - 1) / n / 1e9;
}

/* ---- refused specs ------------------------------------------------------------------------- */

static void test_bad_specs(void)
{
    ics_hw *hw = load("dgx-h100.json", 0);
    ics_topo *t = ics_topo_new(hw);
    int nchans = ics_topo_nchans(t);
    static const struct {
        const char *spec, *says;
    } cases[] = {
        {"", "expected a failure"},
        {"gpu0", "expected nvlink:, nvswitch:"},
        {"cable:gpu0-gpu1", "expected nvlink:, nvswitch:"},
        {"nvswitch:nvsw9", "no device nvsw9 in node 0"},
        {"nvswitch:gpu3", "0:gpu3 is a gpu, not a nvswitch"},
        {"nic:nvsw0", "0:nvsw0 is a nvswitch, not a nic"},
        {"nvlink:gpu0-gpu1", "no live NVLink link between 0:gpu0 and 0:gpu1"},
        {"nvlink:gpu0-gpux", "expected A-B naming two devices"},
        {"link:gpu0-nvsw0@1.5", "expected a rate factor in (0, 1]"},
        {"link:gpu0-nvsw0@0", "expected a rate factor in (0, 1]"},
        {"link:gpu0-nvsw0@nan", "expected a rate factor in (0, 1]"},
        {"lanes:gpu0-nvsw0", "expected lanes:A-B=N"},
        {"lanes:gpu0-nvsw0=5", "expected at most the 4 links"},
        {"lanes:gpu0-nvsw0=-1", "expected a link count >= 0"},
        {"link:gpu0-pex0", "no live link between"},
        {"nic:1:mlx5_0", "expected a node in 0..0"},
        {"nic:x:mlx5_0", "expected a node number or *"},
        {"switch:0:leaf0", "fabric switches belong to no node"},
        {"nvswitch:nvsw0,nvswitch:nvsw0", "0:nvsw0 is already down"},
    };
    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        GError *err = NULL;
        g_assert_false(ics_topo_fail(t, cases[i].spec, &err));
        g_assert_error(err, ICS_ERROR, ICS_ERROR_INPUT);
        if (!strstr(err->message, cases[i].says))
            g_error("%s: got \"%s\", expected it to say \"%s\"", cases[i].spec, err->message,
                    cases[i].says);
        g_error_free(err);
        g_assert_cmpint(ics_topo_nchans(t), ==, nchans); /* refused: nothing changed */
        g_assert_cmpint(ics_topo_nfailures(t), ==, 0);
    }
    /* a PCIe link slows but does not die */
    GError *err = NULL;
    int gpu0 = ics_topo_gpu(t, 0, 0), up = ics_topo_dev_get(t, gpu0)->pcie_parent;
    char *spec = g_strdup_printf("link:gpu0-%s", ics_topo_dev_get(t, up)->name);
    g_assert_false(ics_topo_fail(t, spec, &err));
    g_assert_nonnull(strstr(err->message, "only NVLink and network links can be taken down"));
    g_clear_error(&err);
    uint64_t bw = ics_topo_chan_get(t, ics_topo_chan_between(t, gpu0, up))->bw_bytes_per_s;
    char *slow = g_strdup_printf("%s@0.25", spec);
    fail_ok(t, slow);
    g_assert_cmpuint(ics_topo_chan_get(t, ics_topo_chan_between(t, up, gpu0))->bw_bytes_per_s, ==,
                     (bw + 2) / 4);
    g_free(slow);
    g_free(spec);
    ics_topo_free(t);
    ics_hw_free(hw);
}

/* ---- NVSwitch -------------------------------------------------------------------------------- */

/* DGX H100: GPUs have 4, 5, 5, 4 NVLinks into nvsw0..3. One switch down leaves 14 or 13 links;
 * NCCL's ring search (sm90 speeds) on 14 x 20.6 = 288 GB/s takes 12 rings of 24 GB/s, not
 * duplicated below 25: 24 channels; on 13 x 20.6 = 268, 11 x 24: 22 channels (18 links: 6 x 60,
 * duplicated twice: 24). A large ring all-reduce moves in proportion to the links left. */
static void test_nvswitch_down(void)
{
    static const struct {
        const char *sw;
        int links, channels;
    } cases[] = {{NULL, 18, 24}, {"nvswitch:nvsw0", 14, 24}, {"nvswitch:nvsw1", 13, 22}};
    const uint64_t size = 1ULL << 30;
    double intact = 0;
    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        ics_hw *hw = load("dgx-h100.json", 0);
        ics_topo *t = ics_topo_new(hw);
        if (cases[i].sw)
            fail_ok(t, cases[i].sw);
        for (int g = 0; g < 8; g++)
            g_assert_cmpint(nvlinks(t, ics_topo_gpu(t, 0, g)), ==, cases[i].links);
        char cls[16];
        char want[16];
        g_snprintf(want, sizeof want, "NV%d", cases[i].links);
        g_assert_cmpstr(ics_topo_path_class(t, ics_topo_gpu(t, 0, 0), ics_topo_gpu(t, 0, 5), cls),
                        ==, want);
        ics_route r;
        g_assert_true(ics_route_find(t, ics_topo_gpu(t, 0, 0), ics_topo_gpu(t, 0, 5), 0, &r));
        g_assert_cmpint(r.n_paths, ==, cases[i].sw ? 3 : 4);
        ics_route_clear(&r);
        ics_coll_result ring = run(t, 0, ICS_COLL_ALL_REDUCE, size, "Ring");
        g_assert_cmpint(ring.nchannels, ==, cases[i].channels);
        double bw = busbw_ar(&ring, size, 8);
        if (!cases[i].sw)
            intact = bw;
        else /* the links left set the pace: within 3% of 14/18 or 13/18 of the intact figure */
            g_assert_cmpfloat(fabs(bw / intact - cases[i].links / 18.0), <, 0.03);
        /* NVLS still runs, over the switches left */
        ics_coll_result nvls = run(t, 0, ICS_COLL_ALL_REDUCE, size, "NVLS");
        g_assert_cmpint(nvls.algo, ==, ICS_ALGO_NVLS);
        if (g_test_verbose())
            g_printerr("%s: %d links, ring %d channels %.1f GB/s, NVLS %.1f GB/s\n",
                       cases[i].sw ? cases[i].sw : "intact", cases[i].links, ring.nchannels, bw,
                       busbw_ar(&nvls, size, 8));
        ics_topo_free(t);
        ics_hw_free(hw);
    }
}

/* A GPU other than rank 0 with fewer links: NCCL's search runs on what every GPU has. gpu3 with
 * 2 of its 5 links to nvsw1 keeps 15: 15 x 20.6 = 309 GB/s, 5 rings of 60 GB/s, doubled twice:
 * 20 channels (24 intact). */
static void test_lanes_elsewhere(void)
{
    ics_hw *hw = load("dgx-h100.json", 0);
    ics_topo *t = ics_topo_new(hw);
    fail_ok(t, "lanes:gpu3-nvsw1=2");
    ics_coll_result r = run(t, 0, ICS_COLL_ALL_REDUCE, 1u << 30, "Ring");
    g_assert_cmpint(r.nchannels, ==, 20);
    ics_topo_free(t);
    ics_hw_free(hw);
}

static void test_lanes(void)
{
    ics_hw *hw = load("dgx-h100.json", 0);
    ics_topo *t = ics_topo_new(hw);
    fail_ok(t, "lanes:gpu0-nvsw1=2");
    g_assert_cmpint(nvlinks(t, ics_topo_gpu(t, 0, 0)), ==, 15);
    g_assert_cmpint(nvlinks(t, ics_topo_gpu(t, 0, 1)), ==, 18);
    const ics_topo_chan *c = ics_topo_chan_get(
        t, ics_topo_chan_between(t, ics_topo_gpu(t, 0, 0), ics_topo_find(t, "nvsw1")));
    g_assert_cmpint(c->width, ==, 2);
    g_assert_cmpuint(c->bw_bytes_per_s, ==, 50000000000ULL); /* 2 x 25 GB/s */
    g_assert_cmpint(ics_topo_nfailures(t), ==, 1);
    g_assert_nonnull(strstr(ics_topo_failure(t, 0), "keeps 2 of 5 links"));
    ics_topo_free(t);
    ics_hw_free(hw);
}

/* ---- DGX-1: fewer rings ---------------------------------------------------------------------- */

/* DGX-1V: 6 NVLinks per GPU, 6 NVLink-only rings, 12 channels. gpu0-gpu1 is a single link:
 * 5 rings; gpu0-gpu3 a double one: 4 (the most Hamiltonian cycles the bonds left carry at
 * once, counted by hand from the cube-mesh). DGX-1P (4 single links each): 4 rings, 8
 * channels; a bond down: 3. */
static void test_dgx1_bond(void)
{
    static const struct {
        const char *model, *spec;
        int channels;
        const char *cls01;
    } cases[] = {
        {"dgx1-v100.json", NULL, 12, "NV1"},
        {"dgx1-v100.json", "nvlink:gpu0-gpu1", 10, "SYS"},
        {"dgx1-v100.json", "nvlink:gpu0-gpu3", 8, "NV1"},
        {"dgx1-v100.json", "lanes:gpu0-gpu3=1", 10, "NV1"},
        {"dgx1-p100.json", NULL, 8, "NV1"},
        {"dgx1-p100.json", "nvlink:gpu0-gpu1", 6, "SYS"},
    };
    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        ics_hw *hw = load(cases[i].model, 0);
        ics_topo *t = ics_topo_new(hw);
        if (cases[i].spec)
            fail_ok(t, cases[i].spec);
        ics_coll_result r = run(t, 0, ICS_COLL_ALL_REDUCE, 256u << 20, "Ring");
        if (g_test_verbose())
            g_printerr("%s %s: %d channels\n", cases[i].model,
                       cases[i].spec ? cases[i].spec : "intact", r.nchannels);
        g_assert_cmpint(r.nchannels, ==, cases[i].channels);
        char cls[16];
        const char *got = ics_topo_path_class(t, ics_topo_gpu(t, 0, 0), ics_topo_gpu(t, 0, 1), cls);
        g_assert_true(strcmp(got, cases[i].cls01) == 0 ||
                      (strcmp(cases[i].cls01, "SYS") == 0 && !g_str_has_prefix(got, "NV")));
        /* a route still joins every pair (through PCIe where the bond died) */
        for (int a = 0; a < 8; a++)
            for (int b = 0; b < 8; b++) {
                ics_route rt;
                g_assert_true(
                    ics_route_find(t, ics_topo_gpu(t, 0, a), ics_topo_gpu(t, 0, b), 0, &rt));
                ics_route_clear(&rt);
            }
        ics_topo_free(t);
        ics_hw_free(hw);
    }
}

/* ---- the fabric ------------------------------------------------------------------------------ */

/* Two DGX H100 on two leaves of radix 16 and one spine: each leaf's 8 uplinks are one bundle
 * of 8 x 50 GB/s. A 2-node ring all-reduce runs 8 channels, each leaving its node through its
 * own NIC and crossing the bundle once each way. Intact, a channel moves at its CTAs' ceiling
 * (2 of NCCL's per simulated channel x 19.35 GB/s = 38.7 GB/s, below the NIC's 50): bus
 * bandwidth 8 x 38.7 = 309.6 GB/s. At half rate the bundle gives each channel 200 / 8 = 25 GB/s:
 * 200 GB/s, a ratio of 0.646 (pipeline fill and latency take a few percent off both). */
static char *two_leaf_model(void)
{
    char *text = g_strdup_printf(
        "{\"kind\": \"cluster\", \"name\": \"two DGX H100 on two leaves\",\n"
        " \"catalog\": \"%s/hwmodels/catalog.json\", \"node\": \"%s/hwmodels/dgx-h100.json\",\n"
        " \"nodes\": 2, \"fabric\": {\"topology\": \"fat-tree\", \"tiers\": 2, \"switch\": "
        "\"quantum2\", \"radix\": 16, \"oversubscription\": 1, \"rail_optimized\": false}}\n",
        ICS_SOURCE_DIR, ICS_SOURCE_DIR);
    char *path = rig_write_model("two.json", text);
    g_free(text);
    return path;
}

static void test_leaf_spine_half(void)
{
    char *path = two_leaf_model();
    const uint64_t size = 1ULL << 30;
    double bw[2];
    for (int half = 0; half < 2; half++) {
        ics_hw *hw = load_path(path, 0);
        ics_topo *t = ics_topo_new(hw);
        g_assert_cmpint(ics_topo_fattree(t)->leaves, ==, 2);
        if (half)
            fail_ok(t, "link:leaf0-spine0@0.5");
        ics_coll_result r = run(t, 0, ICS_COLL_ALL_REDUCE, size, "Ring");
        bw[half] = busbw_ar(&r, size, 16);
        ics_topo_free(t);
        ics_hw_free(hw);
    }
    if (g_test_verbose())
        g_printerr("2-node ring all-reduce 1 GiB: %.1f -> %.1f GB/s\n", bw[0], bw[1]);
    g_assert_cmpfloat(fabs(bw[0] / 309.6 - 1), <, 0.05);
    g_assert_cmpfloat(fabs(bw[1] / 200.0 - 1), <, 0.08);
    g_assert_cmpfloat(fabs(bw[1] / bw[0] - 200.0 / 309.6), <, 0.04);
    /* the only spine down splits the fabric: refused, nothing changed */
    ics_hw *hw = load_path(path, 0);
    ics_topo *t = ics_topo_new(hw);
    GError *err = NULL;
    g_assert_false(ics_topo_fail(t, "switch:spine0", &err));
    g_assert_nonnull(strstr(err->message, "split the fabric: leaf0 and leaf1"));
    g_clear_error(&err);
    g_assert_false(ics_topo_fail(t,
                                 "nic:*:mlx5_0 nic:1:mlx5_3,nic:1:mlx5_4,nic:1:mlx5_5,"
                                 "nic:1:mlx5_6,nic:1:mlx5_9,nic:1:mlx5_10,nic:1:mlx5_11",
                                 &err));
    g_assert_nonnull(strstr(err->message, "node 1 without a live compute NIC"));
    g_clear_error(&err);
    g_assert_cmpint(ics_topo_nfailures(t), ==, 0);
    ics_topo_free(t);
    ics_hw_free(hw);
    rig_remove_model(path);
}

/* A spine of the SuperPOD down: every route between two leaves avoids it and still exists. */
static void test_spine_down(void)
{
    ics_hw *hw = load("superpod-h100-ndr.json", 64);
    ics_topo *t = ics_topo_new(hw);
    fail_ok(t, "switch:spine3");
    int spine3 = ics_topo_find(t, "spine3");
    g_assert_true(ics_topo_dev_get(t, spine3)->down);
    int n;
    ics_topo_out(t, spine3, &n);
    g_assert_cmpint(n, ==, 0);
    int crossings = 0;
    for (int a = 0; a < 64; a += 7)
        for (int b = 0; b < 64; b += 5)
            for (int g = 0; g < 8; g += 3) {
                ics_route r;
                int src = ics_topo_gpu(t, a, g), dst = ics_topo_gpu(t, b, (g + 1) % 8);
                g_assert_true(ics_route_find(t, src, dst, (uint64_t)(a * 64 + b), &r));
                for (int p = 0; p < r.n_paths; p++)
                    for (int h = 0; h < r.paths[p].n_hops; h++) {
                        const ics_topo_chan *c = ics_topo_chan_get(t, r.paths[p].chans[h]);
                        g_assert_cmpint(c->dst, !=, spine3);
                        crossings += ics_topo_dev_get(t, c->dst)->tier == 2;
                    }
                ics_route_clear(&r);
            }
    g_assert_cmpint(crossings, >, 0);
    ics_topo_free(t);
    ics_hw_free(hw);
}

/* A NIC down: its GPU leaves the node through another NIC. A leaf down takes the NICs cabled
 * to it. */
static void test_nic_down(void)
{
    ics_hw *hw = load("superpod-h100-ndr.json", 2);
    ics_topo *t = ics_topo_new(hw);
    int gpu0 = ics_topo_gpu(t, 0, 0), mlx0 = ics_topo_find(t, "0:mlx5_0");
    g_assert_cmpint(ics_route_nic_of_gpu(t, gpu0), ==, mlx0);
    fail_ok(t, "nic:0:mlx5_0");
    int nic = ics_route_nic_of_gpu(t, gpu0);
    g_assert_cmpint(nic, >=, 0);
    g_assert_cmpint(nic, !=, mlx0);
    g_assert_false(ics_topo_dev_get(t, nic)->down);
    ics_route r;
    g_assert_true(ics_route_find(t, gpu0, ics_topo_gpu(t, 1, 0), 0, &r));
    ics_route_clear(&r);
    run(t, 0, ICS_COLL_ALL_REDUCE, 1u << 20, "Ring");
    ics_topo_free(t);
    ics_hw_free(hw);

    hw = load("superpod-h100-ndr.json", 2);
    t = ics_topo_new(hw);
    fail_ok(t, "switch:leaf1");
    /* rail 1 (mlx5_3, GPU 1's NIC) of both nodes is cabled to leaf1 */
    g_assert_true(ics_topo_dev_get(t, ics_topo_find(t, "0:mlx5_3"))->down);
    g_assert_true(ics_topo_dev_get(t, ics_topo_find(t, "1:mlx5_3"))->down);
    g_assert_false(ics_topo_dev_get(t, ics_topo_find(t, "1:mlx5_4"))->down);
    int nic1 = ics_route_nic_of_gpu(t, ics_topo_gpu(t, 1, 1));
    g_assert_cmpint(nic1, >=, 0);
    g_assert_cmpint(nic1, !=, ics_topo_find(t, "1:mlx5_3"));
    run(t, 0, ICS_COLL_ALL_REDUCE, 1u << 20, NULL);
    ics_topo_free(t);
    ics_hw_free(hw);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    static const char *const nccl_vars[] = {"NCCL_ALGO",          "NCCL_PROTO",
                                            "NCCL_NVLS_ENABLE",   "NCCL_COLLNET_ENABLE",
                                            "NCCL_MIN_NCHANNELS", "NCCL_MAX_NCHANNELS"};
    for (size_t i = 0; i < G_N_ELEMENTS(nccl_vars); i++)
        g_unsetenv(nccl_vars[i]);
    g_test_add_func("/topo_fail/bad-specs", test_bad_specs);
    g_test_add_func("/topo_fail/nvswitch-down", test_nvswitch_down);
    g_test_add_func("/topo_fail/lanes", test_lanes);
    g_test_add_func("/topo_fail/lanes-elsewhere", test_lanes_elsewhere);
    g_test_add_func("/topo_fail/dgx1-bond", test_dgx1_bond);
    g_test_add_func("/topo_fail/leaf-spine-half", test_leaf_spine_half);
    g_test_add_func("/topo_fail/spine-down", test_spine_down);
    g_test_add_func("/topo_fail/nic-down", test_nic_down);
    return g_test_run();
}
