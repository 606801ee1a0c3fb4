/* A model's own NCCL settings ("nccl_conf") reach NCCL's choices the way NCCL reads its
 * nccl.conf: beneath the environment (a variable the user sets wins), a cluster file's entries
 * over its node file's; the shipped GPUDirect-TCPXO node runs its profile's Simple trees. */
#include "collectives/comm.h"
#include "hw/hw.h"
#include "report/report.h"
#include "topo/topo.h"

#include <glib.h>
#include <glib/gstdio.h>
#include <string.h>

static char *model_path(const char *name)
{
    return g_build_filename(ICS_SOURCE_DIR, "hwmodels", name, NULL);
}

/* A cluster of the shipped A3 Mega node whose own nccl_conf (`conf`, JSON) replaces the node's
 * NCCL_PROTO or adds to it. */
static ics_hw *cluster_with(const char *conf)
{
    char *dir = g_build_filename(ICS_BINARY_DIR, "test_nccl_conf_tmp", NULL);
    g_mkdir_with_parents(dir, 0755);
    char *node = model_path("gcp-a3mega-node.json");
    char *text = g_strdup_printf(
        "{\"kind\": \"cluster\", \"name\": \"conf test\", \"node\": \"%s\", \"nodes\": 2,\n"
        " \"nccl_conf\": %s,\n"
        " \"fabric\": {\"topology\": \"fat-tree\", \"tiers\": 2, \"switch\": \"spectrum4-400g\",\n"
        "            \"standard\": \"eth200\"}}\n",
        node, conf);
    char *path = g_build_filename(dir, "cluster.json", NULL);
    g_assert_true(g_file_set_contents(path, text, -1, NULL));
    GError *err = NULL;
    ics_hw *hw = ics_hw_load(path, 0, &err);
    g_assert_no_error(err);
    g_free(path);
    g_free(text);
    g_free(node);
    g_free(dir);
    return hw;
}

static ics_hw *cluster_over_a3mega(void)
{
    return cluster_with("{\"NCCL_PROTO\": \"LL128\", \"NCCL_MAX_NCHANNELS\": 6, "
                        "\"source\": \"a site's /etc/nccl.conf\"}");
}

static void test_layers(void)
{
    ics_hw *hw = cluster_over_a3mega();
    g_assert_cmpstr(ics_hw_nccl_conf(hw, "NCCL_PROTO"), ==, "LL128");     /* the cluster's */
    g_assert_cmpstr(ics_hw_nccl_conf(hw, "NCCL_MAX_NCHANNELS"), ==, "6"); /* an integer */
    g_assert_cmpstr(ics_hw_nccl_conf(hw, "NCCL_ALGO"), ==, "Ring,Tree");  /* the node's, kept */
    g_assert_null(ics_hw_nccl_conf(hw, "source"));
    g_assert_null(ics_hw_nccl_conf(hw, "NCCL_IB_HCA"));
    g_assert_null(ics_hw_nccl_conf(NULL, "NCCL_PROTO"));
    const char **names = ics_hw_nccl_conf_names(hw);
    for (int i = 1; names[i]; i++) /* in name order, whatever the files' */
        g_assert_cmpint(strcmp(names[i - 1], names[i]), <, 0);
    g_free(names);
    ics_hw_free(hw);
}

/* A log's recorded environment: NCCL_PROTO=Simple, nothing else. */
static const char *recorded(const char *name, void *ctx)
{
    (void)ctx;
    return strcmp(name, "NCCL_PROTO") == 0 ? "Simple" : NULL;
}

/* NCCL loads its conf file with setenv(..., 0): the process's environment wins. */
static void test_environment_wins(void)
{
    ics_hw *hw = cluster_over_a3mega();
    g_unsetenv("NCCL_PROTO");
    g_unsetenv("NCCL_MIN_NCHANNELS");
    g_unsetenv("NCCL_NET_GDR_LEVEL");
    ics_coll_tuning t;
    GError *w = NULL;
    ics_coll_tuning_from_env(&t, hw, &w);
    g_assert_no_error(w);
    g_assert_cmpuint(t.protos, ==, ICS_COLL_SET(ICS_PROTO_LL128));
    g_assert_cmpuint(t.algos, ==, ICS_COLL_SET(ICS_ALGO_RING) | ICS_COLL_SET(ICS_ALGO_TREE));
    g_assert_false(t.nvls_enable);
    g_assert_cmpint(t.min_channels, ==, 4);
    g_assert_cmpint(t.max_channels, ==, 6);
    g_assert_cmpint(t.buffsize, ==, 8388608);
    g_setenv("NCCL_PROTO", "Simple", TRUE);
    g_setenv("NCCL_MIN_NCHANNELS", "2", TRUE);
    ics_coll_tuning_from_env(&t, hw, &w);
    g_assert_cmpuint(t.protos, ==, ICS_COLL_SET(ICS_PROTO_SIMPLE));
    g_assert_cmpint(t.min_channels, ==, 2);
    g_assert_cmpint(t.buffsize, ==, 8388608); /* the rest still the system's */
    ics_coll_tuning_from_env(&t, NULL, &w);   /* no system: NCCL's defaults under the env */
    g_assert_cmpint(t.buffsize, ==, 0);
    g_assert_true(t.nvls_enable);

    ics_topo_paths p;
    ics_coll_paths_from_env(&p, hw, &w);
    g_assert_cmpint(p.gdr_level, ==, ICS_PATH_PIX);
    g_setenv("NCCL_NET_GDR_LEVEL", "SYS", TRUE);
    ics_coll_paths_from_env(&p, hw, &w);
    g_assert_cmpint(p.gdr_level, ==, ICS_PATH_SYS);
    g_assert_no_error(w);
    g_unsetenv("NCCL_PROTO");
    g_unsetenv("NCCL_MIN_NCHANNELS");
    g_unsetenv("NCCL_NET_GDR_LEVEL");

    /* the system's settings alone (a study), and a recorded environment (a log's) stacked over
     * them the same way as the process's */
    ics_coll_tuning_from(&t, ics_coll_env_conf, hw, NULL);
    g_assert_cmpuint(t.protos, ==, ICS_COLL_SET(ICS_PROTO_LL128));
    ics_coll_env_stack logged = {recorded, NULL, hw};
    ics_coll_tuning_from(&t, ics_coll_env_stacked, &logged, NULL);
    g_assert_cmpuint(t.protos, ==, ICS_COLL_SET(ICS_PROTO_SIMPLE));
    g_assert_cmpint(t.buffsize, ==, 8388608);
    ics_hw_free(hw);
}

/* The shipped A3 Mega node: 2 nodes' all-reduce as its TCPXO profile tunes it, Ring or Tree on
 * Simple with at least 4 channels and no NVLS, where NCCL's defaults would take NVLS-Tree. */
static void test_a3mega_profile(void)
{
    char *path = model_path("gcp-a3mega.json");
    GError *err = NULL;
    ics_hw *hw = ics_hw_load(path, 2, &err);
    g_assert_no_error(err);
    ics_topo *t = ics_topo_new(hw);
    int gpus[16];
    ics_topo_gpus_by_node(t, 8, 16, gpus);
    ics_comm *c = ics_comm_new(t, ics_net_backend("analytic"), gpus, 16, NULL);
    ics_coll_tuning conf, plain = {.nvls_enable = true};
    ics_coll_tuning_from(&conf, ics_coll_env_conf, hw, NULL);
    ics_coll_req req = {.op = ICS_COLL_ALL_REDUCE, .size_bytes = 1ull << 30, .dtype_bytes = 4};
    ics_coll_result a, b;
    g_assert_true(ics_comm_run(c, &req, &conf, &a));
    g_assert_true(ics_comm_run(c, &req, &plain, &b));
    g_assert_cmpint(a.proto, ==, ICS_PROTO_SIMPLE);
    g_assert_true(a.algo == ICS_ALGO_RING || a.algo == ICS_ALGO_TREE);
    g_assert_cmpint(b.algo, ==, ICS_ALGO_NVLS_TREE);
    req.size_bytes = 8;
    g_assert_true(ics_comm_run(c, &req, &conf, &a));
    g_assert_cmpint(a.proto, ==, ICS_PROTO_SIMPLE);
    g_assert_cmpint(a.nchannels, >=, 4);
    ics_comm_free(c);
    ics_topo_free(t);
    ics_hw_free(hw);
    g_free(path);
}

/* Every variable the readers ask for: recorded by a lookup that answers none. */
static const char *asked(const char *name, void *ctx)
{
    g_ptr_array_add(ctx, g_strdup(name));
    return NULL;
}

/* A variable icsim reads is one it knows; one it does not read (NCCL_CROSS_NIC=1's effect,
 * NCCL_IB_SL, a plugin's, the system's NCCL_IB_TC) is named in the warning with where it came
 * from, once, and one that changes no time (NCCL_DEBUG) is not. */
static void test_unread_named(void)
{
    GPtrArray *names = g_ptr_array_new_with_free_func(g_free);
    ics_coll_tuning t;
    ics_topo_paths p;
    ics_coll_tuning_from(&t, asked, names, NULL);
    ics_coll_paths_from(&p, asked, names, NULL);
    g_assert_cmpuint(names->len, >=, 28);
    for (guint i = 0; i < names->len; i++)
        if (!ics_coll_env_known(g_ptr_array_index(names, i)))
            g_error("%s is read but not in nccl_env.c's known_vars",
                    (char *)g_ptr_array_index(names, i));
    g_ptr_array_free(names, TRUE);
    g_assert_false(ics_coll_env_known("NCCL_IB_TC"));
    g_assert_true(ics_coll_env_known("NCCL_IB_HCA"));
    g_assert_false(ics_coll_env_known("NCCL_"));
    g_assert_true(ics_coll_env_known("NCCL_DEBUG"));

    ics_hw *hw = cluster_with("{\"NCCL_IB_TC\": \"41\", \"NCCL_CROSS_NIC\": \"0\", "
                              "\"NCCL_IB_SL\": \"9\"}");
    g_setenv("NCCL_IB_SL", "3", TRUE);
    g_setenv("NCCL_DEBUG", "INFO", TRUE);
    g_setenv("NCCL_FASTRAK_X", "a\"b", TRUE);
    GError *w = NULL;
    ics_coll_tuning_from_env(&t, hw, &w);
    g_assert_nonnull(w);
    g_assert_nonnull(strstr(w->message, "not modelled, ignored: NCCL_FASTRAK_X=a\\\"b, "
                                        "NCCL_IB_SL=3, NCCL_IB_TC=41 (nccl_conf)"));
    g_assert_null(strstr(w->message, "NCCL_DEBUG"));
    g_assert_null(strstr(w->message, "NCCL_CROSS_NIC")); /* 0: what icsim's graphs do */
    g_assert_null(strstr(w->message, "=9"));             /* the environment's wins */
    g_clear_error(&w);
    g_setenv("NCCL_CROSS_NIC", "1", TRUE);
    ics_coll_tuning_from_env(&t, hw, &w);
    g_assert_nonnull(strstr(w->message, "NCCL_CROSS_NIC=1: not modelled"));
    g_clear_error(&w);
    g_setenv("NCCL_CROSS_NIC", "3", TRUE);
    ics_coll_tuning_from_env(&t, hw, &w);
    g_assert_nonnull(strstr(w->message, "NCCL_CROSS_NIC"));
    g_clear_error(&w);
    g_unsetenv("NCCL_CROSS_NIC");
    g_unsetenv("NCCL_IB_SL");
    g_unsetenv("NCCL_DEBUG");
    g_unsetenv("NCCL_FASTRAK_X");
    ics_hw_free(hw);
}

/* The header line lists every setting on one line, escaped: a value may hold anything. */
static void test_header(void)
{
    ics_hw *hw = cluster_with("{\"NCCL_X\": \"a\\nb\", \"NCCL_Y\": -0}");
    GString *out = g_string_new(NULL);
    ics_report_nccl_conf(hw, out);
    g_assert_true(g_str_has_prefix(out->str, "# nccl_conf"));
    g_assert_cmpint(strchr(out->str, '\n') - out->str, ==, (long)out->len - 1);
    g_assert_nonnull(strstr(out->str, " NCCL_X=a\\nb NCCL_Y=0\n"));
    g_assert_nonnull(strstr(out->str, " NCCL_PROTO=Simple "));
    g_string_free(out, TRUE);
    ics_hw_free(hw);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    char **env = g_listenv(); /* NCCL's variables are the tests' to set */
    for (int i = 0; env[i]; i++)
        if (g_str_has_prefix(env[i], "NCCL_"))
            g_unsetenv(env[i]);
    g_strfreev(env);
    g_test_add_func("/nccl-conf/layers", test_layers);
    g_test_add_func("/nccl-conf/environment-wins", test_environment_wins);
    g_test_add_func("/nccl-conf/a3mega-profile", test_a3mega_profile);
    g_test_add_func("/nccl-conf/header", test_header);
    g_test_add_func("/nccl-conf/unread-named", test_unread_named);
    return g_test_run();
}
