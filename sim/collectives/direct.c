/* Direct algorithms, as nccl-tests' alltoall_perf and sendrecv_perf drive NCCL's point-to-point
 * path: all-to-all posts a send to every peer at once (size / n bytes each); send/recv sends
 * the whole buffer to the next rank and receives from the previous one. */
#include "collectives/algo.h"

static bool direct_supports(const ics_algo_ctx *c)
{
    return (c->req.op == ICS_COLL_ALLTOALL || c->req.op == ICS_COLL_SENDRECV) && c->n >= 2;
}

/* NCCL's point-to-point step (p2pChunkSize, init.cc): across nodes the net chunk, where every
 * GPU of the communicator is on NVLink the NVLink chunk, else the PCIe chunk (the context holds
 * them, NCCL_P2P_*_CHUNKSIZE and NCCL_BUFFSIZE applied). */
/* True if every rank reaches rank 0 over NVLink only. */
static bool all_nvlink(const ics_algo_ctx *c)
{
    bool nv = true;
    for (int r = 1; r < c->n && nv; r++) {
        ics_route route;
        if (!ics_route_find(c->t, c->ranks[0], c->ranks[r], 0, &route))
            return false;
        for (int p = 0; p < route.n_paths; p++)
            for (int h = 0; h < route.paths[p].n_hops; h++)
                nv &= ics_topo_chan_get(c->t, route.paths[p].chans[h])->kind == ICS_CHAN_NVLINK;
        ics_route_clear(&route);
    }
    return nv;
}

/* One send of `bytes` from rank a to rank b over the context's channels, played as one transfer:
 * the channels' CTAs copy it no faster than their ceiling (its floor) and synchronize once per
 * p2p step of each channel (its tail). A transfer per step would only add events: nothing else
 * waits on a send's steps. Across nodes it starts at `net_start`, after the network plugin's
 * latency, as a ring's network step does (ics_algo_net_msg; 0 on NCCL's own transports): NCCL's
 * model has no point-to-point term, but the message goes through the same plugin. */
static void p2p_send(const ics_algo_ctx *c, ics_sched *s, int a, int b, uint64_t bytes,
                     uint64_t step, uint64_t hash, int start, int net_start)
{
    uint64_t per_step = step * (uint64_t)c->nch;
    uint64_t steps = MAX(1, (bytes + per_step - 1) / per_step);
    if (ics_algo_net_msg(c, a, b) > 0)
        start = net_start;
    int id = ics_sched_send(s, c->ranks[a], c->ranks[b], ics_algo_wire(c, bytes), hash, &start, 1);
    ics_algo_charge(c, s, id, bytes, (uint64_t)c->nch, (ics_time)steps);
}

static void direct_plan(const ics_algo_ctx *c, ics_sched *s)
{
    int n = c->n, start = ics_sched_delay(s, c->base_lat_ps + c->step_lat_ps, NULL, 0);
    bool nodes = false;
    for (int r = 1; r < c->n && !nodes; r++)
        nodes = !ics_algo_same_node(c, r, 0);
    uint64_t step = nodes ? c->p2p_step_net : all_nvlink(c) ? c->p2p_step_nvl : c->p2p_step_pci;
    /* every send across nodes waits the same plugin latency: one delay for all of them */
    int net_start = c->net_msg_ps > 0 ? ics_sched_delay(s, c->net_msg_ps, &start, 1) : start;
    if (c->req.op == ICS_COLL_SENDRECV) {
        for (int r = 0; r < n; r++)
            p2p_send(c, s, r, (r + 1) % n, c->req.size_bytes, step, (uint64_t)r, start, net_start);
        return;
    }
    uint64_t each = c->req.size_bytes / (uint64_t)n;
    for (int r = 0; r < n; r++)
        for (int k = 1; k < n; k++) {
            int peer = (r + k) % n; /* NCCL walks the peers in this order */
            uint64_t bytes =
                c->req.splits ? c->req.splits[(size_t)r * (size_t)n + (size_t)peer] : each;
            if (bytes == 0) /* all-to-allv: nothing for this peer, no send is posted */
                continue;
            p2p_send(c, s, r, peer, bytes, step, (uint64_t)r * (uint64_t)n + (uint64_t)peer, start,
                     net_start);
        }
}

const ics_algo_ops ics_algo_direct = {
    .algo = ICS_ALGO_DIRECT,
    .supports = direct_supports,
    .plan = direct_plan,
};
