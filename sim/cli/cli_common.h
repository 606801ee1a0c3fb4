/* Helpers shared by the subcommands: option parsing with exit status 2 on misuse, loading a
 * system, and writing a finished report. */
#ifndef ICS_CLI_COMMON_H
#define ICS_CLI_COMMON_H

#include <glib.h>

#include "hw/hw.h"
#include "topo/topo.h"

/* Parses argv with the entries; on error prints "icsim CMD: message" and the help hint to
 * stderr and returns false. argv[0] is the subcommand. */
bool ics_cli_parse(const char *cmd, const char *params, const char *summary,
                   const GOptionEntry *entries, int *argc, char ***argv);

/* Loads a node or cluster file; on bad input prints the error to stderr and returns NULL
 * (exit with ICS_EXIT_USAGE). Transfer full. */
ics_hw *ics_cli_load_hw(const char *path, int nodes_override);

/* Whether `path` can take an output file before any work starts: not a directory, in a
 * directory that exists and is writable. If not, prints "icsim CMD: OPTION: PATH: why" to
 * stderr and returns false (exit status 2: nothing was written). */
bool ics_cli_output_ok(const char *cmd, const char *option, const char *path);

/* Writes a finished report to stdout in one piece. */
void ics_cli_emit(GString *out);

#endif
