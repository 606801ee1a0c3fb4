/* The packet backend: every transfer is cut into packets that cross each hop one at a time.
 * A channel serializes one packet at a time, choosing round-robin among the flows queued at it
 * (output arbitration); a packet may start only if the receiving end has buffer credits for
 * it; the credits come back when the packet leaves that buffer, one link latency later. No
 * packet is ever dropped: a full buffer stalls the sender (back-pressure). That is per_packet
 * mode, every packet-hop an event. By default packets move in trains, each computed in closed
 * form through the max-plus tandem of net.h:
 *
 *   - a flow whose whole path carries no other flow advances up to train_bytes at a time,
 *     holding each channel while its packets occupy it: exactly the per-packet result;
 *   - a flow whose path another flow shares takes turns (bounded trains) of 1/train_share of
 *     its packets (the last turns halving, at least TRAIN_MIN_PACKETS, at most train_bytes,
 *     and no longer than the shortest turn of the flows it meets). Each channel serves turns
 *     in its free time in the order they reach it, so contention is resolved at turn
 *     granularity: a flow is off its packet-by-packet share by about one turn of each flow it
 *     meets (docs/network.md states the contract and the measured error). Per flow that is
 *     about train_share + log2(turn) events, however many bytes it moves.
 *   - per_packet_shared keeps the older rule: trains where a path is free, packets elsewhere.
 *
 * Multicast and reduction at a switch (joins) are in net_packet_join.c, a channel's calendar in
 * net_calendar.c; the structs both backend files share, in net_packet_internal.h.
 *
 * Invariants: per hop, packets start in order; credits never go negative; every packet
 * started is delivered; a channel's bytes are its flows' bytes; a channel's calendar never
 * holds the same time twice; every flow's done fires once. */
#include "net/net_packet_internal.h"
#include "switch/switch.h"

#include <string.h>

#define DEFAULT_TRAIN_BYTES (4u << 20)
#define DEFAULT_TRAIN_SHARE 32
#define TRAIN_MIN_PACKETS   4

extern const ics_net_ops ics_net_packet_ops;

static uint64_t turn_packets(const ics_pk_net *n, const ics_pk_flow *f);

/* ---- packet sizes ------------------------------------------------------------------------- */

static ics_pk_chan *chan_of(const ics_pk_flow *f, int h)
{
    return f->hops[h].ch;
}

static uint32_t hop_payload(const ics_pk_hop *hop, uint64_t k)
{
    return k + 1 < hop->npk ? hop->payload : hop->last_payload;
}

/* Wire bytes and serialization time of packet k on a hop: cached for full packets. */
static uint64_t hop_wire(const ics_pk_hop *hop, uint64_t k)
{
    if (k + 1 < hop->npk)
        return hop->wire_full;
    return ics_net_wire_bytes(hop->ch->net->t, hop->ch->id, hop->last_payload);
}

static ics_time hop_ser(const ics_pk_hop *hop, uint64_t k)
{
    if (k + 1 < hop->npk)
        return hop->ser_full;
    return ics_time_serialize(hop_wire(hop, k), hop->ch->bw);
}

/* Not through hop->npk: see ics_pk_hop. */
ics_time ics_pk_hop_ser_last(const ics_pk_hop *hop)
{
    uint64_t wire = ics_net_wire_bytes(hop->ch->net->t, hop->ch->id, hop->last_payload);
    return ics_time_serialize(wire, hop->ch->bw);
}

/* ---- flow completion ---------------------------------------------------------------------- */

/* Intrusive lists of what is under way (O(1) in and out): a run stopped at the engine's
 * horizon leaves transfers whose events never fire, and destroy frees them. */
#define LIVE_LINK(head, x)                                                                         \
    do {                                                                                           \
        (x)->prev = NULL;                                                                          \
        (x)->next = (head);                                                                        \
        if (head)                                                                                  \
            (head)->prev = (x);                                                                    \
        (head) = (x);                                                                              \
    } while (0)
#define LIVE_UNLINK(head, x)                                                                       \
    do {                                                                                           \
        if ((x)->prev)                                                                             \
            (x)->prev->next = (x)->next;                                                           \
        else                                                                                       \
            (head) = (x)->next;                                                                    \
        if ((x)->next)                                                                             \
            (x)->next->prev = (x)->prev;                                                           \
    } while (0)

static size_t flow_size(int n_hops)
{
    return sizeof(ics_pk_flow) + sizeof(ics_pk_hop) * (size_t)n_hops;
}

static void xfer_flow_done(ics_pk_net *n, ics_pk_xfer *x)
{
    if (--x->pending > 0)
        return;
    n->stats.transfers++;
    if (x->cleanup)
        x->cleanup(x);
    ics_net_done_fn done = x->done;
    void *ctx = x->ctx;
    uint64_t tag = x->tag;
    LIVE_UNLINK(n->live_xfers, x);
    g_free(x);
    if (done)
        done(n->e, ctx, tag);
}

void ics_pk_flow_finish(ics_pk_flow *f)
{
    for (int h = 0; h < f->n_hops; h++)
        chan_of(f, h)->active--;
    ics_pk_xfer *x = f->x;
    ics_pk_net *n = f->net;
    if (f->deliver == NULL)
        n->stats.bytes_delivered += (f->npk - 1) * (uint64_t)f->payload + f->last_payload;
    if (!f->in_xfer)
        LIVE_UNLINK(n->live_flows, f);
    if (f->group && --f->group->flows == 0) {
        LIVE_UNLINK(n->live_groups, f->group);
        g_free(f->group);
    }
    if (!f->in_xfer)
        g_free(f);
    xfer_flow_done(n, x);
}

static void ev_deliver(ics_engine *e, void *ctx, uint64_t count)
{
    ics_pk_flow *f = ctx;
    ics_pk_deliver_fn deliver = f->deliver;
    void *sink = f->sink;
    int in = f->sink_index;
    f->delivered += count;
    g_assert(f->delivered <= f->npk);
    if (f->delivered == f->npk)
        ics_pk_flow_finish(f); /* not the sink's end: a join's outputs wait for this delivery */
    if (deliver)
        deliver(sink, in, count);
}

/* ---- packets ------------------------------------------------------------------------------ */

static void ev_credit(ics_engine *e, void *ctx, uint64_t bytes)
{
    ics_pk_chan *c = ctx;
    c->credits += (int64_t)bytes;
    g_assert(c->credits <= c->capacity); /* a credit returned twice is a bug */
    ics_pk_chan_kick(c);
}

void ics_pk_chan_enqueue(ics_pk_chan *c, ics_pk_hop *hop)
{
    if (hop->queued)
        return;
    hop->queued = true;
    hop->next = NULL;
    if (c->tail)
        c->tail->next = hop;
    else
        c->head = hop;
    c->tail = hop;
}

static void ev_arrive(ics_engine *e, void *ctx, uint64_t unused)
{
    ics_pk_hop *hop = ctx;
    hop->ready++;
    ics_pk_chan_enqueue(hop->ch, hop);
    ics_pk_chan_kick(hop->ch);
}

static void ev_tx_end(ics_engine *e, void *ctx, uint64_t unused)
{
    ics_pk_hop *hop = ctx;
    ics_pk_chan *c = hop->ch;
    uint64_t k = hop->done++;
    c->tx_busy = false;
    c->bytes += hop_payload(hop, k);
    c->net->stats.packets++;
    /* the packet has left the buffer in front of this hop: credit back upstream */
    if (hop->h > 0 && !hop[-1].ch->unlimited)
        ics_engine_after(e, hop[-1].ch->latency_ps, ev_credit, hop[-1].ch, hop_wire(hop - 1, k));
    if (!hop->last) {
        ics_engine_after(e, c->lambda_ps, ev_arrive, hop + 1, 0);
    } else {
        /* the destination drains at once: its buffer credit returns on arrival */
        if (!c->unlimited)
            ics_engine_after(e, 2 * c->latency_ps, ev_credit, c, hop_wire(hop, k));
        ics_engine_after(e, c->latency_ps, ev_deliver, hop->flow, 1);
    }
    ics_pk_chan_kick(c);
}

static void ev_kick(ics_engine *e, void *ctx, uint64_t unused)
{
    ics_pk_chan *c = ctx;
    c->kick_pending = false;
    ics_pk_chan_kick(c);
}

/* Starts the next packet on an idle channel: round-robin over the queued flows. */
void ics_pk_chan_kick(ics_pk_chan *c)
{
    ics_pk_net *n = c->net;
    ics_time now = ics_engine_now(n->e);
    if (!c->head)
        return;
    if (c->busy_until > now) {
        if (!c->kick_pending && !c->tx_busy) {
            c->kick_pending = true;
            c->kick_ev = ics_engine_at(n->e, c->busy_until, ev_kick, c, 0);
        }
        return;
    }
    ics_pk_hop *hop = c->head;
    uint64_t wire = hop_wire(hop, hop->started);
    ics_time ser = hop_ser(hop, hop->started);
    if (!c->unlimited && c->credits < (int64_t)wire) {
        n->stats.stalls++;
        return; /* ev_credit kicks again */
    }
    if (!c->unlimited)
        c->credits -= (int64_t)wire; /* >= 0: checked above */
    hop->started++;
    hop->ready--;
    c->head = hop->next;
    if (!c->head)
        c->tail = NULL;
    hop->queued = false;
    if (hop->ready > 0) /* back of the queue: round-robin */
        ics_pk_chan_enqueue(c, hop);
    c->busy_until = now + ser;
    c->tx_busy = true;
    ics_engine_after(n->e, ser, ev_tx_end, hop, 0);
}

/* ---- trains ------------------------------------------------------------------------------- */

/* True if no other flow uses any channel of f's path and nothing is queued there. */
static bool path_is_free(const ics_pk_flow *f)
{
    for (int h = 0; h < f->n_hops; h++) {
        const ics_pk_chan *c = chan_of(f, h);
        if (c->active > 1 || c->head)
            return false;
    }
    return true;
}

/* Serialization times of a full packet per hop and their maximum. */
static ics_time pipeline_times(const ics_pk_flow *f, ics_time *s_full, ics_time *lambda)
{
    const ics_topo *t = f->net->t;
    ics_time max_s = 0;
    for (int h = 0; h < f->n_hops; h++) {
        const ics_topo_chan *ch = ics_topo_chan_get(t, f->hops[h].ch->id);
        s_full[h] = f->hops[h].ser_full;
        max_s = MAX(max_s, s_full[h]);
        lambda[h] = ch->latency_ps;
        if (h + 1 < f->n_hops)
            lambda[h] += ics_topo_dev_get(t, ch->dst)->latency_ps;
    }
    return max_s;
}

static void ev_train(ics_engine *e, void *ctx, uint64_t unused);

/* Commits the next train of f's packets, pipelined behind the previous one. The pipeline of a
 * train that began at t0 with packets k0+1.. departs packet j from hop h at
 *   t0 + sum_{i<=h} s_i + sum_{i<h} lambda_i + (j - 1 - k0) * max_s
 * (the tandem of net.h; the last, shorter packet is exact through ics_net_idle_path_time). */
static void train_commit(ics_pk_flow *f)
{
    ics_pk_net *n = f->net;
    ics_time s[ICS_ROUTE_MAX_HOPS], lambda[ICS_ROUTE_MAX_HOPS];
    ics_time max_s = pipeline_times(f, s, lambda);
    uint64_t per_train = MAX(1, n->p.train_bytes / f->payload);
    uint64_t k_end = MIN(f->npk, f->committed + per_train);
    uint64_t train_bytes = (k_end - f->committed) * (uint64_t)f->payload;
    if (k_end == f->npk)
        train_bytes -= f->payload - f->last_payload;
    ics_time off = 0;
    for (int h = 0; h < f->n_hops; h++) {
        off += s[h];
        ics_time end = f->train_t0 + off + (ics_time)(k_end - 1 - f->train_k0) * max_s;
        ics_pk_chan *c = chan_of(f, h);
        c->busy_until = MAX(c->busy_until, end);
        /* held from this train's first packet on, for trains that come to share it */
        ics_cal_mark(&c->cal, ics_engine_now(n->e),
                     f->train_t0 + off - s[h] + (ics_time)(f->committed - f->train_k0) * max_s,
                     end);
        off += lambda[h];
        /* the packets of this train count as carried by the channel */
        c->bytes += train_bytes;
        f->hops[h].started = f->hops[h].done = k_end;
    }
    uint64_t count = k_end - f->committed;
    f->committed = k_end;
    n->stats.trains++;
    if (k_end == f->npk) {
        /* the last packet: exact closed form of the whole pipeline */
        ics_route_path p = {.n_hops = f->n_hops};
        for (int h = 0; h < f->n_hops; h++)
            p.chans[h] = f->hops[h].ch->id;
        uint64_t bytes = (f->npk - 1 - f->train_k0) * (uint64_t)f->payload + f->last_payload;
        ics_time at = f->train_t0 + ics_net_idle_path_time(n->t, &p, bytes, f->payload);
        ics_engine_at(n->e, at, ev_deliver, f, count);
        return;
    }
    /* deliveries of this train, then the next decision when hop 0 has sent it */
    ics_time last_hop_end =
        f->train_t0 + off - lambda[f->n_hops - 1] + (ics_time)(k_end - 1 - f->train_k0) * max_s;
    ics_engine_at(n->e, last_hop_end + lambda[f->n_hops - 1], ev_deliver, f, count);
    ics_time hop0_end = f->train_t0 + s[0] + (ics_time)(k_end - 1 - f->train_k0) * max_s;
    f->train_ev = ics_engine_at(n->e, hop0_end, ev_train, f, 0);
}

/* Hands the packets not yet committed to the per-packet machinery, ready at hop 0. */
static void to_packets(ics_pk_flow *f)
{
    ics_pk_hop *hop = &f->hops[0];
    g_assert(f->npk < UINT32_MAX); /* per_packet modes are chosen by code, never by users */
    hop->ready = (uint32_t)(f->npk - f->committed);
    if (hop->ready == 0)
        return;
    for (int h = 1; h < f->n_hops; h++) /* no train packet waits at a later hop */
        f->hops[h].ready = 0;
    ics_pk_chan_enqueue(hop->ch, hop);
    ics_pk_chan_kick(hop->ch);
}

/* Begins a closed-form pipeline of f's remaining packets late enough that every hop is past
 * any earlier reservation. */
static void pipeline_begin(ics_pk_flow *f)
{
    ics_time s[ICS_ROUTE_MAX_HOPS], lambda[ICS_ROUTE_MAX_HOPS], off = 0;
    pipeline_times(f, s, lambda);
    ics_time t0 = ics_engine_now(f->net->e);
    for (int h = 0; h < f->n_hops; h++) {
        t0 = MAX(t0, chan_of(f, h)->busy_until - off);
        off += s[h] + lambda[h];
    }
    f->train_t0 = t0;
    f->train_k0 = f->committed;
}

/* ---- turns (bounded trains): flows that share a channel ----------------------------------- */

/* The packets of a flow's next turn, `left` of npk to go: 1/train_share of npk, half of
 * what is left near the end, at least TRAIN_MIN_PACKETS, at most train_bytes. */
uint64_t ics_pk_bt_natural(const ics_pk_net *n, uint64_t left, uint64_t npk, uint32_t payload)
{
    uint64_t k = (npk + n->p.train_share - 1) / n->p.train_share;
    k = MIN(k, (left + 1) / 2); /* the last turns halve, so that a flow ends precisely */
    k = MIN(MAX(k, TRAIN_MIN_PACKETS), MAX(1, n->p.train_bytes / payload));
    return MIN(k, left);
}

/* Turns on a channel are as long as the shortest any of its flows takes (bytes), so that flows
 * of different sizes share it round-robin rather than in proportion to their sizes. */
uint64_t ics_pk_bt_limit(const ics_pk_chan *c, ics_time now, uint64_t bytes)
{
    return c->turn_until > now ? MIN(bytes, c->turn_bytes) : bytes;
}

void ics_pk_bt_claim(ics_pk_chan *c, ics_time now, uint64_t bytes, ics_time until)
{
    if (c->turn_until <= now || bytes < c->turn_bytes) {
        c->turn_bytes = bytes;
        c->turn_until = until;
    } else if (bytes == c->turn_bytes) {
        c->turn_until = MAX(c->turn_until, until);
    }
}

ics_pk_bt_shape ics_pk_bt_shape_of(uint64_t committed, uint64_t k, uint64_t npk)
{
    bool has_last = committed + k == npk;
    return (ics_pk_bt_shape){.n_full = k - has_last, .has_last = has_last};
}

/* The packets of f's next turn before the limits of its channels: its own share
 * (ics_pk_bt_natural), or, for a batch's leg, its batch's: 1/train_share of the batch's bytes,
 * the last turns halving what the batch has left, at most what the leg has left. */
static uint64_t turn_packets(const ics_pk_net *n, const ics_pk_flow *f)
{
    uint64_t left = f->npk - f->committed;
    if (!f->group)
        return ics_pk_bt_natural(n, left, f->npk, f->payload);
    uint64_t npk = (f->group->bytes + f->payload - 1) / f->payload;
    uint64_t gleft = (f->group->left + f->payload - 1) / f->payload;
    return MIN(ics_pk_bt_natural(n, MAX(gleft, 1), npk, f->payload), left);
}

/* Commits f's next turn over its whole path (ics_pk_bt_chan at each hop). The turn after it is
 * decided when this one starts at f's most delayed hop, less the time the buffer in front of
 * that hop holds: a flow keeps about one turn queued at its bottleneck, and runs ahead into
 * buffers as its packets would. Its deliveries are batched into one event, at its last. */
static void bt_send(ics_pk_flow *f)
{
    ics_pk_net *n = f->net;
    ics_time now = ics_engine_now(n->e);
    uint64_t k = turn_packets(n, f);
    uint64_t natural = k * f->payload, turn = natural;
    for (int h = 0; h < f->n_hops; h++)
        turn = ics_pk_bt_limit(chan_of(f, h), now, turn);
    k = MIN(k, MAX(1, turn / f->payload));
    ics_pk_bt_shape sh = ics_pk_bt_shape_of(f->committed, k, f->npk);
    uint64_t bytes = k * (uint64_t)f->payload - (sh.has_last ? f->payload - f->last_payload : 0);
    if (f->group)
        f->group->left -= MIN(f->group->left, bytes);
    ics_pk_bt_span sp = {now, now, now};
    ics_time lambda = 0, off = 0, next = now;
    for (int h = 0; h < f->n_hops; h++) {
        ics_pk_hop *hop = &f->hops[h];
        ics_pk_chan *c = hop->ch;
        ics_time s_last = sh.has_last ? ics_pk_hop_ser_last(hop) : hop->ser_full;
        ics_time held;
        sp = ics_pk_bt_chan(c, now, sp, lambda, hop->ser_full, s_last, sh, &held);
        c->bytes += bytes;
        /* off: when the first packet would start here on an idle path */
        next = MAX(next, held - off - (h > 0 ? f->hops[h - 1].ch->buffer_ps : 0));
        lambda = hop->last ? c->latency_ps : c->lambda_ps;
        off += (sh.n_full ? hop->ser_full : s_last) + lambda;
    }
    ics_time at = sp.last + lambda;
    for (int h = 0; h < f->n_hops; h++)
        ics_pk_bt_claim(chan_of(f, h), now, natural, at);
    f->committed += k;
    f->bt_undelivered += k;
    f->bt_deliver_at = MAX(f->bt_deliver_at, at);
    f->bounded = true;
    n->stats.trains++;
    if (f->committed == f->npk) {
        ics_engine_at(n->e, f->bt_deliver_at, ev_deliver, f, f->bt_undelivered);
        f->bt_undelivered = 0;
        return;
    }
    f->train_ev = ics_engine_at(n->e, next, ev_train, f, 0);
}

/* The next train of a flow: bounded while its path is shared, else the rest in closed form
 * (a new pipeline if the last train was bounded). */
static void ev_train(ics_engine *e, void *ctx, uint64_t unused)
{
    ics_pk_flow *f = ctx;
    if (!path_is_free(f)) {
        if (f->net->p.per_packet_shared)
            to_packets(f);
        else
            bt_send(f);
        return;
    }
    if (f->bounded) {
        if (f->bt_undelivered > 0)
            ics_engine_at(e, f->bt_deliver_at, ev_deliver, f, f->bt_undelivered);
        f->bt_undelivered = 0;
        f->bounded = false;
        pipeline_begin(f);
    }
    train_commit(f);
}

/* Starts a flow: as a train if its path is free, else in turns (or as packets: per_packet,
 * per_packet_shared). Runs as an event at the send's time, so that every transfer started at
 * the same instant is counted on its channels before any of them decides. */
static void ev_start(ics_engine *e, void *ctx, uint64_t unused)
{
    ics_pk_flow *f = ctx;
    ics_pk_net *n = f->net;
    /* into a switch's join, packets must reach it one by one to be pipelined through it */
    if (n->p.per_packet || f->deliver || (n->p.per_packet_shared && !path_is_free(f))) {
        to_packets(f);
        return;
    }
    if (!path_is_free(f)) {
        bt_send(f);
        return;
    }
    pipeline_begin(f);
    train_commit(f);
}

/* A batch's flows start in one event, in the order their events would have run: the batch's
 * sends are made in one go, nothing is scheduled between them, and the engine runs events of
 * one instant in the order they were scheduled. An all-to-all of 2,160 GPUs saves 4.7 M events. */
static void ev_start_batch(ics_engine *e, void *ctx, uint64_t unused)
{
    ics_pk_group *g = ctx;
    for (ics_pk_flow *f = g->starting, *next; f; f = next) {
        next = f->start_next;
        ev_start(e, f, unused);
    }
    g->starting = g->last_starting = NULL;
}

void ics_pk_flow_start(ics_pk_flow *f)
{
    if (f->fed)
        return;
    ics_pk_group *g = f->group;
    if (!g || f->net->joining != g) {
        ics_engine_after(f->net->e, 0, ev_start, f, 0);
        return;
    }
    if (g->starting) {
        g->last_starting->start_next = f;
    } else {
        g->starting = f;
        ics_engine_after(f->net->e, 0, ev_start_batch, g, 0);
    }
    g->last_starting = f;
}

/* ---- flows, sends ------------------------------------------------------------------------- */

ics_pk_flow *ics_pk_flow_new(ics_pk_net *n, ics_pk_xfer *x, const int *chans, int n_hops,
                             uint64_t bytes, uint32_t payload)
{
    size_t size = flow_size(n_hops);
    ics_pk_flow *f;
    if (x->room && x->room_hops >= n_hops) { /* the first flow made, whichever path it takes */
        f = memset(x->room, 0, size);
        f->in_xfer = true;
        x->room = NULL;
    } else
        f = g_malloc0(size);
    f->net = n;
    f->x = x;
    f->n_hops = n_hops;
    f->payload = payload;
    f->npk = (bytes + payload - 1) / payload;
    f->last_payload = (uint32_t)(bytes - (f->npk - 1) * payload);
    f->group = n->joining;
    if (f->group)
        f->group->flows++;
    ics_time now = ics_engine_now(n->e);
    uint64_t turn = turn_packets(n, f) * payload;
    for (int h = 0; h < n_hops; h++) {
        ics_pk_hop *hop = &f->hops[h];
        hop->flow = f;
        hop->h = (uint16_t)h;
        hop->last = h + 1 == n_hops;
        hop->ch = &n->chans[chans[h]];
        hop->npk = (uint32_t)f->npk; /* per packet only: see ics_pk_hop */
        hop->payload = payload;
        hop->last_payload = f->last_payload;
        hop->wire_full = (uint32_t)ics_net_wire_bytes(n->t, chans[h], payload);
        hop->ser_full = ics_net_ser(n->t, chans[h], payload);
        chan_of(f, h)->active++;
        /* its turn counts before any flow started at this instant takes one (ics_pk_bt_limit) */
        ics_pk_bt_claim(hop->ch, now, turn, now + 1);
    }
    x->pending++;
    /* a flow in its transfer's room is freed with it: off the list, whose unlinking touched two
     * other flows, long since cold, at every flow's end */
    if (!f->in_xfer)
        LIVE_LINK(n->live_flows, f);
    return f;
}

void ics_pk_ev_done_now(ics_engine *e, void *ctx, uint64_t unused)
{
    ics_pk_xfer *x = ctx;
    x->pending = 1;
    xfer_flow_done(x->net, x);
}

/* Flows and transfers are made and freed by the million (a 2,160-GPU all-to-all of 1 GiB: 4.7 M
 * sends), and malloc was a sixth of such a run: a send's first flow comes with its transfer. */
ics_pk_xfer *ics_pk_xfer_new(ics_pk_net *n, ics_net_done_fn done, void *ctx, uint64_t tag,
                             int room_hops)
{
    /* the flow after the transfer, aligned as malloc aligns (the flow holds 64-bit fields) */
    size_t head = (sizeof(ics_pk_xfer) + 15) & ~(size_t)15;
    ics_pk_xfer *x = g_malloc0(room_hops >= 0 ? head + flow_size(room_hops) : sizeof *x);
    if (room_hops >= 0) {
        x->room = (ics_pk_flow *)((char *)x + head);
        x->room_hops = room_hops;
    }
    x->net = n;
    x->done = done;
    x->ctx = ctx;
    x->tag = tag;
    LIVE_LINK(n->live_xfers, x);
    return x;
}

/* Load of a route: the busiest channel it crosses (flows routed over it), then the sum. */
static uint64_t route_load(const ics_pk_net *n, const ics_route *r)
{
    uint64_t worst = 0, sum = 0;
    for (int i = 0; i < r->n_paths; i++)
        for (int h = 0; h < r->paths[i].n_hops; h++) {
            uint64_t a = (uint64_t)n->chans[r->paths[i].chans[h]].active;
            worst = MAX(worst, a);
            sum += a;
        }
    return (worst << 32) | MIN(sum, UINT32_MAX);
}

/* The route of a transfer: by flow hash (ECMP), or with adaptive routing the least-loaded of
 * the choices a few hashes give, the way adaptive routing in IB switches steers new traffic
 * away from busy uplinks (decided once per transfer here, not per packet). */
#define ADAPTIVE_CHOICES 16

static const ics_route *pick_route(ics_pk_net *n, const ics_net_xfer *xf)
{
    const ics_route *r = ics_net_routes_find(n->routes, xf->src, xf->dst, xf->flow_hash);
    g_assert(r); /* every GPU pair of a validated model is routable */
    if (!n->p.adaptive_routing || !ics_topo_fattree(n->t))
        return r;
    uint64_t best = route_load(n, r), best_hash = xf->flow_hash;
    for (uint64_t i = 1; i < ADAPTIVE_CHOICES && best > 0; i++) {
        /* another ECMP hash, the same NIC slot (the hash's bits above ICS_ROUTE_HASH_BITS) */
        uint64_t h = (xf->flow_hash - ics_route_ecmp_bits(xf->flow_hash)) |
                     ics_route_ecmp_bits(xf->flow_hash + i * 0x9e3779b97f4a7c15ULL);
        const ics_route *alt = ics_net_routes_find(n->routes, xf->src, xf->dst, h);
        if (!alt || alt->n_paths == 0)
            continue;
        uint64_t load = route_load(n, alt);
        if (load < best) {
            best = load;
            best_hash = h;
        }
    }
    /* the memo's routes last until its next call: the chosen one again */
    return ics_net_routes_find(n->routes, xf->src, xf->dst, best_hash);
}

/* Splits bytes over a route's paths by weight, in whole packets; the last path takes the rest. */
void ics_pk_send(ics_net *net, const ics_net_xfer *xf)
{
    ics_pk_net *n = (ics_pk_net *)net;
    static const ics_route none = {0};
    const ics_route *r = xf->src != xf->dst && xf->bytes > 0 ? pick_route(n, xf) : &none;
    ics_pk_xfer *x =
        ics_pk_xfer_new(n, xf->done, xf->ctx, xf->tag, r->n_paths ? r->paths[0].n_hops : -1);
    /* an NVLink route has at most 64 paths (one per bond, hw_catalog.c); one across the fabric
     * has one per queue pair (NCCL_IB_QPS_PER_CONNECTION, up to 128): past 64 the last flow
     * takes what is left */
    ics_pk_flow *flows[64];
    int nf = 0;
    uint64_t left = xf->bytes;
    for (int i = 0; i < r->n_paths && left > 0 && nf < 64; i++) {
        const ics_route_path *p = &r->paths[i];
        uint32_t payload = ics_net_packet_payload(n->t, p, n->p.packet_bytes);
        uint64_t share = left;
        if (i + 1 < r->n_paths && nf + 1 < 64)
            share = MIN(left, (uint64_t)(xf->bytes * p->weight / payload) * payload);
        if (share == 0)
            continue;
        left -= share;
        flows[nf++] = ics_pk_flow_new(n, x, p->chans, p->n_hops, share, payload);
    }
    if (nf == 0) {
        ics_engine_after(n->e, 0, ics_pk_ev_done_now, x, 0);
        return;
    }
    for (int i = 0; i < nf; i++)
        ics_pk_flow_start(flows[i]);
}

/* ---- the backend -------------------------------------------------------------------------- */

/* The largest packet payload any channel can see: the largest max_payload of any standard. */
static uint64_t largest_payload(const ics_topo *t, uint32_t packet_bytes)
{
    uint64_t m = packet_bytes;
    for (int c = 0; c < ics_topo_nchans(t); c++) {
        const ics_hw_standard *s = ics_topo_chan_get(t, c)->standard;
        if (s)
            m = MAX(m, (uint64_t)s->max_payload_bytes);
    }
    return m;
}

ics_net *ics_pk_create(const ics_topo *t, ics_engine *e, const ics_net_params *p)
{
    ics_pk_net *n = g_new0(ics_pk_net, 1);
    n->base.ops = &ics_net_packet_ops;
    n->t = t;
    n->e = e;
    n->p = *p;
    n->routes = ics_net_routes_new(t);
    if (n->p.train_bytes == 0)
        n->p.train_bytes = DEFAULT_TRAIN_BYTES;
    if (n->p.train_share == 0)
        n->p.train_share = DEFAULT_TRAIN_SHARE;
    int nc = ics_topo_nchans(t);
    n->chans = g_new0(ics_pk_chan, nc);
    uint64_t biggest = largest_payload(t, p->packet_bytes);
    for (int c = 0; c < nc; c++) {
        ics_pk_chan *ch = &n->chans[c];
        ch->net = n;
        ch->id = c;
        uint64_t buf =
            ics_switch_buffer_bytes(t, c, p->buffer_bytes, ics_net_wire_bytes(t, c, biggest));
        ch->unlimited = buf == 0;
        const ics_topo_chan *tc = ics_topo_chan_get(t, c);
        ch->bw = tc->bw_bytes_per_s;
        ch->latency_ps = tc->latency_ps;
        ch->lambda_ps = tc->latency_ps + ics_topo_dev_get(t, tc->dst)->latency_ps;
        ch->credits = ch->capacity = (int64_t)buf;
        ch->buffer_ps = buf ? ics_time_serialize(buf, ch->bw) : ICS_TIME_MAX / 4;
        ics_cal_init(&ch->cal);
    }
    return (ics_net *)n;
}

void ics_pk_destroy(ics_net *net)
{
    ics_pk_net *n = (ics_pk_net *)net;
    while (n->live_flows) { /* those not in a transfer's room: those are freed with it, below */
        ics_pk_flow *f = n->live_flows;
        LIVE_UNLINK(n->live_flows, f);
        g_free(f);
    }
    while (n->live_xfers) {
        ics_pk_xfer *x = n->live_xfers;
        LIVE_UNLINK(n->live_xfers, x);
        if (x->cleanup)
            x->cleanup(x);
        g_free(x);
    }
    while (n->live_groups) {
        ics_pk_group *g = n->live_groups;
        LIVE_UNLINK(n->live_groups, g);
        g_free(g);
    }
    for (int c = 0; c < ics_topo_nchans(n->t); c++)
        ics_cal_clear(&n->chans[c].cal);
    ics_net_routes_free(n->routes);
    g_free(n->chans);
    g_free(n);
}

void ics_pk_stats(const ics_net *net, ics_net_stats *out)
{
    *out = ((const ics_pk_net *)net)->stats;
}

uint64_t ics_pk_chan_bytes(const ics_net *net, int chan)
{
    return ((const ics_pk_net *)net)->chans[chan].bytes;
}

/* A batch: its legs as sends (ics_net_stream_as_sends), every flow of them in one group, whose
 * turns are 1/train_share of the batch's bytes (turn_packets): the legs are separate messages
 * that share their sender's NIC, and what the caller waits for is the last of them. Leg by leg,
 * the 540-rank Polaris all-to-all of 1 GiB (486 packets a leg) took 16.4 million turns of ~9
 * packets (~13 before ics_pk_bt_limit cut them to the shortest on their channels: legs near
 * their ends halving theirs); as batches it takes 290 thousand, about one a leg, and ends at
 * the same microsecond (794,509 us; the analytic backend 794,467). A pipeline's stream keeps
 * per-leg turns: its legs grouped the same way, the 1024-GPU all-reduce sweep's 16-32 MiB rows
 * moved to 3-5% from the analytic backend, where leg by leg they are within 3%. */
void ics_pk_batch(ics_net *net, const ics_net_leg *legs, int nlegs, ics_net_done_fn done, void *ctx,
                  uint64_t tag)
{
    ics_pk_net *n = (ics_pk_net *)net;
    ics_pk_group *g = g_new0(ics_pk_group, 1);
    for (int i = 0; i < nlegs; i++)
        g->bytes += legs[i].bytes;
    g->left = g->bytes;
    LIVE_LINK(n->live_groups, g);
    n->joining = g;
    ics_net_stream_as_sends(net, legs, nlegs, done, ctx, tag);
    n->joining = NULL;
    if (g->flows == 0) {
        LIVE_UNLINK(n->live_groups, g);
        g_free(g);
    }
}
