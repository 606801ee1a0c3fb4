/* Engine: the clock, run(until), handlers that schedule and cancel, stop, and the pending check.
 * Handlers record (now, arg) into a log so that each test states the exact expected trace. */
#include "core/core.h"

#include <glib.h>

typedef struct {
    GArray *now;  /* ics_time at each firing */
    GArray *args; /* uint64_t arg of each firing */
} trace;

static trace *trace_new(void)
{
    trace *t = g_new0(trace, 1);
    t->now = g_array_new(FALSE, FALSE, sizeof(ics_time));
    t->args = g_array_new(FALSE, FALSE, sizeof(uint64_t));
    return t;
}

static void trace_free(trace *t)
{
    g_array_free(t->now, TRUE);
    g_array_free(t->args, TRUE);
    g_free(t);
}

static void record(ics_engine *eng, void *ctx, uint64_t arg)
{
    trace *t = ctx;
    ics_time now = ics_engine_now(eng);
    g_array_append_val(t->now, now);
    g_array_append_val(t->args, arg);
}

static void test_clock_is_monotonic(void)
{
    ics_engine *eng = ics_engine_new(0);
    trace *t = trace_new();
    g_assert_cmpint(ics_engine_now(eng), ==, 0);
    GRand *rng = g_rand_new_with_seed(7);
    for (uint64_t i = 0; i < 5000; i++)
        ics_engine_at(eng, g_rand_int_range(rng, 0, 1000000), record, t, i);
    g_assert_cmpuint(ics_engine_run(eng, ICS_TIME_MAX), ==, 5000);
    for (guint i = 1; i < t->now->len; i++)
        g_assert_cmpint(g_array_index(t->now, ics_time, i - 1), <=,
                        g_array_index(t->now, ics_time, i));
    /* The queue drained before ICS_TIME_MAX: the clock stays at the last event. */
    g_assert_cmpint(ics_engine_now(eng), ==, g_array_index(t->now, ics_time, 4999));
    g_assert_cmpuint(ics_engine_events_processed(eng), ==, 5000);
    g_assert_cmpuint(ics_engine_pending(eng), ==, 0);
    g_rand_free(rng);
    trace_free(t);
    ics_engine_free(eng);
}

static void test_run_until(void)
{
    ics_engine *eng = ics_engine_new(0);
    trace *t = trace_new();
    ics_engine_at(eng, 100, record, t, 1);
    ics_engine_at(eng, 200, record, t, 2);
    ics_engine_at(eng, 200, record, t, 3);
    ics_engine_at(eng, 201, record, t, 4);
    g_assert_cmpuint(ics_engine_run(eng, 50), ==, 0);
    g_assert_cmpint(ics_engine_now(eng), ==, 50);
    g_assert_cmpuint(ics_engine_run(eng, 200), ==, 3); /* events at until fire */
    g_assert_cmpint(ics_engine_now(eng), ==, 200);
    g_assert_cmpuint(ics_engine_pending(eng), ==, 1);
    /* Scheduling between runs is relative to the clock the last run left. */
    ics_engine_after(eng, 0, record, t, 5);
    g_assert_cmpuint(ics_engine_run(eng, 1000), ==, 2);
    g_assert_cmpint(ics_engine_now(eng), ==, 1000);
    const uint64_t want_args[] = {1, 2, 3, 5, 4};
    const ics_time want_now[] = {100, 200, 200, 200, 201};
    g_assert_cmpuint(t->args->len, ==, G_N_ELEMENTS(want_args));
    for (guint i = 0; i < t->args->len; i++) {
        g_assert_cmpuint(g_array_index(t->args, uint64_t, i), ==, want_args[i]);
        g_assert_cmpint(g_array_index(t->now, ics_time, i), ==, want_now[i]);
    }
    g_assert_cmpuint(ics_engine_events_processed(eng), ==, 5);
    trace_free(t);
    ics_engine_free(eng);
}

/* A chain: each firing schedules the next one 10 ps later, and one more at now (a tie that must
 * fire after everything already scheduled for now). */
typedef struct {
    trace *t;
    uint64_t left;
} chain;

static void chain_fire(ics_engine *eng, void *ctx, uint64_t arg)
{
    chain *c = ctx;
    record(eng, c->t, arg);
    if (arg >= 1000) /* the tie events do not continue the chain */
        return;
    ics_engine_after(eng, 0, chain_fire, c, 1000 + arg);
    if (c->left > 0) {
        c->left--;
        ics_engine_after(eng, 10, chain_fire, c, arg + 1);
    }
}

static void test_handlers_schedule(void)
{
    ics_engine *eng = ics_engine_new(0);
    chain c = {.t = trace_new(), .left = 4};
    ics_engine_at(eng, 5, chain_fire, &c, 0);
    ics_engine_at(eng, 25, record, c.t, 999); /* scheduled before the chain's event at 25 */
    g_assert_cmpuint(ics_engine_run(eng, ICS_TIME_MAX), ==, 11);
    const uint64_t want_args[] = {0, 1000, 1, 1001, 999, 2, 1002, 3, 1003, 4, 1004};
    const ics_time want_now[] = {5, 5, 15, 15, 25, 25, 25, 35, 35, 45, 45};
    g_assert_cmpuint(c.t->args->len, ==, G_N_ELEMENTS(want_args));
    for (guint i = 0; i < c.t->args->len; i++) {
        g_assert_cmpuint(g_array_index(c.t->args, uint64_t, i), ==, want_args[i]);
        g_assert_cmpint(g_array_index(c.t->now, ics_time, i), ==, want_now[i]);
    }
    trace_free(c.t);
    ics_engine_free(eng);
}

typedef struct {
    ics_event_id victim;
    bool cancelled;
} canceller;

static void cancel_fire(ics_engine *eng, void *ctx, uint64_t arg)
{
    canceller *c = ctx;
    c->cancelled = ics_engine_cancel(eng, c->victim);
}

static void test_cancel_from_handler(void)
{
    ics_engine *eng = ics_engine_new(0);
    trace *t = trace_new();
    canceller c = {0};
    ics_engine_at(eng, 10, cancel_fire, &c, 0);
    c.victim = ics_engine_at(eng, 20, record, t, 1);
    ics_engine_at(eng, 30, record, t, 2);
    g_assert_cmpuint(ics_engine_run(eng, ICS_TIME_MAX), ==, 2);
    g_assert_true(c.cancelled);
    g_assert_cmpuint(t->args->len, ==, 1);
    g_assert_cmpuint(g_array_index(t->args, uint64_t, 0), ==, 2);
    g_assert_false(ics_engine_cancel(eng, c.victim));
    /* The last event was cancelled: the clock stays at 30 and scheduling from there works. */
    ics_event_id late = ics_engine_at(eng, 100, record, t, 3);
    g_assert_true(ics_engine_cancel(eng, late));
    g_assert_cmpuint(ics_engine_run(eng, ICS_TIME_MAX), ==, 0);
    g_assert_cmpint(ics_engine_now(eng), ==, 30);
    ics_engine_after(eng, 5, record, t, 4);
    g_assert_cmpuint(ics_engine_run(eng, ICS_TIME_MAX), ==, 1);
    g_assert_cmpint(ics_engine_now(eng), ==, 35);
    trace_free(t);
    ics_engine_free(eng);
}

static void stop_fire(ics_engine *eng, void *ctx, uint64_t arg)
{
    record(eng, ctx, arg);
    ics_engine_stop(eng);
}

static void test_stop(void)
{
    ics_engine *eng = ics_engine_new(0);
    trace *t = trace_new();
    ics_engine_at(eng, 10, record, t, 1);
    ics_engine_at(eng, 20, stop_fire, t, 2);
    ics_engine_at(eng, 20, record, t, 3);
    ics_engine_at(eng, 30, record, t, 4);
    g_assert_cmpuint(ics_engine_run(eng, 1000), ==, 2);
    g_assert_cmpint(ics_engine_now(eng), ==, 20); /* stopped: the clock stays at the stopper */
    g_assert_cmpuint(ics_engine_pending(eng), ==, 2);
    /* A later run resumes where the stop left off. */
    g_assert_cmpuint(ics_engine_run(eng, 1000), ==, 2);
    g_assert_cmpint(ics_engine_now(eng), ==, 1000);
    g_assert_cmpuint(t->args->len, ==, 4);
    for (guint i = 0; i < 4; i++)
        g_assert_cmpuint(g_array_index(t->args, uint64_t, i), ==, i + 1);
    g_assert_cmpuint(ics_engine_pending(eng), ==, 0);
    trace_free(t);
    ics_engine_free(eng);
}

static void test_pending_at_free(void)
{
    ics_engine *eng = ics_engine_new(0);
    trace *t = trace_new();
    ics_event_id a = ics_engine_at(eng, 10, record, t, 1);
    ics_engine_at(eng, ICS_TIME_LIMIT - 1, record, t, 2);
    g_assert_cmpuint(ics_engine_pending(eng), ==, 2);
    g_assert_true(ics_engine_cancel(eng, a));
    g_assert_cmpuint(ics_engine_pending(eng), ==, 1);
    g_assert_cmpuint(ics_engine_run(eng, ICS_TIME_LIMIT - 2), ==, 0);
    g_assert_cmpuint(ics_engine_pending(eng), ==, 1); /* reported, not fired: the caller decides */
    ics_engine_free(eng);
    g_assert_cmpuint(t->args->len, ==, 0);
    trace_free(t);
    ics_engine_free(NULL);
}

static void late_fire(ics_engine *eng, void *ctx, uint64_t arg)
{
    record(eng, ctx, arg);
    /* a handler asks for a time past the horizon (a user's 100-day compute op): refused, and
     * the run ends once this handler returns, although an event at 30 is still due */
    g_assert_cmpuint(ics_engine_after(eng, ICS_TIME_LIMIT, record, ctx, 9), ==, ICS_EVENT_NONE);
    g_assert_true(ics_engine_past_horizon(eng));
}

/* The horizon (time.h): events at or past ICS_TIME_LIMIT are refused, not asserted, and stop
 * the run; every event fires before it; no delay can wrap the clock. */
static void test_horizon(void)
{
    ics_engine *eng = ics_engine_new(0);
    trace *t = trace_new();
    g_assert_cmpuint(ics_engine_at(eng, ICS_TIME_LIMIT - 1, record, t, 1), !=, ICS_EVENT_NONE);
    g_assert_false(ics_engine_past_horizon(eng));
    ics_engine_at(eng, 10, late_fire, t, 2);
    ics_engine_at(eng, 30, record, t, 3);
    g_assert_cmpuint(ics_engine_run(eng, ICS_TIME_MAX), ==, 1);
    g_assert_cmpint(ics_engine_now(eng), ==, 10);
    g_assert_cmpuint(t->args->len, ==, 1);
    g_assert_cmpuint(ics_engine_pending(eng), ==, 2); /* left to the caller, never fired */
    g_assert_cmpuint(ics_engine_run(eng, ICS_TIME_MAX), ==, 0); /* over for good */
    ics_engine_free(eng);

    eng = ics_engine_new(0);
    ics_engine_at(eng, 5, record, t, 4);
    ics_engine_run(eng, ICS_TIME_MAX);
    /* the largest delays of all: refused before any addition could overflow */
    g_assert_cmpuint(ics_engine_after(eng, ICS_TIME_MAX, record, t, 5), ==, ICS_EVENT_NONE);
    g_assert_cmpuint(ics_engine_at(eng, ICS_TIME_MAX, record, t, 6), ==, ICS_EVENT_NONE);
    g_assert_true(ics_engine_past_horizon(eng));
    g_assert_cmpuint(ics_engine_pending(eng), ==, 0);
    ics_engine_free(eng);
    trace_free(t);
}

/* Programming errors abort: scheduling in the past. */
static void test_past_asserts(void)
{
    if (g_test_subprocess()) {
        ics_engine *eng = ics_engine_new(0);
        ics_engine_run(eng, 100);
        ics_engine_at(eng, 99, record, NULL, 0);
        return;
    }
    g_test_trap_subprocess(NULL, 0, G_TEST_SUBPROCESS_DEFAULT);
    g_test_trap_assert_failed();
    g_test_trap_assert_stderr("*at >= e->now*");
}

static void tick_nothing(ics_engine *e, void *ctx, uint64_t arg)
{
    (void)e;
    (void)ctx;
    (void)arg;
}

static void tick_count(void *ctx)
{
    (*(int *)ctx)++;
}

/* A tick every 3 events over 10 events comes 3 times, between events; none once unset. */
static void test_tick(void)
{
    ics_engine *e = ics_engine_new(0);
    int ticks = 0;
    ics_engine_set_tick(e, 3, tick_count, &ticks);
    for (int i = 0; i < 10; i++)
        ics_engine_at(e, i, tick_nothing, NULL, 0);
    ics_engine_run(e, ICS_TIME_MAX);
    g_assert_cmpint(ticks, ==, 3);
    ics_engine_set_tick(e, 1, NULL, NULL);
    ics_engine_at(e, 20, tick_nothing, NULL, 0);
    ics_engine_run(e, ICS_TIME_MAX);
    g_assert_cmpint(ticks, ==, 3);
    ics_engine_free(e);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/engine/clock-is-monotonic", test_clock_is_monotonic);
    g_test_add_func("/engine/run-until", test_run_until);
    g_test_add_func("/engine/handlers-schedule", test_handlers_schedule);
    g_test_add_func("/engine/cancel-from-handler", test_cancel_from_handler);
    g_test_add_func("/engine/stop", test_stop);
    g_test_add_func("/engine/pending-at-free", test_pending_at_free);
    g_test_add_func("/engine/past-asserts", test_past_asserts);
    g_test_add_func("/engine/horizon", test_horizon);
    g_test_add_func("/engine/tick", test_tick);
    return g_test_run();
}
