/* Collectives during a replay: which communicators may be memoized, and the life of a call
 * (members arrive; the call starts once all have and the communicator is free; its end ends
 * every member's op). */
#include "replay/replay_internal.h"
#include "collectives/comm.h"

#include <string.h>

#define SHARED (-2)

static void mark_route(const ics_topo *t, int *owner, int a, int b, int id)
{
    ics_route rt;
    if (a == b || !ics_route_find(t, a, b, 0, &rt))
        return;
    for (int p = 0; p < rt.n_paths; p++)
        for (int h = 0; h < rt.paths[p].n_hops; h++) {
            int *o = &owner[rt.paths[p].chans[h]];
            *o = (*o == -1 || *o == id) ? id : SHARED;
        }
    ics_route_clear(&rt);
}

static bool single_node(const ics_replay *r, int c)
{
    int n;
    const int *ranks = ics_trace_comm_ranks(r->tr, c, &n);
    int node = ics_topo_dev_get(r->t, r->gpu[ranks[0]])->node;
    for (int m = 1; m < n; m++)
        if (ics_topo_dev_get(r->t, r->gpu[ranks[m]])->node != node)
            return false;
    return true;
}

/* Every channel a communicator's calls may cross: all pairs inside a node; across nodes the
 * ring neighbours, which cover each member's way in and out of its node. */
static void mark_comm(const ics_replay *r, int *owner, int c)
{
    int n;
    const int *ranks = ics_trace_comm_ranks(r->tr, c, &n);
    bool all_pairs = single_node(r, c);
    for (int a = 0; a < n; a++) {
        if (!all_pairs) {
            mark_route(r->t, owner, r->gpu[ranks[a]], r->gpu[ranks[(a + 1) % n]], c);
            mark_route(r->t, owner, r->gpu[ranks[(a + 1) % n]], r->gpu[ranks[a]], c);
            continue;
        }
        for (int b = 0; b < n; b++)
            mark_route(r->t, owner, r->gpu[ranks[a]], r->gpu[ranks[b]], c);
    }
}

static void mark_p2p(const ics_replay *r, int *owner, int id)
{
    GHashTable *seen = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, NULL);
    int nr = ics_trace_nranks(r->tr);
    for (int k = 0; k < nr; k++)
        for (int i = 0; i < ics_trace_nops(r->tr, k); i++) {
            const ics_trace_op *op = ics_trace_get_op(r->tr, k, i);
            if (op->kind != ICS_TOP_SEND)
                continue;
            gint64 key = (gint64)k * nr + op->peer;
            if (g_hash_table_contains(seen, &key))
                continue;
            g_hash_table_add(seen, g_memdup2(&key, sizeof key));
            mark_route(r->t, owner, r->gpu[k], r->gpu[op->peer], id);
        }
    g_hash_table_destroy(seen);
}

/* The memo key of a communicator: its shape. Inside one node the GPUs' local indices (every
 * node of a system is the same model), unless parts were taken down (ics_topo_fail): then the
 * nodes may differ, and the devices themselves are the shape, as they are across nodes. */
static char *shape_sig(const ics_replay *r, int c)
{
    int n;
    const int *ranks = ics_trace_comm_ranks(r->tr, c, &n);
    bool local = single_node(r, c) && ics_topo_nfailures(r->t) == 0;
    GString *s = g_string_new(local ? "L" : "D");
    for (int m = 0; m < n; m++) {
        const ics_topo_dev *d = ics_topo_dev_get(r->t, r->gpu[ranks[m]]);
        g_string_append_printf(s, ",%d", local ? d->local : r->gpu[ranks[m]]);
    }
    return g_string_free(s, FALSE);
}

/* Every operation a communicator issues must be one the tuner can run under the replay's
 * tuning (a forced NCCL_ALGO may exclude some). */
static bool check_ops(ics_replay *r, int c, GError **error)
{
    comm_state *cs = &r->comms[c];
    int n;
    const int *ranks = ics_trace_comm_ranks(r->tr, c, &n);
    bool seen[ICS_COLL_OP_COUNT] = {false};
    for (int i = 0; i < ics_trace_nops(r->tr, ranks[0]); i++) {
        const ics_trace_op *op = ics_trace_get_op(r->tr, ranks[0], i);
        if (op->kind != ICS_TOP_COLL || op->comm != c || seen[op->coll.op])
            continue;
        seen[op->coll.op] = true;
        if (!ics_comm_call_fits(op->coll.op, n, r->tuning.plan, r->backend, error)) {
            /* before it is planned */
            g_prefix_error(error, "communicator '%s': ", ics_trace_comm_name(r->tr, c));
            return false;
        }
        ics_coll_req req = op->coll;
        req.size_bytes = (uint64_t)n * (uint64_t)MAX(req.dtype_bytes, 1);
        ics_coll_result res;
        struct ics_sched *s = ics_comm_plan(cs->comm, &req, &r->tuning, &res);
        if (!s) {
            g_set_error(error, ICS_ERROR, ICS_ERROR_INPUT,
                        "communicator '%s': no allowed algorithm runs %s on its %d ranks (check "
                        "NCCL_ALGO / NCCL_PROTO)",
                        ics_trace_comm_name(r->tr, c), ics_coll_op_name(op->coll.op), n);
            return false;
        }
        ics_sched_free(s);
    }
    return true;
}

bool ics_replay_classify_comms(ics_replay *r, GError **error)
{
    int nc = ics_trace_ncomms(r->tr), nch = ics_topo_nchans(r->t);
    for (int c = 0; c < nc; c++)
        if (!check_ops(r, c, error))
            return false;
    int *owner = g_new(int, nch > 0 ? nch : 1);
    for (int ch = 0; ch < nch; ch++)
        owner[ch] = -1;
    if (r->mode == ICS_REPLAY_AUTO) {
        for (int c = 0; c < nc; c++)
            mark_comm(r, owner, c);
        mark_p2p(r, owner, nc);
    }
    for (int c = 0; c < nc; c++) {
        comm_state *cs = &r->comms[c];
        cs->memo = r->mode == ICS_REPLAY_MEMO;
        if (r->mode == ICS_REPLAY_AUTO && single_node(r, c)) {
            /* private: every channel it may use is used by nobody else */
            int *mine = g_new(int, nch > 0 ? nch : 1);
            for (int ch = 0; ch < nch; ch++)
                mine[ch] = -1;
            mark_comm(r, mine, c);
            cs->memo = true;
            for (int ch = 0; ch < nch && cs->memo; ch++)
                if (mine[ch] == c && owner[ch] != c)
                    cs->memo = false;
            g_free(mine);
        }
        if (cs->memo)
            cs->sig = shape_sig(r, c);
    }
    g_free(owner);
    return true;
}

/* ---- a call's life -------------------------------------------------------------------------- */

static void try_start(ics_replay *r, int c);

static void call_done(ics_engine *e, void *ctx, uint64_t c)
{
    (void)e;
    ics_replay *r = ctx;
    comm_state *cs = &r->comms[c];
    int k = cs->next;
    cs->play = NULL; /* it freed itself */
    for (int m = 0; m < cs->active; m++)
        ics_replay_op_end(r, cs->members[(size_t)k * (size_t)cs->active + (size_t)m]);
    cs->busy = false;
    cs->next++;
    try_start(r, (int)c);
}

/* A memoized call: how long it takes alone, and where its bytes went (the hot-spot report
 * counts memoized calls too). The bytes are kept by the devices at both ends of each channel:
 * a call of the same shape on another node (shape_sig "L") crosses that node's copies of the
 * channels, its devices shifted by whole nodes (topo.c numbers every node's devices alike). */
typedef struct {
    ics_time t;
    int gpu0; /* rank 0's device in the call that was simulated */
    int n;
    int *src, *dst;
    uint64_t *bytes;
} memo_call;

void ics_replay_memo_free(void *p)
{
    memo_call *m = p;
    g_free(m->src);
    g_free(m->dst);
    g_free(m->bytes);
    g_free(m);
}

static int rank0_gpu(const ics_replay *r, int c)
{
    int n;
    return r->gpu[ics_trace_comm_ranks(r->tr, c, &n)[0]];
}

/* Simulates the call alone, and keeps the channels it used (compacted from a scratch array of
 * every channel, zeroed back after). */
static memo_call *memo_new(ics_replay *r, int c, const ics_coll_req *req)
{
    int nch = ics_topo_nchans(r->t);
    if (!r->memo_scratch)
        r->memo_scratch = g_new0(uint64_t, nch > 0 ? nch : 1);
    ics_coll_result res = {0};
    bool ok = ics_comm_run_traffic(r->comms[c].comm, req, &r->tuning, &res, r->memo_scratch);
    g_assert(ok); /* check_ops made sure every operation of the communicator runs */
    memo_call *m = g_new0(memo_call, 1);
    m->t = res.time_ps;
    m->gpu0 = rank0_gpu(r, c);
    for (int ch = 0; ch < nch; ch++)
        m->n += r->memo_scratch[ch] > 0;
    m->src = g_new(int, m->n > 0 ? m->n : 1);
    m->dst = g_new(int, m->n > 0 ? m->n : 1);
    m->bytes = g_new(uint64_t, m->n > 0 ? m->n : 1);
    for (int ch = 0, k = 0; ch < nch; ch++) {
        if (!r->memo_scratch[ch])
            continue;
        const ics_topo_chan *tc = ics_topo_chan_get(r->t, ch);
        m->src[k] = tc->src;
        m->dst[k] = tc->dst;
        m->bytes[k++] = r->memo_scratch[ch];
        r->memo_scratch[ch] = 0;
    }
    return m;
}

/* A memoized call of communicator c happened: its bytes go onto c's own channels. */
static void memo_count(ics_replay *r, int c, const memo_call *m)
{
    int shift = rank0_gpu(r, c) - m->gpu0; /* 0 unless the shape is a node-local one */
    for (int k = 0; k < m->n; k++) {
        int ch = ics_topo_chan_between(r->t, m->src[k] + shift, m->dst[k] + shift);
        if (ch >= 0) /* always, as every node is built alike (shape_sig) */
            r->memo_bytes[ch] += m->bytes[k];
    }
}

/* How long the call takes alone on an idle network, simulated once per shape and size (and
 * per split matrix for an all-to-allv). */
static ics_time memo_time(ics_replay *r, int c, const ics_coll_req *req)
{
    comm_state *cs = &r->comms[c];
    int n;
    ics_trace_comm_ranks(r->tr, c, &n);
    char *digest = req->splits
                       ? g_compute_checksum_for_data(G_CHECKSUM_SHA256, (const guchar *)req->splits,
                                                     (gsize)n * (gsize)n * sizeof(uint64_t))
                       : NULL;
    char *key = g_strdup_printf("%s|%d|%" G_GUINT64_FORMAT "|%d|%d|%d|%s", cs->sig, (int)req->op,
                                req->size_bytes, req->dtype_bytes, req->root, req->sms,
                                digest ? digest : "");
    g_free(digest);
    memo_call *m = g_hash_table_lookup(r->memo, key);
    if (m)
        g_free(key);
    else {
        m = memo_new(r, c, req);
        g_hash_table_insert(r->memo, key, m);
    }
    memo_count(r, c, m);
    return m->t;
}

/* The op member a of call k of communicator c, and its rank's index in the communicator. */
static const ics_trace_op *member_op(const ics_replay *r, int c, int k, int a, int *m)
{
    const comm_state *cs = &r->comms[c];
    int n, g = cs->members[(size_t)k * (size_t)cs->active + (size_t)a];
    const int *ranks = ics_trace_comm_ranks(r->tr, c, &n);
    const op_state *st = &r->ops[g];
    for (*m = 0; *m < n && ranks[*m] != st->rank; (*m)++)
        ;
    return ics_trace_get_op(r->tr, st->rank, g - r->base[st->rank]);
}

/* An all-to-allv call's matrix (coll.h), from the rows its members' ops carry: row m is what
 * communicator rank m sends; a member without splits sends its size evenly. A folded trace
 * leaves mirrored ranks without ops: their rows are the first present row turned by the rank
 * distance, which is what the fold's symmetry says. *largest: the largest row. Transfer full;
 * NULL when no member has splits (an even all-to-all). */
static uint64_t *call_splits(const ics_replay *r, int c, int k, uint64_t *largest)
{
    const comm_state *cs = &r->comms[c];
    int n, m;
    ics_trace_comm_ranks(r->tr, c, &n);
    bool any = false;
    for (int a = 0; a < cs->active && !any; a++)
        any = member_op(r, c, k, a, &m)->splits != NULL;
    if (!any)
        return NULL;
    uint64_t *rows = g_new0(uint64_t, (size_t)n * (size_t)n);
    bool *have = g_new0(bool, n);
    int first = n;
    for (int a = 0; a < cs->active; a++) {
        const ics_trace_op *op = member_op(r, c, k, a, &m);
        for (int j = 0; j < n; j++)
            rows[(size_t)m * n + j] =
                op->splits ? op->splits[j] : op->coll.size_bytes / (uint64_t)n;
        have[m] = true;
        first = MIN(first, m);
    }
    *largest = 0;
    for (m = 0; m < n; m++) {
        uint64_t sum = 0;
        for (int j = 0; j < n; j++) {
            if (!have[m])
                rows[(size_t)m * n + j] =
                    rows[(size_t)first * n + (size_t)((j - m + first + n) % n)];
            sum += rows[(size_t)m * n + j];
        }
        *largest = MAX(*largest, sum);
    }
    g_free(have);
    return rows;
}

static void try_start(ics_replay *r, int c)
{
    comm_state *cs = &r->comms[c];
    if (cs->busy || cs->next >= cs->ncalls || cs->calls[cs->next].arrived < cs->active)
        return;
    int k = cs->next;
    cs->busy = true;
    cs->calls[k].started = ics_engine_now(r->e);
    int first = cs->members[(size_t)k * (size_t)cs->active];
    for (int m = 0; m < cs->active; m++)
        r->ops[cs->members[(size_t)k * (size_t)cs->active + (size_t)m]].begin =
            cs->calls[k].started;
    const op_state *st = &r->ops[first];
    const ics_trace_op *op = ics_trace_get_op(r->tr, st->rank, first - r->base[st->rank]);
    ics_coll_req req = op->coll;
    uint64_t *splits = NULL;
    if (req.op == ICS_COLL_ALLTOALL && (splits = call_splits(r, c, k, &req.size_bytes)))
        req.splits = splits;
    if (cs->memo) {
        r->colls_memo++;
        ics_time dur = memo_time(r, c, &req); /* ICS_TIME_LIMIT: it never ends alone */
        g_free(splits);
        if (dur >= ICS_TIME_LIMIT - cs->calls[k].started)
            ics_replay_past_horizon(r, first);
        ics_engine_after(r->e, dur, call_done, r, (uint64_t)c);
        return;
    }
    r->colls_full++;
    ics_coll_result res;
    struct ics_sched *s = ics_comm_plan(cs->comm, &req, &r->tuning, &res);
    g_free(splits);
    g_assert(s); /* check_ops */
    cs->play = ics_sched_start(s, r->e, r->net, call_done, r, (uint64_t)c);
}

void ics_replay_coll_arrive(ics_replay *r, int g, const ics_trace_op *op)
{
    comm_state *cs = &r->comms[op->comm];
    int k = r->ops[g].call;
    call_state *call = &cs->calls[k];
    cs->members[(size_t)k * (size_t)cs->active + (size_t)call->arrived++] = g;
    try_start(r, op->comm);
}
