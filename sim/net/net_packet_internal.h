/* Shared by the packet backend's files (net_packet.c: packets, trains, turns, sends;
 * net_packet_join.c: multicast and reduction at a switch, built on net_packet.c's flows, which
 * tell it of deliveries through a callback; net_packet_ops.c: the ops table). Not a public
 * header: names carry the ics_pk_ prefix and only those files include it. Invariant: a channel's
 * `active` counts the unfinished flows routed over it, whichever file started them. */
#ifndef ICS_NET_PACKET_INTERNAL_H
#define ICS_NET_PACKET_INTERNAL_H

#include "net/net.h"
#include "net/net_calendar.h"
#include "net/net_routes.h"

typedef struct ics_pk_net ics_pk_net;
typedef struct ics_pk_flow ics_pk_flow;
typedef struct ics_pk_chan ics_pk_chan;
/* A multicast / reduce at a switch: its input flows, the switch, its output flows
 * (net_packet_join.c). */
typedef struct ics_pk_join ics_pk_join;

/* The legs of one batch (ics_pk_batch): they take turns as one flow of all their bytes would,
 * so that the batch, not each leg, ends within a turn of its share. */
typedef struct ics_pk_group ics_pk_group;
struct ics_pk_group {
    uint64_t bytes, left; /* the stream's payload; what is not yet committed in turns */
    int flows;            /* its flows not yet finished */
    ics_pk_flow *starting, *last_starting; /* its flows to start, by start_next, in order */
    ics_pk_group *prev, *next;
};

/* A transfer: one send's flows (one per path), or a join's. */
typedef struct ics_pk_xfer ics_pk_xfer;
struct ics_pk_xfer {
    ics_pk_net *net;
    ics_net_done_fn done;
    void *ctx;
    uint64_t tag;
    int pending;                     /* flows still running */
    ics_pk_join *join;               /* the join whose flows these are, or NULL */
    void (*cleanup)(ics_pk_xfer *x); /* called once the last flow is done, before done() */
    ics_pk_xfer *prev, *next;        /* the backend's transfers not yet done, for destroy */
    ics_pk_flow *room;               /* unused room for a flow of room_hops, allocated with the
                                        transfer (ics_pk_xfer_new), or NULL */
    int room_hops;
};

/* Where a flow's packets go once delivered, when something downstream waits for them packet by
 * packet (a switch's join: htsim's packet sink): deliver(sink, index, count) runs at each
 * delivery of count packets. */
typedef void (*ics_pk_deliver_fn)(void *sink, int index, uint64_t count);

/* A flow's state at hop h: the device before channel h. One cache line: the per-packet
 * handlers touch only this, not the flow (with hundreds of thousands of flows in flight the
 * simulation is bound by memory, not arithmetic). Its packet counts are 32-bit and serve the
 * per-packet machinery only, which takes flows of fewer than 2^32 packets (net_packet.c:
 * to_packets); trains and turns count in the flow's 64-bit fields, so a user's 8 TiB send (2^35
 * packets) runs. */
typedef struct ics_pk_hop {
    ics_pk_flow *flow;
    struct ics_pk_hop *next; /* round-robin queue of the channel */
    ics_pk_chan *ch;         /* the channel of this hop */
    ics_time ser_full;       /* serialization of a full packet on this hop */
    uint32_t ready;          /* packets at the device, not yet started on the channel */
    uint32_t started;        /* packets started on the channel */
    uint32_t done;           /* packets whose serialization on the channel ended */
    uint32_t npk;            /* the flow's packets */
    uint32_t wire_full;      /* wire bytes of a full packet on this hop */
    uint32_t payload, last_payload;
    uint16_t h;
    bool queued;
    bool last; /* the final hop of the path */
} ics_pk_hop;

/* A flow: one path's share of a transfer, or one input or output of a join (one hop). */
struct ics_pk_flow {
    ics_pk_net *net;
    ics_pk_xfer *x;
    ics_pk_deliver_fn deliver; /* NULL: a plain send, its packets end at the destination */
    void *sink;                /* deliver's first argument */
    int sink_index;            /* which input of the sink */
    uint64_t npk;              /* packets */
    ics_pk_group *group;       /* the batch whose leg this is, or NULL */
    uint32_t payload, last_payload;
    uint64_t delivered;
    uint64_t committed; /* packets sent as trains so far */
    ics_time train_t0;  /* start of the current train pipeline */
    uint64_t train_k0;  /* packets committed before the current pipeline began */
    ics_event_id train_ev;
    uint64_t bt_undelivered;  /* packets of bounded trains whose delivery is not yet scheduled */
    ics_time bt_deliver_at;   /* the latest delivery among them */
    bool bounded;             /* the last train was bounded: a closed-form pipeline restarts */
    bool fed;                 /* hop 0 is fed by a join, not ready at start */
    bool in_xfer;             /* lives in its transfer's room: freed with it */
    ics_pk_flow *prev, *next; /* the backend's unfinished flows, for destroy */
    ics_pk_flow *start_next;  /* the next of its batch's flows to start (ev_start_batch) */
    int n_hops;
    ics_pk_hop hops[]; /* n_hops of them: flows are many, so only what the path needs */
};

struct ics_pk_chan {
    ics_pk_net *net;
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
    ics_pk_hop *head, *tail;
    uint64_t bytes;
    int active; /* flows routed over this channel and not complete */
    ics_event_id kick_ev;
    bool kick_pending;
    ics_cal cal;         /* what bounded and closed-form trains hold of it (owned) */
    uint64_t turn_bytes; /* the smallest turn a flow of this channel takes, ... */
    ics_time turn_until; /* ... valid until that flow's train is delivered */
};

struct ics_pk_net {
    ics_net_base base;
    const ics_topo *t;
    ics_engine *e;
    ics_net_params p;
    ics_pk_chan *chans;
    ics_net_routes *routes; /* owned: each (source, destination, hash)'s route, built once */
    ics_net_stats stats;
    /* what is under way, freed by destroy when a run stops early (the engine's horizon) */
    ics_pk_xfer *live_xfers;
    ics_pk_flow *live_flows; /* but those in their transfer's room (in_xfer) */
    ics_pk_group *live_groups;
    ics_pk_group *joining; /* the group of the flows being created (ics_pk_batch), or NULL */
};

/* ---- packets, flows, transfers (net_packet.c) ---- */

/* Serialization time of the flow's last packet on a hop. */
ics_time ics_pk_hop_ser_last(const ics_pk_hop *hop);
/* Queues a hop with ready packets at its channel (round-robin); once, however often called. */
void ics_pk_chan_enqueue(ics_pk_chan *c, ics_pk_hop *hop);
/* Starts the next packet on the channel if it is idle and has credits. */
void ics_pk_chan_kick(ics_pk_chan *c);

/* A transfer with no flows yet (transfer full: it frees itself, and its join, once its last
 * flow is done). done(ctx, tag) fires then. room_hops >= 0: with room for its first flow, of
 * that many hops, in the same allocation (a send's one path: one malloc, not two). */
ics_pk_xfer *ics_pk_xfer_new(ics_pk_net *n, ics_net_done_fn done, void *ctx, uint64_t tag,
                             int room_hops);
/* An event handler (ctx: a ics_pk_xfer with no flows): the transfer is done now. */
void ics_pk_ev_done_now(ics_engine *e, void *ctx, uint64_t unused);
/* A flow of x over channels chans[0 .. n_hops) carrying bytes (> 0) in packets of payload;
 * counted on its channels (transfer none: x's, freed by ics_pk_flow_finish). */
ics_pk_flow *ics_pk_flow_new(ics_pk_net *n, ics_pk_xfer *x, const int *chans, int n_hops,
                             uint64_t bytes, uint32_t payload);
/* Starts a flow at the current time, unless it is fed by a join. */
void ics_pk_flow_start(ics_pk_flow *f);
/* Ends a flow: uncounts it from its channels, frees it, and tells its transfer. */
void ics_pk_flow_finish(ics_pk_flow *f);

/* ---- turns (bounded trains): flows that share a channel (net_packet.c) ---- */

/* A train's departures from one stage (a channel, a reduction unit): its first packet's, its
 * last full packet's, its last packet's. In the max-plus tandem a train's departure times are
 * convex in the packet index, so these three carry it through the next stage exactly. */
typedef struct {
    ics_time first, full, last;
} ics_pk_bt_span;

/* A train: n_full full packets, then the flow's last (possibly shorter) packet if has_last. */
typedef struct {
    uint64_t n_full;
    bool has_last;
} ics_pk_bt_shape;

/* The shape of a turn of k packets after `committed` of npk. */
ics_pk_bt_shape ics_pk_bt_shape_of(uint64_t committed, uint64_t k, uint64_t npk);

/* ics_pk_bt_work, ics_pk_bt_stage and ics_pk_bt_chan run at every hop of every turn, so they are
 * inline here: called across files, their struct arguments went through memory (8% more
 * instructions in a 64-GPU all-to-all). */

/* A train's service time at a stage taking s_full per full packet, s_last for the last. */
static inline ics_time ics_pk_bt_work(ics_pk_bt_shape sh, ics_time s_full, ics_time s_last)
{
    return (ics_time)sh.n_full * s_full + (sh.has_last ? s_last : 0);
}

/* Carries a train through a stage that serves its packets from `start` on, the last at
 * `finish`: packets arriving `lambda` after `in`'s departures, taking s_full (s_last for the
 * flow's last) each. The first departs one packet's service after `start`; the last full one
 * at the later of its arrival plus its service and `finish` less the last packet's; the last
 * at the later of its arrival plus its service and the last full one's departure plus its. */
static inline ics_pk_bt_span ics_pk_bt_stage(ics_time start, ics_time finish, ics_pk_bt_span in,
                                             ics_time lambda, ics_time s_full, ics_time s_last,
                                             ics_pk_bt_shape sh)
{
    ics_pk_bt_span out;
    out.first = start + (sh.n_full ? s_full : s_last);
    out.full =
        sh.n_full ? MAX(in.full + lambda + s_full, finish - (sh.has_last ? s_last : 0)) : start;
    out.last = sh.has_last ? MAX(in.last + lambda + s_last, out.full + s_last) : out.full;
    return out;
}

/* A channel serving a turn: in its calendar's free time from the turn's first arrival on, for
 * as long as its packets take (ics_cal_serve), which sets its last departures and *held (when
 * the channel starts on it). Its first packet, as round-robin arbitration would have it, leaves
 * after at most one packet of each flow on the channel, the rest spread until the finish;
 * where the turn arrives slower than the channel serves (a slower hop or a turn upstream), the
 * calendar's later free time goes to the turns behind it, as interleaved packets would. */
static inline ics_pk_bt_span ics_pk_bt_chan(ics_pk_chan *c, ics_time now, ics_pk_bt_span in,
                                            ics_time lambda, ics_time s_full, ics_time s_last,
                                            ics_pk_bt_shape sh, ics_time *held)
{
    ics_time finish, arrive = in.first + lambda;
    *held = ics_cal_serve(&c->cal, now, arrive, ics_pk_bt_work(sh, s_full, s_last), &finish);
    c->busy_until = MAX(c->busy_until, finish);
    ics_time m_s = (ics_time)c->active * s_full, k = (ics_time)(sh.n_full + sh.has_last);
    ics_time first = MIN(*held, MAX(arrive + m_s, finish - (k - 1) * m_s));
    return ics_pk_bt_stage(first, finish, in, lambda, s_full, s_last, sh);
}

/* The packets of a flow's next turn, `left` of npk to go, before ics_pk_bt_limit. */
uint64_t ics_pk_bt_natural(const ics_pk_net *n, uint64_t left, uint64_t npk, uint32_t payload);
/* A turn of `bytes` cut to the shortest turn a flow of channel c takes now. */
uint64_t ics_pk_bt_limit(const ics_pk_chan *c, ics_time now, uint64_t bytes);
/* Records a turn of `bytes` (its natural length) on c, delivered at `until`. */
void ics_pk_bt_claim(ics_pk_chan *c, ics_time now, uint64_t bytes, ics_time until);

/* ---- the ops of net.h (net_packet_ops.c lists them) ---- */

/* net_packet.c: the network, its sends and its counters. */
ics_net *ics_pk_create(const ics_topo *t, ics_engine *e, const ics_net_params *p);
void ics_pk_destroy(ics_net *net);
void ics_pk_send(ics_net *net, const ics_net_xfer *xf);
void ics_pk_batch(ics_net *net, const ics_net_leg *legs, int nlegs, ics_net_done_fn done, void *ctx,
                  uint64_t tag);
void ics_pk_stats(const ics_net *net, ics_net_stats *out);
uint64_t ics_pk_chan_bytes(const ics_net *net, int chan);
/* net_packet_join.c: multicast and reduction at a switch, one join each, its flows created
 * and started now. */
void ics_pk_multicast(ics_net *net, int src, int sw, const int *dsts, int ndst, uint64_t bytes,
                      ics_net_done_fn done, void *ctx, uint64_t tag);
void ics_pk_reduce(ics_net *net, const int *srcs, int nsrc, int sw, const int *dsts, int ndst,
                   uint64_t bytes, ics_net_done_fn done, void *ctx, uint64_t tag);

#endif
