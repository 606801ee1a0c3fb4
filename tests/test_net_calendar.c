/* The channel calendar (net_calendar.h) against its contract and a brute-force model: a turn is
 * served in the free time from its arrival on, first come first served; marks merge; only
 * intervals that ended are forgotten; storage stays within twice the intervals live at once. */
#include "net/net_calendar.h"

#include <glib.h>
#include <stdbool.h>

/* Checks that c holds exactly the intervals want[0 .. n), in order. */
static void check_holds(const ics_cal *c, const ics_time (*want)[2], uint32_t n)
{
    g_assert_cmpuint(ics_cal_count(c), ==, n);
    for (uint32_t i = 0; i < n; i++) {
        ics_time lo, hi;
        ics_cal_get(c, i, &lo, &hi);
        g_assert_cmpint(lo, ==, want[i][0]);
        g_assert_cmpint(hi, ==, want[i][1]);
    }
}

static void test_serve(void)
{
    ics_cal cal, *c = &cal;
    ics_cal_init(c);
    ics_time finish;
    /* empty: served on arrival */
    g_assert_cmpint(ics_cal_serve(c, 0, 100, 50, &finish), ==, 100);
    g_assert_cmpint(finish, ==, 150);
    check_holds(c, (const ics_time[][2]){{100, 150}}, 1);
    /* arriving inside a held interval: served from its end */
    g_assert_cmpint(ics_cal_serve(c, 0, 120, 10, &finish), ==, 150);
    g_assert_cmpint(finish, ==, 160);
    check_holds(c, (const ics_time[][2]){{100, 160}}, 1);
    /* work 0: the first free moment, nothing held */
    g_assert_cmpint(ics_cal_serve(c, 0, 100, 0, &finish), ==, 160);
    g_assert_cmpint(finish, ==, 160);
    check_holds(c, (const ics_time[][2]){{100, 160}}, 1);
    ics_cal_clear(c);
    g_assert_cmpuint(ics_cal_count(c), ==, 0);
    ics_cal_clear(c); /* twice: empty, still fine */
}

/* A train that arrives first is served first, in the gaps around later reservations made
 * before it came, and everything between its start and its finish is then held. */
static void test_first_come(void)
{
    ics_cal cal, *c = &cal;
    ics_cal_init(c);
    ics_cal_mark(c, 0, 100, 200);
    ics_cal_mark(c, 0, 230, 240);
    ics_time finish;
    g_assert_cmpint(ics_cal_serve(c, 0, 40, 100, &finish), ==, 40); /* 60 + 30 + 10 */
    g_assert_cmpint(finish, ==, 250);
    check_holds(c, (const ics_time[][2]){{40, 250}}, 1);
    ics_cal_clear(c);
}

static void test_mark_merges(void)
{
    ics_cal cal, *c = &cal;
    ics_cal_init(c);
    ics_cal_mark(c, 0, 100, 110);
    ics_cal_mark(c, 0, 60, 70); /* before: kept in order */
    ics_cal_mark(c, 0, 0, 10);
    check_holds(c, (const ics_time[][2]){{0, 10}, {60, 70}, {100, 110}}, 3);
    ics_cal_mark(c, 0, 10, 20);  /* touching: merged */
    ics_cal_mark(c, 0, 65, 105); /* overlapping two: one */
    ics_cal_mark(c, 0, 50, 50);  /* empty */
    ics_cal_mark(c, 0, 50, 40);  /* reversed */
    check_holds(c, (const ics_time[][2]){{0, 20}, {60, 110}}, 2);
    ics_cal_mark(c, 0, 0, 200); /* covering all */
    check_holds(c, (const ics_time[][2]){{0, 200}}, 1);
    ics_cal_clear(c);
}

/* Only intervals that end at or before now are forgotten; one that straddles now stays. */
static void test_prune(void)
{
    ics_cal cal, *c = &cal;
    ics_cal_init(c);
    ics_cal_mark(c, 0, 0, 10);
    ics_cal_mark(c, 0, 20, 30);
    ics_cal_mark(c, 0, 40, 50);
    ics_cal_mark(c, 10, 0, 0);
    check_holds(c, (const ics_time[][2]){{20, 30}, {40, 50}}, 2);
    ics_cal_mark(c, 25, 0, 0);
    check_holds(c, (const ics_time[][2]){{20, 30}, {40, 50}}, 2);
    ics_time finish;
    g_assert_cmpint(ics_cal_serve(c, 25, 25, 10, &finish), ==, 30); /* 20..30 still holds */
    g_assert_cmpint(finish, ==, 40);
    check_holds(c, (const ics_time[][2]){{20, 50}}, 1); /* touching both: merged */
    ics_cal_mark(c, 50, 0, 0);
    g_assert_cmpuint(ics_cal_count(c), ==, 0);
    ics_cal_clear(c);
}

/* ---- against a brute-force model: one flag per picosecond --------------------------------- */

#define SPAN 4096

static uint64_t lcg(uint64_t *s)
{
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    return *s >> 33;
}

/* Random marks and serves with the clock moving forward: every start and finish equals the
 * model's, and the calendar's intervals from now on are the model's held time exactly. */
static void test_against_model(void)
{
    static bool held[2 * SPAN];
    ics_cal cal, *c = &cal;
    ics_cal_init(c);
    uint64_t seed = 7;
    ics_time now = 0;
    for (int op = 0; op < 20000 && now < SPAN; op++) {
        now += (ics_time)(lcg(&seed) % 3);
        if (lcg(&seed) % 2) {
            ics_time lo = now - 8 + (ics_time)(lcg(&seed) % 64),
                     hi = lo + (ics_time)(lcg(&seed) % 16);
            ics_cal_mark(c, now, lo, hi);
            for (ics_time t = MAX(lo, 0); t < hi; t++)
                held[t] = true;
        } else {
            ics_time arrive = now + (ics_time)(lcg(&seed) % 48), work = (ics_time)(lcg(&seed) % 8);
            ics_time finish, start = ics_cal_serve(c, now, arrive, work, &finish);
            ics_time t = arrive;
            while (held[t])
                t++;
            g_assert_cmpint(start, ==, t);
            for (ics_time left = work; left > 0; t++)
                left -= !held[t];
            g_assert_cmpint(finish, ==, t);
            for (ics_time u = start; u < finish; u++)
                held[u] = true;
        }
        /* the calendar from now on, clipped to now, against the flags */
        ics_time t = now;
        for (uint32_t i = 0; i < ics_cal_count(c); i++) {
            ics_time lo, hi;
            ics_cal_get(c, i, &lo, &hi);
            g_assert_cmpint(hi, >, now);
            for (; t < MAX(lo, now); t++)
                g_assert_false(held[t]);
            for (; t < hi; t++)
                g_assert_true(held[t]);
            g_assert_false(held[hi]); /* apart: neither overlapping nor touching */
        }
        for (; t < 2 * SPAN; t++)
            g_assert_false(held[t]);
    }
    g_assert_cmpint(now, >=, SPAN / 2); /* the clock did move through many prunes */
    ics_cal_clear(c);
}

/* Storage grows only with the intervals live at once: a million trains, a few live at a time,
 * keep it at 4 slots; 1000 live at once take at most 2000, and no more once they have ended. */
static void test_bounded(void)
{
    ics_cal cal, *c = &cal;
    ics_cal_init(c);
    ics_time finish;
    for (ics_time now = 0; now < 30000000; now += 30) {
        ics_cal_mark(c, now, now + 20, now + 25);
        ics_cal_serve(c, now, now + 40, 3, &finish);
    }
    g_assert_cmpuint(ics_cal_count(c), <=, 4);
    g_assert_cmpuint(ics_cal_capacity(c), <=, 4);
    ics_time now = 40000000;
    for (int i = 0; i < 1000; i++)
        ics_cal_mark(c, now, now + 10 * i, now + 10 * i + 5);
    g_assert_cmpuint(ics_cal_count(c), ==, 1000);
    uint32_t cap = ics_cal_capacity(c);
    g_test_message("1000 intervals live: %u slots", cap);
    g_assert_cmpuint(cap, <=, 2000);
    for (now += 20000; now < 50000000; now += 100)
        ics_cal_mark(c, now, now + 10, now + 15);
    g_assert_cmpuint(ics_cal_count(c), ==, 1);
    g_assert_cmpuint(ics_cal_capacity(c), ==, cap);
    ics_cal_clear(c);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/net/calendar/serve", test_serve);
    g_test_add_func("/net/calendar/first-come", test_first_come);
    g_test_add_func("/net/calendar/mark-merges", test_mark_merges);
    g_test_add_func("/net/calendar/prune", test_prune);
    g_test_add_func("/net/calendar/against-model", test_against_model);
    g_test_add_func("/net/calendar/bounded", test_bounded);
    return g_test_run();
}
