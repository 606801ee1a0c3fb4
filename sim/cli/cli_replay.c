/* `icsim replay TRACE -s SYSTEM`: replays a recorded trace (our JSON or Chakra) on a system and
 * prints the step time and where it went. */
#include "cli/cli.h"
#include "cli/cli_common.h"
#include "cli/cli_step.h"
#include "trace/trace.h"

#include <stdio.h>

int ics_cli_replay(int argc, char **argv)
{
    char *system = NULL, *groups = NULL, *nodes_text = NULL;
    int nodes = 0;
    ics_cli_step_args sa = {0};
    const GOptionEntry base[] = {
        {"system", 's', 0, G_OPTION_ARG_FILENAME, &system, "hardware model (node or cluster)",
         "FILE"},
        {"nodes", 0, 0, G_OPTION_ARG_STRING, &nodes_text, "node count of a cluster", "N"},
        {"comm-groups", 0, 0, G_OPTION_ARG_FILENAME, &groups,
         "Chakra: communicator groups JSON (default: PREFIX.comm_groups.json if present)", "FILE"},
        G_OPTION_ENTRY_NULL};
    GOptionEntry step[ICS_CLI_STEP_ENTRIES];
    ics_cli_step_entries(&sa, step);
    const GOptionEntry *const entries[] = {base, step, NULL};
    int rc = ICS_EXIT_USAGE;
    ics_hw *hw = NULL;
    ics_topo *t = NULL;
    ics_trace *tr = NULL;
    if (!ics_cli_parse_groups("replay", "TRACE -s FILE",
                              "Replay a trace (icsim JSON or Chakra execution trace, told apart by "
                              "content) and report the step time.",
                              entries, &argc, &argv))
        goto done;
    GError *err = NULL;
    if (argc != 2 || !system) {
        if (argc > 2)
            err = g_error_new(ICS_ERROR, ICS_ERROR_INPUT,
                              "expected one TRACE, got another argument \"%s\"", argv[2]);
        else
            err = g_error_new(ICS_ERROR, ICS_ERROR_INPUT, "expected one TRACE and -s FILE");
        ics_cli_fail("replay", err);
        goto done;
    }
    if (!ics_cli_nodes(nodes_text, &nodes, &err)) {
        ics_cli_fail("replay", err);
        goto done;
    }
    if (!ics_cli_step_check("replay", &sa))
        goto done;
    tr = ics_trace_read(argv[1], groups, &err);
    if (!tr) {
        fprintf(stderr, "%s\n", err->message);
        g_error_free(err);
        goto done;
    }
    hw = ics_cli_load_hw(system, nodes);
    if (!hw)
        goto done;
    t = ics_topo_new(hw);
    rc = ics_cli_step_run("replay", &sa, tr, t, NULL, NULL);
done:
    ics_trace_free(tr);
    ics_topo_free(t);
    ics_hw_free(hw);
    ics_cli_step_args_clear(&sa);
    g_free(system);
    g_free(groups);
    g_free(nodes_text);
    return rc;
}
