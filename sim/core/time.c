/* Serialization arithmetic and unit conversions for ics_time (picoseconds). */
#include "core/time.h"

#include <math.h>

#include <glib.h>

ics_time ics_time_serialize(uint64_t size_bytes, uint64_t bw_bytes_per_s)
{
    /* in 64 bits when it fits (sizes up to ~18 MB): the same quotient, without the 128-bit
     * division's library call, which was 4% of a packet-backend training step */
    uint64_t n64;
    if (!__builtin_mul_overflow(size_bytes, (uint64_t)ICS_PS_PER_S, &n64) &&
        !__builtin_add_overflow(n64, bw_bytes_per_s - 1, &n64)) {
        uint64_t q = n64 / bw_bytes_per_s;
        return q > (uint64_t)ICS_TIME_LIMIT ? ICS_TIME_LIMIT : (ics_time)q;
    }
    unsigned __int128 num = (unsigned __int128)size_bytes * (uint64_t)ICS_PS_PER_S;
    unsigned __int128 q = (num + bw_bytes_per_s - 1) / bw_bytes_per_s;
    if (q > (unsigned __int128)ICS_TIME_LIMIT)
        return ICS_TIME_LIMIT;
    return (ics_time)q;
}

ics_time ics_time_from_s(double s)
{
    double ps = s * (double)ICS_PS_PER_S;
    if (!(ps > 0)) /* NaN too */
        return 0;
    return ps >= (double)ICS_TIME_LIMIT ? ICS_TIME_LIMIT : (ics_time)llround(ps);
}

ics_time ics_time_from_ns(double ns)
{
    return (ics_time)llround(ns * (double)ICS_PS_PER_NS);
}

double ics_time_to_s(ics_time t)
{
    return (double)t / (double)ICS_PS_PER_S;
}

double ics_time_to_us(ics_time t)
{
    return (double)t / (double)ICS_PS_PER_US;
}
