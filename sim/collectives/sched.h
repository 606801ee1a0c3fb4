/* Schedules: what an algorithm produces and the runtime plays. A schedule is a DAG of steps —
 * transfers, in-switch reductions, GPU work and fixed delays — each starting once all the steps
 * it depends on have ended. Steps are appended in an order where dependencies come first. */
#ifndef ICS_SCHED_H
#define ICS_SCHED_H

#include <stdbool.h>
#include <stdint.h>

#include "net/net.h"

typedef enum {
    ICS_STEP_SEND,      /* net send src -> dst */
    ICS_STEP_REDUCE,    /* in-switch reduction (NVLS): srcs -> sw -> dsts */
    ICS_STEP_MULTICAST, /* in-switch copy (NVLS multimem.st): src -> sw -> dsts */
    ICS_STEP_DELAY,     /* a fixed time: protocol and launch latency, GPU reduction work */
    ICS_STEP_STREAM,    /* legs moving together at one rate (a pipeline in steady state) */
    ICS_STEP_BATCH,     /* independent sends started together, played by ics_net_batch */
} ics_step_kind;

typedef struct ics_sched ics_sched;

ics_sched *ics_sched_new(void);
void ics_sched_free(ics_sched *s);

/* Each returns the step's index. deps: indices of earlier steps (transfer none). */
int ics_sched_send(ics_sched *s, int src, int dst, uint64_t bytes, uint64_t flow_hash,
                   const int *deps, int ndeps);
int ics_sched_delay(ics_sched *s, ics_time delay_ps, const int *deps, int ndeps);
int ics_sched_reduce(ics_sched *s, const int *devs, int ndevs, int sw, uint64_t bytes,
                     const int *deps, int ndeps);
/* legs are copied. */
int ics_sched_stream(ics_sched *s, const ics_net_leg *legs, int nlegs, const int *deps, int ndeps);
/* A batch: legs that are separate messages (an all-to-all's sends of a wave), not a pipeline's
 * stages; a stream wherever the backend has no batch of its own (ics_net_batch). */
int ics_sched_batch(ics_sched *s, const ics_net_leg *legs, int nlegs, const int *deps, int ndeps);
/* A reduction whose result goes to dsts only (NVLS-Tree: the node's sum to its head); ndst 0:
 * back to the sources, as ics_sched_reduce. */
int ics_sched_reduce_to(ics_sched *s, const int *srcs, int nsrc, int sw, const int *dsts, int ndst,
                        uint64_t bytes, const int *deps, int ndeps);
int ics_sched_multicast(ics_sched *s, int src, int sw, const int *dsts, int ndst, uint64_t bytes,
                        const int *deps, int ndeps);
/* Step id ends no earlier than floor_ps after it starts, however fast the network moves it:
 * what a GPU's thread block copies per second bounds a channel's transfer even where the links
 * would be faster. */
void ics_sched_set_floor(ics_sched *s, int id, ics_time floor_ps);
/* Step id ends tail_ps after its work (and floor): the synchronization after a slice (a fence,
 * a flag) that keeps its channel busy and its receiver waiting. */
void ics_sched_set_tail(ics_sched *s, int id, ics_time tail_ps);
int ics_sched_len(const ics_sched *s);
/* A bound on the steps s takes (0: none). Past it the schedule stops growing: further steps
 * are not kept, each returns the last kept step's index, and ics_sched_over says so; the
 * schedule is then only good for freeing. What lets ics_comm_plan try a chunk-level plan and
 * give it up for streams once it grows past ICS_STREAMS_AUTO_STEPS holding that many steps,
 * not the millions it would have made (the algorithm's loops still run to their end, storing
 * nothing: tens of milliseconds for the longest calls). */
void ics_sched_limit(ics_sched *s, int max_steps);
bool ics_sched_over(const ics_sched *s);

/* A schedule being played. */
typedef struct ics_sched_play ics_sched_play;

/* Starts playing s (transfer full: freed once played) on engine e over net, its steps with no
 * dependencies now; calls done(e, ctx, tag) when the last step ends. Several schedules may play
 * on one network at once, sharing its links (trace replay). Returns the play (transfer none):
 * it frees itself, and s, just before calling done; until then ics_sched_abandon frees one whose
 * engine stopped for good (past its horizon, engine.h), whose done will never come. */
ics_sched_play *ics_sched_start(ics_sched *s, ics_engine *e, ics_net *net, ics_net_done_fn done,
                                void *ctx, uint64_t tag);
void ics_sched_abandon(ics_sched_play *p);

/* Plays the schedule on a fresh engine and backend over topology t; returns the time the last
 * step ends, or ICS_TIME_LIMIT if it would end at or past the simulator's horizon (time.h). */
ics_time ics_sched_run(const ics_sched *s, const ics_topo *t, const ics_net_ops *backend,
                       const ics_net_params *params);
/* The same, adding the payload bytes each channel carried to chan_bytes[0 .. nchans of t) when
 * it is not NULL (the links a memoized call used: replay's hot-spot report). */
ics_time ics_sched_run_traffic(const ics_sched *s, const ics_topo *t, const ics_net_ops *backend,
                               const ics_net_params *params, uint64_t *chan_bytes);
/* ics_sched_run_traffic on s itself (transfer full: played in place and freed), for a caller
 * done with it: a chunk plan holds up to a million steps, and the copy was a fifth of a
 * replay that memoizes such calls (Llama 3 405B's data-parallel reduce-scatters on 84 ranks). */
ics_time ics_sched_run_take(ics_sched *s, const ics_topo *t, const ics_net_ops *backend,
                            const ics_net_params *params, uint64_t *chan_bytes);

#endif
