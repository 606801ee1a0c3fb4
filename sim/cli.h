/* The icsim command line: one subcommand per file (cli_<name>.c), listed once in cli.c.
 * Exit status: 0 success, 1 runtime failure, 2 bad input (usage, files, JSON). */
#ifndef ICS_CLI_H
#define ICS_CLI_H

#define ICS_EXIT_OK    0
#define ICS_EXIT_FAIL  1
#define ICS_EXIT_USAGE 2

/* Runs `icsim ARGS...`; returns the process exit status. */
int ics_cli_main(int argc, char **argv);

/* Subcommands: argv[0] is the subcommand's name. Each prints its own --help. */
int ics_cli_topo(int argc, char **argv);
int ics_cli_explain(int argc, char **argv);
int ics_cli_bench(int argc, char **argv);

/* Benchmarks run by `icsim bench NAME` (argv[0] is NAME). */
int ics_bench_engine(int argc, char **argv);
int ics_bench_net(int argc, char **argv);

#endif
