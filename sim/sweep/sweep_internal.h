/* What the sweep's files share: the study as plain C (sweep_read.c fills it), a
 * configuration's settings merged from the base and its axes' values (sweep_config.c), the
 * model with a configuration's overrides (sweep_model.c). Nothing outside sim/sweep/ includes
 * this. */
#ifndef ICS_SWEEP_INTERNAL_H
#define ICS_SWEEP_INTERNAL_H

#include "sweep/sweep.h"

#include "collectives/comm.h"
#include "hw/hw.h"
#include "replay/replay.h"
#include "report/report.h"
#include "trace/trace.h"
#include "workload/workload.h"

/* What one axis value (or the base) sets; every field has an "unset" value, so that values
 * merge: later axes override earlier ones, and everything overrides the base. */
typedef struct {
    char *system;      /* a model path (absolute or relative to the working directory) */
    char *patch;       /* JSON merge patch (RFC 7386) on the model file's text, or NULL */
    int nodes;         /* 0: unset */
    int gpus_per_node; /* 0: unset */
    char *fail;        /* failure specs (topo.h), or NULL */
    int nics;          /* compute NICs kept per node; 0: unset */
    char *engine;      /* "analytic", "packet", or NULL */
    char *nccl_algo;   /* NCCL_ALGO, NCCL_PROTO as NCCL reads them, or NULL */
    char *nccl_proto;
    int nvls, collnet;              /* NCCL_NVLS_ENABLE, NCCL_COLLNET_ENABLE: 0/1, -1 unset */
    int min_channels, max_channels; /* NCCL_MIN/MAX_NCHANNELS; -1 unset */
    int tp, pp, dp, vp, mbs, gbs;   /* training studies: the layout's sizes; 0 unset */
} ics_sweep_set;

typedef struct {
    char *name;
    int n;
    char **labels;
    ics_sweep_set *values;
} ics_sweep_axis;

struct ics_sweep {
    bool train;       /* a training study (a scenario per configuration) */
    ics_trace *trace; /* a trace study: the trace every configuration replays (read-only) */
    char *trace_name; /* its file's name, the rows' `model` */
    bool step;        /* train or trace: a step per configuration, else a collective sweep */
    ics_train_scenario scenario; /* training: the base scenario (its model and layout) */
    char *path, *name;
    char fingerprint[17]; /* of the study's JSON, every row carries it: resuming checks it */
    ics_sweep_set base;
    /* the collective sweep */
    ics_coll_op op;
    uint64_t *sizes;
    int nsizes;
    int dtype_bytes;
    char *dtype;
    int root;
    ics_coll_plan plan;
    int naxes;
    ics_sweep_axis *axes;
    int nconfigs;
    int *choice; /* nconfigs x naxes: the value index of each axis */
};

/* A configuration's settings: the base, then each axis's value in axis order (transfer full:
 * clear with ics_sweep_set_clear). */
void ics_sweep_config(const ics_sweep *s, int c, ics_sweep_set *out);
void ics_sweep_set_clear(ics_sweep_set *set);
/* Copies what src sets over dst (patches are merged, src's keys winning). */
void ics_sweep_set_merge(ics_sweep_set *dst, const ics_sweep_set *src);

/* The model of a configuration: `system` with `patch` merged into its file and `nodes` (0: the
 * file's). Relative paths inside the file stay relative to its directory. NULL and *error when
 * the merged model does not load. Transfer full. */
ics_hw *ics_sweep_model_load(const char *system, const char *patch, int nodes, GError **error);
/* RFC 7386: patch (JSON text) merged into base (JSON text); transfer full, NULL if either does
 * not parse. */
char *ics_sweep_merge_patch(const char *base, const char *patch);

/* What every row of configuration c starts with: "c,label,..." and "{"config": c, "axes":
 * {...}" (sweep_point.c; resuming compares it). Either GString may be NULL. */
void ics_sweep_row_keys(const ics_sweep *s, int c, GString *csv, GString *json);

/* One step of a training or trace study: what the row says (sweep_train.c writes it). */
typedef struct {
    const char *what;  /* the model's name, or the trace file's */
    bool layout_known; /* a training study: the layout, tokens and FLOPs are known */
    ics_layout layout;
    int nodes, gpus;
    ics_replay_result res;
    double step_s, tokens_per_s, tflops, mfu;
    double memory_gb; /* a training study: per GPU at the peak stage (workload/memory.h) */
    double parts[ICS_REPORT_STEP_NPARTS]; /* the critical rank's, seconds (report.h's order) */
} ics_sweep_step;

/* Replays tr on t as `icsim train` does, under the configuration's engine and tuning and the
 * base scenario's host (its host_launch_us, else the default); fills res, step_s and parts.
 * False and *error if the replay refuses the trace or cannot finish. */
bool ics_sweep_step_replay(const ics_sweep *s, const ics_sweep_set *set, const ics_trace *tr,
                           const ics_topo *t, ics_sweep_step *p, GError **error);
/* The row of a step (error: why it has none; unknown figures are empty fields), as
 * ics_sweep_run_config returns rows. */
void ics_sweep_step_row(const ics_sweep *s, int c, const ics_sweep_step *p, const char *error,
                        char **csv, char **json);
/* The system a configuration runs on, as its run builds it (its node count fitted to the job):
 * a collective sweep's (sweep_point.c), a training study's (sweep_train.c), a trace study's
 * (sweep_trace.c). NULL with *error where it cannot be built. */
ics_hw *ics_sweep_config_system(const ics_sweep *s, const ics_sweep_set *set, ics_topo **t,
                                GError **error);
ics_hw *ics_sweep_train_system(const ics_sweep *s, const ics_sweep_set *set, ics_topo **t,
                               GError **error);
ics_hw *ics_sweep_trace_system(const ics_sweep *s, const ics_sweep_set *set, ics_topo **t,
                               GError **error);

/* A training study's configuration c (sweep_train.c): its one row, as ics_sweep_run_config. */
void ics_sweep_run_train(const ics_sweep *s, int c, char **csv, char **json);
/* A trace study's configuration c (sweep_trace.c): the trace replayed on its system. */
void ics_sweep_run_trace(const ics_sweep *s, int c, char **csv, char **json);
/* The model of a configuration with its failures and NIC count applied and the path rules of its
 * nccl_conf (sweep_point.c): NULL
 * and *error when the model does not load or refuses them. *t transfer full. */
ics_hw *ics_sweep_build_system(const ics_sweep_set *set, int nodes, ics_topo **t, GError **error);
/* The tuning a configuration's NCCL variables give over the system's own settings (hw's
 * nccl_conf; sweep_point.c). */
void ics_sweep_tuning(const ics_sweep_set *set, const ics_hw *hw, ics_coll_tuning *tu);
/* The number text the rows carry ("%.3f", C locale; sweep_point.c). */
void ics_sweep_num(GString *out, double v, const char *format);

/* CSV and JSON text of one field (sweep_out.c). */
void ics_sweep_csv_field(GString *out, const char *s);
void ics_sweep_json_string(GString *out, const char *s);

#endif
