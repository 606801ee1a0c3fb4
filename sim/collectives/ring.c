/* Ring algorithms as NCCL runs them. Every channel is its own ring over all ranks; the data is
 * split over the channels, each channel's share into n parts, each part into up to 4 slices
 * that pipeline through the ring.
 *   all-reduce:     2(n-1) steps; in step s, ring position p sends part (p - s) mod n to
 *                   p + 1; the first n-1 steps reduce what they receive (reduce-scatter), the
 *                   last n-1 forward the reduced parts (all-gather).
 *   reduce-scatter: the first n-1 steps; all-gather: the last n-1 (no reduction).
 *   broadcast:      a chain from the root, n-1 hops, slices pipelined;
 *   reduce:         a chain ending at the root, reducing at every hop.
 * Every forward waits for the slice it forwards to have arrived (and been reduced), plus NCCL's
 * per-step latency of the protocol. Across nodes each channel's ring enters a node at local GPU
 * c and leaves it from the GPU before it, so channels spread over the nodes' NICs. */
#include "algo.h"
#include "ring_order.h"

#define MAX_SLICES      4
#define MIN_SLICE_BYTES (64 * 1024)
/* A chain (broadcast, reduce) only overlaps its hops through slicing: it needs many slices to
 * approach the link rate, as NCCL's chunked pipeline does. */
#define MAX_CHAIN_SLICES      64
#define MIN_CHAIN_SLICE_BYTES (256 * 1024)

static bool ring_supports(const ics_algo_ctx *c)
{
    return c->req.op != ICS_COLL_ALLTOALL && c->req.op != ICS_COLL_SENDRECV && c->n >= 2;
}

/* The order of channel ch's ring (ring_order.h: NVLink-only rings where GPUs are wired to each
 * other, rank order by node otherwise). */
static void ring_order(const ics_algo_ctx *c, int ch, int *order)
{
    ics_ring_order(c->t, c->ranks, c->n, ch, order);
}

/* Bytes of piece `i` of `total` split in `parts` (the last takes the remainder). */
static uint64_t piece(uint64_t total, int parts, int i)
{
    uint64_t each = total / (uint64_t)parts;
    return i + 1 < parts ? each : total - each * (uint64_t)(parts - 1);
}

static int slices_for(uint64_t bytes)
{
    int s = (int)(bytes / MIN_SLICE_BYTES);
    return s < 1 ? 1 : (s > MAX_SLICES ? MAX_SLICES : s);
}

/* One channel of the all-reduce family: steps [s0, s1) of the 2(n-1); steps below n-1 reduce. */
static void ring_steps(const ics_algo_ctx *c, ics_sched *s, int ch, uint64_t chan_bytes, int s0,
                       int s1, int start)
{
    int n = c->n;
    int *order = g_new(int, n);
    ring_order(c, ch, order);
    int S = slices_for(chan_bytes / (uint64_t)n);
    int *prev = g_new(int, n *S), *cur = g_new(int, n *S), *last = g_new(int, n);
    for (int p = 0; p < n; p++)
        last[p] = -1;
    for (int step = s0; step < s1; step++) {
        for (int p = 0; p < n; p++) {
            int part = ((p - step) % n + n) % n;
            uint64_t part_bytes = piece(chan_bytes, n, part);
            for (int k = 0; k < S; k++) {
                uint64_t bytes = piece(part_bytes, S, k);
                int deps[2] = {start, -1}, nd = 1;
                if (step > s0) {
                    int got = prev[((p - 1 + n) % n) * S + k];
                    bool reduced = step - 1 < n - 1;
                    ics_time d = c->step_lat_ps + (reduced ? ics_algo_reduce_time(c, bytes) : 0);
                    deps[0] = ics_sched_delay(s, d, &got, 1);
                }
                /* a channel sends its slices in order through one FIFO, step after step */
                if (last[p] >= 0)
                    deps[nd++] = last[p];
                last[p] = cur[p * S + k] = ics_sched_send(
                    s, c->ranks[order[p]], c->ranks[order[(p + 1) % n]], ics_algo_wire(c, bytes),
                    (uint64_t)ch * 131071 + (uint64_t)p, deps, nd);
            }
        }
        int *tmp = prev;
        prev = cur;
        cur = tmp;
    }
    g_free(order);
    g_free(prev);
    g_free(cur);
    g_free(last);
}

/* A chain over the ring from position `first`, n-1 hops; reduce: every hop reduces. */
static void chain_steps(const ics_algo_ctx *c, ics_sched *s, int ch, uint64_t chan_bytes, int first,
                        bool reduce, int start)
{
    int n = c->n;
    int *order = g_new(int, n);
    ring_order(c, ch, order);
    int S = (int)MIN(MAX_CHAIN_SLICES, MAX(1, chan_bytes / MIN_CHAIN_SLICE_BYTES));
    int *prev = g_new(int, S), cur_prev = -1;
    for (int h = 0; h < n - 1; h++) {
        int a = order[(first + h) % n], b = order[(first + h + 1) % n];
        for (int k = 0; k < S; k++) {
            uint64_t bytes = piece(chan_bytes, S, k);
            int deps[2] = {start, -1}, nd = 1;
            if (h > 0) {
                ics_time d = c->step_lat_ps + (reduce ? ics_algo_reduce_time(c, bytes) : 0);
                deps[0] = ics_sched_delay(s, d, &prev[k], 1);
            }
            if (k > 0) /* in order through the channel's FIFO */
                deps[nd++] = cur_prev;
            cur_prev = prev[k] =
                ics_sched_send(s, c->ranks[a], c->ranks[b], ics_algo_wire(c, bytes),
                               (uint64_t)ch * 131071 + (uint64_t)h, deps, nd);
        }
    }
    g_free(order);
    g_free(prev);
}

/* Ring position of rank r in channel ch's order. */
static int position_of(const ics_algo_ctx *c, int ch, int r)
{
    int *order = g_new(int, c->n), pos = 0;
    ring_order(c, ch, order);
    for (int p = 0; p < c->n; p++)
        if (order[p] == r)
            pos = p;
    g_free(order);
    return pos;
}

/* True if all ranks share a node and every channel's ring has the same edges (a rotation of
 * one order; not NVLink-only rings, which differ per channel): then the channels are simulated
 * as one carrying all the data. The links see the
 * same bytes; what is lost is only the channels' interleaving, which the backend would
 * otherwise have to arbitrate packet by packet. */
static bool one_node(const ics_algo_ctx *c)
{
    int node = ics_topo_dev_get(c->t, c->ranks[0])->node;
    for (int i = 1; i < c->n; i++)
        if (ics_topo_dev_get(c->t, c->ranks[i])->node != node)
            return false;
    return !ics_ring_orders_differ(c->t, c->ranks, c->n);
}

static void ring_plan(const ics_algo_ctx *c, ics_sched *s)
{
    int n = c->n, start = ics_sched_delay(s, c->base_lat_ps, NULL, 0);
    uint64_t size = c->req.size_bytes;
    int nch = one_node(c) ? 1 : c->nch;
    for (int ch = 0; ch < nch; ch++) {
        uint64_t chan_bytes = piece(size, nch, ch);
        switch (c->req.op) {
        case ICS_COLL_ALL_REDUCE:
            ring_steps(c, s, ch, chan_bytes, 0, 2 * (n - 1), start);
            break;
        case ICS_COLL_REDUCE_SCATTER:
            ring_steps(c, s, ch, chan_bytes, 0, n - 1, start);
            break;
        case ICS_COLL_ALL_GATHER:
            /* steps n-1 .. 2n-3: forward without reducing */
            ring_steps(c, s, ch, chan_bytes, n - 1, 2 * (n - 1), start);
            break;
        case ICS_COLL_BROADCAST:
            chain_steps(c, s, ch, chan_bytes, position_of(c, ch, c->req.root), false, start);
            break;
        case ICS_COLL_REDUCE:
            chain_steps(c, s, ch, chan_bytes, (position_of(c, ch, c->req.root) + 1) % n, true,
                        start);
            break;
        default:
            g_assert_not_reached();
        }
    }
}

/* ---- the channels as streams ---------------------------------------------------------------- */

/* Channel ch's ring edges for `wire` bytes each: the slowest edge's transfer time and
 * latency, and the sum over the edges of transfer + latency + per-step cost `per_edge`. */
static ics_time ring_edges(const ics_algo_ctx *c, const int *order, int edges, uint64_t wire,
                           ics_time per_edge, ics_time *lat, ics_time *sum)
{
    ics_time worst = 0;
    *lat = *sum = 0;
    for (int p = 0; p < edges; p++) {
        ics_time l, t = ics_algo_hop_time(c, order[p], order[(p + 1) % c->n], wire, &l);
        *sum += t + l + per_edge;
        if (t + l > worst + *lat) {
            worst = t;
            *lat = l;
        }
    }
    return worst;
}

/* Channel ch as one stream over its ring's edges (a chain's n-1 for broadcast and reduce),
 * each edge carrying what the chunk-level plan sends over it, then the delay that the stream's
 * steady state leaves out. A slice's critical path follows the ring: in the all-reduce family
 * step s at position p waits for step s-1 at p-1, so `steps` steps walk steps/n times round
 * the ring, each edge costing a slice's transfer, its latency, NCCL's per-step latency and the
 * reduction; the links meanwhile need S slices per step on the slowest edge. A chain
 * pipelines its S slices over n-1 hops. */
static void ring_stream(const ics_algo_ctx *c, ics_sched *s, int ch, uint64_t chan_bytes, int steps,
                        bool reduce, bool chain, int first, int start)
{
    int n = c->n, edges = chain ? n - 1 : n;
    int *order = g_new(int, n);
    ring_order(c, ch, order);
    if (chain) { /* rotate so that the chain starts at position 0 */
        int *rot = g_new(int, n);
        for (int p = 0; p < n; p++)
            rot[p] = order[(first + p) % n];
        g_free(order);
        order = rot;
    }
    uint64_t edge_bytes =
        chain ? chan_bytes : (uint64_t)((double)chan_bytes * steps / n + 0.5); /* parts moved */
    int S = chain ? (int)MIN(MAX_CHAIN_SLICES, MAX(1, chan_bytes / MIN_CHAIN_SLICE_BYTES))
                  : slices_for(chan_bytes / (uint64_t)n);
    uint64_t slice = (chain ? chan_bytes : chan_bytes / (uint64_t)n) / (uint64_t)S;
    ics_time per_edge = c->step_lat_ps + (reduce ? ics_algo_reduce_time(c, slice) : 0);
    ics_time lat, path,
        t = ring_edges(c, order, edges, ics_algo_wire(c, slice), per_edge, &lat, &path);
    /* own: what the stream takes alone, every slice of every step at the slowest edge's rate */
    ics_time total, own = (ics_time)(chain ? 1 : steps) * (ics_time)S * t + lat;
    if (chain)
        total = path + (ics_time)(S - 1) * t;
    else
        total = MAX(own, (ics_time)((double)path * steps / n) + (ics_time)(S - 1) * t);
    ics_net_leg *legs = g_new(ics_net_leg, edges);
    for (int p = 0; p < edges; p++)
        legs[p] = (ics_net_leg){c->ranks[order[p]], c->ranks[order[(p + 1) % n]],
                                ics_algo_wire(c, edge_bytes), (uint64_t)ch * 131071 + (uint64_t)p};
    int id = ics_sched_stream(s, legs, edges, &start, 1);
    ics_sched_delay(s, total > own ? total - own : 0, &id, 1);
    g_free(legs);
    g_free(order);
}

static void ring_plan_streams(const ics_algo_ctx *c, ics_sched *s)
{
    int n = c->n, start = ics_sched_delay(s, c->base_lat_ps, NULL, 0);
    for (int ch = 0; ch < c->nch; ch++) {
        uint64_t b = piece(c->req.size_bytes, c->nch, ch);
        switch (c->req.op) {
        case ICS_COLL_ALL_REDUCE:
            ring_stream(c, s, ch, b, 2 * (n - 1), true, false, 0, start);
            break;
        case ICS_COLL_REDUCE_SCATTER:
            ring_stream(c, s, ch, b, n - 1, true, false, 0, start);
            break;
        case ICS_COLL_ALL_GATHER:
            ring_stream(c, s, ch, b, n - 1, false, false, 0, start);
            break;
        case ICS_COLL_BROADCAST:
            ring_stream(c, s, ch, b, 0, false, true, position_of(c, ch, c->req.root), start);
            break;
        case ICS_COLL_REDUCE:
            ring_stream(c, s, ch, b, 0, true, true, (position_of(c, ch, c->req.root) + 1) % n,
                        start);
            break;
        default:
            g_assert_not_reached();
        }
    }
}

const ics_algo_ops ics_algo_ring = {
    .algo = ICS_ALGO_RING,
    .supports = ring_supports,
    .plan = ring_plan,
    .plan_streams = ring_plan_streams,
};
