/* Channels in series: the links a fluid solver can leave out without changing a share.
 *
 * A PCIe switch port with exactly two neighbours (the DGX H100's pex0-gpu between gpu0 and
 * pex0) is crossed, never ended at, and never turned back at: transfers run between GPUs and
 * NICs, a reduction or multicast ends at a switch with a reduction unit (an NVSwitch or a
 * fabric switch, never a PCIe one), and a route inside a node climbs the PCIe tree to the two
 * ends' common ancestor and down again (route.c), so it enters a port from one neighbour and
 * leaves to the other. So every flow on u -> v also crosses v -> w, and the two channels always
 * carry the same flows. Of such a chain only the channel of least capacity can limit anyone: the
 * others carry the same load on more room, and a max-min fair share is unchanged when they are
 * left out. Chains link up through consecutive ports. Only PCIe switch ports qualify: a NIC is
 * an endpoint of CollNet's reductions (a leg from it starts mid-chain), and GPUs, CPUs and the
 * other switches are endpoints or have more neighbours. A new kind of route that ended or
 * turned at a port would break this: /net/flow/series-exact compares the flow backend's times
 * with and without the chains (params.every_link).
 *
 * The flow backend hands SimGrid each chain once, as its representative (its narrowest
 * channel): SimGrid's solve walks every link of every communication at each completion, so a
 * DGX H100 route across a fat-tree goes from 12 links to 8. */
#include "net/net_series.h"

#include <glib.h>

/* Union-find over channels, by index: the root of c's class. */
static int find(int *parent, int c)
{
    while (parent[c] != c) {
        parent[c] = parent[parent[c]];
        c = parent[c];
    }
    return c;
}

static void join(int *parent, int a, int b)
{
    a = find(parent, a);
    b = find(parent, b);
    if (a != b)
        parent[MAX(a, b)] = MIN(a, b); /* the lower index roots: deterministic */
}

/* If device d is a transit-only port, joins u -> d with d -> w and w -> d with d -> u. */
static void join_port(const ics_topo *t, int d, int *parent)
{
    const ics_topo_dev *dev = ics_topo_dev_get(t, d);
    int n = 0;
    const int *out = ics_topo_out(t, d, &n);
    if (dev->kind != ICS_DEV_PCIE_SWITCH || dev->down || n != 2)
        return;
    const ics_topo_chan *to_u = ics_topo_chan_get(t, out[0]), *to_w = ics_topo_chan_get(t, out[1]);
    if (to_u->dst == to_w->dst) /* two channels to one neighbour: not a chain */
        return;
    join(parent, to_u->reverse, out[1]); /* u -> d -> w */
    join(parent, to_w->reverse, out[0]); /* w -> d -> u */
}

int *ics_net_series_find(const ics_topo *t, const double *cap)
{
    int nchans = ics_topo_nchans(t);
    int *parent = g_new(int, MAX(nchans, 1));
    for (int c = 0; c < nchans; c++)
        parent[c] = c;
    for (int d = 0; d < ics_topo_ndevs(t); d++)
        join_port(t, d, parent);
    /* each class's narrowest channel (the lowest index among equals) */
    int *best = g_new(int, MAX(nchans, 1));
    for (int c = 0; c < nchans; c++)
        best[c] = -1;
    for (int c = 0; c < nchans; c++) {
        int root = find(parent, c);
        if (best[root] < 0 || cap[c] < cap[best[root]])
            best[root] = c;
    }
    for (int c = 0; c < nchans; c++) /* every class's root first: parent is rewritten below */
        parent[c] = find(parent, c);
    for (int c = 0; c < nchans; c++)
        parent[c] = best[parent[c]];
    g_free(best);
    return parent;
}
