/* Helpers shared by the subcommands: option parsing with exit status 2 on misuse, loading a
 * system, and writing a finished report. */
#ifndef ICS_CLI_COMMON_H
#define ICS_CLI_COMMON_H

#include <stdint.h>

#include <glib.h>

#include "collectives/comm.h"
#include "hw/hw.h"
#include "topo/topo.h"

/* Parses argv with the entries; on error prints "icsim CMD: message" and the help hint to
 * stderr and returns false. argv[0] is the subcommand. */
bool ics_cli_parse(const char *cmd, const char *params, const char *summary,
                   const GOptionEntry *entries, int *argc, char ***argv);
/* The same with several NULL-terminated entry arrays (a command's own, then shared ones), in
 * the order --help lists them; `groups` ends with NULL. */
bool ics_cli_parse_groups(const char *cmd, const char *params, const char *summary,
                          const GOptionEntry *const *groups, int *argc, char ***argv);

/* The same, with --help (GLib's, which prints and exits the process) on or off: off, "--help"
 * is an unknown option like any other (the fuzz target, which must not exit). */
bool ics_cli_parse_help(const char *cmd, const char *params, const char *summary,
                        const GOptionEntry *const *groups, bool help, int *argc, char ***argv);

/* Prints "icsim CMD: MESSAGE" and the --help hint to stderr, frees err; returns ICS_EXIT_USAGE
 * (2: nothing has been written). */
int ics_cli_fail(const char *cmd, GError *err);

/* Numeric options are read as text, so that "not given" (NULL) never collides with a value the
 * user typed (--tp -1, --bucket-mb nan), and checked here for form, then by the library for
 * range (model.h, layout.h: the ranges a scenario is checked against).
 * An integer: an optional sign and decimal digits, within int64; else false and *error
 * (ICS_ERROR_INPUT) "OPTION: expected an integer, got \"TEXT\"". NULL text: true, *out as is. */
bool ics_cli_int(const char *option, const char *text, int64_t *out, GError **error);
/* An integer in lo..hi (core/error.h's message: "OPTION: expected an integer in LO..HI, got V"). */
bool ics_cli_int_in(const char *option, const char *text, int64_t lo, int64_t hi, int *out,
                    GError **error);
/* A number as strtod reads it, the whole text; NaN and infinities parse, for the range checks to
 * refuse by name. */
bool ics_cli_num(const char *option, const char *text, double *out, GError **error);

/* --hotspots N: how many of the busiest links a report lists (report.h, ics_hotspots). */
#define ICS_CLI_HOTSPOTS_MAX 100000

/* --nodes as text (NULL: *nodes is left, 0 meaning the file's count): 1..ICS_SCENARIO_NODES_MAX,
 * the scenario's range (workload/scenario.h), the hardware loader's bound. */
bool ics_cli_nodes(const char *text, int *nodes, GError **error);

/* Loads a node or cluster file; on bad input prints the error to stderr and returns NULL
 * (exit with ICS_EXIT_USAGE). Transfer full. */
ics_hw *ics_cli_load_hw(const char *path, int nodes_override);

/* Whether `path` can take an output file before any work starts: not a directory, in a
 * directory that exists and is writable. If not, prints "icsim CMD: OPTION: PATH: why" to
 * stderr and returns false (exit status 2: nothing was written). */
bool ics_cli_output_ok(const char *cmd, const char *option, const char *path);

/* What most commands start from: a hardware model, its topology, ranks on its GPUs and a
 * communicator over them. Each part is NULL until set up; ics_cli_setup_close frees what is. */
typedef struct {
    ics_hw *hw;
    ics_topo *t;
    int *gpus; /* rank -> GPU device */
    int nranks;
    ics_comm *comm;
} ics_cli_setup;

/* Applies the paths NCCL's environment asks for (ics_coll_paths_from_env: NCCL_P2P_LEVEL, ...)
 * to t; a value not understood is named in a warning on stderr, as NCCL warns. */
void ics_cli_nccl_paths(const char *cmd, ics_topo *t);

/* Loads path (nodes_override: a cluster's node count, 0: the file's) and builds its topology
 * with NCCL's paths (ics_cli_nccl_paths); on bad input prints the error and returns false. */
bool ics_cli_setup_open(ics_cli_setup *s, const char *path, int nodes_override);
/* n ranks, gpn per node, nodes in order (ics_topo_gpus_by_node), and a communicator over them
 * on `backend` (params NULL: defaults). */
void ics_cli_setup_comm(ics_cli_setup *s, int gpn, int n, const ics_net_ops *backend,
                        const ics_net_params *params);
void ics_cli_setup_close(ics_cli_setup *s);

/* Writes a finished report to stdout in one piece. */
void ics_cli_emit(GString *out);

/* bench calibrate's percentage column (" 12.3%", or " -" when x is not finite). */
void ics_bench__calib_pct(GString *out, double x);
/* bench calibrate's compute part (bench_calibrate_compute.c): appends its table to out. */
bool ics_bench__calibrate_compute(GString *out, GError **err);

#endif
