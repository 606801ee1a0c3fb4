/* A channel's calendar (net_calendar.h): sorted intervals in one array, iv[head .. n) live,
 * iv[0 .. head) forgotten and reused when the array fills. Invariant: iv[head .. n) are sorted,
 * neither overlap nor touch, and each ends after the `now` of the last call. */
#include "net/net_calendar.h"

#include <glib.h>
#include <string.h>

typedef ics_cal_iv cal_iv;

void ics_cal_init(ics_cal *c)
{
    *c = (ics_cal){0};
}

void ics_cal_clear(ics_cal *c)
{
    g_free(c->iv);
    *c = (ics_cal){0};
}

/* Forgets the intervals that end at or before now: nothing that starts at or after now (every
 * arrival: see ics_cal_serve) can meet them. */
static void cal_prune(ics_cal *c, ics_time now)
{
    while (c->head < c->n && c->iv[c->head].hi <= now)
        c->head++;
    if (c->head == c->n)
        c->head = c->n = 0;
}

/* The first interval from head on that ends at or after t (binary search). */
static uint32_t cal_find(const ics_cal *c, ics_time t)
{
    uint32_t lo = c->head, hi = c->n;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (c->iv[mid].hi < t)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Makes room for one more interval: reuses the forgotten slots before head if there are any,
 * else doubles the array (every slot then holds a live interval). Returns i0 moved with it. */
static uint32_t cal_make_room(ics_cal *c, uint32_t i0)
{
    if (c->n < c->cap)
        return i0;
    if (c->head > 0) {
        memmove(c->iv, &c->iv[c->head], sizeof(cal_iv) * (c->n - c->head));
        c->n -= c->head;
        i0 -= c->head;
        c->head = 0;
    } else {
        c->cap = c->cap ? 2 * c->cap : 4;
        c->iv = g_renew(cal_iv, c->iv, c->cap);
    }
    return i0;
}

void ics_cal_mark(ics_cal *c, ics_time now, ics_time lo, ics_time hi)
{
    cal_prune(c, now);
    if (hi <= lo)
        return;
    uint32_t i0 = cal_find(c, lo);
    uint32_t i1 = i0;
    while (i1 < c->n && c->iv[i1].lo <= hi)
        i1++;
    if (i1 > i0) { /* replace iv[i0 .. i1) by their union with [lo, hi) */
        c->iv[i0] = (cal_iv){MIN(lo, c->iv[i0].lo), MAX(hi, c->iv[i1 - 1].hi)};
        memmove(&c->iv[i0 + 1], &c->iv[i1], sizeof(cal_iv) * (c->n - i1));
        c->n -= i1 - i0 - 1;
        return;
    }
    i0 = cal_make_room(c, i0);
    memmove(&c->iv[i0 + 1], &c->iv[i0], sizeof(cal_iv) * (c->n - i0));
    c->iv[i0] = (cal_iv){lo, hi};
    c->n++;
}

ics_time ics_cal_serve(ics_cal *c, ics_time now, ics_time arrive, ics_time work, ics_time *finish)
{
    g_assert(arrive >= now && work >= 0); /* else a forgotten interval might have mattered */
    cal_prune(c, now);
    uint32_t i = cal_find(c, arrive);
    ics_time t = arrive, start = -1;
    for (;;) {
        if (i < c->n && c->iv[i].lo <= t) { /* held: skip to its end */
            t = MAX(t, c->iv[i].hi);
            i++;
            continue;
        }
        if (start < 0)
            start = t;
        ics_time room = i < c->n ? c->iv[i].lo - t : work;
        ics_time take = MIN(work, room);
        t += take;
        work -= take;
        if (work == 0)
            break;
    }
    *finish = t;
    ics_cal_mark(c, now, start, t);
    return start;
}

uint32_t ics_cal_count(const ics_cal *c)
{
    return c->n - c->head;
}

void ics_cal_get(const ics_cal *c, uint32_t i, ics_time *lo, ics_time *hi)
{
    g_assert(i < ics_cal_count(c));
    *lo = c->iv[c->head + i].lo;
    *hi = c->iv[c->head + i].hi;
}

uint32_t ics_cal_capacity(const ics_cal *c)
{
    return c->cap;
}
