/* Channels as NCCL runs them: how many thread blocks (CTAs) a call gets, what one of them can
 * copy per second, and what each slice it sends costs it in synchronization. These three make
 * the mid-size ramp of every real nccl-tests curve: at 8 MiB a DGX H100 all-reduce runs at a
 * third of its peak, not because the links are slow but because each channel moves small
 * slices, pays a fence and a flag per slice, and (for send/recv) few channels run at all.
 *
 * Sources (NCCL 2.18-2.23, point-to-point 2.29: src/graph/search.cc, connect.cc, paths.cc,
 * tuning.cc, enqueue.cc, src/device/prims_simple.h); see docs/collectives.md, "Channels". */
#include "collectives/ring_order.h"
#include "collectives/tuner_internal.h"

#include <limits.h>
#include <math.h>
#include <string.h>

/* NCCL's ring search tries these per-channel speeds (GB/s), fastest first (search.cc). */
static const double speeds_sm90[] = {60, 50, 40, 30, 24, 20, 15, 12, 11, 6, 3};
static const double speeds_older[] = {40, 30, 20, 18, 15, 12, 10, 9, 7, 6, 5, 4, 3};
#define SEARCH_MAX_CHANNELS 16 /* MAXCHANNELS / 2 */
#define MAX_CHANNELS        32 /* MAXCHANNELS */
/* MAXCHANNELS since NCCL 2.25 (device.h), where NCCL caps its CTA bounds */
#define NCCL_MAXCHANNELS 64

/* Per-channel thread counts and the bytes per thread below which a channel is dropped
 * (NCCL_{LL,LL128,SIMPLE}_THREAD_THRESHOLD; LL's is per rank on a ring). */
static const int max_threads[ICS_PROTO_COUNT] = {512, 640, 512};
static const int thread_threshold[ICS_PROTO_COUNT] = {8, 8, 64};

/* Point-to-point (enqueue.cc addP2pToPlan, paths.cc ncclTopoGetNchannels and
 * ncclTopoComputeP2pChannels, NCCL 2.29): NCCL's default steps, the Simple buffer that caps
 * them, the batch of peers a channel runs at once (NCCL_MAX_DEV_WORK_P2P_PER_BATCH) and the
 * bandwidth it counts a channel across the network for (NCCL_P2P_PER_CHANNEL_NET_BW). */
#define P2P_NET_STEP             (128 * 1024)
#define P2P_NVL_STEP             (512 * 1024)
#define P2P_PCI_STEP             (128 * 1024)
#define P2P_BUFFSIZE             (4 << 20)
#define P2P_PER_BATCH            8
#define P2P_PER_CHANNEL_NET_GBPS 14

/* NCCL's ring search on one node of NVLink through switches: the fastest speed that carries the
 * most in total (ties to the faster: it tries them in order), at most 16 channels; then
 * ncclTopoDupChannels doubles the channels unless a Hopper+ graph is slow and wide, and
 * ncclTopoPostset doubles them again (bounded by MAXCHANNELS). DGX H100: 18 x 20.6 GB/s = 6
 * channels at 60 -> 12 -> 24; DGX A100: 12 x 20 = 6 at 40 -> 12 -> 24; H800 (8 links): 4 at 40
 * -> 8 -> 16, as its logs print. */
static int search_channels(const ics_tuner *tu, double total_gbps)
{
    bool new_gpu = ics_tuner_nccl_sm90_or_later(tu);
    const double *sp = new_gpu ? speeds_sm90 : speeds_older;
    int ns = new_gpu ? (int)G_N_ELEMENTS(speeds_sm90) : (int)G_N_ELEMENTS(speeds_older);
    int nc = 1;
    double speed = sp[ns - 1], best = 0;
    for (int i = 0; i < ns; i++) {
        int k = (int)MIN(SEARCH_MAX_CHANNELS, floor(total_gbps / sp[i] + 1e-9));
        if (k >= 1 && k * sp[i] > best + 1e-9) {
            best = k * sp[i];
            nc = k;
            speed = sp[i];
        }
    }
    if (speed >= 25 && !(new_gpu && speed < 50 && nc > 4))
        nc *= 2;
    return MIN(MAX_CHANNELS, 2 * nc);
}

/* Across nodes NCCL's search finds one ring per NIC, duplicated where the NICs are fast
 * (tuner_nccl.c inter_graphs: the graph's channels), and ncclTopoPostset doubles them, up to
 * MAXCHANNELS: 16 on an 8-NIC DGX, 32 on a p5's 32 EFA, 8 on Snellius' 4 x 200 Gb/s and 4 on
 * Polaris' 2 Slingshot NICs, as their logs print ("8 coll channels", "4 coll channels"). With
 * NICs down (topo.h, ics_topo_fail) as many fewer as the worst node of the ranks lost: the
 * intact count (16 where it was matched to the logs), scaled. */
static int multi_node_channels(const ics_tuner *tu)
{
    const ics_topo *t = tu->t;
    if (ics_topo_nfailures(t) == 0)
        return MIN(MAX_CHANNELS, 2 * tu->graph_channels);
    int nics = ics_topo_nics_per_node(t), fewest = INT_MAX, compute = 0;
    for (int i = 0; i < nics; i++)
        compute += ics_topo_dev_get(t, ics_topo_nic(t, 0, i))->rail >= 0;
    for (int r = 0; r < tu->n; r++) {
        int node = ics_topo_dev_get(t, tu->ranks[r])->node, live = 0;
        if (r > 0 && node == ics_topo_dev_get(t, tu->ranks[r - 1])->node)
            continue;
        for (int i = 0; i < nics; i++) {
            const ics_topo_dev *d = ics_topo_dev_get(t, ics_topo_nic(t, node, i));
            live += d->rail >= 0 && !d->down;
        }
        fewest = MIN(fewest, live);
    }
    return compute > 0 ? MAX(2, 16 * fewest / compute) : 16;
}

int ics_tuner_channels_find(const ics_tuner *tu)
{
    if (tu->nnodes > 1)
        return multi_node_channels(tu);
    /* GPUs wired to each other: NCCL's search tries the same speeds over a GPU's NVLinks, each
     * channel on an NVLink-only ring (ring_order.h), and never more than twice the rings the
     * links carry (fewer after failures): DGX-1V, 6 x 20 GB/s, 3 rings at 40 -> 6 -> 12
     * channels; 4 H100 wired to each other, 18 x 20.6, 6 at 60 -> 12 -> 24, the "Channel
     * 00/24" of Snellius' logs (2 x 18 = 36, capped at 32, before) */
    if (ics_ring_orders_differ(tu->t, tu->ranks, tu->n)) {
        int rings = ics_ring_mesh_rings(tu->t, tu->ranks, tu->n);
        return MIN(search_channels(tu, rings * tu->nvlink_gbps), MIN(MAX_CHANNELS, 2 * rings));
    }
    bool nvlink = tu->intra_class == 0 && tu->nvlinks > 0;
    return search_channels(tu, nvlink ? tu->nvlinks * tu->nvlink_gbps : tu->ring_gbps);
}

/* The smallest power of two at least n. */
static int pow2_up(int n)
{
    int p = 1;
    while (p < n)
        p *= 2;
    return p;
}

uint64_t ics_tuner_p2p_step(const ics_tuner *tu, const ics_coll_tuning *want)
{
    int given = tu->nnodes > 1   ? want->p2p_net_chunk
                : tu->all_nvlink ? want->p2p_nvl_chunk
                                 : want->p2p_pci_chunk;
    uint64_t step = given > 0        ? (uint64_t)given
                    : tu->nnodes > 1 ? P2P_NET_STEP
                    : tu->all_nvlink ? P2P_NVL_STEP
                                     : P2P_PCI_STEP;
    /* "GBx platforms only have 4 GPUs per host": a Grace host with Blackwell doubles the net
     * step (init.cc computeBuffSizes), the variable's value included */
    if (tu->nnodes > 1 && tu->arm_cpu && strcmp(tu->arch, "sm100") == 0)
        step *= 2;
    uint64_t buff = (uint64_t)(want->buffsize > 0 ? want->buffsize : P2P_BUFFSIZE);
    return MAX(1, MIN(step, buff / 8));
}

/* NCCL's channels for a peer across the network: NCCL_NCHANNELS_PER_NET_PEER where set, else
 * one per NIC of the GPU's own (tuner.h p2p_nics) and more to carry their bandwidth at 14 GB/s
 * (NCCL_P2P_PER_CHANNEL_NET_BW) a channel, divided as NCCL divides, in whole GB/s: 4 for a 400
 * Gb/s NIC, 2 for 200 Gb/s, 1 for 100 Gb/s, 4 for a p5's 4 x 100 Gb/s; 2 without a NIC. */
int ics_tuner_net_peer_channels_of(int nics, double gbps, int per_channel_gbps)
{
    int per = per_channel_gbps > 0 ? per_channel_gbps : P2P_PER_CHANNEL_NET_GBPS;
    return nics <= 0 ? 2 : MAX(nics, ((int)gbps + per - 1) / per);
}

static int net_peer_channels(const ics_tuner *tu, const ics_coll_tuning *want)
{
    if (want->net_peer_channels > 0)
        return want->net_peer_channels;
    return ics_tuner_net_peer_channels_of(tu->p2p_nics, tu->p2p_nic_gbps,
                                          want->p2p_channel_net_gbps);
}

/* NCCL's channels per peer (p2pnChannelsPerPeer): the fewest any peer gets, rounded up to a
 * power of two, at most the p2p channels. A peer on PCIe gets 2, one on NVLink 2 per link (on
 * one node NCCL's 32 after the cap; across nodes never fewer than a network peer's on a
 * shipped model: 2 x 18 on a DGX, 2 x 6 on Snellius' boards), one across the network
 * net_peer_channels; since 2.29, across nodes, the count is halved until every peer of the
 * communicator fits one round of the p2p channels, 8 peers a channel ("the network is the
 * bottleneck"), unless NCCL_NCHANNELS_PER_NET_PEER set it. */
static int p2p_per_peer(const ics_tuner *tu, const ics_coll_tuning *want, int p2p_total)
{
    int fewest = tu->intra_class == 0 && tu->nvlinks > 0 ? MAX_CHANNELS : 2;
    if (tu->nnodes > 1)
        fewest =
            tu->ppn > 1 ? MIN(fewest, net_peer_channels(tu, want)) : net_peer_channels(tu, want);
    int per_peer = MIN(p2p_total, pow2_up(fewest));
    if (tu->nnodes > 1 && want->net_peer_channels <= 0)
        while (per_peer > 1 &&
               (int64_t)per_peer * ((tu->n + P2P_PER_BATCH - 1) / P2P_PER_BATCH) > p2p_total)
            per_peer /= 2;
    return per_peer;
}

/* Point-to-point channels for one peer's `bytes` (enqueue.cc addP2pToPlan, since 2.21): as many
 * channels as parts of half a step across nodes (an eighth on one node), up to the per-peer
 * count halved until every rank's peers fit in the p2p channels, then doubled while a part is
 * over one step across nodes (32 steps on one node: 16 MiB on NVLink, 4 MiB over PCIe), up to
 * the per-peer count. Two DGX H100 get 4 a peer (the 2-node send/recv logs: 44-46 GB/s, a 400
 * Gb/s NIC's worth); 80 ranks over 16 channels 1 (the 80-rank send/recv log: one channel's
 * 15.2 GB/s). The p2p channels are the communicator's, rounded up to a power of two
 * (ncclTopoComputeP2pChannels): 32 on a DGX H100's 24, 8 on two Snellius nodes, 4 on two
 * Polaris nodes, as their logs print ("8 p2p channels, 2 p2p channels per peer"). */
int ics_tuner_p2p_channels(const ics_tuner *tu)
{
    return pow2_up(MIN(MAX_CHANNELS, tu->nccl_channels));
}

static int p2p_channels(const ics_tuner *tu, const ics_coll_tuning *want, uint64_t bytes)
{
    int p2p_total = ics_tuner_p2p_channels(tu);
    int per_peer = p2p_per_peer(tu, want, p2p_total), lo = per_peer;
    while (lo > 1 && (int64_t)lo * tu->n > p2p_total)
        lo /= 2;
    uint64_t step = ics_tuner_p2p_step(tu, want);
    uint64_t min_part = MAX(1, tu->nnodes > 1 ? step / 2 : step / 8);
    uint64_t max_part = step * (tu->nnodes > 1 ? 1 : 32);
    int nch = (int)MIN((uint64_t)lo, (bytes + min_part - 1) / min_part);
    nch = MAX(nch, 1);
    uint64_t part = MAX(min_part, (bytes + (uint64_t)nch - 1) / (uint64_t)nch);
    while (part > max_part && nch <= per_peer / 2) {
        nch *= 2;
        part = (bytes + (uint64_t)nch - 1) / (uint64_t)nch;
    }
    return nch;
}

/* NCCL's nBytes: one rank's buffer (for all-gather and reduce-scatter nccl-tests' size column
 * is every rank's together). */
static uint64_t nccl_bytes(const ics_tuner *tu, const ics_coll_req *req)
{
    bool per_rank = req->op == ICS_COLL_ALL_GATHER || req->op == ICS_COLL_REDUCE_SCATTER;
    return per_rank ? req->size_bytes / (uint64_t)tu->n : req->size_bytes;
}

/* Ring and tree on one node: NCCL drops channels while each would get fewer bytes than its
 * threads' threshold (LL's is per rank on a ring), so that small calls use few CTAs. */
static int small_call_channels(const ics_tuner *tu, uint64_t bytes, ics_coll_algo algo,
                               ics_coll_proto proto, int nch)
{
    uint64_t per = (uint64_t)max_threads[proto] * (uint64_t)thread_threshold[proto];
    if (algo == ICS_ALGO_RING && proto == ICS_PROTO_LL)
        per *= (uint64_t)tu->n;
    return (int)MAX(1, MIN((uint64_t)nch, bytes / per));
}

/* Across nodes the simulation runs one ring or tree channel per NIC (8 on DGX, at least 8;
 * 32 on a p5, whose GPUs have 4 each), never more than NCCL runs; each stands for several of
 * NCCL's (ics_tuner_ctas_per_channel). A tree channel
 * also keeps at least 64 KiB: the tree plan charges no per-slice synchronization or CTA ceiling
 * yet, so thinner channels would only make small trees faster than measured (2 x 8 A100 below
 * 1 MiB: 9.0% with the floor, 14.3% without). */
#define MULTI_NODE_CHANNELS 8
#define TREE_MIN_CHANNEL    (64 * 1024)

/* NCCL's NVLS channels (transport/nvls.cc, 2.27-2.29): 16 on Hopper; on Blackwell 24 while the
 * communicator is one NVLink domain (a node, or one MNNVL clique) and 32 across domains; 2.25 and
 * 2.26 ran 32 on both (want->nccl_version). NCCL_NVLS_NCHANNELS replaces the default, and
 * NCCL_MIN_CTAS / NCCL_MAX_CTAS bound the result; NCCL_MIN/MAX_NCHANNELS do not (they bound the
 * ring and tree graphs' channels, graph/connect.cc). NVLS-Tree runs on these channels too. */
int ics_tuner_nvls_channels(const ics_tuner *tu, const ics_coll_tuning *want)
{
    int nch = ICS_NVLS_CHANNELS;
    bool one_domain_24 = want->nccl_version == 0 || want->nccl_version >= 22700;
    if (strcmp(tu->arch, "sm100") == 0)
        nch = tu->nnodes > 1 || !one_domain_24 ? ICS_NVLS_CHANNELS_SM100
                                               : ICS_NVLS_CHANNELS_SM100_NVL;
    if (want->nvls_channels > 0)
        nch = want->nvls_channels;
    if (want->max_ctas > 0)
        nch = MIN(nch, want->max_ctas);
    if (want->min_ctas > 0)
        nch = MAX(nch, want->min_ctas);
    return MIN(nch, NCCL_MAXCHANNELS);
}

/* The channels NCCL itself runs the call on. */
static int nccl_call_channels(const ics_tuner *tu, const ics_coll_req *req,
                              const ics_coll_tuning *want, ics_coll_algo algo, ics_coll_proto proto)
{
    if (algo == ICS_ALGO_NVLS)
        return ics_tuner_nvls_channels(tu, want); /* whatever the size (enqueue.cc) */
    if (algo == ICS_ALGO_DIRECT)
        return p2p_channels(tu, want, ics_coll_req_peer_bytes(req, tu->n));
    return small_call_channels(tu, nccl_bytes(tu, req), algo, proto, tu->nccl_channels);
}

/* NCCL_MIN/MAX_NCHANNELS (with the CTA bounds folded in: nccl_env.c) on every channel count but
 * NVLS's, whose own rule has its bounds already. */
static int bounded(const ics_coll_tuning *want, ics_coll_algo algo, int nch)
{
    if (algo == ICS_ALGO_NVLS)
        return nch;
    if (want->min_channels > 0)
        nch = MAX(nch, want->min_channels);
    if (want->max_channels > 0)
        nch = MIN(nch, want->max_channels);
    return nch;
}

int ics_tuner_channels(const ics_tuner *tu, const ics_coll_req *req, const ics_coll_tuning *want,
                       ics_coll_algo algo, ics_coll_proto proto)
{
    int nch = nccl_call_channels(tu, req, want, algo, proto);
    if (tu->nnodes > 1 && algo != ICS_ALGO_NVLS && algo != ICS_ALGO_DIRECT)
        nch = MIN(nch, MAX(MULTI_NODE_CHANNELS, tu->nics));
    while (tu->nnodes > 1 && algo == ICS_ALGO_TREE && nch > 1 &&
           req->size_bytes / (uint64_t)nch < TREE_MIN_CHANNEL)
        nch /= 2;
    return MAX(bounded(want, algo, nch), 1);
}

int ics_tuner_ctas_per_channel(const ics_tuner *tu, const ics_coll_req *req,
                               const ics_coll_tuning *want, ics_coll_algo algo,
                               ics_coll_proto proto, int nch)
{
    int nccl = bounded(want, algo, nccl_call_channels(tu, req, want, algo, proto));
    return MAX(1, nccl / MAX(1, nch));
}

uint64_t ics_tuner_cta_bytes_per_s(const ics_tuner *tu)
{
    /* NCCL's per-channel ceiling of a tree on one node counts what its CTA moves up and down
     * the tree at once (tuning.cc perChMaxTreeBws: 38.7 GB/s on Hopper); one direction is half.
     * On DGX H100 that is 19.35 GB/s, and 4 channels of send/recv give 77 GB/s against the
     * 79-82 measured up to 64 MiB (xxrjun_h100_1node_8gpu_sendrecv). */
    double gbps = tu->cal[ICS_CAL_CTA_GBPS];
    if (!isnan(gbps))
        return (uint64_t)llround(gbps * 1e9);
    return (uint64_t)llround(ics_tuner_nccl_tree_channel_gbps(tu) / 2 * 1e9);
}

ics_time ics_tuner_sync_lat(const ics_tuner *tu, ics_coll_proto proto)
{
    /* Simple: after each slice the CTA waits for its stores to land (a system-scope fence) and
     * posts a flag; NCCL's per-step latency inside a node covers a step's two slices
     * (prims_simple.h: SlicePerChunk 2), so half of it per slice. LL and LL128 carry their
     * flags inside the data: no separate synchronization. */
    if (proto != ICS_PROTO_SIMPLE)
        return 0;
    double us = tu->cal[ICS_CAL_SYNC_US];
    if (!isnan(us))
        return (ics_time)llround(us * ICS_PS_PER_US);
    return ics_tuner_nccl_hop_lat(tu, ICS_ALGO_RING, ICS_PROTO_SIMPLE, false) / 2;
}

double ics_tuner_sync_share(const ics_tuner *tu, const ics_coll_tuning *want, ics_coll_algo algo,
                            ics_coll_proto proto)
{
    /* only where a figure of NCCL's sets the rate (its NVLink kernel rate, its NVLS efficiency):
     * across the network the links' own rate applies and the synchronization comes on top */
    double sync_s = ics_time_to_s(ics_tuner_sync_lat(tu, proto));
    bool nvlink = tu->nnodes == 1 && tu->intra_class == 0 && tu->nvlinks > 0;
    if (sync_s <= 0 || !nvlink)
        return 0;
    /* a calibrated figure is a measured large-message rate too: synchronization included */
    double link_gbps =
        isnan(tu->cal[ICS_CAL_NVLINK_GBPS]) ? tu->nvlink_gbps : tu->cal[ICS_CAL_NVLINK_GBPS];
    double nvls =
        isnan(tu->cal[ICS_CAL_NVLS_EFF]) ? ics_tuner_nccl_nvls_eff(tu) : tu->cal[ICS_CAL_NVLS_EFF];
    double total = tu->nvlinks * link_gbps * 1e9, full;
    int nch;
    switch (algo) {
    case ICS_ALGO_RING: /* a 2 MiB chunk in two slices */
        nch = tu->nccl_channels;
        full = 1024.0 * 1024;
        break;
    /* NVLS: 128 KiB per head, two hand-offs, 1 + 1/n of the data on the links. NCCL's default
     * chunk whatever NCCL_NVLS_CHUNKSIZE says: the share is what NCCL's NVLS efficiency, measured
     * at the default, already holds; the plan (nvls.c) charges the chunks it runs */
    case ICS_ALGO_NVLS:
        nch = ics_tuner_nvls_channels(tu, want);
        full = 128.0 * 1024 * tu->n;
        total = tu->nvlinks * tu->nvlink_gbps * 1e9; /* NCCL's link figure: see wire_factor */
        total *= nvls / (1 + 1.0 / tu->n);
        sync_s *= 2;
        break;
    case ICS_ALGO_DIRECT: /* a 512 KiB step, every p2p channel busy */
        nch = MAX_CHANNELS;
        full = 512.0 * 1024;
        break;
    default:
        return 0;
    }
    double slice_s = full / (total / nch);
    return MIN(0.5, sync_s / slice_s);
}
