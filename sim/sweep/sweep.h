/* What-if studies (docs/whatif.md, "Studies"): a base (a hardware model and a collective sweep,
 * a training scenario, or a trace to replay) and axes to vary (models, overrides of model values,
 * node counts, failures, NCCL variables, engines). The product of the axes, or a listed subset,
 * gives the configurations; each runs on its own model, topology and communicator, so
 * configurations run in parallel, and every size of a configuration is a point: one CSV row and one
 * JSON row. This is the sweep module's face. Invariant: a row's bytes depend only on the study and
 * its point, never on the thread count, the process count or what ran before, so outputs are
 * byte-identical however they were produced and a run can resume where an earlier one stopped. */
#ifndef ICS_SWEEP_H
#define ICS_SWEEP_H

#include <stdbool.h>
#include <stdint.h>

#include <glib.h>

#include "core/core.h"

typedef struct ics_sweep ics_sweep;

/* Reads a study file (format in docs/whatif.md). NULL and *error with
 * "file:line:col: $.path: expected ..., got ..." on bad input. Paths in the study (the system,
 * models of a `system` axis) are relative to the study file. Nothing is loaded or simulated:
 * a configuration's model is built when it runs. Transfer full. */
ics_sweep *ics_sweep_load(const char *path, GError **error);
void ics_sweep_free(ics_sweep *s); /* NULL: no-op */

const char *ics_sweep_name(const ics_sweep *s);
/* Configurations (one value of every axis) and points per configuration (the sizes; 1 for a
 * training or trace study: a step). */
int ics_sweep_nconfigs(const ics_sweep *s);
int ics_sweep_nsizes(const ics_sweep *s);
uint64_t ics_sweep_size(const ics_sweep *s, int i); /* requested bytes, as -b/-e/-f give them */
int ics_sweep_naxes(const ics_sweep *s);
const char *ics_sweep_axis_name(const ics_sweep *s, int axis);
/* The label of axis `axis`'s value in configuration c (transfer none). */
const char *ics_sweep_label(const ics_sweep *s, int c, int axis);

/* The CSV header line, newline-terminated (transfer full). Columns: config, study (a
 * fingerprint of the study file's content: resuming takes only rows of the same study), one per
 * axis, then system, nodes, ranks, op, size_bytes, count, time_us, algbw_gbps, busbw_gbps,
 * algo, proto, channels, error. */
char *ics_sweep_csv_header(const ics_sweep *s);

/* Runs configuration c and returns its rows, one line per size, as CSV (*csv) and as JSON
 * objects one per line (*json); transfer full. Never fails: a configuration that cannot be
 * built or run (a failure spec the model refuses, overrides that break the model, a tuning no
 * algorithm runs under) gets rows whose `error` says why and whose figures are empty. Safe to
 * call from several threads at once. */
void ics_sweep_run_config(const ics_sweep *s, int c, char **csv, char **json);

/* Who computes what when several processes share a study (MPI: sweep_mpi.c in the CLI). A
 * process computes the configurations `mine` accepts; the writer writes every row, in order,
 * fetching those computed elsewhere through `fetch`; a process that does not write hands its
 * rows to `give` in increasing order. `start` tells every process where the writer's files
 * resume (called once, collectively). NULL: one process does everything. */
typedef struct {
    bool writer;
    bool (*mine)(void *ctx, int c);
    void (*fetch)(void *ctx, int c, char **csv, char **json); /* writer: transfer full */
    void (*give)(void *ctx, int c, const char *csv, const char *json);
    int (*start)(void *ctx, int first); /* the writer's first, to everyone */
    void *ctx;
} ics_sweep_split;

typedef struct {
    int threads;           /* worker threads, >= 1 */
    const char *csv_path;  /* the rows as CSV (header first); NULL: none */
    const char *json_path; /* the rows as JSON lines; NULL: none */
    bool restart;          /* ignore rows already in the files: start over */
    bool progress;         /* a progress line with an ETA on stderr (when it is a terminal) */
    const ics_sweep_split *split; /* NULL: this process runs the whole study */
} ics_sweep_opts;

/* Runs the study into the files. Rows already there from an interrupted run of the same study
 * are kept and their configurations skipped (unless restart); a file holding rows of another
 * study is refused (ICS_ERROR_INPUT) before anything runs. Each configuration's rows reach
 * both files at once, in configuration order whatever the threads. False and *error when a
 * file cannot be read, written or resumed. *done (may be NULL): configurations run now;
 * *skipped: configurations found done. */
bool ics_sweep_run(const ics_sweep *s, const ics_sweep_opts *o, int *done, int *skipped,
                   GError **error);

/* The rows of a run (the CSV text ics_sweep_run wrote) as an SVG line chart: bus bandwidth
 * against size on a log axis, one line per configuration named by its labels; rows with an
 * error are left out. False and *error (ICS_ERROR_INPUT) if the rows are not this study's. */
bool ics_sweep_svg(const ics_sweep *s, const char *csv, GString *out, GError **error);

#endif
