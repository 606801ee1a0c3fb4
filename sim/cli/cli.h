/* The icsim command line: one subcommand per file (cli_<name>.c), listed once in cli.c.
 * Exit status: 0 success, 1 runtime failure, 2 bad input (usage, files, JSON). */
#ifndef ICS_CLI_H
#define ICS_CLI_H

#include <stdbool.h>
#include <stdint.h>

#define ICS_EXIT_OK    0
#define ICS_EXIT_FAIL  1
#define ICS_EXIT_USAGE 2

/* Runs `icsim ARGS...`; returns the process exit status. */
int ics_cli_main(int argc, char **argv);

/* Subcommands: argv[0] is the subcommand's name. Each prints its own --help. */
int ics_cli_topo(int argc, char **argv);
int ics_cli_explain(int argc, char **argv);
int ics_cli_bench(int argc, char **argv);
int ics_cli_collective(int argc, char **argv);
int ics_cli_replay(int argc, char **argv);
int ics_cli_train(int argc, char **argv);
int ics_cli_infer(int argc, char **argv);
/* The same with --help (GLib's, which exits the process) on or off: off for the fuzz target. */
int ics_cli_infer_with(int argc, char **argv, bool help);
int ics_cli_calibrate(int argc, char **argv);
int ics_cli_sweep(int argc, char **argv);

/* Benchmarks run by `icsim bench NAME` (argv[0] is NAME). */
int ics_bench_engine(int argc, char **argv);
int ics_bench_net(int argc, char **argv);
int ics_bench_collective(int argc, char **argv);
int ics_bench_accuracy(int argc, char **argv);
int ics_bench_scale(int argc, char **argv);
int ics_bench_training(int argc, char **argv);
int ics_bench_calibrate(int argc, char **argv);

/* `icsim train`'s and `icsim collective`'s arguments parsed and checked: everything that needs
 * no hardware model (train reads its model catalog and scenario file), so that bad input is
 * refused before anything is loaded or simulated, and so that the fuzz target
 * (tests/fuzz/fuzz_cli.c) can drive the option handling alone. help false: "--help" is an
 * unknown option, since GLib's prints and exits. Returns ICS_EXIT_OK (ready to run) or the exit
 * status of the error it printed; *job is set either way (transfer full; free it). */
typedef struct ics_cli_train_job ics_cli_train_job;
int ics_cli_train_prepare(int argc, char **argv, bool help, ics_cli_train_job **job);
void ics_cli_train_job_free(ics_cli_train_job *job);
typedef struct ics_cli_coll_job ics_cli_coll_job;
int ics_cli_collective_prepare(int argc, char **argv, bool help, ics_cli_coll_job **job);
void ics_cli_coll_job_free(ics_cli_coll_job *job);

/* Helpers of `icsim collective`, shared with `icsim bench accuracy`. */

#include "collectives/comm.h"

/* An operation by its nccl-tests name ("all_reduce"); false if unknown. */
bool ics_cli_coll_op(const char *name, ics_coll_op *op);
/* A size as nccl-tests' -b/-e read it: digits, then optionally K, M or G (x 2^10, 2^20, 2^30);
 * false on anything else or on overflow. */
bool ics_cli_parse_size(const char *s, uint64_t *out);

#endif
