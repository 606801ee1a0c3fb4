/* Sends and recvs during a replay. NCCL's point-to-point is a rendezvous: the bytes move once
 * the sender has posted its send and the receiver its matching recv (the k-th send from a to b
 * matches the k-th recv at b from a); then, after NCCL's fixed cost, the transfer crosses the
 * network, and both ops end when its last byte arrives. */
#include "replay/replay_internal.h"

typedef struct {
    GQueue sends, recvs; /* posted, unmatched: global op ids */
    uint64_t count;      /* transfers started: varies the flow hash (ECMP) per message */
} pair;

typedef struct {
    ics_replay *r;
    int send, recv; /* global op ids */
    int src, dst;   /* devices */
    uint64_t bytes, hash;
} xfer;

void ics_replay_pair_free(void *p)
{
    pair *q = p;
    g_queue_clear(&q->sends);
    g_queue_clear(&q->recvs);
    g_free(q);
}

static void xfer_done(ics_engine *e, void *ctx, uint64_t tag)
{
    (void)e;
    (void)tag;
    xfer *x = ctx;
    ics_replay *r = x->r;
    int send = x->send, recv = x->recv;
    g_hash_table_remove(r->xfers, x); /* frees it */
    ics_replay_op_end(r, send);
    ics_replay_op_end(r, recv);
}

static void xfer_go(ics_engine *e, void *ctx, uint64_t tag)
{
    (void)e;
    (void)tag;
    xfer *x = ctx;
    ics_net_xfer nx = {.src = x->src,
                       .dst = x->dst,
                       .bytes = x->bytes,
                       .flow_hash = x->hash,
                       .done = xfer_done,
                       .ctx = x};
    ics_net_send(x->r->net, &nx);
}

/* The queues of messages from src to dst on channel `tag` (ics_trace_op's tag). */
static pair *pair_of(ics_replay *r, int src, int dst, int tag)
{
    gint64 key = ics_trace_channel(ics_trace_nranks(r->tr), src, dst, tag);
    pair *q = g_hash_table_lookup(r->pairs, &key);
    if (!q) {
        q = g_new0(pair, 1);
        g_hash_table_insert(r->pairs, g_memdup2(&key, sizeof key), q);
    }
    return q;
}

void ics_replay_p2p_post(ics_replay *r, int g, const ics_trace_op *op)
{
    int me = r->ops[g].rank;
    bool is_send = op->kind == ICS_TOP_SEND;
    int src = is_send ? me : op->peer, dst = is_send ? op->peer : me;
    pair *q = pair_of(r, src, dst, op->tag);
    GQueue *mine = is_send ? &q->sends : &q->recvs, *other = is_send ? &q->recvs : &q->sends;
    if (g_queue_is_empty(other)) {
        g_queue_push_tail(mine, GINT_TO_POINTER(g));
        return;
    }
    int match = GPOINTER_TO_INT(g_queue_pop_head(other));
    xfer *x = g_new(xfer, 1);
    g_hash_table_add(r->xfers, x); /* the replay's until it is done: a run may stop first */
    *x = (xfer){.r = r,
                .send = is_send ? g : match,
                .recv = is_send ? match : g,
                .src = r->gpu[src],
                .dst = r->gpu[dst],
                .bytes = op->bytes};
    x->hash = ((uint64_t)src * 0x9E3779B97F4A7C15u) ^ ((uint64_t)dst << 20) ^ q->count++;
    ics_time now = ics_engine_now(r->e);
    r->ops[x->send].begin = r->ops[x->recv].begin = now;
    ics_engine_after(r->e, r->p2p_lat_ps, xfer_go, x, 0);
}
