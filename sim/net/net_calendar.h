/* A channel's calendar: the times trains hold one channel of the packet backend, kept so that a
 * turn can be served in the free time between them, in the order turns arrive (net_packet.c).
 * Invariant: the intervals are sorted, neither overlap nor touch, and end after `now`. */
#ifndef ICS_NET_CALENDAR_H
#define ICS_NET_CALENDAR_H

#include <stdint.h>

#include "core/core.h"

/* Half-open intervals [lo, hi) of picoseconds (ics_time), held from now on. Every call takes
 * the engine's current time `now`, which never decreases from one call to the next: an
 * interval that ends at or before it is forgotten (it can no longer delay anything). Storage
 * grows only while every slot holds a live interval, so it stays within twice the most
 * intervals ever live at once (at least ICS_CAL_INLINE). n below: the intervals held.
 *
 * The struct is visible so that a channel embeds its calendar next to its other state (a
 * pointer to it cost a 64-GPU all-to-all 9% more L1 data misses); its fields are
 * net_calendar.c's alone. All zero is an empty calendar. */
typedef struct {
    ics_time lo, hi;
} ics_cal_iv;

/* Slots held in the struct itself: a channel rarely has more than one or two intervals live,
 * and reading them next to its other state saves a dependent cache miss per turn and hop. */
#define ICS_CAL_INLINE 2

typedef struct {
    ics_cal_iv *iv;        /* the slots once more than ICS_CAL_INLINE were needed, else NULL */
    uint32_t head, n, cap; /* slots [head .. n) held, sorted; [0 .. head) forgotten, reused;
                            * cap: slots of iv (0 while the inline ones serve) */
    ics_cal_iv small[ICS_CAL_INLINE]; /* the slots while iv is NULL */
} ics_cal;

/* Makes *c an empty calendar; it allocates nothing until an interval is marked. */
void ics_cal_init(ics_cal *c);
/* Frees c's storage; *c is then empty (and may be used again). */
void ics_cal_clear(ics_cal *c);

/* Marks [lo, hi) held, merged with every interval it overlaps or touches. hi <= lo marks
 * nothing. lo may lie before now (the part before now is forgotten with the rest).
 * O(log n + intervals merged), plus a move of the intervals after it. */
void ics_cal_mark(ics_cal *c, ics_time now, ics_time lo, ics_time hi);

/* Serves `work` ps (>= 0) of service in c's free time from `arrive` (>= now) on: returns when
 * service starts (the first free moment at or after arrive), sets *finish to when the work is
 * done, and marks all of [start, finish) held, the intervals it skipped included. So a train
 * that arrives first is served first, even if another reserved a later time before it came.
 * work 0: start = *finish, nothing marked. O(log n + intervals skipped). */
ics_time ics_cal_serve(ics_cal *c, ics_time now, ics_time arrive, ics_time work, ics_time *finish);

/* The intervals held as of the last call's `now` (for tests and reports): their number, and the
 * i-th in time order, 0 <= i < ics_cal_count(c). */
uint32_t ics_cal_count(const ics_cal *c);
void ics_cal_get(const ics_cal *c, uint32_t i, ics_time *lo, ics_time *hi);
/* Intervals c can hold before its storage grows (tests check the bound above). */
uint32_t ics_cal_capacity(const ics_cal *c);

#endif
