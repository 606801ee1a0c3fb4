/* NVLS-Tree all-reduce (NVSwitch gen3+, more than one node): inside each node the NVSwitches
 * reduce (NVLS); across nodes NCCL's double binary tree among the heads moves the node sums up
 * and the result down; each head hands the result to its node. The data is split over the
 * heads (the GPUs with a NIC of their own, NCCL's NVLS heads) and each head's part in halves,
 * one per tree. Inside a node, as NCCL's NVLS: every GPU pushes its part into the switches,
 * which reduce it into the head (a reduce-to step), and the head's result goes back out as one
 * in-switch multicast to the others, so a GPU moves about D (1 + 1/heads) each way. */
#include "collectives/algo.h"
#include "collectives/tuner.h"

#define MAX_SLICES_PER_LEVEL 16
#define MAX_SW               64

/* The NVLS switches every rank of node k is wired to, and rank 0's link count to each. */
static int node_switches(const ics_algo_ctx *c, const ics_algo_nodes *g, int k, int *sw, int *links)
{
    int n = 0, deg, first = c->ranks[g->rank[g->start[k]]];
    const int *out = ics_topo_out(c->t, first, &deg);
    for (int i = 0; i < deg && n < MAX_SW; i++) {
        const ics_topo_chan *ch = ics_topo_chan_get(c->t, out[i]);
        const ics_topo_dev *d = ics_topo_dev_get(c->t, ch->dst);
        if (d->kind != ICS_DEV_NVSWITCH || !d->switch_type || !d->switch_type->sharp)
            continue;
        for (int j = g->start[k] + 1; j < g->start[k + 1]; j++)
            if (ics_topo_chan_between(c->t, c->ranks[g->rank[j]], ch->dst) < 0)
                return 0;
        sw[n] = ch->dst;
        links[n++] = ch->width;
    }
    return n;
}

/* Heads per node (the same count everywhere), or 0 if NVLS-Tree cannot run. */
static int check(const ics_algo_ctx *c, const ics_algo_nodes *g, int *heads)
{
    int H = -1, sw[MAX_SW], links[MAX_SW];
    if (c->req.op != ICS_COLL_ALL_REDUCE || g->nnodes < 2)
        return 0;
    int *tmp = g_new(int, c->n);
    for (int k = 0; k < g->nnodes; k++) {
        int h = ics_algo_node_heads(c->t, c->ranks, g, k, heads ? heads + k * c->n : tmp, NULL);
        if (ics_algo_nodes_size(g, k) < 2 || node_switches(c, g, k, sw, links) == 0 || h == 0 ||
            (H >= 0 && h != H)) {
            H = 0;
            break;
        }
        H = h;
    }
    g_free(tmp);
    return MAX(H, 0);
}

/* NCCL's NVLS-Tree chunk (enqueue.cc calcCollChunking, 2.21-2.29): NCCL_NVLS_CHUNKSIZE (128
 * KiB), at most NCCL_NVLSTREE_MAX_CHUNKSIZE (by default 64 KiB from 4 nodes, else no bound),
 * then cut for calls that give its concurrent operations (NVLS channels x heads) few chunks: to
 * 256 KiB below 32 chunks each, 128 KiB below 16, 64 KiB below 4, 32 KiB below 1 (the first two
 * only bite on a chunk set above 128 KiB); rounded down to Simple's 512 B grain. NCCL runs
 * NVLS-Tree on its NVLS channels (c->nvls_channels), not on the ring's: 2.20 had no
 * NCCL_NVLS_CHUNKSIZE and started from 512 KiB. */
uint64_t ics_algo_nvls_tree_chunk(const ics_algo_ctx *c, int nnodes, int heads)
{
    uint64_t chunk = c->nvls_chunk ? c->nvls_chunk : 128 * 1024, size = c->req.size_bytes;
    uint64_t most = nnodes >= 4 ? 64 * 1024 : chunk; /* NCCL_NVLSTREE_MAX_CHUNKSIZE's -2 */
    if (c->nvlstree_max_chunk)
        most = c->nvlstree_max_chunk;
    chunk = MIN(chunk, most);
    uint64_t ops = (uint64_t)c->nvls_channels * (uint64_t)heads;
    static const uint64_t cuts[][2] = {{32, 262144}, {16, 131072}, {4, 65536}, {1, 32768}};
    for (size_t i = 0; i < G_N_ELEMENTS(cuts); i++)
        if (size < cuts[i][0] * ops * chunk && chunk > cuts[i][1])
            chunk = cuts[i][1];
    return MAX(chunk / 512 * 512, 512);
}

/* Simulated slices of a lane (one head's part on one tree) of `bytes`: NCCL's chunks of one of
 * the NVLS channels the lane stands for (half of them, every channel running every head, the
 * channels split over the two trees), at most MAX_SLICES_PER_LEVEL per level of the tree. */
static int lane_slices(const ics_algo_ctx *c, uint64_t bytes, uint64_t chunk, int depth)
{
    uint64_t k = bytes / (uint64_t)MAX(1, c->nvls_channels / 2) / chunk;
    return (int)MAX(1, MIN((uint64_t)(MAX_SLICES_PER_LEVEL * depth), k));
}

static bool nvls_tree_supports(const ics_algo_ctx *c)
{
    ics_algo_nodes g;
    ics_algo_nodes_init(c->t, c->ranks, c->n, &g);
    bool ok = check(c, &g, NULL) > 0;
    ics_algo_nodes_clear(&g);
    return ok;
}

/* Node k's share of b bytes per NVLS switch, by link count: the switches, their count, and
 * each one's share in bytes[]. */
static int switch_shares(const ics_algo_ctx *c, const ics_algo_nodes *g, int k, uint64_t b, int *sw,
                         uint64_t *bytes)
{
    int links[MAX_SW], nsw = node_switches(c, g, k, sw, links), total = 0;
    for (int j = 0; j < nsw; j++)
        total += links[j];
    uint64_t left = b;
    for (int j = 0; j < nsw; j++) {
        bytes[j] = j + 1 < nsw ? b * (uint64_t)links[j] / (uint64_t)total : left;
        left -= bytes[j];
    }
    return nsw;
}

/* Node k's in-switch reduction of b bytes into its head (NCCL's multimem.ld_reduce: every GPU
 * pushes its part into the switches, the head reads the sum once), one REDUCE per switch by
 * its share of the links; returns a step that ends with the last. */
static int node_reduce(const ics_algo_ctx *c, ics_sched *s, const ics_algo_nodes *g, int k,
                       int head, uint64_t b, const int *deps, int ndeps)
{
    int sw[MAX_SW], ids[MAX_SW], m = ics_algo_nodes_size(g, k), *devs = g_new(int, m);
    uint64_t share[MAX_SW];
    int nsw = switch_shares(c, g, k, b, sw, share);
    for (int i = 0; i < m; i++)
        devs[i] = c->ranks[g->rank[g->start[k] + i]];
    int to = c->ranks[head];
    for (int j = 0; j < nsw; j++)
        ids[j] = ics_sched_reduce_to(s, devs, m, sw[j], &to, 1,
                                     ics_algo_wire_by(c->nvls_wire_factor, share[j]), deps, ndeps);
    g_free(devs);
    return ics_sched_delay(s, 0, ids, nsw);
}

/* The head hands node k the result: one in-switch multicast (multimem.st) per switch by its
 * share, to every other GPU of the node; returns a step that ends with the last. */
static int node_multicast(const ics_algo_ctx *c, ics_sched *s, const ics_algo_nodes *g, int k,
                          int head, uint64_t b, const int *deps, int ndeps)
{
    int sw[MAX_SW], ids[MAX_SW], m = ics_algo_nodes_size(g, k), *dsts = g_new(int, m), nd = 0;
    uint64_t share[MAX_SW];
    int nsw = switch_shares(c, g, k, b, sw, share);
    for (int i = g->start[k]; i < g->start[k + 1]; i++)
        if (g->rank[i] != head)
            dsts[nd++] = c->ranks[g->rank[i]];
    for (int j = 0; j < nsw; j++)
        ids[j] = ics_sched_multicast(s, c->ranks[head], sw[j], dsts, nd,
                                     ics_algo_wire_by(c->nvls_wire_factor, share[j]), deps, ndeps);
    g_free(dsts);
    return ics_sched_delay(s, 0, ids, nsw);
}

/* Nodes of a tree, parents before children. */
static void tree_order(int m, int tree, int *order)
{
    int head = 0, tail = 0;
    for (int k = 0; k < m; k++) {
        int up, child[2];
        ics_algo_dtree(m, tree, k, &up, child);
        if (up < 0)
            order[tail++] = k;
    }
    while (head < tail) {
        int up, child[2];
        ics_algo_dtree(m, tree, order[head++], &up, child);
        for (int i = 0; i < 2; i++)
            if (child[i] >= 0)
                order[tail++] = child[i];
    }
    g_assert(tail == m);
}

typedef struct {
    int *red;   /* per node: its last in-switch reduction (in order) */
    int *up;    /* per node: its last send to its parent */
    int *down;  /* per node: its parent's last send to it */
    int *local; /* per node: its head's last multicast */
} lane_fifo;

/* One slice of one head's half on one tree. A lane (one head's half on one tree) is one of
 * NCCL's NVLS channels, one CTA: each send across the network is charged that CTA
 * (ics_algo_charge), its sync part of NCCL's network hop, the rest of the hop after it. */
static void nvls_tree_slice(const ics_algo_ctx *c, ics_sched *s, const ics_algo_nodes *g,
                            const int *heads, int h, int tree, const int *order, uint64_t b,
                            int start, lane_fifo *f)
{
    int m = g->nnodes, *have = g_new(int, m), *sent = g_new(int, m);
    for (int k = 0; k < m; k++) {
        int deps[2] = {start, f->red[k]};
        f->red[k] = node_reduce(c, s, g, k, heads[k * c->n + h], b, deps, f->red[k] >= 0 ? 2 : 1);
    }
    for (int o = m - 1; o >= 0; o--) { /* up: children first */
        int k = order[o], up, child[2], deps[3] = {f->red[k]}, nd = 1;
        ics_algo_dtree(m, tree, k, &up, child);
        for (int i = 0; i < 2; i++)
            if (child[i] >= 0)
                deps[nd++] = sent[child[i]];
        ics_time d = (nd - 1) * ics_algo_reduce_time(c, b) +
                     (up >= 0 ? ics_algo_beyond_sync(c, c->net_step_lat_ps) : 0);
        int ready = ics_sched_delay(s, d, deps, nd);
        if (up < 0) {
            have[k] = ready;
            continue;
        }
        int sd[2] = {ready, f->up[k]};
        sent[k] = f->up[k] =
            ics_sched_send(s, c->ranks[heads[k * c->n + h]], c->ranks[heads[up * c->n + h]],
                           ics_algo_wire_by(c->net_wire_factor, b),
                           (uint64_t)h * 4 + (uint64_t)tree * 2, sd, f->up[k] >= 0 ? 2 : 1);
        ics_algo_charge(c, s, sent[k], b, 1, 1);
    }
    for (int o = 0; o < m; o++) { /* down: parents first */
        int k = order[o], up, child[2];
        ics_algo_dtree(m, tree, k, &up, child);
        for (int i = 0; i < 2; i++) {
            int kid = child[i];
            if (kid < 0)
                continue;
            int sd[2] = {
                ics_sched_delay(s, ics_algo_beyond_sync(c, c->net_step_lat_ps), &have[k], 1),
                f->down[kid]};
            have[kid] = f->down[kid] = ics_sched_send(
                s, c->ranks[heads[k * c->n + h]], c->ranks[heads[kid * c->n + h]],
                ics_algo_wire_by(c->net_wire_factor, b), (uint64_t)h * 4 + (uint64_t)tree * 2 + 1,
                sd, f->down[kid] >= 0 ? 2 : 1);
            ics_algo_charge(c, s, have[kid], b, 1, 1);
        }
        int sd[2] = {have[k], f->local[k]}; /* the head's multicast, in order */
        f->local[k] =
            node_multicast(c, s, g, k, heads[k * c->n + h], b, sd, f->local[k] >= 0 ? 2 : 1);
    }
    g_free(have);
    g_free(sent);
}

static void nvls_tree_plan(const ics_algo_ctx *c, ics_sched *s)
{
    ics_algo_nodes g;
    ics_algo_nodes_init(c->t, c->ranks, c->n, &g);
    int m = g.nnodes, *heads = g_new(int, m * c->n), *order = g_new(int, m);
    int H = check(c, &g, heads), depth = 1;
    g_assert(H > 0);
    for (int x = m; x > 1; x >>= 1)
        depth++;
    uint64_t chunk = ics_algo_nvls_tree_chunk(c, m, H);
    /* NVLS's own latency once (as nvls.c), then NCCL's per network hop */
    int start = ics_sched_delay(s, c->base_lat_ps + c->step_lat_ps, NULL, 0);
    lane_fifo f = {g_new(int, m), g_new(int, m), g_new(int, m), g_new(int, c->n)};
    for (int h = 0; h < H; h++)
        for (int tree = 0; tree < 2; tree++) {
            uint64_t bytes = ics_algo_piece(ics_algo_piece(c->req.size_bytes, H, h), 2, tree);
            int S = lane_slices(c, bytes, chunk, depth);
            tree_order(m, tree, order);
            for (int k = 0; k < m; k++)
                f.red[k] = f.up[k] = f.down[k] = -1;
            for (int r = 0; r < c->n; r++)
                f.local[r] = -1;
            for (int sl = 0; sl < S; sl++)
                nvls_tree_slice(c, s, &g, heads, h, tree, order, ics_algo_piece(bytes, S, sl),
                                start, &f);
        }
    g_free(f.red);
    g_free(f.up);
    g_free(f.down);
    g_free(f.local);
    g_free(heads);
    g_free(order);
    ics_algo_nodes_clear(&g);
}

/* ---- as streams --------------------------------------------------------------------------- */

/* One head's half on one tree as one stream of the tree's edges (up and down between the
 * heads), beside the in-switch reductions into the head and its multicasts, which
 * nvls_tree_plan_streams starts for both halves at once. The delay after them is the pipeline's
 * fill that the steady state leaves out: a slice climbing L levels and coming back down, each hop a
 * transfer, its latency and NCCL's per-hop cost, a reduction per level. */
static void nvls_tree_lane(const ics_algo_ctx *c, ics_sched *s, const ics_algo_nodes *g,
                           const int *heads, int h, int tree, uint64_t b, int S, int start,
                           GArray *ends)
{
    int m = g->nnodes, levels = 0;
    GArray *legs = g_array_new(FALSE, FALSE, sizeof(ics_net_leg));
    for (int k = 0; k < m; k++) {
        int up, child[2], head = heads[k * c->n + h];
        ics_algo_dtree(m, tree, k, &up, child);
        int depth = 0;
        for (int x = k, px, cx[2]; ics_algo_dtree(m, tree, x, &px, cx), px >= 0; x = px)
            depth++;
        levels = MAX(levels, depth);
        uint64_t wire = ics_algo_wire_by(c->net_wire_factor, b);
        if (up >= 0) {
            int ph = c->ranks[heads[up * c->n + h]];
            ics_net_leg l[2] = {
                {c->ranks[head], ph, wire, (uint64_t)h * 4 + (uint64_t)tree * 2},
                {ph, c->ranks[head], wire, (uint64_t)h * 4 + (uint64_t)tree * 2 + 1}};
            g_array_append_vals(legs, l, 2);
        }
    }
    int id =
        ics_sched_stream(s, (const ics_net_leg *)(void *)legs->data, (int)legs->len, &start, 1);
    ics_time copy = c->cta_bytes_per_s ? ics_time_serialize(b, c->cta_bytes_per_s) : 0;
    ics_sched_set_floor(s, id, copy);
    ics_sched_set_tail(s, id, (ics_time)S * c->sync_ps);
    g_array_append_val(ends, id);
    g_array_free(legs, TRUE);
    /* the fill, priced on the first edge of the tree (the heads sit on one rail) */
    uint64_t slice = b / (uint64_t)S;
    int k0 = 0, up0 = -1, ch0[2];
    for (; k0 < m; k0++) {
        ics_algo_dtree(m, tree, k0, &up0, ch0);
        if (up0 >= 0)
            break;
    }
    ics_time lat = 0, t = 0;
    if (up0 >= 0)
        t = ics_algo_hop_time(c, heads[k0 * c->n + h], heads[up0 * c->n + h],
                              ics_algo_wire_by(c->net_wire_factor, slice), &lat);
    ics_time hop = MAX(t + lat, copy / S) + c->sync_ps;
    ics_time fill = (ics_time)(2 * levels) * (hop + ics_algo_beyond_sync(c, c->net_step_lat_ps)) +
                    (ics_time)levels * 2 * ics_algo_reduce_time(c, slice);
    int d = ics_sched_delay(s, fill > hop ? fill - hop : 0, &id, 1);
    g_array_append_val(ends, d);
}

static void nvls_tree_plan_streams(const ics_algo_ctx *c, ics_sched *s)
{
    ics_algo_nodes g;
    ics_algo_nodes_init(c->t, c->ranks, c->n, &g);
    int m = g.nnodes, *heads = g_new(int, m * c->n);
    int H = check(c, &g, heads), depth = 1;
    g_assert(H > 0);
    for (int x = m; x > 1; x >>= 1)
        depth++;
    uint64_t chunk = ics_algo_nvls_tree_chunk(c, m, H);
    int start = ics_sched_delay(s, c->base_lat_ps + c->step_lat_ps, NULL, 0);
    GArray *ends = g_array_new(FALSE, FALSE, sizeof(int));
    for (int h = 0; h < H; h++) {
        /* both trees' halves of a head's part go into and out of its node together: the same
         * GPUs, switches and head, all at once (one op each way per switch, not one per tree:
         * the in-switch ops are most of a 16,384-GPU call's events) */
        uint64_t part = ics_algo_piece(c->req.size_bytes, H, h);
        for (int k = 0; k < m; k++) {
            int head = heads[k * c->n + h];
            int red = node_reduce(c, s, &g, k, head, part, &start, 1);
            int out = node_multicast(c, s, &g, k, head, part, &start, 1);
            g_array_append_val(ends, red);
            g_array_append_val(ends, out);
        }
        for (int tree = 0; tree < 2; tree++) {
            uint64_t bytes = ics_algo_piece(part, 2, tree);
            int S = lane_slices(c, bytes, chunk, depth);
            nvls_tree_lane(c, s, &g, heads, h, tree, bytes, S, start, ends);
        }
    }
    ics_sched_delay(s, 0, (const int *)(void *)ends->data, (int)ends->len);
    g_array_free(ends, TRUE);
    g_free(heads);
    ics_algo_nodes_clear(&g);
}

const ics_algo_ops ics_algo_nvls_tree = {
    .algo = ICS_ALGO_NVLS_TREE,
    .supports = nvls_tree_supports,
    .plan = nvls_tree_plan,
    .plan_streams = nvls_tree_plan_streams,
};
