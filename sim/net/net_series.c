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
 * DGX H100 route across a fat-tree goes from 12 links to 8. A chain is found when one of its
 * channels is first asked about, by walking through the ports on both sides: a replay makes a
 * network for each memoized collective, and a pass over a 16,384-GPU topology's channels for
 * each was a sixth of a Llama 3 405B step on the flow engine. */
#include "net/net_series.h"

#include <glib.h>

struct ics_net_series {
    const ics_topo *t;
    const double *cap; /* per channel: borrowed */
    int *rep;          /* per channel, its chain's representative + 1; 0: not found yet */
};

ics_net_series *ics_net_series_new(const ics_topo *t, const double *cap)
{
    ics_net_series *s = g_new(ics_net_series, 1);
    /* zeroed pages cost nothing until a chain is found on them */
    *s = (ics_net_series){.t = t, .cap = cap, .rep = g_new0(int, MAX(ics_topo_nchans(t), 1))};
    return s;
}

void ics_net_series_free(ics_net_series *s)
{
    if (!s)
        return;
    g_free(s->rep);
    g_free(s);
}

/* The out-channel of port d that does not lead to `from` (-1 if d is not a port: a PCIe switch
 * up, with exactly two channels out, to two different neighbours). */
static int port_onward(const ics_topo *t, int d, int from)
{
    const ics_topo_dev *dev = ics_topo_dev_get(t, d);
    int n = 0;
    const int *out = ics_topo_out(t, d, &n);
    if (dev->kind != ICS_DEV_PCIE_SWITCH || dev->down || n != 2)
        return -1;
    int a = ics_topo_chan_get(t, out[0])->dst, b = ics_topo_chan_get(t, out[1])->dst;
    if (a == b) /* two channels to one neighbour: not a chain */
        return -1;
    return a == from ? out[1] : b == from ? out[0] : -1;
}

/* The chain through channel c, walked both ways through ports: its narrowest channel (the
 * lowest index among equals), which every member then stands as. */
static int chain_of(ics_net_series *s, int c)
{
    const ics_topo *t = s->t;
    GArray *members = g_array_new(FALSE, FALSE, sizeof(int));
    g_array_append_val(members, c);
    const ics_topo_chan *ch = ics_topo_chan_get(t, c);
    /* (ports in a ring would walk forever; none reach a GPU, but the walk stops anyway) */
    guint most = (guint)ics_topo_nchans(t);
    for (int u = ch->src, v = ch->dst, next;
         members->len <= most && (next = port_onward(t, v, u)) >= 0;) {
        g_array_append_val(members, next); /* forward: out of port v, away from u */
        u = v;
        v = ics_topo_chan_get(t, next)->dst;
    }
    for (int u = ch->src, v = ch->dst, away;
         members->len <= most && (away = port_onward(t, u, v)) >= 0;) {
        int prev = ics_topo_chan_get(t, away)->reverse; /* backward: into port u, towards v */
        g_array_append_val(members, prev);
        v = u;
        u = ics_topo_chan_get(t, prev)->src;
    }
    int best = c;
    for (guint i = 0; i < members->len; i++) {
        int m = g_array_index(members, int, i);
        if (s->cap[m] < s->cap[best] || (s->cap[m] == s->cap[best] && m < best))
            best = m;
    }
    for (guint i = 0; i < members->len; i++)
        s->rep[g_array_index(members, int, i)] = best + 1;
    g_array_free(members, TRUE);
    return best;
}

int ics_net_series_of(ics_net_series *s, int chan)
{
    return s->rep[chan] > 0 ? s->rep[chan] - 1 : chain_of(s, chan);
}
