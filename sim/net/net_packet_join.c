/* The packet backend's joins: a multicast or reduction at a switch (NVLS, SHARP), as packets,
 * as one closed-form train when uncontended, or in turns. Invariant: a packet leaves the switch
 * only once every input has delivered it; the join is freed with its transfer, once. */
#include "net/net_packet_internal.h"

#include <string.h>

struct ics_pk_join {
    ics_pk_net *net;
    int nin, nout;
    uint64_t *in_delivered; /* packets each input flow has delivered into the switch */
    ics_pk_flow **in;       /* flows into the switch */
    ics_pk_flow **out;      /* flows out of it, fed packet by packet */
    uint32_t payload, last_payload;
    uint64_t npk;
    uint64_t reduced;   /* packets processed by the switch (reduced or copied) */
    uint64_t committed; /* packets moved as trains so far */
    ics_time unit_free; /* the reduction unit is busy until then */
    ics_time bt_end;    /* the last bounded train's delivery */
    uint64_t reduce_bw; /* 0: copy only (multicast) */
    ics_time sw_latency_ps;
};

/* Flow i of the join: its inputs, then its outputs; each is one hop, to or from the switch. */
static ics_pk_flow *join_flow(const ics_pk_join *j, int i)
{
    return i < j->nin ? j->in[i] : j->out[i - j->nin];
}

static ics_pk_chan *join_chan(const ics_pk_join *j, int i)
{
    return join_flow(j, i)->hops[0].ch;
}

/* ---- packet by packet --------------------------------------------------------------------- */

static void ev_join_out(ics_engine *e, void *ctx, uint64_t count)
{
    ics_pk_join *j = ctx;
    for (int i = 0; i < j->nout; i++) {
        ics_pk_flow *f = j->out[i];
        if (f == NULL)
            continue;
        ics_pk_hop *hop = &f->hops[0];
        hop->ready += (uint32_t)count;
        ics_pk_chan_enqueue(hop->ch, hop);
        ics_pk_chan_kick(hop->ch);
    }
}

/* Packets every input has delivered go through the switch: reduced one at a time by its
 * reduction unit (reading one copy per input), or copied at once; then out to every
 * destination after the switch's latency. */
static void join_deliver(void *sink, int in, uint64_t count)
{
    ics_pk_join *j = sink;
    j->in_delivered[in] += count;
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

/* ---- trains and turns --------------------------------------------------------------------- */

/* True if each channel of the op carries only this op's one flow and nothing is queued. */
static bool join_is_free(const ics_pk_join *j)
{
    for (int i = 0; i < j->nin + j->nout; i++) {
        const ics_pk_chan *c = join_chan(j, i);
        if (c->active > 1 || c->head)
            return false;
    }
    return true;
}

/* Slowest full and last packet times over a set of one-hop flows, and their latest latency. */
static void stage_of(ics_pk_flow *const *flows, int nf, ics_time *s_full, ics_time *s_last,
                     ics_time *lat)
{
    *s_full = *s_last = *lat = 0;
    for (int i = 0; i < nf; i++) {
        ics_pk_hop *hop = &flows[i]->hops[0];
        *s_full = MAX(*s_full, hop->ser_full);
        *s_last = MAX(*s_last, ics_pk_hop_ser_last(hop));
        *lat = MAX(*lat, hop->ch->latency_ps);
    }
}

static void ev_join_done(ics_engine *e, void *ctx, uint64_t unused)
{
    ics_pk_xfer *x = ctx;
    ics_pk_join *j = x->join;
    int nin = j->nin, nout = j->nout;
    ics_pk_flow **all = g_new(ics_pk_flow *, nin + nout);
    memcpy(all, j->in, sizeof(ics_pk_flow *) * (size_t)nin);
    memcpy(all + nin, j->out, sizeof(ics_pk_flow *) * (size_t)nout);
    for (int i = 0; i < nin + nout; i++) /* the last one frees x and j */
        ics_pk_flow_finish(all[i]);
    g_free(all);
}

/* An uncontended multicast / reduction moves as one train: a three-stage tandem (into the
 * switch, its reduction unit, out of it) in closed form, exactly what the packets would do.
 * After bounded turns (bt_join), the rest the same way, behind every reservation. */
static void join_train(ics_pk_xfer *x)
{
    ics_pk_join *j = x->join;
    ics_pk_net *n = j->net;
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
        for (int i = 0; i < j->nin + j->nout; i++)
            t0 = MAX(t0, join_chan(j, i)->busy_until - (i < j->nin ? 0 : o2));
    }
    ics_time end = t0 + ics_net_tandem_time(3, s_full, s_last, lambda, left);
    uint64_t bytes = (left - 1) * (uint64_t)j->payload + j->last_payload;
    for (int i = 0; i < j->nin + j->nout; i++) {
        ics_pk_flow *f = join_flow(j, i);
        ics_pk_chan *c = f->hops[0].ch;
        c->busy_until = MAX(c->busy_until, end); /* reserved: others wait (one train) */
        ics_cal_mark(&c->cal, ics_engine_now(n->e), t0, end);
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
 * channel serving it as ics_pk_bt_chan does; the next turn is paced as bt_send (net_packet.c)
 * paces a flow's. */
static void bt_join(ics_pk_xfer *x)
{
    ics_pk_join *j = x->join;
    ics_pk_net *n = j->net;
    ics_time now = ics_engine_now(n->e);
    int nf = j->nin + j->nout;
    uint64_t k = ics_pk_bt_natural(n, j->npk - j->committed, j->npk, j->payload);
    uint64_t natural = k * j->payload, turn = natural;
    for (int i = 0; i < nf; i++)
        turn = ics_pk_bt_limit(join_chan(j, i), now, turn);
    k = MIN(k, MAX(1, turn / j->payload));
    ics_pk_bt_shape sh = ics_pk_bt_shape_of(j->committed, k, j->npk);
    uint64_t bytes = k * (uint64_t)j->payload - (sh.has_last ? j->payload - j->last_payload : 0);
    /* into the switch: a packet is there when every source's copy is */
    ics_pk_bt_span ready = {now, now, now}, in = {0, 0, 0};
    ics_time next = now, o_unit = 0, o_out, slack = 0;
    for (int i = 0; i < j->nin; i++) {
        ics_pk_hop *hop = &j->in[i]->hops[0];
        ics_time s_last = sh.has_last ? ics_pk_hop_ser_last(hop) : hop->ser_full;
        ics_time held;
        ics_pk_bt_span d = ics_pk_bt_chan(hop->ch, now, ready, 0, hop->ser_full, s_last, sh, &held);
        hop->ch->bytes += bytes;
        next = MAX(next, held);
        slack = MAX(slack, hop->ch->buffer_ps); /* the switch's input buffers */
        ics_time lat = hop->ch->latency_ps;
        in = (ics_pk_bt_span){MAX(in.first, d.first + lat), MAX(in.full, d.full + lat),
                              MAX(in.last, d.last + lat)};
        o_unit = MAX(o_unit, (sh.n_full ? hop->ser_full : s_last) + lat);
    }
    /* the reduction unit reads one copy per source; a multicast copies at once */
    ics_pk_bt_span sw = in;
    o_out = o_unit;
    if (j->reduce_bw) {
        uint64_t nin = (uint64_t)j->nin;
        ics_time r_full = ics_time_serialize(j->payload * nin, j->reduce_bw);
        ics_time r_last =
            sh.has_last ? ics_time_serialize(j->last_payload * nin, j->reduce_bw) : r_full;
        ics_time start = MAX(in.first, j->unit_free);
        j->unit_free = start + ics_pk_bt_work(sh, r_full, r_last);
        sw = ics_pk_bt_stage(start, j->unit_free, in, 0, r_full, r_last, sh);
        next = MAX(next, start - o_unit - slack);
        o_out += sh.n_full ? r_full : r_last;
    }
    o_out += j->sw_latency_ps;
    ics_time end = now;
    for (int i = 0; i < j->nout; i++) {
        ics_pk_hop *hop = &j->out[i]->hops[0];
        ics_time s_last = sh.has_last ? ics_pk_hop_ser_last(hop) : hop->ser_full;
        ics_time held;
        ics_pk_bt_span d =
            ics_pk_bt_chan(hop->ch, now, sw, j->sw_latency_ps, hop->ser_full, s_last, sh, &held);
        hop->ch->bytes += bytes;
        next = MAX(next, held - o_out - slack);
        end = MAX(end, d.last + hop->ch->latency_ps);
    }
    for (int i = 0; i < nf; i++)
        ics_pk_bt_claim(join_chan(j, i), now, natural, end);
    j->committed += k;
    j->bt_end = MAX(j->bt_end, end);
    n->stats.trains++;
    if (j->committed < j->npk) {
        ics_engine_at(n->e, next, ev_join_step, x, 0);
        return;
    }
    for (int i = 0; i < nf; i++) {
        ics_pk_flow *f = join_flow(j, i);
        f->delivered = f->npk;
    }
    ics_engine_at(n->e, j->bt_end, ev_join_done, x, 0);
}

static void ev_join_step(ics_engine *e, void *ctx, uint64_t unused)
{
    ics_pk_xfer *x = ctx;
    if (join_is_free(x->join))
        join_train(x);
    else
        bt_join(x);
}

static void ev_join_start(ics_engine *e, void *ctx, uint64_t unused)
{
    ics_pk_xfer *x = ctx;
    ics_pk_join *j = x->join;
    bool free = join_is_free(j);
    if (!j->net->p.per_packet && (free || !j->net->p.per_packet_shared)) {
        ev_join_step(e, x, 0);
        return;
    }
    for (int i = 0; i < j->nin; i++)
        ics_pk_flow_start(j->in[i]);
}

/* ---- the ops ------------------------------------------------------------------------------ */

/* Frees the join once its transfer's last flow is done (ics_pk_xfer.cleanup). */
static void join_free(ics_pk_xfer *x)
{
    ics_pk_join *j = x->join;
    g_free(j->in_delivered);
    g_free(j->in);
    g_free(j->out);
    g_free(j);
}

static void join_op(ics_pk_net *n, const int *srcs, int nsrc, int sw, const int *dsts, int ndst,
                    uint64_t bytes, uint64_t reduce_bw, ics_net_done_fn done, void *ctx,
                    uint64_t tag)
{
    ics_pk_xfer *x = ics_pk_xfer_new(n, done, ctx, tag, -1);
    if (bytes == 0 || nsrc == 0 || ndst == 0) {
        ics_engine_after(n->e, 0, ics_pk_ev_done_now, x, 0);
        return;
    }
    ics_pk_join *j = g_new0(ics_pk_join, 1);
    j->net = n;
    j->nin = nsrc;
    j->nout = ndst;
    j->in_delivered = g_new0(uint64_t, nsrc);
    j->out = g_new0(ics_pk_flow *, ndst);
    j->reduce_bw = reduce_bw;
    j->sw_latency_ps = ics_topo_dev_get(n->t, sw)->latency_ps;
    x->join = j;
    x->cleanup = join_free;
    int c0 = ics_topo_chan_between(n->t, srcs[0], sw);
    g_assert(c0 >= 0); /* NVLS / SHARP sources are wired to the switch */
    ics_route_path p0 = {.n_hops = 1, .chans = {c0}};
    uint32_t payload = ics_net_packet_payload(n->t, &p0, n->p.packet_bytes);
    ics_pk_flow **in = j->in = g_new(ics_pk_flow *, nsrc);
    for (int i = 0; i < nsrc; i++) {
        int c = ics_topo_chan_between(n->t, srcs[i], sw);
        g_assert(c >= 0);
        in[i] = ics_pk_flow_new(n, x, &c, 1, bytes, payload);
        in[i]->deliver = join_deliver;
        in[i]->sink = j;
        in[i]->sink_index = i;
    }
    j->npk = in[0]->npk;
    j->payload = payload;
    j->last_payload = in[0]->last_payload;
    for (int i = 0; i < ndst; i++) {
        int c = ics_topo_chan_between(n->t, sw, dsts[i]);
        g_assert(c >= 0);
        j->out[i] = ics_pk_flow_new(n, x, &c, 1, bytes, payload);
        j->out[i]->fed = true;
    }
    ics_engine_after(n->e, 0, ev_join_start, x, 0);
}

void ics_pk_multicast(ics_net *net, int src, int sw, const int *dsts, int ndst, uint64_t bytes,
                      ics_net_done_fn done, void *ctx, uint64_t tag)
{
    join_op((ics_pk_net *)net, &src, 1, sw, dsts, ndst, bytes, 0, done, ctx, tag);
}

void ics_pk_reduce(ics_net *net, const int *srcs, int nsrc, int sw, const int *dsts, int ndst,
                   uint64_t bytes, ics_net_done_fn done, void *ctx, uint64_t tag)
{
    ics_pk_net *n = (ics_pk_net *)net;
    uint64_t bw = ics_net_reduce_bw(n->t, sw);
    g_assert(bw > 0); /* callers check that the switch reduces (NVLS / SHARP) */
    join_op(n, srcs, nsrc, sw, dsts, ndst, bytes, bw, done, ctx, tag);
}
