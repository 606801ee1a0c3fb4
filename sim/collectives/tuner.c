/* The tuner: picks algorithm, protocol and channels per call the way NCCL does
 * (src/graph/tuning.cc): time = base latency + steps x per-hop latency + bytes / bandwidth, the
 * smallest wins unless NCCL_ALGO / NCCL_PROTO force a choice. Latencies and bandwidth factors
 * are NCCL's own published constants (DOMAIN.md); the bandwidth of a ring is read off our
 * topology. It also supplies the efficiencies the simulation applies to a chosen combination:
 * what a protocol carries per wire byte, and what NCCL's kernels achieve per NVLink. */
#include "collectives/tuner.h"
#include "collectives/ring_order.h"
#include "links/link.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* NCCL 2.30 tuning.cc, microseconds, [LL, LL128, Simple]. */
static const double base_lat_us[ICS_ALGO_COUNT][ICS_PROTO_COUNT] = {
    [ICS_ALGO_RING] = {6.6, 14.0, 8.4},   [ICS_ALGO_TREE] = {6.8, 14.0, 8.4},
    [ICS_ALGO_NVLS] = {0, 0, 0},          [ICS_ALGO_DIRECT] = {6.6, 14.0, 8.4},
    [ICS_ALGO_NVLS_TREE] = {0, 0, 0},     [ICS_ALGO_COLLNET_DIRECT] = {0, 0, 0},
    [ICS_ALGO_COLLNET_CHAIN] = {0, 0, 0}, [ICS_ALGO_PAT] = {8.0, 8.0, 8.0},
};
/* PAT's linear part: NCCL adds 2.8 us per rank to its latency ("still a linear part") */
#define PAT_PER_RANK_US 2.8
/* per-hop latency by the slowest link class on the path: NVLink, PCI, network */
static const double hop_lat_us[3][ICS_PROTO_COUNT] = {
    {0.6, 1.9, 3.4},  /* NVLink */
    {1.0, 2.5, 5.7},  /* PCI */
    {2.7, 4.0, 14.0}, /* NET */
};
static const double nvls_lat_us[2] = {25.0, 18.0}; /* NVLink, NET */

/* Payload per wire byte of each protocol: LL sends 4 B of data with a 4 B flag; LL128 120 of
 * every 128 B; Simple all of it. */
static const double proto_eff[ICS_PROTO_COUNT] = {0.5, 120.0 / 128.0, 1.0};

/* NCCL's assumed per-NVLink bandwidth (GB/s) by architecture: what its kernels achieve. */
static double nccl_link_gbps(const char *arch)
{
    if (strcmp(arch, "sm100") == 0)
        return 40.1;
    if (strcmp(arch, "sm90") == 0)
        return 20.6;
    return 20.0; /* sm60, sm70, sm80 */
}

/* NCCL's NVLS efficiency: 0.85 on Hopper, 0.74 on Blackwell. */
static double nvls_eff(const char *arch)
{
    return strcmp(arch, "sm100") == 0 ? 0.74 : 0.85;
}

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
    int links;
    uint64_t nv = ics_topo_dev_bw(t, ranks[0], ICS_CHAN_NVLINK, &links);
    tu->nvlinks = links;
    tu->nvlink_gbps = nccl_link_gbps(g->arch);
    /* what NCCL's kernels achieve on NVLink, against what our links carry after packet
     * headers: applied as extra wire bytes on NVLink routes */
    tu->kernel_eff = 1.0;
    if (links > 0 && g->nvlink) {
        double per_link = nv / 1e9 / links * ics_link_packet_efficiency(g->nvlink);
        tu->kernel_eff = MIN(1.0, nccl_link_gbps(g->arch) / per_link);
    }
    tu->reduce_bytes_per_s = g->hbm_bw_bytes_per_s;
    ics_tuner_nccl_init(tu);
    tu->nccl_channels = ics_tuner_nccl_channels_find(tu); /* reads what nccl_init filled */
}

double ics_tuner_wire_factor(const ics_tuner *tu, ics_coll_algo algo, ics_coll_proto proto)
{
    double f = 1.0 / proto_eff[proto];
    if (tu->ring_class == 0 || algo == ICS_ALGO_NVLS)
        f /= tu->kernel_eff;
    if (algo == ICS_ALGO_NVLS) /* reduce-scatter up with ld_reduce, multicast down: 1 + 1/n */
        f *= (1.0 + 1.0 / tu->n) / nvls_eff(tu->arch);
    return f;
}

ics_time ics_tuner_base_lat(const ics_tuner *tu, ics_coll_algo algo, ics_coll_proto proto)
{
    double us = base_lat_us[algo][proto] + (algo == ICS_ALGO_PAT ? tu->n * PAT_PER_RANK_US : 0);
    return (ics_time)llround(us * ICS_PS_PER_US);
}

static bool mixed_legs(ics_coll_algo algo)
{
    return algo == ICS_ALGO_TREE || algo == ICS_ALGO_NVLS_TREE || algo == ICS_ALGO_COLLNET_DIRECT ||
           algo == ICS_ALGO_COLLNET_CHAIN || algo == ICS_ALGO_PAT;
}

ics_time ics_tuner_net_step_lat(const ics_tuner *tu, ics_coll_algo algo, ics_coll_proto proto)
{
    return mixed_legs(algo) ? ics_tuner_nccl_hop_lat(tu, algo, proto, true)
                            : ics_tuner_step_lat(tu, algo, proto);
}

double ics_tuner_nvls_eff(const ics_tuner *tu)
{
    return nvls_eff(tu->arch);
}

void ics_tuner_leg_factors(const ics_tuner *tu, ics_coll_algo algo, ics_coll_proto proto,
                           double *intra, double *net, double *nvls)
{
    (void)algo;
    *net = 1.0 / proto_eff[proto];
    *intra = *net / (tu->intra_class == 0 ? tu->kernel_eff : 1.0);
    *nvls = *net / tu->kernel_eff / nvls_eff(tu->arch);
}

ics_time ics_tuner_step_lat(const ics_tuner *tu, ics_coll_algo algo, ics_coll_proto proto)
{
    if (mixed_legs(algo))
        return ics_tuner_nccl_hop_lat(tu, algo, proto, false);
    if (algo == ICS_ALGO_NVLS)
        return (ics_time)llround(nvls_lat_us[tu->ring_class == 2] * ICS_PS_PER_US);
    return (ics_time)llround(hop_lat_us[tu->ring_class][proto] * ICS_PS_PER_US);
}

/* NCCL's estimate for one combination, microseconds; INFINITY if it does not apply. */
static double estimate_us(const ics_tuner *tu, const ics_coll_req *req, ics_coll_algo algo,
                          ics_coll_proto proto)
{
    if (ics_tuner_nccl_prices(tu, req, algo)) /* tuner_nccl.c */
        return ics_tuner_nccl_estimate_us(tu, req, algo, proto);
    int n = tu->n;
    double steps = req->op == ICS_COLL_ALL_REDUCE ? 2.0 * (n - 1) : n - 1;
    double lat =
        base_lat_us[algo][proto] + steps * ics_time_to_us(ics_tuner_step_lat(tu, algo, proto));
    if (algo == ICS_ALGO_NVLS)
        lat = ics_time_to_us(ics_tuner_step_lat(tu, algo, proto));
    double bus = ics_coll_busbw_factor(req->op, n);
    double gbps = tu->ring_gbps / ics_tuner_wire_factor(tu, algo, proto);
    if (algo == ICS_ALGO_NVLS) /* each byte crosses a GPU's links about once each way */
        bus = 1.0;
    return lat + (double)req->size_bytes * bus / (gbps * 1e3);
}

bool ics_tuner_pick(const ics_tuner *tu, const ics_coll_req *req, const ics_coll_tuning *want,
                    bool (*supports)(const ics_tuner *, ics_coll_algo, const ics_coll_req *),
                    ics_coll_algo *algo, ics_coll_proto *proto)
{
    double best = INFINITY;
    for (int a = 0; a < ICS_ALGO_COUNT; a++) {
        if ((want->algo >= 0 && want->algo != a) || !supports(tu, (ics_coll_algo)a, req))
            continue;
        if ((a == ICS_ALGO_NVLS || a == ICS_ALGO_NVLS_TREE) && !want->nvls_enable)
            continue;
        /* Tree only across nodes (inside one it is a chain, which NCCL leaves to the ring) */
        if (a == ICS_ALGO_TREE && tu->nnodes == 1 && want->algo != a)
            continue;
        /* CollNet needs NCCL_COLLNET_ENABLE=1 in NCCL, even under NCCL_ALGO */
        if ((a == ICS_ALGO_COLLNET_DIRECT || a == ICS_ALGO_COLLNET_CHAIN) && !want->collnet_enable)
            continue;
        for (int p = 0; p < ICS_PROTO_COUNT; p++) {
            if ((want->proto >= 0 && want->proto != p) ||
                (a == ICS_ALGO_NVLS && p != ICS_PROTO_SIMPLE))
                continue;
            double us = estimate_us(tu, req, (ics_coll_algo)a, (ics_coll_proto)p);
            if (us < best) {
                best = us;
                *algo = (ics_coll_algo)a;
                *proto = (ics_coll_proto)p;
            }
        }
    }
    return isfinite(best);
}
