/* A channel's calendar (net_calendar.h): sorted intervals in one array (the struct's own slots,
 * or the heap's once they are too few), slots[head .. n) live, slots[0 .. head) forgotten and
 * reused when the array fills. Invariant: slots[head .. n) are sorted, neither overlap nor
 * touch, and each ends after the `now` of the last call. */
#include "net/net_calendar.h"

#include <glib.h>
#include <string.h>

typedef ics_cal_iv cal_iv;

/* The slots in use: the struct's own until they were too few. */
static cal_iv *cal_slots(ics_cal *c)
{
    return c->iv ? c->iv : c->small;
}

static const cal_iv *cal_slots_const(const ics_cal *c)
{
    return c->iv ? c->iv : c->small;
}

static uint32_t cal_cap(const ics_cal *c)
{
    return c->iv ? c->cap : ICS_CAL_INLINE;
}

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
    const cal_iv *iv = cal_slots_const(c);
    while (c->head < c->n && iv[c->head].hi <= now)
        c->head++;
    if (c->head == c->n)
        c->head = c->n = 0;
}

/* The first interval from head on that ends at or after t (binary search). */
static uint32_t cal_find(const ics_cal *c, ics_time t)
{
    const cal_iv *iv = cal_slots_const(c);
    uint32_t lo = c->head, hi = c->n;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (iv[mid].hi < t)
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
    if (c->n < cal_cap(c))
        return i0;
    cal_iv *iv = cal_slots(c);
    if (c->head > 0) {
        memmove(iv, &iv[c->head], sizeof(cal_iv) * (c->n - c->head));
        c->n -= c->head;
        i0 -= c->head;
        c->head = 0;
    } else if (c->iv) {
        c->cap *= 2;
        c->iv = g_renew(cal_iv, c->iv, c->cap);
    } else { /* the struct's slots are full: to the heap */
        c->cap = 2 * ICS_CAL_INLINE;
        c->iv = g_new(cal_iv, c->cap);
        memcpy(c->iv, c->small, sizeof(c->small));
    }
    return i0;
}

/* Replaces iv[i0 .. i1) (i1 > i0) by one interval from lo to hi, their union. */
static void cal_merge(ics_cal *c, uint32_t i0, uint32_t i1, ics_time lo, ics_time hi)
{
    cal_iv *iv = cal_slots(c);
    iv[i0] = (cal_iv){MIN(lo, iv[i0].lo), MAX(hi, iv[i1 - 1].hi)};
    if (i1 - i0 > 1 && i1 < c->n) /* most merge one interval: nothing to move, no call */
        memmove(&iv[i0 + 1], &iv[i1], sizeof(cal_iv) * (c->n - i1));
    c->n -= i1 - i0 - 1;
}

/* Inserts [lo, hi) at i0, where it overlaps and touches nothing. */
static void cal_insert(ics_cal *c, uint32_t i0, ics_time lo, ics_time hi)
{
    i0 = cal_make_room(c, i0);
    cal_iv *iv = cal_slots(c); /* after: making room may move the slots */
    if (i0 < c->n)
        memmove(&iv[i0 + 1], &iv[i0], sizeof(cal_iv) * (c->n - i0));
    iv[i0] = (cal_iv){lo, hi};
    c->n++;
}

/* Marks [lo, hi) (lo < hi) held, given i0, the first interval that ends at or after lo, and
 * i1, the first from i0 on that starts after hi: those between overlap or touch it. */
static void cal_hold(ics_cal *c, uint32_t i0, uint32_t i1, ics_time lo, ics_time hi)
{
    if (i1 > i0)
        cal_merge(c, i0, i1, lo, hi);
    else
        cal_insert(c, i0, lo, hi);
}

void ics_cal_mark(ics_cal *c, ics_time now, ics_time lo, ics_time hi)
{
    cal_prune(c, now);
    if (hi <= lo)
        return;
    uint32_t i0 = cal_find(c, lo);
    const cal_iv *iv = cal_slots_const(c);
    uint32_t i1 = i0;
    while (i1 < c->n && iv[i1].lo <= hi)
        i1++;
    cal_hold(c, i0, i1, lo, hi);
}

/* Marks what it served itself rather than through ics_cal_mark: the walk already knows where
 * [start, finish) goes (a turn serves at every hop, and ics_cal_mark's second prune, search
 * and memmove calls were half of the calendar's instructions). */
ics_time ics_cal_serve(ics_cal *c, ics_time now, ics_time arrive, ics_time work, ics_time *finish)
{
    g_assert(arrive >= now && work >= 0); /* else a forgotten interval might have mattered */
    cal_prune(c, now);
    const cal_iv *iv = cal_slots_const(c);
    uint32_t i = cal_find(c, arrive), i0 = i;
    ics_time t = arrive, start = -1;
    for (;;) {
        if (i < c->n && iv[i].lo <= t) { /* held: skip to its end */
            t = MAX(t, iv[i].hi);
            i++;
            continue;
        }
        if (start < 0) {
            start = t;
            /* the first interval ending at or after start: the one skipped to reach it */
            i0 = i > i0 ? i - 1 : i0;
        }
        ics_time room = i < c->n ? iv[i].lo - t : work;
        ics_time take = MIN(work, room);
        t += take;
        work -= take;
        if (work == 0)
            break;
    }
    *finish = t;
    if (t > start) /* intervals i0 .. i were skipped, iv[i] touches t if it starts there */
        cal_hold(c, i0, i < c->n && iv[i].lo <= t ? i + 1 : i, start, t);
    return start;
}

uint32_t ics_cal_count(const ics_cal *c)
{
    return c->n - c->head;
}

void ics_cal_get(const ics_cal *c, uint32_t i, ics_time *lo, ics_time *hi)
{
    g_assert(i < ics_cal_count(c));
    *lo = cal_slots_const(c)[c->head + i].lo;
    *hi = cal_slots_const(c)[c->head + i].hi;
}

uint32_t ics_cal_capacity(const ics_cal *c)
{
    return cal_cap(c);
}
