/* Shared by `icsim bench training`'s tables (bench_training.c: Megatron-LM's SC'21 table;
 * bench_training_korthikanti.c: Korthikanti et al.'s A100 iterations and 22B layer;
 * bench_training_bridge.c: Megatron-Bridge's H100, B200 and GB200 rows). Not a public header. */
#ifndef ICS_BENCH_TRAINING_INTERNAL_H
#define ICS_BENCH_TRAINING_INTERNAL_H

#include "replay/replay.h"
#include "report/report.h"
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

/* Generates the step of model m on layout l on as many nodes of hardware model `hw_file` as
 * `gpus` needs (the node's GPUs are read from the model: 8 a DGX, 64 or 72 an NVL72 rack), and
 * replays it (analytic engine, memoized collectives, NVLS on); false with
 * *error. */
bool ics_bench__step_run(ics_bench_step *s, const char *hw_file, int gpus, const ics_model *m,
                         const ics_layout *l, GError **error);
void ics_bench__step_free(ics_bench_step *s);

/* Where the critical rank's step went, in percent of the step: each category's busy and
 * exposed time, then the bubble ([ICS_CAT_COUNT]) and the host ([ICS_CAT_COUNT + 1]). */
void ics_bench__step_shares(const ics_bench_step *s, double shares[ICS_REPORT_STEP_NPARTS]);

/* The median of n values (sorts them in place); NAN when n is 0. */
double ics_bench__median(double *v, int n);

/* The tables `bench training --tables` picks from, as bits. */
enum {
    ICS_BENCH_SC21 = 1u << 0,
    ICS_BENCH_KORTHIKANTI = 1u << 1,
    ICS_BENCH_H100 = 1u << 2,
    ICS_BENCH_B200 = 1u << 3,
    ICS_BENCH_GB200 = 1u << 4,
    ICS_BENCH_ALL = (1u << 5) - 1
};

/* Prints the Megatron-Bridge tables of the systems `tables` names (ICS_BENCH_H100 ...); returns
 * the rows predicted, or -1 when a table it printed had none (a failure of the bench), 0 when it
 * printed none. */
int ics_bench__training_bridge(const ics_model_catalog *cat, unsigned tables);

/* Prints Korthikanti et al.'s tables (MLSys 2023); returns the rows predicted. */
int ics_bench__training_korthikanti(void);

#endif
