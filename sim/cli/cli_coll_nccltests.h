/* nccl-tests' own flags for `icsim collective` (cli_coll_nccltests.c), so that a command line
 * copied from a real run is taken as it is: -n -w -m -g -t -c -a -z -G -C -R -i. */
#ifndef ICS_CLI_COLL_NCCLTESTS_H
#define ICS_CLI_COLL_NCCLTESTS_H

#include <stdbool.h>
#include <stdint.h>

#include <glib.h>

typedef struct {
    /* as given (NULL: not given), then as read */
    char *iters_s, *warmup_s, *agg_s, *ngpus_s, *nthreads_s, *check_s, *average_s, *blocking_s,
        *graph_s, *cputime_s, *register_s, *step_s;
    int iters, warmup, agg, ngpus, nthreads, check, average, blocking, graph, cputime, reg;
    uint64_t step_bytes; /* -i: sizes grow by this many bytes; 0: by the factor */
} ics_cli_nccltests;

#define ICS_CLI_NCCLTESTS_ENTRIES 13 /* with the terminating entry */
void ics_cli_nccltests_entries(ics_cli_nccltests *n, GOptionEntry out[ICS_CLI_NCCLTESTS_ENTRIES]);
/* Reads and checks the values (nccl-tests' ranges); false and *error (ICS_ERROR_INPUT). */
bool ics_cli_nccltests_check(ics_cli_nccltests *n, GError **error);
/* nccl-tests' "# nThread T nGpus G minBytes ... graph: N" line with what was given (defaults:
 * the simulator's one timed iteration), then, when timing-only flags were given, one line saying
 * the simulator ignores them. */
void ics_cli_nccltests_header(const ics_cli_nccltests *n, uint64_t min_b, uint64_t max_b,
                              int factor, GString *out);
/* The GPUs one host thread launches in turn, for the launch floor (comm.h: gpus_per_thread):
 * -g, or 1 under -G (a CUDA graph launches an iteration's kernels at once). */
int ics_cli_nccltests_gpus_per_thread(const ics_cli_nccltests *n);
void ics_cli_nccltests_clear(ics_cli_nccltests *n);

#endif
