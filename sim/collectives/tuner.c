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
 * route's paths added (NVSwitch striping) up to what they share (ics_route_bw). */
static double ring_gbps(const ics_topo *t, const int *ranks, int n)
{
    double worst = INFINITY;
    for (int i = 0; i < n; i++) {
        ics_route r;
        if (!ics_route_find(t, ranks[i], ranks[(i + 1) % n], 0, &r))
            return 0;
        double sum = (double)ics_route_bw(t, &r) / 1e9;
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
    /* NCCL searches its rings on what every GPU has: after failures (topo.h, ics_topo_fail)
     * GPUs may differ, and the one with the fewest NVLinks sets the count */
    for (int i = 1; i < n && ics_topo_nfailures(t) > 0; i++) {
        int w;
        ics_topo_dev_bw(t, ranks[i], ICS_CHAN_NVLINK, &w);
        tu->nvlinks = MIN(tu->nvlinks, w);
    }
    tu->reduce_bytes_per_s = g->hbm_bw_bytes_per_s;
    tu->cal = ics_hw_calibration_of(ics_topo_hw(t))->value;
    ics_tuner_nccl_init(tu);
    tu->nccl_channels = ics_tuner_channels_find(tu); /* reads what nccl_init filled */
}

/* ---- what the simulation charges: NCCL's figures, or what a calibration measured ---------- */

/* A latency of link class cls (0 NVLink, 1 PCI, 2 network) as calibrated. */
static ics_time scaled(const ics_tuner *tu, ics_time lat_ps, int cls)
{
    double f = tu->cal[ICS_CAL_HOP_SCALE_NVLINK + cls];
    return isnan(f) ? lat_ps : (ics_time)llround((double)lat_ps * f);
}

static ics_time step_lat(const ics_tuner *tu, ics_coll_algo algo, ics_coll_proto proto)
{
    if (ics_tuner_nccl_mixed_legs(algo))
        return scaled(tu, ics_tuner_nccl_hop_lat(tu, algo, proto, false), tu->intra_class);
    return scaled(tu, ics_tuner_nccl_step_lat(tu, algo, proto), tu->ring_class);
}

static ics_time net_step_lat(const ics_tuner *tu, ics_coll_algo algo, ics_coll_proto proto)
{
    if (ics_tuner_nccl_mixed_legs(algo))
        return scaled(tu, ics_tuner_nccl_hop_lat(tu, algo, proto, true), 2);
    return step_lat(tu, algo, proto);
}

/* A ring's step across the network: NCCL's model charges it its network hop latency plus the
 * plugin's (tuning.cc: nInterSteps x interLat), where the simulation charges every step the
 * ring's one class latency (step_lat); the plugin's part is added on the network steps. */
static ics_time net_msg(const ics_tuner *tu, ics_coll_algo algo, ics_coll_proto proto)
{
    if (ics_tuner_nccl_mixed_legs(algo) || tu->nnodes < 2)
        return 0;
    return scaled(tu, (ics_time)llround(ics_tuner_nccl_plugin_us(tu, proto) * ICS_PS_PER_US), 2);
}

/* Point-to-point across nodes: what each network send or receive costs the GPU's proxy thread
 * to post (direct.c). NCCL's figure for its proxy's work per network step; NCCL's model prices
 * no point-to-point call, so the figure is taken as it stands (not tripled with Simple, as its
 * ring estimate does for the receive flush of every step: posting an operation is once). A
 * calibration's proxy_us replaces it; the tuner's ring estimate keeps NCCL's, as NCCL does. */
static ics_time net_op(const ics_tuner *tu)
{
    if (tu->nnodes < 2)
        return 0;
    return (ics_time)llround(ics_tuner_cal_value(tu, ICS_CAL_PROXY_US) * ICS_PS_PER_US);
}

/* Wire bytes a message across the network adds: the transport's gap per message (a calibration's
 * msg_us; none by default) at the line rate of one of the node's NICs, so that the NIC's time
 * goes to it in the fair share as to the bytes, and channels sharing a NIC share its gaps. */
static uint64_t net_msg_bytes(const ics_tuner *tu)
{
    double us = ics_tuner_cal_value(tu, ICS_CAL_MSG_US);
    if (tu->nnodes < 2 || us <= 0 || tu->nics <= 0)
        return 0;
    return (uint64_t)llround(us * 1e3 * tu->net_gbps / tu->nics);
}

static ics_time base_lat(const ics_tuner *tu, ics_coll_algo algo, ics_coll_proto proto)
{
    ics_time lat = ics_tuner_nccl_base_lat(tu, algo, proto);
    double f = tu->cal[ICS_CAL_BASE_SCALE];
    return isnan(f) ? lat : (ics_time)llround((double)lat * f);
}

/* What NCCL's kernels reach on NVLink, over what our links carry after headers. */
static double kernel_eff(const ics_tuner *tu)
{
    double gbps = tu->cal[ICS_CAL_NVLINK_GBPS];
    if (isnan(gbps) || tu->nvlink_payload_gbps <= 0)
        return tu->kernel_eff;
    return MIN(1.0, gbps / tu->nvlink_payload_gbps);
}

static double nvls_eff(const ics_tuner *tu)
{
    double e = tu->cal[ICS_CAL_NVLS_EFF];
    return isnan(e) ? ics_tuner_nccl_nvls_eff(tu) : e;
}

/* Divides a network leg's rate by the transport's efficiency, where calibrated. */
static double net_factor(const ics_tuner *tu, double f)
{
    double e = tu->cal[ICS_CAL_NET_EFF];
    return isnan(e) ? f : f / e;
}

/* Wire bytes per payload byte of a combination on the ring's links (the simulation's
 * counterpart of ics_tuner_nccl_wire_factor, same arithmetic, achieved figures). */
static double wire_factor(const ics_tuner *tu, ics_coll_algo algo, ics_coll_proto proto)
{
    double f = 1.0 / ics_tuner_nccl_proto_eff(proto);
    /* NVLS moves data with multimem instructions, not the SM copies whose rate nvlink_gbps
     * calibrates: its rate is NCCL's link figure times its own efficiency (nvls_eff), so each
     * calibrated value stands for one mechanism */
    if (algo == ICS_ALGO_NVLS)
        f /= tu->kernel_eff;
    else if (tu->ring_class == 0)
        f /= kernel_eff(tu);
    if (algo == ICS_ALGO_NVLS) /* reduce-scatter up with ld_reduce, multicast down: 1 + 1/n */
        f *= (1.0 + 1.0 / tu->n) / nvls_eff(tu);
    return tu->ring_class == 2 ? net_factor(tu, f) : f;
}

void ics_tuner_price_call(const ics_tuner *tu, const ics_coll_req *req, const ics_coll_tuning *want,
                          ics_coll_algo algo, ics_coll_proto proto, ics_tuner_price *out)
{
    int nch = ics_tuner_channels(tu, req, want, algo, proto);
    double share = ics_tuner_sync_share(tu, want, algo, proto);
    double net = 1.0 / ics_tuner_nccl_proto_eff(proto);
    *out = (ics_tuner_price){
        .nch = nch,
        .nvls_channels = ics_tuner_nvls_channels(tu, want),
        .ctas_per_channel = ics_tuner_ctas_per_channel(tu, req, want, algo, proto, nch),
        .wire_factor = wire_factor(tu, algo, proto) * (1 - share),
        .sync_share = share,
        .base_lat_ps = base_lat(tu, algo, proto),
        .step_lat_ps = step_lat(tu, algo, proto),
        .net_step_lat_ps = net_step_lat(tu, algo, proto),
        .net_msg_ps = net_msg(tu, algo, proto),
        .net_op_ps = net_op(tu),
        .net_msg_bytes = net_msg_bytes(tu),
        .sync_ps = ics_tuner_sync_lat(tu, proto),
        .cta_bytes_per_s = ics_tuner_cta_bytes_per_s(tu),
        .reduce_bytes_per_s = tu->reduce_bytes_per_s,
        .net_wire_factor = net_factor(tu, net),
        .intra_wire_factor = net / (tu->intra_class == 0 ? kernel_eff(tu) : 1.0),
        .nvls_wire_factor = net / tu->kernel_eff / nvls_eff(tu)};
}

double ics_tuner_cal_value(const ics_tuner *tu, ics_cal_param p)
{
    if (!isnan(tu->cal[p]))
        return tu->cal[p];
    switch (p) {
    case ICS_CAL_NVLINK_GBPS:
        return tu->nvlink_gbps;
    case ICS_CAL_CTA_GBPS:
        return (double)ics_tuner_cta_bytes_per_s(tu) / 1e9;
    case ICS_CAL_SYNC_US:
        return ics_time_to_us(ics_tuner_sync_lat(tu, ICS_PROTO_SIMPLE));
    case ICS_CAL_NVLS_EFF:
        return ics_tuner_nccl_nvls_eff(tu);
    case ICS_CAL_NET_EFF:
    case ICS_CAL_HOP_SCALE_NVLINK:
    case ICS_CAL_HOP_SCALE_PCI:
    case ICS_CAL_HOP_SCALE_NET:
    case ICS_CAL_BASE_SCALE:
        return 1.0;
    case ICS_CAL_LAUNCH_US:
        return ICS_TUNER_LAUNCH_US;
    case ICS_CAL_PROXY_US:
        return ics_tuner_nccl_net_overhead_us(tu);
    default:
        return 0.0;
    }
}

/* Whether a set of comm.h's form (0: any) holds x. */
static bool allows(unsigned set, int x)
{
    return set == 0 || (set & ICS_COLL_SET(x));
}

/* Whether `want` rules combination (a, p) out before any estimate; tree_in_node: whether Tree
 * may run inside one node (below). */
static bool ruled_out(const ics_tuner *tu, const ics_coll_tuning *want, int a, int p,
                      bool tree_in_node)
{
    if (!allows(want->algos, a) || !allows(want->protos, p))
        return true;
    /* NCCL's LL128 default (tuner_nccl.c); naming it in NCCL_PROTO enables it anyway */
    if (p == ICS_PROTO_LL128 && want->protos == 0 && !tu->ll128_default)
        return true;
    if ((a == ICS_ALGO_NVLS || a == ICS_ALGO_NVLS_TREE) && !want->nvls_enable)
        return true;
    if (a == ICS_ALGO_TREE && tu->nnodes == 1 && !tree_in_node)
        return true;
    /* CollNet needs NCCL_COLLNET_ENABLE=1 in NCCL, even under NCCL_ALGO */
    if ((a == ICS_ALGO_COLLNET_DIRECT || a == ICS_ALGO_COLLNET_CHAIN) && !want->collnet_enable)
        return true;
    return a == ICS_ALGO_NVLS && p != ICS_PROTO_SIMPLE;
}

/* NCCL's point-to-point protocol (enqueue.cc): no tuner estimate, but LL when a peer's bytes fit
 * in NCCL_P2P_LL_THRESHOLD (16 KiB) per channel, Simple otherwise; never LL128. */
#define P2P_LL_THRESHOLD 16384

static ics_coll_proto p2p_proto(const ics_tuner *tu, const ics_coll_req *req,
                                const ics_coll_tuning *want)
{
    uint64_t peer = ics_coll_req_peer_bytes(req, tu->n);
    int nch = ics_tuner_channels(tu, req, want, ICS_ALGO_DIRECT, ICS_PROTO_SIMPLE);
    bool ll = allows(want->protos, ICS_PROTO_LL) && peer <= (uint64_t)nch * P2P_LL_THRESHOLD;
    return ll ? ICS_PROTO_LL : ICS_PROTO_SIMPLE;
}

/* The cheapest allowed combination by NCCL's estimate; false if none. */
static bool cheapest(const ics_tuner *tu, const ics_coll_req *req, const ics_coll_tuning *want,
                     unsigned supported, bool tree_in_node, ics_coll_algo *algo,
                     ics_coll_proto *proto)
{
    double best = INFINITY;
    int p2p = supported & (1u << ICS_ALGO_DIRECT) ? (int)p2p_proto(tu, req, want) : -1;
    for (int a = 0; a < ICS_ALGO_COUNT; a++) {
        if (!(supported & (1u << a)))
            continue;
        for (int p = 0; p < ICS_PROTO_COUNT; p++) {
            if (a == ICS_ALGO_DIRECT && (!allows(want->algos, a) || p != p2p))
                continue; /* point-to-point: NCCL's rule, not its estimate */
            if (a != ICS_ALGO_DIRECT && ruled_out(tu, want, a, p, tree_in_node))
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

bool ics_tuner_pick(const ics_tuner *tu, const ics_coll_req *req, const ics_coll_tuning *want,
                    unsigned supported, ics_coll_algo *algo, ics_coll_proto *proto)
{
    /* Inside one node Tree is a chain, which NCCL leaves to the ring: it runs there only when
     * the tuning allows nothing else that can run the call (NCCL_ALGO=Tree). */
    return cheapest(tu, req, want, supported, false, algo, proto) ||
           cheapest(tu, req, want, supported, true, algo, proto);
}
