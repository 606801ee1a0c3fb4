/* The discrete-event engine: a clock plus an event queue, and the loop that fires events.
 * Invariant: the clock never goes backwards, and events fire in (time, scheduling order) order;
 * an event fires with the clock at exactly its time, always before ICS_TIME_LIMIT (time.h): an
 * event asked for at or past it is not queued, and the run ends (ics_engine_past_horizon). No
 * global state: engines are independent. */
#ifndef ICS_ENGINE_H
#define ICS_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/evq.h"
#include "core/time.h"

/* Creates an engine with the clock at 0 and nothing pending. capacity_hint: expected peak of
 * pending events (0 if unknown). Transfer full: free with ics_engine_free. */
ics_engine *ics_engine_new(size_t capacity_hint);

/* Frees the engine and discards pending events without firing them (their ctx pointers are not
 * touched). Callers that expect a drained simulation check ics_engine_pending() == 0 first.
 * NULL: no-op. Must not be called from a handler. */
void ics_engine_free(ics_engine *e);

/* The current simulated time in picoseconds. Inside a handler: the handler's event time. */
ics_time ics_engine_now(const ics_engine *e);

/* Schedules fn(e, ctx, arg) at absolute time at. at < now is a programming error (asserts);
 * at == now fires after every event already scheduled for now. ctx: transfer none. O(1).
 * at >= ICS_TIME_LIMIT is not a programming error but a simulation that outlasts the horizon
 * (times come from the user's input): nothing is queued, ICS_EVENT_NONE is returned, the
 * engine notes it (ics_engine_past_horizon) and the run in progress, or the next one, returns
 * before firing anything more. The caller reports it, as an ICS_ERROR_LIMIT error. */
ics_event_id ics_engine_at(ics_engine *e, ics_time at, ics_event_fn fn, void *ctx, uint64_t arg);

/* Schedules fn(e, ctx, arg) at now + delay_ps; delay_ps >= 0 (asserts). Any delay is safe: one
 * that ends at or past ICS_TIME_LIMIT is refused as ics_engine_at refuses it. */
ics_event_id ics_engine_after(ics_engine *e, ics_time delay_ps, ics_event_fn fn, void *ctx,
                              uint64_t arg);

/* True once something was scheduled at or past ICS_TIME_LIMIT: the run stopped there, and
 * events still pending never fire (their contexts are the caller's to free). */
bool ics_engine_past_horizon(const ics_engine *e);

/* Cancels a pending event; true if it was pending, false if it already fired, was already
 * cancelled or id is ICS_EVENT_NONE. Safe from handlers. O(1) amortized. */
bool ics_engine_cancel(ics_engine *e, ics_event_id id);

/* Fires events in order while the earliest one is at or before until (>= now), or until a handler
 * calls ics_engine_stop or the horizon is passed. Returns the number of events fired by this
 * call; 0 once past the horizon.
 * Clock on return: if stopped (or past the horizon), the time of the last event fired;
 * otherwise until (at most ICS_TIME_LIMIT - 1), except for until == ICS_TIME_MAX, where it stays
 * at the last event's time once the queue is empty.
 * Not reentrant: calling it from a handler asserts. */
uint64_t ics_engine_run(ics_engine *e, ics_time until);

/* From a handler: makes ics_engine_run return once the current handler returns. Events still
 * pending stay pending; a later ics_engine_run resumes. Outside a run: asserts. */
void ics_engine_stop(ics_engine *e);

/* Calls fn(ctx) after every `every` events fired (every > 0; fn NULL: none), from inside
 * ics_engine_run, between two events: progress reports of long runs. fn must not touch the
 * engine. */
typedef void (*ics_engine_tick_fn)(void *ctx);
void ics_engine_set_tick(ics_engine *e, uint64_t every, ics_engine_tick_fn fn, void *ctx);

/* A co-simulator whose events interleave with the engine's (the flow backend's SimGrid, which
 * keeps its own clock). Before each event, and before a run returns, the engine calls
 * advance(ctx, e, limit), limit being the time of the earliest pending event or the run's
 * `until` (at most ICS_TIME_LIMIT - 1): the co-simulator moves its clock no further than limit
 * and schedules, as engine events at their times (>= now, <= limit), whatever of its own
 * happens first; the engine calls it again after a call that scheduled something (with the
 * new earliest event as limit), then fires the earliest event as usual. fn NULL: none. One per
 * engine. */
typedef void (*ics_engine_cosim_fn)(void *ctx, ics_engine *e, ics_time limit);
void ics_engine_set_cosim(ics_engine *e, ics_engine_cosim_fn fn, void *ctx);

/* Events fired since the engine was created, over all runs. */
uint64_t ics_engine_events_processed(const ics_engine *e);

/* Events scheduled and neither fired nor cancelled: the shutdown check (0 for a drained run). */
size_t ics_engine_pending(const ics_engine *e);

#endif
