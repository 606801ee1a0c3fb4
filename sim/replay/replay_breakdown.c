/* Where each rank's time went (replay.h, ics_replay_rank), from the times the run kept per op.
 * The rank's first stream is walked op by op; before each op there may be a gap while it
 * waited for its dependencies. The gap is charged to the dependency that ended last (the one
 * that held the op back):
 *   - a send or recv: its transfer time is exposed pipeline communication, anything longer was
 *     spent waiting for the peer to post: the bubble;
 *   - a collective on another stream: from the moment it was issued to its end it is exposed
 *     communication of its category (waiting for the earlier calls of its communicator is
 *     communication too);
 *   - a compute op of another stream: that op's category.
 * Inside a collective or send/recv on the first stream, the wait for the peers is bubble and the
 * rest is busy time of its category. */
#include "replay/replay_internal.h"

static const ics_trace_op *op_of(const ics_replay *r, int g)
{
    return ics_trace_get_op(r->tr, r->ops[g].rank, g - r->base[r->ops[g].rank]);
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

static void charge_gap(const ics_replay *r, ics_replay_rank *rs, int rank, int i, ics_time gap)
{
    int d = blocking_dep(r, rank, i);
    if (d < 0) {
        rs->bubble_ps += gap;
        return;
    }
    const ics_trace_op *dop = op_of(r, d);
    const op_state *ds = &r->ops[d];
    ics_time comm = dop->kind == ICS_TOP_COMPUTE ? gap
                    : dop->kind == ICS_TOP_COLL  ? ds->end - ds->ready
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
            charge_gap(r, rs, rank, i, st->ready - at);
        rs->bubble_ps += st->begin - st->ready; /* waiting for peers */
        rs->busy_ps[op->cat] += st->end - st->begin;
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
