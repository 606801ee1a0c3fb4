/* NVLS all-reduce (NVLink SHARP, NVSwitch gen3+): each GPU pushes its data into the switches,
 * which reduce it and multicast the result back, so every byte crosses a GPU's NVLinks once
 * up and once down instead of 2(n-1)/n times each way. The data is split over the NVSwitches
 * in proportion to each GPU's links to them (5/5/4/4 on DGX H100). */
#include "algo.h"

/* One op per switch: the switch pipelines packet by packet anyway (net.h), and ops that share a
 * GPU's bond would only compete with each other. */
#define NVLS_SLICES 1

/* The NVLS switches rank 0 is wired to, and its link count to each; 0 if a rank lacks one. */
static int nvls_switches(const ics_algo_ctx *c, int *sw, int *links, int max)
{
    int n = 0, deg;
    const int *out = ics_topo_out(c->t, c->ranks[0], &deg);
    for (int i = 0; i < deg && n < max; i++) {
        const ics_topo_chan *ch = ics_topo_chan_get(c->t, out[i]);
        const ics_topo_dev *d = ics_topo_dev_get(c->t, ch->dst);
        if (d->kind != ICS_DEV_NVSWITCH || !d->switch_type || !d->switch_type->sharp)
            continue;
        for (int r = 1; r < c->n; r++)
            if (ics_topo_chan_between(c->t, c->ranks[r], ch->dst) < 0)
                return 0;
        sw[n] = ch->dst;
        links[n++] = ch->width;
    }
    return n;
}

static bool nvls_supports(const ics_algo_ctx *c)
{
    int sw[64], links[64];
    return c->req.op == ICS_COLL_ALL_REDUCE && c->n >= 2 && nvls_switches(c, sw, links, 64) > 0;
}

static void nvls_plan(const ics_algo_ctx *c, ics_sched *s)
{
    int sw[64], links[64];
    int nsw = nvls_switches(c, sw, links, 64), total = 0;
    for (int j = 0; j < nsw; j++)
        total += links[j];
    int start = ics_sched_delay(s, c->base_lat_ps + c->step_lat_ps, NULL, 0);
    uint64_t left = c->req.size_bytes;
    for (int j = 0; j < nsw; j++) {
        uint64_t share =
            j + 1 < nsw ? c->req.size_bytes * (uint64_t)links[j] / (uint64_t)total : left;
        left -= share;
        for (int k = 0; k < NVLS_SLICES; k++) {
            uint64_t each = share / NVLS_SLICES;
            uint64_t bytes = k + 1 < NVLS_SLICES ? each : share - each * (NVLS_SLICES - 1);
            if (bytes > 0)
                ics_sched_reduce(s, c->ranks, c->n, sw[j], ics_algo_wire(c, bytes), &start, 1);
        }
    }
}

const ics_algo_ops ics_algo_nvls = {
    .algo = ICS_ALGO_NVLS,
    .supports = nvls_supports,
    .plan = nvls_plan,
};
