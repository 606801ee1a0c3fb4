/* What `icsim replay` and `icsim train` share: the options of a replay, running it, and
 * printing the step report (text or JSON) and the timeline. */
#ifndef ICS_CLI_STEP_H
#define ICS_CLI_STEP_H

#include <glib.h>

#include "report/report.h"
#include "trace/trace.h"

typedef struct {
    char *engine;   /* "analytic" (default) or "packet" */
    char *colls;    /* "auto" (default), "full", "memo" */
    char *timeline; /* a Chrome trace to write, or NULL */
    int timeline_ranks;
    double sample_us; /* link sampling interval for the timeline */
    gboolean json;    /* the report as JSON on stdout */
    int packet_kib;   /* packet engine: payload per simulated packet; 0: 256 KiB */
} ics_cli_step_args;

/* The option entries for these fields, NULL-terminated, into out. */
#define ICS_CLI_STEP_ENTRIES 8
void ics_cli_step_entries(ics_cli_step_args *a, GOptionEntry out[ICS_CLI_STEP_ENTRIES]);
/* Checks the values; on error prints "icsim CMD: ..." and returns false. */
bool ics_cli_step_check(const char *cmd, const ics_cli_step_args *a);
/* Replays tr on t and prints the report; returns an exit status. Writes nothing on failure. */
int ics_cli_step_run(const char *cmd, const ics_cli_step_args *a, const ics_trace *tr,
                     const ics_topo *t, const int *gpu_of_rank, const ics_step_info *info);
void ics_cli_step_args_clear(ics_cli_step_args *a);

#endif
