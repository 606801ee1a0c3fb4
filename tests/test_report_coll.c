/* report_coll: rows printed from real nccl-tests logs' times reproduce those logs' rows, which
 * shows that our count, algbw and busbw definitions are nccl-tests'. The logs are copies of
 * ../shared/data/nccl files in validate/data/nccl/, unchanged. */
#include "report/report.h"

#include <math.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <glib.h>

/* Our own table of nccl-tests' busbw factors (getBw in src/ of nccl-tests), independent of the
 * library's. */
/* A row as nccl-tests sizes the call (ics_coll_req_nccltests) and prints it. */
static void sizes(ics_coll_op op, uint64_t bytes, int dtype_bytes, int root, int nranks,
                  ics_coll_row *row)
{
    uint64_t count;
    ics_coll_req req = ics_coll_req_nccltests(op, bytes, dtype_bytes, root, nranks, &count);
    ics_report_coll_request(&req, count, row);
}

static double factor(ics_coll_op op, int n)
{
    switch (op) {
    case ICS_COLL_ALL_REDUCE:
        return 2.0 * (n - 1) / n;
    case ICS_COLL_ALL_GATHER:
    case ICS_COLL_REDUCE_SCATTER:
    case ICS_COLL_ALLTOALL:
        return (double)(n - 1) / n;
    case ICS_COLL_BROADCAST:
    case ICS_COLL_REDUCE:
    case ICS_COLL_SENDRECV:
        return 1.0;
    default:
        g_assert_not_reached();
    }
}

static void test_busbw_factor(void)
{
    for (int op = 0; op < ICS_COLL_OP_COUNT; op++)
        for (int n = 1; n <= 1024; n = n < 16 ? n + 1 : n * 2)
            g_assert_cmpfloat_with_epsilon(ics_coll_busbw_factor(op, n), factor(op, n), 1e-12);
}

typedef struct {
    const char *id;
    ics_coll_op op;
    int nranks;
    ics_nccltests_style style;
} dataset;

/* nccl-tests up to 2.16 (classic) and 2.17.8 (xxrjun); 8, 80 and 8-rank all-to-all logs */
static const dataset datasets[] = {
    {"nvidia_dgxc_dgxh100_1node_allreduce", ICS_COLL_ALL_REDUCE, 8, ICS_NCCLTESTS_CLASSIC},
    {"oci_bm_gpu4_8_a100_1node_allreduce_fullsweep", ICS_COLL_ALL_REDUCE, 8, ICS_NCCLTESTS_CLASSIC},
    {"alcf_polaris_a100x4_2node_alltoall", ICS_COLL_ALLTOALL, 8, ICS_NCCLTESTS_CLASSIC},
    {"xxrjun_h100_1node_8gpu_all_gather", ICS_COLL_ALL_GATHER, 8, ICS_NCCLTESTS_2_17},
    {"xxrjun_h100_1node_8gpu_sendrecv", ICS_COLL_SENDRECV, 8, ICS_NCCLTESTS_2_17},
    {"xxrjun_h100_10node_8gpn_all_gather", ICS_COLL_ALL_GATHER, 80, ICS_NCCLTESTS_2_17},
};

static cJSON *load(const char *id)
{
    char *path = g_strdup_printf("%s/validate/data/nccl/%s.json", ICS_SOURCE_DIR, id);
    char *text = NULL;
    gsize len = 0;
    g_assert_true(g_file_get_contents(path, &text, &len, NULL));
    cJSON *doc = cJSON_ParseWithLength(text, len);
    g_assert_nonnull(doc);
    g_free(text);
    g_free(path);
    return doc;
}

static int dtype_bytes(const char *type)
{
    if (strcmp(type, "double") == 0)
        return 8;
    g_assert_cmpstr(type, ==, "float");
    return 4;
}

/* fields of the out-of-place half: size count type redop root time algbw busbw */
#define OOP_FIELDS 8

static void test_real_rows(void)
{
    int rows = 0, exact = 0;
    for (size_t d = 0; d < G_N_ELEMENTS(datasets); d++) {
        const dataset *ds = &datasets[d];
        cJSON *doc = load(ds->id);
        g_assert_cmpint(
            cJSON_GetObjectItem(cJSON_GetObjectItem(doc, "hardware"), "total_gpus")->valueint, ==,
            ds->nranks);
        g_assert_cmpstr(cJSON_GetObjectItem(doc, "collective")->valuestring, ==,
                        ics_coll_op_name(ds->op));
        const cJSON *r;
        cJSON_ArrayForEach(r, cJSON_GetObjectItem(doc, "rows"))
        {
            const char *raw = cJSON_GetObjectItem(r, "raw")->valuestring;
            const char *type = cJSON_GetObjectItem(r, "type")->valuestring;
            double size = cJSON_GetObjectItem(r, "size")->valuedouble;
            double time_us = cJSON_GetObjectItem(r, "oop_time_us")->valuedouble;
            ics_coll_row row = {.type = type,
                                .redop = ics_report_coll_reduces(ds->op) ? "sum" : "none"};
            sizes(ds->op, (uint64_t)size, dtype_bytes(type), 0, ds->nranks, &row);
            ics_report_coll_time(ds->op, ds->nranks, time_us, &row);
            GString *out = g_string_new(NULL);
            ics_report_coll_row(ds->style, &row, out);
            char **ours = g_strsplit_set(g_strstrip(out->str), " ", -1);
            char **theirs = g_strsplit_set(raw, " ", -1);
            /* drop the empty strings between blanks */
            GPtrArray *a = g_ptr_array_new(), *b = g_ptr_array_new();
            for (char **p = ours; *p; p++)
                if (**p)
                    g_ptr_array_add(a, *p);
            for (char **p = theirs; *p; p++)
                if (**p)
                    g_ptr_array_add(b, *p);
            g_assert_cmpuint(a->len, >=, OOP_FIELDS);
            g_assert_cmpuint(b->len, >=, OOP_FIELDS);
            for (int f = 0; f < 6; f++) /* size, count, type, redop, root, time: verbatim */
                g_assert_cmpstr(a->pdata[f], ==, b->pdata[f]);
            /* algbw, busbw: equal within one unit of the printed precision, plus the time's
             * rounding (nccl-tests divided by the unrounded time) */
            char t[32];
            ics_report_coll_time_str(ds->style, time_us, t);
            const char *dot = strchr(t, '.');
            double half_ulp = 0.5 * pow(10.0, dot ? -(double)strlen(dot + 1) : 0.0);
            for (int f = 6; f < 8; f++) {
                double mine = g_ascii_strtod(a->pdata[f], NULL);
                double real = g_ascii_strtod(b->pdata[f], NULL);
                double tol = 0.0101 + real * half_ulp / time_us; /* both rounded */
                if (fabs(mine - real) > tol)
                    g_error("%s: %s: field %d: ours %s, nccl-tests %s", ds->id, raw, f,
                            (char *)a->pdata[f], (char *)b->pdata[f]);
            }
            /* the printed out-of-place half is byte for byte the log's unless the log's
             * rounded time moves algbw or busbw by one unit in the last place */
            size_t half = 12 + 2 + 12 + 2 + 8 + 2 + 6 + 2 + 6 + 2 + 7 + 2 + 6 + 2 + 6;
            GString *line = g_string_new(NULL);
            ics_report_coll_row(ds->style, &row, line);
            if (strncmp(line->str, raw, half) == 0)
                exact++;
            rows++;
            g_string_free(line, TRUE);
            g_ptr_array_free(a, TRUE);
            g_ptr_array_free(b, TRUE);
            g_strfreev(ours);
            g_strfreev(theirs);
            g_string_free(out, TRUE);
        }
        cJSON_Delete(doc);
    }
    g_test_message("%d real rows reproduced, %d of them byte for byte", rows, exact);
    g_assert_cmpint(rows, >, 100);
    g_assert_cmpint(exact, >=, rows * 3 / 4); /* 97 of 119 when written */
}

static void test_sizes(void)
{
    ics_coll_row row = {0};
    /* 80 ranks: 32 MiB of doubles gathered is 52428 per rank, printed size 33553920 */
    sizes(ICS_COLL_ALL_GATHER, 33554432, 8, 0, 80, &row);
    g_assert_cmpuint(row.count, ==, 52428);
    g_assert_cmpuint(row.size_bytes, ==, 33553920);
    g_assert_cmpint(row.root, ==, -1);
    sizes(ICS_COLL_BROADCAST, 1000, 4, 3, 8, &row);
    g_assert_cmpuint(row.count, ==, 250);
    g_assert_cmpint(row.root, ==, 3);
    sizes(ICS_COLL_ALL_REDUCE, 0, 4, 0, 8, &row);
    ics_report_coll_time(ICS_COLL_ALL_REDUCE, 8, 0.0, &row);
    g_assert_cmpfloat(row.algbw_gbps, ==, 0.0);
}

static void test_layout(void)
{
    GString *out = g_string_new(NULL);
    ics_report_coll_columns(ICS_NCCLTESTS_CLASSIC, out);
    char **lines = g_strsplit(out->str, "\n", -1);
    g_assert_cmpstr(g_strchomp(lines[1]), ==,
                    "#       size         count      type   redop    root     time   algbw   "
                    "busbw #wrong     time   algbw   busbw #wrong");
    g_assert_cmpstr(g_strchomp(lines[2]), ==,
                    "#        (B)    (elements)                               (us)  (GB/s)  "
                    "(GB/s)            (us)  (GB/s)  (GB/s)");
    g_strfreev(lines);
    g_string_truncate(out, 0);
    ics_coll_row row = {.type = "float", .redop = "sum", .root = -1};
    sizes(ICS_COLL_ALL_REDUCE, 8589934592ULL, 4, 0, 8, &row);
    ics_report_coll_time(ICS_COLL_ALL_REDUCE, 8, 31307.0, &row);
    ics_report_coll_row(ICS_NCCLTESTS_CLASSIC, &row, out);
    g_assert_cmpstr(out->str, ==,
                    "  8589934592    2147483648     float     sum      -1    31307  274.38  480.16"
                    "    N/A    31307  274.38  480.16    N/A\n");
    g_string_truncate(out, 0);
    ics_report_coll_trailer(480.16, out);
    g_assert_cmpstr(out->str, ==,
                    "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 480.16 \n#\n");
    g_string_free(out, TRUE);
}

/* ics_report_tail_fit: a sweep made of T = a + S / B gives back a and B; degenerate sweeps are
 * refused; on a real log (DGX H100 all-gather, its 7 rows from 256 MiB) GSL's fit equals the
 * weighted least squares solved here by its normal equations. */
static void test_tail_fit(void)
{
    double bytes[8], us[8];
    for (int i = 0; i < 8; i++) {
        bytes[i] = 268435456.0 * (double)(1 << i);
        us[i] = 70.0 + bytes[i] / 416.7e3; /* 416.7 GB/s */
    }
    ics_report_tail f;
    g_assert_true(ics_report_tail_fit(bytes, us, 8, &f));
    g_assert_cmpfloat_with_epsilon(f.a_us, 70.0, 1e-6);
    g_assert_cmpfloat_with_epsilon(f.algbw_gbps, 416.7, 1e-6);
    g_assert_cmpint(f.rows, ==, 8);
    g_assert_false(ics_report_tail_fit(bytes, us, 1, &f));
    g_assert_true(isnan(f.a_us) && isnan(f.algbw_gbps));
    double same[3] = {1e9, 1e9, 1e9}, t3[3] = {10, 11, 12};
    g_assert_false(ics_report_tail_fit(same, t3, 3, &f)); /* no slope to fit */
    double falling[3] = {30, 20, 10};
    g_assert_false(ics_report_tail_fit(bytes, falling, 3, &f)); /* no positive B */
    double zero[3] = {10, 0, 30};
    g_assert_false(ics_report_tail_fit(bytes, zero, 3, &f));

    cJSON *doc = load("xxrjun_h100_1node_8gpu_all_gather");
    int n = 0;
    double top = 0, w = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
    const cJSON *r;
    cJSON_ArrayForEach(r, cJSON_GetObjectItem(doc, "rows"))
    {
        top = MAX(top, cJSON_GetObjectItem(r, "size")->valuedouble);
    }
    cJSON_ArrayForEach(r, cJSON_GetObjectItem(doc, "rows"))
    {
        double sz = cJSON_GetObjectItem(r, "size")->valuedouble;
        double t = cJSON_GetObjectItem(r, "oop_time_us")->valuedouble;
        if (sz * 64 < top || n == 8)
            continue;
        bytes[n] = sz;
        us[n++] = t;
        double wt = 1.0 / (t * t);
        w += wt;
        sx += wt * sz;
        sy += wt * t;
        sxx += wt * sz * sz;
        sxy += wt * sz * t;
    }
    cJSON_Delete(doc);
    g_assert_cmpint(n, ==, 7);
    double k = (w * sxy - sx * sy) / (w * sxx - sx * sx), a = (sy - k * sx) / w;
    g_assert_true(ics_report_tail_fit(bytes, us, n, &f));
    g_assert_cmpfloat_with_epsilon(f.a_us, a, 1e-6 * fabs(a));
    g_assert_cmpfloat_with_epsilon(f.algbw_gbps, 1.0 / (k * 1e3), 1e-9 / (k * 1e3));
    /* what the log says: the calls pay tens of microseconds past their bandwidth term */
    g_assert_cmpfloat(f.a_us, >, 20.0);

    /* the tail of a sweep: from 1 MiB within 64x of the largest, 3 rows at least */
    double sweep[12], line[12];
    for (int i = 0; i < 12; i++) {
        sweep[i] = 65536.0 * (double)(1 << i); /* 64 KiB .. 128 MiB */
        line[i] = 20.0 + sweep[i] / 100e3;     /* 100 GB/s */
    }
    /* below 1 MiB (64 .. 512 KiB) and 1 MiB itself (under 128 MiB / 64): never fitted */
    for (int i = 0; i < 5; i++)
        line[i] = 1e6;
    g_assert_true(ics_report_tail_fit_top(sweep, line, 12, &f));
    g_assert_cmpint(f.rows, ==, 7); /* 2 MiB .. 128 MiB */
    g_assert_cmpfloat_with_epsilon(f.from_bytes, 2097152.0, 0.5);
    g_assert_cmpfloat_with_epsilon(f.a_us, 20.0, 1e-6);
    g_assert_cmpfloat_with_epsilon(f.algbw_gbps, 100.0, 1e-6);
    g_assert_false(ics_report_tail_fit_top(sweep, line, 6, &f)); /* 1 and 2 MiB: 2 rows */
    g_assert_cmpint(f.rows, ==, 2);
    g_assert_true(isnan(f.a_us));
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/report-coll/busbw-factor", test_busbw_factor);
    g_test_add_func("/report-coll/sizes", test_sizes);
    g_test_add_func("/report-coll/layout", test_layout);
    g_test_add_func("/report-coll/real-rows", test_real_rows);
    g_test_add_func("/report-coll/tail-fit", test_tail_fit);
    return g_test_run();
}
