/* The vocabulary's names (coll.h): nccl-tests' operation names, NCCL's algorithm and protocol
 * names, and nccl-tests' busbw factors. */
#include "collectives/coll.h"

#include <glib.h>

static const char *const op_names[] = {"all_reduce", "all_gather", "reduce_scatter", "alltoall",
                                       "broadcast",  "reduce",     "sendrecv"};
static const char *const algo_names[ICS_ALGO_COUNT] = {
    [ICS_ALGO_RING] = "Ring",
    [ICS_ALGO_TREE] = "Tree",
    [ICS_ALGO_NVLS] = "NVLS",
    [ICS_ALGO_DIRECT] = "Direct",
    [ICS_ALGO_NVLS_TREE] = "NVLSTree",
    [ICS_ALGO_COLLNET_DIRECT] = "CollNetDirect",
    [ICS_ALGO_COLLNET_CHAIN] = "CollNetChain",
    [ICS_ALGO_PAT] = "PAT",
};
static const char *const proto_names[] = {"LL", "LL128", "Simple"};

const char *ics_coll_op_name(ics_coll_op op)
{
    return (unsigned)op < ICS_COLL_OP_COUNT ? op_names[op] : "?";
}

const char *ics_coll_algo_name(ics_coll_algo a)
{
    return (unsigned)a < ICS_ALGO_COUNT ? algo_names[a] : "?";
}

const char *ics_coll_proto_name(ics_coll_proto p)
{
    return (unsigned)p < ICS_PROTO_COUNT ? proto_names[p] : "?";
}

double ics_coll_busbw_factor(ics_coll_op op, int nranks)
{
    double n = nranks;
    switch (op) {
    case ICS_COLL_ALL_REDUCE:
        return 2 * (n - 1) / n;
    case ICS_COLL_ALL_GATHER:
    case ICS_COLL_REDUCE_SCATTER:
    case ICS_COLL_ALLTOALL:
        return (n - 1) / n;
    default:
        return 1.0;
    }
}

uint64_t ics_coll_req_peer_bytes(const ics_coll_req *req, int n)
{
    if (req->op != ICS_COLL_ALLTOALL || n < 1)
        return req->size_bytes;
    if (!req->splits)
        return req->size_bytes / (uint64_t)n;
    uint64_t most = 0;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++)
            if (i != j)
                most = MAX(most, req->splits[(size_t)i * (size_t)n + (size_t)j]);
    return most;
}

/* Case-insensitive lookup of name among count names; -1 if absent. */
static int lookup(const char *name, const char *const *names, int count)
{
    for (int i = 0; i < count; i++)
        if (g_ascii_strcasecmp(name, names[i]) == 0)
            return i;
    return -1;
}

int ics_coll_algo_from_name(const char *name)
{
    return lookup(name, algo_names, ICS_ALGO_COUNT);
}

int ics_coll_proto_from_name(const char *name)
{
    return lookup(name, proto_names, ICS_PROTO_COUNT);
}

ics_coll_req ics_coll_req_nccltests(ics_coll_op op, uint64_t requested_bytes, int dtype_bytes,
                                    int root, int nranks, uint64_t *count)
{
    g_assert(dtype_bytes > 0 && nranks > 0);
    uint64_t n = requested_bytes / (uint64_t)dtype_bytes, size;
    switch (op) {
    case ICS_COLL_ALL_GATHER:
    case ICS_COLL_REDUCE_SCATTER:
    case ICS_COLL_ALLTOALL:
        /* nccl-tests' paramCount: each rank's share; the buffer is share x nranks */
        n /= (uint64_t)nranks;
        size = n * (uint64_t)nranks * (uint64_t)dtype_bytes;
        break;
    default:
        size = n * (uint64_t)dtype_bytes;
        break;
    }
    if (count)
        *count = n;
    return (ics_coll_req){.op = op, .size_bytes = size, .dtype_bytes = dtype_bytes, .root = root};
}
