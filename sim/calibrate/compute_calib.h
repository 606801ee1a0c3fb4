/* Calibrating a GPU type's compute model (workload/compute.h) to kernels timed on the user's GPU:
 * the GEMMs and HBM copies `icsim-validate compute` measures (docs/validate.md), read from its
 * JSON. The fitted parameters are the GPU type's compute keys (docs/hwmodel-format.md):
 * gemm_efficiency, gemm_efficiency_fp8, gemm_wave_us, memory_efficiency, launch_us. The fit
 * minimizes the relative error of every modelled time in log space, each kind of kernel and
 * each decade of time weighted alike, with GSL's nonlinear least squares inside the
 * parameters' bounds; parameters the data do not move, or do not pin down, keep the model's
 * values and are reported as not determined. The result is an overlay (kind "calibration")
 * that overrides the GPU type's compute keys; every command takes it with -s.
 *
 * A face of the calibrate module, beside calibrate.h (which fits the network to collective
 * timings). Not thread-safe; one ics_ccal per fit. */
#ifndef ICS_COMPUTE_CALIB_H
#define ICS_COMPUTE_CALIB_H

#include <stdbool.h>
#include <stdint.h>

#include <glib.h>

#include "calibrate/calibrate.h"
#include "core/core.h"
#include "hw/hw.h"

/* The JSON's "kind": what `icsim-validate compute --json` writes. */
#define ICS_CCAL_KIND "icsim-compute-measurements"
/* A row's "groups" (GEMMs at once, as a rank's experts) and "streams" (they go round-robin on;
 * default ICS_TE_COMPUTE_STREAMS) */
#define ICS_CCAL_GROUPS_MAX  4096
#define ICS_CCAL_STREAMS_MAX 64

typedef enum {
    ICS_CCAL_GEMM_EFF,     /* gemm_efficiency: bf16 and fp16 GEMMs' K loop, of the SM's peak */
    ICS_CCAL_GEMM_EFF_FP8, /* gemm_efficiency_fp8 */
    ICS_CCAL_WAVE_US,      /* gemm_wave_us: a wave of tiles' prologue and epilogue */
    ICS_CCAL_MEM_EFF,      /* memory_efficiency: share of HBM bandwidth streaming reaches */
    ICS_CCAL_LAUNCH_US,    /* launch_us: per kernel */
    ICS_CCAL_COUNT
} ics_ccal_param;

/* A parameter's JSON key, unit and the bounds the fit keeps it in (narrower than the catalog
 * reader's: efficiencies 0.05..1, times 0..50 us). */
typedef struct {
    const char *key, *unit;
    double lo, hi;
} ics_ccal_param_info;
const ics_ccal_param_info *ics_ccal_param_info_of(ics_ccal_param p);
/* A parameter's value in a GPU type's compute object, in its unit. */
double ics_ccal_value(const ics_hw_compute *cp, ics_ccal_param p);

/* One timed kernel and what the model makes of it. */
typedef struct {
    const char *source; /* the file (transfer none) */
    int index;          /* its index in the file's "rows" */
    bool gemm;          /* a GEMM (m x n x k, dtype); else a copy of `bytes` */
    ics_dtype dtype;
    int m, n, k;
    int groups, streams; /* a GEMM: `groups` of them at once on `streams` streams (the runner's
                          * --groups; ics_compute_grouped); groups 1: one */
    uint64_t bytes;
    double measured_us;
    double before_us; /* the model as loaded */
    double after_us;  /* fitted (= before_us until ics_ccal_fit) */
    double weight;
    bool held_out; /* left out of the last fit (cross-validation) */
    /* Timed back to back on a stream (the file's "timing" is "stream", or absent: every runner
     * before --graph): no call finishes faster than the host issues it. */
    bool stream;
    /* The host floor of its kind in its file (compute_floor.c), 0 where the file shows none
     * or was timed from a CUDA graph. Model and measurement are compared as
     * max(model, floor_us). */
    double floor_us;
} ics_ccal_point;

/* A stream-timed file has a host floor for a kind of kernel when its call with the least work
 * is slow (at least ICS_CCAL_FLOOR_FLAT times what the model as loaded gives it) and flat (a
 * call with at least ICS_CCAL_FLOOR_WORK times its work took at most ICS_CCAL_FLOOR_FLAT times
 * as long). The floor is the fastest call in that band (compute_floor.c). */
#define ICS_CCAL_FLOOR_WORK 4.0
#define ICS_CCAL_FLOOR_FLAT 1.25

typedef struct ics_ccal ics_ccal;

/* True if path is a JSON file of kind ICS_CCAL_KIND (its first 64 KiB are enough to say). */
bool ics_ccal_is_compute_file(const char *path);

/* Sets up a fit of model_path's GPU type to the files' rows. A file that is not this kind, a
 * row that is not a GEMM or a copy, a dtype the GPU has no peak for, or a GPU whose SM count is
 * not the model's is an error located at its file, line, column and JSON path. */
ics_ccal *ics_ccal_new(const char *model_path, int nfiles, char *const *files, GError **error);
/* The same from len bytes of text, named `name` in messages (tests, the fuzzer). */
ics_ccal *ics_ccal_new_text(const char *model_path, const char *name, const char *text, size_t len,
                            GError **error);
void ics_ccal_free(ics_ccal *c);

/* Fits the parameters the points move (each at least 0.1% of some point's time for a 20%
 * change), then puts back those known no better than +-25% and fits the rest again. */
bool ics_ccal_fit(ics_ccal *c, GError **error);

int ics_ccal_n_points(const ics_ccal *c);
const ics_ccal_point *ics_ccal_point_at(const ics_ccal *c, int i);
const ics_calib_param *ics_ccal_param_of(const ics_ccal *c, ics_ccal_param p);
const char *ics_ccal_model_name(const ics_ccal *c);
const char *ics_ccal_gpu_type_name(const ics_ccal *c);

/* The host floor of the GEMMs (gemm) or the copies among the points: the largest of their
 * files' (0: none); a fit prints it as the floor the host set. */
double ics_ccal_floor_us(const ics_ccal *c, bool gemm);

/* Median |relative error| of the GEMM points (gemm) or the copies, not held out, before or
 * after the fit; NAN if none. */
double ics_ccal_median_error(const ics_ccal *c, bool gemm, bool after);

/* Cross-validation: each fold leaves out one kind of kernel (bf16, fp16, fp8 GEMMs, copies;
 * when there are several) or one decade of measured time, fits the rest, and predicts it.
 * Appends an ics_calib_fold per fold; the full fit is restored afterwards. */
bool ics_ccal_cross_validate(ics_ccal *c, GArray *folds, GError **error);

/* Writes the overlay: kind "calibration", the base model relative to it, "gpu_types" with the
 * GPU type's determined compute keys, and the provenance. Atomic. */
bool ics_ccal_write_overlay(const ics_ccal *c, const char *path, GError **error);

#endif
