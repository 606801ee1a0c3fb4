/* What-if studies (sweep.h): the same study gives the same bytes on 1 and 2 threads; an
 * interrupted run resumes to the bytes of an uninterrupted one; another study's output is
 * refused; axes reach the model (overrides), the topology (failures, NICs) and the tuning;
 * bad study files give file:line:col errors. */
#include "sweep/sweep.h"

#include <glib.h>
#include <glib/gstdio.h>
#include <string.h>

static char *tmpdir;

static char *tmp_path(const char *name)
{
    return g_build_filename(tmpdir, name, NULL);
}

/* A study file in the temporary directory on the shipped model `model`; its system paths are
 * absolute. */
static char *write_study_on(const char *name, const char *model, const char *body)
{
    char *path = tmp_path(name);
    char *text = g_strdup_printf("{\"kind\": \"study\", \"system\": \"%s/hwmodels/%s\",\n%s}\n",
                                 ICS_SOURCE_DIR, model, body);
    g_assert_true(g_file_set_contents(path, text, -1, NULL));
    g_free(text);
    return path;
}

static char *write_study(const char *name, const char *body)
{
    return write_study_on(name, "dgx-h100.json", body);
}

static const char *small_study =
    "\"name\": \"small\",\n"
    "\"collective\": {\"op\": \"all_reduce\", \"min_bytes\": \"1M\", \"max_bytes\": \"64M\", "
    "\"factor\": 4},\n"
    "\"axes\": [\n"
    "  {\"name\": \"failure\", \"fail\": [\"\", \"nvswitch:nvsw1\"]},\n"
    "  {\"nvls\": [true, false]},\n"
    "  {\"name\": \"algo\", \"nccl\": [{}, {\"NCCL_ALGO\": \"Ring\"}]}\n"
    "]\n";

static ics_sweep *load(const char *path)
{
    GError *err = NULL;
    ics_sweep *s = ics_sweep_load(path, &err);
    g_assert_no_error(err);
    return s;
}

static void run(const ics_sweep *s, int threads, const char *csv, const char *json, int *done,
                int *skipped)
{
    GError *err = NULL;
    ics_sweep_opts o = {.threads = threads, .csv_path = csv, .json_path = json};
    g_assert_true(ics_sweep_run(s, &o, done, skipped, &err));
    g_assert_no_error(err);
}

static char *slurp(const char *path)
{
    char *text = NULL;
    g_assert_true(g_file_get_contents(path, &text, NULL, NULL));
    return text;
}

static void test_threads(void)
{
    char *study = write_study("small.json", small_study);
    ics_sweep *s = load(study);
    g_assert_cmpint(ics_sweep_nconfigs(s), ==, 8);
    g_assert_cmpint(ics_sweep_nsizes(s), ==, 4);
    char *csv1 = tmp_path("t1.csv"), *json1 = tmp_path("t1.jsonl");
    char *csv2 = tmp_path("t2.csv"), *json2 = tmp_path("t2.jsonl");
    int done, skipped;
    run(s, 1, csv1, json1, &done, &skipped);
    g_assert_cmpint(done, ==, 8);
    run(s, 2, csv2, json2, &done, &skipped);
    char *a = slurp(csv1), *b = slurp(csv2), *ja = slurp(json1), *jb = slurp(json2);
    g_assert_cmpstr(a, ==, b);
    g_assert_cmpstr(ja, ==, jb);
    /* 1 header + 8 x 4 rows, each JSON row an object per line */
    char **lines = g_strsplit(a, "\n", -1);
    g_assert_cmpint(g_strv_length(lines), ==, 1 + 32 + 1);
    g_assert_true(
        g_str_has_prefix(lines[0], "config,study,failure,nvls,algo,system,nodes,ranks,op,"));
    /* the axes reached the run: nvsw1 down costs the ring bandwidth; NVLS off and Ring force
     * the ring; no row failed */
    g_assert_true(g_str_has_prefix(lines[32], "7,"));
    g_assert_nonnull(strstr(lines[32], ",nvswitch:nvsw1,off,NCCL_ALGO=Ring,"));
    g_assert_nonnull(strstr(lines[32], ",Ring,Simple,22,"));
    g_assert_nonnull(strstr(lines[4], ",NVLS,Simple,"));
    g_assert_true(g_str_has_suffix(lines[4], ","));
    g_strfreev(lines);
    g_assert_null(strstr(ja, "\"error\""));
    g_free(a);
    g_free(b);
    g_free(ja);
    g_free(jb);
    /* run again: everything is found done, nothing changes */
    run(s, 2, csv1, json1, &done, &skipped);
    g_assert_cmpint(done, ==, 0);
    g_assert_cmpint(skipped, ==, 8);
    a = slurp(csv1);
    b = slurp(csv2);
    g_assert_cmpstr(a, ==, b);
    g_free(a);
    g_free(b);
    ics_sweep_free(s);
    g_free(study);
    g_free(csv1);
    g_free(json1);
    g_free(csv2);
    g_free(json2);
}

/* An interrupted run: the CSV cut in the middle of configuration 3's rows (a line half
 * written), the JSON file one configuration behind. Resuming keeps configurations 0-1, runs
 * the rest, and ends with the bytes of an uninterrupted run. */
static void test_resume(void)
{
    char *study = write_study("small.json", small_study);
    ics_sweep *s = load(study);
    char *csv = tmp_path("r.csv"), *json = tmp_path("r.jsonl");
    char *ref_csv = tmp_path("ref.csv"), *ref_json = tmp_path("ref.jsonl");
    int done, skipped;
    run(s, 2, ref_csv, ref_json, &done, &skipped);
    char *full = slurp(ref_csv), *full_json = slurp(ref_json);
    /* header + 3 configurations x 4 rows + 2 rows + half a row */
    const char *p = full;
    for (int i = 0; i < 1 + 3 * 4 + 2; i++)
        p = strchr(p, '\n') + 1;
    g_assert_true(g_file_set_contents(csv, full, (gssize)(p - full) + 10, NULL));
    p = full_json;
    for (int i = 0; i < 2 * 4; i++)
        p = strchr(p, '\n') + 1;
    g_assert_true(g_file_set_contents(json, full_json, (gssize)(p - full_json), NULL));
    run(s, 2, csv, json, &done, &skipped);
    g_assert_cmpint(skipped, ==, 2);
    g_assert_cmpint(done, ==, 6);
    char *a = slurp(csv), *b = slurp(json);
    g_assert_cmpstr(a, ==, full);
    g_assert_cmpstr(b, ==, full_json);
    g_free(a);
    g_free(b);

    /* another study's rows are refused, nothing run, the file untouched */
    char *other = write_study(
        "other.json", "\"collective\": {\"op\": \"all_gather\", \"min_bytes\": \"1M\"},\n"
                      "\"axes\": [{\"name\": \"failure\", \"fail\": [\"nvswitch:nvsw2\"]}]\n");
    ics_sweep *o = load(other);
    GError *err = NULL;
    ics_sweep_opts opts = {.threads = 1, .csv_path = csv};
    g_assert_false(ics_sweep_run(o, &opts, &done, &skipped, &err));
    g_assert_error(err, ICS_ERROR, ICS_ERROR_INPUT);
    g_assert_nonnull(strstr(err->message, "header is not this study's"));
    g_clear_error(&err);
    opts = (ics_sweep_opts){.threads = 1, .json_path = json};
    g_assert_false(ics_sweep_run(o, &opts, &done, &skipped, &err));
    g_assert_nonnull(strstr(err->message, "line 1 is not this study's"));
    g_clear_error(&err);
    a = slurp(csv);
    g_assert_cmpstr(a, ==, full);
    g_free(a);
    /* restart: start over */
    opts = (ics_sweep_opts){.threads = 1, .csv_path = csv, .restart = true};
    g_assert_true(ics_sweep_run(o, &opts, &done, &skipped, &err));
    g_assert_cmpint(done, ==, 1);
    a = slurp(csv);
    g_assert_nonnull(strstr(a, "all_gather"));
    g_free(a);
    ics_sweep_free(o);
    g_free(other);

    g_free(full);
    g_free(full_json);
    ics_sweep_free(s);
    g_free(study);
    g_free(csv);
    g_free(json);
    g_free(ref_csv);
    g_free(ref_json);
}

/* Overrides, node counts, fewer NICs and a failure the model refuses, on a cluster. */
static void test_cluster_axes(void)
{
    char *path = write_study_on(
        "cluster.json", "superpod-h100-ndr.json",
        " \"nodes\": 2, \"collective\": {\"op\": \"all_reduce\", \"min_bytes\": \"64M\", "
        "\"plan\": \"streams\"},\n"
        " \"axes\": [{\"nics\": [8, 4]},\n"
        "          {\"name\": \"fabric\", \"set\": [{}, {\"fabric\": {\"sharp\": false}}],\n"
        "           \"labels\": [\"sharp\", \"no sharp\"]},\n"
        "          {\"fail\": [\"\", \"switch:spine99\"]}],\n"
        " \"nccl\": {\"NCCL_COLLNET_ENABLE\": 1, \"NCCL_ALGO\": \"CollNetDirect\"}");
    ics_sweep *s = load(path);
    char *csv = tmp_path("c.csv");
    int done, skipped;
    run(s, 2, csv, NULL, &done, &skipped);
    char *out = slurp(csv);
    char **lines = g_strsplit(out, "\n", -1);
    g_assert_cmpint(g_strv_length(lines), ==, 1 + 8 + 1);
    /* SHARP: CollNet; without it nothing NCCL_ALGO allows runs (the row says so) */
    g_assert_nonnull(strstr(lines[1], ",CollNetDirect,"));
    g_assert_nonnull(strstr(lines[3], ",no algorithm the NCCL variables allow"));
    /* the failure the model refuses is the row's error */
    g_assert_nonnull(strstr(lines[2], "switch:spine99: no device spine99"));
    /* 4 NICs: slower than 8 */
    char **f8 = g_strsplit(lines[1], ",", -1), **f4 = g_strsplit(lines[5], ",", -1);
    /* busbw is the fifth field from the end (the system's name holds a comma) */
    guint n8 = g_strv_length(f8), n4 = g_strv_length(f4);
    double bw8 = g_ascii_strtod(f8[n8 - 5], NULL), bw4 = g_ascii_strtod(f4[n4 - 5], NULL);
    g_assert_cmpfloat(bw8, >, 100);
    g_assert_cmpfloat(bw4, <, 0.75 * bw8);
    g_strfreev(f8);
    g_strfreev(f4);
    g_strfreev(lines);
    g_free(out);
    g_free(csv);
    ics_sweep_free(s);
    g_free(path);
}

/* A model's own NCCL settings (the A3 Mega node's TCPXO profile: Simple, at least 4 channels)
 * hold in a study, under the values a configuration sets. */
static void test_nccl_conf(void)
{
    char *path = write_study_on(
        "conf.json", "gcp-a3mega.json",
        " \"nodes\": 2,\n"
        " \"collective\": {\"op\": \"all_reduce\", \"min_bytes\": \"8\", \"max_bytes\": \"8\"},\n"
        " \"axes\": [{\"name\": \"env\", \"nccl\": [{}, {\"NCCL_PROTO\": \"LL\", "
        "\"NCCL_MIN_NCHANNELS\": 1}]}]");
    ics_sweep *s = load(path);
    char *csv = tmp_path("conf.csv");
    int done, skipped;
    run(s, 1, csv, NULL, &done, &skipped);
    char *out = slurp(csv);
    char **lines = g_strsplit(out, "\n", -1);
    g_assert_cmpint(g_strv_length(lines), ==, 1 + 2 + 1);
    g_assert_true(g_str_has_suffix(lines[1], ",Tree,Simple,4,")); /* the model's */
    g_assert_true(g_str_has_suffix(lines[2], ",Tree,LL,1,"));     /* the study's over it */
    g_strfreev(lines);
    g_free(out);
    g_free(csv);
    ics_sweep_free(s);
    g_free(path);
}

/* A training study: the base scenario's layout with the axes' sizes, a failure, a layout the
 * model refuses (its row's error), the same bytes on 1 and 2 threads. */
static void test_train(void)
{
    char *scen = tmp_path("scen.json");
    char *text =
        g_strdup_printf("{\"kind\": \"training\", \"system\": \"%s/hwmodels/dgx-h100.json\",\n"
                        " \"model\": \"llama3-8b\", \"layout\": {\"tp\": 8, \"gbs\": 8}}\n",
                        ICS_SOURCE_DIR);
    g_assert_true(g_file_set_contents(scen, text, -1, NULL));
    g_free(text);
    char *study = tmp_path("train.json");
    g_assert_true(g_file_set_contents(
        study,
        "{\"kind\": \"study\", \"name\": \"train\", \"train\": \"scen.json\",\n"
        " \"axes\": [{\"tp\": [8, 4, 3]}, {\"fail\": [\"\", \"nvswitch:nvsw1\"]}]}\n",
        -1, NULL));
    ics_sweep *s = load(study);
    g_assert_cmpint(ics_sweep_nconfigs(s), ==, 6);
    g_assert_cmpint(ics_sweep_nsizes(s), ==, 1);
    char *c1 = tmp_path("tr1.csv"), *c2 = tmp_path("tr2.csv"), *j1 = tmp_path("tr1.jsonl");
    int done, skipped;
    run(s, 1, c1, j1, &done, &skipped);
    run(s, 2, c2, NULL, &done, &skipped);
    char *a = slurp(c1), *b = slurp(c2), *j = slurp(j1);
    g_assert_cmpstr(a, ==, b);
    char **lines = g_strsplit(a, "\n", -1);
    g_assert_cmpint(g_strv_length(lines), ==, 1 + 6 + 1);
    g_assert_true(g_str_has_prefix(lines[0], "config,study,tp,fail,model,nodes,gpus,tp,pp,dp,"));
    /* tp 8 on 8 GPUs: dp 1; tp 4: dp 2 (every GPU); tp 3 does not divide the heads */
    g_assert_nonnull(strstr(lines[1], ",llama3-8b,1,8,8,1,1,1,1,8,"));
    g_assert_nonnull(strstr(lines[3], ",llama3-8b,1,8,4,1,2,1,1,8,"));
    g_assert_true(g_str_has_suffix(lines[1], ","));
    g_assert_false(g_str_has_suffix(lines[5], ","));
    g_strfreev(lines);
    g_assert_nonnull(strstr(j, "\"step_time_s\": "));
    g_assert_nonnull(strstr(j, "\"error\": "));
    /* one NVSwitch down slows the tp-8 step */
    char **rows = g_strsplit(j, "\n", -1);
    double t0 = g_ascii_strtod(strstr(rows[0], "\"step_time_s\": ") + 15, NULL);
    double t1 = g_ascii_strtod(strstr(rows[1], "\"step_time_s\": ") + 15, NULL);
    g_assert_cmpfloat(t1, >, t0);
    g_strfreev(rows);
    /* the rows as a picture: a bar per configuration that ran */
    GString *svg = g_string_new(NULL);
    GError *err = NULL;
    bool drawn = ics_sweep_svg(s, a, svg, &err);
    g_assert_no_error(err);
    g_assert_true(drawn);
    g_assert_nonnull(strstr(svg->str, "tp8 / nvswitch:nvsw1"));
    g_string_free(svg, TRUE);
    g_free(a);
    g_free(b);
    g_free(j);
    g_free(c1);
    g_free(c2);
    g_free(j1);
    ics_sweep_free(s);
    g_free(study);
    g_free(scen);
}

static void test_bad_studies(void)
{
    static const struct {
        const char *body, *says;
    } cases[] = {
        {"\"collective\": {\"op\": \"all_reduce\"}, \"axes\": 3",
         ":2:45: $.axes: expected an array, got 3"},
        {"\"collective\": {\"op\": \"all_reduce\"}, \"axes\": [{\"nodes\": [1, 0]}]",
         ":2:60: $.axes[0].nodes[1]: expected an integer in 1..1048576, got 0"},
        {"\"collective\": {\"op\": \"all_reduce\"}, \"axes\": [{\"nvls\": [true], \"fail\": "
         "[\"\"]}]",
         "$.axes[0]: expected one of system, set"},
        {"\"collective\": {\"op\": \"allreduce\"}", "$.collective.op: expected one of"},
        {"\"collective\": {\"op\": \"all_reduce\", \"min_bytes\": \"2X\"}",
         "$.collective.min_bytes: expected a size in 1..1024G"},
        {"\"collective\": {\"op\": \"all_reduce\", \"min_bytes\": \"4M\", \"max_bytes\": \"1M\"}",
         "$.collective.max_bytes: expected max_bytes >= min_bytes"},
        {"\"collective\": {\"op\": \"all_reduce\"}, \"nccl\": {\"NCCL_ALGO\": \"Rings\"}",
         "$.nccl.NCCL_ALGO: expected a list of algorithms"},
        {"\"collective\": {\"op\": \"all_reduce\"}, \"axes\": [{\"engine\": [\"fluid\"]}]",
         "$.axes[0].engine[0]: expected analytic, packet or flow"},
        {"\"collective\": {\"op\": \"all_reduce\"}, \"axes\": [{\"nvls\": [true, false], "
         "\"labels\": [\"a\"]}]",
         "$.axes[0].labels: expected 2 labels"},
        {"\"collective\": {\"op\": \"all_reduce\"}, \"axes\": [{\"nvls\": [true]}, {\"nvls\": "
         "[false]}]",
         "expected distinct axis names, got \"nvls\" twice"},
        {"\"collective\": {\"op\": \"all_reduce\"}, \"axes\": [{\"nvls\": [true, false]}], "
         "\"points\": [{\"nvls\": \"maybe\"}]",
         "$.points[0].nvls: expected a label of axis nvls"},
        {"\"collective\": {\"op\": \"all_reduce\"}, \"axes\": [{\"nvls\": [true]}], "
         "\"points\": [{}]",
         "$.points[0].nvls: expected a non-empty string, got nothing"},
        {"\"collective\": {\"op\": \"all_reduce\"}, \"colective\": 1",
         "$.colective: expected one of the keys kind, name"},
        {"\"collective\": {\"op\": \"all_reduce\"}, \"axes\": [{\"tp\": [8]}]",
         "$.axes[0].tp[0]: expected a training study (\"train\") for tp"},
        {"\"collective\": {\"op\": \"all_reduce\"}, \"train\": \"x.json\"",
         "expected one of \"collective\" (a sweep of sizes), \"train\" (a training scenario) or "
         "\"trace\" (a trace to replay), got several"},
        {"\"axes\": []", "or \"trace\" (a trace to replay), got none"},
        {"\"trace\": \"no-such-trace.json\"", "$.trace: expected a trace: "},
        {"\"trace\": \"" ICS_SOURCE_DIR "/scenarios/traces/example.json\", "
         "\"axes\": [{\"tp\": [8]}]",
         "$.axes[0].tp[0]: expected a training study (\"train\") for tp"},
        {"\"train\": \"no-such-scenario.json\"", "$.train: expected a training scenario: "},
        {"\"collective\": {\"op\": \"all_reduce\"}, \"axes\": [{\"oversubscription\": [0.5]}]",
         "$.axes[0].oversubscription[0]: expected a number in 1..64, got 0.5"},
        /* names and labels stay on one line (found by fuzz_study: a CSV header of two lines) */
        {"\"collective\": {\"op\": \"all_reduce\"}, \"axes\": [{\"name\": \"a\\nb\", "
         "\"nvls\": [true]}]",
         "$.axes[0].name: expected a name without control characters, got \"a\\nb\""},
        {"\"collective\": {\"op\": \"all_reduce\"}, \"axes\": [{\"nvls\": [true, false], "
         "\"labels\": [\"on\", \"o\\u0001ff\"]}]",
         "$.axes[0].labels[1]: expected a label without control characters"},
        {"\"collective\": {\"op\": \"all_reduce\"}, \"name\": \"x\\ty\"",
         "$.name: expected a name without control characters"},
    };
    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        char *path = write_study("bad.json", cases[i].body);
        GError *err = NULL;
        ics_sweep *s = ics_sweep_load(path, &err);
        g_assert_null(s);
        g_assert_nonnull(err);
        if (!strstr(err->message, cases[i].says) || !g_str_has_prefix(err->message, path))
            g_error("case %zu: got \"%s\", expected \"%s\"", i, err->message, cases[i].says);
        g_error_free(err);
        g_free(path);
    }
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    tmpdir = g_dir_make_tmp("icsim-sweep-XXXXXX", NULL);
    g_test_add_func("/sweep/threads", test_threads);
    g_test_add_func("/sweep/resume", test_resume);
    g_test_add_func("/sweep/cluster-axes", test_cluster_axes);
    g_test_add_func("/sweep/train", test_train);
    g_test_add_func("/sweep/nccl-conf", test_nccl_conf);
    g_test_add_func("/sweep/bad-studies", test_bad_studies);
    int rc = g_test_run();
    GDir *d = g_dir_open(tmpdir, 0, NULL);
    for (const char *f; d && (f = g_dir_read_name(d));) {
        char *p = tmp_path(f);
        g_remove(p);
        g_free(p);
    }
    if (d)
        g_dir_close(d);
    g_rmdir(tmpdir);
    g_free(tmpdir);
    return rc;
}
