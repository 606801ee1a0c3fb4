/* Serialization arithmetic: exact, rounded up, no overflow at terabytes per second. */
#include "core/core.h"

#include <math.h>

#include <glib.h>

static void test_exact(void)
{
    /* 25 GB/s: 1 byte = 40 ps exactly. */
    g_assert_cmpint(ics_time_serialize(1, 25000000000ULL), ==, 40);
    g_assert_cmpint(ics_time_serialize(4096, 25000000000ULL), ==, 4096 * 40);
}

static void test_rounds_up(void)
{
    /* 3 bytes at 7 B/s = 428571428571.43 ps -> 428571428572 */
    g_assert_cmpint(ics_time_serialize(3, 7), ==, INT64_C(428571428572));
    /* 1 byte at 1.8 TB/s = 0.555 ps -> 1 ps, never 0 */
    g_assert_cmpint(ics_time_serialize(1, 1800000000000ULL), ==, 1);
    g_assert_cmpint(ics_time_serialize(0, 1800000000000ULL), ==, 0);
}

static void test_large(void)
{
    /* 1 TiB at 1 B/s overflows int64 picoseconds: saturates at the horizon instead of
     * wrapping, and so does anything past the horizon (1 TiB at 125 kB/s: 101 days) */
    g_assert_cmpint(ics_time_serialize(1ULL << 40, 1), ==, ICS_TIME_LIMIT);
    g_assert_cmpint(ics_time_serialize(1ULL << 40, 125000), ==, ICS_TIME_LIMIT);
    g_assert_cmpint(ics_time_serialize(UINT64_MAX, 1), ==, ICS_TIME_LIMIT);
    /* just inside: 2^62 - 1 bytes at 1 TB/s */
    g_assert_cmpint(ics_time_serialize((1ULL << 62) - 1, 1000000000000ULL), ==, ICS_TIME_LIMIT - 1);
    /* 1 GiB at 450 GB/s = 2386092942.2 ps, rounded up */
    g_assert_cmpint(ics_time_serialize(1ULL << 30, 450000000000ULL), ==, INT64_C(2386092943));
}

/* Sums, products and conversions of durations saturate at the horizon: never wrap, never
 * overflow (UBSan checks), so a time plus a duration always fits in int64. */
static void test_saturating(void)
{
    g_assert_cmpint(ics_time_add(1, 2), ==, 3);
    g_assert_cmpint(ics_time_add(ICS_TIME_LIMIT - 1, 1), ==, ICS_TIME_LIMIT);
    g_assert_cmpint(ics_time_add(ICS_TIME_LIMIT, ICS_TIME_LIMIT), ==, ICS_TIME_LIMIT);
    g_assert_cmpint(ics_time_add(ICS_TIME_MAX, ICS_TIME_MAX), ==, ICS_TIME_LIMIT);
    g_assert_cmpint(ics_time_mul(3, 4), ==, 12);
    g_assert_cmpint(ics_time_mul(0, UINT64_MAX), ==, 0);
    g_assert_cmpint(ics_time_mul(ICS_PS_PER_S, UINT64_C(1) << 28), ==, ICS_TIME_LIMIT);
    g_assert_cmpint(ics_time_mul(ICS_TIME_LIMIT, 1), ==, ICS_TIME_LIMIT);
    g_assert_cmpint(ics_time_from_s(1.5e-12), ==, 2);
    g_assert_cmpint(ics_time_from_s(1e6), ==, INT64_C(1000000) * ICS_PS_PER_S);
    g_assert_cmpint(ics_time_from_s(1e33), ==, ICS_TIME_LIMIT); /* 1e24 FLOPs at 1e-9 TFLOP/s */
    g_assert_cmpint(ics_time_from_s(INFINITY), ==, ICS_TIME_LIMIT);
    g_assert_cmpint(ics_time_from_s(NAN), ==, 0);
    g_assert_cmpint(ics_time_from_s(-1), ==, 0);
    /* the horizon is what the messages say it is */
    g_assert_cmpfloat(ics_time_to_s(ICS_TIME_LIMIT) / 86400, >, 53.35);
    g_assert_cmpfloat(ics_time_to_s(ICS_TIME_LIMIT) / 86400, <, 53.45);
}

/* ics_time_serialize's 64-bit path (taken while size x 10^12 + bw fits) against the 128-bit
 * arithmetic it stands for, on both sides of where it stops fitting. */
static void test_serialize_both_paths(void)
{
    const uint64_t edge = UINT64_MAX / ICS_PS_PER_S; /* ~18.4 MB */
    const uint64_t sizes[] = {0,    1,        4096,       1 << 20,   edge - 1,
                              edge, edge + 1, 1ULL << 30, 1ULL << 40};
    const uint64_t bws[] = {1, 3, 25000000000ULL, 900000000000ULL, 123456789012345ULL};
    for (size_t i = 0; i < G_N_ELEMENTS(sizes); i++)
        for (size_t j = 0; j < G_N_ELEMENTS(bws); j++) {
            unsigned __int128 q =
                ((unsigned __int128)sizes[i] * ICS_PS_PER_S + bws[j] - 1) / bws[j];
            ics_time want = q > (unsigned __int128)ICS_TIME_LIMIT ? ICS_TIME_LIMIT : (ics_time)q;
            g_assert_cmpint(ics_time_serialize(sizes[i], bws[j]), ==, want);
        }
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/time/exact", test_exact);
    g_test_add_func("/time/rounds-up", test_rounds_up);
    g_test_add_func("/time/large", test_large);
    g_test_add_func("/time/saturating", test_saturating);
    g_test_add_func("/time/serialize-both-paths", test_serialize_both_paths);
    return g_test_run();
}
