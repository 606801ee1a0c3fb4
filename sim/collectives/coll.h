/* The vocabulary of collectives, as NCCL and nccl-tests name it: operations, algorithms,
 * protocols, one call's request, and nccl-tests' busbw factors. It includes nothing, so a module
 * that only names collectives (traces, workloads) compiles against nothing of the network; the
 * communicator that plans and runs them is comm.h. */
#ifndef ICS_COLL_H
#define ICS_COLL_H

#include <stdint.h>

typedef enum {
    ICS_COLL_ALL_REDUCE,
    ICS_COLL_ALL_GATHER,
    ICS_COLL_REDUCE_SCATTER,
    ICS_COLL_ALLTOALL,
    ICS_COLL_BROADCAST,
    ICS_COLL_REDUCE,
    ICS_COLL_SENDRECV,
    ICS_COLL_OP_COUNT
} ics_coll_op;

typedef enum {
    ICS_ALGO_RING,
    ICS_ALGO_TREE,
    ICS_ALGO_NVLS,
    ICS_ALGO_DIRECT,         /* all-to-all, send/recv: every pair at once */
    ICS_ALGO_NVLS_TREE,      /* NVLS inside each node, double binary tree across nodes */
    ICS_ALGO_COLLNET_DIRECT, /* IB SHARP; every GPU with a NIC is a head */
    ICS_ALGO_COLLNET_CHAIN,  /* IB SHARP; a chain inside each node */
    ICS_ALGO_PAT,            /* all-gather, reduce-scatter, one GPU per node */
    ICS_ALGO_COUNT
} ics_coll_algo;

typedef enum { ICS_PROTO_LL, ICS_PROTO_LL128, ICS_PROTO_SIMPLE, ICS_PROTO_COUNT } ics_coll_proto;

/* One collective call, as nccl-tests describes it. */
typedef struct {
    ics_coll_op op;
    uint64_t size_bytes; /* nccl-tests' size column: all-gather, reduce-scatter and all-to-all
                            give the whole (gathered) buffer */
    int dtype_bytes;     /* 4 for float */
    int root;            /* broadcast, reduce */
    /* all-to-allv (all-to-all with uneven splits, as frameworks build it from grouped NCCL
     * sends and receives): the bytes rank i sends rank j at splits[i * n + j], n the ranks of the
     * communicator; the diagonal is a rank's own copy and crosses no link. NULL: the even
     * all-to-all, size_bytes / n to each. Transfer none: valid for the duration of the call that
     * takes the request (planning copies what it needs). size_bytes is then the largest row. */
    const uint64_t *splits;
    /* all-to-all(v) moved by a kernel of the caller's own on this many SMs, not by NCCL: MoE
     * dispatchers such as DeepEP and HybridEP, whose GPU-initiated RDMA has no proxy thread and
     * whose SMs are shared among the peers the rank sends to (direct.c); 0: NCCL's channels */
    int sms;
} ics_coll_req;

/* The most bytes one rank sends one peer in this call: size_bytes / n for an even all-to-all,
 * the largest off-diagonal split for an all-to-allv, size_bytes for send/recv and the rest.
 * NCCL picks a point-to-point call's protocol and channels by it. */
uint64_t ics_coll_req_peer_bytes(const ics_coll_req *req, int n);

/* The call nccl-tests makes for `requested_bytes` (its -b/-e sizes) of dtype_bytes elements on
 * nranks: all-gather, reduce-scatter and all-to-all run each rank's share of the count, rounded
 * down, and print the whole buffer as their size; *count (may be NULL) is the count printed. */
ics_coll_req ics_coll_req_nccltests(ics_coll_op op, uint64_t requested_bytes, int dtype_bytes,
                                    int root, int nranks, uint64_t *count);

const char *ics_coll_op_name(ics_coll_op op);      /* nccl-tests' names: "all_reduce" */
const char *ics_coll_algo_name(ics_coll_algo a);   /* NCCL's names: "Ring", "NVLSTree" */
const char *ics_coll_proto_name(ics_coll_proto p); /* "LL", "LL128", "Simple" */
/* The algorithm or protocol of a name NCCL uses (case-insensitive, as NCCL_ALGO and NCCL_PROTO
 * take them); -1 if none. */
int ics_coll_algo_from_name(const char *name);
int ics_coll_proto_from_name(const char *name);
/* busbw = algbw x factor, nccl-tests' definitions. */
double ics_coll_busbw_factor(ics_coll_op op, int nranks);

#endif
