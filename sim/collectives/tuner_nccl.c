/* NCCL's constants and cost model (src/graph/tuning.cc, 2.2x-2.30): every figure of NCCL's the
 * tuner and the channel model read is here, named where used. Algorithms whose terms differ per
 * leg (Tree, NVLS-Tree, CollNet Direct and Chain, PAT, and rings that span nodes, whose intra-
 * and inter-node steps NCCL prices apart) get NCCL's full model; single-class rings, direct
 * and NVLS on one node its simpler ring form. NCCL's nChannels x bw is read off our topology
 * (the ics_tuner fields filled here). */
#include "collectives/algo.h"
#include "collectives/ring_order.h"
#include "collectives/tuner_internal.h"
#include "links/link.h"

#include <math.h>
#include <string.h>

enum { HW_NVLINK, HW_PCI, HW_NET };
enum { VOLTA, AMPERE, HOPPER, BLACKWELL, ARCHS };

/* NCCL 2.30 tuning.cc, microseconds, [LL, LL128, Simple]. */
static const double base_lat_us[ICS_ALGO_COUNT][ICS_PROTO_COUNT] = {
    [ICS_ALGO_RING] = {6.6, 14.0, 8.4},   [ICS_ALGO_TREE] = {6.8, 14.0, 8.4},
    [ICS_ALGO_NVLS] = {0, 0, 0},          [ICS_ALGO_DIRECT] = {6.6, 14.0, 8.4},
    [ICS_ALGO_NVLS_TREE] = {0, 0, 0},     [ICS_ALGO_COLLNET_DIRECT] = {0, 0, 0},
    [ICS_ALGO_COLLNET_CHAIN] = {0, 0, 0}, [ICS_ALGO_PAT] = {8.0, 8.0, 8.0},
};
/* PAT's linear part: NCCL adds 2.8 us per rank to its latency ("still a linear part") */
#define PAT_PER_RANK_US 2.8
static const double nvls_lat_us[2] = {25.0, 18.0}; /* NVLink, NET */

/* Payload per wire byte of each protocol: LL sends 4 B of data with a 4 B flag; LL128 120 of
 * every 128 B; Simple all of it. */
static const double proto_eff[ICS_PROTO_COUNT] = {0.5, 120.0 / 128.0, 1.0};

/* Per-hop latency (us) by link class, [LL, LL128, Simple]: NCCL's hwLatencies. A ring of one
 * link class uses its RING row for every step. */
static const double hw_lat_us[3][ICS_ALGO_COUNT][ICS_PROTO_COUNT] = {
    [HW_NVLINK] = {[ICS_ALGO_TREE] = {0.6, 1.25, 4.0},
                   [ICS_ALGO_RING] = {0.6, 1.9, 3.4},
                   [ICS_ALGO_COLLNET_DIRECT] = {0, 0, 3.7},
                   [ICS_ALGO_COLLNET_CHAIN] = {0, 0, 2.8},
                   [ICS_ALGO_NVLS_TREE] = {0, 0, 25},
                   [ICS_ALGO_PAT] = {0, 0, 4.0}},
    [HW_PCI] = {[ICS_ALGO_TREE] = {1.0, 1.9, 4.0},
                [ICS_ALGO_RING] = {1.0, 2.5, 5.7},
                [ICS_ALGO_COLLNET_DIRECT] = {0, 0, 3.7},
                [ICS_ALGO_COLLNET_CHAIN] = {0, 0, 2.8},
                [ICS_ALGO_PAT] = {0, 0, 4.0}},
    [HW_NET] = {[ICS_ALGO_TREE] = {5.0, 8.5, 14},
                [ICS_ALGO_RING] = {2.7, 4.0, 14.0},
                [ICS_ALGO_COLLNET_DIRECT] = {0, 0, 31},
                [ICS_ALGO_COLLNET_CHAIN] = {0, 0, 30},
                [ICS_ALGO_NVLS_TREE] = {0, 0, 20.9},
                [ICS_ALGO_PAT] = {0, 0, 14}},
};

/* Ceilings, GB/s, [arch or host][1 node, 2 nodes, more]: llMaxBws (rows: the GPU on one node;
 * across nodes Intel = row 0, AMD = row 1), and the per-channel ceilings. */
static const double ll_max_gbps[ARCHS][3] = {
    {39.0, 39.0, 20.4}, {87.7, 22.5, 19.0}, {141.0, 45.0, 35.0}, {282.0, 90.0, 70.0}};
static const double per_ch_ring_ll128_gbps[ARCHS][3] = {
    {20.0, 20.0, 20.0}, {20.0, 20.0, 20.0}, {36.7, 36.7, 36.7}, {40.0, 40.0, 40.0}};
static const double per_ch_tree_ll128_gbps[ARCHS][3] = {
    {20.0, 20.0, 20.0}, {20.0, 20.0, 20.0}, {36.7, 36.7, 29.0}, {55.6, 31.67, 20.0}};
static const double per_ch_tree_gbps[ARCHS][3] = {
    {26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}, {38.7, 41.4, 36.0}, {70.0, 42.8, 24.0}};
static const double per_ch_nvls_tree_gbps[ARCHS][3] = {
    {26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}, {0.0, 57.7, 45.5}, {0.0, 96.0, 80.0}};

/* The per-channel speeds (GB/s) NCCL's graph search tries across nodes, fastest first
 * (search.cc, speedArrayInter: sm90 and later, then older GPUs). */
static const double speeds_inter_sm90[] = {48, 45, 42, 40, 30,  24,  22,   20,  17.5,
                                           15, 12, 6,  3,  2.4, 1.2, 0.24, 0.12};
static const double speeds_inter_older[] = {48, 30, 28, 24, 20, 18,  15,  12,   10,  9,
                                            7,  6,  5,  4,  3,  2.4, 1.2, 0.24, 0.12};

#define GRAPH_MAX_CHANNELS 16 /* MAXCHANNELS / 2: what one graph search finds */

/* Tree bandwidth correction by log2(bytes / 64), 64 B .. 256 MiB: "trees are not perfectly
 * sticking to the model for medium sizes". */
static const double tree_correction[ICS_PROTO_COUNT][23] = {
    {1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7,  .7,  .7,  .6, .5,
     .4,  .4,  .5,  .6,  .7, .8, .9, 1.0, 1.0, 1.0, 1.0},
    {1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7,  .6, .6,
     .6,  .6,  .6,  .6,  .8,  .9, .9, .9, .9, 1.0, 1.0},
    {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9}};

#define TREE_BW_FACTOR        0.92      /* tree all-reduce busBw x */
#define TREE_LL_FACTOR        (1 / 3.8) /* LL on a tree */
#define LL128_FACTOR          (120.0 / 128.0)
#define TREE_LL128_ONE_NODE   (7.0 / 9.0)
#define RING_LL_FACTOR        0.5
#define RING_LL128_FACTOR     0.92
#define PAT_BW_FACTOR         0.75
#define PAT_LOG_LAT_DIVISOR   3.5 /* PAT's per-step latency: the network hop / 3.5 */
#define COLLNET_SM90_FACTOR   0.85
#define COLLNET_ARITY_US      0.4 /* CollNet Direct: serialization per local rank */
#define COLLNET_MAX_LOCAL     8   /* NCCL_MAX_DIRECT_ARITY + 1 */
#define NET_OVERHEAD_INTEL_US 1.0 /* per ring step across nodes, x3 with Simple */
#define NET_OVERHEAD_AMD_US   2.0
#define RING_PLATEAU          1.4 /* SM80+; 1.9 before: ring Simple latency once pipelined */
#define RING_PLATEAU_OLD      1.9

/* NCCL's assumed per-NVLink bandwidth (GB/s) by architecture: what its kernels achieve. */
static double nccl_link_gbps(const char *arch)
{
    if (strcmp(arch, "sm100") == 0)
        return 40.1;
    if (strcmp(arch, "sm90") == 0)
        return 20.6;
    return 20.0; /* sm60, sm70, sm80 */
}

double ics_tuner_nccl_nvls_eff(const ics_tuner *tu)
{
    /* NCCL's NVLS efficiency: 0.85 on Hopper, 0.74 on Blackwell */
    return strcmp(tu->arch, "sm100") == 0 ? 0.74 : 0.85;
}

double ics_tuner_nccl_proto_eff(ics_coll_proto proto)
{
    return proto_eff[proto];
}

double ics_tuner_nccl_wire_factor(const ics_tuner *tu, ics_coll_algo algo, ics_coll_proto proto)
{
    double f = 1.0 / proto_eff[proto];
    if (tu->ring_class == 0 || algo == ICS_ALGO_NVLS)
        f /= tu->kernel_eff;
    if (algo == ICS_ALGO_NVLS) /* reduce-scatter up with ld_reduce, multicast down: 1 + 1/n */
        f *= (1.0 + 1.0 / tu->n) / ics_tuner_nccl_nvls_eff(tu);
    return f;
}

bool ics_tuner_nccl_sm90_or_later(const ics_tuner *tu)
{
    return strcmp(tu->arch, "sm90") == 0 || strcmp(tu->arch, "sm100") == 0;
}

static int arch_index(const ics_tuner *tu)
{
    if (strcmp(tu->arch, "sm100") == 0)
        return BLACKWELL;
    if (strcmp(tu->arch, "sm90") == 0)
        return HOPPER;
    return strcmp(tu->arch, "sm80") == 0 ? AMPERE : VOLTA;
}

/* NCCL's log2i: floor(log2(x)), 0 for x <= 1. */
static int log2i(uint64_t x)
{
    int l = 0;
    while (x >>= 1)
        l++;
    return l;
}

/* ---- what the model reads off the topology ------------------------------------------------- */

/* Bandwidth (GB/s, ics_route_bw) and whether every hop is NVLink, of the route a -> b. */
static double route_gbps(const ics_topo *t, int a, int b, bool *nvlink)
{
    ics_route r;
    double sum = 0;
    *nvlink = true;
    if (!ics_route_find(t, a, b, 0, &r))
        return 0;
    sum = (double)ics_route_bw(t, &r) / 1e9;
    for (int p = 0; p < r.n_paths; p++) {
        for (int h = 0; h < r.paths[p].n_hops; h++)
            *nvlink &= ics_topo_chan_get(t, r.paths[p].chans[h])->kind == ICS_CHAN_NVLINK;
    }
    ics_route_clear(&r);
    return sum;
}

/* Node k's rank-order ring: its slowest route (intra_gbps before NCCL's kernel rate) and
 * whether it is all NVLink. INFINITY for a node of one rank. */
static double node_ring(const ics_tuner *tu, const ics_algo_nodes *g, int k, bool *nvlink)
{
    int m = ics_algo_nodes_size(g, k);
    double worst = INFINITY;
    *nvlink = true;
    for (int i = 0; m > 1 && i < m; i++) {
        bool nv;
        int a = tu->ranks[g->rank[g->start[k] + i]];
        int b = tu->ranks[g->rank[g->start[k] + (i + 1) % m]];
        worst = MIN(worst, route_gbps(tu->t, a, b, &nv));
        *nvlink &= nv;
    }
    return worst;
}

/* Node k's compute NICs in use (every NIC its ranks' channels leave by: several per GPU on a
 * p5), summed (GB/s), and their count; *heads: the ranks with a NIC of their own (CollNet). */
static double node_nics(const ics_tuner *tu, const ics_algo_nodes *g, int k, int *count, int *heads)
{
    int size = ics_algo_nodes_size(g, k);
    int *first = g_new(int, size), *used = g_new(int, (size_t)size *ICS_ROUTE_MAX_NICS);
    *heads = ics_algo_node_heads(tu->t, tu->ranks, g, k, first, NULL);
    *count = 0;
    double sum = 0;
    for (int i = g->start[k]; i < g->start[k + 1]; i++) {
        int nics[ICS_ROUTE_MAX_NICS], n = ics_route_nics_of_gpu(tu->t, tu->ranks[g->rank[i]], nics);
        for (int a = 0; a < n; a++) {
            bool seen = false;
            for (int b = 0; b < *count && !seen; b++)
                seen = used[b] == nics[a];
            if (seen)
                continue;
            used[(*count)++] = nics[a];
            int width;
            sum += ics_topo_dev_bw(tu->t, nics[a], ICS_CHAN_NETWORK, &width) / 1e9;
        }
    }
    g_free(first);
    g_free(used);
    return sum;
}

/* Payload per wire byte of the GPU's NVLink (packet headers: 256 of 272 B on NVLink 4). */
static double nvlink_payload(const ics_tuner *tu)
{
    const ics_hw_gpu_type *g = ics_hw_node_of(ics_topo_hw(tu->t))->gpu_type;
    return g->nvlink ? ics_link_packet_efficiency(g->nvlink) : 1.0;
}

/* What NCCL's kernels achieve on NVLink, against what our links carry after packet headers:
 * applied as extra wire bytes on NVLink routes. */
static void nccl_kernel_rate(ics_tuner *tu)
{
    const ics_hw_gpu_type *g = ics_hw_node_of(ics_topo_hw(tu->t))->gpu_type;
    int links;
    uint64_t nv = ics_topo_dev_bw(tu->t, tu->ranks[0], ICS_CHAN_NVLINK, &links);
    tu->nvlink_gbps = nccl_link_gbps(g->arch);
    tu->kernel_eff = 1.0;
    if (links > 0 && g->nvlink) {
        double per_link = nv / 1e9 / links * ics_link_packet_efficiency(g->nvlink);
        tu->kernel_eff = MIN(1.0, nccl_link_gbps(g->arch) / per_link);
        tu->nvlink_payload_gbps = per_link;
    }
}

/* Whether a GPU's network traffic takes a path LL128 may use by default: NCCL's graph path type
 * to the NIC (paths.cc; LOC < NVL < NVB < C2C < PIX < PXB < P2C < PXN < PHB < SYS) at most PXB,
 * or on Hopper and later at most PXN (tuning.cc: typeInter <= PATH_PXN with NCCL_LL128_C2C on,
 * its default), which also admits P2C (a GPU on its CPU by C2C, the NIC on that CPU: our class
 * PHB on a C2C GPU) and PXN (through an NVLink peer of the node that is PXB or closer to the
 * NIC, paths.cc's PXN rule). Without GPUDirect RDMA NCCL routes the traffic through the CPU
 * (paths.cc, "can't use GPU Direct RDMA": an inter step at the CPU), a PHB path beyond both
 * limits: Polaris' A100s under NCCL's default GDR level, or a DGX H100 with
 * NCCL_NET_GDR_LEVEL=LOC, run LL and Simple only. Called once per rank at tuner set-up. */
static bool ll128_net_path(const ics_tuner *tu, int gpu)
{
    const ics_topo *t = tu->t;
    int nic = ics_route_nic_of_gpu(t, gpu);
    if (nic < 0)
        return false;
    /* NCCL's own path types (ics_topo_path_type: nvidia-smi's NODE is NCCL's PHB) */
    ics_path_type type = ics_topo_path_type(t, gpu, nic);
    bool gdr = ics_topo_uses_gdr(t, gpu, nic, false);
    if (type <= ICS_PATH_PXB && gdr)
        return true;
    if (!ics_tuner_nccl_sm90_or_later(tu))
        return false;
    const ics_hw_gpu_type *g = ics_hw_node_of(ics_topo_hw(t))->gpu_type;
    bool c2c = g->pcie && g->pcie->family == ICS_LINK_NVLINK;
    if (gdr && c2c && type == ICS_PATH_PHB)
        return true; /* P2C: through the GPU's own CPU, never across the SMP link */
    const ics_topo_dev *d = ics_topo_dev_get(t, gpu);
    for (int i = 0; i < ics_topo_gpus_per_node(t); i++) {
        int peer = ics_topo_gpu(t, d->node, i);
        if (peer == gpu || ics_topo_path_type(t, gpu, peer) != ICS_PATH_NVL)
            continue; /* PXN goes through a peer joined by NVLink */
        if (ics_topo_path_type(t, peer, nic) <= ICS_PATH_PXB &&
            ics_topo_uses_gdr(t, peer, nic, false))
            return true;
    }
    return false;
}

/* NCCL's default for LL128 (tuning.cc, ncclTopoTuneModel: "Enable LL128 by default only on
 * Volta/Ampere/Hopper/Blackwell+NVLink"): not before Volta; the ranks of a node joined by
 * NVLink (typeIntra <= NVB; one rank per node has no intra path); across nodes every rank's
 * network path within LL128's limit (ll128_net_path). Anything else risks silent data
 * corruption there, so NCCL leaves it off unless NCCL_PROTO asks for it. */
static bool ll128_default(const ics_tuner *tu)
{
    if (strcmp(tu->arch, "sm60") == 0)
        return false;
    /* NVLink-only rings: every hop of the node's ring on NVLink, or a mesh whose rings NCCL's
     * search finds on NVLink alone (DGX-1) */
    bool nvl = tu->intra_class == HW_NVLINK ||
               (tu->nnodes == 1 && ics_ring_orders_differ(tu->t, tu->ranks, tu->n));
    if (tu->ppn > 1 && !nvl)
        return false;
    if (tu->nnodes == 1)
        return true;
    for (int r = 0; r < tu->n; r++)
        if (!ll128_net_path(tu, tu->ranks[r]))
            return false;
    return true;
}

/* NCCL's ring and tree graphs across nodes, as its search builds them (search.cc,
 * ncclTopoCompute): a channel per NIC at the fastest speed of its list the NIC carries; the
 * channels doubled (ncclTopoDupChannels) at 25 GB/s or more, except on Hopper and later below
 * 50 GB/s with more than 4 channels (DGX H100 on NDR: 8 channels at 48, not doubled; DGX A100
 * on HDR: 8 at 24, not doubled). Then, at fixed channels, a ring raises its speed everywhere,
 * which its NICs forbid, while a tree raises only its intra-node speed (bwIntra), up to twice
 * the network's ("increase bwIntra for trees (2 nodes or collnet)"), as far as the node's
 * NVLinks carry it: a chain per channel through every GPU of the node. On two nodes NCCL's
 * tuner prices every algorithm by bwIntra (tuning.cc: "nNodes <= 2 ? bwIntra : bwInter"), so
 * there a tree moves up to twice what a ring can: each node's NICs send and receive at once
 * (Snellius, 2 x 4 H100 on 4 x 200 Gb/s: 156 GB/s measured, above the ring's 100). */
static void inter_graphs(ics_tuner *tu)
{
    bool new_gpu = ics_tuner_nccl_sm90_or_later(tu);
    const double *sp = new_gpu ? speeds_inter_sm90 : speeds_inter_older;
    int ns = new_gpu ? (int)G_N_ELEMENTS(speeds_inter_sm90) : (int)G_N_ELEMENTS(speeds_inter_older);
    int nics = MAX(1, tu->nics);
    double per_nic = tu->net_gbps / nics, speed = sp[ns - 1];
    for (int i = ns - 1; i >= 0 && sp[i] <= per_nic + 1e-9; i--)
        speed = sp[i];
    int nch = MIN(GRAPH_MAX_CHANNELS, nics);
    if (speed >= 25 && !(new_gpu && speed < 50 && nch > 4))
        nch = MIN(GRAPH_MAX_CHANNELS, 2 * nch);
    tu->graph_channels = nch;
    double intra = tu->intra_gbps; /* INFINITY with one rank per node: no chain */
    if (tu->ppn > 1 && tu->intra_class == HW_NVLINK && tu->nvlinks > 0)
        intra = tu->nvlinks * tu->nvlink_gbps; /* chains spread over all of a GPU's NVLinks */
    double ring = MIN(tu->intra_gbps, tu->net_gbps);
    tu->tree_gbps = tu->nnodes == 2 ? MIN(intra, 2 * tu->net_gbps) : ring;
}

/* The network plugin's latency as NCCL reads it (ncclNetProperties_t.latency into the graph's
 * latencyInter): a node's compute NICs are of one plugin; the largest, should they differ. */
static double plugin_lat_us(const ics_hw_node *node)
{
    ics_time worst = 0;
    for (int i = 0; i < node->n_pcie; i++) {
        const ics_hw_pcie *e = &node->pcie[i];
        if (e->kind == ICS_PCIE_NIC && e->role == ICS_NIC_COMPUTE && e->nic_type)
            worst = MAX(worst, e->nic_type->plugin_latency_ps);
    }
    return ics_time_to_us(worst);
}

/* True if every rank reaches rank 0 over NVLink alone (NCCL's isAllNvlink, whose 512 KiB
 * point-to-point step it sets: on an NVSwitch node, not on a DGX-1's cube mesh). */
static bool all_nvlink(const ics_tuner *tu)
{
    bool nv = true;
    for (int r = 1; r < tu->n && nv; r++) {
        ics_route route;
        if (!ics_route_find(tu->t, tu->ranks[0], tu->ranks[r], 0, &route))
            return false;
        for (int p = 0; p < route.n_paths; p++)
            for (int h = 0; h < route.paths[p].n_hops; h++)
                nv &= ics_topo_chan_get(tu->t, route.paths[p].chans[h])->kind == ICS_CHAN_NVLINK;
        ics_route_clear(&route);
    }
    return nv;
}

/* GB/s of one kind of a device's links (0: none). */
static double dev_gbps(const ics_tuner *tu, int dev, ics_chan_kind kind)
{
    int width;
    return (double)ics_topo_dev_bw(tu->t, dev, kind, &width) / 1e9;
}

/* A GPU's own NICs as NCCL counts them for point-to-point (topo.cc getLocalNetCountByBw): its
 * nearest NICs in turn, each at its path's bandwidth (the NIC's line rate, capped by its PCIe
 * and the GPU's), until they carry what the GPU's PCIe does. */
static int gpu_p2p_nics(const ics_tuner *tu, int gpu, double *gbps)
{
    int nics[ICS_ROUTE_MAX_NICS], n = ics_route_nics_of_gpu(tu->t, gpu, nics), count = 0;
    double gpu_bw = dev_gbps(tu, gpu, ICS_CHAN_PCIE);
    *gbps = 0;
    for (int i = 0; i < n; i++) {
        double bw = dev_gbps(tu, nics[i], ICS_CHAN_NETWORK),
               pcie = dev_gbps(tu, nics[i], ICS_CHAN_PCIE);
        bw = pcie > 0 ? MIN(bw, pcie) : bw;
        bw = gpu_bw > 0 ? MIN(bw, gpu_bw) : bw;
        *gbps += bw;
        count++;
        if (gpu_bw > 0 && *gbps >= gpu_bw)
            break;
    }
    return count;
}

/* The ranks' own NICs for point-to-point: the rank whose NICs give the fewest channels at
 * NCCL's default bandwidth a channel (channels.c), as every rank takes its own fewest. */
static void p2p_nics(ics_tuner *tu)
{
    int best = INT32_MAX;
    tu->p2p_nics = 0;
    tu->p2p_nic_gbps = 0;
    for (int r = 0; r < tu->n; r++) {
        double gbps;
        int count = gpu_p2p_nics(tu, tu->ranks[r], &gbps);
        int ch = ics_tuner_net_peer_channels_of(count, gbps, 0);
        if (count > 0 && ch < best) {
            best = ch;
            tu->p2p_nics = count;
            tu->p2p_nic_gbps = gbps;
        }
    }
}

void ics_tuner_nccl_init(ics_tuner *tu)
{
    nccl_kernel_rate(tu);
    ics_algo_nodes g;
    ics_algo_nodes_init(tu->t, tu->ranks, tu->n, &g);
    tu->nnodes = g.nnodes;
    tu->ppn = tu->n / g.nnodes;
    tu->intra_class = HW_NVLINK;
    tu->intra_gbps = INFINITY;
    tu->net_gbps = g.nnodes > 1 ? INFINITY : 0;
    tu->heads = tu->nics = INT32_MAX;
    for (int k = 0; k < g.nnodes; k++) {
        bool nvlink;
        double ring = node_ring(tu, &g, k, &nvlink);
        if (!nvlink)
            tu->intra_class = HW_PCI;
        /* NCCL's kernels reach its own per-NVLink figure (kernel_eff is relative to the
         * links' payload, after packet headers), not the links' signalling rate */
        tu->intra_gbps =
            MIN(tu->intra_gbps, ring * (nvlink ? tu->kernel_eff * nvlink_payload(tu) : 1.0));
        int heads, count;
        double nics = node_nics(tu, &g, k, &count, &heads);
        tu->heads = MIN(tu->heads, heads);
        tu->nics = MIN(tu->nics, count);
        if (g.nnodes > 1)
            tu->net_gbps = MIN(tu->net_gbps, nics);
    }
    const ics_hw_node *node = ics_hw_node_of(ics_topo_hw(tu->t));
    tu->amd_cpu = node->n_cpus > 0 && ics_hw_cpu_vendor(node->cpus[0].type) == ICS_CPU_AMD;
    tu->arm_cpu = node->n_cpus > 0 && ics_hw_cpu_vendor(node->cpus[0].type) == ICS_CPU_ARM;
    tu->all_nvlink = g.nnodes == 1 && all_nvlink(tu);
    if (g.nnodes > 1)
        p2p_nics(tu);
    tu->net_lat_us = g.nnodes > 1 ? plugin_lat_us(node) : 0;
    ics_algo_nodes_clear(&g);
    tu->ll128_default = ll128_default(tu);
    if (tu->nnodes > 1)
        inter_graphs(tu);
}

/* ---- the estimates ------------------------------------------------------------------------ */

static double intra_lat(const ics_tuner *tu, ics_coll_algo a, ics_coll_proto p)
{
    return hw_lat_us[tu->intra_class][a][p];
}

/* With one rank per node nothing hides the network hop: NCCL prices it as the tree's. To it
 * NCCL adds what the network plugin reports as its latency (the graph's latencyInter), twice
 * with Simple: "Also add the flush extra latency" (tuning.cc, 2.19-2.29). */
static double inter_lat(const ics_tuner *tu, ics_coll_algo a, ics_coll_proto p)
{
    return hw_lat_us[HW_NET][tu->ppn == 1 ? ICS_ALGO_TREE : a][p] + ics_tuner_nccl_plugin_us(tu, p);
}

double ics_tuner_nccl_plugin_us(const ics_tuner *tu, ics_coll_proto proto)
{
    return tu->net_lat_us * (proto == ICS_PROTO_SIMPLE ? 2 : 1);
}

double ics_tuner_nccl_net_overhead_us(const ics_tuner *tu)
{
    return tu->amd_cpu ? NET_OVERHEAD_AMD_US : NET_OVERHEAD_INTEL_US;
}

ics_time ics_tuner_nccl_hop_lat(const ics_tuner *tu, ics_coll_algo algo, ics_coll_proto proto,
                                bool net)
{
    double us;
    if (net)
        us = inter_lat(tu, algo, proto) / (algo == ICS_ALGO_PAT ? PAT_LOG_LAT_DIVISOR : 1);
    else
        us = intra_lat(tu, algo, proto) +
             (algo == ICS_ALGO_COLLNET_DIRECT ? (tu->ppn - 1) * COLLNET_ARITY_US : 0);
    return (ics_time)llround(us * ICS_PS_PER_US);
}

ics_time ics_tuner_nccl_base_lat(const ics_tuner *tu, ics_coll_algo algo, ics_coll_proto proto)
{
    double us = base_lat_us[algo][proto] + (algo == ICS_ALGO_PAT ? tu->n * PAT_PER_RANK_US : 0);
    return (ics_time)llround(us * ICS_PS_PER_US);
}

static double base_us(const ics_tuner *tu, ics_coll_algo a, ics_coll_proto p)
{
    return ics_time_to_us(ics_tuner_nccl_base_lat(tu, a, p));
}

bool ics_tuner_nccl_mixed_legs(ics_coll_algo algo)
{
    return algo == ICS_ALGO_TREE || algo == ICS_ALGO_NVLS_TREE || algo == ICS_ALGO_COLLNET_DIRECT ||
           algo == ICS_ALGO_COLLNET_CHAIN || algo == ICS_ALGO_PAT;
}

ics_time ics_tuner_nccl_step_lat(const ics_tuner *tu, ics_coll_algo algo, ics_coll_proto proto)
{
    if (algo == ICS_ALGO_NVLS)
        return (ics_time)llround(nvls_lat_us[tu->ring_class == 2] * ICS_PS_PER_US);
    return (ics_time)llround(hw_lat_us[tu->ring_class][ICS_ALGO_RING][proto] * ICS_PS_PER_US);
}

double ics_tuner_nccl_tree_channel_gbps(const ics_tuner *tu)
{
    return per_ch_tree_gbps[arch_index(tu)][0];
}

/* NCCL's index by node count: 1, 2, more. */
static int nodes_index(const ics_tuner *tu)
{
    return tu->nnodes <= 2 ? tu->nnodes - 1 : 2;
}

static double ll_max(const ics_tuner *tu)
{
    int row = tu->nnodes == 1 ? arch_index(tu) : (tu->amd_cpu ? 1 : 0);
    return ll_max_gbps[row][nodes_index(tu)];
}

/* nChannels x bw of a graph across nodes: its NICs, or the node's links where slower. */
static double graph_gbps(const ics_tuner *tu)
{
    return tu->nnodes == 1 ? tu->intra_gbps : MIN(tu->intra_gbps, tu->net_gbps);
}

/* The channels of NCCL's graph its ceilings multiply: across nodes the inter-node search's
 * (inter_graphs), on one node the communicator's. */
static int graph_channels(const ics_tuner *tu)
{
    return tu->nnodes > 1 ? tu->graph_channels : tu->nccl_channels;
}

static double ring_us(const ics_tuner *tu, const ics_coll_req *req, ics_coll_proto p)
{
    int n = tu->n, nch = graph_channels(tu), arch = arch_index(tu);
    bool ar = req->op == ICS_COLL_ALL_REDUCE;
    int nsteps = ar ? 2 * (n - 1) : n - 1;
    int ninter = ar ? 2 * (tu->nnodes - 1) : tu->nnodes - 1;
    double bus = graph_gbps(tu);
    if (p == ICS_PROTO_LL)
        bus = MIN(ll_max(tu), bus * RING_LL_FACTOR);
    if (p == ICS_PROTO_LL128)
        bus = MIN(bus * RING_LL128_FACTOR, nch * per_ch_ring_ll128_gbps[arch][nodes_index(tu)]);
    double overhead = ics_tuner_nccl_net_overhead_us(tu) * (p == ICS_PROTO_SIMPLE ? 3 : 1);
    double lat = base_us(tu, ICS_ALGO_RING, p) +
                 (nsteps - ninter) * MAX(intra_lat(tu, ICS_ALGO_RING, p), overhead) +
                 ninter * inter_lat(tu, ICS_ALGO_RING, p);
    if (p == ICS_PROTO_SIMPLE && ar && req->size_bytes / ((uint64_t)nch * (uint64_t)n) >= 64)
        lat *= arch >= AMPERE ? RING_PLATEAU : RING_PLATEAU_OLD;
    return lat + (double)req->size_bytes / (1e3 * bus * n / nsteps);
}

static double tree_us(const ics_tuner *tu, const ics_coll_req *req, ics_coll_proto p)
{
    int nch = graph_channels(tu), arch = arch_index(tu), i2 = nodes_index(tu);
    double tree = tu->nnodes > 1 ? tu->tree_gbps : graph_gbps(tu);
    double bus = MIN(tree * TREE_BW_FACTOR, nch * per_ch_tree_gbps[arch][i2]);
    if (p == ICS_PROTO_LL)
        bus = MIN(bus * TREE_LL_FACTOR, ll_max(tu));
    if (p == ICS_PROTO_LL128)
        bus = MIN(bus * (tu->nnodes == 1 ? TREE_LL128_ONE_NODE : LL128_FACTOR),
                  nch * per_ch_tree_ll128_gbps[arch][i2]);
    double alg = bus * 0.5; /* NCCL's bus-to-algorithm ratio for every non-ring algorithm */
    int lg = log2i(req->size_bytes >> 6);
    if (lg < 23)
        alg *= tree_correction[p][lg];
    double lat = base_us(tu, ICS_ALGO_TREE, p) +
                 2 * ((tu->ppn - 1) * intra_lat(tu, ICS_ALGO_TREE, p) +
                      log2i((uint64_t)tu->nnodes) * inter_lat(tu, ICS_ALGO_TREE, p));
    return lat + (double)req->size_bytes / (1e3 * alg);
}

/* NCCL's model of NVLS-Tree (tuning.cc) counts the channels of its NVLS graph: one per head, a
 * GPU of the node with a NIC of its own (search.cc: at most the node's GPUs, NCCL_MAX_NVLS_ARITY
 * 32), not the NVLS channels the kernels run on; it needs two. */
#define NVLS_MAX_ARITY 32

static double nvls_tree_us(const ics_tuner *tu, const ics_coll_req *req)
{
    int n = tu->n, arch = arch_index(tu), nc = MIN(tu->heads, NVLS_MAX_ARITY);
    if (nc < 2)
        return INFINITY;
    /* all-reduce pipelines the reduce and the multicast: twice the NVLS rate */
    double intra = tu->intra_gbps * ics_tuner_nccl_nvls_eff(tu) * (nc - 1) / nc * 2;
    double inter = tu->net_gbps * (tu->nnodes <= 2 ? 2 : 1);
    double bus = MIN(MIN(intra, inter), nc * per_ch_nvls_tree_gbps[arch][nodes_index(tu)]);
    if (bus <= 0)
        return INFINITY;
    double lat =
        intra_lat(tu, ICS_ALGO_NVLS_TREE, ICS_PROTO_SIMPLE) +
        2 * log2i((uint64_t)tu->nnodes) * inter_lat(tu, ICS_ALGO_NVLS_TREE, ICS_PROTO_SIMPLE);
    return lat + (double)req->size_bytes / (1e3 * bus * n / (2.0 * (n - 1)));
}

static double collnet_us(const ics_tuner *tu, const ics_coll_req *req, ics_coll_algo a)
{
    if (tu->ppn > COLLNET_MAX_LOCAL)
        return INFINITY;
    double bus = graph_gbps(tu), lat;
    int ppn = tu->ppn;
    if (a == ICS_ALGO_COLLNET_DIRECT) {
        /* full rate needs a NIC per GPU: NCCL halves the shortfall */
        double f = (double)ppn / tu->heads;
        bus /= f - (f - 1) / 2;
        if (arch_index(tu) >= HOPPER)
            bus *= COLLNET_SM90_FACTOR;
        lat = 2 * (MIN(1, ppn - 1) * intra_lat(tu, a, ICS_PROTO_SIMPLE) +
                   (ppn - 1) * COLLNET_ARITY_US) +
              inter_lat(tu, a, ICS_PROTO_SIMPLE);
    } else {
        lat =
            2 * (ppn - 1) * intra_lat(tu, a, ICS_PROTO_SIMPLE) + inter_lat(tu, a, ICS_PROTO_SIMPLE);
    }
    return base_us(tu, a, ICS_PROTO_SIMPLE) + lat + (double)req->size_bytes / (1e3 * bus * 0.5);
}

static double pat_us(const ics_tuner *tu, const ics_coll_req *req)
{
    /* no bus-to-algorithm ratio for all-gather and reduce-scatter off the ring */
    double alg = tu->net_gbps * PAT_BW_FACTOR;
    double lat =
        base_us(tu, ICS_ALGO_PAT, ICS_PROTO_SIMPLE) +
        log2i((uint64_t)tu->nnodes) *
            ics_time_to_us(ics_tuner_nccl_hop_lat(tu, ICS_ALGO_PAT, ICS_PROTO_SIMPLE, true));
    return alg > 0 ? lat + (double)req->size_bytes / (1e3 * alg) : INFINITY;
}

/* True if NCCL prices this combination per leg (the functions above); false for the rest,
 * priced as one ring of the slowest link class. */
static bool per_leg(const ics_tuner *tu, const ics_coll_req *req, ics_coll_algo algo)
{
    if (algo == ICS_ALGO_RING)
        return tu->nnodes > 1 &&
               (req->op == ICS_COLL_ALL_REDUCE || req->op == ICS_COLL_ALL_GATHER ||
                req->op == ICS_COLL_REDUCE_SCATTER);
    return ics_tuner_nccl_mixed_legs(algo);
}

/* Single-class rings, direct and NVLS: base + steps x hop latency + bytes / ring bandwidth. */
static double one_class_us(const ics_tuner *tu, const ics_coll_req *req, ics_coll_algo algo,
                           ics_coll_proto proto)
{
    int n = tu->n;
    double steps = req->op == ICS_COLL_ALL_REDUCE ? 2.0 * (n - 1) : n - 1;
    double hop = ics_time_to_us(ics_tuner_nccl_step_lat(tu, algo, proto));
    double lat = algo == ICS_ALGO_NVLS ? hop : base_lat_us[algo][proto] + steps * hop;
    double bus = ics_coll_busbw_factor(req->op, n);
    if (algo == ICS_ALGO_NVLS) /* each byte crosses a GPU's links about once each way */
        bus = 1.0;
    double gbps = tu->ring_gbps / ics_tuner_nccl_wire_factor(tu, algo, proto);
    return lat + (double)req->size_bytes * bus / (gbps * 1e3);
}

double ics_tuner_nccl_estimate_us(const ics_tuner *tu, const ics_coll_req *req, ics_coll_algo algo,
                                  ics_coll_proto proto)
{
    if (!per_leg(tu, req, algo))
        return one_class_us(tu, req, algo, proto);
    /* only Tree and Ring run LL and LL128 */
    if (algo != ICS_ALGO_RING && algo != ICS_ALGO_TREE && proto != ICS_PROTO_SIMPLE)
        return INFINITY;
    switch (algo) {
    case ICS_ALGO_RING:
        return ring_us(tu, req, proto);
    case ICS_ALGO_TREE:
        return tree_us(tu, req, proto);
    case ICS_ALGO_NVLS_TREE:
        return nvls_tree_us(tu, req);
    case ICS_ALGO_COLLNET_DIRECT:
    case ICS_ALGO_COLLNET_CHAIN:
        return collnet_us(tu, req, algo);
    case ICS_ALGO_PAT:
        return pat_us(tu, req);
    default:
        g_assert_not_reached();
    }
}
