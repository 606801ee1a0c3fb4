/* Where each rank's time went (replay.h, ics_replay_rank), from the times the run kept per op.
 * The rank's first stream is walked op by op; before each op there may be a gap while it
 * waited for its dependencies. The gap is charged to the dependency that ended last (the one
 * that held the op back):
 *   - a send or recv: its transfer time is exposed pipeline communication, anything longer was
 *     spent waiting for the peer to post: the bubble;
 *   - a collective on another stream: from the moment it was issued to its end it is exposed
 *     communication of its category (waiting for the earlier calls of its communicator is
 *     communication too), and so are the ops of its stream that ran back to back before it:
 *     an optimizer that waits for the last of five gradient all-reduces queued on the dp
 *     stream waits for all five;
 *   - a compute op of another stream: that op's category.
 * Inside a collective or send/recv on the first stream, the wait for the peers is bubble and the
 * rest is busy time of its category. */
#include "replay/replay_internal.h"

static const ics_trace_op *op_of(const ics_replay *r, int g)
{
    return ics_trace_get_op(r->tr, r->ops[g].rank, g - r->base[r->ops[g].rank]);
}

/* When the queue of back-to-back ops ending with each op of `rank` on its stream became ready
 * (rank-local indices; freed by the caller): an op held only by its stream predecessor (ready
 * the moment that one ended), both collectives of one category, joins its predecessor's queue.
 * One pass with the last op of each stream, so that a wait can be traced back through a queue
 * of ops on another stream in O(1). */
static ics_time *queue_ready(const ics_replay *r, int rank)
{
    int n = ics_trace_nops(r->tr, rank), ns = ics_trace_nstreams(r->tr, rank);
    ics_time *qready = g_new(ics_time, n > 0 ? n : 1);
    int *last = g_new(int, ns > 0 ? ns : 1);
    for (int s = 0; s < ns; s++)
        last[s] = -1;
    for (int i = 0; i < n; i++) {
        const ics_trace_op *op = ics_trace_get_op(r->tr, rank, i);
        const op_state *st = &r->ops[r->base[rank] + i];
        int p = last[op->stream];
        qready[i] = st->ready;
        if (p >= 0 && op->kind == ICS_TOP_COLL) {
            const ics_trace_op *pop = ics_trace_get_op(r->tr, rank, p);
            if (pop->kind == ICS_TOP_COLL && pop->cat == op->cat &&
                r->ops[r->base[rank] + p].end >= st->ready)
                qready[i] = qready[p];
        }
        last[op->stream] = i;
    }
    g_free(last);
    return qready;
}

/* The dependency of op g (rank-local index i) that ended last, or -1. */
static int blocking_dep(const ics_replay *r, int rank, int i)
{
    int nd, best = -1;
    const int *deps = ics_trace_op_deps(r->tr, rank, i, &nd);
    for (int d = 0; d < nd; d++) {
        int g = r->base[rank] + deps[d];
        if (best < 0 || r->ops[g].end > r->ops[best].end)
            best = g;
    }
    return best;
}

static void charge_gap(const ics_replay *r, const ics_time *qready, ics_replay_rank *rs, int rank,
                       int i, ics_time gap)
{
    int d = blocking_dep(r, rank, i);
    if (d < 0) {
        rs->bubble_ps += gap;
        return;
    }
    const ics_trace_op *dop = op_of(r, d);
    const op_state *ds = &r->ops[d];
    ics_time comm = dop->kind == ICS_TOP_COMPUTE ? gap
                    : dop->kind == ICS_TOP_COLL  ? ds->end - qready[d - r->base[rank]]
                                                 : ds->end - ds->begin;
    comm = MIN(comm, gap);
    rs->wait_ps[dop->cat] += comm;
    rs->bubble_ps += gap - comm;
}

static void rank_breakdown(ics_replay *r, int rank)
{
    ics_replay_rank *rs = &r->ranks[rank];
    ics_time at = 0;
    int last = -1; /* the op that ends last */
    ics_time *qready = queue_ready(r, rank);
    for (int i = 0; i < ics_trace_nops(r->tr, rank); i++) {
        int g = r->base[rank] + i;
        const op_state *st = &r->ops[g];
        if (last < 0 || st->end > r->ops[last].end) {
            last = g;
            rs->end_ps = st->end;
        }
        const ics_trace_op *op = ics_trace_get_op(r->tr, rank, i);
        if (op->stream != 0)
            continue;
        if (st->ready > at)
            charge_gap(r, qready, rs, rank, i, st->ready - at);
        /* waiting for the host's first launch, then for peers */
        ics_time wait = st->begin - st->ready, host = ics_replay_host_delay(r, g);
        rs->host_ps += host + st->host_tail;
        rs->bubble_ps += wait - host;
        rs->busy_ps[op->cat] += st->end - st->begin - st->host_tail;
        at = st->end;
    }
    /* other streams still running after the first stream's last op: the rank waits for them */
    if (rs->end_ps > at) {
        const ics_trace_op *lop = op_of(r, last);
        if (lop->kind == ICS_TOP_COMPUTE || lop->kind == ICS_TOP_COLL)
            rs->wait_ps[lop->cat] += rs->end_ps - at;
        else
            rs->bubble_ps += rs->end_ps - at;
    }
    g_free(qready);
}

void ics_replay_breakdown(ics_replay *r)
{
    int nr = ics_trace_nranks(r->tr), total = r->base[nr];
    r->ranks = g_new0(ics_replay_rank, nr);
    for (int k = 0; k < nr; k++)
        rank_breakdown(r, k);
    r->spans = g_new(ics_replay_span, total > 0 ? total : 1);
    for (int g = 0; g < total; g++) {
        const op_state *st = &r->ops[g];
        r->spans[g] = (ics_replay_span){.rank = st->rank,
                                        .op = g - r->base[st->rank],
                                        .ready = st->ready,
                                        .start = st->begin,
                                        .end = st->end};
    }
}
