/* The JSON a run writes: parsed back through cJSON, compared field by field with what went
 * in, and with the schema of the measurement files in validate/data/nccl/. */
#include "format.h"
#include "json_out.h"
#include "plan.h"
#include "sysinfo.h"

#include <cjson/cJSON.h>
#include <glib/gstdio.h>
#include <string.h>

static icsv_hw test_hw(void)
{
    icsv_hw hw = {.ngpus = 8, .sm_count = 132};
    for (int i = 0; i < 8; i++) {
        hw.dev[i] = (icsv_device){.ordinal = i, .pci_bus = i};
        g_strlcpy(hw.dev[i].name, "NVIDIA H100 80GB HBM3", sizeof hw.dev[i].name);
    }
    g_strlcpy(hw.cuda_arch, "sm_90", sizeof hw.cuda_arch);
    g_strlcpy(hw.intra_node, "NVLink", sizeof hw.intra_node);
    g_strlcpy(hw.system, "DGXH100", sizeof hw.system);
    return hw;
}

static void test_rows(icsv_row rows[2])
{
    for (int i = 0; i < 2; i++) {
        rows[i] = (icsv_row){.op = ICSV_OP_ALL_REDUCE, .dtype = ICSV_FLOAT, .root = -1};
        icsv_plan_counts(ICSV_OP_ALL_REDUCE, ICSV_FLOAT, 8, i ? 1ull << 30 : 8, &rows[i].counts);
        icsv_place_set_time(&rows[i].oop, i ? 4567.891 : 13.671, rows[i].counts.size_bytes,
                            ICSV_OP_ALL_REDUCE, 8);
        icsv_place_set_time(&rows[i].ip, i ? 4500.0 : 13.03, rows[i].counts.size_bytes,
                            ICSV_OP_ALL_REDUCE, 8);
    }
    rows[1].ip.wrong = ICSV_WRONG_NA;
    rows[1].oop.wrong = 12;
}

static icsv_coll_report test_report(const icsv_hw *hw, const icsv_row *rows)
{
    return (icsv_coll_report){
        .hostname = "dgx-01",
        .date_iso = "2026-02-03T10:11:12Z",
        .hw = hw,
        .nccl_version = NULL,
        .command = "icsim-validate collective all_reduce -b 8 -e 1G -f 2",
        .op = ICSV_OP_ALL_REDUCE,
        .kernel = "icsim-simple-ring",
        .params = {.ctas = 16, .unroll = 4, .chunk_bytes = 2 << 20, .slices = 2},
        .rows = rows,
        .n_rows = 2,
    };
}

static double num(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    g_assert_true(cJSON_IsNumber(v));
    return v->valuedouble;
}

static const char *str(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    g_assert_true(cJSON_IsString(v));
    return v->valuestring;
}

static void test_round_trip(void)
{
    icsv_hw hw = test_hw();
    icsv_row rows[2];
    test_rows(rows);
    icsv_coll_report rep = test_report(&hw, rows);
    char *text = icsv_json_coll_text(&rep);
    cJSON *doc = cJSON_Parse(text);
    g_assert_nonnull(doc);
    g_assert_cmpstr(str(doc, "id"), ==, "dgx_01_8gpu_all_reduce_icsim_simple_ring_20260203");
    g_assert_cmpstr(str(doc, "source_desc"), ==, "icsim-validate " ICSV_VERSION " on dgx-01");
    g_assert_cmpstr(str(doc, "date"), ==, "2026-02-03T10:11:12Z");
    g_assert_true(cJSON_IsNull(cJSON_GetObjectItem(doc, "nccl_version")));
    g_assert_true(cJSON_IsObject(cJSON_GetObjectItem(doc, "env")));
    g_assert_cmpstr(str(doc, "collective"), ==, "all_reduce");
    g_assert_cmpstr(str(doc, "kernel"), ==, "icsim-simple-ring");
    g_assert_cmpstr(str(doc, "command"), ==, rep.command);
    const cJSON *hwj = cJSON_GetObjectItem(doc, "hardware");
    g_assert_cmpstr(str(hwj, "gpu"), ==, "NVIDIA H100 80GB HBM3");
    g_assert_cmpstr(str(hwj, "system"), ==, "DGXH100");
    g_assert_cmpstr(str(hwj, "intra_node"), ==, "NVLink");
    g_assert_cmpstr(str(hwj, "cuda_arch"), ==, "sm_90");
    g_assert_cmpfloat(num(hwj, "gpus_per_node"), ==, 8);
    g_assert_cmpfloat(num(hwj, "nodes"), ==, 1);
    g_assert_cmpfloat(num(hwj, "total_gpus"), ==, 8);
    g_assert_cmpfloat(num(hwj, "sm_count"), ==, 132);
    const cJSON *kp = cJSON_GetObjectItem(doc, "kernel_params");
    g_assert_cmpfloat(num(kp, "ctas"), ==, 16);
    g_assert_cmpfloat(num(kp, "chunk_bytes"), ==, 2 << 20);
    g_assert_cmpfloat(num(doc, "n_rows"), ==, 2);

    const cJSON *jrows = cJSON_GetObjectItem(doc, "rows");
    g_assert_cmpint(cJSON_GetArraySize(jrows), ==, 2);
    const cJSON *r1 = cJSON_GetArrayItem(jrows, 1);
    g_assert_cmpfloat(num(r1, "size"), ==, 1073741824.0);
    g_assert_cmpfloat(num(r1, "count"), ==, 268435456.0);
    g_assert_cmpstr(str(r1, "type"), ==, "float");
    g_assert_cmpstr(str(r1, "redop"), ==, "sum");
    g_assert_cmpfloat(num(r1, "root"), ==, -1);
    g_assert_cmpfloat(num(r1, "oop_time_us"), ==, 4567.9); /* as printed: "%7.1f" */
    g_assert_cmpfloat(num(r1, "oop_algbw"), ==, 235.06);
    g_assert_cmpfloat(num(r1, "oop_busbw"), ==, 411.36);
    g_assert_cmpstr(str(r1, "oop_wrong"), ==, "12");
    g_assert_cmpstr(str(r1, "ip_wrong"), ==, "N/A");
    char *raw = icsv_format_row(&rows[1]);
    g_assert_cmpstr(str(r1, "raw"), ==, raw);
    g_free(raw);
    const cJSON *r0 = cJSON_GetArrayItem(jrows, 0);
    g_assert_cmpfloat(num(r0, "oop_time_us"), ==, 13.67);
    g_assert_cmpstr(str(r0, "oop_wrong"), ==, "0");
    cJSON_Delete(doc);
    g_free(text);
}

static int cmp_str_ptr(gconstpointer a, gconstpointer b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The fields of one object as a sorted "key:type" list. */
static char *shape(const cJSON *o)
{
    GPtrArray *keys = g_ptr_array_new_with_free_func(g_free);
    const cJSON *it;
    cJSON_ArrayForEach(it, o)
    {
        const char *t = cJSON_IsString(it)   ? "string"
                        : cJSON_IsNumber(it) ? "number"
                        : cJSON_IsObject(it) ? "object"
                        : cJSON_IsArray(it)  ? "array"
                        : cJSON_IsNull(it)   ? "null"
                                             : "other";
        g_ptr_array_add(keys, g_strdup_printf("%s:%s", it->string, t));
    }
    g_ptr_array_sort(keys, cmp_str_ptr);
    g_ptr_array_add(keys, NULL);
    char *s = g_strjoinv(",", (char **)keys->pdata);
    g_ptr_array_free(keys, TRUE);
    return s;
}

/* Our rows have exactly the fields, and types, of the data files' rows; every top-level and
 * hardware field the data file has that we also write has the same type. */
static void test_schema_matches_data(void)
{
    char *path = g_build_filename(ICSV_SOURCE_DIR, "data", "nccl",
                                  "nvidia_dgxc_dgxh100_1node_allreduce.json", NULL);
    char *data_text = NULL;
    g_assert_true(g_file_get_contents(path, &data_text, NULL, NULL));
    cJSON *data = cJSON_Parse(data_text);
    g_assert_nonnull(data);

    icsv_hw hw = test_hw();
    icsv_row rows[2];
    test_rows(rows);
    icsv_coll_report rep = test_report(&hw, rows);
    rep.nccl_version = "2.27.3";
    char *text = icsv_json_coll_text(&rep);
    cJSON *ours = cJSON_Parse(text);

    char *a = shape(cJSON_GetArrayItem(cJSON_GetObjectItem(data, "rows"), 0));
    char *b = shape(cJSON_GetArrayItem(cJSON_GetObjectItem(ours, "rows"), 0));
    g_assert_cmpstr(a, ==, b);
    g_free(a);
    g_free(b);

    const char *top[] = {"id",  "source_desc", "date",       "hardware", "nccl_version",
                         "env", "command",     "collective", "n_rows",   "rows"};
    for (size_t i = 0; i < G_N_ELEMENTS(top); i++) {
        const cJSON *d = cJSON_GetObjectItem(data, top[i]), *o = cJSON_GetObjectItem(ours, top[i]);
        g_assert_nonnull(d);
        g_assert_nonnull(o);
        g_assert_cmpint(d->type & 0xff, ==, o->type & 0xff);
    }
    const cJSON *dh = cJSON_GetObjectItem(data, "hardware"),
                *oh = cJSON_GetObjectItem(ours, "hardware");
    const cJSON *it;
    cJSON_ArrayForEach(it, dh)
    {
        const cJSON *o = cJSON_GetObjectItem(oh, it->string);
        if (o)
            g_assert_cmpint(it->type & 0xff, ==, o->type & 0xff);
    }
    cJSON_Delete(ours);
    cJSON_Delete(data);
    g_free(text);
    g_free(data_text);
    g_free(path);
}

static void test_p2p(void)
{
    icsv_hw hw = test_hw();
    hw.ngpus = 2;
    const double uni[4] = {1535.444, 96.92, 96.86, 1546.8}, bi[4] = {1, 2, 3, 4},
                 lat[4] = {2.27, 2.49, 2.55, 2.24};
    icsv_p2p_report rep = {
        .hw = &hw, .uni_gbps = uni, .bi_gbps = bi, .lat_us = lat, .copy = "sm", .bytes = 1 << 28};
    char *text = icsv_json_p2p_text(&rep);
    cJSON *doc = cJSON_Parse(text);
    g_assert_cmpstr(str(doc, "kind"), ==, "p2p_matrix");
    g_assert_cmpstr(str(doc, "copy"), ==, "sm");
    g_assert_cmpfloat(num(doc, "bytes"), ==, 268435456.0);
    g_assert_cmpint(cJSON_GetArraySize(cJSON_GetObjectItem(doc, "gpus")), ==, 2);
    const cJSON *u = cJSON_GetObjectItem(doc, "unidirectional_gbps");
    g_assert_cmpfloat(cJSON_GetArrayItem(cJSON_GetArrayItem(u, 0), 0)->valuedouble, ==, 1535.44);
    g_assert_cmpfloat(cJSON_GetArrayItem(cJSON_GetArrayItem(u, 1), 0)->valuedouble, ==, 96.86);
    const cJSON *l = cJSON_GetObjectItem(doc, "latency_us");
    g_assert_cmpfloat(cJSON_GetArrayItem(cJSON_GetArrayItem(l, 0), 1)->valuedouble, ==, 2.49);
    g_assert_nonnull(cJSON_GetObjectItem(doc, "bidirectional_gbps"));
    cJSON_Delete(doc);
    g_free(text);
}

static icsv_compute_hw compute_hw(void)
{
    icsv_compute_hw hw = {.sms = 132,
                          .cc_major = 9,
                          .cc_minor = 0,
                          .clock_khz = 1980000,
                          .memory_bytes = 85028765696ull,
                          .free_bytes = 84ull << 30};
    g_strlcpy(hw.gpu, "NVIDIA H100 80GB HBM3", sizeof hw.gpu);
    return hw;
}

/* Exactly the keys `icsim calibrate` reads (sim/calibrate/compute_meas.c refuses others in a
 * row), with their types and values, for a fixed list of rows. */
static void test_compute(void)
{
    icsv_compute_hw hw = compute_hw();
    const icsv_compute_row rows[] = {
        {.kernel = ICSV_COMPUTE_GEMM,
         .dtype = ICSV_GEMM_BF16,
         .m = 8192,
         .n = 8192,
         .k = 8192,
         .time_us = 1378.2049},
        {.kernel = ICSV_COMPUTE_GEMM,
         .dtype = ICSV_GEMM_FP8,
         .m = 1,
         .n = 8192,
         .k = 8192,
         .time_us = 12.3449},
        {.kernel = ICSV_COMPUTE_COPY, .bytes = 1073741824, .time_us = 620.1},
    };
    icsv_compute_report rep = {
        .command = "icsim-validate compute --json c.json", .hw = &hw, .rows = rows, .n_rows = 3};
    char *text = icsv_json_compute_text(&rep);
    g_assert_true(g_str_has_prefix(text, "{\n\t\"kind\":\t\"icsim-compute-measurements\""));
    cJSON *doc = cJSON_Parse(text);
    g_assert_nonnull(doc);
    char *top = shape(doc), *hwk = shape(cJSON_GetObjectItem(doc, "hardware"));
    g_assert_cmpstr(top, ==,
                    "command:string,hardware:object,kind:string,rows:array,timing:string,"
                    "version:number");
    g_assert_cmpstr(hwk, ==,
                    "cc:string,clock_mhz:number,gpu:string,memory_gbytes:number,sms:number");
    g_free(top);
    g_free(hwk);
    g_assert_cmpstr(str(doc, "kind"), ==, "icsim-compute-measurements");
    g_assert_cmpfloat(num(doc, "version"), ==, 1);
    g_assert_cmpstr(str(doc, "command"), ==, rep.command);
    g_assert_cmpstr(str(doc, "timing"), ==, "stream");
    const cJSON *h = cJSON_GetObjectItem(doc, "hardware");
    g_assert_cmpstr(str(h, "gpu"), ==, "NVIDIA H100 80GB HBM3");
    g_assert_cmpfloat(num(h, "sms"), ==, 132);
    g_assert_cmpstr(str(h, "cc"), ==, "9.0");
    g_assert_cmpfloat(num(h, "clock_mhz"), ==, 1980);
    g_assert_cmpfloat(num(h, "memory_gbytes"), ==, 85.03);

    const cJSON *jr = cJSON_GetObjectItem(doc, "rows");
    g_assert_cmpint(cJSON_GetArraySize(jr), ==, 3);
    const char *want[] = {"dtype:string,k:number,kernel:string,m:number,n:number,time_us:number",
                          "dtype:string,k:number,kernel:string,m:number,n:number,time_us:number",
                          "bytes:number,kernel:string,time_us:number"};
    for (int i = 0; i < 3; i++) {
        char *got = shape(cJSON_GetArrayItem(jr, i));
        g_assert_cmpstr(got, ==, want[i]);
        g_free(got);
    }
    const cJSON *r0 = cJSON_GetArrayItem(jr, 0), *r1 = cJSON_GetArrayItem(jr, 1),
                *r2 = cJSON_GetArrayItem(jr, 2);
    g_assert_cmpstr(str(r0, "kernel"), ==, "gemm");
    g_assert_cmpstr(str(r0, "dtype"), ==, "bf16");
    g_assert_cmpfloat(num(r0, "m"), ==, 8192);
    g_assert_cmpfloat(num(r0, "k"), ==, 8192);
    g_assert_cmpfloat(num(r0, "time_us"), ==, 1378.2); /* as the table prints it */
    g_assert_null(cJSON_GetObjectItem(r0, "groups"));  /* one GEMM: no key, as before --groups */
    g_assert_cmpstr(str(r1, "dtype"), ==, "fp8");
    g_assert_cmpfloat(num(r1, "m"), ==, 1);
    g_assert_cmpfloat(num(r1, "n"), ==, 8192);
    g_assert_cmpfloat(num(r1, "time_us"), ==, 12.34);
    g_assert_cmpstr(str(r2, "kernel"), ==, "copy");
    g_assert_cmpfloat(num(r2, "bytes"), ==, 1073741824.0);
    g_assert_cmpfloat(num(r2, "time_us"), ==, 620.1);
    cJSON_Delete(doc);
    g_free(text);

    rep.graph = true;
    text = icsv_json_compute_text(&rep);
    doc = cJSON_Parse(text);
    g_assert_cmpstr(str(doc, "timing"), ==, "graph");
    cJSON_Delete(doc);
    g_free(text);
    rep.graph = false;

    hw.clock_khz = 0; /* the driver did not say */
    hw.cc_major = 8;
    hw.cc_minor = 9;
    text = icsv_json_compute_text(&rep);
    doc = cJSON_Parse(text);
    g_assert_true(
        cJSON_IsNull(cJSON_GetObjectItem(cJSON_GetObjectItem(doc, "hardware"), "clock_mhz")));
    g_assert_cmpstr(str(cJSON_GetObjectItem(doc, "hardware"), "cc"), ==, "8.9");
    cJSON_Delete(doc);
    g_free(text);

    /* --groups: a GEMM row of a group carries "groups" and "streams"; a copy row does not */
    icsv_compute_row grouped[] = {rows[0], rows[2]};
    grouped[0].groups = 16;
    grouped[0].streams = 4;
    rep.rows = grouped;
    rep.n_rows = 2;
    text = icsv_json_compute_text(&rep);
    doc = cJSON_Parse(text);
    jr = cJSON_GetObjectItem(doc, "rows");
    char *got = shape(cJSON_GetArrayItem(jr, 0));
    g_assert_cmpstr(got, ==,
                    "dtype:string,groups:number,k:number,kernel:string,m:number,n:number,"
                    "streams:number,time_us:number");
    g_free(got);
    g_assert_cmpfloat(num(cJSON_GetArrayItem(jr, 0), "groups"), ==, 16);
    g_assert_cmpfloat(num(cJSON_GetArrayItem(jr, 0), "streams"), ==, 4);
    g_assert_null(cJSON_GetObjectItem(cJSON_GetArrayItem(jr, 1), "groups"));
    cJSON_Delete(doc);
    g_free(text);
}

static void test_save(void)
{
    char *dir = g_dir_make_tmp("icsv-json-XXXXXX", NULL);
    char *path = g_build_filename(dir, "out.json", NULL);
    g_assert_true(icsv_json_save(path, "{}\n", NULL));
    char *back = NULL;
    g_assert_true(g_file_get_contents(path, &back, NULL, NULL));
    g_assert_cmpstr(back, ==, "{}\n");
    g_free(back);
    char *bad = g_build_filename(dir, "missing", "out.json", NULL);
    GError *err = NULL;
    g_assert_false(icsv_json_save(bad, "{}", &err));
    g_assert_error(err, ICSV_ERROR, ICSV_ERROR_INPUT);
    g_assert_true(g_str_has_prefix(err->message, "--json "));
    g_error_free(err);
    g_remove(path);
    g_rmdir(dir);
    g_free(bad);
    g_free(path);
    g_free(dir);
}

static void test_sysinfo(void)
{
    char *d = icsv_date_iso(0);
    g_assert_cmpstr(d, ==, "1970-01-01T00:00:00Z");
    g_free(d);
    d = icsv_date_iso(1770113472);
    g_assert_cmpstr(d, ==, "2026-02-03T10:11:12Z");
    g_free(d);
    char *host = icsv_host_name();
    g_assert_nonnull(host);
    g_assert_null(strchr(host, '.')); /* short name, as nccl-tests prints it */
    g_free(host);
    char sys[128];
    icsv_system_name(sys, sizeof sys);
    g_assert_cmpuint(strlen(sys), >, 0); /* "unknown" at worst */
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/validate/json/round-trip", test_round_trip);
    g_test_add_func("/validate/json/schema-matches-data", test_schema_matches_data);
    g_test_add_func("/validate/json/p2p", test_p2p);
    g_test_add_func("/validate/json/compute", test_compute);
    g_test_add_func("/validate/json/save", test_save);
    g_test_add_func("/validate/json/sysinfo", test_sysinfo);
    return g_test_run();
}
