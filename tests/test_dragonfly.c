/* Dragonfly fabrics (hw/dragonfly.h, sim/topo/topo.c, route.c) against their construction:
 * every two groups joined by a h / (g - 1) global links and every switch using exactly its h
 * global ports; a local link between every two switches of a group; minimal routes cross at
 * most one global link (local, global, local), Valiant routes exactly two; the bisection is the
 * global links between the two halves of the groups; a 2-node all-reduce on Polaris-like nodes
 * runs on every backend, and the analytic and flow backends agree to the picosecond. */
#include "collectives/comm.h"
#include "hw/hw.h"
#include "topo/topo.h"

#include <glib.h>
#include <glib/gstdio.h>
#include <math.h>
#include <string.h>

static ics_hw *load(const char *path, int nodes)
{
    GError *err = NULL;
    ics_hw *hw = ics_hw_load(path, nodes, &err);
    g_assert_no_error(err);
    return hw;
}

static ics_hw *polaris(int nodes)
{
    char *path = g_build_filename(ICS_SOURCE_DIR, "hwmodels", "polaris.json", NULL);
    ics_hw *hw = load(path, nodes);
    g_free(path);
    return hw;
}

/* Network channel widths between fabric switches: global (other group) and local. */
static void count_links(const ics_topo *t, int sw, int *global, int *local, int *nic)
{
    *global = *local = *nic = 0;
    int n;
    const int *out = ics_topo_out(t, sw, &n);
    const ics_topo_dev *a = ics_topo_dev_get(t, sw);
    for (int i = 0; i < n; i++) {
        const ics_topo_chan *c = ics_topo_chan_get(t, out[i]);
        const ics_topo_dev *b = ics_topo_dev_get(t, c->dst);
        if (b->kind == ICS_DEV_NIC)
            *nic += c->width;
        else if (b->pod == a->pod)
            *local += c->width;
        else
            *global += c->width;
    }
}

static void test_wiring(void)
{
    ics_hw *hw = polaris(0);
    ics_topo *t = ics_topo_new(hw);
    const ics_hw_fabric *f = ics_hw_fabric_of(hw);
    int g = f->groups, a = f->group_switches, h = f->global_links;
    int pair = a * h / (g - 1);
    int *between = g_new0(int, g *g);
    for (int s = 0; s < g * a; s++) {
        int sw = ics_topo_net_switch(t, 1, s), global, local, nic;
        count_links(t, sw, &global, &local, &nic);
        g_assert_cmpint(global, ==, h);
        g_assert_cmpint(local, ==, a - 1);
        g_assert_cmpint(nic + local + global, <=, f->radix);
        int n;
        const int *out = ics_topo_out(t, sw, &n);
        for (int i = 0; i < n; i++) {
            const ics_topo_chan *c = ics_topo_chan_get(t, out[i]);
            const ics_topo_dev *b = ics_topo_dev_get(t, c->dst);
            if (b->kind == ICS_DEV_NET_SWITCH && b->pod != s / a)
                between[(s / a) * g + b->pod] += c->width;
        }
    }
    for (int x = 0; x < g; x++)
        for (int y = 0; y < g; y++)
            g_assert_cmpint(between[x * g + y], ==, x == y ? 0 : pair);
    /* the global links between two halves of the groups */
    uint64_t link = ics_hw_standard_bw(f->standard, 1);
    g_assert_cmpuint(ics_topo_bisection_bw(t), ==,
                     (uint64_t)(g / 2) * (uint64_t)((g + 1) / 2) * (uint64_t)pair * link);
    g_free(between);
    ics_topo_free(t);
    ics_hw_free(hw);
}

/* Fabric switches a route crosses, and how many of its hops are global (between groups). */
static void route_shape(const ics_topo *t, int a, int b, uint64_t hash, int *switches, int *globals)
{
    ics_route r;
    g_assert_true(ics_route_find(t, a, b, hash, &r));
    *switches = *globals = 0;
    for (int k = 0; k < r.paths[0].n_hops; k++) {
        const ics_topo_chan *c = ics_topo_chan_get(t, r.paths[0].chans[k]);
        const ics_topo_dev *x = ics_topo_dev_get(t, c->src), *y = ics_topo_dev_get(t, c->dst);
        *switches += y->kind == ICS_DEV_NET_SWITCH;
        *globals +=
            x->kind == ICS_DEV_NET_SWITCH && y->kind == ICS_DEV_NET_SWITCH && x->pod != y->pod;
    }
    ics_route_clear(&r);
}

static void test_routes(void)
{
    ics_hw *hw = polaris(0);
    ics_topo *t = ics_topo_new(hw);
    int per = ics_hw_fabric_of(hw)->switch_nodes,
        group = per * ics_hw_fabric_of(hw)->group_switches;
    int sw, gl;
    route_shape(t, ics_topo_gpu(t, 0, 0), ics_topo_gpu(t, 1, 0), 7, &sw, &gl);
    g_assert_cmpint(sw, ==, 1); /* same switch */
    route_shape(t, ics_topo_gpu(t, 0, 0), ics_topo_gpu(t, per, 0), 7, &sw, &gl);
    g_assert_cmpint(sw, ==, 2); /* same group: one local hop */
    g_assert_cmpint(gl, ==, 0);
    for (uint64_t hsh = 0; hsh < 64; hsh++) { /* other groups: one global hop, <= 4 switches */
        route_shape(t, ics_topo_gpu(t, 0, 0), ics_topo_gpu(t, 3 * group + 5, 1), hsh, &sw, &gl);
        g_assert_cmpint(gl, ==, 1);
        g_assert_cmpint(sw, <=, 4);
    }
    /* a dead local link: around it through a third switch of the group */
    GError *err = NULL;
    g_assert_true(ics_topo_fail(t, "link:g0-sw0-g0-sw1", &err));
    g_assert_no_error(err);
    route_shape(t, ics_topo_gpu(t, 0, 0), ics_topo_gpu(t, per, 0), 7, &sw, &gl);
    g_assert_cmpint(sw, ==, 3);
    g_assert_cmpint(gl, ==, 0);
    ics_topo_free(t);
    ics_hw_free(hw);

    /* the same machine with Valiant routing: two global hops between groups */
    char *dir = g_dir_make_tmp("icsim-df-XXXXXX", NULL);
    char *file = g_build_filename(dir, "valiant.json", NULL);
    char *src = g_build_filename(ICS_SOURCE_DIR, "hwmodels", "polaris.json", NULL);
    char *text = NULL;
    g_assert_true(g_file_get_contents(src, &text, NULL, NULL));
    char *hwdir = g_build_filename(ICS_SOURCE_DIR, "hwmodels", NULL);
    char **parts = g_strsplit(text, "\"topology\": \"dragonfly\",", 2);
    g_assert_nonnull(parts[1]);
    char *v = g_strconcat(parts[0], "\"topology\": \"dragonfly\", \"routing\": \"valiant\",",
                          parts[1], NULL);
    char **p2 = g_strsplit(v, "\"catalog.json\"", 2), **p3 = NULL;
    char *cat = g_strdup_printf("\"%s/catalog.json\"", hwdir);
    char *w = g_strconcat(p2[0], cat, p2[1], NULL);
    p3 = g_strsplit(w, "\"polaris-node.json\"", 2);
    char *node = g_strdup_printf("\"%s/polaris-node.json\"", hwdir);
    char *final = g_strconcat(p3[0], node, p3[1], NULL);
    g_assert_true(g_file_set_contents(file, final, -1, NULL));
    hw = load(file, 0);
    t = ics_topo_new(hw);
    for (uint64_t hsh = 0; hsh < 64; hsh++) {
        route_shape(t, ics_topo_gpu(t, 0, 0), ics_topo_gpu(t, 3 * group + 5, 1), hsh, &sw, &gl);
        g_assert_cmpint(gl, ==, 2);
    }
    /* a dead global link (g0-sw0 to g1-sw0, the first of that pair) and a dead local one:
     * every hash still finds a route, through another intermediate group or link, or around
     * the local link (ics_route_find fails the assertion in route_shape otherwise) */
    g_assert_true(ics_topo_fail(t, "link:g0-sw0-g1-sw0", &err));
    g_assert_true(ics_topo_fail(t, "link:g1-sw0-g1-sw1", &err));
    g_assert_no_error(err);
    for (uint64_t hsh = 0; hsh < 256; hsh++)
        for (int dst = 1; dst < 4; dst++)
            route_shape(t, ics_topo_gpu(t, 0, 0), ics_topo_gpu(t, dst * group + 9, 0), hsh, &sw,
                        &gl);
    ics_topo_free(t);
    ics_hw_free(hw);
    g_remove(file);
    g_rmdir(dir);
    g_strfreev(parts);
    g_strfreev(p2);
    g_strfreev(p3);
    g_free(final);
    g_free(node);
    g_free(w);
    g_free(cat);
    g_free(v);
    g_free(hwdir);
    g_free(text);
    g_free(src);
    g_free(file);
    g_free(dir);
}

/* One switch a group, one global link a pair of groups, Valiant routing: with the g0-g1 link
 * down, routes from g0 that would pass through g1, or end there, take another group; and a
 * 31-switch group with one global link a pair detours around a dead local link on the way to
 * its global link. Both once aborted the simulation or refused the failure. */
static void test_failures(void)
{
    char *dir = g_dir_make_tmp("icsim-df-XXXXXX", NULL);
    char *file = g_build_filename(dir, "c.json", NULL);
    const char *shapes[] = {"\"groups\": 5, \"switches_per_group\": 1, \"nodes_per_switch\": 1, "
                            "\"global_links_per_switch\": 4, \"routing\": \"valiant\"",
                            "\"groups\": 32, \"switches_per_group\": 31, \"nodes_per_switch\": 1, "
                            "\"global_links_per_switch\": 1"};
    const char *fails[] = {"link:g0-sw0-g1-sw0", "link:g0-sw0-g0-sw1"};
    const int nodes[] = {5, 64};
    for (int c = 0; c < 2; c++) {
        char *text = g_strdup_printf(
            "{\"kind\": \"cluster\", \"name\": \"t\", \"source\": \"test\", \"catalog\": "
            "\"%s/hwmodels/catalog.json\", \"node\": \"%s/hwmodels/polaris-node.json\", \"nodes\": "
            "%d, \"fabric\": {\"topology\": \"dragonfly\", \"switch\": \"rosetta\", %s}}",
            ICS_SOURCE_DIR, ICS_SOURCE_DIR, nodes[c], shapes[c]);
        g_assert_true(g_file_set_contents(file, text, -1, NULL));
        ics_hw *hw = load(file, 0);
        ics_topo *t = ics_topo_new(hw);
        GError *err = NULL;
        g_assert_true(ics_topo_fail(t, fails[c], &err));
        g_assert_no_error(err);
        int sw, gl;
        for (int n = 1; n < nodes[c]; n++)
            for (uint64_t h = 0; h < 16; h++)
                route_shape(t, ics_topo_gpu(t, 0, 0), ics_topo_gpu(t, n, 0), h, &sw, &gl);
        ics_topo_free(t);
        ics_hw_free(hw);
        g_free(text);
    }
    g_remove(file);
    g_rmdir(dir);
    g_free(file);
    g_free(dir);
}

static ics_time all_reduce(const ics_topo *t, const char *engine)
{
    int ranks[8];
    ics_topo_gpus_by_node(t, 4, 8, ranks);
    ics_comm *c = ics_comm_new(t, ics_net_backend(engine), ranks, 8, NULL);
    ics_coll_tuning tu = {.nvls_enable = true};
    ics_coll_req req = ics_coll_req_nccltests(ICS_COLL_ALL_REDUCE, 64u << 20, 4, 0, 8, NULL);
    ics_coll_result res;
    g_assert_true(ics_comm_run(c, &req, &tu, &res));
    ics_comm_free(c);
    return res.time_ps;
}

static void test_backends(void)
{
    ics_hw *hw = polaris(2);
    ics_topo *t = ics_topo_new(hw);
    ics_time an = all_reduce(t, "analytic"), pk = all_reduce(t, "packet"),
             fl = all_reduce(t, "flow");
    g_test_message("2 Polaris nodes, 64 MiB all-reduce: analytic %.1f us, packet %.1f, flow %.1f",
                   an / 1e6, pk / 1e6, fl / 1e6);
    g_assert_cmpint(fl, ==, an);
    g_assert_cmpfloat(fabs((double)pk / (double)an - 1), <, 0.10);
    ics_topo_free(t);
    ics_hw_free(hw);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/dragonfly/wiring", test_wiring);
    g_test_add_func("/dragonfly/routes", test_routes);
    g_test_add_func("/dragonfly/backends", test_backends);
    g_test_add_func("/dragonfly/failures", test_failures);
    return g_test_run();
}
