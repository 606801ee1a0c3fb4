/* Shared by `icsim bench training`'s tables (bench_training.c: Megatron-LM's SC'21 table;
 * bench_training_korthikanti.c: Korthikanti et al.'s A100 iterations and 22B layer;
 * bench_training_bridge.c: Megatron-Bridge's H100 rows). Not a public header. */
#ifndef ICS_BENCH_TRAINING_INTERNAL_H
#define ICS_BENCH_TRAINING_INTERNAL_H

#include "replay/replay.h"
#include "workload/workload.h"

#ifndef ICS_HWMODELS_DIR
#define ICS_HWMODELS_DIR "hwmodels"
#endif

/* One generated step replayed: what holds it (free with ics_bench__step_free, run or not). */
typedef struct {
    ics_hw *hw;
    ics_topo *t;
    ics_trace *tr;
    ics_replay *rp;
    ics_replay_result res;
} ics_bench_step;

/* Generates the step of model m on layout l on as many 8-GPU nodes of hardware model `hw_file`
 * as `gpus` needs, and replays it (analytic engine, memoized collectives, NVLS on); false with
 * *error. */
bool ics_bench__step_run(ics_bench_step *s, const char *hw_file, int gpus, const ics_model *m,
                         const ics_layout *l, GError **error);
void ics_bench__step_free(ics_bench_step *s);

/* Where the critical rank's step went, in percent of the step: each category's busy and
 * exposed time, then the bubble ([ICS_CAT_COUNT]). */
void ics_bench__step_shares(const ics_bench_step *s, double shares[ICS_CAT_COUNT + 1]);

/* The median of n values (sorts them in place); NAN when n is 0. */
double ics_bench__median(double *v, int n);

/* Prints the Megatron-Bridge table; returns the rows predicted. */
int ics_bench__training_bridge(const ics_model_catalog *cat);

/* Prints Korthikanti et al.'s tables (MLSys 2023); returns the rows predicted. */
int ics_bench__training_korthikanti(void);

#endif
