/* The tuner (tuner.c): NCCL's choice of algorithm, protocol and channels, and the
 * efficiencies the simulation applies to the chosen combination. */
#ifndef ICS_TUNER_H
#define ICS_TUNER_H

#include "collectives/comm.h"

typedef struct {
    const ics_topo *t;
    const int *ranks;
    int n;
    const char *arch;
    double ring_gbps;            /* slowest neighbour route of the rank-order ring, GB/s */
    int ring_class;              /* its slowest link class: 0 NVLink, 1 PCI, 2 network */
    double kernel_eff;           /* NCCL kernels' NVLink rate over our links' payload rate */
    uint64_t reduce_bytes_per_s; /* GPU memory bandwidth */
    /* What NCCL's model of the algorithms that span nodes reads (tuner_nccl.c): */
    int nnodes, ppn;   /* nodes, ranks per node (nRanks / nNodes, as NCCL) */
    int intra_class;   /* slowest link class between a node's ranks: 0 NVLink, 1 PCI */
    double intra_gbps; /* one node's rank-order ring at NCCL's kernel rate, GB/s (NCCL's
                          nChannels x bwIntra); INFINITY with one rank per node */
    double net_gbps;   /* the smallest node's compute NICs in use, summed, GB/s (nChannels x
                          bwInter); 0 on a single node */
    int heads;         /* the fewest ranks of a node with a NIC of their own (CollNet heads) */
    int nics;          /* the fewest distinct NICs a node's ranks' channels use */
    bool amd_cpu;      /* NCCL's LL ceilings and network overhead differ on AMD hosts */
    bool arm_cpu;      /* Grace: NCCL doubles its network p2p step there with Blackwell */
    bool all_nvlink;   /* one node whose GPUs all reach each other over NVLink (NCCL's
                          isAllNvlink: its 512 KiB point-to-point step) */
    /* A GPU's own NICs as NCCL counts them for point-to-point (topo.cc getLocalNetCountByBw):
     * its nearest NICs, until their bandwidth (each capped by the GPU's and the NIC's PCIe)
     * reaches the GPU's PCIe bandwidth; their count and that bandwidth, GB/s; the rank with the
     * fewest channels (channels.c). 0 on one node or without NICs */
    int p2p_nics;
    double p2p_nic_gbps;
    double net_lat_us;  /* NCCL's latencyInter: what the network plugin reports for the node's
                           compute NICs (their largest plugin_latency); 0 on one node */
    bool ll128_default; /* NCCL enables LL128 here unless NCCL_PROTO says otherwise */
    int nvlinks;        /* NVLinks of a GPU (rank 0's) */
    double nvlink_gbps; /* NCCL's figure for one NVLink of this GPU (20.6 GB/s on SM90) */
    int nccl_channels;  /* NCCL's channel count for the communicator (channels.c) */
    int graph_channels; /* across nodes, the channels of NCCL's ring and tree graphs, which its
                           tuner multiplies per-channel ceilings by (tuner_nccl.c); 0 on one node */
    double tree_gbps;   /* across nodes, nChannels x bw of NCCL's tree graph (tuner_nccl.c) */
    /* What the hardware achieves where a calibration says so (hw.h: ics_hw_calibration; NAN
     * where NCCL's figure holds). NCCL's choices never read these: its tuner has only its
     * constants. The simulation does (ics_tuner_price_call, channels.c). */
    const double *cal;          /* ICS_CAL_COUNT values, owned by the model */
    double nvlink_payload_gbps; /* one NVLink's rate after packet headers, GB/s */
} ics_tuner;

/* NCCL's NVLS channels by default (transport/nvls.cc: "NVLS multicast support is available on dev
 * 0 (NVLS_NCHANNELS 16)"): Hopper's, and Blackwell's (2.27-2.29) in one NVLink domain and across
 * domains. What a call runs on: ics_tuner_nvls_channels. */
#define ICS_NVLS_CHANNELS           16
#define ICS_NVLS_CHANNELS_SM100_NVL 24
#define ICS_NVLS_CHANNELS_SM100     32

/* The host's time to launch one GPU's kernel, us, where no calibration says otherwise. Back to
 * back, a thread issues kernels no faster than this: NVIDIA's "Getting Started with CUDA Graphs"
 * (developer.nvidia.com/blog/cuda-graphs, 2019) measures 3.8 us per launch of a 2.9 us kernel
 * issued without synchronization (9.6 us with a stream sync after each, 3.4 us as a graph). A
 * collective call's host work (NCCL's enqueue, then the launch) is at least that, so a thread
 * that drives G GPUs (nccl-tests -g G) completes a call no faster than G of these (comm.c). */
#define ICS_TUNER_LAUNCH_US 3.8

void ics_tuner_init(ics_tuner *tu, const ics_topo *t, const int *ranks, int n);

/* The fastest combination by NCCL's cost model among the algorithms in `supported` (a bit per
 * ics_coll_algo: what can run this operation on these ranks, comm.c asks the algorithms) and
 * what `want` allows; false if none applies. */
bool ics_tuner_pick(const ics_tuner *tu, const ics_coll_req *req, const ics_coll_tuning *want,
                    unsigned supported, ics_coll_algo *algo, ics_coll_proto *proto);

/* Everything the simulation charges a call run with one combination: the channels and what
 * each costs, the protocol's wire bytes, NCCL's latencies. What ics_algo_ctx carries. */
typedef struct {
    int nch;                  /* simulated channels: NVLS its own; send/recv and all-to-all NCCL's
                                 per-peer rule; rings and trees on one node NCCL's count, fewer for
                                 small calls; across nodes 8 (one per NIC on DGX), halved while each
                                 gets less than 64 KiB of a tree; NCCL_MIN/MAX_NCHANNELS clamp it */
    int nvls_channels;        /* NCCL's, for NVLS and NVLS-Tree (ics_tuner_nvls_channels) */
    int ctas_per_channel;     /* NCCL's channels (CTAs) each simulated one stands for, >= 1 */
    double wire_factor;       /* wire bytes per payload byte (protocol, kernel rate, NVLS traffic),
                                 less the synchronization's share (sync_share below) */
    double sync_share;        /* NCCL's rate figures include the per-slice synchronization that the
                                 simulation charges apart: the share of a full slice's time it takes
                                 (DGX H100: ring 2.5%, NVLS 5.7%, send/recv 3.8%); 0 across nodes,
                                 on PCIe and for LL/LL128 */
    ics_time base_lat_ps;     /* launch and protocol start-up, once */
    ics_time step_lat_ps;     /* NCCL's per-hop latency (inside a node for mixed-leg algorithms) */
    ics_time net_step_lat_ps; /* NCCL's latency of one network hop (tree, NVLS-Tree,
                                 CollNet, PAT; the step latency otherwise) */
    ics_time net_msg_ps;      /* rings and point-to-point: what a send across the network
                                 waits first, the network plugin's latency (NCCL's
                                 latencyInter, twice with Simple); in net_step_lat_ps for the
                                 others */
    ics_time net_op_ps;       /* point-to-point across nodes: what posting one send or receive
                                 costs the GPU's proxy thread (NCCL's network overhead, 1 us on
                                 Intel hosts, 2 on AMD, or a calibration's proxy_us); 0 on one
                                 node */
    uint64_t net_msg_bytes;   /* wire bytes each message across the network adds: the
                                 transport's per-message gap at a NIC's line rate (msg_us of a
                                 calibration; 0 by default) */
    ics_time sync_ps;         /* a CTA's synchronization per slice it sends (Simple: half
                                 NCCL's per-step latency inside a node, 1.7 us on NVLink) */
    uint64_t cta_bytes_per_s; /* what one CTA copies at most (half NCCL's per-channel tree
                                 ceiling on one node: 19.35 GB/s on Hopper) */
    uint64_t reduce_bytes_per_s; /* GPU reduction rate (HBM) */
    /* wire bytes per payload byte of the legs of algorithms that mix link classes: inside a
     * node, across the network, pushed into an NVLS switch (see ics_algo_ctx) */
    double intra_wire_factor, net_wire_factor, nvls_wire_factor;
} ics_tuner_price;

/* Prices one combination for one call (NCCL_MIN/MAX_NCHANNELS from `want`). */
void ics_tuner_price_call(const ics_tuner *tu, const ics_coll_req *req, const ics_coll_tuning *want,
                          ics_coll_algo algo, ics_coll_proto proto, ics_tuner_price *out);

/* A calibration parameter's value in effect for this communicator: the calibrated one, else
 * the default the simulation uses (NCCL's figure for the GPU or the host, 1 for factors, 0 for
 * launch). */
double ics_tuner_cal_value(const ics_tuner *tu, ics_cal_param p);

/* NCCL's channel count for the communicator (comm->nChannels), found once by ics_tuner_init:
 * on one node what its ring search finds, doubled twice (24 on DGX H100 and DGX A100); 2 per
 * NVLink of a GPU where GPUs are wired to each other (DGX-1's rings are an exhaustive search
 * for Hamiltonian cycles); 16 across nodes. */
static inline int ics_tuner_nccl_channels(const ics_tuner *tu)
{
    return tu->nccl_channels;
}

/* NCCL's point-to-point step (comm->p2pChunkSize, init.cc computeBuffSizes): across nodes the
 * net chunk (128 KiB; twice on Grace with Blackwell), on all-NVLink the NVLink chunk (512 KiB),
 * else the PCIe chunk (128 KiB); NCCL_P2P_*_CHUNKSIZE where set; at most an eighth of the
 * Simple buffer (NCCL_BUFFSIZE, 4 MiB). */
uint64_t ics_tuner_p2p_step(const ics_tuner *tu, const ics_coll_tuning *want);
/* NCCL's point-to-point channels (comm->p2pnChannels, paths.cc ncclTopoComputeP2pChannels):
 * the communicator's channels rounded up to a power of two, at most MAXCHANNELS. */
int ics_tuner_p2p_channels(const ics_tuner *tu);

#endif
