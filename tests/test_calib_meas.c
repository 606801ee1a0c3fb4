/* Measurement reading for `icsim calibrate` (sim/calibrate/meas.h): the repository's JSON files
 * and nccl-tests stdout logs built from the same runs' raw lines (tests/data/calib/) give the
 * same rows; each log layout (2019, 2.13-2.16, 2.17+, per-iteration, timestamps), launch (-g 8,
 * mpirun, aprun, srun -l) and way of naming the operation is read; the operation and the rank
 * count are inferred where the log names neither; every bad log fails with its line. */
#include <math.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <glib.h>
#include <glib/gstdio.h>

#include "calibrate/meas.h"

/* ---- helpers --------------------------------------------------------------------------------- */

static char *data_path(const char *dir, const char *name)
{
    return g_build_filename(ICS_SOURCE_DIR, dir, name, NULL);
}

static gint by_name(gconstpointer a, gconstpointer b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The shipped logs' JSON files (every .json of validate/data/nccl), by name: what the tests that
 * walk every log go through, in a fixed order. */
static GPtrArray *shipped_logs(void)
{
    char *dir = data_path("validate/data/nccl", "");
    GDir *d = g_dir_open(dir, 0, NULL);
    g_assert_nonnull(d);
    GPtrArray *names = g_ptr_array_new_with_free_func(g_free);
    for (const char *n; (n = g_dir_read_name(d));)
        if (g_str_has_suffix(n, ".json"))
            g_ptr_array_add(names, g_strdup(n));
    g_dir_close(d);
    g_free(dir);
    g_ptr_array_sort(names, by_name);
    return names;
}

/* Reads one file of tests/data/calib (or another dir) into a new set, asserting success. */
static ics_meas *read_ok(const char *dir, const char *name, const char *op)
{
    char *path = data_path(dir, name);
    ics_meas *m = ics_meas_new();
    GError *err = NULL;
    bool ok = ics_meas_read_file(m, path, op, &err);
    g_assert_no_error(err);
    g_assert_true(ok);
    g_free(path);
    return m;
}

static ics_meas *text_ok(const char *text, const char *op)
{
    ics_meas *m = ics_meas_new();
    GError *err = NULL;
    bool ok = ics_meas_read_text(m, "t.log", text, strlen(text), op, &err);
    g_assert_no_error(err);
    g_assert_true(ok);
    return m;
}

/* The error of reading `text` (transfer full); the set stays as it was. */
static char *text_error(const char *text, size_t len, const char *op)
{
    ics_meas *m = ics_meas_new();
    GError *err = NULL;
    if (ics_meas_read_text(m, "t.log", text, len, op, &err))
        g_error("read, expected an error: %.*s", (int)MIN(len, 400), text);
    g_assert_error(err, ICS_MEAS_ERROR, ICS_MEAS_ERROR_INPUT);
    g_assert_null(strchr(err->message, '\n'));
    g_assert_cmpuint(ics_meas_n_tables(m), ==, 0);
    char *msg = g_strdup(err->message);
    g_error_free(err);
    ics_meas_free(m);
    return msg;
}

static void assert_contains(const char *msg, const char *want)
{
    if (!strstr(msg, want))
        g_error("message \"%s\" lacks \"%s\"", msg, want);
}

static void expect_text_error(const char *text, const char *op, const char *want)
{
    char *msg = text_error(text, strlen(text), op);
    assert_contains(msg, want);
    g_free(msg);
}

/* A classic (2.13-2.16) table header, for inline logs. */
#define HDR                                                                                        \
    "#       size         count      type   redop    root     time   algbw   busbw #wrong     "    \
    "time   algbw   busbw #wrong\n"                                                                \
    "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            "    \
    "(us)  (GB/s)  (GB/s)       \n"
#define RANKS8                                                                                     \
    "#  Rank  0 Group  0 Pid   4242 on    gpu-a01 device  0 [0x18] NVIDIA H100 80GB HBM3\n"        \
    "#  Rank  1 Group  0 Pid   4242 on    gpu-a01 device  1 [0x2a] NVIDIA H100 80GB HBM3\n"        \
    "#  Rank  2 Group  0 Pid   4242 on    gpu-a01 device  2 [0x3a] NVIDIA H100 80GB HBM3\n"        \
    "#  Rank  3 Group  0 Pid   4242 on    gpu-a01 device  3 [0x5d] NVIDIA H100 80GB HBM3\n"        \
    "#  Rank  4 Group  0 Pid   4242 on    gpu-a01 device  4 [0x9a] NVIDIA H100 80GB HBM3\n"        \
    "#  Rank  5 Group  0 Pid   4242 on    gpu-a01 device  5 [0xab] NVIDIA H100 80GB HBM3\n"        \
    "#  Rank  6 Group  0 Pid   4242 on    gpu-a01 device  6 [0xba] NVIDIA H100 80GB HBM3\n"        \
    "#  Rank  7 Group  0 Pid   4242 on    gpu-a01 device  7 [0xdb] NVIDIA H100 80GB HBM3\n"
#define ROW_1M                                                                                     \
    "     1048576        262144     float     sum      -1    27.37   38.31   67.04      0    "     \
    "26.93   38.94   68.14      0\n"

/* ---- JSON ------------------------------------------------------------------------------------ */

static void test_json_dgxh100(void)
{
    ics_meas *m = read_ok("validate/data/nccl", "nvidia_dgxc_dgxh100_1node_allreduce.json", NULL);
    g_assert_cmpuint(ics_meas_n_tables(m), ==, 1);
    const ics_meas_table *t = ics_meas_table_at(m, 0);
    g_assert_cmpint(t->op, ==, ICS_COLL_ALL_REDUCE);
    g_assert_cmpstr(t->op_from, ==, "JSON");
    g_assert_cmpint(t->nranks, ==, 8);
    g_assert_cmpint(t->ranks_per_node, ==, 8);
    g_assert_cmpint(t->nodes, ==, 1);
    g_assert_cmpstr(t->dtype, ==, "float");
    g_assert_cmpint(t->dtype_bytes, ==, 4);
    g_assert_cmpstr(t->redop, ==, "sum");
    g_assert_cmpstr(t->gpu_name, ==, "NVIDIA H100 80GB HBM3");
    g_assert_cmpint(t->header_line, ==, 0);
    g_assert_cmpuint(t->n_rows, ==, 32);
    const ics_meas_row *r = &t->rows[0];
    g_assert_cmpuint(r->size_bytes, ==, 8);
    g_assert_cmpuint(r->count, ==, 2);
    g_assert_cmpint(r->root, ==, -1);
    g_assert_cmpfloat(r->oop.time_us, ==, 13.67);
    g_assert_cmpfloat(r->ip.time_us, ==, 13.03);
    g_assert_cmpfloat(r->oop.busbw_gbps, ==, 0.0);
    g_assert_cmpfloat(r->oop.wrong_value, ==, 0.0);
    g_assert_false(r->oop.wrong);
    g_assert_true(ics_meas_sample_ok(&r->oop) && ics_meas_sample_ok(&r->ip));
    g_assert_cmpint(r->line, ==, 0);
    g_assert_cmpint(r->index, ==, 0);
    r = &t->rows[31];
    g_assert_cmpuint(r->size_bytes, ==, 17179869184ull);
    g_assert_cmpfloat(r->oop.busbw_gbps, ==, 479.90);
    g_assert_cmpint(r->index, ==, 31);
    ics_meas_free(m);
}

/* The busbw a log's time gives (ics_meas_busbw) is the one nccl-tests printed, to within its
 * two decimals and the time's own rounding, on every row of every shipped log: what makes
 * `bench accuracy` compare against it rather than the coarse printed figure. And it is the
 * printed figure where no time was printed. */
static void test_busbw_from_time(void)
{
    int samples = 0, coarse = 0;
    GPtrArray *names = shipped_logs();
    for (guint f = 0; f < names->len; f++) {
        const char *n = g_ptr_array_index(names, f);
        ics_meas *m = read_ok("validate/data/nccl", n, NULL);
        for (guint i = 0; i < ics_meas_n_tables(m); i++) {
            const ics_meas_table *t = ics_meas_table_at(m, i);
            for (guint k = 0; k < t->n_rows; k++) {
                const ics_meas_row *r = &t->rows[k];
                if (r->oop.time_us <= 0 || r->oop.busbw_gbps < 0)
                    continue;
                double b = ics_meas_busbw(t, r, &r->oop);
                /* half the last printed digit, and 5e-4 of it for the time's rounding (a
                 * 28,691.0 us row printed to 0.1 us: 3.6e-4 measured, the most of any log) */
                if (fabs(b - r->oop.busbw_gbps) > 0.005 + 5e-4 * b)
                    g_error("%s row %u: busbw %.4f from the time, %.2f printed", n, k, b,
                            r->oop.busbw_gbps);
                coarse += r->oop.busbw_gbps < 1.0 && fabs(b - r->oop.busbw_gbps) > 0.1 * b;
                samples++;
            }
        }
        ics_meas_free(m);
    }
    g_ptr_array_free(names, TRUE);
    g_assert_cmpint(samples, >, 900);
    /* rows whose printed busbw is more than 10% off what their time gives: the reason */
    g_assert_cmpint(coarse, >, 50);
    ics_meas_sample none = {.time_us = -1, .busbw_gbps = 12.34};
    ics_meas_table t = {.op = ICS_COLL_ALL_REDUCE, .nranks = 8};
    ics_meas_row row = {.size_bytes = 1048576};
    g_assert_cmpfloat(ics_meas_busbw(&t, &row, &none), ==, 12.34);
    ics_meas_sample timed = {.time_us = 100.0, .busbw_gbps = 18.35};
    g_assert_cmpfloat_with_epsilon(ics_meas_busbw(&t, &row, &timed), 1048576 / 1e5 * 1.75, 1e-9);
}

/* Every shipped file reads, and agrees with what a plain JSON parse of it says. */
static void test_json_all_shipped(void)
{
    int files = 0;
    GPtrArray *names = shipped_logs();
    for (guint f = 0; f < names->len; f++) {
        const char *n = g_ptr_array_index(names, f);
        ics_meas *m = read_ok("validate/data/nccl", n, NULL);
        char *path = data_path("validate/data/nccl", n), *text = NULL;
        g_assert_true(g_file_get_contents(path, &text, NULL, NULL));
        cJSON *doc = cJSON_Parse(text);
        const cJSON *rows = cJSON_GetObjectItem(doc, "rows");
        const cJSON *hw = cJSON_GetObjectItem(doc, "hardware");
        guint total = 0;
        for (guint i = 0; i < ics_meas_n_tables(m); i++) {
            const ics_meas_table *t = ics_meas_table_at(m, i);
            g_assert_cmpint(t->nranks, ==, cJSON_GetObjectItem(hw, "total_gpus")->valueint);
            for (guint k = 0; k < t->n_rows; k++) {
                const cJSON *row = cJSON_GetArrayItem(rows, t->rows[k].index);
                g_assert_cmpint(t->rows[k].index, ==, (int)total);
                g_assert_cmpfloat(t->rows[k].size_bytes, ==,
                                  cJSON_GetObjectItem(row, "size")->valuedouble);
                g_assert_cmpfloat(t->rows[k].oop.time_us, ==,
                                  cJSON_GetObjectItem(row, "oop_time_us")->valuedouble);
                g_assert_false(t->rows[k].oop.wrong); /* deviations of 1e-07 pass */
                total++;
            }
        }
        g_assert_cmpuint(total, ==, (guint)cJSON_GetArraySize(rows));
        cJSON_Delete(doc);
        g_free(text);
        g_free(path);
        ics_meas_free(m);
        files++;
    }
    g_ptr_array_free(names, TRUE);
    g_assert_cmpint(files, >=, 14);
}

/* What icsim-validate writes: the same schema plus kernel and kernel_params; unknown keys that
 * describe (notes, derived, ...) are ignored. */
static void test_json_runner_keys(void)
{
    const char *text =
        "{\"id\": \"run-1\", \"collective\": \"reduce_scatter\", \"kernel\": \"nccl\",\n"
        " \"kernel_params\": {\"algo\": \"Ring\", \"proto\": \"Simple\"}, \"notes\": \"x\",\n"
        " \"hardware\": {\"gpu\": \"NVIDIA H100\", \"gpus_per_node\": 4, \"nodes\": 2},\n"
        " \"rows\": [{\"size\": 8388608, \"count\": 262144, \"type\": \"float\", \"redop\": "
        "\"sum\", \"root\": -1, \"oop_time_us\": 40.5, \"oop_algbw\": 207.13, \"oop_busbw\": "
        "181.24, \"oop_wrong\": 0, \"ip_time_us\": \"N/A\", \"ip_wrong\": \"N/A\", \"raw\": \"\"},"
        "\n {\"size\": 16777216, \"count\": 524288, \"type\": \"float\", \"oop_time_us\": 70.1, "
        "\"oop_wrong\": 2, \"extra\": [1, 2]}]}";
    ics_meas *m = text_ok(text, "all_gather");     /* the file names its operation */
    g_assert_cmpuint(ics_meas_n_tables(m), ==, 2); /* the second row has no redop */
    const ics_meas_table *t = ics_meas_table_at(m, 0);
    g_assert_cmpint(t->op, ==, ICS_COLL_REDUCE_SCATTER);
    g_assert_cmpint(t->nranks, ==, 8);
    g_assert_cmpint(t->ranks_per_node, ==, 4);
    g_assert_cmpint(t->nodes, ==, 2);
    g_assert_cmpfloat(t->rows[0].ip.time_us, <, 0);
    g_assert_false(ics_meas_sample_ok(&t->rows[0].ip));
    g_assert_true(ics_meas_sample_ok(&t->rows[0].oop));
    t = ics_meas_table_at(m, 1);
    g_assert_null(t->redop);
    g_assert_true(t->rows[0].oop.wrong);
    g_assert_cmpint(t->rows[0].index, ==, 1);
    ics_meas_free(m);
}

static void test_json_bad(void)
{
    static const struct {
        const char *text, *want;
    } cases[] = {
        {"{\"collective\": \"all_reduce\", \"hardware\": {\"total_gpus\": 8}}",
         "t.log:1:1: $.rows: expected an array, got nothing (the key is missing)"},
        {"{\"collective\": \"all_reduce\", \"hardware\": {\"total_gpus\": 8}, \"rows\": []}",
         "$.rows: expected at least one row, got an empty array"},
        {"{\"collective\": \"allgatherv\", \"hardware\": {\"total_gpus\": 8}, \"rows\": []}",
         "t.log:1:16: $.collective: expected one of all_reduce, all_gather"},
        {"{\"collective\": \"all_reduce\", \"hardware\": {\"nodes\": 2}, \"rows\": []}",
         "$.hardware.total_gpus: expected an integer in 1..1048576, got nothing"},
        {"{\"collective\": \"all_reduce\", \"hardware\": {\"total_gpus\": 8},\n\"rows\": [\n"
         "{\"size\": \"8\", \"count\": 2, \"type\": \"float\", \"oop_time_us\": 1}]}",
         "t.log:3:10: $.rows[0].size: expected an integer in 0..9007199254740992, got \"8\""},
        {"{\"collective\": \"all_reduce\", \"hardware\": {\"total_gpus\": 8}, \"rows\": "
         "[{\"size\": "
         "8, \"count\": 2, \"type\": \"float\", \"oop_time_us\": -3}]}",
         "$.rows[0].oop_time_us: expected a number >= 0 or \"N/A\", got -3"},
        {"{\"collective\": \"all_reduce\", \"hardware\": {\"total_gpus\": 8}, \"rows\": "
         "[{\"size\": "
         "8, \"count\": 2, \"type\": \"float\"}]}",
         "$.rows[0].oop_time_us: expected a number >= 0 or \"N/A\", got nothing"},
        {"{\"collective\": \"all_reduce\", \"hardware\": {\"total_gpus\": 8}, \"rows\": "
         "[{\"size\": "
         "8, \"count\": 2, \"type\": \"float\", \"oop_time_us\": 1, \"oop_wrong\": \"many\"}]}",
         "$.rows[0].oop_wrong: expected a count of wrong elements"},
        {"{\"collective\": \"all_reduce\", \"hardware\": {\"total_gpus\": 8}, \"rows\": "
         "[{\"size\": "
         "1e300, \"count\": 2, \"type\": \"float\", \"oop_time_us\": 1}]}",
         "$.rows[0].size: expected an integer in 0..9007199254740992, got 1e+300"},
        {"{\"collective\": \"all_reduce\", \"hardware\": {\"total_gpus\": 8}, \"rows\": [7]}",
         "$.rows[0]: expected a row (an object), got 7"},
        {"{\"collective\": \"all_reduce\", \"rows\": [}", "t.log:1:"},
        {"  {\"collective\": \"all_reduce\", \"collective\": \"sendrecv\"}",
         "t.log:1:32: $.collective: expected each key once"},
        {"{\"collective\": \"all_reduce\", \"env\": {\"note\": [1], \"NCCL_PROTO\": true}, "
         "\"hardware\": {\"total_gpus\": 8}, \"rows\": [{\"size\": 8, \"count\": 2, "
         "\"type\": \"float\", \"oop_time_us\": 1}]}",
         "$.env.NCCL_PROTO: expected a string or a whole number (an NCCL variable's value)"},
    };
    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++)
        expect_text_error(cases[i].text, NULL, cases[i].want);
}

/* ---- text: the shipped layouts --------------------------------------------------------------- */

/* A log made from the JSON file's raw lines gives the JSON file's rows, value for value. */
static void test_text_same_rows_as_json(void)
{
    ics_meas *j = read_ok("validate/data/nccl", "nvidia_dgxc_dgxh100_1node_allreduce.json", NULL);
    ics_meas *l = read_ok("tests/data/calib", "dgxh100_allreduce_g8.log", NULL);
    g_assert_cmpuint(ics_meas_n_tables(l), ==, 1);
    const ics_meas_table *a = ics_meas_table_at(j, 0), *b = ics_meas_table_at(l, 0);
    g_assert_cmpint(a->op, ==, b->op);
    g_assert_cmpint(a->nranks, ==, b->nranks);
    g_assert_cmpint(a->ranks_per_node, ==, b->ranks_per_node);
    g_assert_cmpstr(a->dtype, ==, b->dtype);
    g_assert_cmpstr(a->redop, ==, b->redop);
    g_assert_cmpstr(a->gpu_name, ==, b->gpu_name);
    g_assert_cmpuint(a->n_rows, ==, b->n_rows);
    for (guint i = 0; i < a->n_rows; i++) {
        const ics_meas_row *x = &a->rows[i], *y = &b->rows[i];
        g_assert_cmpuint(x->size_bytes, ==, y->size_bytes);
        g_assert_cmpuint(x->count, ==, y->count);
        g_assert_cmpint(x->root, ==, y->root);
        g_assert_cmpint(x->index, ==, y->index);
        const ics_meas_sample *xs[] = {&x->oop, &x->ip}, *ys[] = {&y->oop, &y->ip};
        for (int h = 0; h < 2; h++) {
            g_assert_cmpfloat(xs[h]->time_us, ==, ys[h]->time_us);
            g_assert_cmpfloat(xs[h]->algbw_gbps, ==, ys[h]->algbw_gbps);
            g_assert_cmpfloat(xs[h]->busbw_gbps, ==, ys[h]->busbw_gbps);
            g_assert_cmpfloat(xs[h]->wrong_value, ==, ys[h]->wrong_value);
            g_assert_cmpint(xs[h]->wrong, ==, ys[h]->wrong);
        }
    }
    ics_meas_free(j);
    ics_meas_free(l);
}

/* -g 8: one process, one host; NCCL INFO lines inside the table are skipped. */
static void test_text_single_process(void)
{
    ics_meas *m = read_ok("tests/data/calib", "dgxh100_allreduce_g8.log", NULL);
    const ics_meas_table *t = ics_meas_table_at(m, 0);
    g_assert_cmpint(t->op, ==, ICS_COLL_ALL_REDUCE);
    g_assert_cmpstr(t->op_from, ==, "command line");
    g_assert_cmpint(t->nranks, ==, 8);
    g_assert_cmpstr(t->nranks_from, ==, "rank lines");
    g_assert_cmpint(t->ranks_per_node, ==, 8);
    g_assert_cmpint(t->nodes, ==, 1);
    g_assert_cmpstr(t->gpu_name, ==, "NVIDIA H100 80GB HBM3");
    g_assert_true(g_str_has_suffix(t->source, "dgxh100_allreduce_g8.log"));
    g_assert_cmpint(t->header_line, ==, 27);
    g_assert_cmpint(t->rows[0].line, ==, 29);
    g_assert_cmpint(t->rows[16].line, ==, 47); /* after two NCCL INFO lines */
    g_assert_cmpuint(t->rows[31].size_bytes, ==, 17179869184ull);
    ics_meas_free(m);
}

/* mpirun -np 16 over two hosts, nccl-tests 2.17's layout with its start and end lines. */
static void test_text_mpi_two_hosts(void)
{
    ics_meas *m = read_ok("tests/data/calib", "sophia_allreduce_mpi16.log", NULL);
    g_assert_cmpuint(ics_meas_n_tables(m), ==, 1);
    const ics_meas_table *t = ics_meas_table_at(m, 0);
    g_assert_cmpint(t->op, ==, ICS_COLL_ALL_REDUCE);
    g_assert_cmpint(t->nranks, ==, 16);
    g_assert_cmpint(t->ranks_per_node, ==, 8);
    g_assert_cmpint(t->nodes, ==, 2);
    g_assert_cmpstr(t->gpu_name, ==, "NVIDIA A100-SXM4-40GB");
    g_assert_cmpuint(t->n_rows, ==, 29);
    g_assert_cmpuint(t->rows[28].size_bytes, ==, 1073741824u);
    g_assert_cmpfloat(t->rows[28].oop.time_us, ==, 11295);
    g_assert_cmpfloat(t->rows[28].ip.busbw_gbps, ==, 178.52);
    ics_meas_free(m);
}

/* Two runs in one file: the first named by its command line, the second only by nccl-tests'
 * "# Collective test starting:" line. */
static void test_text_two_ops(void)
{
    ics_meas *m = read_ok("tests/data/calib", "two_ops.log", NULL);
    g_assert_cmpuint(ics_meas_n_tables(m), ==, 2);
    const ics_meas_table *ag = ics_meas_table_at(m, 0), *sr = ics_meas_table_at(m, 1);
    g_assert_cmpint(ag->op, ==, ICS_COLL_ALL_GATHER);
    g_assert_cmpstr(ag->op_from, ==, "command line");
    g_assert_cmpint(sr->op, ==, ICS_COLL_SENDRECV);
    g_assert_cmpstr(sr->op_from, ==, "'Collective test starting' line");
    for (int i = 0; i < 2; i++) {
        const ics_meas_table *t = ics_meas_table_at(m, i);
        g_assert_cmpint(t->nranks, ==, 8);
        g_assert_cmpstr(t->dtype, ==, "double");
        g_assert_cmpint(t->dtype_bytes, ==, 8);
        g_assert_cmpuint(t->n_rows, ==, 10);
    }
    g_assert_cmpstr(ag->redop, ==, "none");
    g_assert_cmpuint(ag->rows[0].size_bytes, ==, 33554432u);
    g_assert_cmpuint(ag->rows[0].count, ==, 524288u);
    g_assert_cmpint(sr->rows[0].index, ==, 10);
    g_assert_cmpint(sr->header_line, >, ag->rows[9].line);
    g_assert_cmpfloat(sr->rows[0].ip.wrong_value, <, 0); /* N/A: not checked, not wrong */
    g_assert_false(sr->rows[0].ip.wrong);
    g_assert_true(ics_meas_sample_ok(&sr->rows[0].ip));
    ics_meas_free(m);
}

/* 2019: no root column, and "error" is a deviation, judged by nccl-tests' tolerance. */
static void test_text_2019_layout(void)
{
    ics_meas *m = read_ok("tests/data/calib", "v100_allreduce_2019.log", NULL);
    const ics_meas_table *t = ics_meas_table_at(m, 0);
    g_assert_cmpint(t->op, ==, ICS_COLL_ALL_REDUCE);
    g_assert_cmpint(t->nranks, ==, 8);
    g_assert_cmpuint(t->n_rows, ==, 25);
    g_assert_cmpstr(t->gpu_name, ==, "Tesla V100-SXM2-16GB");
    g_assert_cmpint(t->rows[0].root, ==, -1);
    g_assert_cmpfloat(t->rows[0].oop.wrong_value, ==, 1e-07);
    for (guint i = 0; i < t->n_rows; i++)
        g_assert_true(ics_meas_sample_ok(&t->rows[i].oop) && ics_meas_sample_ok(&t->rows[i].ip));
    ics_meas_free(m);
}

/* aprun -n 8 -N 4: ranks per node from the rank lines' hosts. */
static void test_text_aprun_alltoall(void)
{
    ics_meas *m = read_ok("tests/data/calib", "polaris_alltoall_aprun.log", NULL);
    const ics_meas_table *t = ics_meas_table_at(m, 0);
    g_assert_cmpint(t->op, ==, ICS_COLL_ALLTOALL);
    g_assert_cmpint(t->nranks, ==, 8);
    g_assert_cmpint(t->ranks_per_node, ==, 4);
    g_assert_cmpint(t->nodes, ==, 2);
    g_assert_cmpuint(t->n_rows, ==, 29);
    g_assert_cmpuint(t->rows[0].size_bytes, ==, 0);
    ics_meas_free(m);
}

/* ---- text: inference ------------------------------------------------------------------------- */

/* A table pasted alone: all_reduce from redop, root, size/count and busbw/algbw; 80 ranks from
 * busbw/algbw = 2 x 79 / 80. */
static void test_infer_allreduce(void)
{
    ics_meas *m = read_ok("tests/data/calib", "infer_allreduce_paste.log", NULL);
    const ics_meas_table *t = ics_meas_table_at(m, 0);
    g_assert_cmpint(t->op, ==, ICS_COLL_ALL_REDUCE);
    g_assert_cmpstr(t->op_from, ==, "columns");
    g_assert_cmpint(t->nranks, ==, 80);
    g_assert_cmpstr(t->nranks_from, ==, "busbw/algbw");
    g_assert_cmpint(t->ranks_per_node, ==, 0);
    ics_meas_free(m);
}

/* redop sum, root -1, size = count x 8, busbw = algbw with 8 ranks: sendrecv. */
static void test_infer_sendrecv(void)
{
    ics_meas *m = read_ok("tests/data/calib", "infer_sendrecv.log", NULL);
    const ics_meas_table *t = ics_meas_table_at(m, 0);
    g_assert_cmpint(t->op, ==, ICS_COLL_SENDRECV);
    g_assert_cmpstr(t->op_from, ==, "columns");
    g_assert_cmpint(t->nranks, ==, 8);
    ics_meas_free(m);
}

/* Every shipped table's raw lines under a bare header, nothing else: the operation and the rank
 * count are the file's, or the error names the two operations the columns cannot tell apart
 * (all_gather and alltoall; sendrecv and an all_reduce of two ranks, busbw = algbw). */
static void test_infer_shipped_tables(void)
{
    int inferred = 0, ambiguous = 0;
    GPtrArray *names = shipped_logs();
    for (guint f = 0; f < names->len; f++) {
        const char *n = g_ptr_array_index(names, f);
        char *path = data_path("validate/data/nccl", n), *text = NULL;
        g_assert_true(g_file_get_contents(path, &text, NULL, NULL));
        cJSON *doc = cJSON_Parse(text);
        const cJSON *rows = cJSON_GetObjectItem(doc, "rows"), *row;
        bool root = cJSON_GetObjectItem(cJSON_GetArrayItem(rows, 0), "root") != NULL;
        GString *log =
            g_string_new(root ? HDR
                              : "#       size         count    type   redop     time   "
                                "algbw   busbw  error     time   algbw   busbw  error\n");
        bool bus_is_alg = true;
        cJSON_ArrayForEach(row, rows)
        {
            const char *raw = cJSON_GetObjectItem(row, "raw")->valuestring;
            if (strstr(raw, "TRUNCATED")) /* cut in the source */
                continue;
            g_string_append_printf(log, "%s\n", raw);
            bus_is_alg &= cJSON_GetObjectItem(row, "oop_busbw")->valuedouble ==
                          cJSON_GetObjectItem(row, "oop_algbw")->valuedouble;
        }
        const char *coll = cJSON_GetObjectItem(doc, "collective")->valuestring;
        if (strcmp(coll, "all_gather") == 0 || strcmp(coll, "alltoall") == 0) {
            char *msg = text_error(log->str, log->len, NULL);
            assert_contains(msg, "t.log:1: expected the log to name the operation");
            assert_contains(msg, "fits both all_gather and alltoall");
            g_free(msg);
            ambiguous++;
        } else if (bus_is_alg) {
            char *msg = text_error(log->str, log->len, NULL);
            assert_contains(msg, "fits both all_reduce and sendrecv");
            g_free(msg);
            ambiguous++;
        } else {
            /* all-reduce and reduce-scatter: the size column is count x type for one,
             * count x type x ranks for the other */
            ics_meas *m = text_ok(log->str, NULL);
            const ics_meas_table *t = ics_meas_table_at(m, 0);
            g_assert_true(t->op == ICS_COLL_ALL_REDUCE || t->op == ICS_COLL_REDUCE_SCATTER);
            g_assert_cmpstr(ics_coll_op_name(t->op), ==, coll);
            g_assert_cmpint(
                t->nranks, ==,
                cJSON_GetObjectItem(cJSON_GetObjectItem(doc, "hardware"), "total_gpus")->valueint);
            ics_meas_free(m);
            inferred++;
        }
        g_string_free(log, TRUE);
        cJSON_Delete(doc);
        g_free(text);
        g_free(path);
    }
    g_ptr_array_free(names, TRUE);
    g_assert_cmpint(inferred, >=, 8);
    g_assert_cmpint(ambiguous, >=, 5);
}

/* all_gather and alltoall print the same columns: an error naming the header, unless the
 * caller names the operation. */
static void test_infer_ambiguous(void)
{
    char *path = data_path("tests/data/calib", "allgather_no_command.log");
    ics_meas *m = ics_meas_new();
    GError *err = NULL;
    g_assert_false(ics_meas_read_file(m, path, NULL, &err));
    g_assert_error(err, ICS_MEAS_ERROR, ICS_MEAS_ERROR_INPUT);
    assert_contains(err->message, "allgather_no_command.log:14: ");
    assert_contains(err->message, "all_gather and alltoall");
    assert_contains(err->message, "name the operation");
    g_clear_error(&err);
    g_assert_cmpuint(ics_meas_n_tables(m), ==, 0);
    g_assert_true(ics_meas_read_file(m, path, "all_gather", &err));
    g_assert_true(ics_meas_read_file(m, path, "alltoall_perf", &err));
    g_assert_no_error(err);
    g_assert_cmpuint(ics_meas_n_tables(m), ==, 2);
    g_assert_cmpint(ics_meas_table_at(m, 0)->op, ==, ICS_COLL_ALL_GATHER);
    g_assert_cmpstr(ics_meas_table_at(m, 0)->op_from, ==, "caller");
    g_assert_cmpint(ics_meas_table_at(m, 1)->op, ==, ICS_COLL_ALLTOALL);
    g_assert_false(ics_meas_read_file(m, path, "all-gather-v", &err));
    assert_contains(err->message, "the operation: expected one of all_reduce");
    g_clear_error(&err);
    /* a log that names its operation keeps it */
    g_free(path);
    path = data_path("tests/data/calib", "two_ops.log");
    g_assert_true(ics_meas_read_file(m, path, "reduce", &err));
    g_assert_cmpint(ics_meas_table_at(m, 2)->op, ==, ICS_COLL_ALL_GATHER);
    g_free(path);
    ics_meas_free(m);
}

static void test_infer_other_ops(void)
{
    /* reduce_scatter: size = count x 4 x 8 with a reduction */
    ics_meas *m = text_ok(HDR "    33554432       1048576     float     sum      -1    180.1  "
                              "186.31  163.02      0    178.2  188.30  164.76      0\n",
                          NULL);
    const ics_meas_table *t = ics_meas_table_at(m, 0);
    g_assert_cmpint(t->op, ==, ICS_COLL_REDUCE_SCATTER);
    g_assert_cmpint(t->nranks, ==, 8);
    g_assert_cmpstr(t->nranks_from, ==, "size/count");
    ics_meas_free(m);
    /* broadcast, every root in turn (-r -1): redop none and a root */
    m = text_ok(RANKS8 HDR "     1048576        262144     float    none       0    20.10   "
                           "52.17   52.17      0    19.90   52.69   52.69      0\n"
                           "     1048576        262144     float    none       1    20.30   "
                           "51.65   51.65      0    19.95   52.56   52.56      0\n",
                NULL);
    t = ics_meas_table_at(m, 0);
    g_assert_cmpint(t->op, ==, ICS_COLL_BROADCAST);
    g_assert_cmpint(t->rows[1].root, ==, 1);
    ics_meas_free(m);
    /* reduce */
    m = text_ok(RANKS8 HDR "     1048576        262144     float     sum       0    21.10   "
                           "49.70   49.70      0    20.90   50.17   50.17      0\n",
                NULL);
    g_assert_cmpint(ics_meas_table_at(m, 0)->op, ==, ICS_COLL_REDUCE);
    ics_meas_free(m);
    /* 2019 all_gather printed neither redop nor root */
    m = text_ok("#       size         count    type     time   algbw   busbw  error     time   "
                "algbw   busbw  error\n"
                "     8388608        262144   float    120.1   69.85   61.12  0e+00    118.9   "
                "70.55   61.73  0e+00\n",
                NULL);
    t = ics_meas_table_at(m, 0);
    g_assert_cmpint(t->op, ==, ICS_COLL_ALL_GATHER);
    g_assert_cmpint(t->nranks, ==, 8);
    g_assert_null(t->redop);
    ics_meas_free(m);
    /* busbw = algbw and two ranks: all_reduce or sendrecv */
    expect_text_error("#  Rank  0 Group  0 Pid 1 on a device  0 [0x18] X\n"
                      "#  Rank  1 Group  0 Pid 1 on a device  1 [0x2a] X\n" HDR
                      "     1048576        262144     float     sum      -1    10.00  104.86  "
                      "104.86      0    10.00  104.86  104.86      0\n",
                      NULL, "t.log:3: expected the log to name the operation");
}

/* ---- text: what users keep around the tables ------------------------------------------------- */

static void test_text_noise_and_prefixes(void)
{
    /* srun -l, CRLF line ends, a prompt with a path, NCCL WARN, blank lines */
    const char *text =
        "user@login:~/nccl-tests$ srun -N 2 --ntasks-per-node=4 -l ./build/all_reduce_perf_mpi "
        "-b 1M -e 1M -g 1\r\n"
        "0: # nThread 1 nGpus 1 minBytes 1048576 maxBytes 1048576 step: 2(factor) warmup iters: 5 "
        "iters: 20 agg iters: 1 validation: 1 graph: 0\r\n"
        "0: #\r\n"
        "0: # Using devices\r\n"
        "0: #  Rank  0 Group  0 Pid  11 on     node-1 device  0 [0x18] NVIDIA H100 80GB HBM3\r\n"
        "0: #  Rank  1 Group  0 Pid  12 on     node-1 device  1 [0x2a] NVIDIA H100 80GB HBM3\r\n"
        "0: #  Rank  2 Group  0 Pid  13 on     node-1 device  2 [0x3a] NVIDIA H100 80GB HBM3\r\n"
        "0: #  Rank  3 Group  0 Pid  14 on     node-1 device  3 [0x5d] NVIDIA H100 80GB HBM3\r\n"
        "0: #  Rank  4 Group  0 Pid  21 on     node-2 device  0 [0x18] NVIDIA H100 80GB HBM3\r\n"
        "0: #  Rank  5 Group  0 Pid  22 on     node-2 device  1 [0x2a] NVIDIA H100 80GB HBM3\r\n"
        "0: #  Rank  6 Group  0 Pid  23 on     node-2 device  2 [0x3a] NVIDIA H100 80GB HBM3\r\n"
        "0: #  Rank  7 Group  0 Pid  24 on     node-2 device  3 [0x5d] NVIDIA H100 80GB HBM3\r\n"
        "5: node-2:22:90 [1] NCCL WARN Cuda failure 'out of memory'\r\n"
        "\r\n"
        "0: #\r\n"
        "0: #       size         count      type   redop    root     time   algbw   busbw "
        "#wrong     time   algbw   busbw #wrong\r\n"
        "0: #        (B)    (elements)                               (us)  (GB/s)  (GB/s)\r\n"
        "0:      1048576        262144     float     sum      -1    27.37   38.31   67.04      0"
        "    26.93   38.94   68.14      0\r\n"
        "0: # Out of bounds values : 0 OK\r\n";
    ics_meas *m = text_ok(text, NULL);
    const ics_meas_table *t = ics_meas_table_at(m, 0);
    g_assert_cmpint(t->op, ==, ICS_COLL_ALL_REDUCE);
    g_assert_cmpint(t->nranks, ==, 8);
    g_assert_cmpint(t->ranks_per_node, ==, 4);
    g_assert_cmpint(t->nodes, ==, 2);
    g_assert_cmpfloat(t->rows[0].ip.busbw_gbps, ==, 68.14);
    g_assert_cmpint(t->rows[0].line, ==, 18);
    g_assert_cmpstr(t->gpu_name, ==, "NVIDIA H100 80GB HBM3");
    ics_meas_free(m);

    /* Open MPI --tag-output, and the rank count from the header and the launch command */
    m = text_ok("$ mpirun -np 2 --tag-output ./all_reduce_perf -b 1M -e 1M -g 4\n"
                "[1,0]<stdout>:# nThread 1 nGpus 4 minBytes 1048576 maxBytes 1048576\n"
                "[1,0]<stdout>:" HDR "[1,0]<stdout>:" ROW_1M,
                NULL);
    t = ics_meas_table_at(m, 0);
    g_assert_cmpint(t->nranks, ==, 8);
    g_assert_cmpstr(t->nranks_from, ==, "header and launch command");
    ics_meas_free(m);

    /* NCCL INFO's "nranks" when the rank lines are gone */
    m = text_ok("$ ./build/all_reduce_perf -b 1M -e 1M -g 8\n"
                "h:1:2 [0] NCCL INFO comm 0x1 rank 0 nranks 8 cudaDev 0 busId 18000 - Init "
                "COMPLETE\n" HDR ROW_1M,
                NULL);
    g_assert_cmpstr(ics_meas_table_at(m, 0)->nranks_from, ==, "NCCL INFO");
    ics_meas_free(m);
}

/* The run's NCCL variables: NCCL's "NAME set by environment to VALUE" lines (the last value
 * of a name wins; a later run starts without them), and a JSON log's "env" strings (NCCL_*
 * only: ALCF's also record FI_* variables and a plugin note). */
static void test_env(void)
{
    ics_meas *m = text_ok("$ ./build/all_reduce_perf -b 1M -e 1M -g 8\n"
                          "h:1:2 [0] NCCL INFO NCCL_PROTO set by environment to LL128\n"
                          "h:1:2 [1] NCCL INFO NCCL_NET_GDR_LEVEL set by environment to PHB\n"
                          "h:1:2 [1] NCCL INFO NCCL_PROTO set by environment to Simple\n"
                          "h:1:2 [0] NCCL INFO NCCL_MAX_NCHANNELS set by environment to 4.\n"
                          "h:1:2 [0] NCCL INFO NCCL_ALGO set by environment\n" RANKS8 HDR ROW_1M
                          "$ ./build/all_reduce_perf -b 1M -e 1M -g 8\n" RANKS8 HDR ROW_1M,
                          NULL);
    g_assert_cmpuint(ics_meas_n_tables(m), ==, 2);
    char **env = ics_meas_table_at(m, 0)->env;
    g_assert_nonnull(env);
    g_assert_cmpuint(g_strv_length(env), ==, 3);
    /* ncclLoadParam's integers end in a period that is not the value's */
    g_assert_cmpstr(g_environ_getenv(env, "NCCL_MAX_NCHANNELS"), ==, "4");
    g_assert_cmpstr(g_environ_getenv(env, "NCCL_PROTO"), ==, "Simple");
    g_assert_cmpstr(g_environ_getenv(env, "NCCL_NET_GDR_LEVEL"), ==, "PHB");
    g_assert_null(ics_meas_table_at(m, 1)->env);
    ics_meas_free(m);
    m = read_ok("validate/data/nccl", "alcf_polaris_a100x4_2node_all_reduce.json", NULL);
    env = ics_meas_table_at(m, 0)->env;
    g_assert_cmpstr(g_environ_getenv(env, "NCCL_NET_GDR_LEVEL"), ==, "PHB");
    g_assert_cmpstr(g_environ_getenv(env, "NCCL_CROSS_NIC"), ==, "1");
    g_assert_null(g_environ_getenv(env, "FI_CXI_RDZV_PROTO"));
    /* as a simulation reads it: every recorded variable but CollNet's (no SHARP plugin loaded) */
    const ics_meas_table *tab = ics_meas_table_at(m, 0);
    g_assert_nonnull(g_environ_getenv(env, "NCCL_COLLNET_ENABLE"));
    g_assert_null(ics_meas_env_lookup("NCCL_COLLNET_ENABLE", (void *)tab));
    g_assert_cmpstr(ics_meas_env_lookup("NCCL_NET_GDR_LEVEL", (void *)tab), ==, "PHB");
    g_assert_null(ics_meas_env_lookup("NCCL_PROTO", NULL));
    ics_meas_free(m);
    /* a whole number is the variable as NCCL reads it from text */
    m = text_ok("{\"collective\": \"all_reduce\", \"env\": {\"NCCL_MAX_NCHANNELS\": 4}, "
                "\"hardware\": {\"total_gpus\": 8}, \"rows\": [{\"size\": 8, \"count\": 2, "
                "\"type\": \"float\", \"oop_time_us\": 1}]}",
                NULL);
    env = ics_meas_table_at(m, 0)->env;
    g_assert_cmpstr(g_environ_getenv(env, "NCCL_MAX_NCHANNELS"), ==, "4");
    ics_meas_free(m);
}

/* The NCCL release a run used: NCCL INFO's "NCCL version" line, nccl-tests' "nccl-library="
 * code (a later run starts without it), a JSON log's "nccl_version" text; 0 where none is
 * given or the text is not a version. */
static void test_nccl_version(void)
{
    ics_meas *m = text_ok("# nccl-tests version 2.13.9 nccl-headers=21903 nccl-library=21903\n"
                          "$ ./build/all_reduce_perf -b 1M -e 1M -g 8\n" RANKS8 HDR ROW_1M
                          "$ ./build/all_reduce_perf -b 1M -e 1M -g 8\n"
                          "h:1:2 [0] NCCL INFO NCCL version 2.18.3+cuda12.2\n" RANKS8 HDR ROW_1M
                          "# nccl-tests version 2.13.9 nccl-headers=21903 nccl-library=21903\n"
                          "$ ./build/all_reduce_perf -b 1M -e 1M -g 8\n"
                          "h:1:2 [0] NCCL INFO NCCL version 1.2.x\n" RANKS8 HDR ROW_1M,
                          NULL);
    g_assert_cmpuint(ics_meas_n_tables(m), ==, 3);
    g_assert_cmpint(ics_meas_table_at(m, 0)->nccl_version, ==, 21903);
    g_assert_cmpint(ics_meas_table_at(m, 1)->nccl_version, ==, 21803);
    g_assert_cmpint(ics_meas_table_at(m, 2)->nccl_version, ==, 0);
    ics_meas_free(m);
    m = read_ok("validate/data/nccl", "oci_gb200_mnnvl_2tray_8gpu_allreduce.json", NULL);
    g_assert_cmpint(ics_meas_table_at(m, 0)->nccl_version, ==, 22606);
    ics_meas_free(m);
    const struct {
        const char *text;
        int code;
    } json[] = {{"\"v2.21.5-1\"", 22105}, {"\"2.9.9\"", 20909}, {"\"2.8.4\"", 0},
                {"\"unknown\"", 0},       {"22606", 0},         {"\"3.0.0\"", 0}};
    for (size_t i = 0; i < G_N_ELEMENTS(json); i++) {
        char *text =
            g_strdup_printf("{\"collective\": \"all_reduce\", \"nccl_version\": %s, \"hardware\": "
                            "{\"total_gpus\": 8}, \"rows\": [{\"size\": 8, \"count\": 2, \"type\": "
                            "\"float\", \"oop_time_us\": 1}]}",
                            json[i].text);
        m = text_ok(text, NULL);
        g_assert_cmpint(ics_meas_table_at(m, 0)->nccl_version, ==, json[i].code);
        ics_meas_free(m);
        g_free(text);
    }
}

/* -d all: one header, one table per datatype. */
static void test_text_datatypes_split(void)
{
    ics_meas *m = text_ok("$ ./build/all_reduce_perf -b 1M -e 1M -g 8 -d all\n" RANKS8 HDR ROW_1M
                          "     1048576        524288      half     sum      -1    25.01   41.93"
                          "   73.37      0    24.90   42.11   73.70      0\n"
                          "     1048576        524288  bfloat16     sum      -1    25.11   41.76"
                          "   73.08      0    24.95   42.03   73.55      0\n",
                          NULL);
    g_assert_cmpuint(ics_meas_n_tables(m), ==, 3);
    g_assert_cmpstr(ics_meas_table_at(m, 1)->dtype, ==, "half");
    g_assert_cmpint(ics_meas_table_at(m, 1)->dtype_bytes, ==, 2);
    g_assert_cmpstr(ics_meas_table_at(m, 2)->dtype, ==, "bfloat16");
    g_assert_cmpint(ics_meas_table_at(m, 2)->header_line, ==, 10);
    g_assert_cmpint(ics_meas_table_at(m, 2)->rows[0].index, ==, 2);
    ics_meas_free(m);
}

/* nccl-tests 2.19's per-iteration columns and -S timestamps; 2017's milliseconds. */
static void test_text_newer_and_older_columns(void)
{
    ics_meas *m = text_ok(
        "$ ./build/all_reduce_perf -b 1M -e 1M -g 8 -I 1 -S 1\n" RANKS8
        "#       size         count      type   redop    root     time   algbw   busbw  #wrong    "
        "i_min    i_max    i_p99    i_cv%     time   algbw   busbw  #wrong    i_min    i_max    "
        "i_p99    i_cv%            timestamp\n"
        "     1048576        262144     float     sum      -1    27.37   38.31   67.04       0    "
        "26.10    29.90    29.90     3.12    26.93   38.94   68.14       0    26.01    28.88    "
        "28.88     2.95  2025-11-03 10:12:44\n",
        NULL);
    const ics_meas_table *t = ics_meas_table_at(m, 0);
    g_assert_cmpfloat(t->rows[0].oop.time_us, ==, 27.37);
    g_assert_cmpfloat(t->rows[0].ip.time_us, ==, 26.93);
    g_assert_cmpfloat(t->rows[0].ip.busbw_gbps, ==, 68.14);
    ics_meas_free(m);

    m = text_ok("nThread 1 nGpus 4 minBytes 8 maxBytes 8 step: 2(factor) warmup iters: 1 iters: 20 "
                "validation: 1\n"
                "#   Rank  0 on  host device  0 [0x04] Tesla P100-SXM2-16GB\n"
                "#   Rank  1 on  host device  1 [0x06] Tesla P100-SXM2-16GB\n"
                "#   Rank  2 on  host device  2 [0x07] Tesla P100-SXM2-16GB\n"
                "#   Rank  3 on  host device  3 [0x08] Tesla P100-SXM2-16GB\n"
                "#                                 out-of-place                    in-place\n"
                "#      bytes             N    type      op     time  algbw  busbw      res"
                "     time  algbw  busbw      res\n"
                "     8388608       2097152   float     sum    0.523  16.04  24.06    0e+00"
                "    0.522  16.07  24.10    0e+00\n"
                " Out of bounds values : 0 OK\n",
                NULL);
    t = ics_meas_table_at(m, 0);
    g_assert_cmpint(t->op, ==, ICS_COLL_ALL_REDUCE);
    g_assert_cmpint(t->nranks, ==, 4);
    g_assert_cmpfloat(fabs(t->rows[0].oop.time_us - 523), <, 1e-9);
    g_assert_cmpstr(t->gpu_name, ==, "Tesla P100-SXM2-16GB");
    ics_meas_free(m);
}

/* Rows kept but flagged: #wrong > 0, a time of N/A, a deviation beyond the tolerance. */
static void test_text_flagged_rows(void)
{
    ics_meas *m = text_ok(
        "$ ./build/all_reduce_perf -b 1M -e 2M -g 8\n" RANKS8 HDR
        "     1048576        262144     float     sum      -1    27.37   38.31   67.04     12    "
        "26.93   38.94   68.14      0\n"
        "     2097152        524288     float     sum      -1      N/A     N/A     N/A    N/A    "
        "42.09   49.83   87.20  1e+06\n",
        NULL);
    const ics_meas_table *t = ics_meas_table_at(m, 0);
    g_assert_cmpuint(t->n_rows, ==, 2);
    g_assert_true(t->rows[0].oop.wrong);
    g_assert_false(ics_meas_sample_ok(&t->rows[0].oop));
    g_assert_true(ics_meas_sample_ok(&t->rows[0].ip));
    g_assert_cmpfloat(t->rows[1].oop.time_us, <, 0);
    g_assert_false(t->rows[1].oop.wrong);
    g_assert_false(ics_meas_sample_ok(&t->rows[1].oop));
    g_assert_cmpfloat(t->rows[1].ip.wrong_value, ==, 1e6);
    g_assert_true(t->rows[1].ip.wrong);
    ics_meas_free(m);
    m = text_ok("$ ./all_reduce_perf -g 8\n" RANKS8
                "#       size         count    type   redop     time   algbw   busbw  error     "
                "time   algbw   busbw  error\n"
                "     1048576        262144   float     sum    27.37   38.31   67.04  3e-04    "
                "26.93   38.94   68.14  2e-05\n",
                NULL);
    t = ics_meas_table_at(m, 0);
    g_assert_true(t->rows[0].oop.wrong); /* 3e-4 > 1e-5 x 7 */
    g_assert_false(t->rows[0].ip.wrong); /* 2e-5 <= 7e-5 */
    ics_meas_free(m);
}

/* ---- bad logs -------------------------------------------------------------------------------- */

static void test_bad_logs(void)
{
    static const struct {
        const char *file, *want;
    } cases[] = {
        {"bad_truncated.log",
         "bad_truncated.log:58: expected 13 columns (size count type redop root time algbw busbw "
         "#wrong time algbw busbw #wrong), got 7"},
        {"bad_columns.log", "bad_columns.log:47: expected 13 columns"},
        {"bad_size.log",
         "bad_size.log:38:11: size: expected a size in bytes (an integer >= 0), got \"4K\""},
        {"bad_no_table.log",
         "bad_no_table.log:30: expected an nccl-tests results table (a \"#  size  count  type "
         "...\" header and its rows), got the end of the file"},
        {"allgather_no_command.log", "allgather_no_command.log:14: expected the log to name the "
                                     "operation"},
    };
    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        char *path = data_path("tests/data/calib", cases[i].file);
        ics_meas *m = ics_meas_new();
        GError *err = NULL;
        g_assert_false(ics_meas_read_file(m, path, NULL, &err));
        g_assert_error(err, ICS_MEAS_ERROR, ICS_MEAS_ERROR_INPUT);
        assert_contains(err->message, path);
        assert_contains(err->message, cases[i].want);
        g_assert_cmpuint(ics_meas_n_tables(m), ==, 0);
        g_error_free(err);
        ics_meas_free(m);
        g_free(path);
    }
}

static void test_bad_text(void)
{
    static const struct {
        const char *text, *want;
    } cases[] = {
        {"", "t.log: expected an nccl-tests log or a JSON measurement file, got an empty file"},
        {"\n\nhello\n", "t.log:3: expected an nccl-tests results table"},
        {RANKS8 ROW_1M, "t.log:9: expected the table header"},
        {RANKS8 HDR "# Out of bounds values : 0 OK\n",
         "t.log:9: expected rows under this table header, got none"},
        {RANKS8 HDR, "t.log:9: expected rows under this table header, got the end of the file"},
        {RANKS8 HDR "     1048576        262144     float     sum      -1      nan   38.31   67.04"
                    "      0    26.93   38.94   68.14      0\n",
         "t.log:11:59: time: expected a time in us (a number >= 0) or N/A, got \"nan\""},
        {RANKS8 HDR "     1048576        262144     float     sum      -1    27.37   38.31   67.04"
                    "      0    26.93     inf   68.14      0\n",
         "t.log:11:99: algbw (in-place): expected a bandwidth"},
        {RANKS8 HDR "     1048576        262144     float     sum      -1    -27.3   38.31   67.04"
                    "      0    26.93   38.94   68.14      0\n",
         "t.log:11:57: time: expected a time in us (a number >= 0) or N/A, got \"-27.3\""},
        {RANKS8 HDR
         "18446744073709551616  262144     float     sum      -1    27.37   38.31   67.04"
         "      0    26.93   38.94   68.14      0\n",
         "t.log:11:1: size: expected a size in bytes"},
        {RANKS8 HDR "     1048576        262144     float     sum      -7    27.37   38.31   67.04"
                    "      0    26.93   38.94   68.14      0\n",
         "t.log:11:51: root: expected a root rank (an integer >= -1), got \"-7\""},
        {RANKS8 HDR "     1048576        262144     float     sum      -1    27.37   0x1p3   67.04"
                    "      0    26.93   38.94   68.14      0\n",
         "t.log:11:65: algbw: expected a bandwidth"},
        {"$ mpirun -np 8 ./build/gather_perf -g 1\n" RANKS8 HDR ROW_1M,
         "t.log:1: expected one of the operations all_reduce"},
        {"$ mpirun -np 4 ./build/all_reduce_perf -b 1M -e 1M\n"
         "# nThread 1 nGpus 1 minBytes 1048576 maxBytes 1048576\n"
         "#  Rank  0 Group  0 Pid 1 on a device  0 [0x18] X\n" HDR ROW_1M,
         "t.log:4: expected the ranks of 4 processes in the rank lines (the launch command starts "
         "4), got those of one: nccl-tests was built without MPI"},
        {HDR "     1048576        262144     float     sum      -1    27.37    0.00    0.00      0"
             "    26.93    0.00    0.00      0\n",
         "t.log:1: expected the log to name the operation"},
        {"# Collective test starting: all_reduce_perf\n" HDR
         "     1048576        262144     float     sum      -1    27.37"
         "    0.00    0.00      0    26.93    0.00    0.00      0\n",
         "t.log:2: expected the rank count in the log"},
        {"#  size  count  type  size  time  algbw  busbw  #wrong\n", "got \"size\" twice"},
        {"#  size  redop  time  algbw  busbw  #wrong\n",
         "t.log:1: expected a table header naming size, count, type and time columns"},
        {"#  Rank 2000000 Group 0 Pid 1 on a device 0 [0x18] X\n",
         "t.log:1:9: rank: expected a rank below 1048576, got \"2000000\""},
    };
    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++)
        expect_text_error(cases[i].text, NULL, cases[i].want);

    char nul[] = "# nThread 1 nGpus 8\n#  Rank  0 X\0Y\n";
    char *msg = text_error(nul, sizeof nul - 1, NULL);
    g_assert_cmpstr(msg, ==, "t.log:2:13: expected text, got a NUL byte");
    g_free(msg);

    gsize big = ICS_MEAS_MAX_LINE_BYTES + 10;
    char *long_line = g_malloc(big + 1);
    memset(long_line, 'x', big);
    long_line[big] = '\0';
    msg = text_error(long_line, big, NULL);
    assert_contains(msg, "t.log:1: expected a line of at most 1 MiB");
    g_free(msg);
    g_free(long_line);
}

/* At most ICS_MEAS_MAX_ROWS rows in a set, every file together; a failed file adds nothing. */
static void test_row_cap(void)
{
    GString *log = g_string_new("$ ./build/all_reduce_perf -g 8\n" RANKS8 HDR);
    for (int i = 0; i < ICS_MEAS_MAX_ROWS / 2; i++)
        g_string_append(log, ROW_1M);
    ics_meas *m = ics_meas_new();
    GError *err = NULL;
    g_assert_true(ics_meas_read_text(m, "a.log", log->str, log->len, NULL, &err));
    g_assert_true(ics_meas_read_text(m, "b.log", log->str, log->len, NULL, &err));
    g_assert_no_error(err);
    g_assert_false(ics_meas_read_text(m, "c.log", log->str, log->len, NULL, &err));
    assert_contains(err->message, "c.log:12: expected at most 100000 rows in all, got more");
    g_clear_error(&err);
    g_assert_cmpuint(ics_meas_n_tables(m), ==, 2);
    g_assert_cmpuint(ics_meas_table_at(m, 1)->n_rows, ==, ICS_MEAS_MAX_ROWS / 2);
    g_string_free(log, TRUE);

    /* files that are not files */
    char *dir = data_path("tests/data", "calib");
    g_assert_false(ics_meas_read_file(m, dir, NULL, &err));
    assert_contains(err->message, "expected a regular file, got a directory");
    g_clear_error(&err);
    g_free(dir);
    g_assert_false(ics_meas_read_file(m, "/nonexistent/x.log", NULL, &err));
    assert_contains(err->message, "/nonexistent/x.log: expected a readable file");
    g_clear_error(&err);
    ics_meas_free(m);
    ics_meas_free(NULL);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/calib-meas/json/dgxh100", test_json_dgxh100);
    g_test_add_func("/calib-meas/json/all-shipped", test_json_all_shipped);
    g_test_add_func("/calib-meas/json/busbw-from-time", test_busbw_from_time);
    g_test_add_func("/calib-meas/json/runner-keys", test_json_runner_keys);
    g_test_add_func("/calib-meas/json/bad", test_json_bad);
    g_test_add_func("/calib-meas/text/same-rows-as-json", test_text_same_rows_as_json);
    g_test_add_func("/calib-meas/text/single-process", test_text_single_process);
    g_test_add_func("/calib-meas/text/mpi-two-hosts", test_text_mpi_two_hosts);
    g_test_add_func("/calib-meas/text/two-ops", test_text_two_ops);
    g_test_add_func("/calib-meas/text/2019-layout", test_text_2019_layout);
    g_test_add_func("/calib-meas/text/aprun-alltoall", test_text_aprun_alltoall);
    g_test_add_func("/calib-meas/text/noise-and-prefixes", test_text_noise_and_prefixes);
    g_test_add_func("/calib-meas/text/datatypes-split", test_text_datatypes_split);
    g_test_add_func("/calib-meas/text/newer-and-older-columns", test_text_newer_and_older_columns);
    g_test_add_func("/calib-meas/text/flagged-rows", test_text_flagged_rows);
    g_test_add_func("/calib-meas/infer/allreduce", test_infer_allreduce);
    g_test_add_func("/calib-meas/infer/sendrecv", test_infer_sendrecv);
    g_test_add_func("/calib-meas/infer/shipped-tables", test_infer_shipped_tables);
    g_test_add_func("/calib-meas/infer/ambiguous", test_infer_ambiguous);
    g_test_add_func("/calib-meas/infer/other-ops", test_infer_other_ops);
    g_test_add_func("/calib-meas/text/env", test_env);
    g_test_add_func("/calib-meas/nccl-version", test_nccl_version);
    g_test_add_func("/calib-meas/bad/logs", test_bad_logs);
    g_test_add_func("/calib-meas/bad/text", test_bad_text);
    g_test_add_func("/calib-meas/bad/row-cap", test_row_cap);
    return g_test_run();
}
