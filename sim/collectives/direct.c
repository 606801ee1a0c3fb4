/* Direct algorithms, as nccl-tests' alltoall_perf and sendrecv_perf drive NCCL's point-to-point
 * path: all-to-all posts a send to every peer at once (size / n bytes each); send/recv sends
 * the whole buffer to the next rank and receives from the previous one. */
#include "collectives/algo.h"
#include "collectives/p2p_waves.h"

#include <string.h>

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

static int p2p_send(const ics_algo_ctx *c, ics_sched *s, int a, int b, uint64_t bytes,
                    uint64_t step, uint64_t hash, const int *deps, int ndeps, ics_time post_ps,
                    int nch)
{
    uint64_t steps, wire = p2p_wire(c, a, b, bytes, step, nch, &steps);
    int id = ics_sched_send(s, c->ranks[a], c->ranks[b], wire, hash, deps, ndeps);
    ics_algo_charge(c, s, id, bytes, (uint64_t)nch, (ics_time)steps);
    if (post_ps > 0)
        ics_sched_set_floor(s, id, p2p_alone_end(c, a, b, bytes, wire, nch, post_ps));
    return id;
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
 * costing it NCCL's network overhead (net_op_ps); with waves (p2p_waves.c) it posts a wave's
 * operations once the GPU reaches that wave, so the count starts again each wave. sent[r * n + k]
 * counts rank r's postings of its wave up to its send of round k, got[r * n + k] those up to its
 * receive of round k (n x n: an all-to-all's, whose sends are n x n already). */
typedef struct {
    uint32_t *sent, *got;
} proxy_posts;

/* Fills *p; false (nothing allocated) where posting is free. */
static bool proxy_posts_init(const ics_algo_ctx *c, const ics_p2p_waves *w, proxy_posts *p)
{
    int n = c->n, nw = ics_p2p_waves_count(w);
    if (c->net_op_ps == 0)
        return false;
    p->sent = g_new0(uint32_t, (size_t)n * (size_t)n);
    p->got = g_new0(uint32_t, (size_t)n * (size_t)n);
    uint32_t *count = g_new(uint32_t, (size_t)nw);
    for (int r = 0; r < n; r++) {
        memset(count, 0, sizeof(uint32_t) * (size_t)nw);
        for (int k = 1; k < n; k++) {
            if (posts_net(c, r, k, false))
                p->got[(size_t)r * n + k] = ++count[ics_p2p_waves_of(w, (r - k + n) % n, r)];
            if (posts_net(c, r, k, true))
                p->sent[(size_t)r * n + k] = ++count[ics_p2p_waves_of(w, r, (r + k) % n)];
        }
    }
    g_free(count);
    return true;
}

static void proxy_posts_clear(proxy_posts *p)
{
    g_free(p->sent);
    g_free(p->got);
}

/* How long after its wave's first posting a send across nodes from r in round k is posted: its
 * sender's proxy has posted it (after the round's receive) and its receiver's proxy the matching
 * receive. */
static ics_time posted_ps(const ics_algo_ctx *c, const proxy_posts *p, int r, int k)
{
    int n = c->n, q = (r + k) % n;
    if (!p)
        return 0;
    uint32_t sent = p->sent[(size_t)r * n + k], got = p->got[(size_t)q * n + k];
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
    ics_time first; /* what net_start waits after start */
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
    d.first = ics_time_add(c->net_msg_ps, d.nodes && d.proxy ? c->net_op_ps : 0);
    d.net_start = d.first > 0 ? ics_sched_delay(s, d.first, &d.start, 1) : d.start;
    return d;
}

/* What a send of wave w waits for: in the first wave the call's start (across nodes the first
 * posting); after it the end of the previous wave at both its ends (join: n x waves, the step
 * where a rank's sends and receives of a wave have ended). Returns the count in deps[2]. */
static int wave_deps(const direct_start *d, const int *join, int nw, int w, int a, int b,
                     bool local, int deps[2])
{
    if (w == 0) {
        deps[0] = local ? d->start : d->net_start;
        return 1;
    }
    deps[0] = join[a * nw + w - 1];
    deps[1] = join[b * nw + w - 1];
    return 1 + (deps[1] != deps[0]);
}

/* The step where rank x's wave w ends: its steps of the wave (ends) and its previous wave (the
 * call's start for the first). */
static void wave_join(ics_sched *s, const direct_start *d, int *join, int nw, int w, int x,
                      GArray *ends)
{
    if (w > 0)
        g_array_append_val(ends, join[x * nw + w - 1]);
    else
        g_array_append_val(ends, d->start);
    join[x * nw + w] = ics_sched_delay(s, 0, (const int *)(void *)ends->data, (int)ends->len);
    g_array_set_size(ends, 0);
}

/* The peers rank r sends to in wave w, in NCCL's round order; with one wave, every other rank in
 * icsim's order (round k sends to r + k). Fills peers (n - 1 at most), returns their count. */
static int wave_peers(const ics_algo_ctx *c, const ics_p2p_waves *wv, int w, int r, int *peers)
{
    int np = 0;
    if (ics_p2p_waves_count(wv) == 1) {
        for (int k = 1; k < c->n; k++)
            peers[np++] = (r + k) % c->n;
        return np;
    }
    const int *rounds;
    int nr = ics_p2p_waves_rounds(wv, w, &rounds);
    for (int i = 0; i < nr; i++)
        if (rounds[i] > 0) /* round 0: the rank's copy to itself */
            peers[np++] = ics_p2p_waves_receiver(wv, r, rounds[i]);
    return np;
}

static void sendrecv_plan(const ics_algo_ctx *c, ics_sched *s, const direct_start *d)
{
    /* one round: r's proxy posts the receive from r - 1 first, if it crosses nodes */
    for (int r = 0; r < c->n; r++) {
        int to = (r + 1) % c->n;
        bool local = ics_algo_same_node(c, r, to);
        ics_time post = posts_net(c, r, 1, false) ? c->net_op_ps : 0;
        p2p_send(c, s, r, to, c->req.size_bytes, c->p2p_step, (uint64_t)r,
                 local ? &d->start : &d->net_start, 1, local ? 0 : post, c->nch);
    }
}

static void direct_plan(const ics_algo_ctx *c, ics_sched *s)
{
    direct_start d = direct_begin(c, s);
    int n = c->n;
    if (c->req.op == ICS_COLL_SENDRECV) {
        sendrecv_plan(c, s, &d);
        return;
    }
    ics_p2p_waves *wv = ics_p2p_waves_new(c);
    int nw = ics_p2p_waves_count(wv);
    proxy_posts pp;
    bool priced = d.nodes && d.proxy && proxy_posts_init(c, wv, &pp);
    int *join = nw > 1 ? g_new(int, (size_t)n *(size_t)nw) : NULL;
    GArray **ends = g_new0(GArray *, nw > 1 ? n : 1);
    for (int x = 0; nw > 1 && x < n; x++)
        ends[x] = g_array_new(FALSE, FALSE, sizeof(int));
    int *peers = g_new(int, n);
    for (int w = 0; w < nw; w++) {
        for (int r = 0; r < n; r++) {
            int nch = send_channels(c, r), np = wave_peers(c, wv, w, r, peers);
            for (int i = 0; i < np; i++) {
                int peer = peers[i], k = (peer - r + n) % n, deps[2];
                uint64_t bytes = p2p_bytes(c, r, peer);
                if (bytes == 0) /* all-to-allv: nothing for this peer, no send is posted */
                    continue;
                bool local = ics_algo_same_node(c, r, peer);
                ics_time post = local || !priced ? 0 : posted_ps(c, &pp, r, k);
                if (!local && w > 0) /* a later wave's first posting and plugin latency */
                    post = ics_time_add(post, d.first);
                int nd = wave_deps(&d, join, nw, w, r, peer, local, deps);
                int id = p2p_send(c, s, r, peer, bytes, c->p2p_step,
                                  (uint64_t)r * (uint64_t)n + (uint64_t)peer, deps, nd, post, nch);
                if (nw > 1) {
                    g_array_append_val(ends[r], id);
                    g_array_append_val(ends[peer], id);
                }
            }
        }
        for (int x = 0; nw > 1 && x < n; x++)
            wave_join(s, &d, join, nw, w, x, ends[x]);
    }
    for (int x = 0; nw > 1 && x < n; x++)
        g_array_free(ends[x], TRUE);
    g_free(ends);
    g_free(peers);
    g_free(join);
    if (priced)
        proxy_posts_clear(&pp);
    ics_p2p_waves_free(wv);
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
 * across the network the proxy's posting of its last operation plus that send alone (in a wave
 * after the first, its first posting again: first). Where NCCL's batches make waves, one stream
 * holds every rank's sends of a wave (direct_plan_streams). stream_acc gathers a stream's legs
 * and the most any of them needs (floor, tail); stream_gather adds rank r's; stream_emit plays
 * them. */
typedef struct {
    GArray *legs;
    ics_time floor_ps, tail_ps;
} stream_acc;

/* Adds rank r's sends to `peers` inside its node (net false) or across the network (net true). */
static void stream_gather(const ics_algo_ctx *c, stream_acc *acc, int r, bool net, const int *peers,
                          int npeers, const proxy_posts *pp, ics_time first, const alone_bound *b)
{
    int n = c->n, nch = send_channels(c, r);
    GArray *sends = g_array_new(FALSE, FALSE, sizeof(posted_send));
    for (int i = 0; i < npeers; i++) {
        int peer = peers[i], k = (peer - r + n) % n;
        uint64_t bytes = p2p_bytes(c, r, peer);
        if (bytes == 0 || ics_algo_same_node(c, r, peer) == net)
            continue;
        uint64_t steps, wire = p2p_wire(c, r, peer, bytes, c->p2p_step, nch, &steps);
        ics_net_leg leg = {c->ranks[r], c->ranks[peer], wire,
                           (uint64_t)r * (uint64_t)n + (uint64_t)peer};
        g_array_append_val(acc->legs, leg);
        acc->floor_ps = MAX(acc->floor_ps, ics_algo_cta_time(c, bytes, (uint64_t)nch));
        acc->tail_ps = MAX(acc->tail_ps, ics_time_mul(c->sync_ps, steps));
        posted_send p = {peer, bytes, wire, net ? ics_time_add(posted_ps(c, pp, r, k), first) : 0};
        if (p.post > 0)
            g_array_append_val(sends, p);
    }
    acc->floor_ps = MAX(acc->floor_ps, posting_floor(c, r, sends, nch, b));
    g_array_free(sends, TRUE);
}

/* The gathered legs as one stream after step start (-1: none); the gatherer emptied. */
static int stream_emit(ics_sched *s, stream_acc *acc, int start)
{
    int id = -1;
    if (acc->legs->len > 0) {
        id = ics_sched_batch(s, (const ics_net_leg *)(void *)acc->legs->data, (int)acc->legs->len,
                             &start, 1);
        ics_sched_set_floor(s, id, acc->floor_ps);
        ics_sched_set_tail(s, id, acc->tail_ps);
    }
    g_array_set_size(acc->legs, 0);
    acc->floor_ps = acc->tail_ps = 0;
    return id;
}

/* The sends across the network of one wave as one stream per NIC they leave by
 * (ics_route_send_nic: the destination's rail where NCCL's PXN keeps them there, else the
 * sender's own NIC), every rank's sends by that NIC together; the streams are emitted after
 * `start` into ids, in NIC order. A stream's legs move at one rate, which costs little where they
 * share their bottleneck: the NIC they leave by. One stream a rank, its legs spread over all of
 * its node's NICs by PXN and each NIC loaded by the other ranks' relayed sends too, made a
 * skewed all-to-allv on 16 DGX H100 22.7% slower than its sends on their own, one stream a rank
 * and NIC 8.8% (tests/test_coll_streams.c). */
static void emit_net_by_nic(const ics_algo_ctx *c, ics_sched *s, ics_p2p_waves *wv, int w,
                            const proxy_posts *pp, const alone_bound *b, int start, GArray *ids)
{
    int n = c->n, *peers = g_new(int, n), *group = g_new(int, n), *nic = g_new(int, n);
    GHashTable *by_nic = g_hash_table_new(g_direct_hash, g_direct_equal);
    for (int r = 0; r < n; r++) {
        int np = wave_peers(c, wv, w, r, peers);
        for (int i = 0; i < np; i++) { /* -2: inside the node; -1: no NIC (routing says) */
            int via;
            nic[i] = ics_algo_same_node(c, r, peers[i])
                         ? -2
                         : ics_route_send_nic(c->t, c->ranks[r], c->ranks[peers[i]],
                                              (uint64_t)r * (uint64_t)n + (uint64_t)peers[i], &via);
        }
        for (int i = 0; i < np; i++) {
            bool first_of_nic = nic[i] > -2;
            for (int j = 0; j < i && first_of_nic; j++)
                first_of_nic = nic[j] != nic[i];
            if (!first_of_nic)
                continue;
            int ng = 0;
            for (int j = i; j < np; j++)
                if (nic[j] == nic[i])
                    group[ng++] = peers[j];
            stream_acc *acc = g_hash_table_lookup(by_nic, GINT_TO_POINTER(nic[i] + 2));
            if (!acc) {
                acc = g_new0(stream_acc, 1);
                acc->legs = g_array_new(FALSE, FALSE, sizeof(ics_net_leg));
                g_hash_table_insert(by_nic, GINT_TO_POINTER(nic[i] + 2), acc);
            }
            stream_gather(c, acc, r, true, group, ng, pp, 0, b);
        }
    }
    for (int d = -1; d < ics_topo_ndevs(c->t); d++) { /* NIC order: deterministic */
        stream_acc *acc = g_hash_table_lookup(by_nic, GINT_TO_POINTER(d + 2));
        if (!acc)
            continue;
        int id = stream_emit(s, acc, start);
        if (id >= 0)
            g_array_append_val(ids, id);
        g_array_free(acc->legs, TRUE);
        g_free(acc);
    }
    g_hash_table_destroy(by_nic);
    g_free(peers);
    g_free(group);
    g_free(nic);
}

/* From ICS_STREAMS_AUTO_RANKS ranks: each rank's sends as two streams, inside its node and
 * across the network, n x 2 flows where the chunk plan has n x (n - 1): a 1 GiB all-to-all over
 * 2,160 GPUs is 4.7 million sends, each re-shared at every instant one of them ends. Send/recv
 * has one send a rank either way. Where NCCL's batches make waves (p2p_waves.c), a wave is two
 * streams, every rank's sends inside their nodes and every rank's across the network, and a
 * wave starts when the one before it has ended: a barrier, where the chunk plan lets each send
 * wait only for the previous wave at its two ends. Per-rank waits gave every stream its own
 * start instant, each a re-sharing of the fluid backends' rates: the 2,160-GPU Polaris
 * all-to-all (135 waves) took over 120 s to simulate; with the barrier and two streams a rank a
 * wave 17 s; with two streams a wave 6.2 s, to the microsecond the same (7.3 s before waves).
 * tests/test_coll_streams.c measures what the barrier costs. */
static void direct_plan_streams(const ics_algo_ctx *c, ics_sched *s)
{
    if (c->req.op == ICS_COLL_SENDRECV) {
        direct_plan(c, s);
        return;
    }
    direct_start d = direct_begin(c, s);
    ics_p2p_waves *wv = ics_p2p_waves_new(c);
    int nw = ics_p2p_waves_count(wv);
    proxy_posts pp;
    bool priced = d.nodes && d.proxy && proxy_posts_init(c, wv, &pp);
    bool bounded = priced || nw > 1;
    alone_bound b = bounded ? alone_bound_of(c->t) : (alone_bound){0};
    GArray *ids = g_array_new(FALSE, FALSE, sizeof(int));
    int start = d.start, net_start = d.net_start, n = c->n, *peers = g_new(int, n);
    stream_acc acc[2] = {{g_array_new(FALSE, FALSE, sizeof(ics_net_leg)), 0, 0},
                         {g_array_new(FALSE, FALSE, sizeof(ics_net_leg)), 0, 0}};
    for (int w = 0; w < nw; w++) {
        g_array_set_size(ids, 0);
        ics_time first = w > 0 ? d.first : 0; /* the wave's first posting, in its floors */
        for (int r = 0; r < n; r++) {
            int np = wave_peers(c, wv, w, r, peers);
            for (int net = 0; net < 1 + (d.nodes && nw > 1); net++) {
                stream_gather(c, &acc[net], r, net, peers, np, net && priced ? &pp : NULL,
                              net ? first : 0, &b);
                int id = nw == 1 ? stream_emit(s, &acc[net], start) : -1;
                if (id >= 0)
                    g_array_append_val(ids, id);
            }
        }
        if (nw == 1 && d.nodes) /* across the network: one stream per NIC (above) */
            emit_net_by_nic(c, s, wv, w, priced ? &pp : NULL, &b, net_start, ids);
        for (int net = 0; nw > 1 && net < 1 + d.nodes; net++) {
            int id = stream_emit(s, &acc[net], net ? net_start : start);
            if (id >= 0)
                g_array_append_val(ids, id);
        }
        /* the next wave starts when this one has ended everywhere (see above) */
        if (w + 1 < nw)
            start = net_start =
                ics_sched_delay(s, 0, (const int *)(void *)ids->data, (int)ids->len);
    }
    g_array_free(acc[0].legs, TRUE);
    g_array_free(acc[1].legs, TRUE);
    g_free(peers);
    g_array_free(ids, TRUE);
    if (priced)
        proxy_posts_clear(&pp);
    ics_p2p_waves_free(wv);
}

const ics_algo_ops ics_algo_direct = {
    .algo = ICS_ALGO_DIRECT,
    .supports = direct_supports,
    .plan = direct_plan,
    .plan_streams = direct_plan_streams,
};
