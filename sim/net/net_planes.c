/* NVLink planes: a GPU's links to the switches of one NVSwitch domain, one link to a fluid solver.
 *
 * A DGX H100's GPU has 18 NVLinks, bonded 4/5/5/4 to its 4 NVSwitch chips; a GB200 NVL72's GPU
 * has one to each of 18 chips. A route between two GPUs of the domain is one path per chip,
 * weighted by the source's bond width (topo.h, "Routes"): each chip is a plane that carries the
 * same share of every transfer. So on plane k, with w_k the width of a GPU's bond to chip k and
 * W the sum over the chips, every flow f between GPUs of the domain loads the GPU's channel to
 * chip k with (w_k / W) x rate_f, whose capacity is (w_k / W) x C with C the GPU's channels'
 * summed capacity: each plane's constraint is the same inequality, sum of rates <= C, scaled.
 * A max-min fair share is then unchanged when the planes are one channel of capacity C, and a
 * transfer's paths, one per plane, one path over it. The fluid solver's work falls with the
 * links: 8 channels per GPU hop on a DGX H100 become 2, 36 on a GB200 NVL72.
 *
 * That holds when every flow crossing a plane crosses them all in proportion, which the routes
 * give when the domain is symmetric:
 *   - every GPU of the domain is bonded to every switch of it, with the same width to a given
 *     switch for every GPU, both ways (a GPU's share of plane k is then also its destination's
 *     link's share of the destination's capacity);
 *   - a switch's bonds all have the same bandwidth per link and standard (so a bond's capacity
 *     is its width times one rate: the shares are the capacities' shares);
 *   - the switches' NVLinks lead to the domain's GPUs only (no switch-to-switch trunk that a
 *     route from another domain could cross on one plane, as on a DGX-2).
 * A failed link or lane (topo_fail.c) breaks the symmetry and its domain is left as planes.
 * What the routes do not give: an NVLS reduction or multicast at one chip loads that plane
 * alone (nvls.c splits the bytes over the chips by width, but each chip's reduction runs at its
 * own rate). A network where one may run must not merge planes (ics_net_params.merge_planes).
 *
 * Like net_series.c, a domain is found when one of its channels is first asked about: networks
 * are made per memoized collective, and a pass over every channel for each would cost more than
 * the collective on 16,384 GPUs. */
#include "net/net_planes.h"

#include <glib.h>

struct ics_net_planes {
    const ics_topo *t;
    int *rep;    /* per channel: its bundle's channel + 1; 0: not asked yet */
    int *width;  /* per bundle's channel: the bundle's links */
    int8_t *sym; /* per device: 1 a switch of a symmetric domain, -1 not one, 0 not known yet */
};

ics_net_planes *ics_net_planes_new(const ics_topo *t)
{
    ics_net_planes *p = g_new(ics_net_planes, 1);
    /* zeroed pages cost nothing until a domain is found on them */
    *p = (ics_net_planes){.t = t,
                          .rep = g_new0(int, MAX(ics_topo_nchans(t), 1)),
                          .width = g_new0(int, MAX(ics_topo_nchans(t), 1)),
                          .sym = g_new0(int8_t, MAX(ics_topo_ndevs(t), 1))};
    return p;
}

void ics_net_planes_free(ics_net_planes *p)
{
    if (!p)
        return;
    g_free(p->rep);
    g_free(p->width);
    g_free(p->sym);
    g_free(p);
}

static gint by_int(gconstpointer a, gconstpointer b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

static bool is_nvlink_to(const ics_topo *t, int c, ics_dev_kind kind)
{
    const ics_topo_chan *ch = ics_topo_chan_get(t, c);
    return ch->kind == ICS_CHAN_NVLINK && ics_topo_dev_get(t, ch->dst)->kind == kind;
}

/* The domain around switch sw: its GPUs (sorted) and switches (sorted), closed under "bonded
 * to". False as soon as a switch has an NVLink to anything but a GPU. */
static bool domain_of(const ics_topo *t, int sw, GArray *gpus, GArray *sws)
{
    GHashTable *seen = g_hash_table_new(NULL, NULL);
    GArray *todo = g_array_new(FALSE, FALSE, sizeof(int));
    g_array_append_val(todo, sw);
    g_hash_table_add(seen, GINT_TO_POINTER(sw + 1));
    bool ok = true;
    for (guint i = 0; ok && i < todo->len; i++) {
        int d = g_array_index(todo, int, i), n;
        bool is_sw = ics_topo_dev_get(t, d)->kind == ICS_DEV_NVSWITCH;
        g_array_append_val(is_sw ? sws : gpus, d);
        const int *out = ics_topo_out(t, d, &n);
        for (int j = 0; ok && j < n; j++) {
            const ics_topo_chan *ch = ics_topo_chan_get(t, out[j]);
            if (ch->kind != ICS_CHAN_NVLINK)
                continue;
            ics_dev_kind k = ics_topo_dev_get(t, ch->dst)->kind;
            if (is_sw && k != ICS_DEV_GPU)
                ok = false; /* a trunk to another switch */
            else if ((is_sw || k == ICS_DEV_NVSWITCH) &&
                     g_hash_table_add(seen, GINT_TO_POINTER(ch->dst + 1)))
                g_array_append_val(todo, ch->dst);
        }
    }
    g_array_free(todo, TRUE);
    g_hash_table_destroy(seen);
    g_array_sort(gpus, by_int);
    g_array_sort(sws, by_int);
    return ok;
}

/* Whether channel c matches the reference bond ref: width, rate and standard. */
static bool same_bond(const ics_topo_chan *c, const ics_topo_chan *ref)
{
    return c->width == ref->width && c->bw_bytes_per_s == ref->bw_bytes_per_s &&
           c->standard == ref->standard;
}

/* Whether the domain is symmetric (see the top of the file); fills bonds[g][s], the channel
 * from the g-th GPU to the s-th switch. */
static bool symmetric(const ics_topo *t, const GArray *gpus, const GArray *sws, int *bonds)
{
    int ng = (int)gpus->len, ns = (int)sws->len;
    if (ng < 2 || ns < 2)
        return false; /* one plane: nothing to merge */
    for (int g = 0; g < ng; g++) {
        int dev = g_array_index(gpus, int, g), n, found = 0;
        const int *out = ics_topo_out(t, dev, &n);
        for (int s = 0; s < ns; s++)
            bonds[g * ns + s] = -1;
        for (int j = 0; j < n; j++) {
            if (!is_nvlink_to(t, out[j], ICS_DEV_NVSWITCH))
                continue;
            int sw = ics_topo_chan_get(t, out[j])->dst, s = 0;
            while (s < ns && g_array_index(sws, int, s) != sw)
                s++;
            if (s == ns || bonds[g * ns + s] >= 0)
                return false; /* (closed domain: always found; one bond per pair) */
            bonds[g * ns + s] = out[j];
            found++;
        }
        if (found != ns)
            return false; /* not bonded to every switch (a link down) */
    }
    const ics_topo_chan *first = ics_topo_chan_get(t, bonds[0]);
    for (int s = 0; s < ns; s++) {
        const ics_topo_chan *ref = ics_topo_chan_get(t, bonds[s]);
        /* one rate per link across the switches: capacities in proportion to widths */
        if (ref->standard != first->standard || ref->bw_bytes_per_s * (uint64_t)first->width !=
                                                    first->bw_bytes_per_s * (uint64_t)ref->width)
            return false;
        for (int g = 0; g < ng; g++) {
            const ics_topo_chan *c = ics_topo_chan_get(t, bonds[g * ns + s]);
            if (!same_bond(c, ref) || !same_bond(ics_topo_chan_get(t, c->reverse), ref))
                return false;
        }
    }
    return true;
}

/* Settles the domain around switch sw: each of its channels stands for itself, or for its GPU's
 * first channel that way. */
static void settle(ics_net_planes *p, int sw)
{
    const ics_topo *t = p->t;
    GArray *gpus = g_array_new(FALSE, FALSE, sizeof(int)),
           *sws = g_array_new(FALSE, FALSE, sizeof(int));
    bool closed = domain_of(t, sw, gpus, sws);
    int ng = (int)gpus->len, ns = (int)sws->len;
    int *bonds = g_new(int, MAX(ng * ns, 1));
    bool sym = closed && symmetric(t, gpus, sws, bonds);
    for (int s = 0; s < ns; s++)
        p->sym[g_array_index(sws, int, s)] = sym ? 1 : -1;
    for (int g = 0; sym && g < ng; g++) {
        int up = bonds[g * ns], down = ics_topo_chan_get(t, up)->reverse, links = 0;
        for (int s = 0; s < ns; s++) { /* the lowest channel each way */
            up = MIN(up, bonds[g * ns + s]);
            down = MIN(down, ics_topo_chan_get(t, bonds[g * ns + s])->reverse);
            links += ics_topo_chan_get(t, bonds[g * ns + s])->width;
        }
        p->width[up] = p->width[down] = links;
        for (int s = 0; s < ns; s++) {
            int c = bonds[g * ns + s];
            p->rep[c] = up + 1;
            p->rep[ics_topo_chan_get(t, c)->reverse] = down + 1;
        }
    }
    g_free(bonds);
    g_array_free(gpus, TRUE);
    g_array_free(sws, TRUE);
}

/* The NVSwitch at either end of channel c, or -1. */
static int switch_of(const ics_topo *t, int c)
{
    const ics_topo_chan *ch = ics_topo_chan_get(t, c);
    if (ch->kind != ICS_CHAN_NVLINK)
        return -1;
    if (ics_topo_dev_get(t, ch->dst)->kind == ICS_DEV_NVSWITCH)
        return ch->dst;
    return ics_topo_dev_get(t, ch->src)->kind == ICS_DEV_NVSWITCH ? ch->src : -1;
}

int ics_net_planes_of(ics_net_planes *p, int chan)
{
    if (p->rep[chan] > 0)
        return p->rep[chan] - 1;
    int sw = switch_of(p->t, chan);
    if (sw >= 0 && p->sym[sw] == 0)
        settle(p, sw);
    if (p->rep[chan] == 0) /* not in a symmetric domain */
        p->rep[chan] = chan + 1;
    return p->rep[chan] - 1;
}

int ics_net_planes_width(const ics_net_planes *p, int rep)
{
    return p->width[rep];
}

bool ics_net_planes_merges_at(ics_net_planes *p, int dev)
{
    if (ics_topo_dev_get(p->t, dev)->kind != ICS_DEV_NVSWITCH)
        return false;
    if (p->sym[dev] == 0)
        settle(p, dev);
    return p->sym[dev] > 0;
}
