/* coll.cu: one collective, many sizes: the buffers nccl-tests would allocate, the pointers it
 * would pass in and out of place, the timing loop, and the #wrong check, for whichever kernel
 * moves the bytes (ours, NVLS, NCCL), chosen from one table.
 * Invariant: a kernel sees the same pointers whether it is timed or checked. */
#include "coll_impl.cuh"
#include "nccl_runner.h"

#include <chrono>

struct icsv_coll {
    icsv_gpus *g;
    icsv_op op;
    icsv_dtype dtype;
    icsv_kernel kernel;
    icsv_kernel_params p;
    const struct kernel_entry *entry;
    char *send[ICSV_MAX_GPUS], *recv[ICSV_MAX_GPUS];
    unsigned long long *wrong[ICSV_MAX_GPUS];
    icsv_conn *conn;
    icsv_a2a *a2a;
    icsv_nvls *nvls;
    icsv_nccl *nccl;
    uint32_t launches;
};

static void launch_ring(icsv_coll *c, const coll_call *call)
{
    ring_launch(c->conn, call, &c->p);
}

static void launch_sendrecv(icsv_coll *c, const coll_call *call)
{
    sendrecv_launch(c->conn, call, &c->p);
}

static void launch_a2a(icsv_coll *c, const coll_call *call)
{
    a2a_launch(c->a2a, call, &c->p);
}

static void launch_nvls(icsv_coll *c, const coll_call *call)
{
    nvls_launch(c->nvls, call, &c->p, c->launches);
}

static void launch_nccl(icsv_coll *c, const coll_call *call)
{
    void *streams[ICSV_MAX_GPUS];
    for (int r = 0; r < c->g->n; r++)
        streams[r] = c->g->stream[r];
    icsv_nccl_launch(c->nccl, call->op, call->dtype, &call->counts, call->in, call->out, streams);
}

/* What moves the bytes of each (kernel, collective), and the name JSON records. The params
 * mask says which kernel_params the kernel honours. */
enum { P_CTAS = 1, P_UNROLL = 2, P_CHUNK = 4, P_SLICES = 8 };
struct kernel_entry {
    icsv_kernel kernel;
    icsv_op op; /* ICSV_OP_COUNT: any */
    const char *name;
    void (*launch)(icsv_coll *c, const coll_call *call);
    int params;
};

static const kernel_entry kernels[] = {
    {.kernel = ICSV_KERNEL_ICSIM,
     .op = ICSV_OP_ALL_REDUCE,
     .name = "icsim-simple-ring",
     .launch = launch_ring,
     .params = P_CTAS | P_UNROLL | P_CHUNK | P_SLICES},
    {.kernel = ICSV_KERNEL_ICSIM,
     .op = ICSV_OP_ALL_GATHER,
     .name = "icsim-simple-ring",
     .launch = launch_ring,
     .params = P_CTAS | P_UNROLL | P_CHUNK | P_SLICES},
    {.kernel = ICSV_KERNEL_ICSIM,
     .op = ICSV_OP_REDUCE_SCATTER,
     .name = "icsim-simple-ring",
     .launch = launch_ring,
     .params = P_CTAS | P_UNROLL | P_CHUNK | P_SLICES},
    {.kernel = ICSV_KERNEL_ICSIM,
     .op = ICSV_OP_SENDRECV,
     .name = "icsim-simple-p2p",
     .launch = launch_sendrecv,
     .params = P_CTAS | P_UNROLL | P_CHUNK | P_SLICES},
    {.kernel = ICSV_KERNEL_ICSIM,
     .op = ICSV_OP_ALLTOALL,
     .name = "icsim-direct",
     .launch = launch_a2a,
     .params = P_CTAS | P_UNROLL},
    {.kernel = ICSV_KERNEL_NVLS,
     .op = ICSV_OP_ALL_REDUCE,
     .name = "icsim-nvls",
     .launch = launch_nvls,
     .params = P_CTAS | P_UNROLL},
    {.kernel = ICSV_KERNEL_NCCL,
     .op = ICSV_OP_COUNT,
     .name = "nccl",
     .launch = launch_nccl,
     .params = 0},
};

static const kernel_entry *find_entry(icsv_kernel k, icsv_op op)
{
    for (const kernel_entry &e : kernels)
        if (e.kernel == k && (e.op == op || e.op == ICSV_OP_COUNT))
            return &e;
    return nullptr;
}

/* What the kernel needs besides buffers. False: the machine cannot run it (printed). */
static bool make_transport(icsv_coll *c, uint64_t max_bytes)
{
    icsv_gpus *g = c->g;
    switch (c->kernel) {
    case ICSV_KERNEL_NCCL:
        return (c->nccl = icsv_nccl_new(g->n, g->dev)) != nullptr;
    case ICSV_KERNEL_NVLS:
        return nvls_kernel_ready(g) && (c->nvls = nvls_new(g, max_bytes)) != nullptr;
    default:
        if (g->n > 1 && !icsv_gpus_require_peers(g))
            return false;
        if (c->op == ICSV_OP_ALLTOALL)
            c->a2a = a2a_new(g, &c->p);
        else
            c->conn = conn_new(g, &c->p);
        return true;
    }
}

static void alloc_buffers(icsv_coll *c, uint64_t bytes)
{
    for (int r = 0; r < c->g->n; r++) {
        ICSV_CUDA(cudaSetDevice(c->g->dev[r]));
        ICSV_CUDA(cudaMalloc(&c->wrong[r], sizeof(unsigned long long)));
        if (c->nvls) {
            c->send[r] = nvls_send_buffer(c->nvls, r);
            c->recv[r] = nvls_recv_buffer(c->nvls, r);
        } else {
            ICSV_CUDA(cudaMalloc(&c->send[r], bytes ? bytes : 16));
            ICSV_CUDA(cudaMalloc(&c->recv[r], bytes ? bytes : 16));
        }
    }
}

icsv_coll *icsv_coll_new(icsv_gpus *g, icsv_op op, icsv_dtype t, icsv_kernel k,
                         const icsv_kernel_params *p, uint64_t max_bytes)
{
    icsv_coll *c = new icsv_coll{};
    c->g = g;
    c->op = op;
    c->dtype = t;
    c->kernel = k;
    c->p = *p;
    c->entry = find_entry(k, op);
    if (!c->entry) {
        std::fprintf(stderr, "icsim-validate: no %s kernel for %s\n", icsv_kernel_name(k),
                     icsv_op_name(op));
        delete c;
        return nullptr;
    }
    if (!make_transport(c, max_bytes)) {
        icsv_coll_free(c);
        return nullptr;
    }
    alloc_buffers(c, max_bytes);
    return c;
}

void icsv_coll_free(icsv_coll *c)
{
    if (!c)
        return;
    for (int r = 0; r < c->g->n; r++) {
        ICSV_CUDA(cudaSetDevice(c->g->dev[r]));
        ICSV_CUDA(cudaFree(c->wrong[r]));
        if (!c->nvls) {
            ICSV_CUDA(cudaFree(c->send[r]));
            ICSV_CUDA(cudaFree(c->recv[r]));
        }
    }
    conn_free(c->conn);
    a2a_free(c->a2a);
    nvls_free(c->nvls);
    icsv_nccl_free(c->nccl);
    delete c;
}

const char *icsv_coll_kernel_name(const icsv_coll *c)
{
    return c->entry->name;
}

icsv_kernel_params icsv_coll_params(const icsv_coll *c)
{
    int m = c->entry->params;
    return icsv_kernel_params{(m & P_CTAS) ? c->p.ctas : 0, (m & P_UNROLL) ? c->p.unroll : 0,
                              (m & P_CHUNK) ? c->p.chunk_bytes : 0,
                              (m & P_SLICES) ? c->p.slices : 0};
}

/* The pointers nccl-tests passes: out of place, send and receive buffers; in place, both in
 * the receive buffer, all_gather's input being rank r's block of it and reduce_scatter's
 * output rank r's block of its input. */
static void make_call(const icsv_coll *c, const icsv_counts *n, bool in_place, coll_call *call)
{
    size_t elt = icsv_dtype_size(c->dtype);
    *call = coll_call{};
    call->g = c->g;
    call->op = c->op;
    call->dtype = c->dtype;
    call->counts = *n;
    call->in_place = in_place;
    for (int r = 0; r < c->g->n; r++) {
        call->in[r] = in_place ? c->recv[r] : c->send[r];
        call->out[r] = c->recv[r];
        if (in_place && c->op == ICSV_OP_ALL_GATHER)
            call->in[r] = c->recv[r] + r * n->send_count * elt;
        if (in_place && c->op == ICSV_OP_REDUCE_SCATTER)
            call->out[r] = c->recv[r] + r * n->recv_count * elt;
    }
}

static void launch(icsv_coll *c, const coll_call *call)
{
    if (c->g->n == 1 && c->kernel == ICSV_KERNEL_ICSIM)
        local_copy_launch(call, &c->p);
    else
        c->entry->launch(c, call);
    c->launches++;
}

double icsv_coll_time_us(icsv_coll *c, const icsv_counts *n, bool in_place, int warmup, int iters)
{
    coll_call call;
    make_call(c, n, in_place, &call);
    for (int i = 0; i < warmup; i++)
        launch(c, &call);
    icsv_gpus_sync(c->g);
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < iters; i++)
        launch(c, &call);
    icsv_gpus_sync(c->g);
    auto t1 = std::chrono::steady_clock::now();
    return std::chrono::duration<double, std::micro>(t1 - t0).count() / iters;
}

int64_t icsv_coll_check(icsv_coll *c, const icsv_counts *n, bool in_place)
{
    if (in_place && (c->op == ICSV_OP_ALLTOALL || c->op == ICSV_OP_SENDRECV))
        return ICSV_WRONG_NA;
    coll_call call;
    make_call(c, n, in_place, &call);
    check_fill(&call);
    /* peers store straight into our output (alltoall, NVLS, NCCL's direct mode): every GPU
     * must finish zeroing and filling before any kernel starts, as nccl-tests syncs too */
    icsv_gpus_sync(c->g);
    launch(c, &call);
    return check_count_wrong(&call, c->wrong);
}
