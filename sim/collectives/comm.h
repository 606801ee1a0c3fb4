/* Collectives as NCCL runs them: an algorithm turns (operation, ranks, bytes, protocol,
 * channels) into a schedule of transfers and reductions with dependencies, and the runtime
 * plays the schedule on a network backend, charging reductions to the GPU (HBM-bound).
 * A communicator is a list of GPU devices of one topology, rank i = gpus[i]. This is the
 * collectives module's face; its words (operations, algorithms, protocols) are coll.h's. */
#ifndef ICS_COMM_H
#define ICS_COMM_H

#include <stdbool.h>
#include <stdint.h>

#include "collectives/coll.h"
#include "collectives/sched.h"
#include "net/net.h"
#include "topo/topo.h"

/* How a call is planned: chunk by chunk as NCCL moves it, or each channel as one stream whose
 * pipeline fill is computed (algo.h); auto: streams from ICS_STREAMS_AUTO_RANKS ranks up,
 * where the chunk-level plan has millions of steps. Algorithms without a stream plan always
 * go chunk by chunk. */
typedef enum { ICS_PLAN_AUTO, ICS_PLAN_CHUNKS, ICS_PLAN_STREAMS } ics_coll_plan;
#define ICS_STREAMS_AUTO_RANKS 256

/* What the tuner may use: -1 / ICS_*_COUNT mean "choose" (NCCL_ALGO, NCCL_PROTO,
 * NCCL_MIN_NCHANNELS / NCCL_MAX_NCHANNELS, NCCL_NVLS_ENABLE, NCCL_COLLNET_ENABLE). */
typedef struct {
    int algo;                       /* an ics_coll_algo, or -1 */
    int proto;                      /* an ics_coll_proto, or -1 */
    int min_channels, max_channels; /* 0: NCCL's defaults */
    bool nvls_enable;
    bool collnet_enable; /* CollNet (SHARP) as NCCL: off unless asked for, even when forced */
    ics_coll_plan plan;  /* not NCCL's: how icsim plans the call */
    int gpus_per_thread; /* not NCCL's: GPUs one host thread launches in turn (nccl-tests -g);
                            with a calibrated launch_us a call lasts at least that many launches.
                            0 or 1: one */
} ics_coll_tuning;

typedef struct {
    ics_time time_ps; /* from the first rank's start to the last rank's end */
    ics_coll_algo algo;
    ics_coll_proto proto;
    int nchannels;
    bool streams; /* planned as streams (ics_coll_plan) */
} ics_coll_result;

typedef struct ics_comm ics_comm;

/* A communicator over `gpus` (device ids of t, transfer none, copied) on a backend.
 * Transfer full. */
ics_comm *ics_comm_new(const ics_topo *t, const ics_net_ops *backend, const int *gpus, int nranks,
                       const ics_net_params *params);
void ics_comm_free(ics_comm *c);
int ics_comm_nranks(const ics_comm *c);
/* A calibration parameter (hw.h) as the simulation of this communicator uses it: the model's
 * calibrated value, else the default (NCCL's figure for its GPU, 1 for factors, 0 for launch). */
double ics_comm_cal_value(const ics_comm *c, ics_cal_param p);

/* Simulates one call, alone on an idle network, with the tuner's choices under `tuning`.
 * Returns false (and fills nothing) if the forced algorithm cannot run this operation here
 * (NVLS without an NVLS switch, tree for all-gather, ...). */
bool ics_comm_run(ics_comm *c, const ics_coll_req *req, const ics_coll_tuning *tuning,
                  ics_coll_result *out);

/* The same call's schedule, to play on a shared network (sched.h: ics_sched_start): the tuner's
 * choices go to *out (time_ps 0). Transfer full; NULL where ics_comm_run would return false. */
ics_sched *ics_comm_plan(ics_comm *c, const ics_coll_req *req, const ics_coll_tuning *tuning,
                         ics_coll_result *out);

/* The tuning NCCL's environment variables ask for (NCCL_ALGO, NCCL_PROTO, NCCL_NVLS_ENABLE,
 * NCCL_COLLNET_ENABLE, NCCL_MIN_NCHANNELS, NCCL_MAX_NCHANNELS). Never fails: unknown values are
 * ignored and named in *warning (set, ICS_ERROR_INPUT, only if there are any). */
void ics_coll_tuning_from_env(ics_coll_tuning *t, GError **warning);

#endif
