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
 * where the chunk-level plan has millions of steps, and below for a Simple call whose chunk
 * plan would take more than ICS_STREAMS_AUTO_STEPS (a pipeline deep in its steady state; LL
 * and LL128 steps are latency-bound and keep their chunks). Algorithms without a stream plan
 * always go chunk by chunk. */
typedef enum { ICS_PLAN_AUTO, ICS_PLAN_CHUNKS, ICS_PLAN_STREAMS } ics_coll_plan;
#define ICS_STREAMS_AUTO_RANKS 128
/* ... and below that, streams for a Simple call whose chunk plan would take more steps */
#define ICS_STREAMS_AUTO_STEPS 65536

/* What the tuner may use (NCCL_ALGO, NCCL_PROTO, NCCL_MIN_NCHANNELS / NCCL_MAX_NCHANNELS,
 * NCCL_MIN_CTAS / NCCL_MAX_CTAS, NCCL_NVLS_NCHANNELS, NCCL_NVLS_ENABLE, NCCL_COLLNET_ENABLE).
 * Zero-initialized: NCCL's defaults but NVLS, which nvls_enable turns on. */
typedef struct {
    unsigned algos;  /* the algorithms it may pick: ICS_COLL_SET(a) each; 0: any */
    unsigned protos; /* the protocols, the same way (ICS_COLL_SET(p)); 0: any */
    /* rings' and trees' channels: NCCL_MIN/MAX_NCHANNELS, already combined with the CTA bounds
     * below as NCCL combines them; 0: NCCL's defaults */
    int min_channels, max_channels;
    /* NCCL_MIN_CTAS / NCCL_MAX_CTAS alone (ncclConfig_t minCTAs / maxCTAs): what bounds the NVLS
     * channels, which NCCL_MIN/MAX_NCHANNELS do not (ics_tuner_nvls_channels); 0: unset */
    int min_ctas, max_ctas;
    int nvls_channels; /* NCCL_NVLS_NCHANNELS (ncclConfig_t nvlsCTAs); 0: NCCL's default */
    /* NCCL_NVLS_CHUNKSIZE (bytes, NCCL's nvlsChunkSize) and NCCL_NVLSTREE_MAX_CHUNKSIZE (bytes):
     * the NVLS and NVLS-Tree chunks' ceilings; 0: NCCL's defaults (128 KiB; NVLS-Tree 64 KiB
     * from 4 nodes, else the NVLS chunk) */
    int nvls_chunk, nvlstree_max_chunk;
    /* not an environment variable: the NCCL release whose defaults apply where they changed
     * between releases (NCCL_VERSION_CODE, 2.26.6: 22606), as a measurement names it; 0: the
     * newest icsim models (2.29) */
    int nccl_version;
    bool nvls_enable;
    bool collnet_enable; /* CollNet (SHARP) as NCCL: off unless asked for, even when forced */
    ics_coll_plan plan;  /* not NCCL's: how icsim plans the call */
    int gpus_per_thread; /* not NCCL's: GPUs one host thread launches in turn (nccl-tests -g);
                            with a calibrated launch_us a call lasts at least that many launches.
                            0 or 1: one */
    /* NCCL_P2P_NET_CHUNKSIZE, NCCL_P2P_NVL_CHUNKSIZE, NCCL_P2P_PCI_CHUNKSIZE, NCCL_BUFFSIZE:
     * bytes; 0: NCCL's defaults (128 KiB across nodes, 512 KiB on all-NVLink, 128 KiB over
     * PCIe; a 4 MiB Simple buffer, which caps a point-to-point step at an eighth of it) */
    int p2p_net_chunk, p2p_nvl_chunk, p2p_pci_chunk, buffsize;
    /* NCCL_NCHANNELS_PER_NET_PEER: channels for a peer across the network, as set (NCCL then
     * skips its reduction at scale); NCCL_P2P_PER_CHANNEL_NET_BW: GB/s NCCL counts a channel
     * for when it picks them itself. 0: NCCL's defaults (channels.c) */
    int net_peer_channels, p2p_channel_net_gbps;
    /* NCCL_P2P_SCHEDULE_GROUP_SIZE: GPUs of a node whose rounds go together in the
     * point-to-point schedule across nodes (p2p_waves.c); 0: NCCL's 8 */
    int p2p_group;
} ics_coll_tuning;

/* A set of algorithms or protocols, a bit per member. */
#define ICS_COLL_SET(x) (1u << (unsigned)(x))

typedef struct {
    ics_time time_ps; /* from the first rank's start to the last rank's end; ICS_TIME_LIMIT
                         when that is at or past the simulator's horizon (core/time.h) */
    ics_coll_algo algo;
    ics_coll_proto proto;
    int nchannels;
    int waves;    /* an all-to-all's waves (NCCL's point-to-point batches, p2p_waves.c); 1
                     for every other call */
    bool streams; /* planned by its algorithm's stream plan (ics_coll_plan); send/recv's is its
                     chunk plan, one send a rank either way */
    bool local;   /* one rank: a copy in the GPU's memory, no algorithm (algo, proto unset) */
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

/* Whether one call of `op` on `nranks` ranks fits the memory budget (core/budget.h) on
 * `backend` under `plan`, checked before anything is built: an all-to-all posts every pair's
 * send at once (n (n - 1) transfers under way: 16 million on 4,096 ranks), or, played as
 * streams, holds every pair's leg; other calls hold a few per rank and channel. False with
 * ICS_ERROR_LIMIT and the estimate in *error. */
bool ics_comm_call_fits(ics_coll_op op, int nranks, ics_coll_plan plan, const ics_net_ops *backend,
                        GError **error);

/* Whether a call on n ranks under `plan` is played as streams by an algorithm that has them. */
bool ics_comm_plays_streams(ics_coll_plan plan, int n);

/* Simulates one call, alone on an idle network, with the tuner's choices under `tuning`.
 * Returns false (and fills nothing) if no algorithm the tuning allows can run this operation
 * here (NVLS without an NVLS switch, tree for all-gather, ...). On one rank every call is what
 * NCCL makes of it, a copy from the send to the receive buffer (cudaMemcpy in ncclLaunchOneRank):
 * the GPU's launch latency plus the bytes read and written at its HBM rate, whatever the tuning
 * (result.local). */
bool ics_comm_run(ics_comm *c, const ics_coll_req *req, const ics_coll_tuning *tuning,
                  ics_coll_result *out);
/* The same, adding the payload bytes the call moved over each channel of the communicator's
 * topology to chan_bytes[0 .. ics_topo_nchans) unless it is NULL: where the call's traffic
 * went (the hot-spot report). */
bool ics_comm_run_traffic(ics_comm *c, const ics_coll_req *req, const ics_coll_tuning *tuning,
                          ics_coll_result *out, uint64_t *chan_bytes);

/* The same call's schedule, to play on a shared network (sched.h: ics_sched_start): the tuner's
 * choices go to *out (time_ps 0). Transfer full; NULL where ics_comm_run would return false. */
ics_sched *ics_comm_plan(ics_comm *c, const ics_coll_req *req, const ics_coll_tuning *tuning,
                         ics_coll_result *out);

/* The tuning NCCL's environment variables ask for (NCCL_ALGO, NCCL_PROTO, NCCL_NVLS_ENABLE,
 * NCCL_COLLNET_ENABLE, NCCL_MIN_NCHANNELS, NCCL_MAX_NCHANNELS, ...), read from the process's
 * environment and, beneath it, from the system's own settings (hw's "nccl_conf"; hw NULL:
 * none), the order in which NCCL reads the environment and its nccl.conf. Never fails: values
 * not understood are ignored and named in *warning (set, ICS_ERROR_INPUT, only if any). */
void ics_coll_tuning_from_env(ics_coll_tuning *t, const ics_hw *hw, GError **warning);
/* ics_coll_tuning_from_env's *warning also names every NCCL_* variable of the environment or of
 * hw's nccl_conf that icsim does not read and does not know to leave a collective's time alone
 * (NCCL_IB_TC, NCCL_IB_SL, NCCL_TUNER_PLUGIN, a plugin's variables, ...): "not modelled, ignored".
 * Whether icsim knows the variable `name` (reads it, or knows it changes no time). */
bool ics_coll_env_known(const char *name);

/* The paths NCCL_P2P_DISABLE, NCCL_P2P_LEVEL, NCCL_NET_GDR_LEVEL and NCCL_NET_GDR_READ ask
 * for, for ics_topo_set_paths; -1 where a variable is unset. Read as ics_coll_tuning_from_env
 * reads its variables. */
void ics_coll_paths_from_env(ics_topo_paths *p, const ics_hw *hw, GError **warning);
/* The same from another set of variables (a log's recorded environment): get returns a
 * variable's value, or NULL when it is unset. */
typedef const char *(*ics_env_lookup)(const char *name, void *ctx);
void ics_coll_paths_from(ics_topo_paths *p, ics_env_lookup get, void *ctx, GError **warning);
void ics_coll_tuning_from(ics_coll_tuning *t, ics_env_lookup get, void *ctx, GError **warning);

/* A set of variables over a system's own settings, as NCCL stacks its environment over its
 * nccl.conf: ics_coll_env_stacked(name, &stack) is get(name, ctx) (get NULL: the process's
 * environment), else hw's "nccl_conf" value (hw NULL: none). An ics_env_lookup. */
typedef struct {
    ics_env_lookup get;
    void *ctx;
    const ics_hw *hw;
} ics_coll_env_stack;
const char *ics_coll_env_stacked(const char *name, void *stack);
/* The system's own settings alone (an ics_env_lookup whose ctx is the ics_hw: its "nccl_conf"),
 * for runs that read no environment (a study). */
const char *ics_coll_env_conf(const char *name, void *hw);

/* NCCL_ALGO's and NCCL_PROTO's syntax as NCCL's parseList reads it: names separated by commas,
 * case-insensitive ("Ring,Tree"), the set of them; after a leading '^', every member but those
 * ("^NVLS"). Names not understood are skipped, as NCCL skips them, and the first goes to *bad
 * (transfer full; NULL if none). Returns the set, 0 when it is empty (every name unknown, or all
 * excluded). */
unsigned ics_coll_algos_parse(const char *list, char **bad);
unsigned ics_coll_protos_parse(const char *list, char **bad);

#endif
