/* The networks' memo of routes (net/net_routes.h): what it returns is what ics_route_find
 * returns, for every (source, destination, flow hash), also past the bounds (routes, paths)
 * where it starts again and where it stands aside; a route met again is not built again. */
#include "net/net_routes.h"
#include "replay_rig.h" /* rig_open, rig_close */
#include "topo/topo.h"

#include <glib.h>
#include <string.h>

/* r is ics_route_find's route of (src, dst, hash), path by path and hop by hop. */
static void check_same(const ics_topo *t, const ics_route *r, int src, int dst, uint64_t hash)
{
    ics_route want;
    g_assert_true(ics_route_find(t, src, dst, hash, &want));
    g_assert_nonnull(r);
    g_assert_cmpint(r->n_paths, ==, want.n_paths);
    for (int p = 0; p < want.n_paths; p++) {
        g_assert_cmpint(r->paths[p].n_hops, ==, want.paths[p].n_hops);
        g_assert_cmpfloat(r->paths[p].weight, ==, want.paths[p].weight);
        g_assert_cmpmem(r->paths[p].chans, sizeof(int) * (size_t)want.paths[p].n_hops,
                        want.paths[p].chans, sizeof(int) * (size_t)want.paths[p].n_hops);
    }
    ics_route_clear(&want);
}

/* Asks for (src, dst, h) three times: the second and third are the first's route (so two
 * lookups in three hit, and the memo stays in use). */
static const ics_route *ask_thrice(ics_net_routes *m, int src, int dst, uint64_t h)
{
    const ics_route *r = ics_net_routes_find(m, src, dst, h);
    g_assert_true(ics_net_routes_find(m, src, dst, h) == r);
    g_assert_true(ics_net_routes_find(m, src, dst, h) == r);
    return r;
}

/* Across the fabric, where the hash picks the spine (ECMP) and the NIC slot: every key its own
 * route, asked twice (the second time the memo's own, not rebuilt). Node 40 is in another
 * 32-node unit, so its traffic climbs to the spines (a rail's traffic inside one unit, PXN's
 * too, stays on its leaf). */
static void test_same_as_find(void)
{
    rig g;
    rig_open(&g, "superpod-h100-ndr.json", 48);
    ics_net_routes *m = ics_net_routes_new(g.t);
    int gpus[] = {ics_topo_gpu(g.t, 0, 0), ics_topo_gpu(g.t, 0, 3), ics_topo_gpu(g.t, 5, 0),
                  ics_topo_gpu(g.t, 40, 7)};
    bool spread = false; /* some hashes of one pair take different paths */
    for (int a = 0; a < 4; a++)
        for (int b = 0; b < 4; b++)
            for (uint64_t h = 0; h < 64; h++) {
                uint64_t hash = h * 0x9e3779b97f4a7c15ULL;
                const ics_route *r = ics_net_routes_find(m, gpus[a], gpus[b], hash);
                check_same(g.t, r, gpus[a], gpus[b], hash);
                g_assert_true(ics_net_routes_find(m, gpus[a], gpus[b], hash) == r);
                const ics_route *r0 = ics_net_routes_find(m, gpus[a], gpus[b], 0);
                spread = spread || (r->n_paths > 0 && r0->n_paths > 0 &&
                                    memcmp(r->paths[0].chans, r0->paths[0].chans,
                                           sizeof(int) * (size_t)r0->paths[0].n_hops) != 0);
            }
    g_assert_true(spread); /* else the keys' hashes would not be tested */
    ics_net_routes_free(m);
    rig_close(&g);
}

/* More keys than the memo holds (ROUTES_MAX, 262,144), each asked three times in a row (two
 * lookups in three hit, so the memo stays in use): it starts again past the bound and stays right.
 */
static void test_past_the_bound(void)
{
    rig g;
    rig_open(&g, "superpod-h100-ndr.json", 4);
    ics_net_routes *m = ics_net_routes_new(g.t);
    int src = ics_topo_gpu(g.t, 0, 1), dst = ics_topo_gpu(g.t, 3, 1);
    for (uint64_t h = 0; h < 270000; h++) {
        const ics_route *r = ask_thrice(m, src, dst, h);
        if (h % 997 == 0 || h > 262140)
            check_same(g.t, r, src, dst, h);
    }
    g_assert_cmpuint(ics_net_routes_held(m), ==, 270000 - 262144);
    check_same(g.t, ics_net_routes_find(m, src, dst, 5), src, dst, 5);
    ics_net_routes_free(m);
    rig_close(&g);
}

/* Routes of several paths (one per NVSwitch on a DGX H100) fill the memo's bound on paths
 * (262,144) before its bound on routes: it starts again when the paths would pass it. */
static void test_paths_bound(void)
{
    rig g;
    rig_open(&g, "dgx-h100.json", 0);
    ics_net_routes *m = ics_net_routes_new(g.t);
    int src = ics_topo_gpu(g.t, 0, 0), dst = ics_topo_gpu(g.t, 0, 5);
    int np = ics_net_routes_find(m, src, dst, 0)->n_paths;
    g_assert_cmpint(np, >=, 2);
    int fit = (1 << 18) / np, keys = fit + 1000;
    for (int h = 1; h < keys; h++)
        ask_thrice(m, src, dst, (uint64_t)h);
    g_assert_cmpuint(ics_net_routes_held(m), ==, keys - fit);
    check_same(g.t, ics_net_routes_find(m, src, dst, 3), src, dst, 3);
    ics_net_routes_free(m);
    rig_close(&g);
}

/* Keys that never come back (an all-to-all's pairs): after a window of misses the memo stands
 * aside and holds no more, and what it returns is still the route. */
static void test_stands_aside(void)
{
    rig g;
    rig_open(&g, "superpod-h100-ndr.json", 4);
    ics_net_routes *m = ics_net_routes_new(g.t);
    int src = ics_topo_gpu(g.t, 0, 2), dst = ics_topo_gpu(g.t, 2, 2);
    for (uint64_t h = 0; h < 60000; h++) {
        const ics_route *r = ics_net_routes_find(m, src, dst, h);
        if (h % 499 == 0)
            check_same(g.t, r, src, dst, h);
    }
    g_assert_cmpuint(ics_net_routes_held(m), ==, 0); /* its first window's, let go */
    ics_net_routes_free(m);
    rig_close(&g);
}

/* Inside a node and to itself: the same as ics_route_find (one NVSwitch path each; none). */
static void test_inside_a_node(void)
{
    rig g;
    rig_open(&g, "dgx-h100.json", 0);
    ics_net_routes *m = ics_net_routes_new(g.t);
    int a = ics_topo_gpu(g.t, 0, 0), b = ics_topo_gpu(g.t, 0, 6);
    check_same(g.t, ics_net_routes_find(m, a, b, 7), a, b, 7);
    const ics_route *self = ics_net_routes_find(m, a, a, 0);
    g_assert_nonnull(self);
    g_assert_cmpint(self->n_paths, ==, 0);
    ics_net_routes_free(m);
    ics_net_routes_free(NULL);
    rig_close(&g);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/net/routes/same-as-find", test_same_as_find);
    g_test_add_func("/net/routes/past-the-bound", test_past_the_bound);
    g_test_add_func("/net/routes/paths-bound", test_paths_bound);
    g_test_add_func("/net/routes/stands-aside", test_stands_aside);
    g_test_add_func("/net/routes/inside-a-node", test_inside_a_node);
    return g_test_run();
}
