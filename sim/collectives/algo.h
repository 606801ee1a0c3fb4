/* The algorithm interface: one file per algorithm fills one ics_algo_ops, listed once in
 * comm.c. An algorithm appends its steps for one call to a schedule; it never knows which
 * backend will play it. */
#ifndef ICS_ALGO_H
#define ICS_ALGO_H

#include "coll.h"
#include "sched.h"

/* Everything an algorithm needs for one call. */
typedef struct {
    const ics_topo *t;
    const int *ranks; /* device of each rank */
    int n;
    ics_coll_req req;
    ics_coll_proto proto;
    int nch;                     /* channels */
    double wire_factor;          /* bytes on the wire per payload byte (protocol, kernel) */
    ics_time base_lat_ps;        /* launch + protocol start-up, once */
    ics_time step_lat_ps;        /* per step on the path (NCCL's per-hop latency) */
    uint64_t reduce_bytes_per_s; /* GPU reduction rate (HBM-bound) */
} ics_algo_ctx;

typedef struct {
    ics_coll_algo algo;
    /* True if the algorithm can run this operation on these ranks. */
    bool (*supports)(const ics_algo_ctx *c);
    /* Appends the call's steps; the caller measures when the last ends. */
    void (*plan)(const ics_algo_ctx *c, ics_sched *s);
} ics_algo_ops;

extern const ics_algo_ops ics_algo_ring;
extern const ics_algo_ops ics_algo_nvls;
extern const ics_algo_ops ics_algo_direct;

/* Bytes to put on the wire for `payload` bytes under the context's protocol and kernel. */
uint64_t ics_algo_wire(const ics_algo_ctx *c, uint64_t payload);
/* Time for a GPU to reduce `bytes` (read two inputs, write one). */
ics_time ics_algo_reduce_time(const ics_algo_ctx *c, uint64_t bytes);

#endif
