/* The replayer's state, shared by its files (replay.c: graph and run; replay_coll.c:
 * collectives; replay_p2p.c: sends and recvs; replay_breakdown.c: where time went;
 * replay_sampler.c: link load over time). Not a public header. */
#ifndef ICS_REPLAY_INTERNAL_H
#define ICS_REPLAY_INTERNAL_H

#include <glib.h>

#include "replay/replay.h"

typedef struct {
    int rank;
    int waiting;         /* dependencies (and stream predecessor) not yet ended */
    int call;            /* collectives: index of the call on its communicator */
    bool started, ended; /* started: it was ready and the host reached it (host_last is set) */
    ics_time ready;      /* all it waited for had ended */
    ics_time begin;      /* its work began (see ics_replay_span) */
    ics_time end;
    /* the host (replay.h, ics_replay_opts.host_launch_ps), where it launches the op: when it
     * launched its last kernel (0: it launches none), and of end - begin, a compute op's wait
     * for that kernel; the wait for its first is ics_replay_host_delay's */
    ics_time host_last, host_tail;
} op_state;

typedef struct {
    int arrived;      /* members that reached the call */
    ics_time started; /* all arrived and the communicator was free */
} call_state;

typedef struct {
    ics_comm *comm;
    int n;
    int active; /* members with ops: the call starts when they have arrived */
    int ncalls;
    call_state *calls;
    int *members;                /* ops (global ids) of call k: members[k * active .. + arrived) */
    int next;                    /* the call that runs next: calls run one after another */
    bool busy;                   /* a call is running */
    struct ics_sched_play *play; /* the running call's schedule (not memoized), or NULL */
    bool memo;                   /* its calls last what they take alone (see replay.h) */
    char *sig;                   /* memo key prefix: the communicator's shape */
} comm_state;

struct ics_replay {
    const ics_trace *tr;
    const ics_topo *t;
    const ics_net_ops *backend;
    ics_net_params net_params;
    ics_coll_tuning tuning;
    ics_replay_colls mode;
    bool folded; /* some communicator has members without ops */
    ics_time p2p_lat_ps;
    ics_time host_launch_ps; /* opts; 0: no host */
    ics_time *host;          /* per rank: when its host has launched everything it issued */
    ics_time sample_ps;
    void (*progress)(void *ctx, ics_time now, uint64_t ops_done, uint64_t ops_total);
    void *progress_ctx;
    const ics_hw_gpu_type *gpu_type;
    int *gpu;          /* device of each trace rank */
    int *base;         /* global id of rank k's op i = base[k] + i */
    op_state *ops;     /* by global id */
    int *succ0, *succ; /* successors of op g: succ[succ0[g] .. succ0[g + 1]) */
    comm_state *comms;
    GHashTable *memo;  /* key -> memo_call (replay_coll.c): a call's duration alone, its bytes */
    GHashTable *pairs; /* (src * nranks + dst) -> p2p queues */
    /* while running */
    bool ran;
    ics_engine *e;
    ics_net *net;
    int remaining;     /* ops not yet ended */
    int horizon_op;    /* the op found to end past ICS_TIME_LIMIT (global id), or -1 */
    GHashTable *xfers; /* send/recv transfers under way (replay_p2p.c): freed if the run stops */
    uint64_t colls_full, colls_memo;
    uint64_t *memo_bytes;   /* per channel: bytes memoized calls moved (not on r->net) */
    uint64_t *memo_scratch; /* per channel, zero between uses: one memoized call's bytes */
    /* results */
    ics_replay_rank *ranks;
    ics_replay_span *spans;
    uint64_t *chan_bytes;
    struct ics_replay_sampler *sampler;
};

void ics_replay_op_start(ics_replay *r, int g);
/* Of op g's wait from ready to begin, the part before the host launched its first kernel. */
ics_time ics_replay_host_delay(const ics_replay *r, int g);
void ics_replay_op_end(ics_replay *r, int g);

/* replay_coll.c */
/* Which communicators' calls are memoized; false and sets *error (ICS_ERROR_INPUT) if one
 * issues an operation no algorithm the tuning allows can run. */
bool ics_replay_classify_comms(ics_replay *r, GError **error);
void ics_replay_coll_arrive(ics_replay *r, int g, const ics_trace_op *op);
/* Frees a value of r->memo. */
void ics_replay_memo_free(void *m);

/* How a collective call that must end past the horizon names itself (replay.c notes it). */
void ics_replay_past_horizon(ics_replay *r, int g);

/* replay_p2p.c */
void ics_replay_p2p_post(ics_replay *r, int g, const ics_trace_op *op);
void ics_replay_pair_free(void *pair);

/* replay_breakdown.c: fills r->ranks and r->spans after a complete run. */
void ics_replay_breakdown(ics_replay *r);

/* replay_sampler.c: link load samples for the timeline (only when asked for). */
void ics_replay_sampler_start(ics_replay *r);
void ics_replay_sampler_last(ics_replay *r);
void ics_replay_sampler_free(ics_replay *r);

#endif
