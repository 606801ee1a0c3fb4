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
 * Calls on one communicator run one after another, as NCCL's do. */
#ifndef ICS_REPLAY_H
#define ICS_REPLAY_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "sim/net.h"
#include "sim/topo.h"
#include "sim/trace.h"

typedef enum { ICS_REPLAY_AUTO, ICS_REPLAY_FULL, ICS_REPLAY_MEMO } ics_replay_colls;

typedef struct {
    const ics_net_ops *backend; /* NULL: packet */
    ics_net_params net;
    ics_coll_tuning tuning; /* as ics_coll_tuning_from_env fills it */
    ics_replay_colls colls;
    const int *gpu_of_rank; /* device id of each trace rank; NULL: rank r on the r-th GPU */
    ics_time p2p_lat_ps;    /* NCCL's fixed cost of a send/recv; < 0: the default (8.4 us) */
} ics_replay_opts;

/* Where one rank's time went, on its first stream (the compute stream): every instant from 0
 * to the rank's end is charged to exactly one of these, so they add up to the rank's end. */
typedef struct {
    ics_time cat_ps[ICS_CAT_COUNT]; /* ops of each category on the stream, while they run */
    ics_time idle_ps;               /* the stream waits with nothing running: pipeline bubble,
                                       waiting for a peer, exposed communication of other
                                       streams it depends on */
    ics_time end_ps;                /* the rank's last op ends */
} ics_replay_rank;

typedef struct {
    ics_time step_ps;                /* the last op of any rank ends */
    int critical_rank;               /* the rank that ends last (lowest index on ties) */
    uint64_t events;                 /* engine events processed */
    uint64_t colls_full, colls_memo; /* collective calls by how they were simulated */
    ics_net_stats net;
} ics_replay_result;

/* One op's span, for timelines. */
typedef struct {
    int rank, op;
    ics_time start, end;
} ics_replay_span;

typedef struct ics_replay ics_replay;

/* Checks the trace fits the topology (enough GPUs, the communicators' collectives can run) and
 * prepares the replay; NULL with *err (transfer full) otherwise. The trace and topology must
 * outlive the replay. Transfer full. */
ics_replay *ics_replay_new(const ics_trace *tr, const ics_topo *t, const ics_replay_opts *o,
                           char **err);
void ics_replay_free(ics_replay *r);

/* Plays the whole trace once. False with *err if it cannot finish (a dependency cycle, a
 * collective or recv some rank never reaches). */
bool ics_replay_run(ics_replay *r, ics_replay_result *out, char **err);

/* After a run: rank r's breakdown (transfer none). */
const ics_replay_rank *ics_replay_rank_stats(const ics_replay *r, int rank);
/* After a run: every op's span, in order of rank then op (transfer none). */
const ics_replay_span *ics_replay_spans(const ics_replay *r, size_t *n);
/* After a run: payload bytes each channel of the topology carried, and the time it was busy
 * (from its first to its last byte), for the timeline's link tracks. */
uint64_t ics_replay_chan_bytes(const ics_replay *r, int chan);

#endif
