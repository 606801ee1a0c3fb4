/* Communicators: a set of GPUs, the tuner's view of them, and the loop that turns one call into
 * a schedule and plays it. The algorithm registry is the table below: adding an algorithm is
 * one file and one row. */
#include "collectives/algo.h"
#include "collectives/p2p_waves.h"
#include "collectives/tuner.h"

#include <math.h>

static const ics_algo_ops *const algorithms[ICS_ALGO_COUNT] = {
    [ICS_ALGO_RING] = &ics_algo_ring,
    [ICS_ALGO_NVLS] = &ics_algo_nvls,
    [ICS_ALGO_DIRECT] = &ics_algo_direct,
    [ICS_ALGO_TREE] = &ics_algo_tree,
    [ICS_ALGO_NVLS_TREE] = &ics_algo_nvls_tree,
    [ICS_ALGO_COLLNET_DIRECT] = &ics_algo_collnet_direct,
    [ICS_ALGO_COLLNET_CHAIN] = &ics_algo_collnet_chain,
    [ICS_ALGO_PAT] = &ics_algo_pat,
};

struct ics_comm {
    const ics_topo *t;
    const ics_net_ops *backend;
    ics_net_params params;
    int *ranks;
    int n;
    ics_tuner tuner;
};

ics_comm *ics_comm_new(const ics_topo *t, const ics_net_ops *backend, const int *gpus, int nranks,
                       const ics_net_params *params)
{
    ics_comm *c = g_new0(ics_comm, 1);
    c->t = t;
    c->backend = backend;
    if (params)
        c->params = *params;
    c->n = nranks;
    c->ranks = g_memdup2(gpus, sizeof(int) * (size_t)nranks);
    ics_tuner_init(&c->tuner, t, c->ranks, nranks);
    return c;
}

void ics_comm_free(ics_comm *c)
{
    if (!c)
        return;
    g_free(c->ranks);
    g_free(c);
}

int ics_comm_nranks(const ics_comm *c)
{
    return c->n;
}

double ics_comm_cal_value(const ics_comm *c, ics_cal_param p)
{
    return ics_tuner_cal_value(&c->tuner, p);
}

static void fill_ctx(const ics_comm *c, const ics_coll_req *req, ics_coll_proto proto,
                     const ics_tuner_price *p, const ics_coll_tuning *tu, ics_algo_ctx *ctx)
{
    *ctx = (ics_algo_ctx){.t = c->t,
                          .ranks = c->ranks,
                          .n = c->n,
                          .ppn = c->tuner.ppn,
                          .req = *req,
                          .proto = proto,
                          .nch = p->nch,
                          .nvls_channels = p->nvls_channels,
                          .nvls_chunk = (uint64_t)MAX(tu->nvls_chunk, 0),
                          .nvlstree_max_chunk = (uint64_t)MAX(tu->nvlstree_max_chunk, 0),
                          .wire_factor = p->wire_factor,
                          .base_lat_ps = p->base_lat_ps,
                          .step_lat_ps = p->step_lat_ps,
                          .reduce_bytes_per_s = p->reduce_bytes_per_s,
                          .sync_ps = p->sync_ps,
                          .cta_bytes_per_s = p->cta_bytes_per_s,
                          .ctas_per_channel = p->ctas_per_channel,
                          .intra_wire_factor = p->intra_wire_factor,
                          .net_wire_factor = p->net_wire_factor,
                          .nvls_wire_factor = p->nvls_wire_factor,
                          .net_step_lat_ps = p->net_step_lat_ps,
                          .net_msg_ps = p->net_msg_ps,
                          .net_op_ps = p->net_op_ps,
                          .net_msg_bytes = p->net_msg_bytes,
                          .p2p_step = ics_tuner_p2p_step(&c->tuner, tu),
                          .p2p_channels = ics_tuner_p2p_channels(&c->tuner),
                          .p2p_group = tu->p2p_group,
                          .simple_buffsize = (uint64_t)MAX(tu->buffsize, 0)};
}

/* The algorithms that can run this call on the communicator, a bit per ics_coll_algo. */
static unsigned supported(const ics_comm *c, const ics_coll_req *req)
{
    ics_algo_ctx ctx = {.t = c->t, .ranks = c->ranks, .n = c->n, .req = *req};
    unsigned mask = 0;
    for (int a = 0; a < ICS_ALGO_COUNT; a++)
        if (algorithms[a] && algorithms[a]->supports(&ctx))
            mask |= 1u << a;
    return mask;
}

/* One rank: NCCL runs no algorithm (ncclLaunchOneRank), it copies the send buffer to the
 * receive buffer on the GPU, a kernel or cudaMemcpyAsync that reads and writes every byte: the
 * GPU's launch latency plus twice the bytes at the rate its streaming kernels reach in HBM
 * (hw.h's compute parameters: the workload's elementwise kernels run at the same rate). No
 * link is used, so the call plays the same alone or on a shared network. */
static ics_sched *local_copy(const ics_comm *c, const ics_coll_req *req, ics_coll_result *out)
{
    const ics_hw_gpu_type *g = ics_hw_node_of(ics_topo_hw(c->t))->gpu_type;
    double rate = (double)g->hbm_bw_bytes_per_s * g->compute.mem_eff;
    ics_time copy = ics_time_serialize(2 * req->size_bytes, (uint64_t)MAX(1.0, rate));
    ics_sched *s = ics_sched_new();
    ics_sched_delay(
        s, copy > ICS_TIME_MAX - g->compute.launch_ps ? ICS_TIME_MAX : g->compute.launch_ps + copy,
        NULL, 0);
    *out = (ics_coll_result){.local = true};
    return s;
}

/* The call chunk by chunk; NULL where the plan is auto, the algorithm has streams and the chunk
 * plan grows past ICS_STREAMS_AUTO_STEPS: a call that long spends nearly all its time in the
 * pipeline's steady state, which is what a stream plays, and playing it step by step is what
 * made a replay's data-parallel calls of 84 ranks cost minutes on the packet backend. */
static ics_sched *chunk_plan(const ics_algo_ops *ops, const ics_algo_ctx *ctx, ics_coll_plan plan)
{
    ics_sched *s = ics_sched_new();
    bool may_stream = ops->plan_streams && plan == ICS_PLAN_AUTO && ctx->proto == ICS_PROTO_SIMPLE;
    if (may_stream)
        ics_sched_limit(s, ICS_STREAMS_AUTO_STEPS);
    ops->plan(ctx, s);
    if (!ics_sched_over(s)) {
        ics_sched_limit(s, 0);
        return s;
    }
    ics_sched_free(s);
    return NULL;
}

ics_sched *ics_comm_plan(ics_comm *c, const ics_coll_req *req, const ics_coll_tuning *tuning,
                         ics_coll_result *out)
{
    if (c->n == 1)
        return local_copy(c, req, out);
    ics_coll_algo algo;
    ics_coll_proto proto;
    if (!ics_tuner_pick(&c->tuner, req, tuning, supported(c, req), &algo, &proto))
        return NULL;
    ics_tuner_price price;
    ics_tuner_price_call(&c->tuner, req, tuning, algo, proto, &price);
    ics_algo_ctx ctx;
    fill_ctx(c, req, proto, &price, tuning, &ctx);
    const ics_algo_ops *ops = algorithms[algo];
    bool streams = ops->plan_streams && ics_comm_plays_streams(tuning->plan, c->n);
    ics_sched *s = streams ? NULL : chunk_plan(ops, &ctx, tuning->plan);
    if (!s) {
        streams = true;
        s = ics_sched_new();
        ops->plan_streams(&ctx, s);
    }
    *out = (ics_coll_result){
        .algo = algo, .proto = proto, .nchannels = price.nch, .waves = 1, .streams = streams};
    if (algo == ICS_ALGO_DIRECT && req->op == ICS_COLL_ALLTOALL) {
        ics_p2p_waves *w = ics_p2p_waves_new(&ctx);
        out->waves = ics_p2p_waves_count(w);
        ics_p2p_waves_free(w);
    }
    return s;
}

bool ics_comm_plays_streams(ics_coll_plan plan, int n)
{
    return plan == ICS_PLAN_STREAMS || (plan == ICS_PLAN_AUTO && n >= ICS_STREAMS_AUTO_RANKS);
}

bool ics_comm_call_fits(ics_coll_op op, int nranks, ics_coll_plan plan, const ics_net_ops *backend,
                        GError **error)
{
    if (op != ICS_COLL_ALLTOALL || nranks < 2)
        return true;
    uint64_t pairs = (uint64_t)nranks * (uint64_t)(nranks - 1);
    bool streams = ics_comm_plays_streams(plan, nranks);
    unsigned per = streams ? backend->stream_pair_bytes : backend->transfer_bytes;
    char *what =
        g_strdup_printf("alltoall on %d ranks: %" G_GUINT64_FORMAT " %s x %u B", nranks, pairs,
                        streams ? "pairs' legs of streams" : "transfers at once", per);
    bool ok = ics_budget_check(ics_budget_mul_add(pairs, (uint64_t)per, 0), what, error);
    g_free(what);
    return ok;
}

bool ics_comm_run(ics_comm *c, const ics_coll_req *req, const ics_coll_tuning *tuning,
                  ics_coll_result *out)
{
    return ics_comm_run_traffic(c, req, tuning, out, NULL);
}

bool ics_comm_run_traffic(ics_comm *c, const ics_coll_req *req, const ics_coll_tuning *tuning,
                          ics_coll_result *out, uint64_t *chan_bytes)
{
    ics_sched *s = ics_comm_plan(c, req, tuning, out);
    if (!s)
        return false;
    out->time_ps = ics_sched_run_take(s, c->t, c->backend, &c->params, chan_bytes);
    /* A thread that drives G GPUs launches their kernels one after another: back to back, calls
     * go no faster than G launches (the flat floors of nccl-tests -g G logs at small sizes). */
    double launch_us = ics_tuner_cal_value(&c->tuner, ICS_CAL_LAUNCH_US);
    if (launch_us > 0) {
        ics_time floor =
            (ics_time)llround(launch_us * MAX(1, tuning->gpus_per_thread) * (double)ICS_PS_PER_US);
        out->time_ps = MAX(out->time_ps, floor);
    }
    return true;
}
