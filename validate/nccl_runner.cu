/* nccl_runner.cu: NCCL's own collectives beside ours, as nccl-tests runs them with -g N in one
 * process: ncclCommInitAll over the GPUs, and each call a group of one call per GPU.
 * Invariant: the buffers and counts are those our kernels get for the same row. */
#include "gpus_impl.cuh"
#include "nccl_runner.h"

#include <nccl.h>

#define ICSV_NCCL(call)                                                                            \
    do {                                                                                           \
        ncclResult_t icsv_r_ = (call);                                                             \
        if (icsv_r_ != ncclSuccess)                                                                \
            icsv_die(__FILE__, __LINE__, #call, ncclGetErrorString(icsv_r_));                      \
    } while (0)

struct icsv_nccl {
    int n;
    ncclComm_t comm[ICSV_MAX_GPUS];
    int dev[ICSV_MAX_GPUS];
};

bool icsv_nccl_built(void)
{
    return true;
}

const char *icsv_nccl_version(void)
{
    static char text[32];
    int v = 0;
    if (ncclGetVersion(&v) != ncclSuccess)
        return NULL;
    /* since 2.9: major * 10000 + minor * 100 + patch; before: major * 1000 + minor * 100 */
    if (v >= 10000)
        std::snprintf(text, sizeof text, "%d.%d.%d", v / 10000, v / 100 % 100, v % 100);
    else
        std::snprintf(text, sizeof text, "%d.%d.%d", v / 1000, v / 100 % 10, v % 100);
    return text;
}

icsv_nccl *icsv_nccl_new(int n, const int *devs)
{
    icsv_nccl *c = new icsv_nccl{};
    c->n = n;
    for (int r = 0; r < n; r++)
        c->dev[r] = devs[r];
    ICSV_NCCL(ncclCommInitAll(c->comm, n, c->dev));
    return c;
}

void icsv_nccl_free(icsv_nccl *c)
{
    if (!c)
        return;
    for (int r = 0; r < c->n; r++)
        ICSV_NCCL(ncclCommDestroy(c->comm[r]));
    delete c;
}

static ncclDataType_t nccl_type(icsv_dtype t)
{
    return t == ICSV_BF16 ? ncclBfloat16 : ncclFloat;
}

/* One rank's part of the call: nccl-tests' RunColl for each collective. */
static void enqueue(const icsv_nccl *c, int r, icsv_op op, ncclDataType_t t, size_t elt,
                    const icsv_counts *n, char *in, char *out, cudaStream_t s)
{
    ncclComm_t comm = c->comm[r];
    switch (op) {
    case ICSV_OP_ALL_REDUCE:
        ICSV_NCCL(ncclAllReduce(in, out, n->count, t, ncclSum, comm, s));
        break;
    case ICSV_OP_ALL_GATHER:
        ICSV_NCCL(ncclAllGather(in, out, n->count, t, comm, s));
        break;
    case ICSV_OP_REDUCE_SCATTER:
        ICSV_NCCL(ncclReduceScatter(in, out, n->count, t, ncclSum, comm, s));
        break;
    case ICSV_OP_ALLTOALL:
        for (int p = 0; p < c->n; p++) {
            ICSV_NCCL(ncclSend(in + p * n->count * elt, n->count, t, p, comm, s));
            ICSV_NCCL(ncclRecv(out + p * n->count * elt, n->count, t, p, comm, s));
        }
        break;
    case ICSV_OP_SENDRECV:
        ICSV_NCCL(ncclSend(in, n->count, t, (r + 1) % c->n, comm, s));
        ICSV_NCCL(ncclRecv(out, n->count, t, (r + c->n - 1) % c->n, comm, s));
        break;
    default:
        icsv_die(__FILE__, __LINE__, "enqueue", "collective without an NCCL call");
    }
}

void icsv_nccl_launch(icsv_nccl *c, icsv_op op, icsv_dtype t, const icsv_counts *n, char *const *in,
                      char *const *out, void *const *streams)
{
    ICSV_NCCL(ncclGroupStart());
    for (int r = 0; r < c->n; r++)
        enqueue(c, r, op, nccl_type(t), icsv_dtype_size(t), n, in[r], out[r],
                (cudaStream_t)streams[r]);
    ICSV_NCCL(ncclGroupEnd());
}
