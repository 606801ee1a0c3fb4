/* Simulated time: an integer count of picoseconds.
 * Integer time keeps results exact and reproducible; int64 picoseconds covers 106 days, of which
 * a simulation may use the first half, ICS_TIME_LIMIT (53 days). Conversions happen at the edges
 * only (JSON readers, reports, the SimGrid backend). */
#ifndef ICS_TIME_H
#define ICS_TIME_H

#include <glib.h>
#include <stdint.h>

typedef int64_t ics_time; /* picoseconds */

#define ICS_TIME_MAX  INT64_MAX
#define ICS_PS_PER_NS INT64_C(1000)
#define ICS_PS_PER_US INT64_C(1000000)
#define ICS_PS_PER_S  INT64_C(1000000000000)

/* The simulator's horizon: 2^62 ps, 53.4 days. Events happen before it (the engine refuses one
 * at or past it and the run ends with an error, engine.h), and every duration computed from the
 * user's input (a transfer, a FLOP time, a trace's duration) saturates at it, so a time plus a
 * duration always fits in int64 and a duration of ICS_TIME_LIMIT reads "does not end within the
 * horizon". docs/limits.md. */
#define ICS_TIME_LIMIT (INT64_C(1) << 62)
/* ... as messages name it */
#define ICS_TIME_LIMIT_TEXT "53.4 days (2^62 ps)"

/* a + b for non-negative times and durations, saturated at ICS_TIME_LIMIT: sums of several
 * durations stay below the horizon or read as past it, never wrap. (Inline: the fluid and
 * packet engines add times in their innermost loops.) */
static inline ics_time ics_time_add(ics_time a, ics_time b)
{
    g_assert(a >= 0 && b >= 0);
    return a >= ICS_TIME_LIMIT || b >= ICS_TIME_LIMIT - a ? ICS_TIME_LIMIT : a + b;
}

/* d x n for a non-negative duration, saturated at ICS_TIME_LIMIT (n packets of d each). */
static inline ics_time ics_time_mul(ics_time d, uint64_t n)
{
    g_assert(d >= 0);
    if (d == 0 || n == 0)
        return 0;
    return n >= (uint64_t)(ICS_TIME_LIMIT / d) ? ICS_TIME_LIMIT : d * (ics_time)n;
}

/* Seconds (a double from a cost model: possibly huge, infinite or NaN) to picoseconds, rounded
 * to nearest and saturated at ICS_TIME_LIMIT; NaN and negatives give 0. */
ics_time ics_time_from_s(double s);

/* Time to serialize size_bytes at bw_bytes_per_s, rounded up to the next picosecond.
 * Uses a 128-bit intermediate so that size_bytes * 1e12 cannot overflow; never stores a
 * per-byte integer rate (which truncates to 0 above 1 TB/s). bw_bytes_per_s must be > 0.
 * Saturates at ICS_TIME_LIMIT (a TiB at a kilobyte per second takes longer). */
ics_time ics_time_serialize(uint64_t size_bytes, uint64_t bw_bytes_per_s);

/* Converts a duration in (possibly fractional) nanoseconds from user input to picoseconds,
 * rounded to nearest. The caller has range-checked ns (0 <= ns <= 1e9). */
ics_time ics_time_from_ns(double ns);

/* Picoseconds to seconds / microseconds, for reports only. */
double ics_time_to_s(ics_time t);
double ics_time_to_us(ics_time t);

#endif
