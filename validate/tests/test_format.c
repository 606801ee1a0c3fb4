/* The nccl-tests table and the p2pBandwidthLatencyTest matrices, character for character:
 * expected lines are copied from real logs (validate/data/nccl/ "raw" fields) and from the
 * tools' printf formats. */
#include "format.h"
#include "plan.h"
#include "plan_compute.h"

#include <string.h>

/* A row whose times reproduce a log line: bandwidths from size and time as nccl-tests does. */
static icsv_row make_row(icsv_op op, int nranks, uint64_t bytes, double oop_us, double ip_us,
                         int64_t oop_wrong, int64_t ip_wrong)
{
    icsv_row r = {.op = op, .dtype = ICSV_FLOAT, .root = -1};
    icsv_plan_counts(op, ICSV_FLOAT, nranks, bytes, &r.counts);
    icsv_place_set_time(&r.oop, oop_us, r.counts.size_bytes, op, nranks);
    icsv_place_set_time(&r.ip, ip_us, r.counts.size_bytes, op, nranks);
    r.oop.wrong = oop_wrong;
    r.ip.wrong = ip_wrong;
    return r;
}

static void test_table_rows(void)
{
    /* nvidia_dgxc_dgxh100_1node_allreduce.json, first row (8 ranks) */
    icsv_row r = make_row(ICSV_OP_ALL_REDUCE, 8, 8, 13.67, 13.03, 0, 0);
    char *line = icsv_format_row(&r);
    g_assert_cmpstr(line, ==,
                    "           8             2     float     sum      -1    13.67    0.00    "
                    "0.00      0    13.03    0.00    0.00      0");
    g_free(line);

    /* alcf_polaris_a100x4_2node_alltoall.json, last row: "%7.0f" times, in-place N/A */
    r = make_row(ICSV_OP_ALLTOALL, 8, 1073741824, 110914, 110788, 0, ICSV_WRONG_NA);
    line = icsv_format_row(&r);
    g_assert_cmpstr(line, ==,
                    "  1073741824      33554432     float    none      -1   110914    9.68    "
                    "8.47      0   110788    9.69    8.48    N/A");
    g_free(line);

    /* nccl_issue1161_h100pcie_2gpu_nvlinkbridge_allreduce.json: "%7.1f" times, 2 ranks */
    r = make_row(ICSV_OP_ALL_REDUCE, 2, 1073741824, 9306.7, 9291.5, 0, 0);
    line = icsv_format_row(&r);
    g_assert_cmpstr(line, ==,
                    "  1073741824     268435456     float     sum      -1   9306.7  115.37  "
                    "115.37      0   9291.5  115.56  115.56      0");
    g_free(line);

    /* wrong elements print "%5g", as nccl-tests does */
    r = make_row(ICSV_OP_SENDRECV, 8, 4096, 10, 10, 1024, 2000000);
    line = icsv_format_row(&r);
    g_assert_nonnull(strstr(line, "   1024"));
    g_assert_true(g_str_has_suffix(line, "  2e+06"));
    g_free(line);
}

static void test_table_columns(void)
{
    /* verbatim from nccl-tests (<= 2.16), as sim/ prints its classic layout */
    GString *s = g_string_new(NULL);
    icsv_format_columns(s);
    g_assert_cmpstr(s->str, ==,
                    "#\n"
                    "#                                                              out-of-place "
                    "                      in-place          \n"
                    "#       size         count      type   redop    root     time   algbw   busbw "
                    "#wrong     time   algbw   busbw #wrong\n"
                    "#        (B)    (elements)                               (us)  (GB/s)  (GB/s) "
                    "           (us)  (GB/s)  (GB/s)       \n");
    g_string_free(s, TRUE);
}

static void test_time(void)
{
    char buf[32];
    icsv_format_time(13.67, buf);
    g_assert_cmpstr(buf, ==, "  13.67");
    icsv_format_time(99.999, buf);
    g_assert_cmpstr(buf, ==, " 100.00"); /* the branch is on the value, as in nccl-tests */
    icsv_format_time(123.44, buf);
    g_assert_cmpstr(buf, ==, "  123.4");
    icsv_format_time(55212.4, buf);
    g_assert_cmpstr(buf, ==, "  55212");
}

static void test_trailer(void)
{
    icsv_row rows[2] = {make_row(ICSV_OP_ALL_REDUCE, 2, 1000, 1, 1, 0, 0),
                        make_row(ICSV_OP_ALL_REDUCE, 2, 3000, 1, 1, 0, 0)};
    GString *s = g_string_new(NULL);
    icsv_format_trailer(s, rows, 2); /* busbw 1 and 3 GB/s: average 2 */
    g_assert_cmpstr(s->str, ==, "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 2 \n#\n");
    g_string_truncate(s, 0);
    rows[1].ip.wrong = 5;
    icsv_format_trailer(s, rows, 2);
    g_assert_true(g_str_has_prefix(s->str, "# Out of bounds values : 5 FAILED\n"));
    g_string_free(s, TRUE);
}

static icsv_hw two_gpus(void)
{
    icsv_hw hw = {.ngpus = 2, .sm_count = 132};
    for (int i = 0; i < 2; i++) {
        hw.dev[i] = (icsv_device){.ordinal = i, .pci_bus = 0x18 + i * 0x1a, .pci_device = 0};
        g_strlcpy(hw.dev[i].name, "NVIDIA H100 80GB HBM3", sizeof hw.dev[i].name);
    }
    return hw;
}

static void test_prologue(void)
{
    icsv_args a = {.min_bytes = 8,
                   .max_bytes = 8ull << 30,
                   .step_factor = 2,
                   .step_bytes = 1,
                   .iters = 20,
                   .warmup = 5,
                   .check = true};
    icsv_hw hw = two_gpus();
    GString *s = g_string_new(NULL);
    icsv_format_prologue(s, &a, &hw, "dgx01", 4242);
    g_assert_cmpstr(s->str, ==,
                    "# nThread 1 nGpus 2 minBytes 8 maxBytes 8589934592 step: 2(factor) warmup "
                    "iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0\n"
                    "#\n"
                    "# Using devices\n"
                    "#  Rank  0 Group  0 Pid   4242 on      dgx01 device  0 [0x18] NVIDIA H100 "
                    "80GB HBM3\n"
                    "#  Rank  1 Group  0 Pid   4242 on      dgx01 device  1 [0x32] NVIDIA H100 "
                    "80GB HBM3\n");
    g_string_free(s, TRUE);
}

static void test_p2p_matrix(void)
{
    icsv_hw hw = two_gpus();
    const int access[4] = {1, 1, 1, 1};
    const double uni[4] = {1535.44, 96.92, 96.86, 1546.8}, bi[4] = {1, 2, 3, 4},
                 lat[4] = {2.27, 2.49, 2.55, 2.24};
    GString *s = g_string_new(NULL);
    icsv_format_p2p(s, &hw, access, uni, bi, lat);
    const char *uni_block = "Unidirectional P2P=Enabled Bandwidth Matrix (GB/s)\n"
                            "   D\\D     0      1 \n"
                            "     0 1535.44  96.92 \n"
                            "     1  96.86 1546.80 \n";
    const char *lat_block = "P2P=Enabled Latency Matrix (us)\n"
                            "   GPU     0      1 \n"
                            "     0   2.27   2.49 \n"
                            "     1   2.55   2.24 \n";
    g_assert_nonnull(strstr(s->str, uni_block));
    g_assert_nonnull(strstr(s->str, "Bidirectional P2P=Enabled Bandwidth Matrix (GB/s)\n"));
    g_assert_true(g_str_has_suffix(s->str, lat_block));
    g_assert_true(g_str_has_prefix(s->str, "[P2P (Peer-to-Peer) GPU Bandwidth Latency Test]\n"
                                           "Device: 0, NVIDIA H100 80GB HBM3, pciBusID: 18, "
                                           "pciDeviceID: 0, pciDomainID:0\n"));
    g_assert_nonnull(strstr(s->str, "P2P Connectivity Matrix\n     D\\D     0     1\n"
                                    "     0\t     1     1\n"));
    g_string_free(s, TRUE);
}

static void test_compare(void)
{
    icsv_row a = make_row(ICSV_OP_ALL_REDUCE, 8, 1 << 20, 10, 20, 0, 0);
    icsv_row b = make_row(ICSV_OP_ALL_REDUCE, 8, 1 << 20, 20, 20, 0, 0);
    GString *s = g_string_new(NULL);
    icsv_format_compare(s, "icsim-simple-ring", &a, "nccl", &b, 1);
    gchar **lines = g_strsplit(s->str, "\n", -1);
    for (int i = 0; lines[i] && lines[i][0]; i++) /* every line a comment */
        g_assert_true(lines[i][0] == '#');
    g_assert_nonnull(strstr(s->str, "  2.000")); /* a twice as fast out of place */
    g_assert_nonnull(strstr(s->str, "  1.000"));
    g_strfreev(lines);
    g_string_free(s, TRUE);
}

static void test_compute_rows(void)
{
    icsv_compute_row g = {.kernel = ICSV_COMPUTE_GEMM,
                          .dtype = ICSV_GEMM_BF16,
                          .m = 8192,
                          .n = 8192,
                          .k = 8192,
                          .time_us = 1378.2049};
    char *line = icsv_format_compute_row(&g);
    g_assert_cmpstr(line, ==,
                    "    gemm   bf16     8192     8192     8192             -     1378.20    "
                    "797.79         -");
    g_free(line);
    icsv_compute_row c = {.kernel = ICSV_COMPUTE_COPY, .bytes = 4096, .time_us = 2.004};
    line = icsv_format_compute_row(&c);
    g_assert_cmpstr(line, ==,
                    "    copy      -        -        -        -          4096        2.00         "
                    "-      4.09");
    g_free(line);
    GString *s = g_string_new(NULL);
    icsv_format_compute_columns(s);
    g_assert_cmpstr(s->str, ==,
                    "#\n# kernel  dtype        m        n        k         bytes     time_us   "
                    "TFLOP/s      GB/s\n");
    g_string_free(s, TRUE);
    char t[32];
    icsv_format_compute_time(0.004, t);
    g_assert_cmpstr(t, ==, "0.00");
}

/* Every header line is a comment, as nccl-tests' are, so scripts skip them alike. */
static void test_compute_prologue(void)
{
    icsv_compute_hw hw = {.sms = 132,
                          .cc_major = 9,
                          .cc_minor = 0,
                          .clock_khz = 1980000,
                          .memory_bytes = 85028765696ull,
                          .free_bytes = 84000000000ull,
                          .cublaslt_version = 130000};
    g_strlcpy(hw.gpu, "NVIDIA H100 80GB HBM3", sizeof hw.gpu);
    GString *s = g_string_new(NULL);
    icsv_format_compute_prologue(s, &hw, 3, 20, false);
    g_assert_true(g_str_has_prefix(s->str, "# icsim-validate " ICSV_VERSION
                                           " compute on GPU 0: NVIDIA H100 80GB HBM3, 132 SMs, "
                                           "cc 9.0, 1980 MHz, 85.03 GB (84.00 GB free)\n"));
    g_assert_nonnull(strstr(s->str, "cuBLASLt 130000"));
    g_assert_nonnull(strstr(s->str, "20 back-to-back calls after 3 warmup calls"));
    char **lines = g_strsplit(s->str, "\n", -1);
    for (char **l = lines; *l && **l; l++)
        g_assert_true(g_str_has_prefix(*l, "# "));
    g_strfreev(lines);
    g_string_truncate(s, 0);
    icsv_format_compute_prologue(s, &hw, 3, 20, true);
    g_assert_nonnull(strstr(s->str, "20 calls replayed from one CUDA graph, after 3 warmup"));
    g_assert_null(strstr(s->str, "back-to-back"));
    g_string_truncate(s, 0);
    icsv_format_compute_groups(s, 16, 4); /* --groups 16: one comment line saying so */
    g_assert_true(g_str_has_prefix(s->str, "# groups: each gemm row is 16 GEMMs of its shape"));
    g_assert_nonnull(strstr(s->str, "round-robin on 4 streams"));
    g_assert_nonnull(strstr(s->str, "time_us is the whole group's, TFLOP/s all 16 GEMMs'\n"));
    g_auto(GStrv) lines2 = g_strsplit(s->str, "\n", -1);
    g_assert_cmpint(g_strv_length(lines2), ==, 2);
    g_string_truncate(s, 0);
    icsv_format_compute_groups(s, 2, 1);
    g_assert_nonnull(strstr(s->str, "on 1 stream forked"));
    g_string_free(s, TRUE);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/validate/format/table", test_table_rows);
    g_test_add_func("/validate/format/columns", test_table_columns);
    g_test_add_func("/validate/format/time", test_time);
    g_test_add_func("/validate/format/trailer", test_trailer);
    g_test_add_func("/validate/format/prologue", test_prologue);
    g_test_add_func("/validate/format/p2p-matrix", test_p2p_matrix);
    g_test_add_func("/validate/format/compare", test_compare);
    g_test_add_func("/validate/format/compute-rows", test_compute_rows);
    g_test_add_func("/validate/format/compute-prologue", test_compute_prologue);
    return g_test_run();
}
