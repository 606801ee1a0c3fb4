/* NVLS all-reduce (NVLink SHARP, NVSwitch gen3+): each GPU pushes its data into the switches,
 * which reduce it and multicast the result back, so every byte crosses a GPU's NVLinks once
 * up and once down instead of 2(n-1)/n times each way. The data is split over the NVSwitches
 * in proportion to each GPU's links to them (5/5/4/4 on DGX H100). */
#include "collectives/algo.h"

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

#define NVLS_MAX_ITERS 4096

/* NCCL's NVLS chunk (enqueue.cc calcCollChunking): a Simple step (an eighth of NCCL_BUFFSIZE)
 * at most NCCL_NVLS_CHUNKSIZE (128 KiB), cut for calls that would otherwise give each of the
 * channel x head pairs few chunks: to 64 KiB below 64, 32 KiB below 8, 16 KiB below 2 chunks
 * each. */
static uint64_t nvls_chunk(const ics_algo_ctx *c, uint64_t bytes, uint64_t ops)
{
    uint64_t chunk = MIN(ics_algo_simple_step(c), c->nvls_chunk ? c->nvls_chunk : 128 * 1024);
    if (bytes < 64 * ops * chunk && chunk > 65536)
        chunk = 65536;
    if (bytes < 8 * ops * chunk && chunk > 32768)
        chunk = 32768;
    if (bytes < 2 * ops * chunk && chunk > 16384)
        chunk = 16384;
    return MAX(chunk, 1);
}

/* NCCL's NVLS kernel runs three groups of warps in each channel's CTA, one iteration after
 * another: scatter (copy a chunk per head of the user's buffer into the NVLS buffer), reduce
 * (multimem load-reduce of this GPU's head chunk through the switches, multimem store of the sum
 * to every GPU), gather (copy the results out). The groups pipeline over iterations; the channels
 * run alike, so they are played together: an iteration is every channel's chunk per head. Copies
 * move at the CTAs' ceiling; the reduction step pays the switch traffic and, after it, the
 * synchronization of its two hand-offs (scatter to reduce, reduce to gather). */
static void nvls_plan(const ics_algo_ctx *c, ics_sched *s)
{
    int sw[64], links[64];
    int nsw = nvls_switches(c, sw, links, 64), total = 0;
    for (int j = 0; j < nsw; j++)
        total += links[j];
    uint64_t size = c->req.size_bytes, heads = (uint64_t)c->n, nch = (uint64_t)c->nch;
    uint64_t per_iter = nch * heads * nvls_chunk(c, size, nch * heads);
    uint64_t nccl_iters = MAX(1, (size + per_iter - 1) / per_iter);
    /* past NVLS_MAX_ITERS a simulated iteration stands for several of NCCL's: it carries their
     * bytes and pays their syncs */
    uint64_t group = (nccl_iters + NVLS_MAX_ITERS - 1) / NVLS_MAX_ITERS;
    per_iter *= group;
    uint64_t iters = (size + per_iter - 1) / per_iter;
    uint64_t cta = c->cta_bytes_per_s * nch;
    int start = ics_sched_delay(s, c->base_lat_ps + c->step_lat_ps, NULL, 0);
    int scatter = -1, gather = -1, *reduce = g_new(int, nsw), nred = 0;
    for (uint64_t i = 0; i < iters; i++) {
        uint64_t bytes = MIN(per_iter, size - i * per_iter);
        ics_time copy = cta ? ics_time_serialize(bytes, cta) : 0;
        int deps[66] = {start, scatter}, nd = scatter >= 0 ? 2 : 1;
        scatter = ics_sched_delay(s, copy, deps, nd);
        /* the reduction of this iteration after its scatter and the previous reduction */
        deps[0] = scatter;
        nd = 1;
        for (int j = 0; j < nred; j++)
            deps[nd++] = reduce[j];
        uint64_t left = bytes;
        nred = 0;
        for (int j = 0; j < nsw; j++) {
            uint64_t share = j + 1 < nsw ? bytes * (uint64_t)links[j] / (uint64_t)total : left;
            left -= share;
            if (share == 0)
                continue;
            int id = ics_sched_reduce(s, c->ranks, c->n, sw[j], ics_algo_wire(c, share), deps, nd);
            ics_sched_set_tail(s, id, 2 * c->sync_ps * (ics_time)group);
            reduce[nred++] = id;
        }
        /* the gather of this iteration after its reduction and the previous gather */
        nd = 0;
        for (int j = 0; j < nred; j++)
            deps[nd++] = reduce[j];
        if (gather >= 0)
            deps[nd++] = gather;
        gather = ics_sched_delay(s, copy, deps, nd);
    }
    g_free(reduce);
}

const ics_algo_ops ics_algo_nvls = {
    .algo = ICS_ALGO_NVLS,
    .supports = nvls_supports,
    .plan = nvls_plan,
};
