/* Communicators: a set of GPUs, the tuner's view of them, and the loop that turns one call into
 * a schedule and plays it. The algorithm registry is the table below: adding an algorithm is
 * one file and one row. */
#include "collectives/algo.h"
#include "collectives/tuner.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

struct ics_comm {
    const ics_topo *t;
    const ics_net_ops *backend;
    ics_net_params params;
    int *ranks;
    int n;
    ics_tuner tuner;
};

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

uint64_t ics_algo_wire(const ics_algo_ctx *c, uint64_t payload)
{
    return (uint64_t)llround((double)payload * c->wire_factor);
}

ics_time ics_algo_reduce_time(const ics_algo_ctx *c, uint64_t bytes)
{
    return c->reduce_bytes_per_s ? ics_time_serialize(3 * bytes, c->reduce_bytes_per_s) : 0;
}

void ics_algo_charge(const ics_algo_ctx *c, ics_sched *s, int id, uint64_t bytes, uint64_t ctas,
                     ics_time syncs)
{
    uint64_t cta = c->cta_bytes_per_s * ctas;
    if (cta > 0)
        ics_sched_set_floor(s, id, ics_time_serialize(bytes, cta));
    ics_sched_set_tail(s, id, c->sync_ps * syncs);
}

ics_time ics_algo_beyond_sync(const ics_algo_ctx *c, ics_time hop_ps)
{
    return hop_ps > c->sync_ps ? hop_ps - c->sync_ps : 0;
}

uint64_t ics_algo_wire_by(double factor, uint64_t payload)
{
    return (uint64_t)llround((double)payload * factor);
}

uint64_t ics_algo_piece(uint64_t total, int parts, int i)
{
    uint64_t each = total / (uint64_t)parts;
    return i + 1 < parts ? each : total - each * (uint64_t)(parts - 1);
}

ics_time ics_algo_hop_time(const ics_algo_ctx *c, int a, int b, uint64_t wire_bytes,
                           ics_time *lat_ps)
{
    ics_route r;
    *lat_ps = 0;
    if (a == b || !ics_route_find(c->t, c->ranks[a], c->ranks[b], 0, &r))
        return 0;
    uint64_t bw = 0;
    for (int p = 0; p < r.n_paths; p++)
        bw += ics_route_path_bw(c->t, &r.paths[p]);
    *lat_ps = ics_route_path_latency(c->t, &r.paths[0]);
    ics_route_clear(&r);
    return bw ? ics_time_serialize(wire_bytes, bw) : 0;
}

void ics_algo_nodes_init(const ics_topo *t, const int *ranks, int n, ics_algo_nodes *g)
{
    int *node = g_new(int, n), *seen = g_new(int, n), nnodes = 0;
    for (int r = 0; r < n; r++) {
        node[r] = ics_topo_dev_get(t, ranks[r])->node;
        bool known = false;
        for (int k = 0; k < nnodes && !known; k++)
            known = seen[k] == node[r];
        if (!known)
            seen[nnodes++] = node[r];
    }
    g->nnodes = nnodes;
    g->start = g_new(int, nnodes + 1);
    g->rank = g_new(int, n);
    int at = 0;
    for (int k = 0; k < nnodes; k++) {
        g->start[k] = at;
        for (int r = 0; r < n; r++)
            if (node[r] == seen[k])
                g->rank[at++] = r;
    }
    g->start[nnodes] = at;
    g_free(node);
    g_free(seen);
}

void ics_algo_nodes_clear(ics_algo_nodes *g)
{
    g_free(g->start);
    g_free(g->rank);
    *g = (ics_algo_nodes){0};
}

int ics_algo_node_heads(const ics_topo *t, const int *ranks, const ics_algo_nodes *g, int k,
                        int *heads, int *nics)
{
    int count = 0;
    int *used = g_new(int, ics_algo_nodes_size(g, k));
    for (int i = g->start[k]; i < g->start[k + 1]; i++) {
        int nic = ics_route_nic_of_gpu(t, ranks[g->rank[i]]);
        bool taken = nic < 0;
        for (int j = 0; j < count && !taken; j++)
            taken = used[j] == nic;
        if (taken)
            continue;
        used[count] = nic;
        heads[count] = g->rank[i];
        if (nics)
            nics[count] = nic;
        count++;
    }
    g_free(used);
    return count;
}

static void fill_ctx(const ics_comm *c, const ics_coll_req *req, const ics_coll_tuning *tuning,
                     ics_coll_algo algo, ics_coll_proto proto, int nch, ics_algo_ctx *ctx)
{
    *ctx = (ics_algo_ctx){.t = c->t,
                          .ranks = c->ranks,
                          .n = c->n,
                          .req = *req,
                          .proto = proto,
                          .nch = nch,
                          .wire_factor = ics_tuner_wire_factor(&c->tuner, algo, proto) *
                                         (1 - ics_tuner_sync_share(&c->tuner, algo, proto)),
                          .base_lat_ps = ics_tuner_base_lat(&c->tuner, algo, proto),
                          .step_lat_ps = ics_tuner_step_lat(&c->tuner, algo, proto),
                          .reduce_bytes_per_s = c->tuner.reduce_bytes_per_s,
                          .sync_ps = ics_tuner_sync_lat(&c->tuner, proto),
                          .cta_bytes_per_s = ics_tuner_cta_bytes_per_s(&c->tuner),
                          .ctas_per_channel =
                              ics_tuner_ctas_per_channel(&c->tuner, req, tuning, algo, proto, nch),
                          .net_step_lat_ps = ics_tuner_net_step_lat(&c->tuner, algo, proto)};
    ics_tuner_leg_factors(&c->tuner, algo, proto, &ctx->intra_wire_factor, &ctx->net_wire_factor,
                          &ctx->nvls_wire_factor);
}

static bool supports(const ics_tuner *tu, ics_coll_algo algo, const ics_coll_req *req)
{
    const ics_algo_ops *ops = algorithms[algo];
    if (!ops)
        return false;
    ics_algo_ctx ctx = {.t = tu->t, .ranks = tu->ranks, .n = tu->n, .req = *req};
    return ops->supports(&ctx);
}

ics_sched *ics_comm_plan(ics_comm *c, const ics_coll_req *req, const ics_coll_tuning *tuning,
                         ics_coll_result *out)
{
    ics_coll_algo algo;
    ics_coll_proto proto;
    if (!ics_tuner_pick(&c->tuner, req, tuning, supports, &algo, &proto))
        return NULL;
    int nch = ics_tuner_channels(&c->tuner, req, tuning, algo, proto);
    ics_algo_ctx ctx;
    fill_ctx(c, req, tuning, algo, proto, nch, &ctx);
    ics_sched *s = ics_sched_new();
    const ics_algo_ops *ops = algorithms[algo];
    bool streams =
        ops->plan_streams && (tuning->plan == ICS_PLAN_STREAMS ||
                              (tuning->plan == ICS_PLAN_AUTO && c->n >= ICS_STREAMS_AUTO_RANKS));
    (streams ? ops->plan_streams : ops->plan)(&ctx, s);
    *out = (ics_coll_result){.algo = algo, .proto = proto, .nchannels = nch, .streams = streams};
    return s;
}

bool ics_comm_run(ics_comm *c, const ics_coll_req *req, const ics_coll_tuning *tuning,
                  ics_coll_result *out)
{
    ics_sched *s = ics_comm_plan(c, req, tuning, out);
    if (!s)
        return false;
    out->time_ps = ics_sched_run(s, c->t, c->backend, &c->params);
    ics_sched_free(s);
    return true;
}

/* ---- NCCL's environment variables ---------------------------------------------------------- */

static int lookup(const char *v, const char *const *names, int count)
{
    for (int i = 0; i < count; i++)
        if (g_ascii_strcasecmp(v, names[i]) == 0)
            return i;
    return -2;
}

static void note(char **err, const char *var, const char *v)
{
    char *msg =
        g_strdup_printf("%s%s=%s not understood, ignored", *err ? *err : "", *err ? "; " : "", var);
    g_free(*err);
    *err = msg;
    (void)v;
}

void ics_coll_tuning_from_env(ics_coll_tuning *t, char **err)
{
    *t = (ics_coll_tuning){.algo = -1, .proto = -1, .nvls_enable = true};
    *err = NULL;
    const char *v;
    if ((v = g_getenv("NCCL_ALGO")) && *v) {
        int a = lookup(v, algo_names, ICS_ALGO_COUNT);
        if (a >= 0)
            t->algo = a;
        else
            note(err, "NCCL_ALGO", v);
    }
    if ((v = g_getenv("NCCL_PROTO")) && *v) {
        int p = lookup(v, proto_names, ICS_PROTO_COUNT);
        if (p >= 0)
            t->proto = p;
        else
            note(err, "NCCL_PROTO", v);
    }
    if ((v = g_getenv("NCCL_NVLS_ENABLE")) && *v)
        t->nvls_enable = atoi(v) != 0;
    if ((v = g_getenv("NCCL_COLLNET_ENABLE")) && *v)
        t->collnet_enable = atoi(v) != 0;
    if ((v = g_getenv("NCCL_MIN_NCHANNELS")) && *v)
        t->min_channels = MAX(0, atoi(v));
    if ((v = g_getenv("NCCL_MAX_NCHANNELS")) && *v)
        t->max_channels = MAX(0, atoi(v));
}
