/* The shipped hardware models load, cite their sources, and obey the vendor figures; overrides
 * change exactly what they name; the format document lists every key the reader accepts. */
#include "hw/hw.h"
#include "topo/topo.h"

#include <cjson/cJSON.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <string.h>

static const char *const shipped[] = {"dgx1-p100.json",
                                      "dgx1-v100.json",
                                      "dgx2.json",
                                      "dgx-a100.json",
                                      "dgx-h100.json",
                                      "hgx-b200.json",
                                      "gb200-nvl72.json",
                                      "pcie-8gpu.json",
                                      "pcie-nvlink-bridge.json",
                                      "superpod-a100-hdr.json",
                                      "superpod-h100-ndr.json",
                                      "fattree-2tier.json",
                                      "fattree-3tier.json",
                                      "alps-gh200-node.json",
                                      "alps-gh200.json",
                                      "gke-a4-node.json",
                                      "gke-a4.json",
                                      "gcp-a3mega-node.json",
                                      "gcp-a3mega.json",
                                      "oci-bm-gpu4-8-node.json",
                                      "oci-bm-gpu4-8.json"};

static char *model_path(const char *name)
{
    return g_build_filename(ICS_SOURCE_DIR, "hwmodels", name, NULL);
}

static ics_hw *load(const char *name, int nodes)
{
    char *path = model_path(name);
    GError *err = NULL;
    ics_hw *hw = ics_hw_load(path, nodes, &err);
    g_assert_no_error(err);
    g_free(path);
    return hw;
}

static void test_shipped_load(void)
{
    for (size_t i = 0; i < G_N_ELEMENTS(shipped); i++) {
        ics_hw *hw = load(shipped[i], 0);
        const ics_hw_node *n = ics_hw_node_of(hw);
        g_assert_cmpint(n->gpus, >=, 2);
        g_assert_nonnull(n->source);
        g_assert_cmpuint(strlen(n->source), >, 10);
        ics_hw_free(hw);
    }
}

static void test_catalog_sources(void)
{
    GError *err = NULL;
    char *path = model_path("catalog.json");
    ics_hw *hw = ics_hw_load_catalog(path, &err);
    g_assert_no_error(err);
    int n;
    const ics_hw_standard *const *all = ics_hw_standards(hw, &n);
    g_assert_cmpint(n, >=, 18); /* NVLink 1-5, PCIe 3-6, IB EDR-XDR, Ethernet 100-800G */
    for (int i = 0; i < n; i++)
        g_assert_cmpuint(strlen(all[i]->source), >, 10);
    ics_hw_free(hw);
    g_free(path);
}

/* Per link, per direction, after encoding: the DOMAIN.md table. */
static void test_standard_rates(void)
{
    const struct {
        const char *name;
        int width;
        double gbytes_per_s;
    } cases[] = {
        {"nvlink1", 1, 20},   {"nvlink2", 1, 25},    {"nvlink3", 1, 25},    {"nvlink4", 1, 25},
        {"nvlink5", 1, 50},   {"pcie3", 16, 15.754}, {"pcie4", 16, 31.508}, {"pcie5", 16, 63.015},
        {"pcie6", 16, 121.0}, {"edr", 1, 12.5},      {"hdr", 1, 25},        {"ndr", 1, 50},
        {"xdr", 1, 100},      {"eth100", 1, 12.5},   {"eth200", 1, 25},     {"eth400", 1, 50},
        {"eth800", 1, 100},
    };
    GError *err = NULL;
    char *path = model_path("catalog.json");
    ics_hw *hw = ics_hw_load_catalog(path, &err);
    g_assert_no_error(err);
    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        const ics_hw_standard *s = ics_hw_standard_find(hw, cases[i].name);
        if (!s)
            g_error("catalog has no standard %s", cases[i].name);
        double got = ics_hw_standard_bw(s, cases[i].width) / 1e9;
        if (got < cases[i].gbytes_per_s * 0.999 || got > cases[i].gbytes_per_s * 1.001)
            g_error("%s x%d: %.3f GB/s, expected %.3f", cases[i].name, cases[i].width, got,
                    cases[i].gbytes_per_s);
    }
    ics_hw_free(hw);
    g_free(path);
}

/* Writes a cluster file next to the shipped models' copy in the build tree. */
static char *write_temp(const char *dir, const char *name, const char *text)
{
    char *path = g_build_filename(dir, name, NULL);
    g_assert_true(g_file_set_contents(path, text, -1, NULL));
    return path;
}

static void test_overrides(void)
{
    char *dir = g_build_filename(ICS_BINARY_DIR, "test_hw_tmp", NULL);
    g_mkdir_with_parents(dir, 0755);
    char *node_abs = model_path("dgx-h100.json");
    char *cat_abs = model_path("catalog.json");
    char *text = g_strdup_printf(
        "{\"kind\": \"cluster\", \"name\": \"override test\", \"catalog\": \"%s\",\n"
        " \"node\": {\"file\": \"%s\", \"gpu\": \"h200-sxm\"},\n"
        " \"nodes\": 4,\n"
        " \"standards\": {\"ndr\": {\"latency_ns\": 321}},\n"
        " \"fabric\": {\"topology\": \"fat-tree\", \"tiers\": 2, \"switch\": \"quantum2\"}}\n",
        cat_abs, node_abs);
    char *path = write_temp(dir, "override.json", text);
    GError *err = NULL;
    ics_hw *hw = ics_hw_load(path, 0, &err);
    g_assert_no_error(err);
    g_assert_cmpstr(ics_hw_node_of(hw)->gpu_type->name, ==, "h200-sxm");
    const ics_hw_standard *ndr = ics_hw_standard_find(hw, "ndr");
    g_assert_cmpint(ndr->latency_ps, ==, 321000);
    g_assert_cmpfloat(ndr->lane_gbps, >, 0); /* the keys not given are kept */
    g_assert_cmpint(ics_hw_nodes(hw), ==, 4);
    ics_hw_free(hw);
    g_free(text);
    g_free(path);

    /* A replaced key that is wrong reports the cluster file, not the node file. */
    text = g_strdup_printf("{\"kind\": \"cluster\", \"name\": \"x\",\n"
                           " \"node\": {\"file\": \"%s\", \"gpus\": \"eight\"},\n"
                           " \"nodes\": 4,\n"
                           " \"fabric\": {\"topology\": \"fat-tree\", \"tiers\": 2, "
                           "\"switch\": \"quantum2\"}}\n",
                           node_abs);
    path = write_temp(dir, "override-bad.json", text);
    g_assert_null(ics_hw_load(path, 0, &err));
    g_test_message("%s", err->message);
    g_assert_nonnull(strstr(err->message, "override-bad.json:2:"));
    g_assert_nonnull(strstr(err->message, "$.node.gpus: expected an integer"));
    g_clear_error(&err);
    g_free(text);
    g_free(path);
    g_free(node_abs);
    g_free(cat_abs);
    g_free(dir);
}

/* Every key the reader accepts appears in docs/hwmodel-format.md, so the document cannot fall
 * behind the code: the keys are collected from the shipped files themselves. */
static void collect_keys(const char *text, GHashTable *keys)
{
    GRegex *re = g_regex_new("\"([a-z_0-9]+)\"\\s*:", 0, 0, NULL);
    GMatchInfo *m;
    g_regex_match(re, text, 0, &m);
    for (; g_match_info_matches(m); g_match_info_next(m, NULL))
        g_hash_table_add(keys, g_match_info_fetch(m, 1));
    g_match_info_free(m);
    g_regex_unref(re);
}

static void test_doc_lists_keys(void)
{
    GHashTable *keys = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    for (size_t i = 0; i < G_N_ELEMENTS(shipped); i++) {
        char *path = model_path(shipped[i]), *text;
        g_assert_true(g_file_get_contents(path, &text, NULL, NULL));
        collect_keys(text, keys);
        g_free(text);
        g_free(path);
    }
    /* catalog entry names (nvlink4, h100-sxm, ...) are data, not keys */
    char *cat = model_path("catalog.json"), *cat_text;
    g_assert_true(g_file_get_contents(cat, &cat_text, NULL, NULL));
    collect_keys(cat_text, keys);
    GHashTable *cat_keys = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    cJSON *root = cJSON_Parse(cat_text);
    g_assert_nonnull(root);
    for (cJSON *sec = root->child; sec; sec = sec->next)
        if (cJSON_IsObject(sec))
            for (cJSON *e = sec->child; e; e = e->next)
                g_hash_table_add(cat_keys, g_strdup(e->string));
    cJSON_Delete(root);
    char *doc = g_build_filename(ICS_SOURCE_DIR, "docs", "hwmodel-format.md", NULL), *doc_text;
    g_assert_true(g_file_get_contents(doc, &doc_text, NULL, NULL));
    GHashTableIter it;
    gpointer k;
    g_hash_table_iter_init(&it, keys);
    while (g_hash_table_iter_next(&it, &k, NULL)) {
        char *quoted = g_strdup_printf("`%s`", (char *)k);
        if (!strstr(doc_text, quoted) && !g_hash_table_contains(cat_keys, k))
            g_error("docs/hwmodel-format.md does not document the key \"%s\"", (char *)k);
        g_free(quoted);
    }
    g_hash_table_destroy(keys);
    g_hash_table_destroy(cat_keys);
    g_free(cat_text);
    g_free(cat);
    g_free(doc_text);
    g_free(doc);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/hw/shipped-load", test_shipped_load);
    g_test_add_func("/hw/catalog-sources", test_catalog_sources);
    g_test_add_func("/hw/standard-rates", test_standard_rates);
    g_test_add_func("/hw/overrides", test_overrides);
    g_test_add_func("/hw/doc-lists-keys", test_doc_lists_keys);
    return g_test_run();
}
