/* Topology and routing against the real machines: the nvidia-smi matrices our models produce
 * must equal what `nvidia-smi topo -m` printed on DGX-1, DGX-2, DGX A100 and DGX H100/H200
 * (copies of the public dumps in tests/data/topo/), every GPU pair of every shipped model must
 * be routable, and fabric routes must be up/down and loop-free. */
#include "hw/hw.h"
#include "topo/topo.h"

#include <glib.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static ics_hw *load(const char *model, int nodes)
{
    char *path = g_build_filename(ICS_SOURCE_DIR, "hwmodels", model, NULL);
    GError *err = NULL;
    ics_hw *hw = ics_hw_load(path, nodes, &err);
    g_assert_no_error(err);
    g_assert_nonnull(hw);
    g_free(path);
    return hw;
}

/* ---- nvidia-smi matrices ------------------------------------------------------------------ */

/* Our device for a column label of the dump: GPUk, mlx5_k, or NICk (through the NIC legend,
 * which on these machines maps NICk to mlx5_k). */
static int dev_of_label(const ics_topo *t, const char *label)
{
    if (g_str_has_prefix(label, "GPU"))
        return ics_topo_gpu(t, 0, atoi(label + 3));
    char name[32];
    if (g_str_has_prefix(label, "NIC"))
        g_snprintf(name, sizeof name, "mlx5_%d", atoi(label + 3));
    else
        g_snprintf(name, sizeof name, "%s", label);
    return ics_topo_find(t, name);
}

/* Compares every complete cell of the dump with our path class; returns cells compared. */
static int compare_dump(const ics_topo *t, const char *dump)
{
    char *path = g_build_filename(ICS_SOURCE_DIR, "tests", "data", "topo", dump, NULL);
    char *text = NULL;
    g_assert_true(g_file_get_contents(path, &text, NULL, NULL));
    char *body = strstr(text, "---- verbatim below ----");
    g_assert_nonnull(body);
    char **lines = g_strsplit(body, "\n", -1);
    GRegex *label_re = g_regex_new("GPU[0-9]+|mlx5_[0-9]+|NIC[0-9]+", 0, 0, NULL);
    GRegex *cell_re = g_regex_new("\\bX\\b|NV[0-9]+|PIX|PXB|PHB|NODE|SYS|SOC", 0, 0, NULL);
    GPtrArray *cols = g_ptr_array_new_with_free_func(g_free);
    int compared = 0;
    for (char **l = lines; *l; l++) {
        char *line = g_strstrip(g_strdup(*l));
        if (cols->len == 0 && g_str_has_prefix(line, "GPU0")) {
            GMatchInfo *m;
            g_regex_match(label_re, line, 0, &m);
            for (; g_match_info_matches(m); g_match_info_next(m, NULL))
                g_ptr_array_add(cols, g_match_info_fetch(m, 0));
            g_match_info_free(m);
        } else if (cols->len > 0 && g_regex_match(label_re, line, G_REGEX_MATCH_ANCHORED, NULL) &&
                   !strchr(line, ':')) {
            /* cells by pattern, not by tab: some posted dumps lost a tab ("PXBNODE") */
            GPtrArray *tok = g_ptr_array_new_with_free_func(g_free);
            GMatchInfo *m;
            g_regex_match(cell_re, line, 0, &m);
            for (; g_match_info_matches(m); g_match_info_next(m, NULL))
                g_ptr_array_add(tok, g_match_info_fetch(m, 0));
            g_match_info_free(m);
            char *label = g_strndup(line, strcspn(line, " \t"));
            int row = dev_of_label(t, label);
            g_assert_cmpint(row, >=, 0);
            int ntok = (int)tok->len;
            /* a row cut mid-way (a partial dump) keeps only its complete cells */
            int cells = ntok >= (int)cols->len ? (int)cols->len : ntok - 1;
            for (int j = 0; j < cells; j++) {
                int col = dev_of_label(t, g_ptr_array_index(cols, j));
                g_assert_cmpint(col, >=, 0);
                char cls[16];
                const char *cell = g_ptr_array_index(tok, j);
                const char *want = strcmp(cell, "SOC") == 0 ? "SYS" : cell;
                const char *got = ics_topo_path_class(t, row, col, cls);
                if (strcmp(want, got) != 0)
                    g_error("%s: %s/%s: nvidia-smi says %s, icsim says %s", dump, label,
                            (char *)g_ptr_array_index(cols, j), want, got);
                compared++;
            }
            g_free(label);
            g_ptr_array_free(tok, TRUE);
        }
        g_free(line);
    }
    g_ptr_array_free(cols, TRUE);
    g_regex_unref(label_re);
    g_regex_unref(cell_re);
    g_strfreev(lines);
    g_free(text);
    g_free(path);
    return compared;
}

static void check_matrix(const char *model, const char *dump, int min_cells)
{
    ics_hw *hw = load(model, 0);
    ics_topo *t = ics_topo_new(hw);
    int n = compare_dump(t, dump);
    g_test_message("%s vs %s: %d cells equal", model, dump, n);
    g_assert_cmpint(n, >=, min_cells);
    ics_topo_free(t);
    ics_hw_free(hw);
}

static void test_matrix_dgx1_v100(void)
{
    check_matrix("dgx1-v100.json", "dgx-1-v100_nvidia-smi-topo_msccl-tools.txt", 12 * 12);
}

static void test_matrix_dgx1_p100(void)
{
    check_matrix("dgx1-p100.json", "dgx-1-p100_nvidia-smi-topo_rse-sheffield.txt", 12 * 12);
}

static void test_matrix_dgx_a100(void)
{
    check_matrix("dgx-a100.json", "dgx-a100_nvidia-smi-topo_gengwg-cheatsheets.txt", 20 * 20);
}

static void test_matrix_dgx_h100(void)
{
    /* A DGX H200 has the DGX H100's board and PCIe layout; the partial DGX H100 dump agrees. */
    check_matrix("dgx-h100.json", "dgx-h200_nvidia-smi-topo_distributedai.txt", 20 * 20);
}

static void test_matrix_hgx_b200(void)
{
    check_matrix("hgx-b200.json", "dgx-b200_nvidia-smi-topo_nccl-tests-issue333.txt", 24 * 24);
}

static void test_matrix_dgx2(void)
{
    check_matrix("dgx2.json", "dgx-2_nvidia-smi-topo_nccl-tests-issue78_PARTIAL.txt", 4 * 26);
}

/* ---- routes -------------------------------------------------------------------------------- */

/* A path starts at src, ends at dst, hops are contiguous, and no device repeats. */
static void check_path(const ics_topo *t, int src, int dst, const ics_route_path *p)
{
    g_assert_cmpint(p->n_hops, >, 0);
    GHashTable *seen = g_hash_table_new(g_direct_hash, g_direct_equal);
    int at = src;
    g_hash_table_add(seen, GINT_TO_POINTER(at));
    for (int h = 0; h < p->n_hops; h++) {
        const ics_topo_chan *c = ics_topo_chan_get(t, p->chans[h]);
        g_assert_cmpint(c->src, ==, at);
        at = c->dst;
        g_assert_false(g_hash_table_contains(seen, GINT_TO_POINTER(at)));
        g_hash_table_add(seen, GINT_TO_POINTER(at));
    }
    g_assert_cmpint(at, ==, dst);
    g_hash_table_destroy(seen);
}

static void check_route(const ics_topo *t, int a, int b, uint64_t hash)
{
    ics_route r;
    g_assert_true(ics_route_find(t, a, b, hash, &r));
    g_assert_cmpint(r.n_paths, >=, 1);
    double sum = 0;
    for (int p = 0; p < r.n_paths; p++) {
        check_path(t, a, b, &r.paths[p]);
        sum += r.paths[p].weight;
    }
    g_assert_cmpfloat_with_epsilon(sum, 1.0, 1e-9);
    ics_route_clear(&r);
}

static void test_all_pairs_nodes(void)
{
    const char *models[] = {"dgx1-p100.json",   "dgx1-v100.json", "dgx2.json",
                            "dgx-a100.json",    "dgx-h100.json",  "hgx-b200.json",
                            "gb200-nvl72.json", "pcie-8gpu.json", "pcie-nvlink-bridge.json"};
    for (size_t m = 0; m < G_N_ELEMENTS(models); m++) {
        ics_hw *hw = load(models[m], 0);
        ics_topo *t = ics_topo_new(hw);
        int g = ics_topo_gpus_per_node(t);
        for (int a = 0; a < g; a++)
            for (int b = 0; b < g; b++)
                if (a != b)
                    check_route(t, ics_topo_gpu(t, 0, a), ics_topo_gpu(t, 0, b), 0);
        ics_topo_free(t);
        ics_hw_free(hw);
    }
}

static void test_all_pairs_clusters(void)
{
    const char *models[] = {"superpod-a100-hdr.json", "superpod-h100-ndr.json",
                            "fattree-2tier.json", "fattree-3tier.json"};
    for (size_t m = 0; m < G_N_ELEMENTS(models); m++) {
        ics_hw *hw = load(models[m], 0);
        ics_topo *t = ics_topo_new(hw);
        int g = ics_topo_gpus_per_node(t), nodes = ics_topo_nodes(t);
        /* every GPU of node 0 to every GPU of every node, both ways, several hashes */
        for (int n = 1; n < nodes; n++)
            for (int a = 0; a < g; a++)
                for (int b = 0; b < g; b++) {
                    uint64_t h = (uint64_t)(n * 64 + a * 8 + b);
                    check_route(t, ics_topo_gpu(t, 0, a), ics_topo_gpu(t, n, b), h);
                    check_route(t, ics_topo_gpu(t, n, b), ics_topo_gpu(t, 0, a), h);
                }
        ics_topo_free(t);
        ics_hw_free(hw);
    }
}

/* The highest fabric tier a route climbs to. */
static int top_tier(const ics_topo *t, int a, int b, uint64_t hash)
{
    ics_route r;
    g_assert_true(ics_route_find(t, a, b, hash, &r));
    int top = 0;
    for (int h = 0; h < r.paths[0].n_hops; h++) {
        const ics_topo_dev *d = ics_topo_dev_get(t, ics_topo_chan_get(t, r.paths[0].chans[h])->dst);
        if (d->kind == ICS_DEV_NET_SWITCH)
            top = MAX(top, d->tier);
    }
    ics_route_clear(&r);
    return top;
}

static void test_rail_optimized(void)
{
    ics_hw *hw = load("superpod-h100-ndr.json", 0);
    ics_topo *t = ics_topo_new(hw);
    /* same rail, same 32-node unit: one leaf */
    g_assert_cmpint(top_tier(t, ics_topo_gpu(t, 0, 3), ics_topo_gpu(t, 31, 3), 1), ==, 1);
    /* same rail, another unit: through a spine */
    g_assert_cmpint(top_tier(t, ics_topo_gpu(t, 0, 3), ics_topo_gpu(t, 32, 3), 1), ==, 2);
    /* another rail: onto the destination's rail by PXN, so one leaf; through a spine from the
     * sender's own NIC with NCCL_PXN_DISABLE=1 */
    g_assert_cmpint(top_tier(t, ics_topo_gpu(t, 0, 3), ics_topo_gpu(t, 1, 4), 1), ==, 1);
    ics_topo_set_paths(t, &(ics_topo_paths){-1, -1, -1, 0, 1, ""});
    g_assert_cmpint(top_tier(t, ics_topo_gpu(t, 0, 3), ics_topo_gpu(t, 1, 4), 1), ==, 2);
    ics_topo_set_paths(t, &(ics_topo_paths){-1, -1, -1, 0, 0, ""});
    /* ECMP: the flow hash spreads flows over the spines */
    GHashTable *spines = g_hash_table_new(g_direct_hash, g_direct_equal);
    for (uint64_t h = 0; h < 64; h++) {
        ics_route r;
        g_assert_true(ics_route_find(t, ics_topo_gpu(t, 0, 0), ics_topo_gpu(t, 40, 0), h, &r));
        for (int i = 0; i < r.paths[0].n_hops; i++) {
            int d = ics_topo_chan_get(t, r.paths[0].chans[i])->dst;
            if (ics_topo_dev_get(t, d)->tier == 2 &&
                ics_topo_dev_get(t, d)->kind == ICS_DEV_NET_SWITCH)
                g_hash_table_add(spines, GINT_TO_POINTER(d));
        }
        ics_route_clear(&r);
    }
    g_assert_cmpint(g_hash_table_size(spines), >, 8);
    g_hash_table_destroy(spines);
    ics_topo_free(t);
    ics_hw_free(hw);

    /* 3 tiers, rail-optimized: a rail's leaves share a pod, so same-rail traffic never reaches
     * the core, and other-rail traffic must. */
    hw = load("superpod-a100-hdr.json", 0);
    t = ics_topo_new(hw);
    g_assert_cmpint(top_tier(t, ics_topo_gpu(t, 0, 2), ics_topo_gpu(t, 139, 2), 5), ==, 2);
    g_assert_cmpint(top_tier(t, ics_topo_gpu(t, 0, 2), ics_topo_gpu(t, 139, 4), 5), ==, 2);
    ics_topo_set_paths(t, &(ics_topo_paths){-1, -1, -1, 0, 1, ""});
    g_assert_cmpint(top_tier(t, ics_topo_gpu(t, 0, 2), ics_topo_gpu(t, 139, 4), 5), ==, 3);
    ics_topo_free(t);
    ics_hw_free(hw);
}

/* The devices a route's path visits, in order, as labels joined by spaces. */
static char *visits(const ics_topo *t, const ics_route_path *p)
{
    GString *s = g_string_new(ics_topo_dev_label(t, ics_topo_chan_get(t, p->chans[0])->src));
    for (int h = 0; h < p->n_hops; h++)
        g_string_append_printf(s, " %s",
                               ics_topo_dev_label(t, ics_topo_chan_get(t, p->chans[h])->dst));
    return g_string_free(s, FALSE);
}

/* The local index of the GPU whose NIC node 0's GPU `from` sends to node 1's GPU `to` by
 * (ics_route_send_nic: `from` itself, or its PXN relay). */
static int relay_of(const char *model, int from, int to)
{
    ics_hw *hw = load(model, 2);
    ics_topo *t = ics_topo_new(hw);
    int via;
    g_assert_cmpint(
        ics_route_send_nic(t, ics_topo_gpu(t, 0, from), ics_topo_gpu(t, 1, to), 0, &via), >=, 0);
    int local = ics_topo_dev_get(t, via)->local;
    ics_topo_free(t);
    ics_hw_free(hw);
    return local;
}

/* NCCL's PXN: a send to another rail goes over NVLink to the GPU of that rail and out of its
 * NIC, one path per NVSwitch plane of the sender's (4 on a DGX H100, weighted by their links);
 * the receive side is the destination's own NIC either way. */
static void test_pxn(void)
{
    ics_hw *hw = load("superpod-h100-ndr.json", 2);
    ics_topo *t = ics_topo_new(hw);
    int src = ics_topo_gpu(t, 0, 3), dst = ics_topo_gpu(t, 1, 4);
    ics_route r;
    g_assert_true(ics_route_find(t, src, dst, 7, &r));
    g_assert_cmpint(r.n_paths, ==, 4);
    double sum = 0;
    for (int p = 0; p < r.n_paths; p++) {
        char *v = visits(t, &r.paths[p]);
        g_assert_true(g_str_has_prefix(v, "0:gpu3 0:nvsw"));
        g_assert_nonnull(strstr(v, " 0:gpu4 "));                  /* the relay */
        g_assert_nonnull(strstr(v, " 0:mlx5_6 leaf4 1:mlx5_6 ")); /* rail 4 (gpu4: mlx5_6) */
        g_assert_null(strstr(v, "spine"));
        g_assert_true(g_str_has_suffix(v, " 1:gpu4"));
        sum += r.paths[p].weight;
        g_free(v);
    }
    g_assert_cmpfloat_with_epsilon(sum, 1.0, 1e-12);
    ics_route_clear(&r);
    /* the same rail: the sender's own NIC, one path */
    g_assert_true(ics_route_find(t, src, ics_topo_gpu(t, 1, 3), 7, &r));
    g_assert_cmpint(r.n_paths, ==, 1);
    ics_route_clear(&r);
    /* PXN off, or GPUs that may not talk peer to peer (NCCL_P2P_DISABLE=1: NCCL routes the
     * pair through the CPU, so the NIC is not PXN-reachable): out of the sender's own NIC */
    const ics_topo_paths no_relay[] = {{-1, -1, -1, 0, 1, ""}, {ICS_PATH_LOC, -1, -1, 0, 0, ""}};
    for (size_t k = 0; k < G_N_ELEMENTS(no_relay); k++) {
        ics_topo_set_paths(t, &no_relay[k]);
        g_assert_true(ics_route_find(t, src, dst, 7, &r));
        g_assert_cmpint(r.n_paths, ==, 1);
        char *v = visits(t, &r.paths[0]);
        g_assert_true(g_str_has_prefix(v, "0:gpu3 0:pex"));
        g_assert_nonnull(strstr(v, "spine"));
        g_free(v);
        ics_route_clear(&r);
    }
    ics_topo_free(t);
    ics_hw_free(hw);

    /* no relay where the NICs hang off the host bridges (Polaris: PHB from every GPU, past the
     * PXB PXN needs); a GH200's NIC through its own Grace (NCCL's P2C) relays for its NVLink
     * peers */
    g_assert_cmpint(relay_of("polaris.json", 0, 3), ==, 0);
    g_assert_cmpint(relay_of("alps-gh200.json", 0, 2), ==, 2);
}

static void test_oversubscription(void)
{
    ics_hw *hw = load("fattree-2tier.json", 0);
    ics_topo *t = ics_topo_new(hw);
    const ics_fattree_plan *p = ics_topo_fattree(t);
    g_assert_nonnull(p);
    g_assert_cmpint(p->down_ports, ==, 2 * p->up_ports);
    /* bisection is set by the leaf uplinks: half of them, not half of the NICs */
    const ics_hw_fabric *f = ics_hw_fabric_of(hw);
    uint64_t up = (uint64_t)p->leaves * p->up_ports * ics_hw_standard_bw(f->standard, 1);
    g_assert_cmpuint(ics_topo_bisection_bw(t), ==, up / 2);
    ics_topo_free(t);
    ics_hw_free(hw);
}

static bool same_path(const ics_route_path *a, const ics_route_path *b)
{
    return a->n_hops == b->n_hops &&
           memcmp(a->chans, b->chans, sizeof(int) * (size_t)a->n_hops) == 0;
}

/* NCCL_IB_QPS_PER_CONNECTION = 4: a route across the fabric becomes 4 paths of a quarter of the
 * bytes each, from the same NIC to the same NIC, the first the one-queue-pair route, the others
 * hashed onto the fabric's spines on their own (on a 2:1 tree of 16 spines some differ). */
static void test_route_qps(void)
{
    ics_hw *hw = load("fattree-2tier.json", 0);
    ics_topo *t = ics_topo_new(hw);
    int a = ics_topo_gpu(t, 0, 0), b = ics_topo_gpu(t, ics_topo_nodes(t) - 1, 0);
    int spread = 0;
    for (uint64_t h = 0; h < 8; h++) {
        ics_route one, four;
        ics_topo_set_paths(t, &(ics_topo_paths){-1, -1, -1, 1, 0, ""});
        g_assert_true(ics_route_find(t, a, b, h, &one));
        ics_topo_set_paths(t, &(ics_topo_paths){-1, -1, -1, 4, 0, ""});
        g_assert_true(ics_route_find(t, a, b, h, &four));
        g_assert_cmpint(one.n_paths, ==, 1);
        g_assert_cmpint(four.n_paths, ==, 4);
        g_assert_true(same_path(&one.paths[0], &four.paths[0]));
        bool differs = false;
        for (int k = 0; k < 4; k++) {
            const ics_route_path *p = &four.paths[k];
            g_assert_cmpfloat_with_epsilon(p->weight, 0.25, 1e-12);
            g_assert_cmpint(p->chans[0], ==, one.paths[0].chans[0]);
            g_assert_cmpint(p->chans[p->n_hops - 1], ==,
                            one.paths[0].chans[one.paths[0].n_hops - 1]);
            differs |= !same_path(p, &one.paths[0]);
        }
        spread += differs;
        ics_route_clear(&one);
        ics_route_clear(&four);
    }
    g_assert_cmpint(spread, >, 0);
    ics_topo_free(t);
    ics_hw_free(hw);
}

static void test_nodes_override(void)
{
    ics_hw *hw = load("superpod-h100-ndr.json", 16);
    ics_topo *t = ics_topo_new(hw);
    g_assert_cmpint(ics_topo_nodes(t), ==, 16);
    g_assert_cmpint(ics_topo_fattree(t)->units, ==, 1);
    ics_topo_free(t);
    ics_hw_free(hw);
    GError *err = NULL;
    char *path = g_build_filename(ICS_SOURCE_DIR, "hwmodels", "superpod-h100-ndr.json", NULL);
    g_assert_null(ics_hw_load(path, 100000, &err));
    g_assert_nonnull(err);
    g_test_message("%s", err->message);
    g_assert_nonnull(strstr(err->message, "$.fabric: expected a cluster that fits"));
    g_error_free(err);
    g_free(path);
}

static void test_channels_pair_up(void)
{
    ics_hw *hw = load("superpod-a100-hdr.json", 0);
    ics_topo *t = ics_topo_new(hw);
    for (int c = 0; c < ics_topo_nchans(t); c++) {
        const ics_topo_chan *ch = ics_topo_chan_get(t, c), *r = ics_topo_chan_get(t, ch->reverse);
        g_assert_cmpint(r->reverse, ==, c);
        g_assert_cmpint(r->src, ==, ch->dst);
        g_assert_cmpint(r->dst, ==, ch->src);
        g_assert_cmpuint(r->bw_bytes_per_s, ==, ch->bw_bytes_per_s);
        g_assert_cmpuint(ch->bw_bytes_per_s, >, 0);
    }
    ics_topo_free(t);
    ics_hw_free(hw);
}

/* Per-GPU NVLink bandwidth, one direction, as vendors state it (DOMAIN.md table). */
static void test_nvlink_per_gpu(void)
{
    const struct {
        const char *model;
        double gbytes_per_s;
    } cases[] = {{"dgx1-p100.json", 80},   {"dgx1-v100.json", 150}, {"dgx2.json", 150},
                 {"dgx-a100.json", 300},   {"dgx-h100.json", 450},  {"hgx-b200.json", 900},
                 {"gb200-nvl72.json", 900}};
    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        ics_hw *hw = load(cases[i].model, 0);
        ics_topo *t = ics_topo_new(hw);
        int links;
        uint64_t bw = ics_topo_dev_bw(t, ics_topo_gpu(t, 0, 0), ICS_CHAN_NVLINK, &links);
        g_assert_cmpfloat_with_epsilon(bw / 1e9, cases[i].gbytes_per_s, 1e-6);
        ics_topo_free(t);
        ics_hw_free(hw);
    }
}

static void test_nvswitch_striping(void)
{
    /* DGX H100: 18 links over 4 switches as 5/5/4/4: four paths weighted by link count */
    ics_hw *hw = load("dgx-h100.json", 0);
    ics_topo *t = ics_topo_new(hw);
    ics_route r;
    g_assert_true(ics_route_find(t, ics_topo_gpu(t, 0, 0), ics_topo_gpu(t, 0, 5), 0, &r));
    g_assert_cmpint(r.n_paths, ==, 4);
    double w[4];
    for (int p = 0; p < 4; p++) {
        g_assert_cmpint(r.paths[p].n_hops, ==, 2);
        w[p] = r.paths[p].weight * 18;
    }
    double sum5 = 0, sum4 = 0;
    for (int p = 0; p < 4; p++) {
        if (fabs(w[p] - 5) < 1e-9)
            sum5++;
        if (fabs(w[p] - 4) < 1e-9)
            sum4++;
    }
    g_assert_cmpfloat(sum5, ==, 2);
    g_assert_cmpfloat(sum4, ==, 2);
    ics_route_clear(&r);
    ics_topo_free(t);
    ics_hw_free(hw);

    /* DGX-2: across the two baseboards, every path crosses a switch-to-switch trunk */
    hw = load("dgx2.json", 0);
    t = ics_topo_new(hw);
    g_assert_true(ics_route_find(t, ics_topo_gpu(t, 0, 0), ics_topo_gpu(t, 0, 12), 0, &r));
    g_assert_cmpint(r.n_paths, ==, 6);
    for (int p = 0; p < r.n_paths; p++)
        g_assert_cmpint(r.paths[p].n_hops, ==, 3);
    ics_route_clear(&r);
    ics_topo_free(t);
    ics_hw_free(hw);
}

static void test_pcie_paths(void)
{
    /* No NVLink: GPUs on different sockets go up the tree, through both root complexes and
     * the socket link; GPUs under one switch stay under it. */
    ics_hw *hw = load("pcie-8gpu.json", 0);
    ics_topo *t = ics_topo_new(hw);
    char cls[16];
    int g0 = ics_topo_gpu(t, 0, 0), g7 = ics_topo_gpu(t, 0, 7);
    g_assert_cmpstr(ics_topo_path_class(t, g0, g7, cls), ==, "SYS");
    ics_route r;
    g_assert_true(ics_route_find(t, g0, g7, 0, &r));
    bool crossed = false;
    for (int h = 0; h < r.paths[0].n_hops; h++)
        crossed |= ics_topo_chan_get(t, r.paths[0].chans[h])->kind == ICS_CHAN_SOCKET;
    g_assert_true(crossed);
    ics_route_clear(&r);
    ics_topo_free(t);
    ics_hw_free(hw);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/topo/matrix/dgx1-v100", test_matrix_dgx1_v100);
    g_test_add_func("/topo/matrix/dgx1-p100", test_matrix_dgx1_p100);
    g_test_add_func("/topo/matrix/dgx-a100", test_matrix_dgx_a100);
    g_test_add_func("/topo/matrix/dgx-h100", test_matrix_dgx_h100);
    g_test_add_func("/topo/matrix/dgx2", test_matrix_dgx2);
    g_test_add_func("/topo/matrix/hgx-b200", test_matrix_hgx_b200);
    g_test_add_func("/topo/channels-pair-up", test_channels_pair_up);
    g_test_add_func("/topo/nvlink-per-gpu", test_nvlink_per_gpu);
    g_test_add_func("/route/all-pairs/nodes", test_all_pairs_nodes);
    g_test_add_func("/route/all-pairs/clusters", test_all_pairs_clusters);
    g_test_add_func("/route/rail-optimized", test_rail_optimized);
    g_test_add_func("/route/pxn", test_pxn);
    g_test_add_func("/route/nvswitch-striping", test_nvswitch_striping);
    g_test_add_func("/route/pcie", test_pcie_paths);
    g_test_add_func("/fattree/oversubscription", test_oversubscription);
    g_test_add_func("/route/qps-per-connection", test_route_qps);
    g_test_add_func("/fattree/nodes-override", test_nodes_override);
    return g_test_run();
}
