/* The host floor of stream-timed compute measurements (compute_calib.h, ics_ccal_point.floor_us).
 * Back to back on a stream, a call shorter than the host's cost of issuing it times the host:
 * on an H200 VM no cuBLASLt GEMM took less than 6.65 us and no copy less than 3.77 us, where a
 * CUDA graph's replay took 2.70 and 1.03. Such a call says nothing about the GPU, so the fit
 * compares it as max(model, floor) and launch_us is not fitted to the host.
 *
 * A floor is declared per file and kind of kernel (GEMMs, copies) from the points in the fit
 * (not held out: a cross-validation fold must not see the point it predicts), when the call
 * with the least work is both slow (at least ICS_CCAL_FLOOR_FLAT times what the model as loaded
 * gives it: a GPU's own launch gap is flat too, but the model expects it) and flat (a call with
 * at least ICS_CCAL_FLOOR_WORK times its work took at most ICS_CCAL_FLOOR_FLAT times as long).
 * The floor is the fastest call in that band: the host's rate, less its noise. */
#include "calibrate/compute_internal.h"

#include <math.h>

static double work_of(const ics_ccal_point *p)
{
    return p->gemm ? 2.0 * p->m * p->n * p->k * (p->groups > 1 ? p->groups : 1) : (double)p->bytes;
}

/* Whether p is one of the points a floor of (source, gemm) is read from. */
static bool counts(const ics_ccal_point *p, const char *source, bool gemm)
{
    return p->source == source && p->gemm == gemm && p->stream && !p->held_out;
}

/* The floor of one file's kernels of one kind, or 0. The probe is the call with the least work
 * (the most host-bound); the floor is the fastest call of the flat band around it. */
static double floor_of(const ics_ccal *c, const char *source, bool gemm)
{
    const ics_ccal_point *probe = NULL;
    for (guint i = 0; i < c->points->len; i++) {
        const ics_ccal_point *p = &g_array_index(c->points, ics_ccal_point, i);
        if (counts(p, source, gemm) &&
            (!probe || work_of(p) < work_of(probe) ||
             (work_of(p) == work_of(probe) && p->measured_us < probe->measured_us)))
            probe = p;
    }
    if (!probe ||
        !(probe->measured_us >= ICS_CCAL_FLOOR_FLAT * ics_ccal__model_us(c, &c->loaded, probe)))
        return 0;
    double band = ICS_CCAL_FLOOR_FLAT * probe->measured_us, floor = probe->measured_us;
    bool flat = false;
    for (guint i = 0; i < c->points->len; i++) {
        const ics_ccal_point *p = &g_array_index(c->points, ics_ccal_point, i);
        if (!counts(p, source, gemm) || p->measured_us > band)
            continue;
        flat |= work_of(p) >= ICS_CCAL_FLOOR_WORK * work_of(probe);
        floor = fmin(floor, p->measured_us);
    }
    /* a probe slower than the band's fastest by more than the band is an odd call (a poor
     * kernel choice for a degenerate shape), not the host's pace */
    return flat && probe->measured_us <= ICS_CCAL_FLOOR_FLAT * floor ? floor : 0;
}

void ics_ccal__set_floors(ics_ccal *c)
{
    /* the model's times are read without any floor */
    for (guint i = 0; i < c->points->len; i++)
        g_array_index(c->points, ics_ccal_point, i).floor_us = 0;
    for (guint f = 0; f < c->files->len; f++) {
        const char *src = g_ptr_array_index(c->files, f);
        double floor[2] = {floor_of(c, src, false), floor_of(c, src, true)};
        for (guint i = 0; i < c->points->len; i++) {
            ics_ccal_point *p = &g_array_index(c->points, ics_ccal_point, i);
            if (p->source == src && p->stream)
                p->floor_us = floor[p->gemm];
        }
    }
}
