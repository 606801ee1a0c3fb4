/* Replaying a trace (trace.h) on a topology: every rank's streams advance as CUDA streams do,
 * collectives run the schedules NCCL's algorithms would (collectives/), sends and recvs move
 * their bytes, all on one engine and one network so that concurrent traffic shares links.
 *
 * How collectives are simulated (ics_replay_opts.colls):
 *   - FULL: every call plays its schedule on the shared network;
 *   - MEMO: every call lasts what the same call takes alone on an idle network (simulated once
 *     per communicator shape, operation and size, then reused): fast, blind to contention;
 *   - AUTO (default): MEMO for communicators whose links no other communicator or send/recv
 *     pair of the trace uses (tensor parallelism inside a node: nothing else can slow them, so
 *     MEMO is exact), FULL for the others.
 * Calls on one communicator run one after another, as NCCL's do.
 *
 * Folded traces. Where ranks are symmetric (the tensor-parallel peers and data-parallel
 * replicas of a training job do the same work at the same time), a trace may give ops to one
 * representative and leave the others empty. A call then starts once its members with ops
 * have arrived, and still moves every member's bytes (its schedule covers the whole
 * communicator); what is lost is the traffic of the mirrored ranks' own calls and sends, which
 * on a rail-optimized, non-blocking fabric use other links. */
#ifndef ICS_REPLAY_H
#define ICS_REPLAY_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "net/net.h"
#include "topo/topo.h"
#include "collectives/comm.h"
#include "trace/trace.h"

typedef enum { ICS_REPLAY_AUTO, ICS_REPLAY_FULL, ICS_REPLAY_MEMO } ics_replay_colls;

/* The host's time to launch one kernel from a framework running eagerly (PyTorch with
 * Transformer Engine), microseconds: the CPU path of one op, from the Python call through
 * PyTorch's dispatcher and the library's host code to cudaLaunchKernel, adds up to ~6-15 us
 * (docs/replay.md, "The host"); the middle of it. Frameworks that capture CUDA graphs pay
 * less; a user sets theirs with --host-launch-us. */
#define ICS_REPLAY_HOST_LAUNCH_US 10.0

typedef struct {
    const ics_net_ops *backend; /* NULL: packet */
    ics_net_params net;
    ics_coll_tuning tuning; /* as ics_coll_tuning_from_env fills it */
    ics_replay_colls colls;
    const int *gpu_of_rank; /* device id of each trace rank; NULL: rank r on the r-th GPU */
    ics_time p2p_lat_ps;    /* NCCL's fixed cost of a send/recv; < 0: the default (8.4 us) */
    ics_time sample_ps;     /* > 0: sample link load from this interval on (timelines) */
    /* called now and then during ics_replay_run (every few thousand events): the simulated
     * time and how many of the trace's ops have ended; NULL: never. It must not touch r. */
    void (*progress)(void *ctx, ics_time now, uint64_t ops_done, uint64_t ops_total);
    void *progress_ctx;
    /* The host: one CPU thread per rank launches its ops' kernels in program order, each launch
     * taking host_launch_ps (0: the host is not modelled), and stops at an op marked host_sync
     * until the GPU reaches it (ics_trace_op). An op cannot start before its first kernel is
     * launched, nor a compute op end before its last has had its share of the op's time.
     * Only ops on a rank's first stream (the compute stream) wait for the host; ops with no
     * launches (trace files that give none) never do. */
    ics_time host_launch_ps;
} ics_replay_opts;

/* Where one rank's time went, seen from its first stream (the compute stream). Every instant
 * from 0 to the rank's end is charged to exactly one field, so they add up to end_ps:
 *   - busy_ps[c]: an op of category c runs on the stream (a collective from the moment all its
 *     members have arrived);
 *   - wait_ps[c]: the stream waits for an op of category c on another stream or rank while that
 *     op moves data: exposed communication (a recv's transfer, a gradient all-reduce);
 *   - bubble_ps: the stream waits for nothing this rank can speed up: a peer that has not
 *     reached the collective or posted the send yet (the pipeline bubble), or idles;
 *   - host_ps: the stream waits for the host to launch its next kernels (a host-bound step). */
typedef struct {
    ics_time busy_ps[ICS_CAT_COUNT];
    ics_time wait_ps[ICS_CAT_COUNT];
    ics_time bubble_ps;
    ics_time host_ps; /* the stream waits for the host to launch its kernels (opts) */
    ics_time end_ps;  /* the rank's last op (any stream) ends */
} ics_replay_rank;

typedef struct {
    ics_time step_ps;                /* the last op of any rank ends */
    int critical_rank;               /* the rank that ends last (lowest index on ties) */
    uint64_t events;                 /* engine events processed */
    uint64_t colls_full, colls_memo; /* collective calls by how they were simulated */
    bool folded;                     /* the trace was folded (see above) */
    ics_net_stats net;
} ics_replay_result;

/* One op's span, for timelines: ready (its dependencies ended: it was issued), start (its
 * work began: once the host launched its first kernel, and a collective once all members
 * arrived, a send/recv once both sides posted), end (a compute op's includes its wait for the
 * host's last launch). */
typedef struct {
    int rank, op;
    ics_time ready, start, end;
} ics_replay_span;

typedef struct ics_replay ics_replay;

/* Checks the trace fits the topology (enough GPUs, the communicators' collectives can run) and
 * prepares the replay; NULL and sets *error (ICS_ERROR_INPUT) otherwise, or ICS_ERROR_LIMIT when
 * the replay would outgrow the memory budget (core/budget.h, estimated from the ops and
 * dependencies before anything is built) or a compute op alone lasts past the simulator's
 * horizon (ICS_TIME_LIMIT, naming the op). The trace and topology must outlive the replay.
 * Transfer full. */
ics_replay *ics_replay_new(const ics_trace *tr, const ics_topo *t, const ics_replay_opts *o,
                           GError **error);
void ics_replay_free(ics_replay *r);

/* Plays the whole trace once. False and sets *error if it cannot finish: ICS_ERROR_INPUT for a
 * dependency cycle, a collective or recv some rank never reaches; ICS_ERROR_LIMIT, naming the
 * op, when simulated time would pass the horizon (ICS_TIME_LIMIT, 53 days). */
bool ics_replay_run(ics_replay *r, ics_replay_result *out, GError **error);

/* After a run: rank r's breakdown (transfer none). */
const ics_replay_rank *ics_replay_rank_stats(const ics_replay *r, int rank);
/* After a run: every op's span, in order of rank then op (transfer none). */
const ics_replay_span *ics_replay_spans(const ics_replay *r, size_t *n);
/* After a run: payload bytes each channel of the topology carried, those of memoized
 * collectives included (each call counted on its own communicator's channels, as it would have
 * moved them alone), for the hot-spot report. */
uint64_t ics_replay_chan_bytes(const ics_replay *r, int chan);

/* Link load samples (when opts.sample_ps > 0): channel `chan` had carried `cum` payload bytes
 * at time round x interval, and fewer at the round before. Entries come in round order; the
 * interval may have grown from opts.sample_ps (long runs keep at most ~1000 rounds). */
typedef struct {
    int64_t round;
    int chan;
    uint64_t cum;
} ics_replay_link_sample;
const ics_replay_link_sample *ics_replay_link_samples(const ics_replay *r, size_t *n,
                                                      ics_time *interval_ps);

#endif
