/* `icsim sweep` across MPI processes (cli_sweep_mpi.c): the split of a study's configurations,
 * when the command runs under mpirun and icsim was built with MPI; otherwise none. */
#ifndef ICS_CLI_SWEEP_H
#define ICS_CLI_SWEEP_H

#include <stdbool.h>

#include "sweep/sweep.h"

/* Under mpirun (and an MPI build): initializes MPI, fills *split (process r of N computes the
 * configurations c with c mod N = r; process 0 writes) and returns true. Otherwise false and
 * MPI is never touched, so a plain run needs no MPI runtime. */
bool ics_cli_sweep_mpi_split(ics_sweep_split *split);
/* After the run: ok false on the writer aborts every process (the others may wait to hand it
 * rows it will never take); then MPI ends. */
void ics_cli_sweep_mpi_end(ics_sweep_split *split, bool ok);

#endif
