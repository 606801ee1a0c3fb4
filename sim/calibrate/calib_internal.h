/* What the calibration's files share (calib.c: set-up and simulation; calib_fit.c: the fit and
 * cross-validation; calib_overlay.c: the calibrated model written out). Not the module's face. */
#ifndef ICS_CALIB_INTERNAL_H
#define ICS_CALIB_INTERNAL_H

#include <stdarg.h>

#include "calibrate/calibrate.h"

#include <cjson/cJSON.h>

/* Where the latency regime of a sweep ends and the bandwidth regime begins: the fit weighs the
 * two alike (calib.c, weigh) and refuses values that describe them worse (calib_fit.c). */
#define REGIME_BYTES (1ULL << 20)

/* The model loaded for one node count and one set of NCCL's path rules (a log's
 * NCCL_NET_GDR_LEVEL, ...; transfer: owned by the ics_calib). */
typedef struct {
    int nodes;
    ics_topo_paths paths;
    ics_hw *hw;
    ics_topo *t;
} calib_system;

/* A measured table and the communicator it is simulated on. */
typedef struct {
    int sys; /* index in systems */
    const ics_meas_table *tab;
    ics_comm *comm;         /* owned */
    ics_coll_tuning tuning; /* NCCL's defaults, launched as the log says (-g) */
} calib_table;

/* A point's call, and its last simulated time. */
typedef struct {
    ics_coll_req req;
    double sim_us;
    bool ok; /* the model could run it */
} calib_req;

struct ics_calib {
    char *model_path;
    GPtrArray *systems; /* of calib_system*, owned; [0] has the model's own node count */
    GArray *tables;     /* of calib_table */
    GArray *points;     /* of ics_calib_point */
    GArray *reqs;       /* of calib_req, parallel to points */
    const ics_net_ops *backend;
    ics_coll_tuning tuning;
    unsigned mask; /* parameters asked for */
    int max_iter;
    int gpus_per_node;
    const char *gpu_product;
    bool is_cluster;
    ics_calib_param params[ICS_CAL_COUNT];
    int sims;                                          /* simulations of every point so far */
    int runs;                                          /* of those, points actually simulated */
    void (*progress)(void *ctx, int sims, int points); /* ics_calib_opts' */
    void *progress_ctx;
    int threads;                  /* points simulated at once */
    double loaded[ICS_CAL_COUNT]; /* the model's own calibration as loaded (NAN: default) */
    double now[ICS_CAL_COUNT];    /* every parameter's value as last set (NAN: default) */
    GHashTable *memo;             /* calib_memo by calib_key: each set of values' times */
    /* where a parameter's search starts when only a move down changed the times (its value at
     * a kink, another bound taking over just above it: calib_fit.c, moves); NAN otherwise */
    double start_at[ICS_CAL_COUNT];
};

/* Every model's value of p (NAN: back to the default). */
void ics_calib__set(ics_calib *c, ics_cal_param p, double value);
/* Simulates every point not held out: sets after_us (and before_us too if `before`). A point
 * held out is not run (nothing in a fit reads it): its after_us is updated only where the memo
 * already has its time at these values. */
bool ics_calib__simulate(ics_calib *c, bool before, GError **error);
/* The same, the points held out included (a fold's prediction of them). */
bool ics_calib__simulate_held_out(ics_calib *c, GError **error);
/* The fit (calib_fit.c), from the model as loaded. */
bool ics_calib__fit(ics_calib *c, GError **error);
/* The median of an array of doubles (sorted in place); NAN when empty. For every median the
 * calibrate module reports. */
double ics_calib__median(GArray *v);
/* floor(log10(size)), at most 20. */
int ics_calib__decade(uint64_t size_bytes);

/* For both overlay writers (calib_overlay.c): five significant digits, what a fit can claim and
 * stable text; `target` relative to the directory of `from` (transfer full). */
double ics_calib__round5(double x);
char *ics_calib__relative_path(const char *from, const char *target);
/* The compute keys `now` changes of hw's base model's GPU type (and those `force`d, one flag
 * per ics_ccal_param; may be NULL), as an overlay's "gpu_types" object, or NULL when none:
 * so that either overlay writer keeps what the other calibrated (compute_overlay.c). */
cJSON *ics_calib__compute_overrides(const ics_hw *hw, const ics_hw_compute *now, const bool *force);
/* Both overlay writers' frame: a "calibration" document named "<hw's name> (<what>)" whose base
 * is hw's base model relative to path; and its provenance (the tool, the engine unless NULL,
 * what the fit read, each parameter, the median errors before and after; transfer full). */
cJSON *ics_calib__overlay_new(const ics_hw *hw, const char *path, const char *what);
void ics_calib__overlay_provenance(cJSON *doc, const char *engine, cJSON *measurements,
                                   cJSON *parameters, cJSON *before, cJSON *after);
/* Writes doc (transfer full: deleted) to path with a final newline, atomically. */
bool ics_calib__write_doc(cJSON *doc, const char *path, GError **error);

#endif
