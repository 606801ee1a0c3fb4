/* Packet accounting every backend shares (see net.h): how big a packet is on a path, what it
 * costs on each hop, and the idle-path closed form. Keeping it in one place is what makes the
 * backends agree exactly where nothing contends. */
#include "net/net.h"

uint32_t ics_net_packet_payload(const ics_topo *t, const ics_route_path *p, uint32_t packet_bytes)
{
    if (packet_bytes > 0)
        return packet_bytes;
    uint32_t best = 0;
    for (int h = 0; h < p->n_hops; h++) {
        const ics_topo_chan *c = ics_topo_chan_get(t, p->chans[h]);
        if (c->standard && (uint32_t)c->standard->max_payload_bytes > best)
            best = (uint32_t)c->standard->max_payload_bytes;
    }
    return best ? best : 4096; /* CPU and socket hops have no standard; never alone in a path */
}

uint64_t ics_net_wire_bytes(const ics_topo *t, int chan, uint64_t payload)
{
    const ics_hw_standard *s = ics_topo_chan_get(t, chan)->standard;
    if (!s || payload == 0)
        return payload;
    uint64_t link_packets = (payload + (uint64_t)s->max_payload_bytes - 1) / s->max_payload_bytes;
    return payload + link_packets * (uint64_t)s->packet_overhead_bytes;
}

ics_time ics_net_ser(const ics_topo *t, int chan, uint64_t payload)
{
    return ics_time_serialize(ics_net_wire_bytes(t, chan, payload),
                              ics_topo_chan_get(t, chan)->bw_bytes_per_s);
}

ics_time ics_net_tandem_time(int nst, const ics_time *s_full, const ics_time *s_last,
                             const ics_time *lambda, uint64_t n)
{
    /* A deterministic tandem, packets all ready at the first stage: with s_h the time of a
     * full packet at stage h and lambda_h the delay before the next stage,
     *   D_h(k) = max(D_{h-1}(k) + lambda_{h-1}, D_h(k-1)) + s_h(k)
     * and for the n-1 equal packets this is sum_{i<=h} s_i + sum_{i<h} lambda_i
     * + (k-1) max_{i<=h} s_i. The last (shorter) packet is then carried stage by stage. */
    if (n == 0 || nst == 0)
        return 0;
    ics_time sum_s = 0, sum_lambda = 0, max_s = 0, last_done = 0;
    /* saturating sums: 2^28 packets of seconds each at a slow lane pass the horizon (time.h) */
    for (int h = 0; h < nst; h++) {
        sum_s = ics_time_add(sum_s, s_full[h]);
        max_s = MAX(max_s, s_full[h]);
        ics_time full_done =
            n > 1 ? ics_time_add(ics_time_add(sum_s, sum_lambda), ics_time_mul(max_s, n - 2)) : 0;
        ics_time arrival = h == 0 ? 0 : ics_time_add(last_done, lambda[h - 1]);
        last_done = ics_time_add(MAX(arrival, full_done), s_last[h]);
        sum_lambda = ics_time_add(sum_lambda, lambda[h]);
    }
    return ics_time_add(last_done, lambda[nst - 1]);
}

ics_time ics_net_idle_path_time(const ics_topo *t, const ics_route_path *p, uint64_t bytes,
                                uint32_t payload)
{
    if (bytes == 0 || p->n_hops == 0)
        return 0;
    uint64_t n = (bytes + payload - 1) / payload;
    uint64_t last = bytes - (n - 1) * payload;
    ics_time s_full[ICS_ROUTE_MAX_HOPS], s_last[ICS_ROUTE_MAX_HOPS], lambda[ICS_ROUTE_MAX_HOPS];
    for (int h = 0; h < p->n_hops; h++) {
        const ics_topo_chan *c = ics_topo_chan_get(t, p->chans[h]);
        s_full[h] = ics_net_ser(t, p->chans[h], payload);
        s_last[h] = ics_net_ser(t, p->chans[h], last);
        /* the channel latency, plus the next device's forwarding latency except at the end */
        lambda[h] = c->latency_ps;
        if (h + 1 < p->n_hops)
            lambda[h] += ics_topo_dev_get(t, c->dst)->latency_ps;
    }
    return ics_net_tandem_time(p->n_hops, s_full, s_last, lambda, n);
}

uint64_t ics_net_reduce_bw(const ics_topo *t, int dev)
{
    const ics_topo_dev *d = ics_topo_dev_get(t, dev);
    if (!d->switch_type || !d->switch_type->sharp)
        return 0;
    if (d->switch_type->reduce_bw_bytes_per_s)
        return d->switch_type->reduce_bw_bytes_per_s;
    /* default: the switch reduces at line rate on every port at once */
    return (uint64_t)d->switch_type->ports * ics_hw_standard_bw(d->switch_type->standard, 1);
}
