/* run.h: icsim-validate's modes. Each prints its tables on stdout, writes --json if asked, and
 * returns the exit status (0, 1 wrong results, ICSV_EXIT_INPUT, ICSV_EXIT_SKIP). */
#ifndef ICSV_RUN_H
#define ICSV_RUN_H

#include "args.h"

int icsv_run_collective(const icsv_args *a); /* collective and nvls modes */
int icsv_run_p2p(const icsv_args *a);
/* GEMMs and HBM copies on GPU 0; ICSV_EXIT_INPUT, before anything is timed, for a --dtype the
 * GPU has no tensor cores for. */
int icsv_run_compute(const icsv_args *a);

#endif /* ICSV_RUN_H */
