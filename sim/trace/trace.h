/* A workload as every rank's operations: what trace readers (our JSON, Chakra) and the training
 * generator produce and the replayer (replay.h) plays.
 *
 * The model follows CUDA and NCCL semantics:
 *   - a rank is one GPU; it owns named streams, and ops on one stream run in order;
 *   - an op also waits for its explicit dependencies (earlier ops of the same rank, any stream),
 *     as cudaStreamWaitEvent does;
 *   - a collective runs on a communicator (a list of trace ranks); the k-th collective a
 *     communicator sees at each of its ranks is one call (NCCL's matching rule), which starts
 *     once every member has reached it;
 *   - a send to rank p and the recv posted at p for this rank match in order, per (src, dst).
 * Each op carries the category the step-time breakdown charges it to. */
#ifndef ICS_TRACE_H
#define ICS_TRACE_H

#include <stdbool.h>
#include <stdint.h>

#include "collectives/coll.h"
#include "core/time.h"

typedef enum {
    ICS_TOP_COMPUTE, /* GPU kernel(s): a fixed duration, or FLOPs and bytes for the GPU model */
    ICS_TOP_COLL,    /* an NCCL collective on a communicator */
    ICS_TOP_SEND,    /* NCCL send to a peer rank */
    ICS_TOP_RECV,    /* NCCL recv from a peer rank */
    ICS_TOP_KIND_COUNT
} ics_top_kind;

/* What the breakdown charges an op's exposed time to. */
typedef enum {
    ICS_CAT_COMPUTE,
    ICS_CAT_TP, /* tensor (and sequence) parallel collectives */
    ICS_CAT_PP, /* pipeline sends and receives */
    ICS_CAT_DP, /* data-parallel gradient reduction, parameter gathers */
    ICS_CAT_OTHER,
    ICS_CAT_COUNT
} ics_trace_cat;

/* How compute ops without a duration are costed (compute.h). */
typedef enum {
    ICS_WORK_GEMM,        /* tensor-core matrix multiply: FLOP-bound, efficiency by shape */
    ICS_WORK_ATTENTION,   /* fused attention */
    ICS_WORK_ELEMENTWISE, /* memory-bound: layer norm, activations, optimizer */
    ICS_WORK_KIND_COUNT
} ics_work_kind;

typedef struct {
    ics_top_kind kind;
    int stream; /* index of the rank's stream (ics_trace_add_stream) */
    ics_trace_cat cat;
    const char *name; /* label for timelines; copied by ics_trace_add_op; may be NULL */
    /* compute */
    ics_time duration_ps; /* > 0: this duration; 0: from work below */
    ics_work_kind work;
    double flops;     /* floating-point operations */
    double mem_bytes; /* HBM traffic */
    ics_dtype dtype;  /* of the math */
    int m, n, k;      /* GEMM shape when known (efficiency by size); 0 otherwise */
    /* collective */
    int comm; /* communicator index */
    ics_coll_req coll;
    /* send / recv */
    int peer;       /* trace rank at the other end */
    uint64_t bytes; /* payload */
} ics_trace_op;

typedef struct ics_trace ics_trace;

/* An empty trace of nranks ranks (>= 1). Transfer full. */
ics_trace *ics_trace_new(int nranks);
void ics_trace_free(ics_trace *t);

int ics_trace_nranks(const ics_trace *t);

/* A communicator over trace ranks (copied; distinct, each < nranks). Returns its index. */
int ics_trace_add_comm(ics_trace *t, const int *ranks, int n, const char *name);
int ics_trace_ncomms(const ics_trace *t);
/* Its ranks (transfer none) and size. */
const int *ics_trace_comm_ranks(const ics_trace *t, int comm, int *n);
const char *ics_trace_comm_name(const ics_trace *t, int comm);

/* A stream of `rank`, named (copied). Returns its index within the rank. */
int ics_trace_add_stream(ics_trace *t, int rank, const char *name);
int ics_trace_nstreams(const ics_trace *t, int rank);
const char *ics_trace_stream_name(const ics_trace *t, int rank, int stream);

/* Appends an op to `rank` (copied, name too). deps: indices of earlier ops of the same rank
 * (copied). Returns the op's index within the rank. The caller guarantees the indices are in
 * range (readers check user input before adding). */
int ics_trace_add_op(ics_trace *t, int rank, const ics_trace_op *op, const int *deps, int ndeps);
int ics_trace_nops(const ics_trace *t, int rank);
const ics_trace_op *ics_trace_get_op(const ics_trace *t, int rank, int i);
/* The op's dependencies (transfer none). */
const int *ics_trace_op_deps(const ics_trace *t, int rank, int i, int *ndeps);

/* A consistency check of what replay relies on; on failure a message (transfer full) naming
 * the rank and op: every communicator's members issue the same sequence of collectives (op and
 * size), sends and recvs pair up. Members with no ops at all are skipped: a folded trace (one
 * representative of symmetric ranks, see replay.h) leaves the others empty. */
bool ics_trace_check(const ics_trace *t, char **err);

const char *ics_trace_cat_name(ics_trace_cat c); /* "compute", "tp", "pp", "dp", "other" */

#endif
