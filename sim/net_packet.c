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
 * Invariants: per hop, packets start in order; credits never go negative; every packet
 * started is delivered; a channel's bytes are its flows' bytes; a channel's calendar never
 * holds the same time twice; every flow's done fires once. */
#include "net.h"
#include "switch/switch.h"

#include <string.h>

#define DEFAULT_TRAIN_BYTES (4u << 20)
#define DEFAULT_TRAIN_SHARE 32
#define TRAIN_MIN_PACKETS   4

extern const ics_net_ops ics_net_packet_ops;

typedef struct pk_net pk_net;
typedef struct pk_flow pk_flow;

/* What waits for a flow's packets at its last device: nothing (a plain send), or the join of a
 * multicast / reduce at a switch. */
typedef struct pk_join {
    pk_net *net;
    int nin, nout;
    uint64_t *in_delivered; /* packets each input flow has delivered into the switch */
    pk_flow **in;           /* flows into the switch */
    pk_flow **out;          /* flows out of it, fed packet by packet */
    uint32_t payload, last_payload;
    uint64_t npk;
    uint64_t reduced;   /* packets processed by the switch (reduced or copied) */
    uint64_t committed; /* packets moved as trains so far */
    ics_time unit_free; /* the reduction unit is busy until then */
    ics_time bt_end;    /* the last bounded train's delivery */
    uint64_t reduce_bw; /* 0: copy only (multicast) */
    ics_time sw_latency_ps;
} pk_join;

typedef struct {
    pk_net *net;
    ics_net_done_fn done;
    void *ctx;
    uint64_t tag;
    int pending; /* flows still running */
    pk_join *join;
} pk_xfer;

/* A flow's state at hop h: the device before channel h. One cache line: the per-packet
 * handlers touch only this, not the flow (with hundreds of thousands of flows in flight the
 * simulation is bound by memory, not arithmetic). Its packet counts are 32-bit and serve the
 * per-packet machinery only, which takes flows of fewer than 2^32 packets (to_packets); trains
 * and turns count in the flow's 64-bit fields, so a user's 8 TiB send (2^35 packets) runs. */
typedef struct pk_hop {
    pk_flow *flow;
    struct pk_hop *next; /* round-robin queue of the channel */
    struct pk_chan *ch;  /* the channel of this hop */
    ics_time ser_full;   /* serialization of a full packet on this hop */
    uint32_t ready;      /* packets at the device, not yet started on the channel */
    uint32_t started;    /* packets started on the channel */
    uint32_t done;       /* packets whose serialization on the channel ended */
    uint32_t npk;        /* the flow's packets */
    uint32_t wire_full;  /* wire bytes of a full packet on this hop */
    uint32_t payload, last_payload;
    uint16_t h;
    bool queued;
    bool last; /* the final hop of the path */
} pk_hop;

struct pk_flow {
    pk_net *net;
    pk_xfer *x;
    pk_join *sink;  /* the join this flow delivers into, or NULL */
    int sink_index; /* which input of the join */
    uint64_t npk;   /* packets */
    uint32_t payload, last_payload;
    uint64_t delivered;
    uint64_t committed; /* packets sent as trains so far */
    ics_time train_t0;  /* start of the current train pipeline */
    uint64_t train_k0;  /* packets committed before the current pipeline began */
    ics_event_id train_ev;
    uint64_t bt_undelivered; /* packets of bounded trains whose delivery is not yet scheduled */
    ics_time bt_deliver_at;  /* the latest delivery among them */
    bool bounded;            /* the last train was bounded: a closed-form pipeline restarts */
    bool fed;                /* hop 0 is fed by a join, not ready at start */
    int n_hops;
    pk_hop hops[]; /* n_hops of them: flows are many, so only what the path needs */
};

typedef struct {
    ics_time lo, hi;
} bt_iv;

typedef struct {
    bt_iv *iv; /* held intervals iv[head .. n), sorted, neither overlapping nor touching */
    uint32_t head, n, cap;
} bt_cal;

typedef struct pk_chan {
    pk_net *net;
    int id;
    ics_time busy_until; /* serializing a packet, or reserved by a train */
    bool tx_busy;        /* busy with a packet whose ev_tx_end will kick the queue */
    bool unlimited;      /* the receiving end drains at once */
    uint64_t bw;         /* copies of the topology's figures, kept next to the state */
    ics_time latency_ps; /* the link */
    ics_time lambda_ps;  /* the link plus the receiving device's forwarding latency */
    int64_t credits;     /* free bytes in the receiving buffer: 0..capacity */
    int64_t capacity;
    ics_time buffer_ps; /* the receiving buffer's worth of this channel's time (unlimited: huge) */
    pk_hop *head, *tail;
    uint64_t bytes;
    int active; /* flows routed over this channel and not complete */
    ics_event_id kick_ev;
    bool kick_pending;
    bt_cal cal;          /* what bounded and closed-form trains hold of it */
    uint64_t turn_bytes; /* the smallest turn a flow of this channel takes, ... */
    ics_time turn_until; /* ... valid until that flow's train is delivered */
} pk_chan;

struct pk_net {
    ics_net_base base;
    const ics_topo *t;
    ics_engine *e;
    ics_net_params p;
    pk_chan *chans;
    ics_net_stats stats;
};

static void chan_kick(pk_chan *c);

/* ---- packet sizes ------------------------------------------------------------------------- */

static pk_chan *chan_of(const pk_flow *f, int h)
{
    return f->hops[h].ch;
}

static uint32_t hop_payload(const pk_hop *hop, uint64_t k)
{
    return k + 1 < hop->npk ? hop->payload : hop->last_payload;
}

/* Wire bytes and serialization time of packet k on a hop: cached for full packets. */
static uint64_t hop_wire(const pk_hop *hop, uint64_t k)
{
    if (k + 1 < hop->npk)
        return hop->wire_full;
    return ics_net_wire_bytes(hop->ch->net->t, hop->ch->id, hop->last_payload);
}

static ics_time hop_ser(const pk_hop *hop, uint64_t k)
{
    if (k + 1 < hop->npk)
        return hop->ser_full;
    return ics_time_serialize(hop_wire(hop, k), hop->ch->bw);
}

/* Serialization time of the flow's last packet on a hop (not through hop->npk: see pk_hop). */
static ics_time hop_ser_last(const pk_hop *hop)
{
    uint64_t wire = ics_net_wire_bytes(hop->ch->net->t, hop->ch->id, hop->last_payload);
    return ics_time_serialize(wire, hop->ch->bw);
}

/* ---- flow completion ---------------------------------------------------------------------- */

static void xfer_flow_done(pk_net *n, pk_xfer *x)
{
    if (--x->pending > 0)
        return;
    n->stats.transfers++;
    if (x->join) {
        g_free(x->join->in_delivered);
        g_free(x->join->in);
        g_free(x->join->out);
        g_free(x->join);
    }
    ics_net_done_fn done = x->done;
    void *ctx = x->ctx;
    uint64_t tag = x->tag;
    g_free(x);
    if (done)
        done(n->e, ctx, tag);
}

static void flow_finish(pk_flow *f)
{
    for (int h = 0; h < f->n_hops; h++)
        chan_of(f, h)->active--;
    pk_xfer *x = f->x;
    pk_net *n = f->net;
    if (f->sink == NULL)
        n->stats.bytes_delivered += (f->npk - 1) * (uint64_t)f->payload + f->last_payload;
    g_free(f);
    xfer_flow_done(n, x);
}

static void join_feed(pk_join *j);

static void ev_deliver(ics_engine *e, void *ctx, uint64_t count)
{
    pk_flow *f = ctx;
    pk_join *j = f->sink;
    f->delivered += count;
    g_assert(f->delivered <= f->npk);
    if (j)
        j->in_delivered[f->sink_index] += count;
    if (f->delivered == f->npk)
        flow_finish(f);
    if (j)
        join_feed(j);
}

/* ---- packets ------------------------------------------------------------------------------ */

static void ev_credit(ics_engine *e, void *ctx, uint64_t bytes)
{
    pk_chan *c = ctx;
    c->credits += (int64_t)bytes;
    g_assert(c->credits <= c->capacity); /* a credit returned twice is a bug */
    chan_kick(c);
}

static void chan_enqueue(pk_chan *c, pk_hop *hop)
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
    pk_hop *hop = ctx;
    hop->ready++;
    chan_enqueue(hop->ch, hop);
    chan_kick(hop->ch);
}

static void ev_tx_end(ics_engine *e, void *ctx, uint64_t unused)
{
    pk_hop *hop = ctx;
    pk_chan *c = hop->ch;
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
    chan_kick(c);
}

static void ev_kick(ics_engine *e, void *ctx, uint64_t unused)
{
    pk_chan *c = ctx;
    c->kick_pending = false;
    chan_kick(c);
}

/* Starts the next packet on an idle channel: round-robin over the queued flows. */
static void chan_kick(pk_chan *c)
{
    pk_net *n = c->net;
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
    pk_hop *hop = c->head;
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
        chan_enqueue(c, hop);
    c->busy_until = now + ser;
    c->tx_busy = true;
    ics_engine_after(n->e, ser, ev_tx_end, hop, 0);
}

/* ---- calendars: the time trains hold a channel -------------------------------------------- */

/* A channel's calendar: the intervals its trains hold, from now on, sorted and apart. A train
 * reserves the free time after its arrival, so a train that arrives first is served first even
 * if another reserved earlier: what the packets would do at an arbitrated output. */
static void cal_prune(bt_cal *c, ics_time now)
{
    while (c->head < c->n && c->iv[c->head].hi <= now)
        c->head++;
    if (c->head == c->n)
        c->head = c->n = 0;
}

/* The first interval from head on that ends at or after t (binary search). */
static uint32_t cal_find(const bt_cal *c, ics_time t)
{
    uint32_t lo = c->head, hi = c->n;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (c->iv[mid].hi < t)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Marks [lo, hi) held, merging it with the intervals it touches. O(log intervals + intervals
 * merged), plus a move of the ones after it. */
static void cal_mark(bt_cal *c, ics_time now, ics_time lo, ics_time hi)
{
    cal_prune(c, now);
    if (hi <= lo)
        return;
    uint32_t i0 = cal_find(c, lo);
    uint32_t i1 = i0;
    while (i1 < c->n && c->iv[i1].lo <= hi)
        i1++;
    if (i1 > i0) { /* replace iv[i0 .. i1) by their union with [lo, hi) */
        c->iv[i0] = (bt_iv){MIN(lo, c->iv[i0].lo), MAX(hi, c->iv[i1 - 1].hi)};
        memmove(&c->iv[i0 + 1], &c->iv[i1], sizeof(bt_iv) * (c->n - i1));
        c->n -= i1 - i0 - 1;
        return;
    }
    if (c->n == c->cap) {
        if (c->head > 0) {
            memmove(c->iv, &c->iv[c->head], sizeof(bt_iv) * (c->n - c->head));
            c->n -= c->head;
            i0 -= c->head;
            c->head = 0;
        } else {
            c->cap = c->cap ? 2 * c->cap : 4;
            c->iv = g_renew(bt_iv, c->iv, c->cap);
        }
    }
    memmove(&c->iv[i0 + 1], &c->iv[i0], sizeof(bt_iv) * (c->n - i0));
    c->iv[i0] = (bt_iv){lo, hi};
    c->n++;
}

/* Serves `work` in the calendar's free time from `arrive` on: returns when it starts, sets
 * *finish to when it is done, and holds everything between. */
static ics_time cal_serve(bt_cal *c, ics_time now, ics_time arrive, ics_time work, ics_time *finish)
{
    cal_prune(c, now);
    uint32_t i = cal_find(c, arrive);
    ics_time t = arrive, start = -1;
    for (;;) {
        if (i < c->n && c->iv[i].lo <= t) {
            t = MAX(t, c->iv[i].hi);
            i++;
            continue;
        }
        if (start < 0)
            start = t;
        ics_time room = i < c->n ? c->iv[i].lo - t : work;
        ics_time take = MIN(work, room);
        t += take;
        work -= take;
        if (work == 0)
            break;
    }
    *finish = t;
    cal_mark(c, now, start, t);
    return start;
}

/* ---- trains ------------------------------------------------------------------------------- */

/* True if no other flow uses any channel of f's path and nothing is queued there. */
static bool path_is_free(const pk_flow *f)
{
    for (int h = 0; h < f->n_hops; h++) {
        const pk_chan *c = chan_of(f, h);
        if (c->active > 1 || c->head)
            return false;
    }
    return true;
}

/* Serialization times of a full packet per hop and their maximum. */
static ics_time pipeline_times(const pk_flow *f, ics_time *s_full, ics_time *lambda)
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
static void train_commit(pk_flow *f)
{
    pk_net *n = f->net;
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
        pk_chan *c = chan_of(f, h);
        c->busy_until = MAX(c->busy_until, end);
        /* held from this train's first packet on, for trains that come to share it */
        cal_mark(&c->cal, ics_engine_now(n->e),
                 f->train_t0 + off - s[h] + (ics_time)(f->committed - f->train_k0) * max_s, end);
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
static void to_packets(pk_flow *f)
{
    pk_hop *hop = &f->hops[0];
    g_assert(f->npk < UINT32_MAX); /* per_packet modes are chosen by code, never by users */
    hop->ready = (uint32_t)(f->npk - f->committed);
    if (hop->ready == 0)
        return;
    for (int h = 1; h < f->n_hops; h++) /* no train packet waits at a later hop */
        f->hops[h].ready = 0;
    chan_enqueue(hop->ch, hop);
    chan_kick(hop->ch);
}

/* Begins a closed-form pipeline of f's remaining packets late enough that every hop is past
 * any earlier reservation. */
static void pipeline_begin(pk_flow *f)
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

/* A train's departures from one stage (a channel, a reduction unit): its first packet's, its
 * last full packet's, its last packet's. In the max-plus tandem a train's departure times are
 * convex in the packet index, so these three carry it through the next stage exactly. */
typedef struct {
    ics_time first, full, last;
} bt_span;

/* A train: n_full full packets, then the flow's last (possibly shorter) packet if has_last. */
typedef struct {
    uint64_t n_full;
    bool has_last;
} bt_shape;

/* Carries a train through a stage that serves its packets from `start` on, the last at
 * `finish`: packets arriving `lambda` after `in`'s departures, taking s_full (s_last for the
 * flow's last) each. */
static bt_span bt_stage(ics_time start, ics_time finish, bt_span in, ics_time lambda,
                        ics_time s_full, ics_time s_last, bt_shape sh)
{
    bt_span out;
    out.first = start + (sh.n_full ? s_full : s_last);
    out.full =
        sh.n_full ? MAX(in.full + lambda + s_full, finish - (sh.has_last ? s_last : 0)) : start;
    out.last = sh.has_last ? MAX(in.last + lambda + s_last, out.full + s_last) : out.full;
    return out;
}

static ics_time bt_work(bt_shape sh, ics_time s_full, ics_time s_last)
{
    return (ics_time)sh.n_full * s_full + (sh.has_last ? s_last : 0);
}

/* A channel serving a turn: in its calendar's free time from the turn's first arrival on, for
 * as long as its packets take (cal_serve), which sets its last departures and *held (when the
 * channel starts on it). Its first packet, as round-robin arbitration would have it, leaves
 * after at most one packet of each flow on the channel, the rest spread until the finish;
 * where the turn arrives slower than the channel serves (a slower hop or a turn upstream), the
 * calendar's later free time goes to the turns behind it, as interleaved packets would. */
static bt_span bt_chan(pk_chan *c, ics_time now, bt_span in, ics_time lambda, ics_time s_full,
                       ics_time s_last, bt_shape sh, ics_time *held)
{
    ics_time finish, arrive = in.first + lambda;
    *held = cal_serve(&c->cal, now, arrive, bt_work(sh, s_full, s_last), &finish);
    c->busy_until = MAX(c->busy_until, finish);
    ics_time m_s = (ics_time)c->active * s_full, k = (ics_time)(sh.n_full + sh.has_last);
    ics_time first = MIN(*held, MAX(arrive + m_s, finish - (k - 1) * m_s));
    return bt_stage(first, finish, in, lambda, s_full, s_last, sh);
}

/* The packets of a flow's next turn, `left` of npk to go: 1/train_share of npk, half of
 * what is left near the end, at least TRAIN_MIN_PACKETS, at most train_bytes. */
static uint64_t bt_natural(const pk_net *n, uint64_t left, uint64_t npk, uint32_t payload)
{
    uint64_t k = (npk + n->p.train_share - 1) / n->p.train_share;
    k = MIN(k, (left + 1) / 2); /* the last turns halve, so that a flow ends precisely */
    k = MIN(MAX(k, TRAIN_MIN_PACKETS), MAX(1, n->p.train_bytes / payload));
    return MIN(k, left);
}

/* Turns on a channel are as long as the shortest any of its flows takes (bytes), so that flows
 * of different sizes share it round-robin rather than in proportion to their sizes. */
static uint64_t bt_limit(const pk_chan *c, ics_time now, uint64_t bytes)
{
    return c->turn_until > now ? MIN(bytes, c->turn_bytes) : bytes;
}

static void bt_claim(pk_chan *c, ics_time now, uint64_t bytes, ics_time until)
{
    if (c->turn_until <= now || bytes < c->turn_bytes) {
        c->turn_bytes = bytes;
        c->turn_until = until;
    } else if (bytes == c->turn_bytes) {
        c->turn_until = MAX(c->turn_until, until);
    }
}

static bt_shape bt_shape_of(uint64_t committed, uint64_t k, uint64_t npk)
{
    bool has_last = committed + k == npk;
    return (bt_shape){.n_full = k - has_last, .has_last = has_last};
}

/* Commits f's next turn over its whole path (bt_chan at each hop). The turn after it is
 * decided when this one starts at f's most delayed hop, less the time the buffer in front of
 * that hop holds: a flow keeps about one turn queued at its bottleneck, and runs ahead into
 * buffers as its packets would. Its deliveries are batched into one event, at its last. */
static void bt_send(pk_flow *f)
{
    pk_net *n = f->net;
    ics_time now = ics_engine_now(n->e);
    uint64_t k = bt_natural(n, f->npk - f->committed, f->npk, f->payload);
    uint64_t natural = k * f->payload, turn = natural;
    for (int h = 0; h < f->n_hops; h++)
        turn = bt_limit(chan_of(f, h), now, turn);
    k = MIN(k, MAX(1, turn / f->payload));
    bt_shape sh = bt_shape_of(f->committed, k, f->npk);
    uint64_t bytes = k * (uint64_t)f->payload - (sh.has_last ? f->payload - f->last_payload : 0);
    bt_span sp = {now, now, now};
    ics_time lambda = 0, off = 0, next = now;
    for (int h = 0; h < f->n_hops; h++) {
        pk_hop *hop = &f->hops[h];
        pk_chan *c = hop->ch;
        ics_time s_last = sh.has_last ? hop_ser_last(hop) : hop->ser_full;
        ics_time held;
        sp = bt_chan(c, now, sp, lambda, hop->ser_full, s_last, sh, &held);
        c->bytes += bytes;
        /* off: when the first packet would start here on an idle path */
        next = MAX(next, held - off - (h > 0 ? f->hops[h - 1].ch->buffer_ps : 0));
        lambda = hop->last ? c->latency_ps : c->lambda_ps;
        off += (sh.n_full ? hop->ser_full : s_last) + lambda;
    }
    ics_time at = sp.last + lambda;
    for (int h = 0; h < f->n_hops; h++)
        bt_claim(chan_of(f, h), now, natural, at);
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
    pk_flow *f = ctx;
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
    pk_flow *f = ctx;
    pk_net *n = f->net;
    /* into a switch's join, packets must reach it one by one to be pipelined through it */
    if (n->p.per_packet || f->sink || (n->p.per_packet_shared && !path_is_free(f))) {
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

static void flow_start(pk_flow *f)
{
    if (!f->fed)
        ics_engine_after(f->net->e, 0, ev_start, f, 0);
}

/* ---- flows, sends ------------------------------------------------------------------------- */

static pk_flow *flow_new(pk_net *n, pk_xfer *x, const int *chans, int n_hops, uint64_t bytes,
                         uint32_t payload)
{
    pk_flow *f = g_malloc0(sizeof(pk_flow) + sizeof(pk_hop) * (size_t)n_hops);
    f->net = n;
    f->x = x;
    f->n_hops = n_hops;
    f->payload = payload;
    f->npk = (bytes + payload - 1) / payload;
    f->last_payload = (uint32_t)(bytes - (f->npk - 1) * payload);
    ics_time now = ics_engine_now(n->e);
    uint64_t turn = bt_natural(n, f->npk, f->npk, payload) * payload;
    for (int h = 0; h < n_hops; h++) {
        pk_hop *hop = &f->hops[h];
        hop->flow = f;
        hop->h = (uint16_t)h;
        hop->last = h + 1 == n_hops;
        hop->ch = &n->chans[chans[h]];
        hop->npk = (uint32_t)f->npk; /* per packet only: see pk_hop */
        hop->payload = payload;
        hop->last_payload = f->last_payload;
        hop->wire_full = (uint32_t)ics_net_wire_bytes(n->t, chans[h], payload);
        hop->ser_full = ics_net_ser(n->t, chans[h], payload);
        chan_of(f, h)->active++;
        /* its turn counts before any flow started at this instant takes one (bt_limit) */
        bt_claim(hop->ch, now, turn, now + 1);
    }
    x->pending++;
    return f;
}

static void ev_done_now(ics_engine *e, void *ctx, uint64_t unused)
{
    pk_xfer *x = ctx;
    x->pending = 1;
    xfer_flow_done(x->net, x);
}

static pk_xfer *xfer_new(pk_net *n, ics_net_done_fn done, void *ctx, uint64_t tag)
{
    pk_xfer *x = g_new0(pk_xfer, 1);
    x->net = n;
    x->done = done;
    x->ctx = ctx;
    x->tag = tag;
    return x;
}

/* Load of a route: the busiest channel it crosses (flows routed over it), then the sum. */
static uint64_t route_load(const pk_net *n, const ics_route *r)
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

static void pick_route(pk_net *n, const ics_net_xfer *xf, ics_route *r)
{
    bool ok = ics_route_find(n->t, xf->src, xf->dst, xf->flow_hash, r);
    g_assert(ok); /* every GPU pair of a validated model is routable */
    if (!n->p.adaptive_routing || !ics_topo_fattree(n->t))
        return;
    uint64_t best = route_load(n, r);
    for (uint64_t i = 1; i < ADAPTIVE_CHOICES && best > 0; i++) {
        ics_route alt;
        ics_route_find(n->t, xf->src, xf->dst, xf->flow_hash + i * 0x9e3779b97f4a7c15ULL, &alt);
        uint64_t load = route_load(n, &alt);
        if (load < best) {
            best = load;
            ics_route_clear(r);
            *r = alt;
        } else {
            ics_route_clear(&alt);
        }
    }
}

/* Splits bytes over a route's paths by weight, in whole packets; the last path takes the rest. */
static void pk_send(ics_net *net, const ics_net_xfer *xf)
{
    pk_net *n = (pk_net *)net;
    pk_xfer *x = xfer_new(n, xf->done, xf->ctx, xf->tag);
    ics_route r = {0};
    if (xf->src != xf->dst && xf->bytes > 0)
        pick_route(n, xf, &r);
    pk_flow *flows[64];
    int nf = 0;
    uint64_t left = xf->bytes;
    for (int i = 0; i < r.n_paths && left > 0 && nf < 64; i++) {
        const ics_route_path *p = &r.paths[i];
        uint32_t payload = ics_net_packet_payload(n->t, p, n->p.packet_bytes);
        uint64_t share = left;
        if (i + 1 < r.n_paths)
            share = MIN(left, (uint64_t)(xf->bytes * p->weight / payload) * payload);
        if (share == 0)
            continue;
        left -= share;
        flows[nf++] = flow_new(n, x, p->chans, p->n_hops, share, payload);
    }
    ics_route_clear(&r);
    if (nf == 0) {
        ics_engine_after(n->e, 0, ev_done_now, x, 0);
        return;
    }
    for (int i = 0; i < nf; i++)
        flow_start(flows[i]);
}

/* ---- multicast and reduction at a switch -------------------------------------------------- */

static void ev_join_out(ics_engine *e, void *ctx, uint64_t count)
{
    pk_join *j = ctx;
    for (int i = 0; i < j->nout; i++) {
        pk_flow *f = j->out[i];
        if (f == NULL)
            continue;
        pk_hop *hop = &f->hops[0];
        hop->ready += (uint32_t)count;
        chan_enqueue(hop->ch, hop);
        chan_kick(hop->ch);
    }
}

/* Packets every input has delivered go through the switch: reduced one at a time by its
 * reduction unit (reading one copy per input), or copied at once; then out to every
 * destination after the switch's latency. */
static void join_feed(pk_join *j)
{
    uint64_t ready = UINT64_MAX;
    for (int i = 0; i < j->nin; i++)
        ready = MIN(ready, j->in_delivered[i]);
    ics_time now = ics_engine_now(j->net->e);
    while (j->reduced < ready) {
        uint64_t k = j->reduced++;
        ics_time at = now;
        if (j->reduce_bw) {
            uint32_t payload = k + 1 == j->npk ? j->last_payload : j->payload;
            ics_time busy = ics_time_serialize((uint64_t)payload * (uint64_t)j->nin, j->reduce_bw);
            at = MAX(now, j->unit_free) + busy;
            j->unit_free = at;
        }
        ics_engine_at(j->net->e, at + j->sw_latency_ps, ev_join_out, j, 1);
    }
}

/* True if each channel of the op carries only this op's one flow and nothing is queued. */
static bool join_is_free(const pk_join *j)
{
    for (int i = 0; i < j->nin + j->nout; i++) {
        const pk_flow *f = i < j->nin ? j->in[i] : j->out[i - j->nin];
        const pk_chan *c = chan_of(f, 0);
        if (c->active > 1 || c->head)
            return false;
    }
    return true;
}

/* Slowest full and last packet times over a set of one-hop flows, and their latest latency. */
static void stage_of(pk_flow *const *flows, int nf, ics_time *s_full, ics_time *s_last,
                     ics_time *lat)
{
    *s_full = *s_last = *lat = 0;
    for (int i = 0; i < nf; i++) {
        pk_hop *hop = &flows[i]->hops[0];
        *s_full = MAX(*s_full, hop->ser_full);
        *s_last = MAX(*s_last, hop_ser_last(hop));
        *lat = MAX(*lat, hop->ch->latency_ps);
    }
}

static void ev_join_done(ics_engine *e, void *ctx, uint64_t unused)
{
    pk_xfer *x = ctx;
    pk_join *j = x->join;
    int nin = j->nin, nout = j->nout;
    pk_flow **all = g_new(pk_flow *, nin + nout);
    memcpy(all, j->in, sizeof(pk_flow *) * (size_t)nin);
    memcpy(all + nin, j->out, sizeof(pk_flow *) * (size_t)nout);
    for (int i = 0; i < nin + nout; i++) /* the last one frees x and j */
        flow_finish(all[i]);
    g_free(all);
}

/* An uncontended multicast / reduction moves as one train: a three-stage tandem (into the
 * switch, its reduction unit, out of it) in closed form, exactly what the packets would do.
 * After bounded turns (bt_join), the rest the same way, behind every reservation. */
static void join_train(pk_xfer *x)
{
    pk_join *j = x->join;
    pk_net *n = j->net;
    ics_time s_full[3], s_last[3], lambda[3];
    stage_of(j->in, j->nin, &s_full[0], &s_last[0], &lambda[0]);
    s_full[1] = j->reduce_bw
                    ? ics_time_serialize((uint64_t)j->payload * (uint64_t)j->nin, j->reduce_bw)
                    : 0;
    s_last[1] = j->reduce_bw
                    ? ics_time_serialize((uint64_t)j->last_payload * (uint64_t)j->nin, j->reduce_bw)
                    : 0;
    lambda[1] = j->sw_latency_ps;
    stage_of(j->out, j->nout, &s_full[2], &s_last[2], &lambda[2]);
    uint64_t left = j->npk - j->committed;
    ics_time t0 = ics_engine_now(n->e);
    if (j->committed > 0) {
        ics_time o1 = s_full[0] + lambda[0], o2 = o1 + s_full[1] + lambda[1];
        t0 = MAX(t0, j->unit_free - o1);
        for (int i = 0; i < j->nin + j->nout; i++) {
            const pk_flow *f = i < j->nin ? j->in[i] : j->out[i - j->nin];
            t0 = MAX(t0, chan_of(f, 0)->busy_until - (i < j->nin ? 0 : o2));
        }
    }
    ics_time end = t0 + ics_net_tandem_time(3, s_full, s_last, lambda, left);
    uint64_t bytes = (left - 1) * (uint64_t)j->payload + j->last_payload;
    for (int i = 0; i < j->nin + j->nout; i++) {
        pk_flow *f = i < j->nin ? j->in[i] : j->out[i - j->nin];
        pk_chan *c = chan_of(f, 0);
        c->busy_until = MAX(c->busy_until, end); /* reserved: others wait (one train) */
        cal_mark(&c->cal, ics_engine_now(n->e), t0, end);
        c->bytes += bytes;
        f->delivered = f->npk;
    }
    j->committed = j->npk;
    n->stats.trains++;
    ics_engine_at(n->e, MAX(end, j->bt_end), ev_join_done, x, 0);
}

static void ev_join_step(ics_engine *e, void *ctx, uint64_t unused);

/* One turn of a contended multicast / reduction: the same packets of every source into the
 * switch, through its reduction unit (a stage of its own), and out to every destination, each
 * channel serving it as bt_chan does; the next turn is paced as bt_send paces a flow's. */
static void bt_join(pk_xfer *x)
{
    pk_join *j = x->join;
    pk_net *n = j->net;
    ics_time now = ics_engine_now(n->e);
    int nf = j->nin + j->nout;
    uint64_t k = bt_natural(n, j->npk - j->committed, j->npk, j->payload);
    uint64_t natural = k * j->payload, turn = natural;
    for (int i = 0; i < nf; i++)
        turn = bt_limit(chan_of(i < j->nin ? j->in[i] : j->out[i - j->nin], 0), now, turn);
    k = MIN(k, MAX(1, turn / j->payload));
    bt_shape sh = bt_shape_of(j->committed, k, j->npk);
    uint64_t bytes = k * (uint64_t)j->payload - (sh.has_last ? j->payload - j->last_payload : 0);
    /* into the switch: a packet is there when every source's copy is */
    bt_span ready = {now, now, now}, in = {0, 0, 0};
    ics_time next = now, o_unit = 0, o_out, slack = 0;
    for (int i = 0; i < j->nin; i++) {
        pk_hop *hop = &j->in[i]->hops[0];
        ics_time s_last = sh.has_last ? hop_ser_last(hop) : hop->ser_full;
        ics_time held;
        bt_span d = bt_chan(hop->ch, now, ready, 0, hop->ser_full, s_last, sh, &held);
        hop->ch->bytes += bytes;
        next = MAX(next, held);
        slack = MAX(slack, hop->ch->buffer_ps); /* the switch's input buffers */
        ics_time lat = hop->ch->latency_ps;
        in = (bt_span){MAX(in.first, d.first + lat), MAX(in.full, d.full + lat),
                       MAX(in.last, d.last + lat)};
        o_unit = MAX(o_unit, (sh.n_full ? hop->ser_full : s_last) + lat);
    }
    /* the reduction unit reads one copy per source; a multicast copies at once */
    bt_span sw = in;
    o_out = o_unit;
    if (j->reduce_bw) {
        uint64_t nin = (uint64_t)j->nin;
        ics_time r_full = ics_time_serialize(j->payload * nin, j->reduce_bw);
        ics_time r_last =
            sh.has_last ? ics_time_serialize(j->last_payload * nin, j->reduce_bw) : r_full;
        ics_time start = MAX(in.first, j->unit_free);
        j->unit_free = start + bt_work(sh, r_full, r_last);
        sw = bt_stage(start, j->unit_free, in, 0, r_full, r_last, sh);
        next = MAX(next, start - o_unit - slack);
        o_out += sh.n_full ? r_full : r_last;
    }
    o_out += j->sw_latency_ps;
    ics_time end = now;
    for (int i = 0; i < j->nout; i++) {
        pk_hop *hop = &j->out[i]->hops[0];
        ics_time s_last = sh.has_last ? hop_ser_last(hop) : hop->ser_full;
        ics_time held;
        bt_span d = bt_chan(hop->ch, now, sw, j->sw_latency_ps, hop->ser_full, s_last, sh, &held);
        hop->ch->bytes += bytes;
        next = MAX(next, held - o_out - slack);
        end = MAX(end, d.last + hop->ch->latency_ps);
    }
    for (int i = 0; i < nf; i++)
        bt_claim(chan_of(i < j->nin ? j->in[i] : j->out[i - j->nin], 0), now, natural, end);
    j->committed += k;
    j->bt_end = MAX(j->bt_end, end);
    n->stats.trains++;
    if (j->committed < j->npk) {
        ics_engine_at(n->e, next, ev_join_step, x, 0);
        return;
    }
    for (int i = 0; i < nf; i++) {
        pk_flow *f = i < j->nin ? j->in[i] : j->out[i - j->nin];
        f->delivered = f->npk;
    }
    ics_engine_at(n->e, j->bt_end, ev_join_done, x, 0);
}

static void ev_join_step(ics_engine *e, void *ctx, uint64_t unused)
{
    pk_xfer *x = ctx;
    if (join_is_free(x->join))
        join_train(x);
    else
        bt_join(x);
}

static void ev_join_start(ics_engine *e, void *ctx, uint64_t unused)
{
    pk_xfer *x = ctx;
    pk_join *j = x->join;
    bool free = join_is_free(j);
    if (!j->net->p.per_packet && (free || !j->net->p.per_packet_shared)) {
        ev_join_step(e, x, 0);
        return;
    }
    for (int i = 0; i < j->nin; i++)
        flow_start(j->in[i]);
}

static void pk_join_op(pk_net *n, const int *srcs, int nsrc, int sw, const int *dsts, int ndst,
                       uint64_t bytes, uint64_t reduce_bw, ics_net_done_fn done, void *ctx,
                       uint64_t tag)
{
    pk_xfer *x = xfer_new(n, done, ctx, tag);
    if (bytes == 0 || nsrc == 0 || ndst == 0) {
        ics_engine_after(n->e, 0, ev_done_now, x, 0);
        return;
    }
    pk_join *j = g_new0(pk_join, 1);
    j->net = n;
    j->nin = nsrc;
    j->nout = ndst;
    j->in_delivered = g_new0(uint64_t, nsrc);
    j->out = g_new0(pk_flow *, ndst);
    j->reduce_bw = reduce_bw;
    j->sw_latency_ps = ics_topo_dev_get(n->t, sw)->latency_ps;
    x->join = j;
    int c0 = ics_topo_chan_between(n->t, srcs[0], sw);
    g_assert(c0 >= 0); /* NVLS / SHARP sources are wired to the switch */
    ics_route_path p0 = {.n_hops = 1, .chans = {c0}};
    uint32_t payload = ics_net_packet_payload(n->t, &p0, n->p.packet_bytes);
    pk_flow **in = j->in = g_new(pk_flow *, nsrc);
    for (int i = 0; i < nsrc; i++) {
        int c = ics_topo_chan_between(n->t, srcs[i], sw);
        g_assert(c >= 0);
        in[i] = flow_new(n, x, &c, 1, bytes, payload);
        in[i]->sink = j;
        in[i]->sink_index = i;
    }
    j->npk = in[0]->npk;
    j->payload = payload;
    j->last_payload = in[0]->last_payload;
    for (int i = 0; i < ndst; i++) {
        int c = ics_topo_chan_between(n->t, sw, dsts[i]);
        g_assert(c >= 0);
        j->out[i] = flow_new(n, x, &c, 1, bytes, payload);
        j->out[i]->fed = true;
    }
    ics_engine_after(n->e, 0, ev_join_start, x, 0);
}

static void pk_multicast(ics_net *net, int src, int sw, const int *dsts, int ndst, uint64_t bytes,
                         ics_net_done_fn done, void *ctx, uint64_t tag)
{
    pk_join_op((pk_net *)net, &src, 1, sw, dsts, ndst, bytes, 0, done, ctx, tag);
}

static void pk_reduce(ics_net *net, const int *srcs, int nsrc, int sw, const int *dsts, int ndst,
                      uint64_t bytes, ics_net_done_fn done, void *ctx, uint64_t tag)
{
    pk_net *n = (pk_net *)net;
    uint64_t bw = ics_net_reduce_bw(n->t, sw);
    g_assert(bw > 0); /* callers check that the switch reduces (NVLS / SHARP) */
    pk_join_op(n, srcs, nsrc, sw, dsts, ndst, bytes, bw, done, ctx, tag);
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

static ics_net *pk_create(const ics_topo *t, ics_engine *e, const ics_net_params *p)
{
    pk_net *n = g_new0(pk_net, 1);
    n->base.ops = &ics_net_packet_ops;
    n->t = t;
    n->e = e;
    n->p = *p;
    if (n->p.train_bytes == 0)
        n->p.train_bytes = DEFAULT_TRAIN_BYTES;
    if (n->p.train_share == 0)
        n->p.train_share = DEFAULT_TRAIN_SHARE;
    int nc = ics_topo_nchans(t);
    n->chans = g_new0(pk_chan, nc);
    uint64_t biggest = largest_payload(t, p->packet_bytes);
    for (int c = 0; c < nc; c++) {
        pk_chan *ch = &n->chans[c];
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
    }
    return (ics_net *)n;
}

static void pk_destroy(ics_net *net)
{
    pk_net *n = (pk_net *)net;
    for (int c = 0; c < ics_topo_nchans(n->t); c++)
        g_free(n->chans[c].cal.iv);
    g_free(n->chans);
    g_free(n);
}

static void pk_stats(const ics_net *net, ics_net_stats *out)
{
    *out = ((const pk_net *)net)->stats;
}

static uint64_t pk_chan_bytes(const ics_net *net, int chan)
{
    return ((const pk_net *)net)->chans[chan].bytes;
}

const ics_net_ops ics_net_packet_ops = {
    .name = "packet",
    .create = pk_create,
    .destroy = pk_destroy,
    .send = pk_send,
    .multicast = pk_multicast,
    .reduce = pk_reduce,
    .stats = pk_stats,
    .chan_bytes = pk_chan_bytes,
};
