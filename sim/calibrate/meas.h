/* Measured collective timings for `icsim calibrate`: nccl-tests stdout as users keep it (every
 * layout since 2017, noise and all) and the repository's JSON measurement files, read into
 * plain tables. Nothing downstream sees text or cJSON; every error names the file and the line
 * (text) or file:line:col and the JSON path (JSON). */
#ifndef ICS_CALIB_MEAS_H
#define ICS_CALIB_MEAS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <glib.h>

#include "collectives/coll.h"

/* Errors of this module: domain ICS_MEAS_ERROR, code ICS_MEAS_ERROR_INPUT. The message is the
 * complete line to print: "log.txt:57: expected 13 columns (size count ...), got 7",
 * "log.txt:57:14: time: expected a time in us (a number >= 0) or N/A, got \"abc\"",
 * "m.json:12:7: $.rows[3].size: expected an integer in 0..9007199254740992, got -5". */
#define ICS_MEAS_ERROR (ics_meas_error_quark())
enum { ICS_MEAS_ERROR_INPUT = 1 };
GQuark ics_meas_error_quark(void);

/* Bounds on what one reader holds, so arbitrary bytes cannot exhaust memory. A file, a line or
 * a row count beyond them is an error, located like any other. */
#define ICS_MEAS_MAX_FILE_BYTES (256u << 20) /* a text log; JSON files: 64 MiB (core/json.h) */
#define ICS_MEAS_MAX_LINE_BYTES (1u << 20)   /* one line of a text log */
#define ICS_MEAS_MAX_ROWS       100000       /* rows in one ics_meas, every file together */
#define ICS_MEAS_MAX_RANKS      (1 << 20)    /* a rank count, a rank number */

/* One timed measurement: the out-of-place or the in-place half of a row. */
typedef struct ics_meas_sample {
    double time_us;     /* < 0: absent (printed "N/A", or no such column) */
    double algbw_gbps;  /* GB/s, GB = 1e9 bytes; < 0: absent */
    double busbw_gbps;  /* algbw x nccl-tests' factor for the operation; < 0: absent */
    double wrong_value; /* what the check column printed: "#wrong" (elements), or the maximum
                           deviation ("error", nccl-tests before 2022); < 0: N/A, not checked */
    bool wrong;         /* the check failed (#wrong > 0; a deviation beyond nccl-tests' tolerance
                           for the datatype x (nranks - 1)): a fit must skip this sample. JSON:
                           a whole wrong_value is a count, any other a deviation */
} ics_meas_sample;

/* One row: one size. */
typedef struct ics_meas_row {
    uint64_t size_bytes; /* nccl-tests' size column: all_gather, reduce_scatter and alltoall give
                            the whole buffer (count x dtype_bytes x nranks) */
    uint64_t count;      /* elements, as printed */
    int root;            /* broadcast, reduce: the root rank; -1: none or no root column */
    ics_meas_sample oop; /* out-of-place */
    ics_meas_sample ip;  /* in-place */
    int line;            /* 1-based line in a text log; 0 for JSON */
    int index;           /* the row's index in its file: JSON "$.rows[index]"; text: 0, 1, ...
                            in the order printed, over the file's tables */
} ics_meas_row;

/* A series of rows of one operation, rank count, datatype and reduction. A text table printed
 * for several datatypes or reductions (-d all, -o all) gives one ics_meas_table per series. */
typedef struct ics_meas_table {
    ics_coll_op op;
    int nranks;          /* >= 1 */
    int ranks_per_node;  /* 0: unknown or not the same on every node */
    int nodes;           /* 0: unknown */
    int gpus_per_thread; /* GPUs one host thread drove (nccl-tests -g, "nGpus"); 0: unknown */
    char *dtype;         /* as printed: "float", "half", "bfloat16", "int8", ... */
    int dtype_bytes;     /* 4 for float; 0 when the name is not one nccl-tests prints */
    char *redop;         /* "sum", "none", ...; NULL when the table has no redop column */
    char *gpu_name;      /* "NVIDIA H100 80GB HBM3" from the rank lines or hardware.gpu; NULL */
    int nccl_version;    /* NCCL's version as NCCL_VERSION_CODE (2.26.6: 22606): NCCL's "NCCL
                            version 2.26.6+cuda12.8" line, nccl-tests' "nccl-library=22606", or
                            the JSON's "nccl_version" ("2.26.6 (...)"); 0: unknown */
    char **env; /* NCCL's variables the run was launched with, "NAME=VALUE" (NULL-terminated; NULL:
                   none known): NCCL's "NAME set by environment to VALUE" lines, or the JSON's
                   "env" object */
    char *source;            /* the file's name as given */
    int header_line;         /* the line of the "# size count type ..." header; 0 for JSON */
    const char *op_from;     /* how op was found (static): "command line", "binary name",
                                "'Collective test starting' line", "caller", "columns", "JSON" */
    const char *nranks_from; /* how nranks was found (static): "rank lines", "NCCL INFO",
                                "header and launch command", "launch command", "size/count",
                                "busbw/algbw", "header", "JSON" */
    ics_meas_row *rows;      /* n_rows >= 1, in the order printed */
    guint n_rows;
} ics_meas_table;

/* The tables of one or more files. Not thread-safe. */
typedef struct ics_meas ics_meas;

ics_meas *ics_meas_new(void);
void ics_meas_free(ics_meas *m); /* NULL: no-op */

/* Reads one file, text or JSON by its content (the first byte that is not white space is '{':
 * JSON), and appends its tables.
 * Text: nccl-tests' stdout with whatever surrounds it (prompts, command lines, NCCL INFO/WARN,
 * launcher messages, srun -l and Open MPI --tag-output prefixes, CRLF); several runs may follow
 * each other. Each run's operation comes from the *_perf binary on its command line or its
 * "# Collective test starting:" line; else from `op`; else from the columns (redop, root,
 * size / count, busbw / algbw). Its rank count comes from the "#  Rank" lines; else NCCL INFO's
 * "nranks"; else "# nThread x nGpus" x the launcher's process count; else size / count or
 * busbw / algbw; else "# nThread x nGpus" alone. A table header without rows is an error.
 * `op`: "all_reduce", "all_gather", "reduce_scatter", "alltoall", "sendrecv", "broadcast",
 * "reduce" (also "all_reduce_perf", "allreduce"); NULL: infer, failing where the columns fit
 * several operations (all_gather and alltoall print the same columns). JSON files name their
 * operation; `op` does not apply to them.
 * False with *error set (domain ICS_MEAS_ERROR) on bad input: the file adds nothing then, and
 * the tables read before stay. A file without a table is an error. O(file size). */
bool ics_meas_read_file(ics_meas *m, const char *path, const char *op, GError **error);

/* The same from memory: `text` holds `len` bytes (no terminating NUL needed); `name` is used in
 * messages and as the tables' source. For tests and the fuzzer: never aborts on any bytes. */
bool ics_meas_read_text(ics_meas *m, const char *name, const char *text, size_t len, const char *op,
                        GError **error);

guint ics_meas_n_tables(const ics_meas *m);
/* The i-th table in reading order (transfer none; valid until ics_meas_free). i < n_tables. */
const ics_meas_table *ics_meas_table_at(const ics_meas *m, guint i);

/* nccl-tests' -g N in a measurement file's descriptive "command" string (1..1024), 0 if it has
 * none: the GPUs one host thread drove. */
int ics_meas_command_gpus_per_thread(const char *command);

/* A variable of the table's recorded environment, as a simulation of its run reads it: an
 * ics_env_lookup whose ctx is the table (NULL: none). Not NCCL_COLLNET_ENABLE: CollNet also
 * needs a network plugin with collective support (SHARP's), which a log does not say it loaded
 * (ALCF's set the variable with the libfabric plugin), and without one NCCL runs as if the
 * variable were unset. The one rule `calibrate` and `bench accuracy` read logs by. */
const char *ics_meas_env_lookup(const char *name, void *table);

/* Whether a fit may use the sample: a time was printed and the check did not fail. */
bool ics_meas_sample_ok(const ics_meas_sample *s);

/* The bus bandwidth nccl-tests computed for a sample of the table's row `row` before printing
 * it: size / time x the operation's factor (ics_coll_busbw_factor), GB/s. nccl-tests prints it
 * with two decimals, so below ~1 GB/s the printed figure has one or two significant digits
 * (0.01 stands for anything from 0.005 to 0.015: a small all-reduce's 0.0134 reads 0.01, -25%),
 * where the time it came from has four or more. The printed figure where no time was printed;
 * < 0 where neither was. */
double ics_meas_busbw(const ics_meas_table *t, const ics_meas_row *row, const ics_meas_sample *s);

#endif
