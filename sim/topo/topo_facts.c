/* Summary facts of a topology for `icsim topo`: counts, per-device bandwidth, bisection. */
#include "topo/topo_internal.h"

void ics_topo_count_kinds(const ics_topo *t, int counts[ICS_DEV_KIND_COUNT])
{
    for (int k = 0; k < ICS_DEV_KIND_COUNT; k++)
        counts[k] = 0;
    for (int d = 0; d < ics_topo_ndevs(t); d++)
        counts[ics_topo_dev_get(t, d)->kind]++;
}

uint64_t ics_topo_dev_bw(const ics_topo *t, int dev, ics_chan_kind kind, int *width)
{
    int n;
    const int *out = ics_topo_out(t, dev, &n);
    uint64_t bw = 0;
    *width = 0;
    for (int i = 0; i < n; i++) {
        const ics_topo_chan *c = ics_topo_chan_get(t, out[i]);
        if (c->kind != kind)
            continue;
        bw += c->bw_bytes_per_s;
        *width += c->width;
    }
    return bw;
}

/* Total bandwidth, one direction, of the channels from devices of a tier to the tier above
 * (tier 0: NICs to leaves). */
static uint64_t uplink_capacity(const ics_topo *t, int tier)
{
    uint64_t sum = 0;
    for (int c = 0; c < ics_topo_nchans(t); c++) {
        const ics_topo_chan *ch = ics_topo_chan_get(t, c);
        const ics_topo_dev *s = ics_topo_dev_get(t, ch->src), *d = ics_topo_dev_get(t, ch->dst);
        if (ch->kind != ICS_CHAN_NETWORK || d->kind != ICS_DEV_NET_SWITCH)
            continue;
        int src_tier = s->kind == ICS_DEV_NET_SWITCH ? s->tier : 0;
        if (src_tier == tier && d->tier == tier + 1)
            sum += ch->bw_bytes_per_s;
    }
    return sum;
}

uint64_t ics_topo_bisection_bw(const ics_topo *t)
{
    const ics_fattree_plan *p = ics_topo_fattree(t);
    if (!p)
        return 0;
    if (t->dragonfly) {
        /* the groups that hold nodes, cut in two halves: the global links between them; all in
         * one group: the local links between two halves of its switches that hold nodes */
        const ics_hw_fabric *f = ics_hw_fabric_of(ics_topo_hw(t));
        uint64_t link = ics_hw_standard_bw(f->standard, 1);
        int switches = (t->nodes + t->df.switch_nodes - 1) / t->df.switch_nodes;
        int groups = (switches + t->df.group_switches - 1) / t->df.group_switches;
        if (groups >= 2)
            return (uint64_t)(groups / 2) * (uint64_t)((groups + 1) / 2) *
                   (uint64_t)ics_dragonfly_pair_links(&t->df) * link;
        return (uint64_t)(switches / 2) * (uint64_t)((switches + 1) / 2) * link;
    }
    const ics_hw_fabric *f = ics_hw_fabric_of(ics_topo_hw(t));
    uint64_t min = uplink_capacity(t, 0);
    for (int tier = 1; tier < f->tiers; tier++) {
        /* a single leaf (or pod) has nothing above it to cut through */
        if ((tier == 1 && p->leaves == 1) || (tier == 2 && p->pods == 1))
            break;
        min = MIN(min, uplink_capacity(t, tier));
    }
    return min / 2;
}
