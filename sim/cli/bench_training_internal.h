/* Shared by `icsim bench training`'s two tables (bench_training.c: Megatron-LM's SC'21 table;
 * bench_training_bridge.c: Megatron-Bridge's H100 rows). Not a public header. */
#ifndef ICS_BENCH_TRAINING_INTERNAL_H
#define ICS_BENCH_TRAINING_INTERNAL_H

#include "workload/workload.h"

#ifndef ICS_HWMODELS_DIR
#define ICS_HWMODELS_DIR "hwmodels"
#endif

/* The median of n values (sorts them in place); NAN when n is 0. */
double ics_bench__median(double *v, int n);

/* Prints the Megatron-Bridge table; returns the rows predicted. */
int ics_bench__training_bridge(const ics_model_catalog *cat);

#endif
