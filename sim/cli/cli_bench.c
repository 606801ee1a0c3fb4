/* `icsim bench NAME`: the simulator's own speed, one benchmark per row of the table. */
#include "cli/cli.h"

#include <stdio.h>
#include <string.h>

#include <glib.h>

typedef struct {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
} ics_bench_case;

static const ics_bench_case ics_bench_cases[] = {
    {.name = "engine", .run = ics_bench_engine, .summary = "event queue hold model: events/s"},
    {.name = "net", .run = ics_bench_net, .summary = "packet backend on three standard loads"},
    {.name = "collective",
     .run = ics_bench_collective,
     .summary = "whole all-reduce sweeps: 8 and 1024 GPUs, both backends"},
    {.name = "training",
     .run = ics_bench_training,
     .summary = "predicted vs published training throughput (validate/data/training)"},
    {.name = "calibrate",
     .run = ics_bench_calibrate,
     .summary = "calibrate on one real log of a system, predict its others"},
    {.name = "accuracy",
     .run = ics_bench_accuracy,
     .summary = "collectives against real nccl-tests logs: busbw error"},
    {.name = "scale",
     .run = ics_bench_scale,
     .summary = "large clusters as planners run them: wall time and memory vs goals"},
};

static void usage(FILE *out)
{
    fprintf(out, "usage: icsim bench NAME [OPTIONS]\n\nbenchmarks:\n");
    for (size_t i = 0; i < G_N_ELEMENTS(ics_bench_cases); i++)
        fprintf(out, "  %-10s %s\n", ics_bench_cases[i].name, ics_bench_cases[i].summary);
}

int ics_cli_bench(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return ICS_EXIT_USAGE;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        usage(stdout);
        return ICS_EXIT_OK;
    }
    for (size_t i = 0; i < G_N_ELEMENTS(ics_bench_cases); i++)
        if (strcmp(argv[1], ics_bench_cases[i].name) == 0)
            return ics_bench_cases[i].run(argc - 1, argv + 1);
    fprintf(stderr, "icsim bench: unknown benchmark '%s'\n", argv[1]);
    usage(stderr);
    return ICS_EXIT_USAGE;
}
