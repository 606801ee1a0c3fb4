/* Bad hardware models fail cleanly: every tests/bad-input/NAME.json is rejected with a message
 * that contains each line of NAME.expect (unknown-key cases leave out the list of known keys,
 * which grows) and reads "file:line:col: $.path: expected ..., got ...". Files are
 * loaded as "bad-input/NAME.json" from tests/, so messages name them that way. A NAME.nodes
 * sidecar gives a --nodes override. Valid helper files live in bad-input/ok/ and must load. */
#include <stdlib.h>
#include <string.h>

#include <glib.h>
#include <glib/gstdio.h>

#include "hw/hw.h"
#include "core/json.h"

#define MIN_CASES 30

static int cmp_names(gconstpointer a, gconstpointer b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorted names of the regular files in dir ending in suffix (transfer full). */
static GPtrArray *list_files(const char *dir, const char *suffix)
{
    GPtrArray *names = g_ptr_array_new_with_free_func(g_free);
    GDir *d = g_dir_open(dir, 0, NULL);
    g_assert_nonnull(d);
    for (const char *n; (n = g_dir_read_name(d));) {
        char *p = g_build_filename(dir, n, NULL);
        if (g_str_has_suffix(n, suffix) && g_file_test(p, G_FILE_TEST_IS_REGULAR))
            g_ptr_array_add(names, g_strdup(n));
        g_free(p);
    }
    g_dir_close(d);
    g_ptr_array_sort(names, cmp_names);
    return names;
}

/* bad-input/<base><ext> (transfer full), or NULL if there is no such file. */
static char *read_sidecar(const char *base, const char *ext)
{
    char *path = g_strdup_printf("bad-input/%s%s", base, ext);
    char *text = NULL;
    if (!g_file_get_contents(path, &text, NULL, NULL))
        text = NULL;
    g_free(path);
    if (text)
        g_strchomp(text);
    return text;
}

/* The shape every message has: file, optional line:col, optional JSON path; one line; and the
 * "expected ..., got ..." of the house style. */
static void assert_shape(const char *case_name, const char *msg)
{
    static GRegex *re;
    if (!re)
        re = g_regex_new("^[^:]+(:[0-9]+:[0-9]+)?: (\\$[^:]*: )?", 0, 0, NULL);
    if (!g_regex_match(re, msg, 0, NULL) || strchr(msg, '\n') || !strstr(msg, "expected ") ||
        !strstr(msg, ", got "))
        g_error("%s: message has the wrong shape: %s", case_name, msg);
}

/* Each case: load fails, the message contains the .expect text and has the right shape. */
static void test_cases(void)
{
    GPtrArray *cases = list_files("bad-input", ".json");
    g_assert_cmpuint(cases->len, >=, MIN_CASES);
    for (guint i = 0; i < cases->len; i++) {
        const char *file = g_ptr_array_index(cases, i);
        char *base = g_strndup(file, strlen(file) - strlen(".json"));
        char *path = g_strdup_printf("bad-input/%s", file);
        char *expect = read_sidecar(base, ".expect");
        char *nodes_text = read_sidecar(base, ".nodes");
        int nodes = nodes_text ? atoi(nodes_text) : 0;
        if (!expect)
            g_error("%s: no %s.expect beside it", path, base);
        if (g_test_verbose())
            g_printerr("%s\n", path);

        GError *err = NULL;
        ics_hw *hw = ics_hw_load(path, nodes, &err);
        if (hw)
            g_error("%s: loaded, expected an error containing: %s", path, expect);
        g_assert_error(err, ICS_JSON_ERROR, ICS_JSON_ERROR_INPUT);
        char **lines = g_strsplit(expect, "\n", -1);
        for (char **l = lines; *l; l++)
            if (**l && !strstr(err->message, *l))
                g_error("%s:\n  message: %s\n  expected it to contain: %s", path, err->message, *l);
        g_strfreev(lines);
        assert_shape(path, err->message);

        /* The in-memory reader (the fuzzer's entry point) rejects the same text too, and for a
         * self-contained node file with the same message. */
        if (!nodes_text) {
            char *text = NULL;
            gsize len = 0;
            g_assert_true(g_file_get_contents(path, &text, &len, NULL));
            GError *err2 = NULL;
            ics_hw *hw2 = ics_hw_load_text(path, text, len, &err2);
            if (hw2)
                g_error("%s: ics_hw_load_text accepted it", path);
            assert_shape(path, err2->message);
            if (!strstr(err2->message, "self-contained text") &&
                g_str_has_prefix(err->message, path))
                g_assert_cmpstr(err2->message, ==, err->message);
            g_error_free(err2);
            g_free(text);
        }
        g_error_free(err);
        g_free(nodes_text);
        g_free(expect);
        g_free(path);
        g_free(base);
    }
    g_ptr_array_free(cases, TRUE);
}

/* Every .expect and .nodes belongs to a case. */
static void test_sidecars(void)
{
    const char *exts[] = {".expect", ".nodes"};
    for (size_t k = 0; k < G_N_ELEMENTS(exts); k++) {
        GPtrArray *side = list_files("bad-input", exts[k]);
        for (guint i = 0; i < side->len; i++) {
            const char *f = g_ptr_array_index(side, i);
            char *json =
                g_strdup_printf("bad-input/%.*s.json", (int)(strlen(f) - strlen(exts[k])), f);
            if (!g_file_test(json, G_FILE_TEST_IS_REGULAR))
                g_error("bad-input/%s: no %s beside it", f, json);
            g_free(json);
        }
        g_ptr_array_free(side, TRUE);
    }
}

/* The helpers the cases lean on are valid: a case fails for its own reason only. */
static void test_ok_files(void)
{
    GPtrArray *files = list_files("bad-input/ok", ".json");
    g_assert_cmpuint(files->len, >=, 3);
    for (guint i = 0; i < files->len; i++) {
        const char *f = g_ptr_array_index(files, i);
        char *path = g_strdup_printf("bad-input/ok/%s", f);
        GError *err = NULL;
        ics_hw *hw = g_str_has_prefix(f, "catalog") ? ics_hw_load_catalog(path, &err)
                                                    : ics_hw_load(path, 0, &err);
        if (!hw)
            g_error("%s: %s", path, err->message);
        ics_hw_free(hw);
        g_free(path);
    }
    g_ptr_array_free(files, TRUE);
}

/* The self-contained node loads from memory too, the fuzzer's way. */
static void test_ok_text(void)
{
    char *text = NULL;
    gsize len = 0;
    g_assert_true(g_file_get_contents("bad-input/ok/node.json", &text, &len, NULL));
    GError *err = NULL;
    ics_hw *hw = ics_hw_load_text("node.json", text, len, &err);
    g_assert_no_error(err);
    g_assert_cmpint(ics_hw_node_of(hw)->gpus, ==, 4);
    g_assert_cmpint(ics_hw_node_of(hw)->n_pcie, ==, 10);
    g_assert_cmpint(ics_hw_node_of(hw)->n_nvbonds, ==, 4);
    ics_hw_free(hw);
    g_free(text);
}

/* A cluster with --nodes in range is fine; the node count is replaced. */
static void test_nodes_override(void)
{
    GError *err = NULL;
    ics_hw *hw = ics_hw_load("bad-input/ok/cluster.json", 16, &err);
    g_assert_no_error(err);
    g_assert_cmpint(ics_hw_nodes(hw), ==, 16);
    ics_hw_free(hw);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    if (g_chdir(ICS_SOURCE_DIR "/tests") != 0)
        g_error("cannot enter %s/tests", ICS_SOURCE_DIR);
    g_test_add_func("/bad-input/cases", test_cases);
    g_test_add_func("/bad-input/sidecars", test_sidecars);
    g_test_add_func("/bad-input/ok-files-load", test_ok_files);
    g_test_add_func("/bad-input/ok-node-from-text", test_ok_text);
    g_test_add_func("/bad-input/nodes-override", test_nodes_override);
    return g_test_run();
}
