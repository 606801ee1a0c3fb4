/* Calibration: fitting a hardware model's free parameters (hw.h: ics_cal_param) to measured
 * collective timings, so that the model predicts what was not measured. The measurements are
 * nccl-tests logs or the validation runner's JSON (meas.h); the fit minimizes the relative
 * error of every simulated time in log space, each size decade of each table weighted alike,
 * with GSL's trust-region nonlinear least squares inside the parameters' physical bounds.
 * Parameters the data do not determine (no small sizes: no latency) keep their defaults and
 * are reported as such. docs/validate.md and docs/cli.md ("icsim calibrate") say how to use it.
 *
 * This is the calibrate module's face. Not thread-safe; one ics_calib per fit. */
#ifndef ICS_CALIBRATE_H
#define ICS_CALIBRATE_H

#include <stdbool.h>
#include <stdint.h>

#include <glib.h>

#include "calibrate/meas.h"
#include "collectives/comm.h"
#include "hw/hw.h"

typedef struct {
    const char *engine; /* network backend, NULL: analytic */
    unsigned params;    /* parameters to fit, a bit per ics_cal_param; 0: all of them */
    int max_iter;       /* solver iterations per fit, 0: 100 */
    /* called after each simulation of every point, from the calling thread: the simulations so
     * far (a fit takes tens, cross-validation a fit per fold) and the points; NULL: none */
    void (*progress)(void *ctx, int sims, int points);
    void *progress_ctx;
} ics_calib_opts;

/* One measured time and what the model makes of it. */
typedef struct {
    int table;          /* index in the ics_meas */
    const char *source; /* the table's file (transfer none) */
    int line;           /* the row's line in a log, 0 for JSON */
    ics_coll_op op;
    int nranks;
    uint64_t size_bytes;
    double measured_us;
    double before_us; /* with the model's values as loaded */
    double after_us;  /* with the fitted values (= before_us until ics_calib_fit) */
    double weight;    /* in the fit: each table, each of its regimes (below and from 1 MiB) and
                         each size decade within a regime weigh alike */
    bool held_out;    /* left out of the last fit (cross-validation) */
} ics_calib_point;

/* What became of one parameter. */
typedef struct {
    bool candidate;   /* asked for and relevant */
    bool determined;  /* the data fix it: fitted, written to the overlay */
    double before;    /* in effect before (loaded or default) */
    double after;     /* fitted; = before when not determined */
    double rel_sigma; /* relative standard error of the fitted value (from the Jacobian) */
    const char *why;  /* when not determined: why (static) */
} ics_calib_param;

typedef struct ics_calib ics_calib;

/* Sets up a fit of model_path (a node, cluster or calibration file) to every table of m
 * (transfer none; must outlive the ics_calib). Each table gets a communicator of its rank
 * count and ranks per node; a table the model cannot hold (more ranks than GPUs, another GPU
 * type, an operation the model cannot run) is an error naming the table's file and line. Every
 * point is simulated once with the model as loaded ("before"). Transfer full. */
ics_calib *ics_calib_new(const char *model_path, const ics_meas *m, const ics_calib_opts *o,
                         GError **error);
void ics_calib_free(ics_calib *c);

/* Fits the parameters: first which of them the points move at all, then the fit, then those
 * the fit cannot pin down (a relative standard error over 10%, or two that trade off) are
 * put back to their defaults one by one and the rest fitted again. Fills every point's
 * after_us and every parameter's result. */
bool ics_calib_fit(ics_calib *c, GError **error);

int ics_calib_n_points(const ics_calib *c);
const ics_calib_point *ics_calib_point_at(const ics_calib *c, int i);
const ics_calib_param *ics_calib_param_of(const ics_calib *c, ics_cal_param p);
/* The model's name and the path of the base model an overlay names (transfer none). */
const char *ics_calib_model_name(const ics_calib *c);

/* Median |relative error| of the points in [lo, hi) bytes (after: fitted, else before), over
 * points not held out; NAN if none. */
double ics_calib_median_error(const ics_calib *c, uint64_t lo, uint64_t hi, bool after);

/* Cross-validation: how well a fit predicts what it did not see. Each fold leaves out one
 * operation (when the tables hold several) or one size decade, fits the rest, and measures the
 * left-out points' errors before and after. The model's own fit is restored afterwards. */
typedef struct {
    char what[64];        /* "op all_gather", "sizes 1 MiB..10 MiB" */
    int n;                /* points left out */
    double median_before; /* their median |error| with the loaded values */
    double median_after;  /* ... with values fitted without them */
} ics_calib_fold;
/* Appends one ics_calib_fold per fold to out (an array of ics_calib_fold). */
bool ics_calib_cross_validate(ics_calib *c, GArray *out, GError **error);

/* Predicts c's points with the values `fitted` determined (its other parameters as c's model
 * has them): sets every point's after_us. How a fit on some measurements carries to others. */
bool ics_calib_predict_with(ics_calib *c, const ics_calib *fitted, GError **error);

/* Writes the calibrated model as an overlay (docs/hwmodel-format.md, "Calibration"): kind
 * "calibration", the base model by its path relative to the overlay, the determined values,
 * and the provenance: the measurements, each parameter's before/after and standard error, the
 * residuals. Atomic: a temporary file renamed into place. */
bool ics_calib_write_overlay(const ics_calib *c, const char *path, GError **error);

#endif
