/* The engine loop: pop the earliest event, set the clock to its time, call its handler.
 * Invariant: now only increases, and every queued event's time is >= now (ics_engine_at asserts
 * it), which is exactly the monotone-queue precondition of ics_evq_push; and below
 * ICS_TIME_LIMIT, so that now plus any saturated duration fits in int64. */
#include "core/engine.h"

#include <glib.h>

struct ics_engine {
    ics_evq *q;
    ics_time now;
    uint64_t processed;
    bool running;
    bool stop_requested;
    bool past_horizon; /* something was asked for at or past ICS_TIME_LIMIT: the run is over */
    uint64_t tick_every, tick_left;
    ics_engine_tick_fn tick;
    void *tick_ctx;
    ics_engine_cosim_fn cosim;
    void *cosim_ctx;
};

ics_engine *ics_engine_new(size_t capacity_hint)
{
    ics_engine *e = g_new0(ics_engine, 1);
    e->q = ics_evq_new(capacity_hint);
    return e;
}

void ics_engine_free(ics_engine *e)
{
    if (!e)
        return;
    g_assert(!e->running);
    ics_evq_free(e->q);
    g_free(e);
}

ics_time ics_engine_now(const ics_engine *e)
{
    return e->now;
}

/* The user's input asked for more simulated time than the horizon: the run ends here. */
static ics_event_id past_horizon(ics_engine *e)
{
    e->past_horizon = true;
    return ICS_EVENT_NONE;
}

ics_event_id ics_engine_at(ics_engine *e, ics_time at, ics_event_fn fn, void *ctx, uint64_t arg)
{
    g_assert(at >= e->now);
    g_assert(fn != NULL);
    if (at >= ICS_TIME_LIMIT)
        return past_horizon(e);
    return ics_evq_push(e->q, at, fn, ctx, arg);
}

ics_event_id ics_engine_after(ics_engine *e, ics_time delay_ps, ics_event_fn fn, void *ctx,
                              uint64_t arg)
{
    g_assert(delay_ps >= 0);
    g_assert(fn != NULL);
    if (delay_ps >= ICS_TIME_LIMIT - e->now) /* now < ICS_TIME_LIMIT: no overflow */
        return past_horizon(e);
    return ics_evq_push(e->q, e->now + delay_ps, fn, ctx, arg);
}

bool ics_engine_past_horizon(const ics_engine *e)
{
    return e->past_horizon;
}

bool ics_engine_cancel(ics_engine *e, ics_event_id id)
{
    return ics_evq_cancel(e->q, id);
}

/* Lets the co-simulator catch up to the earliest of the next event and `until`; again after
 * each call that scheduled something, since what it scheduled (a delivery after a fixed delay)
 * may be later than its next completion. */
static void cosim_advance(ics_engine *e, ics_time until)
{
    if (!e->cosim)
        return;
    for (;;) {
        ics_time limit = MIN(until, ICS_TIME_LIMIT - 1), next;
        if (ics_evq_peek_time(e->q, &next))
            limit = MIN(limit, next);
        size_t before = ics_evq_size(e->q);
        e->cosim(e->cosim_ctx, e, limit);
        if (ics_evq_size(e->q) == before || e->past_horizon)
            return;
    }
}

uint64_t ics_engine_run(ics_engine *e, ics_time until)
{
    g_assert(!e->running);
    g_assert(until >= e->now);
    e->running = true;
    e->stop_requested = false;
    uint64_t fired = 0;
    ics_event ev;
    for (;;) {
        if (e->stop_requested || e->past_horizon)
            break;
        cosim_advance(e, until);
        if (!ics_evq_pop_until(e->q, until, &ev))
            break;
        e->now = ev.at;
        e->processed++;
        fired++;
        ev.fn(e, ev.ctx, ev.arg);
        if (e->tick && --e->tick_left == 0) {
            e->tick_left = e->tick_every;
            e->tick(e->tick_ctx);
        }
    }
    if (!e->stop_requested && !e->past_horizon && until != ICS_TIME_MAX)
        e->now = MIN(until, ICS_TIME_LIMIT - 1);
    e->running = false;
    e->stop_requested = false;
    return fired;
}

void ics_engine_set_tick(ics_engine *e, uint64_t every, ics_engine_tick_fn fn, void *ctx)
{
    g_assert(!fn || every > 0);
    e->tick = fn;
    e->tick_ctx = ctx;
    e->tick_every = e->tick_left = every;
}

void ics_engine_set_cosim(ics_engine *e, ics_engine_cosim_fn fn, void *ctx)
{
    e->cosim = fn;
    e->cosim_ctx = ctx;
}

void ics_engine_stop(ics_engine *e)
{
    g_assert(e->running);
    e->stop_requested = true;
}

uint64_t ics_engine_events_processed(const ics_engine *e)
{
    return e->processed;
}

size_t ics_engine_pending(const ics_engine *e)
{
    return ics_evq_size(e->q);
}
