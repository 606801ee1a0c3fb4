/* Simulated time: an integer count of picoseconds.
 * Integer time keeps results exact and reproducible; int64 picoseconds covers 106 days.
 * Conversions happen at the edges only (JSON readers, reports, the SimGrid backend). */
#ifndef ICS_TIME_H
#define ICS_TIME_H

#include <stdint.h>

typedef int64_t ics_time; /* picoseconds */

#define ICS_TIME_MAX  INT64_MAX
#define ICS_PS_PER_NS INT64_C(1000)
#define ICS_PS_PER_US INT64_C(1000000)
#define ICS_PS_PER_S  INT64_C(1000000000000)

/* Time to serialize size_bytes at bw_bytes_per_s, rounded up to the next picosecond.
 * Uses a 128-bit intermediate so that size_bytes * 1e12 cannot overflow; never stores a
 * per-byte integer rate (which truncates to 0 above 1 TB/s). bw_bytes_per_s must be > 0.
 * Returns ICS_TIME_MAX if the result does not fit. */
ics_time ics_time_serialize(uint64_t size_bytes, uint64_t bw_bytes_per_s);

/* Converts a duration in (possibly fractional) nanoseconds from user input to picoseconds,
 * rounded to nearest. The caller has range-checked ns (0 <= ns <= 1e9). */
ics_time ics_time_from_ns(double ns);

/* Picoseconds to seconds / microseconds, for reports only. */
double ics_time_to_s(ics_time t);
double ics_time_to_us(ics_time t);

#endif
