/* Subcommand dispatch for the icsim CLI. Adding a subcommand: write cli_<name>.c with an
 * ics_cli_<name>() entry point, declare it in cli.h, and add one row to the table below. */
#include "cli/cli.h"

#include <stdio.h>
#include <string.h>

#include <glib.h>

typedef struct {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
} ics_cli_cmd;

static const ics_cli_cmd ics_cli_cmds[] = {
    {.name = "topo", .run = ics_cli_topo, .summary = "summarize a hardware model and its paths"},
    {.name = "explain", .run = ics_cli_explain, .summary = "derive each bandwidth, step by step"},
    {.name = "collective",
     .run = ics_cli_collective,
     .summary = "simulate an nccl-tests sweep, printed as nccl-tests does"},
    {.name = "replay",
     .run = ics_cli_replay,
     .summary = "replay a trace (icsim JSON or Chakra) and report the step time"},
    {.name = "train", .run = ics_cli_train, .summary = "simulate one step of 3D-parallel training"},
    {.name = "infer",
     .run = ics_cli_infer,
     .summary = "time to first token, per token and tokens/s of a TP inference instance"},
    {.name = "calibrate",
     .run = ics_cli_calibrate,
     .summary = "fit a hardware model to measured nccl-tests logs"},
    {.name = "sweep",
     .run = ics_cli_sweep,
     .summary = "run a what-if study: models, failures, NCCL settings, in parallel"},
    {.name = "bench",
     .run = ics_cli_bench,
     .summary = "measure the simulator's speed and accuracy"},
};

static void usage(FILE *out)
{
    fprintf(out, "usage: icsim COMMAND [ARGS...]\n\ncommands:\n");
    for (size_t i = 0; i < G_N_ELEMENTS(ics_cli_cmds); i++)
        fprintf(out, "  %-10s %s\n", ics_cli_cmds[i].name, ics_cli_cmds[i].summary);
    fprintf(out, "\nRun `icsim COMMAND --help` for a command's options.\n");
}

int ics_cli_main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return ICS_EXIT_USAGE;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
        strcmp(argv[1], "help") == 0) {
        usage(stdout);
        return ICS_EXIT_OK;
    }
    for (size_t i = 0; i < G_N_ELEMENTS(ics_cli_cmds); i++)
        if (strcmp(argv[1], ics_cli_cmds[i].name) == 0)
            return ics_cli_cmds[i].run(argc - 1, argv + 1);
    fprintf(stderr, "icsim: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return ICS_EXIT_USAGE;
}
