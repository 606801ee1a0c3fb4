/* Cross-validation: whether a fit predicts or only fits. Each fold leaves out the points of one
 * operation (when the measurements hold several) or of one size decade, fits the rest, and
 * compares the left-out points' errors with the loaded values and with the fitted ones. */
#include "calibrate/calib_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

static double median_held_out(const ics_calib *c, bool after, int *n)
{
    GArray *e = g_array_new(FALSE, FALSE, sizeof(double));
    for (guint i = 0; i < c->points->len; i++) {
        const ics_calib_point *p = &g_array_index(c->points, ics_calib_point, i);
        if (!p->held_out)
            continue;
        double x = fabs((after ? p->after_us : p->before_us) / p->measured_us - 1);
        g_array_append_val(e, x);
    }
    *n = (int)e->len;
    double m = ics_calib__median(e);
    g_array_free(e, TRUE);
    return m;
}

/* Holds out the points of operation `op` (decade < 0) or of size decade `decade`. */
static void hold_out(ics_calib *c, int op, int decade)
{
    for (guint i = 0; i < c->points->len; i++) {
        ics_calib_point *p = &g_array_index(c->points, ics_calib_point, i);
        p->held_out = decade < 0 ? (int)p->op == op : ics_calib__decade(p->size_bytes) == decade;
    }
}

/* Fits without the held-out points and records the fold; false on a simulation failure. */
static bool fold(ics_calib *c, const char *what, GArray *out, GError **error)
{
    ics_calib_fold f = {0};
    g_strlcpy(f.what, what, sizeof f.what);
    int left = 0;
    for (guint i = 0; i < c->points->len; i++)
        left += !g_array_index(c->points, ics_calib_point, i).held_out;
    if (left == 0)
        return true; /* nothing to fit on */
    if (!ics_calib__fit(c, error) || !ics_calib__simulate_held_out(c, error))
        return false;
    f.median_before = median_held_out(c, false, &f.n);
    f.median_after = median_held_out(c, true, &f.n);
    if (f.n > 0)
        g_array_append_val(out, f);
    return true;
}

static const char *decade_name(int d, char *buf, size_t len)
{
    static const char *const units[] = {"B", "KB", "MB", "GB", "TB", "PB", "EB"};
    snprintf(buf, len, "sizes %s%s..%s%s", d % 3 == 0 ? "1 " : (d % 3 == 1 ? "10 " : "100 "),
             units[MIN(d / 3, 6)], (d + 1) % 3 == 0 ? "1 " : ((d + 1) % 3 == 1 ? "10 " : "100 "),
             units[MIN((d + 1) / 3, 6)]);
    return buf;
}

bool ics_calib_cross_validate(ics_calib *c, GArray *out, GError **error)
{
    bool seen_op[ICS_COLL_OP_COUNT] = {false}, seen_dec[21] = {false};
    int ops = 0;
    for (guint i = 0; i < c->points->len; i++) {
        const ics_calib_point *p = &g_array_index(c->points, ics_calib_point, i);
        ops += !seen_op[p->op];
        seen_op[p->op] = true;
        seen_dec[ics_calib__decade(p->size_bytes)] = true;
    }
    bool ok = true;
    char buf[64];
    for (int op = 0; ok && ops > 1 && op < ICS_COLL_OP_COUNT; op++)
        if (seen_op[op]) {
            snprintf(buf, sizeof buf, "op %s", ics_coll_op_name((ics_coll_op)op));
            hold_out(c, op, -1);
            ok = fold(c, buf, out, error);
        }
    for (int d = 0; ok && d < 21; d++)
        if (seen_dec[d]) {
            hold_out(c, -1, d);
            ok = fold(c, decade_name(d, buf, sizeof buf), out, error);
        }
    hold_out(c, -1, 99);                   /* none */
    return ok && ics_calib__fit(c, error); /* the full fit again: deterministic, the same */
}
