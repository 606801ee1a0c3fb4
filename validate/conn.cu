/* conn.cu: the ring connections of NCCL's Simple protocol over P2P: each rank owns, per
 * channel, a receive FIFO its previous rank writes into and two flags (tail, head).
 * Invariant: flags start at 0 and only grow; they are never reset while a kernel runs. */
#include "coll_impl.cuh"

#include <cstring>

/* Flags sit 128 bytes apart: a flag sharing a line with another channel's would have
 * two GPUs' stores contend for one cache line. */
static const int flag_stride = 128 / sizeof(uint64_t);

struct icsv_conn {
    const icsv_gpus *g;
    int ctas;
    conn_geom geom;
    char *fifo[ICSV_MAX_GPUS];      /* ctas * nslots * slot_bytes */
    uint64_t *flags[ICSV_MAX_GPUS]; /* per channel: tail at 2*ch, head at 2*ch+1 (strided) */
    conn_chan *chans[ICSV_MAX_GPUS];
};

static uint64_t *flag(const icsv_conn *c, int rank, int ch, int which)
{
    return c->flags[rank] + (2 * ch + which) * flag_stride;
}

static void link_rank(icsv_conn *c, int r, conn_chan *host)
{
    int n = c->g->n, next = (r + 1) % n, prev = (r + n - 1) % n;
    int64_t fifo_ch = c->geom.nslots * c->geom.slot_bytes;
    for (int ch = 0; ch < c->ctas; ch++) {
        host[ch] = conn_chan{};
        host[ch].fifo_out = c->fifo[next] + ch * fifo_ch;
        host[ch].tail_out = flag(c, next, ch, 0);
        host[ch].fifo_in = c->fifo[r] + ch * fifo_ch;
        host[ch].tail_in = flag(c, r, ch, 0);
        host[ch].head_in = flag(c, r, ch, 1);
        host[ch].head_out = flag(c, prev, ch, 1);
    }
}

icsv_conn *conn_new(const icsv_gpus *g, const icsv_kernel_params *p)
{
    icsv_conn *c = new icsv_conn{};
    c->g = g;
    c->ctas = p->ctas;
    c->geom.slices = p->slices;
    c->geom.nslots = 2 * p->slices;
    c->geom.chunk_bytes = (int64_t)p->chunk_bytes;
    c->geom.slot_bytes = (int64_t)p->chunk_bytes / p->slices;
    size_t fifo_bytes = (size_t)c->ctas * c->geom.nslots * c->geom.slot_bytes;
    size_t flag_bytes = (size_t)c->ctas * 2 * flag_stride * sizeof(uint64_t);
    for (int r = 0; r < g->n; r++) {
        ICSV_CUDA(cudaSetDevice(g->dev[r]));
        ICSV_CUDA(cudaMalloc(&c->fifo[r], fifo_bytes));
        ICSV_CUDA(cudaMalloc(&c->flags[r], flag_bytes));
        ICSV_CUDA(cudaMemset(c->flags[r], 0, flag_bytes));
        ICSV_CUDA(cudaMalloc(&c->chans[r], c->ctas * sizeof(conn_chan)));
    }
    conn_chan host[ICSV_MAX_CTAS];
    for (int r = 0; r < g->n; r++) {
        link_rank(c, r, host);
        ICSV_CUDA(cudaSetDevice(g->dev[r]));
        ICSV_CUDA(
            cudaMemcpy(c->chans[r], host, c->ctas * sizeof(conn_chan), cudaMemcpyHostToDevice));
    }
    return c;
}

void conn_free(icsv_conn *c)
{
    if (!c)
        return;
    for (int r = 0; r < c->g->n; r++) {
        ICSV_CUDA(cudaSetDevice(c->g->dev[r]));
        ICSV_CUDA(cudaFree(c->fifo[r]));
        ICSV_CUDA(cudaFree(c->flags[r]));
        ICSV_CUDA(cudaFree(c->chans[r]));
    }
    delete c;
}

conn_chan *conn_chans(const icsv_conn *c, int rank)
{
    return c->chans[rank];
}

conn_geom conn_geometry(const icsv_conn *c)
{
    return c->geom;
}
