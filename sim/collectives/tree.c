/* Tree all-reduce as NCCL runs it: a double binary tree across nodes, a chain inside each node
 * (src/graph/trees.cc, connect.cc). Each channel reduces its share up its tree and broadcasts
 * the result down, chunk by chunk. NCCL duplicates its channels: channel 2p runs tree 0 and
 * 2p+1 tree 1 over the same intra-node chain, so each tree carries half the data. A node's
 * chain starts at a GPU of its NIC p (chain_start: local rank p where every GPU has a NIC of
 * its own), spreading the pairs over the NICs; its parent and first child
 * node attach to the chain's head, its second child to the next GPU (NCCL's balanced tree). On
 * one node the tree is the chain. Invariant: each chunk goes up every tree edge once and down
 * every edge once, so a node's network bytes are half the data per tree edge it has. */
#include "collectives/algo.h"

#include <limits.h>

/* The chunk-level plan's events: at most MAX_SLICES_PER_LEVEL simulated slices per level of
 * the tree, MAX_TREE_SLICES in all (each then stands for several of NCCL's chunks). */
#define MAX_SLICES_PER_LEVEL 16
#define MAX_TREE_SLICES      128

/* ---- NCCL's double binary tree ------------------------------------------------------------ */

/* The binary tree of m nodes rooted at 0: r's parent clears r's lowest set bit and sets the
 * next one up (or only clears it, past the end); its children are r -/+ half that bit (the
 * upper one shrunk until it exists). The root's only child is the largest power of two < m. */
static void btree(int m, int r, int *parent, int child[2])
{
    child[0] = child[1] = -1;
    if (r == 0) {
        int top = 1;
        while (top < m)
            top <<= 1;
        *parent = -1;
        child[1] = m > 1 ? top >> 1 : -1;
        return;
    }
    int bit = r & -r;
    int up = (r ^ bit) | (bit << 1);
    *parent = up < m ? up : r ^ bit;
    int low = bit >> 1;
    if (low == 0)
        return;
    child[0] = r - low;
    while (low > 0 && r + low >= m)
        low >>= 1;
    child[1] = low > 0 ? r + low : -1;
}

void ics_algo_dtree(int m, int tree, int k, int *parent, int child[2])
{
    if (tree == 0) {
        btree(m, k, parent, child);
        return;
    }
    /* tree 1: the same shape over renumbered nodes, mirrored for even m, shifted for odd */
    bool odd = m % 2 == 1;
    int role = odd ? (k - 1 + m) % m : m - 1 - k;
    btree(m, role, parent, child);
    int *v[3] = {parent, &child[0], &child[1]};
    for (int i = 0; i < 3; i++)
        if (*v[i] >= 0)
            *v[i] = odd ? (*v[i] + 1) % m : m - 1 - *v[i];
}

/* ---- which NIC a tree edge takes ---------------------------------------------------------- */

/* A tree edge's flow: its hash and the NIC slot it leaves a node by (topo.h, ics_route_flow).
 * NCCL gives each channel of its tree graph a NIC of its own (search.cc) and runs tree 0 and
 * tree 1 of that channel on communicator channels c and c + nChannels (connect.cc,
 * connectTrees), so a GPU with several NICs sends both trees through all of them. Here pair p
 * runs tree 0 on channel 2p and tree 1 on 2p + 1, its chain headed (with a NIC per GPU) by
 * local rank p mod ppn: the two trees of a pair take consecutive slots and the next round of
 * pairs through the same GPU the two after, which loads every NIC of a GPU alike (OCI
 * BM.GPU4.8: two 100 GbE ports a GPU, all 16 busy; an AWS p5: four EFA a GPU). With one NIC
 * per GPU every slot is that NIC. */
static uint64_t tree_flow(const ics_algo_ctx *c, int ch, uint64_t x)
{
    int round = ch / 2 / MAX(c->ppn, 1);
    return ics_route_flow((uint64_t)ch * 131071 + x, 2 * round + ch % 2);
}

/* ---- one channel's rank-level tree -------------------------------------------------------- */

#define MAX_KIDS 3 /* a chain successor and two child nodes */

typedef struct {
    int *parent; /* rank index, -1 at the root */
    int *kids;   /* MAX_KIDS per rank, -1 padded */
    int *order;  /* ranks, parents before children */
    int root;
} rank_tree;

/* Where node k's chain for channel pair p starts (a local index). NCCL's tree search gives
 * graph channel p the node's NIC p mod count (search.cc tries the nets from the channel's
 * index on) and starts its chain at a GPU local to that NIC, the chain going on from there in
 * local rank order (the next GPU, which takes the second child node, shares the NIC). With a NIC
 * per GPU that is local rank p; where GPUs share NICs (an AWS p4de: 2 GPUs per EFA, 4 EFA;
 * Polaris: 2 per NIC) the heads are the first GPU of each NIC, so the pairs' network traffic
 * spreads over every NIC instead of piling on the NICs of local ranks 0..pairs-1. */
static int chain_start(const ics_algo_ctx *c, const ics_algo_nodes *g, int k, int p)
{
    int m = ics_algo_nodes_size(g, k), start = p % m;
    int *heads = g_new(int, m);
    int count = ics_algo_node_heads(c->t, c->ranks, g, k, heads, NULL);
    for (int i = 0; count > 0 && i < m; i++) /* (a NIC per GPU: heads[p] is local rank p) */
        if (g->rank[g->start[k] + i] == heads[p % count])
            start = i;
    g_free(heads);
    return start;
}

/* Node k's chain: local rank (start + i) mod size at position i. */
static int chain_at(const ics_algo_nodes *g, int k, int start, int i)
{
    int m = ics_algo_nodes_size(g, k);
    return g->rank[g->start[k] + (start + i) % m];
}

static void add_kid(rank_tree *rt, int r, int kid)
{
    int *k = &rt->kids[r * MAX_KIDS];
    int i = 0;
    while (k[i] >= 0)
        i++;
    g_assert(i < MAX_KIDS);
    k[i] = kid;
    rt->parent[kid] = r;
}

static void rank_tree_build(const ics_algo_ctx *c, const ics_algo_nodes *g, int pair, int tree,
                            rank_tree *rt)
{
    int n = c->n, m = g->nnodes;
    rt->parent = g_new(int, n);
    rt->kids = g_new(int, n *MAX_KIDS);
    rt->order = g_new(int, n);
    rt->root = -1;
    for (int i = 0; i < n * MAX_KIDS; i++)
        rt->kids[i] = -1;
    for (int r = 0; r < n; r++)
        rt->parent[r] = -1;
    int *start = g_new(int, m);
    for (int k = 0; k < m; k++)
        start[k] = chain_start(c, g, k, pair);
    for (int k = 0; k < m; k++) {
        for (int i = 1; i < ics_algo_nodes_size(g, k); i++)
            add_kid(rt, chain_at(g, k, start[k], i - 1), chain_at(g, k, start[k], i));
        int up, child[2];
        ics_algo_dtree(m, tree, k, &up, child);
        if (up < 0) {
            rt->root = chain_at(g, k, start[k], 0);
            continue;
        }
        int upc[2], upup;
        ics_algo_dtree(m, tree, up, &upup, upc);
        int slot = upc[0] == k ? 0 : 1;
        int at = MIN(slot, ics_algo_nodes_size(g, up) - 1);
        add_kid(rt, chain_at(g, up, start[up], at), chain_at(g, k, start[k], 0));
    }
    g_free(start);
    /* breadth first from the root: parents before children */
    int head = 0, tail = 0;
    rt->order[tail++] = rt->root;
    while (head < tail) {
        int r = rt->order[head++];
        for (int i = 0; i < MAX_KIDS && rt->kids[r * MAX_KIDS + i] >= 0; i++)
            rt->order[tail++] = rt->kids[r * MAX_KIDS + i];
    }
    g_assert(tail == n);
}

static void rank_tree_clear(rank_tree *rt)
{
    g_free(rt->parent);
    g_free(rt->kids);
    g_free(rt->order);
}

/* ---- the schedule ------------------------------------------------------------------------- */

/* NCCL's channels of the call: the context's times the CTAs each stands for (channels.c). */
static int nccl_channels(const ics_algo_ctx *c)
{
    return c->nch * MAX(1, c->ctas_per_channel);
}

/* The tree channels the plan runs: NCCL's, even and split between the two trees, but at most
 * two per context channel (one per tree): 2 x 8 on a DGX pair's 16, all 8 of Snellius' 8. */
static int tree_channels(const ics_algo_ctx *c)
{
    return MAX(2, MIN(2 * c->nch, nccl_channels(c) & ~1));
}

/* What the CTAs of one tree channel copy per second: NCCL's channels shared out over the
 * plan's, one each or more (never more CTAs in all than NCCL runs). */
static uint64_t tree_ctas(const ics_algo_ctx *c)
{
    return (uint64_t)MAX(1, nccl_channels(c) / tree_channels(c));
}

static uint64_t tree_cta(const ics_algo_ctx *c)
{
    return c->cta_bytes_per_s * tree_ctas(c);
}

/* A send of one channel's chunk, `msgs` of NCCL's chunks of each of its CTAs: copied no faster
 * than the channel's CTAs copy, then their sync (channels.c); across nodes each of those chunks
 * is a message of the network transport (its gap, ics_algo_net_gap). */
static int tree_send(const ics_algo_ctx *c, ics_sched *s, int a, int b, uint64_t bytes,
                     uint64_t msgs, uint64_t hash, const int *deps, int nd)
{
    double f = ics_algo_same_node(c, a, b) ? c->intra_wire_factor : c->net_wire_factor;
    uint64_t wire = ics_algo_net_gap(c, a, b, ics_algo_wire_by(f, bytes), msgs * tree_ctas(c));
    int id = ics_sched_send(s, c->ranks[a], c->ranks[b], wire, hash, deps, nd);
    ics_algo_charge(c, s, id, bytes, tree_ctas(c), 1);
    return id;
}

/* NCCL's per-hop latency beyond the sender's sync (the send's tail). */
static ics_time hop_lat(const ics_algo_ctx *c, int a, int b)
{
    return ics_algo_beyond_sync(c,
                                ics_algo_same_node(c, a, b) ? c->step_lat_ps : c->net_step_lat_ps);
}

/* NCCL's tree chunk (enqueue.cc, calcCollChunking; 2.20 to 2.29): one step of the protocol's
 * buffer (NCCL_STEPS = 8 steps a buffer). Simple: 512 KiB (an eighth of its 4 MiB buffer,
 * which NCCL_BUFFSIZE sets; here at least 4 KiB); LL: 32 KiB of data (a 64 KiB step, half of
 * it flags); LL128: 576,000 B (a 614,400 B step less the flag word of each 128-byte line), the
 * one NCCL halves for small calls: while a channel has fewer than s x 64 / ppn chunks and the
 * chunk is over 128 KiB, then while fewer than s x 16 / ppn and over 32 KiB, with
 * s = 1 + log2(nNodes) + 0.1 ppn and the integer quotient call bytes / (channels x chunk), as
 * NCCL computes it: 576,000, 288,000, 144,000, 72,000, then 36,000, 18,000. Since 2.22 the
 * chunk is then rounded down to the protocol's grain (ncclProtoGrainSize: Simple 512 B, LL 16,
 * LL128 1,920: a warp's lines of data), so LL128's 36,000 is 34,560. Up to 2.19 NCCL halved the
 * Simple chunk too, down to 32 KiB, until a channel had 8, 4, then 1 chunks per level of the
 * tree; 2.20 dropped that rule, so a Simple tree moves whole 512 KiB steps: a 1 MiB channel is
 * two chunks, and its pipeline fills with them (this plan used the 2.19 rule until 2026-12: 16
 * chunks of 64 KiB there). */
uint64_t ics_algo_tree_chunk(const ics_algo_ctx *c, int nnodes)
{
    const uint64_t ll = 32 * 1024, ll128 = 614400 / 16 * 15, ll128_grain = 32 * 8 / 16 * 15 * 8;
    if (c->proto == ICS_PROTO_SIMPLE)
        return ics_algo_simple_step(c) / 512 * 512;
    if (c->proto == ICS_PROTO_LL)
        return ll;
    int levels = 0;
    for (int m = MAX(nnodes, 1); m > 1; m >>= 1)
        levels++;
    double ppn = (double)c->n / MAX(nnodes, 1), steps = 1 + levels + 0.1 * ppn;
    uint64_t chunk = ll128, nch = (uint64_t)MAX(1, nccl_channels(c));
    while ((double)(c->req.size_bytes / (nch * chunk)) < steps * 64 / ppn && chunk > 131072)
        chunk /= 2;
    while ((double)(c->req.size_bytes / (nch * chunk)) < steps * 16 / ppn && chunk > 32768)
        chunk /= 2;
    return chunk / ll128_grain * ll128_grain;
}

/* NCCL's chunks in a CTA's `bytes` (at least 1). */
static int tree_nccl_chunks(uint64_t bytes, uint64_t chunk)
{
    uint64_t k = (bytes + chunk - 1) / chunk;
    return (int)MAX(1, MIN(k, (uint64_t)INT_MAX));
}

/* The chunk-level plan's slices for `nccl` chunks a CTA on a tree `depth` levels deep. */
static int tree_capped(int nccl, int depth)
{
    int cap = MIN(MAX_TREE_SLICES, MAX_SLICES_PER_LEVEL * MAX(depth, 1));
    return MAX(1, MIN(nccl, cap));
}

/* One channel: up (reduce) then down (broadcast) its rank tree, slice by slice; each of the S
 * simulated slices stands for its share of NCCL's `nccl` chunks. */
static void tree_channel(const ics_algo_ctx *c, ics_sched *s, const rank_tree *rt, int ch,
                         uint64_t bytes, int S, int nccl, int start)
{
    int n = c->n;
    uint64_t msgs = (uint64_t)(nccl + S - 1) / (uint64_t)S;
    int *up = g_new(int, n *S);               /* each rank's send to its parent */
    int *have = g_new(int, n *S);             /* when each rank holds the reduced slice */
    int *last_down = g_new(int, n *MAX_KIDS); /* FIFO per (rank, kid) */
    for (int i = 0; i < n * MAX_KIDS; i++)
        last_down[i] = -1;
    for (int k = 0; k < S; k++) {
        uint64_t sb = ics_algo_piece(bytes, S, k);
        for (int o = n - 1; o >= 0; o--) { /* children before parents */
            int r = rt->order[o], deps[MAX_KIDS + 1], nd = 0;
            const int *kids = &rt->kids[r * MAX_KIDS];
            while (nd < MAX_KIDS && kids[nd] >= 0) {
                deps[nd] = up[kids[nd] * S + k];
                nd++;
            }
            int ready = start;
            if (nd > 0) {
                ics_time d = (ics_time)nd * ics_algo_reduce_time(c, sb) +
                             (rt->parent[r] >= 0 ? hop_lat(c, r, rt->parent[r]) : 0);
                ready = ics_sched_delay(s, d, deps, nd);
            } else if (k == 0 && rt->parent[r] >= 0 && !ics_algo_same_node(c, r, rt->parent[r])) {
                /* a leaf whose hop crosses the network pays that hop's latency too, as NCCL's
                 * model counts every hop (2 log2(nNodes) network hops); its later slices follow
                 * this one through its FIFO */
                ready = ics_sched_delay(s, hop_lat(c, r, rt->parent[r]), &start, 1);
            }
            if (rt->parent[r] < 0) {
                have[r * S + k] = ready;
                continue;
            }
            int sd[2] = {ready, k > 0 ? up[r * S + k - 1] : -1};
            up[r * S + k] = tree_send(c, s, r, rt->parent[r], sb, msgs,
                                      tree_flow(c, ch, 2 * (uint64_t)r), sd, k > 0 ? 2 : 1);
        }
        for (int o = 0; o < n; o++) { /* parents before children */
            int r = rt->order[o];
            for (int i = 0; i < MAX_KIDS && rt->kids[r * MAX_KIDS + i] >= 0; i++) {
                int kid = rt->kids[r * MAX_KIDS + i];
                int d = ics_sched_delay(s, hop_lat(c, r, kid), &have[r * S + k], 1);
                int sd[2] = {d, last_down[r * MAX_KIDS + i]};
                int id = tree_send(c, s, r, kid, sb, msgs, tree_flow(c, ch, 2 * (uint64_t)kid + 1),
                                   sd, sd[1] >= 0 ? 2 : 1);
                last_down[r * MAX_KIDS + i] = have[kid * S + k] = id;
            }
        }
    }
    g_free(up);
    g_free(have);
    g_free(last_down);
}

static bool tree_supports(const ics_algo_ctx *c)
{
    return c->req.op == ICS_COLL_ALL_REDUCE && c->n >= 2;
}

/* ---- the channels as streams ---------------------------------------------------------------- */

/* A chunk's hop in a stream's fill: its transfer and latency, or its CTAs' copy if longer, and
 * their sync. */
static ics_time hop_cost(const ics_algo_ctx *c, uint64_t chunk, ics_time transfer)
{
    ics_time copy = tree_cta(c) ? ics_time_serialize(chunk, tree_cta(c)) : 0;
    return ics_time_add(MAX(transfer, copy), c->sync_ps);
}

/* A channel's tree as one stream: every edge carries the channel's bytes up and the same bytes
 * down, all at one rate (the pipeline's steady state). What the stream leaves out is the fill
 * and drain: the last chunk still has to climb from the deepest leaf and come back down, each
 * hop costing its transfer, NCCL's per-hop latency and the reductions of the chunk-level plan
 * (tree_channel). That critical path, less the one chunk the stream itself accounts for, is
 * the delay after it. */
static void tree_stream(const ics_algo_ctx *c, ics_sched *s, const rank_tree *rt, int ch,
                        uint64_t bytes, int S, int nccl, int start)
{
    int n = c->n;
    uint64_t sb = (bytes + (uint64_t)S - 1) / (uint64_t)S;
    ics_time *up = g_new0(ics_time, n), *down = g_new0(ics_time, n), slowest = 0;
    GArray *legs = g_array_new(FALSE, FALSE, sizeof(ics_net_leg));
    for (int o = n - 1; o >= 0; o--) { /* children before parents: up[r] = slice reduced at r */
        int r = rt->order[o], nk = 0;
        while (nk < MAX_KIDS && rt->kids[r * MAX_KIDS + nk] >= 0)
            nk++;
        /* sums saturate (core/time.h): hops of hours each on the slowest lanes */
        up[r] = ics_time_add(up[r], ics_time_mul(ics_algo_reduce_time(c, sb), (uint64_t)nk));
        int p = rt->parent[r];
        if (p < 0)
            continue;
        double f = ics_algo_same_node(c, r, p) ? c->intra_wire_factor : c->net_wire_factor;
        /* every NCCL chunk of every CTA is a message of the network transport each way */
        uint64_t wire =
            ics_algo_net_gap(c, r, p, ics_algo_wire_by(f, bytes), (uint64_t)nccl * tree_ctas(c));
        ics_time lat, t = ics_algo_hop_time(c, r, p, ics_algo_wire_by(f, sb), &lat);
        slowest = MAX(slowest, ics_time_add(t, lat));
        bool pays = nk > 0 || !ics_algo_same_node(c, r, p); /* as the chunk plan charges it */
        ics_time at = ics_time_add(ics_time_add(up[r], pays ? hop_lat(c, r, p) : 0),
                                   hop_cost(c, sb, ics_time_add(t, lat)));
        up[p] = MAX(up[p], at);
        ics_net_leg l[2] = {
            {c->ranks[r], c->ranks[p], wire, tree_flow(c, ch, 2 * (uint64_t)r)},
            {c->ranks[p], c->ranks[r], wire, tree_flow(c, ch, 2 * (uint64_t)r + 1)}};
        g_array_append_vals(legs, l, 2);
    }
    ics_time fill = up[rt->root];
    for (int o = 1; o < n; o++) { /* parents before children */
        int r = rt->order[o], p = rt->parent[r];
        double f = ics_algo_same_node(c, r, p) ? c->intra_wire_factor : c->net_wire_factor;
        ics_time lat, t = ics_algo_hop_time(c, p, r, ics_algo_wire_by(f, sb), &lat);
        down[r] = ics_time_add(ics_time_add(down[p], hop_lat(c, p, r)),
                               hop_cost(c, sb, ics_time_add(t, lat)));
        fill = MAX(fill, ics_time_add(up[rt->root], down[r]));
    }
    if (legs->len > 0) {
        /* the CTAs copy the channel's bytes each way no faster than their ceiling, and sync
         * after every chunk */
        ics_time floor_ps = tree_cta(c) ? ics_time_serialize(bytes, tree_cta(c)) : 0;
        ics_time tail_ps = ics_time_mul(c->sync_ps, (uint64_t)S);
        int id =
            ics_sched_stream(s, (const ics_net_leg *)(void *)legs->data, (int)legs->len, &start, 1);
        ics_sched_set_floor(s, id, floor_ps);
        ics_sched_set_tail(s, id, tail_ps);
        slowest = ics_time_add(MAX(slowest, floor_ps / S), c->sync_ps);
        ics_sched_delay(s, fill > slowest ? fill - slowest : 0, &id, 1);
    }
    g_array_free(legs, TRUE);
    g_free(up);
    g_free(down);
}

/* ---- the plans ---------------------------------------------------------------------------- */

typedef void (*channel_fn)(const ics_algo_ctx *c, ics_sched *s, const rank_tree *rt, int ch,
                           uint64_t bytes, int S, int nccl, int start);

static void plan_with(const ics_algo_ctx *c, ics_sched *s, channel_fn channel, bool capped)
{
    ics_algo_nodes g;
    ics_algo_nodes_init(c->t, c->ranks, c->n, &g);
    int longest = 0;
    for (int k = 0; k < g.nnodes; k++)
        longest = MAX(longest, ics_algo_nodes_size(&g, k));
    int depth = longest - 1, m = g.nnodes;
    while (m >>= 1)
        depth++;
    int start = ics_sched_delay(s, c->base_lat_ps, NULL, 0);
    int nch = tree_channels(c); /* NCCL's duplicated channels: one of each pair per tree */
    uint64_t chunk = ics_algo_tree_chunk(c, g.nnodes);
    for (int ch = 0; ch < nch; ch++) {
        rank_tree rt;
        rank_tree_build(c, &g, ch / 2, ch % 2, &rt);
        uint64_t bytes = ics_algo_piece(c->req.size_bytes, nch, ch);
        /* NCCL chunks each CTA's share of the channel apart; a simulated slice carries one
         * chunk of each of the channel's CTAs, which move side by side */
        int nccl = tree_nccl_chunks(bytes / tree_ctas(c), chunk);
        channel(c, s, &rt, ch, bytes, capped ? tree_capped(nccl, depth) : nccl, nccl, start);
        rank_tree_clear(&rt);
    }
    ics_algo_nodes_clear(&g);
}

static void tree_plan(const ics_algo_ctx *c, ics_sched *s)
{
    plan_with(c, s, tree_channel, true);
}

/* Streams need no cap on the chunk count: the fill is priced with NCCL's own chunk. */
static void tree_plan_streams(const ics_algo_ctx *c, ics_sched *s)
{
    plan_with(c, s, tree_stream, false);
}

const ics_algo_ops ics_algo_tree = {
    .algo = ICS_ALGO_TREE,
    .supports = tree_supports,
    .plan = tree_plan,
    .plan_streams = tree_plan_streams,
};
