/* The replayer (replay.h). Every op of every rank becomes a node of one dependency graph:
 * its deps and its stream predecessor must end before it starts. Compute ops are delays;
 * collectives gather their members (the k-th call of a communicator at every member), then run
 * one after another per communicator; sends and recvs pair up in order per (src, dst) and move
 * their bytes once both sides have posted (NCCL's rendezvous). Times kept per op give the
 * spans of the timeline and the per-rank breakdown. */
#include "replay/replay.h"
#include "workload/workload.h"
#include "replay/replay_internal.h"

#include <inttypes.h>
#include <string.h>

/* NCCL's fixed cost of a point-to-point operation (launch plus the Simple protocol's start-up,
 * tuning.cc's base latency for Simple). */
#define DEFAULT_P2P_LAT_PS (8400 * ICS_PS_PER_NS)

/* What a replay holds per op, the trace's own record included, and per dependency (an int in
 * the trace, a successor here). Measured (2026-11-30): GPT-3 175B on 1024 GPUs unfolded, 19.3M
 * ops and 5.1M dependencies, peaks at 5.04 GiB, 277 B an op; the estimate is 1.1 times that.
 * docs/limits.md. */
#define REPLAY_BYTES_PER_OP  304
#define REPLAY_BYTES_PER_DEP 12

static int global_id(const ics_replay *r, int rank, int i)
{
    return r->base[rank] + i;
}

/* ---- setting up ---------------------------------------------------------------------------- */

static bool map_ranks(ics_replay *r, const ics_replay_opts *o, GError **error)
{
    int nr = ics_trace_nranks(r->tr);
    int per = ics_topo_gpus_per_node(r->t), nodes = ics_topo_nodes(r->t);
    if (!o->gpu_of_rank && nr > per * nodes) {
        g_set_error(error, ICS_ERROR, ICS_ERROR_INPUT,
                    "the trace has %d ranks, the system only %d GPUs (%d nodes of %d)", nr,
                    per * nodes, nodes, per);
        return false;
    }
    r->gpu = g_new(int, nr);
    for (int k = 0; k < nr; k++)
        r->gpu[k] = o->gpu_of_rank ? o->gpu_of_rank[k] : ics_topo_gpu(r->t, k / per, k % per);
    return true;
}

/* Per op: how many things it waits for, its successors (CSR), its call index on its
 * communicator. */
static void build_graph(ics_replay *r)
{
    int nr = ics_trace_nranks(r->tr);
    r->base = g_new(int, nr + 1);
    r->base[0] = 0;
    for (int k = 0; k < nr; k++)
        r->base[k + 1] = r->base[k] + ics_trace_nops(r->tr, k);
    int total = r->base[nr];
    r->ops = g_new0(op_state, total > 0 ? total : 1);
    r->succ0 = g_new0(int, total + 1);
    int *nsucc = g_new0(int, total + 1);
    int nc = ics_trace_ncomms(r->tr);
    int *calls = g_new0(int, (size_t)nc > 0 ? (size_t)nc : 1);
    for (int k = 0; k < nr; k++) {
        int nst = ics_trace_nstreams(r->tr, k);
        int *last = g_new(int, nst > 0 ? nst : 1);
        for (int s = 0; s < nst; s++)
            last[s] = -1;
        memset(calls, 0, sizeof(int) * (size_t)nc);
        for (int i = 0; i < ics_trace_nops(r->tr, k); i++) {
            const ics_trace_op *op = ics_trace_get_op(r->tr, k, i);
            op_state *st = &r->ops[global_id(r, k, i)];
            st->rank = k;
            int nd;
            const int *deps = ics_trace_op_deps(r->tr, k, i, &nd);
            st->waiting = nd;
            for (int d = 0; d < nd; d++)
                nsucc[global_id(r, k, deps[d])]++;
            if (op->stream < nst && last[op->stream] >= 0) {
                st->waiting++;
                nsucc[global_id(r, k, last[op->stream])]++;
            }
            if (op->stream < nst)
                last[op->stream] = i;
            if (op->kind == ICS_TOP_COLL)
                st->call = calls[op->comm]++;
        }
        g_free(last);
    }
    g_free(calls);
    for (int g = 0; g < total; g++)
        r->succ0[g + 1] = r->succ0[g] + nsucc[g];
    r->succ = g_new(int, r->succ0[total] + 1);
    memset(nsucc, 0, sizeof(int) * (size_t)(total + 1));
    for (int k = 0; k < nr; k++) {
        int nst = ics_trace_nstreams(r->tr, k);
        int *last = g_new(int, nst > 0 ? nst : 1);
        for (int s = 0; s < nst; s++)
            last[s] = -1;
        for (int i = 0; i < ics_trace_nops(r->tr, k); i++) {
            const ics_trace_op *op = ics_trace_get_op(r->tr, k, i);
            int g = global_id(r, k, i), nd;
            const int *deps = ics_trace_op_deps(r->tr, k, i, &nd);
            for (int d = 0; d < nd; d++) {
                int from = global_id(r, k, deps[d]);
                r->succ[r->succ0[from] + nsucc[from]++] = g;
            }
            if (op->stream < nst && last[op->stream] >= 0) {
                int from = global_id(r, k, last[op->stream]);
                r->succ[r->succ0[from] + nsucc[from]++] = g;
            }
            if (op->stream < nst)
                last[op->stream] = i;
        }
        g_free(last);
    }
    g_free(nsucc);
}

static bool check_comms(ics_replay *r, GError **error)
{
    int nc = ics_trace_ncomms(r->tr);
    r->comms = g_new0(comm_state, nc > 0 ? nc : 1);
    for (int c = 0; c < nc; c++) {
        int n;
        const int *ranks = ics_trace_comm_ranks(r->tr, c, &n);
        comm_state *cs = &r->comms[c];
        cs->n = n;
        int *devs = g_new(int, n);
        for (int m = 0; m < n; m++)
            devs[m] = r->gpu[ranks[m]];
        /* memoized calls run alone at the links' own packet size: the coarser unit a long
         * replay may ask for only matters where links are shared */
        ics_net_params alone = r->net_params;
        alone.packet_bytes = 0;
        cs->comm = ics_comm_new(r->t, r->backend, devs, n, &alone);
        g_free(devs);
        /* members with ops take part; empty ones mirror them (a folded trace) */
        int first = -1;
        for (int m = 0; m < n; m++)
            if (ics_trace_nops(r->tr, ranks[m]) > 0) {
                cs->active++;
                first = first < 0 ? ranks[m] : first;
            }
        r->folded |= cs->active > 0 && cs->active < n;
        /* the number of calls: what its first member issues (ics_trace_check makes all agree) */
        for (int i = 0; first >= 0 && i < ics_trace_nops(r->tr, first); i++) {
            const ics_trace_op *op = ics_trace_get_op(r->tr, first, i);
            if (op->kind == ICS_TOP_COLL && op->comm == c)
                cs->ncalls++;
        }
        cs->calls = g_new0(call_state, cs->ncalls > 0 ? cs->ncalls : 1);
        cs->members = g_new(int, (size_t)cs->ncalls *(size_t)cs->active + 1);
    }
    return ics_replay_classify_comms(r, error);
}

/* The memory budget (core/budget.h), before anything is allocated. */
static bool check_budget(const ics_trace *tr, GError **error)
{
    uint64_t ops = 0, deps = 0;
    for (int k = 0; k < ics_trace_nranks(tr); k++)
        for (int i = 0; i < ics_trace_nops(tr, k); i++) {
            int nd;
            ics_trace_op_deps(tr, k, i, &nd);
            ops++;
            deps += (uint64_t)nd;
        }
    uint64_t bytes = ics_budget_mul_add(ops, REPLAY_BYTES_PER_OP,
                                        ics_budget_mul_add(deps, REPLAY_BYTES_PER_DEP, 0));
    char *what = g_strdup_printf("replay: %" PRIu64 " ops x %d B and %" PRIu64 " dependencies x "
                                 "%d B",
                                 ops, REPLAY_BYTES_PER_OP, deps, REPLAY_BYTES_PER_DEP);
    bool ok = ics_budget_check(bytes, what, error);
    g_free(what);
    return ok;
}

/* "rank 3 op 17 (fwd.qkv)" for messages. Transfer full. */
static char *op_label(const ics_replay *r, int g)
{
    int rank = r->ops[g].rank, i = g - r->base[rank];
    const ics_trace_op *op = ics_trace_get_op(r->tr, rank, i);
    if (!op->name || !*op->name)
        return g_strdup_printf("rank %d op %d", rank, i);
    return g_strdup_printf("rank %d op %d (%s)", rank, i, op->name);
}

/* Compute ops that alone last past the horizon, before the first event: the op and how long
 * the GPU model says it takes. */
static bool check_compute(const ics_replay *r, GError **error)
{
    int total = r->base[ics_trace_nranks(r->tr)];
    for (int g = 0; g < total; g++) {
        int rank = r->ops[g].rank;
        const ics_trace_op *op = ics_trace_get_op(r->tr, rank, g - r->base[rank]);
        if (op->kind != ICS_TOP_COMPUTE || ics_compute_time(r->gpu_type, op) < ICS_TIME_LIMIT)
            continue;
        char *label = op_label(r, g);
        g_set_error(error, ICS_ERROR, ICS_ERROR_LIMIT,
                    "%s: compute time %.3g s on GPU %s exceeds the simulator's horizon of %s "
                    "(docs/limits.md)",
                    label, ics_compute_seconds(r->gpu_type, op), r->gpu_type->name,
                    ICS_TIME_LIMIT_TEXT);
        g_free(label);
        return false;
    }
    return true;
}

ics_replay *ics_replay_new(const ics_trace *tr, const ics_topo *t, const ics_replay_opts *o,
                           GError **error)
{
    if (!ics_trace_check(tr, error) || !check_budget(tr, error))
        return NULL;
    ics_replay *r = g_new0(ics_replay, 1);
    r->tr = tr;
    r->t = t;
    r->backend = o->backend ? o->backend : ics_net_backend("packet");
    r->net_params = o->net;
    r->tuning = o->tuning;
    r->mode = o->colls;
    r->sample_ps = o->sample_ps;
    r->progress = o->progress;
    r->progress_ctx = o->progress_ctx;
    r->p2p_lat_ps = o->p2p_lat_ps >= 0 ? o->p2p_lat_ps : DEFAULT_P2P_LAT_PS;
    r->host_launch_ps = MAX(o->host_launch_ps, 0);
    r->gpu_type = ics_hw_node_of(ics_topo_hw(t))->gpu_type;
    if (!map_ranks(r, o, error)) {
        ics_replay_free(r);
        return NULL;
    }
    build_graph(r);
    r->horizon_op = -1;
    if (!check_compute(r, error) || !check_comms(r, error)) {
        ics_replay_free(r);
        return NULL;
    }
    r->memo = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, ics_replay_memo_free);
    r->pairs = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, ics_replay_pair_free);
    r->xfers = g_hash_table_new_full(NULL, NULL, g_free, NULL);
    return r;
}

/* A run stopped at the horizon leaves calls and transfers that will never end: they are ours
 * to free. */
static void free_unfinished(ics_replay *r)
{
    for (int c = 0; r->comms && c < ics_trace_ncomms(r->tr); c++) {
        ics_sched_abandon(r->comms[c].play);
        r->comms[c].play = NULL;
    }
    if (r->xfers)
        g_hash_table_remove_all(r->xfers);
}

void ics_replay_free(ics_replay *r)
{
    if (!r)
        return;
    free_unfinished(r);
    if (r->xfers)
        g_hash_table_destroy(r->xfers);
    if (r->comms)
        for (int c = 0; c < ics_trace_ncomms(r->tr); c++) {
            ics_comm_free(r->comms[c].comm);
            g_free(r->comms[c].calls);
            g_free(r->comms[c].members);
            g_free(r->comms[c].sig);
        }
    g_free(r->comms);
    g_free(r->gpu);
    g_free(r->host);
    g_free(r->base);
    g_free(r->ops);
    g_free(r->succ0);
    g_free(r->succ);
    g_free(r->ranks);
    g_free(r->spans);
    g_free(r->chan_bytes);
    g_free(r->memo_bytes);
    g_free(r->memo_scratch);
    if (r->memo)
        g_hash_table_destroy(r->memo);
    if (r->pairs)
        g_hash_table_destroy(r->pairs);
    ics_replay_sampler_free(r);
    g_free(r);
}

/* ---- playing ------------------------------------------------------------------------------- */

void ics_replay_op_end(ics_replay *r, int g)
{
    op_state *st = &r->ops[g];
    st->end = ics_engine_now(r->e);
    st->ended = true;
    r->remaining--;
    for (int i = r->succ0[g]; i < r->succ0[g + 1]; i++) {
        int s = r->succ[i];
        if (--r->ops[s].waiting == 0)
            ics_replay_op_start(r, s);
    }
    if (r->remaining == 0)
        ics_replay_sampler_last(r);
}

static void compute_done(ics_engine *e, void *ctx, uint64_t g)
{
    (void)e;
    ics_replay_op_end(ctx, (int)g);
}

static void host_launched(ics_engine *e, void *ctx, uint64_t g)
{
    (void)e;
    ics_replay_op_start(ctx, (int)g);
}

/* Whether the host launches op's kernels: only on the rank's first stream (the compute stream),
 * whose ops are ready in program order (each waits for the one before), so the host's clock
 * advances in that order. */
static bool host_launches(const ics_replay *r, const ics_trace_op *op)
{
    return r->host_launch_ps > 0 && op->launches > 0 && op->stream == 0;
}

ics_time ics_replay_host_delay(const ics_replay *r, int g)
{
    const op_state *st = &r->ops[g];
    if (st->host_last == 0)
        return 0;
    const ics_trace_op *op = ics_trace_get_op(r->tr, st->rank, g - r->base[st->rank]);
    /* its first launch: its last less the others */
    ics_time first = st->host_last - (ics_time)(op->launches - 1) * r->host_launch_ps;
    return CLAMP(first - st->ready, 0, st->begin - st->ready);
}

/* The host reaches op g (ready now): it waits for the GPU first if the op syncs, then launches
 * the op's kernels one after another. False if the op must wait for its first launch
 * (host_launched starts it then), or if that launch is past the horizon. */
static bool host_reached(ics_replay *r, int g, const ics_trace_op *op, ics_time now)
{
    op_state *st = &r->ops[g];
    if (!host_launches(r, op))
        return true;
    ics_time *h = &r->host[st->rank];
    if (op->host_sync)
        *h = MAX(*h, now);
    ics_time first = ics_time_add(*h, r->host_launch_ps);
    *h = ics_time_add(*h, ics_time_mul(r->host_launch_ps, (uint64_t)op->launches));
    st->host_last = *h;
    if (first <= now)
        return true;
    if (first >= ICS_TIME_LIMIT) { /* the engine refuses it (the run stops): say which op */
        st->begin = now;
        ics_replay_past_horizon(r, g);
    }
    ics_engine_at(r->e, first, host_launched, r, (uint64_t)g);
    return false;
}

/* A compute op's duration: the GPU's, unless the host launches its last kernel so late that the
 * kernel's share of the op (dur / launches) ends later. */
static ics_time compute_span(ics_replay *r, op_state *st, const ics_trace_op *op, ics_time dur)
{
    if (!host_launches(r, op))
        return dur;
    ics_time last = ics_time_add(st->host_last, dur / op->launches);
    if (last <= ics_time_add(st->begin, dur))
        return dur;
    st->host_tail = last - st->begin - dur;
    return last - st->begin;
}

void ics_replay_op_start(ics_replay *r, int g)
{
    op_state *st = &r->ops[g];
    int i = g - r->base[st->rank];
    const ics_trace_op *op = ics_trace_get_op(r->tr, st->rank, i);
    ics_time now = ics_engine_now(r->e);
    if (!st->started) { /* else the host has just launched its first kernel (host_launched) */
        st->ready = now;
        st->started = true;
        if (!host_reached(r, g, op, now))
            return;
    }
    st->begin = now;
    switch (op->kind) {
    case ICS_TOP_COMPUTE: {
        ics_time dur = compute_span(r, st, op, ics_compute_time(r->gpu_type, op));
        if (dur >= ICS_TIME_LIMIT - st->begin) /* the engine refuses it: say which op */
            ics_replay_past_horizon(r, g);
        ics_engine_after(r->e, dur, compute_done, r, (uint64_t)g);
        break;
    }
    case ICS_TOP_COLL:
        ics_replay_coll_arrive(r, g, op);
        break;
    case ICS_TOP_SEND:
    case ICS_TOP_RECV:
        ics_replay_p2p_post(r, g, op);
        break;
    default:
        g_assert_not_reached();
    }
}

void ics_replay_past_horizon(ics_replay *r, int g)
{
    if (r->horizon_op < 0)
        r->horizon_op = g;
}

/* The run passed the horizon: the op that would have ended past it, else the first op under
 * way (a transfer or a collective on the shared network asked for the event). */
static char *horizon_message(const ics_replay *r)
{
    int total = r->base[ics_trace_nranks(r->tr)], g = r->horizon_op;
    for (int k = 0; g < 0 && k < total; k++)
        if (r->ops[k].started && !r->ops[k].ended)
            g = k;
    char *label = g >= 0 ? op_label(r, g) : g_strdup("the replay");
    char *msg =
        g_strdup_printf("%s: started at %.6g s, ends past the simulator's horizon of %s "
                        "(docs/limits.md)",
                        label, g >= 0 ? ics_time_to_s(r->ops[g].begin) : 0.0, ICS_TIME_LIMIT_TEXT);
    g_free(label);
    return msg;
}

/* Names the first op that never ended and what it waits for. */
static char *stuck_message(const ics_replay *r)
{
    int total = r->base[ics_trace_nranks(r->tr)];
    for (int g = 0; g < total; g++) {
        const op_state *st = &r->ops[g];
        if (st->ended)
            continue;
        int i = g - r->base[st->rank];
        const ics_trace_op *op = ics_trace_get_op(r->tr, st->rank, i);
        const char *name = op->name ? op->name : "";
        if (!st->started)
            continue;
        if (op->kind == ICS_TOP_COLL)
            return g_strdup_printf("the replay cannot finish: rank %d op %d (%s) waits in call %d "
                                   "on communicator '%s', which not every member reaches",
                                   st->rank, i, name, st->call,
                                   ics_trace_comm_name(r->tr, op->comm));
        return g_strdup_printf("the replay cannot finish: rank %d op %d (%s) waits for rank %d, "
                               "which never posts the matching %s",
                               st->rank, i, name, op->peer,
                               op->kind == ICS_TOP_SEND ? "recv" : "send");
    }
    for (int g = 0; g < total; g++)
        if (!r->ops[g].ended)
            return g_strdup_printf("the replay cannot finish: rank %d op %d never starts (its "
                                   "dependencies wait on each other)",
                                   r->ops[g].rank, g - r->base[r->ops[g].rank]);
    return g_strdup("the replay cannot finish");
}

static void tick(void *ctx)
{
    ics_replay *r = ctx;
    uint64_t total = (uint64_t)r->base[ics_trace_nranks(r->tr)];
    r->progress(r->progress_ctx, ics_engine_now(r->e), total - (uint64_t)r->remaining, total);
}

bool ics_replay_run(ics_replay *r, ics_replay_result *out, GError **error)
{
    int nr = ics_trace_nranks(r->tr), total = r->base[nr];
    g_return_val_if_fail(!r->ran, false); /* one run per replay */
    r->ran = true;
    if (!ics_net_backend_ready(r->backend, r->t, error))
        return false;
    r->e = ics_engine_new(0);
    r->net = ics_net_new(r->backend, r->t, r->e, &r->net_params);
    r->remaining = total;
    r->host = g_new0(ics_time, nr > 0 ? nr : 1);
    if (r->progress)
        ics_engine_set_tick(r->e, 4096, tick, r);
    int nch = ics_topo_nchans(r->t);
    r->memo_bytes = g_new0(uint64_t, nch > 0 ? nch : 1);
    ics_replay_sampler_start(r);
    for (int g = 0; g < total; g++)
        if (r->ops[g].waiting == 0)
            ics_replay_op_start(r, g);
    ics_engine_run(r->e, ICS_TIME_MAX);
    bool past = ics_engine_past_horizon(r->e), ok = r->remaining == 0 && !past;
    if (past) {
        char *msg = horizon_message(r);
        g_set_error_literal(error, ICS_ERROR, ICS_ERROR_LIMIT, msg);
        g_free(msg);
        free_unfinished(r);
    } else if (!ok) {
        char *msg = stuck_message(r);
        g_set_error_literal(error, ICS_ERROR, ICS_ERROR_INPUT, msg);
        g_free(msg);
    }
    *out = (ics_replay_result){.events = ics_engine_events_processed(r->e),
                               .folded = r->folded,
                               .colls_full = r->colls_full,
                               .colls_memo = r->colls_memo};
    ics_net_get_stats(r->net, &out->net);
    r->chan_bytes = g_new(uint64_t, nch > 0 ? nch : 1);
    for (int c = 0; c < nch; c++)
        r->chan_bytes[c] = ics_net_chan_bytes(r->net, c) + r->memo_bytes[c];
    ics_net_free(r->net);
    ics_engine_free(r->e);
    r->net = NULL;
    r->e = NULL;
    if (!ok)
        return false;
    ics_replay_breakdown(r);
    for (int k = 0; k < nr; k++)
        if (r->ranks[k].end_ps > out->step_ps) {
            out->step_ps = r->ranks[k].end_ps;
            out->critical_rank = k;
        }
    return true;
}

const ics_replay_rank *ics_replay_rank_stats(const ics_replay *r, int rank)
{
    return &r->ranks[rank];
}

const ics_replay_span *ics_replay_spans(const ics_replay *r, size_t *n)
{
    *n = (size_t)r->base[ics_trace_nranks(r->tr)];
    return r->spans;
}

uint64_t ics_replay_chan_bytes(const ics_replay *r, int chan)
{
    return r->chan_bytes ? r->chan_bytes[chan] : 0;
}
