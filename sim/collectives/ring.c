/* Ring algorithms as NCCL runs them. Every channel is its own ring over all ranks; the data is
 * split over the channels and each channel's share cut as NCCL cuts it: loops of n chunks, one
 * per rank part, each chunk sent in slices (Simple: two per chunk).
 *   all-reduce:     2(n-1) steps per loop; in step s, ring position p sends part (p - s) mod n
 *                   to p + 1; the first n-1 steps reduce what they receive (reduce-scatter),
 *                   the last n-1 forward the reduced parts (all-gather).
 *   reduce-scatter: the first n-1 steps; all-gather: the last n-1 (no reduction).
 *   broadcast:      a chain from the root, n-1 hops, slices pipelined;
 *   reduce:         a chain ending at the root, reducing at every hop.
 * A channel is a CTA (channels.c): each slice it sends takes at least its copy time and is
 * followed by its synchronization; the slice a rank forwards must have arrived, been reduced,
 * and the rest of NCCL's per-step latency passed. Across nodes each channel's ring enters a node
 * at local GPU c and leaves it from the GPU before it, so channels spread over the NICs. */
#include "collectives/algo.h"
#include "collectives/ring_order.h"

#define MAX_SLICES 4 /* simulated slices per step of a simulated loop, at most */
/* A chain (broadcast, reduce) only overlaps its hops through slicing: it needs many slices to
 * approach the link rate, as NCCL's chunked pipeline does. */
#define MAX_CHAIN_SLICES 64

/* NCCL's unit of work on a ring (enqueue.cc, prims_*.h): per channel and loop each rank's part
 * is a chunk of at most 4 FIFO steps of 512 KiB with Simple (2 MiB; a step is an eighth of
 * NCCL_BUFFSIZE, so half of it), one step of LL (64 KiB, half of it data) or LL128 (614,400 B,
 * 120/128 of it data); Simple moves a chunk in two slices of at least 32 KiB, LL and LL128 in
 * one. */
static uint64_t max_chunk_bytes(const ics_algo_ctx *c)
{
    if (c->proto == ICS_PROTO_LL)
        return 32 * 1024;
    if (c->proto == ICS_PROTO_LL128)
        return 576000;
    return ics_algo_simple_step(c) * 4;
}
#define SIMPLE_SLICES    2
#define SIMPLE_MIN_SLICE (32 * 1024)
/* Sends a chunk-level ring plan may hold: past it, simulated loops stand for several of NCCL's. */
#define RING_SEND_BUDGET (1 << 19)

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

/* How one channel's share moves, as NCCL cuts it: loops of steps, each step one part of a chunk
 * per rank, in slices. A simulated loop may stand for `group` of NCCL's loops (the schedule's
 * size is bounded); its slices then carry and pay for all of theirs. */
typedef struct {
    uint64_t share;   /* one NCCL channel's bytes */
    uint64_t chunk;   /* NCCL's chunk: a rank's part per loop */
    int nccl_loops;   /* ceil(share / (n x chunk)) */
    int loops, group; /* simulated loops, NCCL loops per simulated loop */
    int slices;       /* simulated slices per step */
} ring_cut;

/* NCCL's slices in a chunk of `bytes` under the context's protocol. */
static int nccl_slices(const ics_algo_ctx *c, uint64_t bytes)
{
    if (c->proto != ICS_PROTO_SIMPLE)
        return 1;
    uint64_t slice = MAX((bytes + SIMPLE_SLICES - 1) / SIMPLE_SLICES, SIMPLE_MIN_SLICE);
    return (int)MAX(1, (bytes + slice - 1) / slice);
}

static ring_cut ring_cut_of(const ics_algo_ctx *c, uint64_t share, int steps, int sim_channels)
{
    ring_cut k = {.share = share};
    uint64_t n = (uint64_t)c->n;
    k.chunk = MIN(max_chunk_bytes(c), MAX(1, (share + n - 1) / n));
    k.nccl_loops = (int)MAX(1, (share + n * k.chunk - 1) / (n * k.chunk));
    int per_loop_slices = nccl_slices(c, k.chunk);
    int64_t per_loop = (int64_t)steps * c->n * sim_channels * MAX_SLICES;
    int loops = (int)MAX(1, MIN((int64_t)k.nccl_loops, RING_SEND_BUDGET / MAX(1, per_loop)));
    k.group = (k.nccl_loops + loops - 1) / loops;
    k.loops = (k.nccl_loops + k.group - 1) / k.group;
    k.slices = MIN(MAX_SLICES, k.group * per_loop_slices);
    return k;
}

/* Per-channel bytes of a rank's part in simulated loop l (the last NCCL loop is short). */
static uint64_t loop_part(const ics_algo_ctx *c, const ring_cut *k, int l)
{
    uint64_t n = (uint64_t)c->n, before = (uint64_t)l * k->group * n * k->chunk;
    if (before >= k->share)
        return 0;
    uint64_t bytes = MIN((uint64_t)k->group * n * k->chunk, k->share - before);
    return (bytes + n - 1) / n;
}

/* What a CTA stores for a send of `bytes`: out of place, an all-gather's first step copies the
 * rank's own part to its output as it sends it (NCCL's directCopySend), one store more in n - 1
 * steps. The FIFO lets the CTA spread that work over the loop, so each step carries its share:
 * on 2 ranks twice the stores, on 8 an eighth more. */
static uint64_t oop_bytes(const ics_algo_ctx *c, uint64_t bytes)
{
    if (c->req.op != ICS_COLL_ALL_GATHER || c->n < 2)
        return bytes;
    return bytes + bytes / (uint64_t)(c->n - 1);
}

/* One channel of the all-reduce family: steps [s0, s1) of the 2(n-1) per loop; steps below
 * n-1 reduce. `merged` of NCCL's channels travel together (one node: the links see the same
 * bytes), `chan_bytes` being all of theirs. A send is one slice of every merged channel: its
 * CTAs copy it no faster than their ceiling (the send's floor) and then synchronize (its
 * tail); the slice it forwards must have arrived, been reduced, and NCCL's per-step latency
 * beyond that synchronization must have passed. */
static void ring_steps(const ics_algo_ctx *c, ics_sched *s, int ch, uint64_t chan_bytes, int merged,
                       int s0, int s1, int start)
{
    int n = c->n;
    int *order = g_new(int, n);
    ring_order(c, ch, order);
    int sim_channels = merged > 1 ? 1 : c->nch;
    merged *= c->ctas_per_channel; /* NCCL's channels in this one */
    ring_cut k = ring_cut_of(c, chan_bytes / (uint64_t)merged, s1 - s0, sim_channels);
    int S = k.slices;
    int *prev = g_new(int, n *S), *cur = g_new(int, n *S), *last = g_new(int, n);
    /* what the edge out of position p adds before its sends (the network plugin's latency),
     * so that every crossing of a slice's path pays it, the first and the last included */
    ics_time *net = g_new(ics_time, n);
    int *first = g_new(int, n); /* the first step's dependency at p */
    for (int p = 0; p < n; p++) {
        last[p] = -1;
        net[p] = ics_algo_net_msg(c, order[p], order[(p + 1) % n]);
        first[p] = net[p] > 0 ? ics_sched_delay(s, net[p], &start, 1) : start;
    }
    ics_time after = ics_algo_beyond_sync(c, c->step_lat_ps);
    for (int l = 0; l < k.loops; l++) {
        uint64_t part = loop_part(c, &k, l) * (uint64_t)merged;
        int nccl = MIN(k.group, k.nccl_loops - l * k.group) * nccl_slices(c, k.chunk);
        ics_time syncs = (nccl + S - 1) / S; /* NCCL's slices in each simulated one */
        for (int step = s0; step < s1; step++) {
            for (int p = 0; p < n; p++) {
                for (int j = 0; j < S; j++) {
                    uint64_t bytes = piece(part, S, j);
                    int deps[2] = {first[p], -1}, nd = 1;
                    if (step > s0) {
                        int got = prev[((p - 1 + n) % n) * S + j];
                        bool reduced = step - 1 < n - 1;
                        ics_time d =
                            after + net[p] + (reduced ? ics_algo_reduce_time(c, bytes) : 0);
                        deps[0] = ics_sched_delay(s, d, &got, 1);
                    }
                    /* a channel sends its slices in order through one FIFO, step after step */
                    if (last[p] >= 0)
                        deps[nd++] = last[p];
                    uint64_t wire =
                        ics_algo_net_gap(c, order[p], order[(p + 1) % n], ics_algo_wire(c, bytes),
                                         (uint64_t)syncs * (uint64_t)merged);
                    int id = ics_sched_send(s, c->ranks[order[p]], c->ranks[order[(p + 1) % n]],
                                            wire, ics_algo_flow(c, ch, (uint64_t)p), deps, nd);
                    ics_algo_charge(c, s, id, oop_bytes(c, bytes), (uint64_t)merged, syncs);
                    last[p] = cur[p * S + j] = id;
                }
            }
            int *tmp = prev;
            prev = cur;
            cur = tmp;
        }
    }
    g_free(order);
    g_free(prev);
    g_free(cur);
    g_free(last);
    g_free(net);
    g_free(first);
}

/* A chain's slices for one NCCL channel's `share`: NCCL moves a broadcast or reduce one FIFO step
 * at a time (BROADCAST_CHUNKSTEPS 1: 512 KiB with Simple, the step's data with LL and LL128);
 * at most MAX_CHAIN_SLICES simulated, each standing for *group of NCCL's. */
static int chain_slices(const ics_algo_ctx *c, uint64_t share, int *group)
{
    uint64_t step = c->proto == ICS_PROTO_SIMPLE ? ics_algo_simple_step(c) : max_chunk_bytes(c);
    uint64_t nccl = MAX(1, (share + step - 1) / step);
    *group = (int)((nccl + MAX_CHAIN_SLICES - 1) / MAX_CHAIN_SLICES);
    return (int)((nccl + (uint64_t)*group - 1) / (uint64_t)*group);
}

/* A chain over the ring from position `first`, n-1 hops; reduce: every hop reduces. */
static void chain_steps(const ics_algo_ctx *c, ics_sched *s, int ch, uint64_t chan_bytes,
                        int merged, int first, bool reduce, int start)
{
    int n = c->n;
    uint64_t ctas = (uint64_t)merged * (uint64_t)c->ctas_per_channel;
    ics_time after = ics_algo_beyond_sync(c, c->step_lat_ps);
    int *order = g_new(int, n);
    ring_order(c, ch, order);
    int group, S = chain_slices(c, chan_bytes / ((uint64_t)merged * c->ctas_per_channel), &group);
    int *prev = g_new(int, S), cur_prev = -1;
    for (int h = 0; h < n - 1; h++) {
        int a = order[(first + h) % n], b = order[(first + h + 1) % n];
        ics_time net = ics_algo_net_msg(c, a, b); /* before each send of a hop that crosses */
        int from = net > 0 && h == 0 ? ics_sched_delay(s, net, &start, 1) : start;
        for (int k = 0; k < S; k++) {
            uint64_t bytes = piece(chan_bytes, S, k);
            int deps[2] = {from, -1}, nd = 1;
            if (h > 0) {
                ics_time d = after + net + (reduce ? ics_algo_reduce_time(c, bytes) : 0);
                deps[0] = ics_sched_delay(s, d, &prev[k], 1);
            }
            if (k > 0) /* in order through the channel's FIFO */
                deps[nd++] = cur_prev;
            /* each CTA's `group` NCCL steps: messages of the network transport */
            uint64_t wire =
                ics_algo_net_gap(c, a, b, ics_algo_wire(c, bytes), (uint64_t)group * ctas);
            cur_prev = prev[k] = ics_sched_send(s, c->ranks[a], c->ranks[b], wire,
                                                ics_algo_flow(c, ch, (uint64_t)h), deps, nd);
            ics_algo_charge(c, s, cur_prev, bytes, ctas, group);
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
    bool merge = one_node(c);
    int nch = merge ? 1 : c->nch, m = merge ? c->nch : 1;
    for (int ch = 0; ch < nch; ch++) {
        uint64_t chan_bytes = piece(size, nch, ch);
        switch (c->req.op) {
        case ICS_COLL_ALL_REDUCE:
            ring_steps(c, s, ch, chan_bytes, m, 0, 2 * (n - 1), start);
            break;
        case ICS_COLL_REDUCE_SCATTER:
            ring_steps(c, s, ch, chan_bytes, m, 0, n - 1, start);
            break;
        case ICS_COLL_ALL_GATHER:
            /* steps n-1 .. 2n-3: forward without reducing */
            ring_steps(c, s, ch, chan_bytes, m, n - 1, 2 * (n - 1), start);
            break;
        case ICS_COLL_BROADCAST:
            chain_steps(c, s, ch, chan_bytes, m, position_of(c, ch, c->req.root), false, start);
            break;
        case ICS_COLL_REDUCE:
            chain_steps(c, s, ch, chan_bytes, m, (position_of(c, ch, c->req.root) + 1) % n, true,
                        start);
            break;
        default:
            g_assert_not_reached();
        }
    }
}

/* ---- the channels as streams ---------------------------------------------------------------- */

/* Channel ch's ring edges for `wire` bytes each (`msgs` of the network transport's messages
 * where an edge crosses nodes, each with its gap): the slowest edge's transfer time and latency,
 * and the sum over the edges of transfer + latency + per-step cost `per_edge`. */
static ics_time ring_edges(const ics_algo_ctx *c, const int *order, int edges, uint64_t wire,
                           uint64_t msgs, ics_time per_edge, ics_time *lat, ics_time *sum)
{
    ics_time worst = 0;
    *lat = *sum = 0;
    for (int p = 0; p < edges; p++) {
        int a = order[p], b = order[(p + 1) % c->n];
        ics_time l, t = ics_algo_hop_time(c, a, b, ics_algo_net_gap(c, a, b, wire, msgs), &l);
        *sum += t + l + per_edge + ics_algo_net_msg(c, a, b);
        if (t + l > worst + *lat) {
            worst = t;
            *lat = l;
        }
    }
    return worst;
}

/* Channel ch's ring order, rotated for a chain to start at position 0 (transfer full). */
static int *stream_order(const ics_algo_ctx *c, int ch, bool chain, int first)
{
    int n = c->n, *order = g_new(int, n), *rot = g_new(int, n);
    ring_order(c, ch, order);
    for (int p = 0; p < n; p++)
        rot[p] = order[((chain ? first : 0) + p) % n];
    g_free(order);
    return rot;
}

/* A stream's slices: per step S of `*slice` bytes, each standing for `*group` of NCCL's (a
 * ring: every loop's slices in a row, NCCL's cut; a chain: chain_slices). m: NCCL channels. */
static int stream_slices(const ics_algo_ctx *c, uint64_t chan_bytes, int m, int steps, bool chain,
                         uint64_t *slice, int *group)
{
    int S;
    *group = 1;
    if (chain) {
        S = chain_slices(c, chan_bytes / (uint64_t)m, group);
        *slice = chan_bytes / (uint64_t)S;
        return S;
    }
    ring_cut k = ring_cut_of(c, chan_bytes / (uint64_t)m, steps, c->nch);
    S = k.nccl_loops * nccl_slices(c, k.chunk);
    *slice = MAX(1, chan_bytes / (uint64_t)c->n / (uint64_t)S);
    return S;
}

/* What a stream costs beyond moving its legs at the links' rate: its floor (the CTAs' copy),
 * its tail (their syncs), and the fill after it (what the steady state leaves out). */
typedef struct {
    ics_time floor_ps, tail_ps, fill_ps;
} stream_cost;

/* A slice's critical path follows the ring: in the all-reduce family step s at position p waits
 * for step s-1 at p-1, so `steps` steps walk steps/n times round the ring, each edge costing a
 * slice's transfer and latency (or the CTAs' copy, if longer), the sync, the rest of NCCL's
 * per-step latency and the reduction; meanwhile the links need S slices per step on the slowest
 * edge. A chain pipelines its S slices over its n-1 hops. */
static stream_cost stream_cost_of(const ics_algo_ctx *c, const int *order, int edges, int m,
                                  int steps, bool reduce, bool chain, uint64_t slice, int S,
                                  int group)
{
    int n = c->n;
    uint64_t cta = c->cta_bytes_per_s * (uint64_t)m;
    ics_time t_cta = cta ? ics_time_serialize(oop_bytes(c, slice), cta) : 0;
    ics_time after = ics_algo_beyond_sync(c, c->step_lat_ps);
    /* an all-reduce reduces in its first n-1 steps only */
    ics_time red = reduce ? ics_algo_reduce_time(c, slice) : 0;
    if (reduce && !chain && steps > n - 1)
        red = red * (n - 1) / steps;
    ics_time lat, path,
        t = ring_edges(c, order, edges, ics_algo_wire(c, slice),
                       (uint64_t)m * (uint64_t)(chain ? group : 1), after + red, &lat, &path);
    /* saturating (core/time.h): a TiB on 0.001 Gb/s lanes is 10^6 slices of hours each */
    ics_time extra = ics_time_add(MAX(0, t_cta - t - lat), ics_time_mul(c->sync_ps, group));
    path = ics_time_add(path, ics_time_mul(extra, edges));
    ics_time t_slice = ics_time_add(t, extra);
    uint64_t nslices = (uint64_t)(chain ? 1 : steps) * (uint64_t)S;
    stream_cost k = {.floor_ps = ics_time_mul(t_cta, nslices),
                     .tail_ps = ics_time_mul(ics_time_mul(c->sync_ps, nslices), group)};
    /* what the stream takes alone, every slice at the slowest edge's rate */
    ics_time own =
        ics_time_add(MAX(ics_time_add(ics_time_mul(t, nslices), lat), k.floor_ps), k.tail_ps);
    ics_time fill = ics_time_mul(t_slice, (uint64_t)(S - 1)), total;
    if (chain) {
        total = ics_time_add(path, fill);
    } else {
        double round = (double)path * steps / n; /* truncated, as it always was */
        total =
            MAX(own, ics_time_add(round < (double)ICS_TIME_LIMIT ? (ics_time)round : ICS_TIME_LIMIT,
                                  fill));
    }
    k.fill_ps = total > own ? total - own : 0;
    return k;
}

/* Channel ch (or, merged, all of them) as one stream over its ring's edges (a chain's n-1 for
 * broadcast and reduce), each edge carrying what the chunk-level plan sends over it; the
 * stream's floor and tail, then a delay for its pipeline's fill (stream_cost_of). */
static void ring_stream(const ics_algo_ctx *c, ics_sched *s, int ch, uint64_t chan_bytes,
                        int merged, int steps, bool reduce, bool chain, int first, int start)
{
    int n = c->n, edges = chain ? n - 1 : n, m = merged * c->ctas_per_channel, group;
    int *order = stream_order(c, ch, chain, first);
    uint64_t slice, edge_bytes = chain ? chan_bytes /* parts moved per edge */
                                       : (uint64_t)((double)chan_bytes * steps / n + 0.5);
    int S = stream_slices(c, chan_bytes, m, steps, chain, &slice, &group);
    stream_cost k = stream_cost_of(c, order, edges, m, steps, reduce, chain, slice, S, group);
    ics_net_leg *legs = g_new(ics_net_leg, edges);
    /* NCCL's slices over each edge: the network transport's messages (ics_algo_net_gap); a
     * chain's S slices each stand for `group` of NCCL's steps */
    uint64_t msgs = (uint64_t)(chain ? group : steps) * (uint64_t)S * (uint64_t)m;
    for (int p = 0; p < edges; p++) {
        int a = order[p], b = order[(p + 1) % n];
        uint64_t wire = ics_algo_net_gap(c, a, b, ics_algo_wire(c, edge_bytes), msgs);
        legs[p] = (ics_net_leg){c->ranks[a], c->ranks[b], wire, ics_algo_flow(c, ch, (uint64_t)p)};
    }
    int id = ics_sched_stream(s, legs, edges, &start, 1);
    ics_sched_set_floor(s, id, k.floor_ps);
    ics_sched_set_tail(s, id, k.tail_ps);
    ics_sched_delay(s, k.fill_ps, &id, 1);
    g_free(legs);
    g_free(order);
}

static void ring_plan_streams(const ics_algo_ctx *c, ics_sched *s)
{
    int n = c->n, start = ics_sched_delay(s, c->base_lat_ps, NULL, 0);
    /* one node: the channels as one, as in ring_plan */
    bool merge = one_node(c);
    int nch = merge ? 1 : c->nch, m = merge ? c->nch : 1;
    for (int ch = 0; ch < nch; ch++) {
        uint64_t b = piece(c->req.size_bytes, nch, ch);
        switch (c->req.op) {
        case ICS_COLL_ALL_REDUCE:
            ring_stream(c, s, ch, b, m, 2 * (n - 1), true, false, 0, start);
            break;
        case ICS_COLL_REDUCE_SCATTER:
            ring_stream(c, s, ch, b, m, n - 1, true, false, 0, start);
            break;
        case ICS_COLL_ALL_GATHER:
            ring_stream(c, s, ch, b, m, n - 1, false, false, 0, start);
            break;
        case ICS_COLL_BROADCAST:
            ring_stream(c, s, ch, b, m, 0, false, true, position_of(c, ch, c->req.root), start);
            break;
        case ICS_COLL_REDUCE:
            ring_stream(c, s, ch, b, m, 0, true, true, (position_of(c, ch, c->req.root) + 1) % n,
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
