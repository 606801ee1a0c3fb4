/* CollNet all-reduce (IB SHARP): the fabric's switches reduce, so each node sends its reduced
 * data into the network once and gets the result back once.
 *   Direct: every GPU with its own NIC is a head; the data is split over the heads; inside a
 *           node every GPU sends head h its part h (reduce-scatter over NVLink), head h pushes
 *           the node's sum through its NIC into the SHARP switch of its rail, and hands the
 *           result to every local GPU (all-gather).
 *   Chain:  per channel a chain inside each node (from local rank c): reduce down the chain to
 *           its head, SHARP across nodes, broadcast back along the chain.
 * A SHARP op here is one reduction at one switch (net.h): every node's NIC of a rail must hang
 * off the same SHARP leaf (a rail-optimized fabric within one scalable unit). Trees of
 * aggregation switches across leaves are not modelled; such communicators are refused. */
#include "collectives/algo.h"

#define CHUNK_BYTES     (512 * 1024)
#define MAX_SLICES      32
#define MAX_LOCAL_RANKS 8 /* NCCL: CollNet for up to NCCL_MAX_DIRECT_ARITY + 1 local GPUs */

/* The fabric switch NIC `nic` is wired to if it reduces (SHARP), else -1. */
static int sharp_leaf(const ics_topo *t, int nic)
{
    int deg;
    const int *out = ics_topo_out(t, nic, &deg);
    for (int i = 0; i < deg; i++) {
        int sw = ics_topo_chan_get(t, out[i])->dst;
        if (ics_topo_dev_get(t, sw)->kind == ICS_DEV_NET_SWITCH)
            return ics_net_reduce_bw(t, sw) > 0 ? sw : -1;
    }
    return -1;
}

/* What both variants share: nodes, and per node its heads and their NICs. */
typedef struct {
    ics_algo_nodes g;
    int nheads;
    int *heads, *nics; /* nnodes x nheads */
} collnet_view;

static void view_clear(collnet_view *v)
{
    ics_algo_nodes_clear(&v->g);
    g_free(v->heads);
    g_free(v->nics);
}

/* True if every node has the same heads count and head h of every node reaches one SHARP leaf;
 * fills *v (clear it either way). */
static bool view_init(const ics_topo *t, const int *ranks, int n, collnet_view *v)
{
    *v = (collnet_view){0};
    ics_algo_nodes_init(t, ranks, n, &v->g);
    int m = v->g.nnodes, per = 0;
    for (int k = 0; k < m; k++)
        per = MAX(per, ics_algo_nodes_size(&v->g, k));
    const ics_hw_fabric *f = ics_hw_fabric_of(ics_topo_hw(t));
    if (m < 2 || per > MAX_LOCAL_RANKS || !f || !f->sharp)
        return false;
    v->heads = g_new(int, m *per);
    v->nics = g_new(int, m *per);
    for (int k = 0; k < m; k++) {
        int h = ics_algo_node_heads(t, ranks, &v->g, k, v->heads + k * per, v->nics + k * per);
        if (k > 0 && h != v->nheads)
            return false;
        v->nheads = h;
    }
    if (v->nheads == 0)
        return false;
    /* compact to nheads per node */
    for (int k = 0; k < m; k++)
        for (int h = 0; h < v->nheads; h++) {
            v->heads[k * v->nheads + h] = v->heads[k * per + h];
            v->nics[k * v->nheads + h] = v->nics[k * per + h];
        }
    for (int h = 0; h < v->nheads; h++) {
        int leaf = sharp_leaf(t, v->nics[h]);
        for (int k = 0; k < m; k++)
            if (leaf < 0 || sharp_leaf(t, v->nics[k * v->nheads + h]) != leaf)
                return false;
    }
    return true;
}

static bool has_nvswitch(const ics_topo *t)
{
    return ics_hw_node_of(ics_topo_hw(t))->n_nvswitches > 0;
}

static bool direct_supports(const ics_algo_ctx *c)
{
    collnet_view v = {0};
    bool ok = c->req.op == ICS_COLL_ALL_REDUCE && has_nvswitch(c->t) &&
              view_init(c->t, c->ranks, c->n, &v);
    view_clear(&v);
    return ok;
}

/* Chain heads rotate over the local ranks: each one's NIC must reach a SHARP leaf shared by the
 * same rotation on every node. */
static bool chain_heads_ok(const ics_algo_ctx *c, const ics_algo_nodes *g)
{
    int m = ics_algo_nodes_size(g, 0);
    for (int k = 1; k < g->nnodes; k++)
        if (ics_algo_nodes_size(g, k) != m)
            return false;
    for (int p = 0; p < m; p++) {
        int leaf = -2;
        for (int k = 0; k < g->nnodes; k++) {
            int nic = ics_route_nic_of_gpu(c->t, c->ranks[g->rank[g->start[k] + p]]);
            int l = nic < 0 ? -1 : sharp_leaf(c->t, nic);
            if (l < 0 || (leaf != -2 && l != leaf))
                return false;
            leaf = l;
        }
    }
    return true;
}

static bool chain_supports(const ics_algo_ctx *c)
{
    collnet_view v = {0};
    bool ok = c->req.op == ICS_COLL_ALL_REDUCE && view_init(c->t, c->ranks, c->n, &v) &&
              chain_heads_ok(c, &v.g);
    view_clear(&v);
    return ok;
}

static int slices_for(uint64_t bytes)
{
    return (int)MAX(1, MIN(MAX_SLICES, bytes / CHUNK_BYTES));
}

/* One send that waits for `dep` and for the previous send of its lane (*fifo: slices go
 * through a connection in order, as through NCCL's FIFO); updates *fifo. */
static int lane_send(const ics_algo_ctx *c, ics_sched *s, int src_dev, int dst_dev, double f,
                     uint64_t bytes, uint64_t hash, int dep, int *fifo)
{
    int deps[2] = {dep, *fifo};
    *fifo = ics_sched_send(s, src_dev, dst_dev, ics_algo_wire_by(f, bytes), hash, deps,
                           *fifo >= 0 ? 2 : 1);
    return *fifo;
}

/* A SHARP lane: one rail's NICs (one per node) and its ops in order. */
typedef struct {
    int m;
    int *from, *nics;       /* per node: the GPU whose sum goes in, its NIC */
    int *in, *out, reduced; /* FIFO state: GPU -> NIC, NIC -> GPU, the switch */
} sharp_lane;

static void lane_init(sharp_lane *l, int m)
{
    *l = (sharp_lane){.m = m, .reduced = -1};
    l->from = g_new(int, m);
    l->nics = g_new(int, m);
    l->in = g_new(int, m);
    l->out = g_new(int, m);
    for (int k = 0; k < m; k++)
        l->in[k] = l->out[k] = -1;
}

static void lane_clear(sharp_lane *l)
{
    g_free(l->from);
    g_free(l->nics);
    g_free(l->in);
    g_free(l->out);
}

/* The SHARP step of one slice: each node's GPU hands its sum to its NIC, the leaf reduces
 * across nodes, each NIC hands the result back. ready[k]: when node k's sum is at its GPU;
 * fills back[k]: when the result is. */
static void sharp_step(const ics_algo_ctx *c, ics_sched *s, sharp_lane *l, uint64_t bytes,
                       const int *ready, uint64_t hash, int *back)
{
    int m = l->m, *in = g_new(int, m + 1);
    for (int k = 0; k < m; k++)
        in[k] = lane_send(c, s, c->ranks[l->from[k]], l->nics[k], c->net_wire_factor, bytes, hash,
                          ready[k], &l->in[k]);
    int nd = m;
    if (l->reduced >= 0)
        in[nd++] = l->reduced;
    int lat = ics_sched_delay(s, c->net_step_lat_ps, in, nd);
    l->reduced = ics_sched_reduce(s, l->nics, m, sharp_leaf(c->t, l->nics[0]),
                                  ics_algo_wire_by(c->net_wire_factor, bytes), &lat, 1);
    for (int k = 0; k < m; k++)
        back[k] = lane_send(c, s, l->nics[k], c->ranks[l->from[k]], c->net_wire_factor, bytes, hash,
                            l->reduced, &l->out[k]);
    g_free(in);
}

static void direct_plan(const ics_algo_ctx *c, ics_sched *s)
{
    collnet_view v = {0};
    bool ok = view_init(c->t, c->ranks, c->n, &v);
    g_assert(ok);
    int m = v.g.nnodes, H = v.nheads, n = c->n;
    int start = ics_sched_delay(s, c->base_lat_ps, NULL, 0);
    int *ready = g_new(int, m), *back = g_new(int, m), *deps = g_new(int, n + 1);
    int *up = g_new(int, n), *down = g_new(int, n); /* FIFO per rank of this head's part */
    for (int h = 0; h < H; h++) {
        uint64_t part = ics_algo_piece(c->req.size_bytes, H, h);
        int S = slices_for(part);
        sharp_lane lane;
        lane_init(&lane, m);
        for (int k = 0; k < m; k++) {
            lane.from[k] = v.heads[k * H + h];
            lane.nics[k] = v.nics[k * H + h];
        }
        for (int r = 0; r < n; r++)
            up[r] = down[r] = -1;
        for (int sl = 0; sl < S; sl++) {
            uint64_t b = ics_algo_piece(part, S, sl);
            for (int k = 0; k < m; k++) { /* reduce-scatter to the head */
                int head = lane.from[k], nd = 0;
                for (int i = v.g.start[k]; i < v.g.start[k + 1]; i++) {
                    int r = v.g.rank[i];
                    if (r != head)
                        deps[nd++] =
                            lane_send(c, s, c->ranks[r], c->ranks[head], c->intra_wire_factor, b,
                                      (uint64_t)r * 64 + (uint64_t)h, start, &up[r]);
                }
                ready[k] =
                    nd == 0 ? start
                            : ics_sched_delay(s, c->step_lat_ps + nd * ics_algo_reduce_time(c, b),
                                              deps, nd);
            }
            sharp_step(c, s, &lane, b, ready, (uint64_t)h, back);
            for (int k = 0; k < m; k++) { /* all-gather from the head */
                int head = lane.from[k];
                int d = ics_sched_delay(s, c->step_lat_ps, &back[k], 1);
                for (int i = v.g.start[k]; i < v.g.start[k + 1]; i++) {
                    int r = v.g.rank[i];
                    if (r != head)
                        lane_send(c, s, c->ranks[head], c->ranks[r], c->intra_wire_factor, b,
                                  (uint64_t)head * 64 + (uint64_t)h, d, &down[r]);
                }
            }
        }
        lane_clear(&lane);
    }
    g_free(ready);
    g_free(back);
    g_free(deps);
    g_free(up);
    g_free(down);
    view_clear(&v);
}

/* Node k's chain of channel ch: position i is local rank (ch + i) mod L. */
static int chain_rank(const ics_algo_nodes *g, int k, int ch, int i)
{
    int L = ics_algo_nodes_size(g, k);
    return g->rank[g->start[k] + (ch + i) % L];
}

static void chain_plan(const ics_algo_ctx *c, ics_sched *s)
{
    ics_algo_nodes g;
    ics_algo_nodes_init(c->t, c->ranks, c->n, &g);
    int m = g.nnodes, L = ics_algo_nodes_size(&g, 0);
    int start = ics_sched_delay(s, c->base_lat_ps, NULL, 0);
    int *ready = g_new(int, m), *back = g_new(int, m);
    int *up = g_new(int, m *L), *down = g_new(int, m *L); /* FIFO per chain hop */
    for (int ch = 0; ch < c->nch; ch++) {
        uint64_t bytes = ics_algo_piece(c->req.size_bytes, c->nch, ch);
        int S = slices_for(bytes);
        sharp_lane lane;
        lane_init(&lane, m);
        for (int k = 0; k < m; k++) {
            lane.from[k] = chain_rank(&g, k, ch, 0);
            lane.nics[k] = ics_route_nic_of_gpu(c->t, c->ranks[lane.from[k]]);
        }
        for (int i = 0; i < m * L; i++)
            up[i] = down[i] = -1;
        for (int sl = 0; sl < S; sl++) {
            uint64_t b = ics_algo_piece(bytes, S, sl);
            for (int k = 0; k < m; k++) { /* up the chain to its head, reducing */
                int prev = start;
                for (int i = L - 1; i > 0; i--) {
                    int a = chain_rank(&g, k, ch, i), to = chain_rank(&g, k, ch, i - 1);
                    int d = i == L - 1
                                ? start
                                : ics_sched_delay(s, c->step_lat_ps + ics_algo_reduce_time(c, b),
                                                  &prev, 1);
                    prev = lane_send(c, s, c->ranks[a], c->ranks[to], c->intra_wire_factor, b,
                                     ics_algo_flow(c, ch, (uint64_t)a), d, &up[k * L + i]);
                }
                ready[k] = L > 1 ? ics_sched_delay(s, ics_algo_reduce_time(c, b), &prev, 1) : start;
            }
            sharp_step(c, s, &lane, b, ready, (uint64_t)ch, back);
            for (int k = 0; k < m; k++) { /* and back down */
                int prev = back[k];
                for (int i = 1; i < L; i++) {
                    int a = chain_rank(&g, k, ch, i - 1), to = chain_rank(&g, k, ch, i);
                    int d = ics_sched_delay(s, c->step_lat_ps, &prev, 1);
                    prev = lane_send(c, s, c->ranks[a], c->ranks[to], c->intra_wire_factor, b,
                                     ics_algo_flow(c, ch, (uint64_t)to), d, &down[k * L + i]);
                }
            }
        }
        lane_clear(&lane);
    }
    g_free(ready);
    g_free(back);
    g_free(up);
    g_free(down);
    ics_algo_nodes_clear(&g);
}

const ics_algo_ops ics_algo_collnet_direct = {
    .algo = ICS_ALGO_COLLNET_DIRECT,
    .supports = direct_supports,
    .plan = direct_plan,
};

const ics_algo_ops ics_algo_collnet_chain = {
    .algo = ICS_ALGO_COLLNET_CHAIN,
    .supports = chain_supports,
    .plan = chain_plan,
};
