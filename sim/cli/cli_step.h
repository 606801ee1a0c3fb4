/* What `icsim replay` and `icsim train` share: the options of a replay, running it, and
 * printing the step report (text or JSON) and the timeline. */
#ifndef ICS_CLI_STEP_H
#define ICS_CLI_STEP_H

#include <glib.h>

#include "report/report.h"
#include "workload/workload.h"
#include "trace/trace.h"

typedef struct {
    char *engine;   /* "analytic" (default) or "packet" */
    char *colls;    /* "auto" (default), "full", "memo" */
    char *timeline; /* a Chrome trace to write, or NULL */
    char *plot;     /* the step's breakdown as SVG, or NULL */
    char **fails;   /* failure specs (topo.h) applied before the replay; NULL: none */
    gboolean json;  /* the report as JSON on stdout */
    /* as given (NULL: not given), then as ics_cli_step_check reads them */
    char *timeline_ranks_text, *sample_us_text, *packet_kib_text, *hotspots_text,
        *host_launch_us_text;
    int timeline_ranks;    /* 0: all */
    double sample_us;      /* link sampling interval for the timeline; 0: 10 us */
    int packet_kib;        /* packet engine: payload per simulated packet; 0: 256 KiB */
    int hotspots;          /* the busiest links to report over the step; 0: none */
    double host_launch_us; /* the host's time per kernel launch (replay.h) */
} ics_cli_step_args;

/* The ranges of the replay options (docs/limits.md). */
#define ICS_CLI_PACKET_KIB_MAX     (1 << 20)
#define ICS_CLI_SAMPLE_US_MIN      1e-6 /* one picosecond, the clock's unit */
#define ICS_CLI_SAMPLE_US_MAX      1e9
#define ICS_CLI_HOST_LAUNCH_US_MAX ICS_SCENARIO_HOST_LAUNCH_US_MAX

/* The option entries for these fields, NULL-terminated, into out. */
#define ICS_CLI_STEP_ENTRIES 12
void ics_cli_step_entries(ics_cli_step_args *a, GOptionEntry out[ICS_CLI_STEP_ENTRIES]);
/* Reads and checks the values, and that the timeline can be written (before anything runs); on
 * error prints "icsim CMD: ..." and returns false. */
bool ics_cli_step_check(const char *cmd, ics_cli_step_args *a);
/* Takes down what --fail names (exit 2 on a spec the model refuses), replays tr on t and prints
 * the report, after a line per failure in text; returns an exit status. Writes nothing on
 * failure. */
int ics_cli_step_run(const char *cmd, const ics_cli_step_args *a, const ics_trace *tr, ics_topo *t,
                     const int *gpu_of_rank, const ics_step_info *info);
void ics_cli_step_args_clear(ics_cli_step_args *a);

#endif
