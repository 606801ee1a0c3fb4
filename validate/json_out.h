/* json_out.h: the JSON files icsim-validate writes. A collective run uses the schema of the
 * measurement files in validate/data/nccl/ (id, source_desc, date, hardware, nccl_version,
 * env, command, collective, kernel, kernel_params, n_rows, rows[]); a p2p run writes a
 * "p2p_matrix"; a compute run, the "icsim-compute-measurements" `icsim calibrate` fits the
 * compute model to. Numbers are rounded as the table prints them, so "raw" and the fields agree.
 * cJSON stays inside json_out.c: callers get text. */
#ifndef ICSV_JSON_OUT_H
#define ICSV_JSON_OUT_H

#include "icsv.h"

#include <glib.h>

typedef struct icsv_coll_report {
    const char *hostname;
    const char *date_iso; /* ISO 8601, e.g. "2026-02-03T10:11:12Z" */
    const icsv_hw *hw;
    const char *nccl_version; /* "2.27.3"; NULL writes null */
    const char *command;      /* argv joined */
    icsv_op op;
    const char *kernel;        /* "icsim-simple-ring", "icsim-direct", "nccl", "icsim-nvls" ... */
    icsv_kernel_params params; /* fields that are 0 do not apply and are written as null */
    const icsv_row *rows;
    size_t n_rows;
} icsv_coll_report;

typedef struct icsv_p2p_report {
    const icsv_hw *hw;
    const double *uni_gbps, *bi_gbps, *lat_us; /* ngpus x ngpus, row-major, [from][to] */
    const char *copy;                          /* "sm" or "ce" */
    uint64_t bytes;                            /* per copy */
} icsv_p2p_report;

/* The compute mode's measurements for `icsim calibrate` (sim/calibrate/compute_meas.c reads
 * them; the keys are that reader's contract): kind "icsim-compute-measurements", version 1,
 * command, hardware {gpu, sms, cc "9.0", clock_mhz (null when unknown), memory_gbytes}, and rows:
 * {kernel "gemm", dtype "bf16"|"fp16"|"fp8", m, n, k, time_us} or {kernel "copy", bytes,
 * time_us}, time_us as the table prints it. */
typedef struct icsv_compute_report {
    const char *command; /* argv joined */
    const icsv_compute_hw *hw;
    const icsv_compute_row *rows; /* every time_us > 0 */
    size_t n_rows;
    bool graph; /* timed as CUDA graph replays (--graph): "timing": "graph", else "stream" */
} icsv_compute_report;

#define ICSV_COMPUTE_KIND         "icsim-compute-measurements"
#define ICSV_COMPUTE_JSON_VERSION 1

/* The report's id: "<host>_<n>gpu_<collective>_<kernel>_<yyyymmdd>", lower case, characters
 * other than [a-z0-9] as '_'. Transfer full: g_free. */
char *icsv_json_coll_id(const icsv_coll_report *r);

/* The documents, pretty-printed, ending in a newline. Transfer full: g_free. */
char *icsv_json_coll_text(const icsv_coll_report *r);
char *icsv_json_p2p_text(const icsv_p2p_report *r);
char *icsv_json_compute_text(const icsv_compute_report *r);

/* Writes text to path atomically (a temporary file renamed over it). False with a GError
 * "PATH: reason" when it cannot. */
bool icsv_json_save(const char *path, const char *text, GError **err);
/* What every runner does with its report: saves text (transfer full) to path, then says so on
 * stdout ("# wrote PATH"), or the reason on stderr; false if it could not. */
bool icsv_json_emit(const char *path, char *text);

/* "icsim-validate 0.1.0 on HOST". Transfer full: g_free. */
char *icsv_source_desc(const char *hostname);

#endif /* ICSV_JSON_OUT_H */
