/* The packet backend: every transfer is cut into packets that cross each hop one at a time.
 * A channel serializes one packet at a time, choosing round-robin among the flows queued at it
 * (output arbitration); a packet may start only if the receiving end has buffer credits for
 * it; the credits come back when the packet leaves that buffer, one link latency later. No
 * packet is ever dropped: a full buffer stalls the sender (back-pressure).
 *
 * Trains: a flow whose whole path carries no other flow advances up to train_bytes at a time
 * in closed form (the tandem pipeline of net.h), reserving each channel for as long as its
 * packets occupy it; at the end of each train it checks again and falls back to packets as
 * soon as another flow shares a channel. Where nothing contends this gives exactly the
 * per-packet result; where something does, the difference is bounded by one train.
 *
 * Invariants: per hop, packets start in order; credits never go negative; every packet
 * started is delivered; every flow's done fires once. */
#include "net.h"
#include "switch/switch.h"

#include <string.h>

#define DEFAULT_TRAIN_BYTES (4u << 20)

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
    ics_time unit_free; /* the reduction unit is busy until then */
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
 * simulation is bound by memory, not arithmetic). Packet counts are 32-bit: a flow is at most
 * 2^32 packets (1 TiB at 256 B). */
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
    bool fed; /* hop 0 is fed by a join, not ready at start */
    int n_hops;
    pk_hop hops[]; /* n_hops of them: flows are many, so only what the path needs */
};

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
    pk_hop *head, *tail;
    uint64_t bytes;
    int active; /* flows routed over this channel and not complete */
    ics_event_id kick_ev;
    bool kick_pending;
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
    hop->ready = (uint32_t)(f->npk - f->committed);
    if (hop->ready == 0)
        return;
    for (int h = 1; h < f->n_hops; h++) /* no train packet waits at a later hop */
        f->hops[h].ready = 0;
    chan_enqueue(hop->ch, hop);
    chan_kick(hop->ch);
}

static void ev_train(ics_engine *e, void *ctx, uint64_t unused)
{
    pk_flow *f = ctx;
    if (path_is_free(f))
        train_commit(f);
    else
        to_packets(f);
}

/* Starts a flow: as a train if its path is free, else as packets. Runs as an event at the
 * send's time, so that every transfer started at the same instant is counted on its channels
 * before any of them decides. */
static void ev_start(ics_engine *e, void *ctx, uint64_t unused)
{
    pk_flow *f = ctx;
    pk_net *n = f->net;
    ics_time now = ics_engine_now(n->e);
    /* into a switch's join, packets must reach it one by one to be pipelined through it */
    if (n->p.per_packet || f->sink || !path_is_free(f)) {
        to_packets(f);
        return;
    }
    /* begin the pipeline late enough that every hop is past any earlier reservation */
    ics_time s[ICS_ROUTE_MAX_HOPS], lambda[ICS_ROUTE_MAX_HOPS], off = 0;
    pipeline_times(f, s, lambda);
    ics_time t0 = now;
    for (int h = 0; h < f->n_hops; h++) {
        t0 = MAX(t0, chan_of(f, h)->busy_until - off);
        off += s[h] + lambda[h];
    }
    f->train_t0 = t0;
    f->train_k0 = 0;
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
    g_assert(f->npk < UINT32_MAX); /* see pk_hop */
    for (int h = 0; h < n_hops; h++) {
        pk_hop *hop = &f->hops[h];
        hop->flow = f;
        hop->h = (uint16_t)h;
        hop->last = h + 1 == n_hops;
        hop->ch = &n->chans[chans[h]];
        hop->npk = (uint32_t)f->npk;
        hop->payload = payload;
        hop->last_payload = f->last_payload;
        hop->wire_full = (uint32_t)ics_net_wire_bytes(n->t, chans[h], payload);
        hop->ser_full = ics_net_ser(n->t, chans[h], payload);
        chan_of(f, h)->active++;
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
        *s_last = MAX(*s_last, hop_ser(hop, hop->npk - 1));
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
 * switch, its reduction unit, out of it) in closed form, exactly what the packets would do. */
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
    ics_time end = ics_engine_now(n->e) + ics_net_tandem_time(3, s_full, s_last, lambda, j->npk);
    uint64_t bytes = (j->npk - 1) * (uint64_t)j->payload + j->last_payload;
    for (int i = 0; i < j->nin + j->nout; i++) {
        pk_flow *f = i < j->nin ? j->in[i] : j->out[i - j->nin];
        pk_chan *c = chan_of(f, 0);
        c->busy_until = MAX(c->busy_until, end); /* reserved: others wait (one train) */
        c->bytes += bytes;
        f->delivered = f->npk;
    }
    n->stats.trains++;
    ics_engine_at(n->e, end, ev_join_done, x, 0);
}

static void ev_join_start(ics_engine *e, void *ctx, uint64_t unused)
{
    pk_xfer *x = ctx;
    pk_join *j = x->join;
    if (!j->net->p.per_packet && join_is_free(j)) {
        join_train(x);
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
    }
    return (ics_net *)n;
}

static void pk_destroy(ics_net *net)
{
    pk_net *n = (pk_net *)net;
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
