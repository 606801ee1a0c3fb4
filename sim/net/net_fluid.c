/* Fluid flows on the packet backend's routes: what the fluid backends (analytic, flow) share.
 * A transfer becomes flows over routed paths; each flow's time on an idle network is the
 * packet backend's closed form (net_common.c), split into a fluid part (the bytes at the path's
 * uncontended packet rate) and a fixed part (latencies, pipeline fill, the last packet), so a
 * backend that only shares bandwidth between fluid parts agrees with the packet backend to the
 * picosecond wherever nothing contends. */
#include "net/net_fluid.h"

/* The fluid part of `bytes` at r0 = payload / max_ser, rounded up: the same function serves
 * the offset and the run, which is what makes an uncontended flow exact. */
ics_time ics_fluid_ps(uint64_t bytes, uint32_t payload, ics_time max_ser)
{
    uint64_t n64; /* in 64 bits when it fits: the same quotient (see ics_time_serialize) */
    if (!__builtin_mul_overflow(bytes, (uint64_t)max_ser, &n64) &&
        !__builtin_add_overflow(n64, (uint64_t)payload - 1, &n64)) {
        uint64_t q = n64 / payload;
        return q < (uint64_t)ICS_TIME_LIMIT ? (ics_time)q : ICS_TIME_LIMIT;
    }
    unsigned __int128 num = (unsigned __int128)bytes * (uint64_t)max_ser;
    unsigned __int128 q = (num + payload - 1) / payload;
    return q < (unsigned __int128)ICS_TIME_LIMIT ? (ics_time)q : ICS_TIME_LIMIT;
}

/* Bytes of path i: its weight's share in whole packets (rounded down, in double, exactly as
 * the packet backend splits), the remainder on the last path. */
static void split_bytes(const ics_topo *t, uint32_t packet_bytes, const ics_route *r,
                        uint64_t bytes, uint64_t *out)
{
    uint64_t left = bytes;
    for (int i = 0; i < r->n_paths; i++) {
        uint32_t payload = ics_net_packet_payload(t, &r->paths[i], packet_bytes);
        uint64_t b = left;
        if (i + 1 < r->n_paths)
            b = MIN(left, (uint64_t)(bytes * r->paths[i].weight / payload) * payload);
        out[i] = b;
        left -= b;
    }
}

/* Appends to parts (ics_fluid_part) the paths of src -> dst's route that carry some of `bytes`. */
void ics_fluid_route_parts(const ics_topo *t, uint32_t packet_bytes, int src, int dst,
                           uint64_t hash, uint64_t bytes, GArray *parts)
{
    ics_route r;
    if (!ics_route_find(t, src, dst, hash, &r))
        g_error("net: no route from %s to %s", ics_topo_dev_label(t, src),
                ics_topo_dev_label(t, dst));
    ics_fluid_parts_of(t, packet_bytes, &r, bytes, parts);
    ics_route_clear(&r);
}

void ics_fluid_parts_of(const ics_topo *t, uint32_t packet_bytes, const ics_route *r,
                        uint64_t bytes, GArray *parts)
{
    uint64_t *share = g_new(uint64_t, MAX(r->n_paths, 1));
    split_bytes(t, packet_bytes, r, bytes, share);
    for (int p = 0; p < r->n_paths; p++)
        if (share[p] > 0) {
            ics_fluid_part q = {.path = r->paths[p], .bytes = share[p]};
            q.payload = ics_net_packet_payload(t, &q.path, packet_bytes);
            g_array_append_val(parts, q);
        }
    g_free(share);
}

/* The path from endpoint `dev` (a GPU or NIC) to switch `sw`: the direct channel, else the
 * route to the endpoint's NIC and that NIC's channel to sw (a fabric switch). */
void ics_fluid_leg_to_switch(const ics_topo *t, int dev, int sw, ics_route_path *out)
{
    *out = (ics_route_path){.weight = 1};
    int c = ics_topo_chan_between(t, dev, sw);
    if (c < 0) {
        bool is_nic = ics_topo_dev_get(t, dev)->kind == ICS_DEV_NIC;
        int nic = is_nic ? dev : ics_route_nic_of_gpu(t, dev);
        ics_route r = {0};
        if (nic < 0 || (c = ics_topo_chan_between(t, nic, sw)) < 0 ||
            (nic != dev && !ics_route_find(t, dev, nic, 0, &r)))
            g_error("net: %s cannot reach switch %s", ics_topo_dev_label(t, dev),
                    ics_topo_dev_label(t, sw));
        if (r.n_paths > 0)
            *out = r.paths[0];
        ics_route_clear(&r);
        g_assert(out->n_hops < ICS_ROUTE_MAX_HOPS);
    }
    out->chans[out->n_hops++] = c;
}

/* The same path walked backwards: sw -> dev. */
void ics_fluid_path_reverse(const ics_topo *t, ics_route_path *p)
{
    for (int i = 0, j = p->n_hops - 1; i <= j; i++, j--) {
        int a = ics_topo_chan_get(t, p->chans[i])->reverse;
        int b = ics_topo_chan_get(t, p->chans[j])->reverse;
        p->chans[i] = b;
        p->chans[j] = a;
    }
}

/* Latencies plus one packet's serialization on every hop: how slow a leg is. */
static ics_time leg_time(const ics_topo *t, const ics_route_path *p, uint32_t payload)
{
    ics_time s = ics_route_path_latency(t, p);
    for (int h = 0; h < p->n_hops; h++)
        s += ics_net_ser(t, p->chans[h], payload);
    return s;
}

static const ics_route_path *slowest_leg(const ics_topo *t, const ics_route_path *legs, int nlegs,
                                         uint32_t payload)
{
    int worst = 0;
    for (int i = 1; i < nlegs; i++)
        if (leg_time(t, &legs[i], payload) > leg_time(t, &legs[worst], payload))
            worst = i;
    return &legs[worst];
}

/* A stage of a packet pipeline: a full and the last packet's time on it, then the latency to
 * the next stage. */
typedef struct {
    ics_time s_full, s_last, lambda;
} fluid_stage;

/* The idle-path closed form of net_common.c over explicit stages, so that a switch's reduction
 * unit can be one of them: npk packets, all but the last full. */
static ics_time tandem_time(const fluid_stage *st, int n_st, uint64_t npk)
{
    ics_time sum_s = 0, sum_lambda = 0, max_s = 0, last_done = 0, lambda_prev = 0;
    for (int h = 0; h < n_st; h++) {
        sum_s += st[h].s_full;
        max_s = MAX(max_s, st[h].s_full);
        ics_time full_done = npk > 1 ? sum_s + sum_lambda + (ics_time)(npk - 2) * max_s : 0;
        ics_time arrival = h == 0 ? 0 : last_done + lambda_prev;
        last_done = MAX(arrival, full_done) + st[h].s_last;
        lambda_prev = st[h].lambda;
        sum_lambda += lambda_prev;
    }
    return last_done + lambda_prev;
}

/* Appends a leg's hops as stages; end_ps: what follows its last channel's latency. */
static int leg_stages(const ics_topo *t, const ics_route_path *p, uint32_t payload, uint32_t last,
                      ics_time end_ps, fluid_stage *out)
{
    for (int h = 0; h < p->n_hops; h++) {
        const ics_topo_chan *c = ics_topo_chan_get(t, p->chans[h]);
        out[h] = (fluid_stage){
            .s_full = ics_net_ser(t, p->chans[h], payload),
            .s_last = ics_net_ser(t, p->chans[h], last),
            .lambda = c->latency_ps +
                      (h + 1 < p->n_hops ? ics_topo_dev_get(t, c->dst)->latency_ps : end_ps)};
    }
    return p->n_hops;
}

/* The op's idle time, as the packet backend's join runs it: the slowest source leg, the
 * reduction unit (every packet once all sources delivered it), the switch's latency, the
 * slowest destination leg. */
ics_time ics_fluid_op_idle_time(const ics_topo *t, const ics_fluid_op *op, uint32_t payload)
{
    uint64_t npk = (op->bytes + payload - 1) / payload;
    uint32_t last = (uint32_t)(op->bytes - (npk - 1) * payload);
    fluid_stage st[2 * ICS_ROUTE_MAX_HOPS + 1];
    ics_time sw_ps = ics_topo_dev_get(t, op->sw)->latency_ps;
    int k = leg_stages(t, slowest_leg(t, op->legs[0], op->nlegs[0], payload), payload, last,
                       op->reduce_bw ? 0 : sw_ps, st);
    if (op->reduce_bw) {
        uint64_t nin = (uint64_t)op->nlegs[0];
        st[k++] = (fluid_stage){.s_full = ics_time_serialize(nin * payload, op->reduce_bw),
                                .s_last = ics_time_serialize(nin * last, op->reduce_bw),
                                .lambda = sw_ps};
    }
    k +=
        leg_stages(t, slowest_leg(t, op->legs[1], op->nlegs[1], payload), payload, last, 0, st + k);
    return tandem_time(st, k, npk);
}
