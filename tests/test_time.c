/* Serialization arithmetic: exact, rounded up, no overflow at terabytes per second. */
#include "core/core.h"

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
    /* 1 TiB at 1 B/s overflows int64 picoseconds: saturates instead of wrapping. */
    g_assert_cmpint(ics_time_serialize(1ULL << 40, 1), ==, ICS_TIME_MAX);
    /* 1 GiB at 450 GB/s = 2386092942.2 ps, rounded up */
    g_assert_cmpint(ics_time_serialize(1ULL << 30, 450000000000ULL), ==, INT64_C(2386092943));
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/time/exact", test_exact);
    g_test_add_func("/time/rounds-up", test_rounds_up);
    g_test_add_func("/time/large", test_large);
    return g_test_run();
}
