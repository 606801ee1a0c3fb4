/* Inside the compute calibration (compute_calib.h): its state, shared by the reader
 * (compute_meas.c), the fit (compute_fit.c) and the overlay writer (compute_overlay.c). */
#ifndef ICS_COMPUTE_INTERNAL_H
#define ICS_COMPUTE_INTERNAL_H

#include "calibrate/compute_calib.h"
#include "hw/hw.h"

struct ics_ccal {
    ics_hw *hw;                 /* the model, owned */
    char *model_path;           /* as given, owned */
    const ics_hw_gpu_type *gpu; /* its GPU type (in hw) */
    ics_hw_compute loaded;      /* the compute parameters as loaded */
    GArray *points;             /* ics_ccal_point */
    GPtrArray *files;           /* char *, owned: the measurement files as given */
    ics_calib_param res[ICS_CCAL_COUNT];
};

/* Reads one measurement file's rows into c->points (the file name is c's, from c->files), or
 * the len bytes of text named path when text is not NULL. Checks the rows against c->gpu:
 * dtypes it has a peak for, its SM count. */
bool ics_ccal__read(ics_ccal *c, const char *path, const char *text, size_t len, GError **error);

/* Setting a parameter's value in a compute object. */
void ics_ccal__set(ics_hw_compute *cp, ics_ccal_param p, double v);

/* Sets every point's floor_us from the points not held out (compute_floor.c). */
void ics_ccal__set_floors(ics_ccal *c);

/* What the model gives point p with compute parameters cp on c's GPU type, in us (at least
 * p's floor_us). */
double ics_ccal__model_us(const ics_ccal *c, const ics_hw_compute *cp, const ics_ccal_point *p);

#endif
