/* Direct algorithms, as nccl-tests' alltoall_perf and sendrecv_perf drive NCCL's point-to-point
 * path: all-to-all posts a send to every peer at once (size / n bytes each); send/recv sends
 * the whole buffer to the next rank and receives from the previous one. */
#include "collectives/algo.h"

static bool direct_supports(const ics_algo_ctx *c)
{
    return (c->req.op == ICS_COLL_ALLTOALL || c->req.op == ICS_COLL_SENDRECV) && c->n >= 2;
}

/* One send of `bytes` from rank a to rank b over the context's channels, played as one transfer
 * starting after step `start`: the channels' CTAs copy it no faster than their ceiling (its
 * floor) and synchronize once per p2p step of each channel (its tail). A transfer per step would
 * only add events: nothing else waits on a send's steps. A send the proxy posts `post_ps` after
 * the others ends no earlier than that plus what it takes alone (its copy, or its transfer and
 * the route's latency): charged as part of its floor, not as a later start, because each
 * distinct start instant makes the fluid backends share the links anew (an all-to-all's
 * postings are 2 x its remote peers of them: 256 ranks on a fat-tree took 106 s instead of 3).
 * What this leaves out: a late send takes its share of the links before it is posted, at most
 * post_ps early. */
/* The wire bytes of a send of `bytes` from a to b over nch channels in NCCL's p2p steps of
 * `step` (*steps: a channel's steps). */
static uint64_t p2p_wire(const ics_algo_ctx *c, int a, int b, uint64_t bytes, uint64_t step,
                         int nch, uint64_t *steps)
{
    uint64_t per_step = step * (uint64_t)nch;
    *steps = MAX(1, (bytes + per_step - 1) / per_step);
    return ics_algo_net_gap(c, a, b, ics_algo_wire(c, bytes), *steps * (uint64_t)nch);
}

/* When a send posted post_ps after the others ends if it runs alone: its copy, or its transfer
 * and the route's latency, after its posting. */
static ics_time p2p_alone_end(const ics_algo_ctx *c, int a, int b, uint64_t bytes, uint64_t wire,
                              int nch, ics_time post_ps)
{
    ics_time lat, alone = ics_algo_hop_time(c, a, b, wire, &lat);
    alone = MAX(ics_time_add(alone, lat), ics_algo_cta_time(c, bytes, (uint64_t)nch));
    return ics_time_add(post_ps, alone);
}

static void p2p_send(const ics_algo_ctx *c, ics_sched *s, int a, int b, uint64_t bytes,
                     uint64_t step, uint64_t hash, int start, ics_time post_ps, int nch)
{
    uint64_t steps, wire = p2p_wire(c, a, b, bytes, step, nch, &steps);
    int id = ics_sched_send(s, c->ranks[a], c->ranks[b], wire, hash, &start, 1);
    ics_algo_charge(c, s, id, bytes, (uint64_t)nch, (ics_time)steps);
    if (post_ps > 0)
        ics_sched_set_floor(s, id, p2p_alone_end(c, a, b, bytes, wire, nch, post_ps));
}

/* What rank r sends to rank q (0: no operation is posted). */
static uint64_t p2p_bytes(const ics_algo_ctx *c, int r, int q)
{
    int n = c->n;
    if (r == q)
        return 0;
    if (c->req.op == ICS_COLL_SENDRECV)
        return q == (r + 1) % n ? c->req.size_bytes : 0;
    return c->req.splits ? c->req.splits[(size_t)r * (size_t)n + (size_t)q]
                         : c->req.size_bytes / (uint64_t)n;
}

/* True if r posts an operation across the network in round k, the receive (send false) or the
 * send: round k receives from r - k, then sends to r + k, NCCL's order on one node. Across nodes
 * NCCL orders its rounds by node (p2pSchedule, init.cc: a node's own peers first, the other
 * nodes by a quadratic walk); every rank still posts as many operations across the network, so
 * the last posting, what a small all-to-all waits for, is the same, but which postings one send
 * waits behind is icsim's order, an approximation. */
static bool posts_net(const ics_algo_ctx *c, int r, int k, bool send)
{
    int n = c->n, q = send ? (r + k) % n : (r - k + n) % n;
    return !ics_algo_same_node(c, r, q) && (send ? p2p_bytes(c, r, q) : p2p_bytes(c, q, r)) > 0;
}

/* NCCL's proxy thread posts a GPU's network operations one after another, in round order, each
 * costing it NCCL's network overhead (net_op_ps). before[r * n + k]: the network operations rank
 * r posted in rounds 1 .. k-1 (n x n: an all-to-all's, whose sends are n x n already). NULL
 * where posting is free. */
static uint32_t *proxy_posts(const ics_algo_ctx *c)
{
    int n = c->n;
    if (c->net_op_ps == 0)
        return NULL;
    uint32_t *before = g_new0(uint32_t, (size_t)n * (size_t)n);
    for (int r = 0; r < n; r++)
        for (int k = 1; k + 1 < n; k++)
            before[(size_t)r * n + k + 1] =
                before[(size_t)r * n + k] + posts_net(c, r, k, false) + posts_net(c, r, k, true);
    return before;
}

/* How long after the first posting a send across nodes from r in round k is posted: its
 * sender's proxy has posted it (after the round's receive) and its receiver's proxy the matching
 * receive. */
static ics_time posted_ps(const ics_algo_ctx *c, const uint32_t *before, int r, int k)
{
    int n = c->n, p = (r + k) % n;
    if (!before)
        return 0;
    uint64_t sent = before[(size_t)r * n + k] + posts_net(c, r, k, false) + 1;
    uint64_t got = before[(size_t)p * n + k] + 1;
    return ics_time_mul(c->net_op_ps, MAX(sent, got) - 1);
}

/* The channels (CTAs) one of rank r's sends runs on: NCCL's p2p channels, or a share of the SMs
 * of a caller's own kernel (req.sms: DeepEP's, HybridEP's), which serve all the peers r sends
 * to at once. */
static int send_channels(const ics_algo_ctx *c, int r)
{
    if (c->req.sms <= 0)
        return c->nch;
    int peers = 0;
    for (int q = 0; q < c->n; q++)
        peers += q != r && p2p_bytes(c, r, q) > 0;
    return MAX(1, c->req.sms / MAX(peers, 1));
}

/* What both plans start from: the steps a send inside a node and one across the network wait
 * for, whether the ranks span nodes, and whether a proxy posts the network operations. */
typedef struct {
    int start, net_start;
    bool nodes, proxy;
} direct_start;

static direct_start direct_begin(const ics_algo_ctx *c, ics_sched *s)
{
    direct_start d = {.start = ics_sched_delay(s, c->base_lat_ps + c->step_lat_ps, NULL, 0)};
    for (int r = 1; r < c->n && !d.nodes; r++)
        d.nodes = !ics_algo_same_node(c, r, 0);
    /* every send across nodes waits the first posting and the plugin's latency: one delay. A
     * caller's own kernel (req.sms) initiates its RDMA from the GPU: no proxy posts anything */
    d.proxy = c->req.sms <= 0;
    ics_time first = ics_time_add(c->net_msg_ps, d.nodes && d.proxy ? c->net_op_ps : 0);
    d.net_start = first > 0 ? ics_sched_delay(s, first, &d.start, 1) : d.start;
    return d;
}

static void direct_plan(const ics_algo_ctx *c, ics_sched *s)
{
    direct_start d = direct_begin(c, s);
    int n = c->n, start = d.start, net_start = d.net_start;
    uint64_t step = c->p2p_step;
    if (c->req.op == ICS_COLL_SENDRECV) {
        /* one round: r's proxy posts the receive from r - 1 first, if it crosses nodes */
        for (int r = 0; r < n; r++) {
            int to = (r + 1) % n;
            bool local = ics_algo_same_node(c, r, to);
            ics_time post = posts_net(c, r, 1, false) ? c->net_op_ps : 0;
            p2p_send(c, s, r, to, c->req.size_bytes, step, (uint64_t)r, local ? start : net_start,
                     local ? 0 : post, c->nch);
        }
        return;
    }
    uint32_t *before = d.nodes && d.proxy ? proxy_posts(c) : NULL;
    /* NCCL walks the peers in this order: round k sends to r + k */
    for (int r = 0; r < n; r++) {
        int nch = send_channels(c, r);
        for (int k = 1; k < n; k++) {
            int peer = (r + k) % n;
            uint64_t bytes = p2p_bytes(c, r, peer);
            if (bytes == 0) /* all-to-allv: nothing for this peer, no send is posted */
                continue;
            bool local = ics_algo_same_node(c, r, peer);
            p2p_send(c, s, r, peer, bytes, step, (uint64_t)r * (uint64_t)n + (uint64_t)peer,
                     local ? start : net_start, local ? 0 : posted_ps(c, before, r, k), nch);
        }
    }
    g_free(before);
}

/* ---- the sends as streams ------------------------------------------------------------------ */

/* What bounds any send's time alone (ics_algo_hop_time: its transfer at its route's bandwidth,
 * then the route's latency): the topology's slowest channel, and its slowest hop on a route of
 * the most hops a route may have. Loose, but it only decides which sends are worth routing. */
typedef struct {
    uint64_t min_bw;
    ics_time max_lat;
} alone_bound;

static alone_bound alone_bound_of(const ics_topo *t)
{
    alone_bound b = {.min_bw = UINT64_MAX};
    ics_time hop = 0;
    for (int ch = 0; ch < ics_topo_nchans(t); ch++) {
        const ics_topo_chan *x = ics_topo_chan_get(t, ch);
        if (x->bw_bytes_per_s > 0)
            b.min_bw = MIN(b.min_bw, x->bw_bytes_per_s);
        hop = MAX(hop, ics_time_add(x->latency_ps, ics_topo_dev_get(t, x->dst)->latency_ps));
    }
    b.max_lat = ics_time_mul(hop, ICS_ROUTE_MAX_HOPS);
    return b;
}

/* A send across the network as its proxy posts it. */
typedef struct {
    int peer;
    uint64_t bytes, wire;
    ics_time post;
} posted_send;

/* When p ends at the latest if it runs alone from its posting: as p2p_send prices it, exactly
 * (its route, b NULL), or bounded (b). */
static ics_time posted_end(const ics_algo_ctx *c, int r, const posted_send *p, int nch,
                           const alone_bound *b)
{
    if (!b)
        return p2p_alone_end(c, r, p->peer, p->bytes, p->wire, nch, p->post);
    ics_time alone = b->min_bw < UINT64_MAX ? ics_time_serialize(p->wire, b->min_bw) : 0;
    alone = MAX(ics_time_add(alone, b->max_lat), ics_algo_cta_time(c, p->bytes, (uint64_t)nch));
    return ics_time_add(p->post, alone);
}

/* The latest a stream's sends end alone after their postings: the send posted last is routed
 * first, then any other whose bound could end later. Routing all of a rank's 2,000 sends was a
 * fifth of a 2,160-rank all-to-all; the result is the same. */
static ics_time posting_floor(const ics_algo_ctx *c, int r, const GArray *sends, int nch,
                              const alone_bound *b)
{
    const posted_send *p = (const posted_send *)(const void *)sends->data;
    guint last = 0;
    for (guint i = 1; i < sends->len; i++)
        if (p[i].post > p[last].post)
            last = i;
    ics_time floor_ps = sends->len ? posted_end(c, r, &p[last], nch, NULL) : 0;
    for (guint i = 0; i < sends->len; i++)
        if (i != last && posted_end(c, r, &p[i], nch, b) > floor_ps)
            floor_ps = MAX(floor_ps, posted_end(c, r, &p[i], nch, NULL));
    return floor_ps;
}

/* Rank r's sends inside its node (net false) or across the network (net true) as one stream:
 * the legs move at one rate and end together, where the chunk plan lets each send end on its
 * own. What that leaves out is a send that a lightly loaded path would finish early, its share
 * then going to the others: the call still ends when its most loaded resource has carried its
 * bytes, which is what sets an all-to-all's time on a fabric where every rank crosses the same
 * kind of bottleneck (the NICs, the uplinks of an oversubscribed tree, a dragonfly's global
 * links); tests/test_coll_streams.c compares the two plans. Each send is priced as p2p_send
 * prices it, the stream taking the most of them: the CTAs' copy (floor), their syncs (tail), and
 * across the network the proxy's posting of its last operation plus that send alone. */
static void direct_stream(const ics_algo_ctx *c, ics_sched *s, int r, bool net, int start,
                          const uint32_t *before, const alone_bound *b)
{
    int n = c->n, nch = send_channels(c, r);
    GArray *legs = g_array_sized_new(FALSE, FALSE, sizeof(ics_net_leg), (guint)n);
    GArray *sends = g_array_new(FALSE, FALSE, sizeof(posted_send));
    ics_time floor_ps = 0, tail_ps = 0;
    for (int k = 1; k < n; k++) {
        int peer = (r + k) % n;
        uint64_t bytes = p2p_bytes(c, r, peer);
        if (bytes == 0 || ics_algo_same_node(c, r, peer) == net)
            continue;
        uint64_t steps, wire = p2p_wire(c, r, peer, bytes, c->p2p_step, nch, &steps);
        ics_net_leg leg = {c->ranks[r], c->ranks[peer], wire,
                           (uint64_t)r * (uint64_t)n + (uint64_t)peer};
        g_array_append_val(legs, leg);
        floor_ps = MAX(floor_ps, ics_algo_cta_time(c, bytes, (uint64_t)nch));
        tail_ps = MAX(tail_ps, ics_time_mul(c->sync_ps, steps));
        posted_send p = {peer, bytes, wire, net ? posted_ps(c, before, r, k) : 0};
        if (p.post > 0)
            g_array_append_val(sends, p);
    }
    floor_ps = MAX(floor_ps, posting_floor(c, r, sends, nch, b));
    if (legs->len > 0) {
        int id =
            ics_sched_stream(s, (const ics_net_leg *)(void *)legs->data, (int)legs->len, &start, 1);
        ics_sched_set_floor(s, id, floor_ps);
        ics_sched_set_tail(s, id, tail_ps);
    }
    g_array_free(legs, TRUE);
    g_array_free(sends, TRUE);
}

/* From ICS_STREAMS_AUTO_RANKS ranks: each rank's sends as two streams, inside its node and
 * across the network, n x 2 flows where the chunk plan has n x (n - 1): a 1 GiB all-to-all over
 * 2,160 GPUs is 4.7 million sends, each re-shared at every instant one of them ends. Send/recv
 * has one send a rank either way. */
static void direct_plan_streams(const ics_algo_ctx *c, ics_sched *s)
{
    if (c->req.op == ICS_COLL_SENDRECV) {
        direct_plan(c, s);
        return;
    }
    direct_start d = direct_begin(c, s);
    uint32_t *before = d.nodes && d.proxy ? proxy_posts(c) : NULL;
    /* a pass over the topology's channels: only where the proxy's postings are priced */
    alone_bound b = before ? alone_bound_of(c->t) : (alone_bound){0};
    for (int r = 0; r < c->n; r++) {
        direct_stream(c, s, r, false, d.start, NULL, &b);
        if (d.nodes)
            direct_stream(c, s, r, true, d.net_start, before, &b);
    }
    g_free(before);
}

const ics_algo_ops ics_algo_direct = {
    .algo = ICS_ALGO_DIRECT,
    .supports = direct_supports,
    .plan = direct_plan,
    .plan_streams = direct_plan_streams,
};
