/* Sweep sizes, element counts and bus bandwidth, checked against nccl-tests' rules and rows
 * of real nccl-tests logs (validate/data/nccl/). */
#include "plan.h"

#include <string.h>

static void test_parse_size(void)
{
    const struct {
        const char *text;
        uint64_t bytes;
    } ok[] = {{"8", 8},           {"64K", 65536}, {"64k", 65536}, {"128M", 128ull << 20},
              {"8G", 8ull << 30}, {"1.5K", 1536}, {"0", 0}};
    for (size_t i = 0; i < G_N_ELEMENTS(ok); i++) {
        uint64_t v = 1;
        g_assert_true(icsv_parse_size("-b", ok[i].text, &v, NULL));
        g_assert_cmpuint(v, ==, ok[i].bytes);
    }
    const char *bad[] = {"", "x", "-1", "8X", "8KB", " 8", "nan", "inf", "1e30"};
    for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
        GError *err = NULL;
        uint64_t v = 0;
        g_assert_false(icsv_parse_size("-e", bad[i], &v, &err));
        g_assert_error(err, ICSV_ERROR, ICSV_ERROR_INPUT);
        g_assert_nonnull(strstr(err->message, "-e: expected a size in bytes"));
        g_error_free(err);
    }
}

static void test_sizes(void)
{
    size_t n = 0;
    uint64_t *s = icsv_plan_sizes(8, 8ull << 30, 2, 0, &n, NULL);
    g_assert_cmpuint(n, ==, 31); /* 8 B .. 8 GiB, the usual -b 8 -e 8G -f 2 */
    g_assert_cmpuint(s[0], ==, 8);
    g_assert_cmpuint(s[1], ==, 16);
    g_assert_cmpuint(s[30], ==, 8ull << 30);
    g_free(s);

    s = icsv_plan_sizes(1 << 20, 4 << 20, 1, 1 << 20, &n, NULL); /* additive */
    g_assert_cmpuint(n, ==, 4);
    g_assert_cmpuint(s[3], ==, 4 << 20);
    g_free(s);

    s = icsv_plan_sizes(100, 1000, 3, 0, &n, NULL); /* stops below -e: 100 300 900 */
    g_assert_cmpuint(n, ==, 3);
    g_assert_cmpuint(s[2], ==, 900);
    g_free(s);

    s = icsv_plan_sizes(32 << 20, 32 << 20, 1, 1 << 20, &n, NULL); /* nccl-tests' default */
    g_assert_cmpuint(n, ==, 1);
    g_free(s);
}

static void test_sizes_bad(void)
{
    const struct {
        uint64_t b, e, f, i;
        const char *msg;
    } bad[] = {
        {16, 8, 2, 0, "-b 16 is larger than -e 8"},
        {8, 64, 1, 0, "never reaches -e"},
        {0, 64, 2, 0, "never leaves 0"},
        {1, 1ull << 40, 1, 1, "more than 100000 sizes"},
    };
    for (size_t k = 0; k < G_N_ELEMENTS(bad); k++) {
        GError *err = NULL;
        size_t n = 0;
        g_assert_null(icsv_plan_sizes(bad[k].b, bad[k].e, bad[k].f, bad[k].i, &n, &err));
        g_assert_error(err, ICSV_ERROR, ICSV_ERROR_INPUT);
        g_assert_nonnull(strstr(err->message, bad[k].msg));
        g_error_free(err);
    }
}

static void test_counts(void)
{
    icsv_counts c;
    icsv_plan_counts(ICSV_OP_ALL_REDUCE, ICSV_FLOAT, 8, 8, &c); /* DGX H100 log, first row */
    g_assert_cmpuint(c.size_bytes, ==, 8);
    g_assert_cmpuint(c.count, ==, 2);

    /* B200 all_gather on 2 GPUs: size 67108864, count 8388608 per rank */
    icsv_plan_counts(ICSV_OP_ALL_GATHER, ICSV_FLOAT, 2, 67108864, &c);
    g_assert_cmpuint(c.size_bytes, ==, 67108864);
    g_assert_cmpuint(c.count, ==, 8388608);
    g_assert_cmpuint(c.send_count, ==, 8388608);
    g_assert_cmpuint(c.recv_count, ==, 16777216);

    /* Polaris alltoall, 8 ranks: size 1073741824, count 33554432 */
    icsv_plan_counts(ICSV_OP_ALLTOALL, ICSV_FLOAT, 8, 1073741824, &c);
    g_assert_cmpuint(c.size_bytes, ==, 1073741824);
    g_assert_cmpuint(c.count, ==, 33554432);

    /* rounded down to a multiple of the ranks: 100 B = 25 floats, 3 per rank of 8 */
    icsv_plan_counts(ICSV_OP_REDUCE_SCATTER, ICSV_FLOAT, 8, 100, &c);
    g_assert_cmpuint(c.count, ==, 3);
    g_assert_cmpuint(c.send_count, ==, 24);
    g_assert_cmpuint(c.recv_count, ==, 3);
    g_assert_cmpuint(c.size_bytes, ==, 96);

    /* smaller than one element per rank: zero, as in the Polaris log's first rows */
    icsv_plan_counts(ICSV_OP_ALLTOALL, ICSV_FLOAT, 8, 16, &c);
    g_assert_cmpuint(c.size_bytes, ==, 0);

    icsv_plan_counts(ICSV_OP_SENDRECV, ICSV_BF16, 8, 10, &c); /* sendrecv is not divided */
    g_assert_cmpuint(c.count, ==, 5);
    g_assert_cmpuint(c.size_bytes, ==, 10);
}

static void test_busbw(void)
{
    g_assert_cmpfloat_with_epsilon(icsv_busbw_factor(ICSV_OP_ALL_REDUCE, 8), 1.75, 1e-12);
    g_assert_cmpfloat_with_epsilon(icsv_busbw_factor(ICSV_OP_ALL_GATHER, 8), 0.875, 1e-12);
    g_assert_cmpfloat_with_epsilon(icsv_busbw_factor(ICSV_OP_REDUCE_SCATTER, 4), 0.75, 1e-12);
    g_assert_cmpfloat_with_epsilon(icsv_busbw_factor(ICSV_OP_ALLTOALL, 2), 0.5, 1e-12);
    g_assert_cmpfloat_with_epsilon(icsv_busbw_factor(ICSV_OP_SENDRECV, 8), 1.0, 1e-12);
    g_assert_cmpfloat_with_epsilon(icsv_busbw_factor(ICSV_OP_BROADCAST, 8), 1.0, 1e-12);
    g_assert_cmpfloat_with_epsilon(icsv_busbw_factor(ICSV_OP_ALL_REDUCE, 1), 0.0, 1e-12);

    icsv_place p = {.wrong = 7};
    icsv_place_set_time(&p, 100.0, 100000000, ICSV_OP_ALL_REDUCE, 8); /* 1e8 B in 100 us */
    g_assert_cmpfloat_with_epsilon(p.algbw_gbps, 1000.0, 1e-9);
    g_assert_cmpfloat_with_epsilon(p.busbw_gbps, 1750.0, 1e-9);
    g_assert_cmpint(p.wrong, ==, 7);
    icsv_place_set_time(&p, 0.0, 8, ICSV_OP_ALL_REDUCE, 8);
    g_assert_cmpfloat(p.algbw_gbps, ==, 0.0);
}

static void test_summary(void)
{
    icsv_row rows[2] = {
        {.oop = {.busbw_gbps = 10, .wrong = 0}, .ip = {.busbw_gbps = 20, .wrong = ICSV_WRONG_NA}},
        {.oop = {.busbw_gbps = 30, .wrong = 3}, .ip = {.busbw_gbps = 40, .wrong = 1}},
    };
    g_assert_cmpfloat_with_epsilon(icsv_avg_busbw(rows, 2), 25.0, 1e-12);
    g_assert_cmpint(icsv_total_wrong(rows, 2), ==, 4);
    g_assert_cmpfloat(icsv_avg_busbw(rows, 0), ==, 0.0);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/validate/plan/parse-size", test_parse_size);
    g_test_add_func("/validate/plan/sizes", test_sizes);
    g_test_add_func("/validate/plan/sizes-bad", test_sizes_bad);
    g_test_add_func("/validate/plan/counts", test_counts);
    g_test_add_func("/validate/plan/busbw", test_busbw);
    g_test_add_func("/validate/plan/summary", test_summary);
    return g_test_run();
}
