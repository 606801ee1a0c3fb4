/* The compute mode's plan: which GEMMs and copies it times, that every GEMM is a layout
 * cuBLASLt's FP8 kernels take, and the rates its table prints. */
#include "plan_compute.h"

#include <glib.h>

#define BIG_FREE (80ull << 30) /* an H100's worth: every copy size fits */

static size_t count_gemms(const icsv_compute_row *rows, size_t n, icsv_gemm_dtype t)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        k += rows[i].kernel == ICSV_COMPUTE_GEMM && rows[i].dtype == t;
    return k;
}

static bool has_gemm(const icsv_compute_row *rows, size_t n, icsv_gemm_dtype t, int64_t m,
                     int64_t nn, int64_t k)
{
    for (size_t i = 0; i < n; i++)
        if (rows[i].kernel == ICSV_COMPUTE_GEMM && rows[i].dtype == t && rows[i].m == m &&
            rows[i].n == nn && rows[i].k == k)
            return true;
    return false;
}

/* 7 squares + 8 K-sweep shapes + 4 skinny + 4 wave, less 8192^3 counted twice: 22 per type. */
static void test_shapes(void)
{
    size_t n = 0;
    icsv_compute_row *rows = icsv_plan_compute(ICSV_GEMM_ALL, NULL, 0, BIG_FREE, &n);
    g_assert_cmpuint(n, ==, 3 * 22 + 11);
    for (int t = 0; t < ICSV_GEMM_DTYPE_COUNT; t++) {
        g_assert_cmpuint(count_gemms(rows, n, (icsv_gemm_dtype)t), ==, 22);
        for (int64_t d = 256; d <= 16384; d *= 2)
            g_assert_true(has_gemm(rows, n, (icsv_gemm_dtype)t, d, d, d));
        for (int64_t k = 128; k <= 16384; k *= 2)
            g_assert_true(has_gemm(rows, n, (icsv_gemm_dtype)t, 8192, 8192, k));
        const int64_t skinny[] = {1, 8, 64, 512}, wave[] = {1408, 1409, 2816, 2817};
        for (int i = 0; i < 4; i++) {
            g_assert_true(has_gemm(rows, n, (icsv_gemm_dtype)t, skinny[i], 8192, 8192));
            g_assert_true(has_gemm(rows, n, (icsv_gemm_dtype)t, 1536, wave[i], 8192));
        }
    }
    /* dtypes in enum order, GEMMs before copies, every time unmeasured */
    g_assert_cmpint(rows[0].dtype, ==, ICSV_GEMM_BF16);
    g_assert_cmpint(rows[22].dtype, ==, ICSV_GEMM_FP16);
    g_assert_cmpint(rows[44].dtype, ==, ICSV_GEMM_FP8);
    g_assert_cmpint(rows[66].kernel, ==, ICSV_COMPUTE_COPY);
    for (size_t i = 0; i < n; i++)
        g_assert_cmpfloat(rows[i].time_us, ==, 0);
    g_free(rows);

    rows = icsv_plan_compute(1u << ICSV_GEMM_FP8, NULL, 0, BIG_FREE, &n);
    g_assert_cmpuint(count_gemms(rows, n, ICSV_GEMM_FP8), ==, 22);
    g_assert_cmpuint(n, ==, 22 + 11);
    g_free(rows);
}

/* --shapes: those GEMMs per type in the order given, a repeat once, and no copies. */
static void test_user_shapes(void)
{
    const icsv_gemm_shape s[] = {{1536, 1409, 8192}, {64, 8192, 4096}, {1536, 1409, 8192}};
    size_t n = 0;
    icsv_compute_row *rows =
        icsv_plan_compute((1u << ICSV_GEMM_BF16) | (1u << ICSV_GEMM_FP8), s, 3, BIG_FREE, &n);
    g_assert_cmpuint(n, ==, 4);
    for (size_t i = 0; i < n; i++)
        g_assert_cmpint(rows[i].kernel, ==, ICSV_COMPUTE_GEMM);
    g_assert_cmpint(rows[0].dtype, ==, ICSV_GEMM_BF16);
    g_assert_cmpint(rows[0].n, ==, 1409);
    g_assert_cmpint(rows[1].m, ==, 64);
    g_assert_cmpint(rows[1].k, ==, 4096);
    g_assert_cmpint(rows[2].dtype, ==, ICSV_GEMM_FP8);
    g_assert_cmpint(rows[3].m, ==, 64);
    /* what the runner checks against the free memory: A and B at 1 (fp8) or 2 bytes, C at 2 */
    g_assert_cmpuint(icsv_compute_gemm_bytes(&rows[0]), ==,
                     2ull * (1536 + 1409) * 8192 + 2ull * 1536 * 1409);
    uint64_t need = icsv_compute_gemm_bytes(&rows[0]);
    g_assert_true(icsv_compute_gemm_fits(&rows[0], need + ICSV_COMPUTE_HEADROOM));
    g_assert_false(icsv_compute_gemm_fits(&rows[0], need + ICSV_COMPUTE_HEADROOM - 1));
    g_assert_false(icsv_compute_gemm_fits(&rows[0], 0));
    g_assert_cmpuint(icsv_compute_gemm_bytes(&rows[2]), ==,
                     1ull * (1536 + 1409) * 8192 + 2ull * 1536 * 1409);
    g_free(rows);
}

/* --groups: every GEMM row becomes G GEMMs on S streams, each with its own operands (the
 * bytes the free memory must hold), and its TFLOP/s counts all G; copies stay single. */
static void test_groups(void)
{
    icsv_compute_row rows[] = {
        {.kernel = ICSV_COMPUTE_GEMM, .dtype = ICSV_GEMM_FP8, .m = 4096, .n = 1536, .k = 2048},
        {.kernel = ICSV_COMPUTE_COPY, .bytes = 4096},
    };
    uint64_t one = icsv_compute_gemm_bytes(&rows[0]);
    g_assert_cmpuint(one, ==, 1ull * (4096 + 1536) * 2048 + 2ull * 4096 * 1536);
    icsv_compute_set_groups(rows, 2, 1, 4); /* groups 1: unchanged */
    g_assert_cmpint(icsv_compute_row_gemms(&rows[0]), ==, 1);
    g_assert_cmpint(rows[0].streams, ==, 0);
    icsv_compute_set_groups(rows, 2, 16, 4);
    g_assert_cmpint(rows[0].groups, ==, 16);
    g_assert_cmpint(rows[0].streams, ==, 4);
    g_assert_cmpint(rows[1].groups, ==, 0);
    g_assert_cmpint(icsv_compute_row_gemms(&rows[1]), ==, 1);
    /* each expert's operands, and a 32 MiB cuBLASLt workspace for each of the 4 streams */
    g_assert_cmpuint(icsv_compute_gemm_bytes(&rows[0]), ==, 16 * one + 4 * (32ull << 20));
    g_assert_false(icsv_compute_gemm_fits(&rows[0], 16 * one + ICSV_COMPUTE_HEADROOM));
    rows[0].groups = 2; /* 2 GEMMs use 2 of the 4 streams */
    g_assert_cmpuint(icsv_compute_gemm_bytes(&rows[0]), ==, 2 * one + 2 * (32ull << 20));
    rows[0].groups = 16;
    rows[0].time_us = 344.07; /* measured on an H200: 16 GEMMs of Qwen3-30B-A3B's fc1 */
    g_assert_cmpfloat_with_epsilon(icsv_compute_tflops(&rows[0]),
                                   16 * 2.0 * 4096 * 1536 * 2048 / 344.07e6, 1e-9);
    g_assert_cmpfloat_with_epsilon(icsv_compute_tflops(&rows[0]), 1198.35,
                                   0.005); /* the table: 1198.36 */
}

/* 4 KiB x 4^i up to 4 GiB, only while two buffers and the headroom fit. */
static void test_copies(void)
{
    size_t n = 0;
    icsv_compute_row *rows = icsv_plan_compute(0, NULL, 0, BIG_FREE, &n);
    g_assert_cmpuint(n, ==, 11);
    for (size_t i = 0; i < n; i++) {
        g_assert_cmpint(rows[i].kernel, ==, ICSV_COMPUTE_COPY);
        g_assert_cmpuint(rows[i].bytes, ==, (4ull << 10) << (2 * i));
    }
    g_assert_cmpuint(rows[10].bytes, ==, 4ull << 30);
    g_free(rows);

    rows = icsv_plan_compute(0, NULL, 0, 8ull << 30, &n); /* 2 x 4 GiB leaves no headroom */
    g_assert_cmpuint(n, ==, 10);
    g_assert_cmpuint(rows[9].bytes, ==, 1ull << 30);
    g_free(rows);
    rows = icsv_plan_compute(0, NULL, 0, (8ull << 30) + ICSV_COMPUTE_HEADROOM, &n);
    g_assert_cmpuint(n, ==, 11);
    g_free(rows);

    g_assert_null(icsv_plan_compute(0, NULL, 0, 0, &n)); /* nothing fits */
    g_assert_cmpuint(n, ==, 0);
    g_assert_false(icsv_compute_copy_fits(4096, ICSV_COMPUTE_HEADROOM - 1));
    g_assert_true(icsv_compute_copy_fits(4096, ICSV_COMPUTE_HEADROOM + 8192));
}

/* Every GEMM has K and cuBLASLt's M (D's leading dimension) multiples of 16 elements: FP8's
 * alignment, for all three types alike. */
static void test_lt_dims(void)
{
    size_t n = 0;
    icsv_compute_row *rows = icsv_plan_compute(ICSV_GEMM_ALL, NULL, 0, BIG_FREE, &n);
    for (size_t i = 0; i < n; i++) {
        if (rows[i].kernel != ICSV_COMPUTE_GEMM)
            continue;
        int64_t m = 0, nn = 0;
        icsv_gemm_lt_dims(&rows[i], &m, &nn);
        g_assert_cmpint(m % ICSV_COMPUTE_LT_ALIGN, ==, 0);
        g_assert_cmpint(rows[i].k % ICSV_COMPUTE_LT_ALIGN, ==, 0);
        g_assert_cmpint(m * nn, ==, rows[i].m * rows[i].n); /* the same product, maybe transposed */
    }
    g_free(rows);
    icsv_compute_row skinny = {.kernel = ICSV_COMPUTE_GEMM, .m = 1, .n = 8192, .k = 8192};
    int64_t m = 0, nn = 0;
    icsv_gemm_lt_dims(&skinny, &m, &nn);
    g_assert_cmpint(m, ==, 8192); /* the token dimension becomes N */
    g_assert_cmpint(nn, ==, 1);
    icsv_compute_row wave = {.kernel = ICSV_COMPUTE_GEMM, .m = 1536, .n = 1409, .k = 8192};
    icsv_gemm_lt_dims(&wave, &m, &nn);
    g_assert_cmpint(m, ==, 1536);
    g_assert_cmpint(nn, ==, 1409);
}

/* 12 x 11 tiles of 128 x 128 are one wave on 132 SMs; one more column of n makes 144. */
static void test_wave_shapes(void)
{
    const int64_t sms = 132, tile = 128;
    const int64_t tiles_m = (1536 + tile - 1) / tile;
    g_assert_cmpint(tiles_m * ((1408 + tile - 1) / tile), ==, sms);
    g_assert_cmpint(tiles_m * ((1409 + tile - 1) / tile), >, sms);
    g_assert_cmpint(tiles_m * ((2816 + tile - 1) / tile), ==, 2 * sms);
    g_assert_cmpint(tiles_m * ((2817 + tile - 1) / tile), >, 2 * sms);
}

static void test_rates(void)
{
    icsv_compute_row g = {
        .kernel = ICSV_COMPUTE_GEMM, .m = 8192, .n = 8192, .k = 8192, .time_us = 1378.698};
    g_assert_cmpfloat_with_epsilon(icsv_compute_tflops(&g), 797.5, 0.05);
    g_assert_cmpfloat(icsv_compute_gbps(&g), ==, 0);
    icsv_compute_row c = {.kernel = ICSV_COMPUTE_COPY, .bytes = 1ull << 30, .time_us = 1000};
    g_assert_cmpfloat_with_epsilon(icsv_compute_gbps(&c), 2147.483648, 1e-6);
    g_assert_cmpfloat(icsv_compute_tflops(&c), ==, 0);
    c.time_us = 0; /* not measured */
    g_assert_cmpfloat(icsv_compute_gbps(&c), ==, 0);
}

static void test_dtypes(void)
{
    g_assert_cmpint(icsv_gemm_dtype_min_sm(ICSV_GEMM_FP8), ==, 89); /* Ada, Hopper, Blackwell */
    g_assert_cmpint(icsv_gemm_dtype_min_sm(ICSV_GEMM_BF16), ==, 80);
    g_assert_cmpint(icsv_gemm_dtype_min_sm(ICSV_GEMM_FP16), ==, 70);
    const char *names[] = {"bf16", "fp16", "fp8"};
    for (int t = 0; t < ICSV_GEMM_DTYPE_COUNT; t++) {
        icsv_gemm_dtype back = ICSV_GEMM_DTYPE_COUNT;
        g_assert_cmpstr(icsv_gemm_dtype_name((icsv_gemm_dtype)t), ==, names[t]);
        g_assert_true(icsv_gemm_dtype_parse(names[t], &back));
        g_assert_cmpint(back, ==, t);
    }
    icsv_gemm_dtype back;
    g_assert_false(icsv_gemm_dtype_parse("bfloat16", &back)); /* the JSON's spelling only */
    g_assert_false(icsv_gemm_dtype_parse(NULL, &back));
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/validate/plan-compute/shapes", test_shapes);
    g_test_add_func("/validate/plan-compute/user-shapes", test_user_shapes);
    g_test_add_func("/validate/plan-compute/groups", test_groups);
    g_test_add_func("/validate/plan-compute/copies", test_copies);
    g_test_add_func("/validate/plan-compute/lt-dims", test_lt_dims);
    g_test_add_func("/validate/plan-compute/wave-shapes", test_wave_shapes);
    g_test_add_func("/validate/plan-compute/rates", test_rates);
    g_test_add_func("/validate/plan-compute/dtypes", test_dtypes);
    return g_test_run();
}
