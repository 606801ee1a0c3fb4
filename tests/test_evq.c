/* Event queue: exact (time, push order) ordering, cancel and stale handles, pool reuse, and a
 * randomized comparison against a sorted-array reference (fixed seed, so failures reproduce). */
#include "core/core.h"

#include <glib.h>

/* Events in these tests are identified by arg; fn is never called. */
static void never_called(ics_engine *eng, void *ctx, uint64_t arg)
{
    g_assert_not_reached();
}

static uint64_t pop_arg(ics_evq *q, ics_time expect_at)
{
    ics_event ev;
    g_assert_true(ics_evq_pop(q, &ev));
    g_assert_cmpint(ev.at, ==, expect_at);
    g_assert_true(ev.fn == never_called);
    return ev.arg;
}

static void test_ties_are_fifo(void)
{
    ics_evq *q = ics_evq_new(0);
    /* 1000 events at one time, interleaved with others at times that span every level. */
    for (uint64_t i = 0; i < 1000; i++) {
        ics_evq_push(q, 5000, never_called, NULL, i);
        ics_evq_push(q, (ics_time)(i * 7919) << 20, never_called, NULL, 1000000 + i);
    }
    ics_event ev;
    uint64_t next_tie = 0;
    ics_time last = -1;
    while (ics_evq_pop(q, &ev)) {
        g_assert_cmpint(ev.at, >=, last);
        last = ev.at;
        if (ev.at == 5000)
            g_assert_cmpuint(ev.arg, ==, next_tie++);
    }
    g_assert_cmpuint(next_tie, ==, 1000);
    /* Ties created while their time is being popped come after the ones already queued, both
     * for a sorted window (the first two) and for events pushed at the current time (the rest,
     * more than one chunk's worth). */
    const ics_time t = last + 1000;
    ics_evq_push(q, t, never_called, NULL, 0);
    ics_evq_push(q, t, never_called, NULL, 1);
    g_assert_cmpuint(pop_arg(q, t), ==, 0);
    for (uint64_t i = 2; i < 100; i++)
        ics_evq_push(q, t, never_called, NULL, i);
    for (uint64_t i = 1; i < 50; i++)
        g_assert_cmpuint(pop_arg(q, t), ==, i);
    ics_evq_push(q, t, never_called, NULL, 100);
    for (uint64_t i = 50; i <= 100; i++)
        g_assert_cmpuint(pop_arg(q, t), ==, i);
    g_assert_cmpuint(ics_evq_size(q), ==, 0);
    ics_evq_free(q);
}

static void test_orders_by_time(void)
{
    ics_evq *q = ics_evq_new(16);
    /* Extremes of the int64 range, negative times, and neighbours across byte boundaries. */
    const ics_time times[] = {ICS_TIME_MAX, 256, 255,  -1,  0, INT64_MIN, 65536,
                              65535,        1,   1000, 257, 2, -256,      INT64_C(1) << 40};
    const size_t n = G_N_ELEMENTS(times);
    ics_time sorted[G_N_ELEMENTS(times)];
    for (size_t i = 0; i < n; i++) {
        ics_evq_push(q, times[i], never_called, NULL, i);
        sorted[i] = times[i];
    }
    for (size_t i = 1; i < n; i++)
        for (size_t j = i; j > 0 && sorted[j - 1] > sorted[j]; j--) {
            ics_time t = sorted[j];
            sorted[j] = sorted[j - 1];
            sorted[j - 1] = t;
        }
    for (size_t i = 0; i < n; i++) {
        ics_time at;
        g_assert_true(ics_evq_peek_time(q, &at));
        g_assert_cmpint(at, ==, sorted[i]);
        g_assert_cmpint(times[pop_arg(q, sorted[i])], ==, sorted[i]);
    }
    ics_time at = 7;
    ics_event ev = {.at = 7};
    g_assert_false(ics_evq_peek_time(q, &at));
    g_assert_false(ics_evq_pop(q, &ev));
    g_assert_cmpint(at, ==, 7);
    g_assert_cmpint(ev.at, ==, 7);
    ics_evq_free(q);
    ics_evq_free(NULL);
}

/* 100k events within 200 ps: one sorted window (bottom) and one too big to sort (split). */
static void test_dense_window(void)
{
    enum { N = 100000 };
    ics_evq *q = ics_evq_new(N);
    for (uint64_t i = 0; i < N; i++)
        ics_evq_push(q, 1000 + (ics_time)(i * 7 % 200), never_called, NULL, i);
    ics_event ev, prev = {.at = -1};
    for (size_t n = 0; n < N; n++) {
        g_assert_true(ics_evq_pop(q, &ev));
        g_assert_true(ev.at > prev.at || (ev.at == prev.at && ev.arg > prev.arg));
        g_assert_cmpint(ev.at, ==, 1000 + (ics_time)(ev.arg * 7 % 200));
        prev = ev;
    }
    g_assert_false(ics_evq_pop(q, &ev));
    ics_evq_free(q);
}

static void test_pop_until(void)
{
    ics_evq *q = ics_evq_new(0);
    ics_evq_push(q, 100, never_called, NULL, 1);
    ics_evq_push(q, 70000, never_called, NULL, 2);
    ics_event ev;
    g_assert_false(ics_evq_pop_until(q, 99, &ev));
    g_assert_true(ics_evq_pop_until(q, 100, &ev));
    g_assert_cmpuint(ev.arg, ==, 1);
    g_assert_false(ics_evq_pop_until(q, 69999, &ev));
    /* After a pop_until that found nothing, the queue accepts pushes from its `until` on. */
    ics_evq_push(q, 69999, never_called, NULL, 3);
    g_assert_true(ics_evq_pop_until(q, 70000, &ev));
    g_assert_cmpuint(ev.arg, ==, 3);
    g_assert_true(ics_evq_pop_until(q, 70000, &ev));
    g_assert_cmpuint(ev.arg, ==, 2);
    g_assert_false(ics_evq_pop_until(q, ICS_TIME_MAX, &ev));
    /* A cancelled last event does not raise the bound for pushes: its time was never seen. */
    ics_evq_push(q, 80000, never_called, NULL, 4);
    ics_event_id late = ics_evq_push(q, 90000, never_called, NULL, 5);
    g_assert_true(ics_evq_cancel(q, late));
    g_assert_true(ics_evq_pop(q, &ev));
    g_assert_false(ics_evq_pop(q, &ev));
    ics_evq_push(q, 80001, never_called, NULL, 6);
    g_assert_true(ics_evq_pop(q, &ev));
    g_assert_cmpuint(ev.arg, ==, 6);
    ics_evq_free(q);
}

static void test_cancel(void)
{
    ics_evq *q = ics_evq_new(0);
    ics_event_id id[10];
    for (uint64_t i = 0; i < 10; i++)
        id[i] = ics_evq_push(q, 10 * (ics_time)i, never_called, NULL, i);
    g_assert_true(ics_evq_cancel(q, id[0]));  /* head */
    g_assert_true(ics_evq_cancel(q, id[5]));  /* middle */
    g_assert_true(ics_evq_cancel(q, id[9]));  /* tail */
    g_assert_false(ics_evq_cancel(q, id[5])); /* twice */
    g_assert_false(ics_evq_cancel(q, ICS_EVENT_NONE));
    g_assert_false(ics_evq_cancel(q, (ics_event_id)1 << 32 | 12345)); /* never issued */
    g_assert_cmpuint(ics_evq_size(q), ==, 7);

    ics_time at;
    g_assert_true(ics_evq_peek_time(q, &at));
    g_assert_cmpint(at, ==, 10);
    g_assert_cmpuint(pop_arg(q, 10), ==, 1);
    g_assert_false(ics_evq_cancel(q, id[1])); /* fired */
    /* The records of fired and cancelled events get reused; the old handles stay dead. */
    ics_event_id fresh[4];
    for (uint64_t i = 0; i < 4; i++)
        fresh[i] = ics_evq_push(q, 1000, never_called, NULL, 100 + i);
    const size_t gone[] = {0, 1, 5, 9};
    for (size_t i = 0; i < G_N_ELEMENTS(gone); i++)
        g_assert_false(ics_evq_cancel(q, id[gone[i]]));
    g_assert_true(ics_evq_cancel(q, fresh[2]));
    const uint64_t expect[] = {2, 3, 4, 6, 7, 8, 100, 101, 103};
    for (size_t i = 0; i < G_N_ELEMENTS(expect); i++) {
        ics_event ev;
        g_assert_true(ics_evq_pop(q, &ev));
        g_assert_cmpuint(ev.arg, ==, expect[i]);
        g_assert_false(ics_evq_cancel(q, ev.id));
    }
    g_assert_cmpuint(ics_evq_size(q), ==, 0);
    ics_evq_free(q);
}

/* Cancelling most of a large queue triggers compaction; order and handles must survive it. */
static void test_cancel_many(void)
{
    enum { N = 20000 };
    ics_evq *q = ics_evq_new(0);
    ics_event_id *id = g_new(ics_event_id, N);
    for (uint64_t i = 0; i < N; i++)
        id[i] = ics_evq_push(q, 300 + (ics_time)((i * 37) % 1000) * 1000, never_called, NULL, i);
    /* Start popping first, so that some of the cancelled events are already sorted for popping
     * (the 19 others at time 300). */
    ics_event ev;
    g_assert_true(ics_evq_pop(q, &ev));
    g_assert_cmpuint(ev.arg, ==, 0);
    for (size_t i = 1; i < N; i++)
        if (i % 10 != 3)
            g_assert_true(ics_evq_cancel(q, id[i]));
    g_assert_cmpuint(ics_evq_size(q), ==, N / 10);
    ics_time last = 0;
    uint64_t last_arg = 0;
    size_t n = 0;
    while (ics_evq_pop(q, &ev)) {
        g_assert_cmpuint(ev.arg % 10, ==, 3);
        g_assert_true(ev.at > last || (ev.at == last && ev.arg > last_arg) || n == 0);
        last = ev.at;
        last_arg = ev.arg;
        n++;
    }
    g_assert_cmpuint(n, ==, N / 10);
    for (size_t i = 0; i < N; i++)
        g_assert_false(ics_evq_cancel(q, id[i]));
    g_free(id);
    ics_evq_free(q);
}

static void test_pool_reuse(void)
{
    ics_evq *q = ics_evq_new(0);
    size_t cap = 0, mem = 0;
    ics_time now = 0;
    for (int round = 0; round < 50; round++) {
        for (uint64_t i = 0; i < 3000; i++)
            ics_evq_push(q, now + (ics_time)((i * 7919) % 5000000), never_called, NULL, i);
        ics_event ev;
        while (ics_evq_pop(q, &ev))
            now = ev.at;
        if (round == 0) {
            cap = ics_evq_capacity(q);
            mem = ics_evq_memory_bytes(q);
            g_assert_cmpuint(cap, ==, 3000);
        }
        g_assert_cmpuint(ics_evq_capacity(q), ==, cap);
        g_assert_cmpuint(ics_evq_memory_bytes(q), ==, mem);
    }
    /* Hold model: the size stays at 3000. Sparse buckets can hold more chunks than the batches
     * above did, so the peak is taken after a warm-up; from then on nothing grows. */
    for (uint64_t i = 0; i < 3000; i++)
        ics_evq_push(q, now + (ics_time)i, never_called, NULL, i);
    for (int i = 0; i < 400000; i++) {
        if (i == 100000)
            mem = ics_evq_memory_bytes(q);
        ics_event ev;
        g_assert_true(ics_evq_pop(q, &ev));
        ics_evq_push(q, ev.at + 1 + (ics_time)((uint64_t)i * 7919 % 100000), never_called, NULL, 0);
    }
    g_assert_cmpuint(ics_evq_capacity(q), ==, cap);
    g_assert_cmpuint(ics_evq_memory_bytes(q), ==, mem);
    ics_evq_free(q);
}

/* Reference: an array kept sorted by (at, seq). O(n) per operation; fine for a few thousand. */
typedef struct {
    ics_time at;
    uint64_t seq;
    ics_event_id id;
} ref_event;

static void test_random_vs_reference(void)
{
    GRand *rng = g_rand_new_with_seed(20240611);
    ics_evq *q = ics_evq_new(0);
    GArray *ref = g_array_new(FALSE, FALSE, sizeof(ref_event));
    GArray *dead = g_array_new(FALSE, FALSE, sizeof(ics_event_id));
    ics_time now = 0;
    uint64_t seq = 0;
    for (int op = 0; op < 100000; op++) {
        /* Bias towards push while small so that the queue holds a few hundred to thousands. */
        guint32 r = g_rand_int_range(rng, 0, 100);
        gboolean grow = ref->len < 200 || (ref->len < 3000 && r < 45);
        if (grow || r < 40) {
            ics_time at;
            switch (g_rand_int_range(rng, 0, 4)) {
            case 0: /* ties: the current time or a few distinct near times */
                at = now + g_rand_int_range(rng, 0, 3);
                break;
            case 1:
                at = now + g_rand_int_range(rng, 0, 300);
                break;
            case 2:
                at = now + g_rand_int_range(rng, 0, 1 << 20);
                break;
            default:
                at = now + (ics_time)(g_rand_int(rng) % 4) * ((ics_time)1 << 36) +
                     g_rand_int_range(rng, 0, 1000);
                break;
            }
            ref_event re = {.at = at, .seq = seq};
            re.id = ics_evq_push(q, at, never_called, NULL, seq);
            seq++;
            /* seq is the largest so far: the new event goes after every one with at <= its at. */
            guint lo = 0, hi = ref->len;
            while (lo < hi) {
                guint mid = lo + (hi - lo) / 2;
                if (g_array_index(ref, ref_event, mid).at <= at)
                    lo = mid + 1;
                else
                    hi = mid;
            }
            g_array_insert_val(ref, lo, re);
        } else if (r < 75) {
            ics_event ev;
            if (g_rand_int_range(rng, 0, 4) == 0) {
                /* pop_until a bound that may fall before, at or after the next event */
                ics_time until = now + g_rand_int_range(rng, 0, 2000);
                bool expect = ref->len > 0 && g_array_index(ref, ref_event, 0).at <= until;
                g_assert_cmpint(ics_evq_pop_until(q, until, &ev), ==, expect);
                if (!expect) {
                    now = until;
                    continue;
                }
            } else {
                g_assert_cmpint(ics_evq_pop(q, &ev), ==, ref->len > 0);
                if (ref->len == 0)
                    continue;
            }
            ref_event want = g_array_index(ref, ref_event, 0);
            g_assert_cmpint(ev.at, ==, want.at);
            g_assert_cmpuint(ev.arg, ==, want.seq);
            g_assert_cmpuint(ev.id, ==, want.id);
            g_array_remove_index(ref, 0);
            g_array_append_val(dead, ev.id);
            now = ev.at;
        } else if (r < 95 && ref->len > 0) {
            guint i = (guint)g_rand_int_range(rng, 0, (gint32)ref->len);
            ref_event victim = g_array_index(ref, ref_event, i);
            g_assert_true(ics_evq_cancel(q, victim.id));
            g_array_remove_index(ref, i);
            g_array_append_val(dead, victim.id);
        } else if (dead->len > 0) {
            guint i = (guint)g_rand_int_range(rng, 0, (gint32)dead->len);
            g_assert_false(ics_evq_cancel(q, g_array_index(dead, ics_event_id, i)));
        }
        g_assert_cmpuint(ics_evq_size(q), ==, ref->len);
        if (op % 3 == 0) { /* often: a peek's answer is kept across pushes */
            ics_time at;
            g_assert_cmpint(ics_evq_peek_time(q, &at), ==, ref->len > 0);
            if (ref->len > 0)
                g_assert_cmpint(at, ==, g_array_index(ref, ref_event, 0).at);
        }
    }
    /* Drain: the rest comes out in reference order. */
    for (guint i = 0; i < ref->len; i++) {
        ics_event ev;
        g_assert_true(ics_evq_pop(q, &ev));
        g_assert_cmpuint(ev.arg, ==, g_array_index(ref, ref_event, i).seq);
    }
    g_assert_cmpuint(ics_evq_size(q), ==, 0);
    g_array_free(dead, TRUE);
    g_array_free(ref, TRUE);
    ics_evq_free(q);
    g_rand_free(rng);
}

/* Many events of one instant, the first ones cancelled: a peek answers that instant while any
 * is live, a later push before it wins, and a cancel or pop is seen by the next peek. */
static void test_peek_one_instant(void)
{
    ics_evq *q = ics_evq_new(0);
    ics_event_id ids[1000];
    for (int i = 0; i < 1000; i++)
        ids[i] = ics_evq_push(q, 5000, never_called, NULL, (uint64_t)i);
    ics_event_id late = ics_evq_push(q, 9000, never_called, NULL, 0);
    ics_event ev;
    g_assert_true(ics_evq_pop(q, &ev)); /* settles the instant into level 0 / the bottom */
    g_assert_cmpint(ev.at, ==, 5000);
    for (int i = 1; i < 10; i++)
        g_assert_true(ics_evq_cancel(q, ids[i]));
    ics_time at = 0;
    g_assert_true(ics_evq_peek_time(q, &at));
    g_assert_cmpint(at, ==, 5000);
    ics_evq_push(q, 5000, never_called, NULL, 7); /* same instant: answer unchanged */
    g_assert_true(ics_evq_peek_time(q, &at));
    g_assert_cmpint(at, ==, 5000);
    for (int i = 10; i < 1000; i++)
        g_assert_true(ics_evq_cancel(q, ids[i]));
    g_assert_true(ics_evq_peek_time(q, &at)); /* the one pushed after the cancels */
    g_assert_cmpint(at, ==, 5000);
    g_assert_true(ics_evq_pop(q, &ev));
    g_assert_cmpuint(ev.arg, ==, 7);
    g_assert_true(ics_evq_peek_time(q, &at));
    g_assert_cmpint(at, ==, 9000);
    g_assert_true(ics_evq_cancel(q, late));
    g_assert_false(ics_evq_peek_time(q, &at));
    ics_evq_free(q);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/evq/ties-are-fifo", test_ties_are_fifo);
    g_test_add_func("/evq/orders-by-time", test_orders_by_time);
    g_test_add_func("/evq/dense-window", test_dense_window);
    g_test_add_func("/evq/pop-until", test_pop_until);
    g_test_add_func("/evq/cancel", test_cancel);
    g_test_add_func("/evq/cancel-many", test_cancel_many);
    g_test_add_func("/evq/pool-reuse", test_pool_reuse);
    g_test_add_func("/evq/random-vs-reference", test_random_vs_reference);
    g_test_add_func("/evq/peek-one-instant", test_peek_one_instant);
    return g_test_run();
}
