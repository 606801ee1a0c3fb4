/* The tuner: picks algorithm, protocol and channels per call the way NCCL does
 * (src/graph/tuning.cc): time = base latency + steps x per-hop latency + bytes / bandwidth, the
 * smallest wins unless NCCL_ALGO / NCCL_PROTO force a choice. Latencies and bandwidth factors
 * are NCCL's own published constants (tuner_nccl.c, DOMAIN.md); the bandwidth of a ring is read
 * off our topology. It also prices a chosen combination for the simulation: what a protocol
 * carries per wire byte, what NCCL's kernels achieve per NVLink, what a channel costs. */
#include "collectives/ring_order.h"
#include "collectives/tuner_internal.h"

#include <math.h>

static int link_class(const ics_topo *t, int a, int b)
{
    ics_route r;
    int cls = 0;
    if (!ics_route_find(t, a, b, 0, &r))
        return 2;
    for (int p = 0; p < r.n_paths; p++)
        for (int h = 0; h < r.paths[p].n_hops; h++) {
            ics_chan_kind k = ics_topo_chan_get(t, r.paths[p].chans[h])->kind;
            cls = MAX(cls, k == ICS_CHAN_NVLINK ? 0 : (k == ICS_CHAN_NETWORK ? 2 : 1));
        }
    ics_route_clear(&r);
    return cls;
}

/* The bandwidth of a ring, one direction: the slowest neighbour-to-neighbour route, each
 * route's paths added (NVSwitch striping). */
static double ring_gbps(const ics_topo *t, const int *ranks, int n)
{
    double worst = INFINITY;
    for (int i = 0; i < n; i++) {
        ics_route r;
        if (!ics_route_find(t, ranks[i], ranks[(i + 1) % n], 0, &r))
            return 0;
        double sum = 0;
        for (int p = 0; p < r.n_paths; p++)
            sum += ics_route_path_bw(t, &r.paths[p]) / 1e9;
        ics_route_clear(&r);
        worst = MIN(worst, sum);
    }
    return worst;
}

void ics_tuner_init(ics_tuner *tu, const ics_topo *t, const int *ranks, int n)
{
    const ics_hw_gpu_type *g = ics_hw_node_of(ics_topo_hw(t))->gpu_type;
    *tu = (ics_tuner){.t = t, .ranks = ranks, .n = n};
    tu->arch = g->arch;
    /* the ring channel 0 runs (ring_order.h), as the ring algorithm builds it */
    int *order = g_new(int, n), *ring = g_new(int, n);
    ics_ring_order(t, ranks, n, 0, order);
    for (int i = 0; i < n; i++)
        ring[i] = ranks[order[i]];
    tu->ring_gbps = ring_gbps(t, ring, n);
    int worst = 0;
    for (int i = 0; i < n; i++)
        worst = MAX(worst, link_class(t, ring[i], ring[(i + 1) % n]));
    tu->ring_class = worst;
    g_free(order);
    g_free(ring);
    ics_topo_dev_bw(t, ranks[0], ICS_CHAN_NVLINK, &tu->nvlinks);
    tu->reduce_bytes_per_s = g->hbm_bw_bytes_per_s;
    ics_tuner_nccl_init(tu);
    tu->nccl_channels = ics_tuner_channels_find(tu); /* reads what nccl_init filled */
}

static ics_time step_lat(const ics_tuner *tu, ics_coll_algo algo, ics_coll_proto proto)
{
    if (ics_tuner_nccl_mixed_legs(algo))
        return ics_tuner_nccl_hop_lat(tu, algo, proto, false);
    return ics_tuner_nccl_step_lat(tu, algo, proto);
}

void ics_tuner_price_call(const ics_tuner *tu, const ics_coll_req *req, const ics_coll_tuning *want,
                          ics_coll_algo algo, ics_coll_proto proto, ics_tuner_price *out)
{
    int nch = ics_tuner_channels(tu, req, want, algo, proto);
    double share = ics_tuner_sync_share(tu, algo, proto);
    double net = 1.0 / ics_tuner_nccl_proto_eff(proto);
    bool mixed = ics_tuner_nccl_mixed_legs(algo);
    *out = (ics_tuner_price){
        .nch = nch,
        .ctas_per_channel = ics_tuner_ctas_per_channel(tu, req, want, algo, proto, nch),
        .wire_factor = ics_tuner_nccl_wire_factor(tu, algo, proto) * (1 - share),
        .sync_share = share,
        .base_lat_ps = ics_tuner_nccl_base_lat(tu, algo, proto),
        .step_lat_ps = step_lat(tu, algo, proto),
        .net_step_lat_ps =
            mixed ? ics_tuner_nccl_hop_lat(tu, algo, proto, true) : step_lat(tu, algo, proto),
        .sync_ps = ics_tuner_sync_lat(tu, proto),
        .cta_bytes_per_s = ics_tuner_cta_bytes_per_s(tu),
        .reduce_bytes_per_s = tu->reduce_bytes_per_s,
        .net_wire_factor = net,
        .intra_wire_factor = net / (tu->intra_class == 0 ? tu->kernel_eff : 1.0),
        .nvls_wire_factor = net / tu->kernel_eff / ics_tuner_nccl_nvls_eff(tu)};
}

/* Whether `want` rules combination (a, p) out before any estimate. */
static bool ruled_out(const ics_tuner *tu, const ics_coll_tuning *want, int a, int p)
{
    if ((want->algo >= 0 && want->algo != a) || (want->proto >= 0 && want->proto != p))
        return true;
    if ((a == ICS_ALGO_NVLS || a == ICS_ALGO_NVLS_TREE) && !want->nvls_enable)
        return true;
    /* Tree only across nodes (inside one it is a chain, which NCCL leaves to the ring) */
    if (a == ICS_ALGO_TREE && tu->nnodes == 1 && want->algo != a)
        return true;
    /* CollNet needs NCCL_COLLNET_ENABLE=1 in NCCL, even under NCCL_ALGO */
    if ((a == ICS_ALGO_COLLNET_DIRECT || a == ICS_ALGO_COLLNET_CHAIN) && !want->collnet_enable)
        return true;
    return a == ICS_ALGO_NVLS && p != ICS_PROTO_SIMPLE;
}

bool ics_tuner_pick(const ics_tuner *tu, const ics_coll_req *req, const ics_coll_tuning *want,
                    unsigned supported, ics_coll_algo *algo, ics_coll_proto *proto)
{
    double best = INFINITY;
    for (int a = 0; a < ICS_ALGO_COUNT; a++) {
        if (!(supported & (1u << a)))
            continue;
        for (int p = 0; p < ICS_PROTO_COUNT; p++) {
            if (ruled_out(tu, want, a, p))
                continue;
            double us = ics_tuner_nccl_estimate_us(tu, req, (ics_coll_algo)a, (ics_coll_proto)p);
            if (us < best) {
                best = us;
                *algo = (ics_coll_algo)a;
                *proto = (ics_coll_proto)p;
            }
        }
    }
    return isfinite(best);
}
