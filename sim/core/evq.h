/* The event queue: pending events ordered by (time, sequence), ties FIFO, popped in order.
 * Invariant: events come out in exactly (at, push order) order, and every event pushed is
 * popped or cancelled exactly once; a handle never acts on an event other than its own.
 *
 * Data structure: a monotone radix queue (a hierarchical timing wheel over integer picoseconds),
 * 8 levels x 256 buckets, one level per byte of the time. An event sits in the bucket named by
 * the highest byte in which its time differs from the queue's floor (the last popped time) and by
 * its own value of that byte, so buckets are ordered by (level, byte). Pops drain the lowest
 * bucket: one above level 1 is first split into lower levels; a level-1 bucket (a 256 ps window)
 * is counting-sorted on its last byte into a flat "bottom" array, popped front to back (windows
 * of more than 64 k events are split into level 0 instead). Buckets and the bottom keep push order
 * and equal times always share one, so ties are FIFO without storing a sequence number. Buckets
 * are chains of 32-entry chunks from a pool; event records (a generation each, for handles) come
 * from a growable array with a free stack. Nothing is allocated per event once the pools have
 * reached their peak. Each event is moved 1-3 times in typical use, 8 at most.
 *
 * Why not a heap: prototypes of implicit heaps with (time, seq, slot) stored inline reached
 * 2.9 M events/s (4-ary), 2.8 M (8-ary), 2.3 M (binary) on the hold model below: with 1 M
 * pending every pop walks ~10 levels of a 16-24 MB array, and on the 2-core AMD EPYC VM this was
 * measured on, a random access beyond ~2 MB costs 100-200 ns. The radix queue appends to and
 * streams through buckets and prefetches what it cannot stream (see evq.c).
 * Measured: `icsim bench engine` (hold model through ics_engine: 1 M pending, 50 M events,
 * uniform delays in [1 ps, 2 us]), -O2 or -O3 build: 28-40 M events/s over repeated runs, the
 * spread being the shared host's memory bandwidth (unoptimized build: ~15 M).
 *
 * Costs: push O(1); pop O(1) amortized; cancel O(1) amortized (the entry stays in place as a
 * tombstone until it is reached, or until tombstones outnumber pending events and every bucket
 * is compacted, O(n)). peek O(events in the earliest bucket). Memory: 40 bytes per pending or
 * cancelled-but-unreached event in chunks, 12 bytes per record, plus at most one partly filled
 * 1.3 KB chunk per bucket (2.6 MB) and a bottom of at most 2 x 64 k entries. */
#ifndef ICS_EVQ_H
#define ICS_EVQ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/time.h"

typedef struct ics_engine ics_engine;
typedef struct ics_evq ics_evq;

/* What an event does when it fires: fn(eng, ctx, arg). ctx is not owned by the queue. */
typedef void (*ics_event_fn)(ics_engine *eng, void *ctx, uint64_t arg);

/* A handle to one pushed event: (slot index, generation) packed in 64 bits. Using a handle
 * after its event fired or was cancelled is detected (the generation no longer matches), up to
 * generation wrap-around after 2^31 reuses of the same record. ICS_EVENT_NONE never names an
 * event. */
typedef uint64_t ics_event_id;
#define ICS_EVENT_NONE ((ics_event_id)0)

/* An event as it leaves the queue (a plain value; the queue keeps no reference to it). */
typedef struct {
    ics_time at;
    ics_event_fn fn;
    void *ctx;
    uint64_t arg;
    ics_event_id id; /* the handle push returned; already stale */
} ics_event;

/* What a pending event holds: its 40-byte entry in a bucket chunk, its slot's generation and
 * free-stack word (measured 44 B per event at 10^7 and 4 x 10^7 pending; docs/limits.md). */
#define ICS_EVQ_BYTES_PER_EVENT 48

/* Creates an empty queue. capacity_hint: the expected peak of pending events (0 if unknown);
 * only pre-sizes the record array. Transfer full: free with ics_evq_free. */
ics_evq *ics_evq_new(size_t capacity_hint);

/* Frees the queue and every pending event record; ctx pointers are not touched. NULL: no-op. */
void ics_evq_free(ics_evq *q);

/* Schedules fn(eng, ctx, arg) at time at. The queue is monotone: at must not be earlier than
 * the time of the last popped event nor than the `until` of the last ics_evq_pop_until that
 * returned false (a programming error otherwise: asserts). Amortized O(1). */
ics_event_id ics_evq_push(ics_evq *q, ics_time at, ics_event_fn fn, void *ctx, uint64_t arg);

/* Cancels a pending event. Returns true if it was pending (it will never be popped), false if
 * id is ICS_EVENT_NONE, already fired, already cancelled or was never issued. O(1) amortized. */
bool ics_evq_cancel(ics_evq *q, ics_event_id id);

/* Removes the earliest pending event (ties: the first pushed) into *out. Returns false, leaving
 * *out untouched, when the queue is empty. */
bool ics_evq_pop(ics_evq *q, ics_event *out);

/* As ics_evq_pop, but only if the earliest event's time is <= until; returns false otherwise
 * (the event stays pending). */
bool ics_evq_pop_until(ics_evq *q, ics_time until, ics_event *out);

/* Stores the earliest pending event's time in *at and returns true; false if empty. Does not
 * reorganize the queue: O(k) in the number of events sharing the earliest bucket, O(1) when
 * nothing was popped or cancelled since the last peek (pushes keep its answer). */
bool ics_evq_peek_time(ics_evq *q, ics_time *at);

/* Pending (pushed, neither popped nor cancelled) events. O(1). */
size_t ics_evq_size(const ics_evq *q);

/* Event records allocated so far: the peak of pending events plus tombstones, never shrinks. */
size_t ics_evq_capacity(const ics_evq *q);

/* Bytes held by the queue (records, bucket chunks, the queue itself). Never shrinks. */
size_t ics_evq_memory_bytes(const ics_evq *q);

#endif
