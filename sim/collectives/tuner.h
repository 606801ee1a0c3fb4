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
    int nnodes, ppn;    /* nodes, ranks per node (nRanks / nNodes, as NCCL) */
    int intra_class;    /* slowest link class between a node's ranks: 0 NVLink, 1 PCI */
    double intra_gbps;  /* one node's rank-order ring at NCCL's kernel rate, GB/s (NCCL's
                           nChannels x bwIntra); INFINITY with one rank per node */
    double net_gbps;    /* the smallest node's compute NICs in use, summed, GB/s (nChannels x
                           bwInter); 0 on a single node */
    int heads;          /* the fewest distinct NICs a node's ranks use (CollNet heads) */
    bool amd_cpu;       /* NCCL's LL ceilings and network overhead differ on AMD hosts */
    int nvlinks;        /* NVLinks of a GPU (rank 0's) */
    double nvlink_gbps; /* NCCL's figure for one NVLink of this GPU (20.6 GB/s on SM90) */
    int nccl_channels;  /* NCCL's channel count for the communicator (channels.c) */
} ics_tuner;

/* NCCL's NVLS channels: "NVLS multicast support is available (NVLS_NCHANNELS 16)" */
#define ICS_NVLS_CHANNELS 16

void ics_tuner_init(ics_tuner *tu, const ics_topo *t, const int *ranks, int n);
/* Wire bytes per payload byte for a combination (protocol, kernel, NVLS traffic). */
double ics_tuner_wire_factor(const ics_tuner *tu, ics_coll_algo algo, ics_coll_proto proto);
ics_time ics_tuner_base_lat(const ics_tuner *tu, ics_coll_algo algo, ics_coll_proto proto);
ics_time ics_tuner_step_lat(const ics_tuner *tu, ics_coll_algo algo, ics_coll_proto proto);
/* NCCL's latency of one network hop of algo (tree, NVLS-Tree, CollNet, PAT). */
ics_time ics_tuner_net_step_lat(const ics_tuner *tu, ics_coll_algo algo, ics_coll_proto proto);
/* Wire bytes per payload byte of the legs of algorithms that mix link classes: inside a node,
 * across the network, and pushed into an NVLS switch (see ics_algo_ctx). */
void ics_tuner_leg_factors(const ics_tuner *tu, ics_coll_algo algo, ics_coll_proto proto,
                           double *intra, double *net, double *nvls);
/* The fastest allowed combination by NCCL's cost model; false if none applies. */
bool ics_tuner_pick(const ics_tuner *tu, const ics_coll_req *req, const ics_coll_tuning *want,
                    bool (*supports)(const ics_tuner *, ics_coll_algo, const ics_coll_req *),
                    ics_coll_algo *algo, ics_coll_proto *proto);

/* ---- channels.c: NCCL's channels (thread blocks), what each copies, what a slice costs it ---- */

/* NCCL's channel count for the communicator (comm->nChannels): on one node what its ring search
 * finds, doubled twice (24 on DGX H100 and DGX A100); 2 per NVLink of a GPU where GPUs are
 * wired to each other; 16 across nodes. */
int ics_tuner_nccl_channels_find(const ics_tuner *tu);
/* The same, as ics_tuner_init found it once (the search behind it is not free: DGX-1's rings are
 * an exhaustive search for Hamiltonian cycles). */
static inline int ics_tuner_nccl_channels(const ics_tuner *tu)
{
    return tu->nccl_channels;
}
/* The channels a call is simulated on: NVLS 16; send/recv and all-to-all NCCL's per-peer rule;
 * rings and trees on one node NCCL's count, fewer for small calls (threads' thresholds); across
 * nodes 8 (one per NIC on DGX), halved while each would get less than 64 KiB of its unit of
 * work; NCCL_MIN/MAX_NCHANNELS clamp it. */
int ics_tuner_channels(const ics_tuner *tu, const ics_coll_req *req, const ics_coll_tuning *want,
                       ics_coll_algo algo, ics_coll_proto proto);
/* How many of NCCL's channels (CTAs) each of the nch simulated ones stands for: across nodes the
 * simulation runs a ring or tree channel per NIC, NCCL twice as many or more. At least 1. */
int ics_tuner_ctas_per_channel(const ics_tuner *tu, const ics_coll_req *req,
                               const ics_coll_tuning *want, ics_coll_algo algo,
                               ics_coll_proto proto, int nch);
/* What one channel's CTA copies per second at most, bytes/s (half NCCL's per-channel tree
 * ceiling on one node: 19.35 GB/s on Hopper). */
uint64_t ics_tuner_cta_bytes_per_s(const ics_tuner *tu);
/* What a CTA spends synchronizing per slice it sends (Simple: half NCCL's per-step latency
 * inside a node, 1.7 us on NVLink; LL and LL128: 0, their flags travel with the data). */
ics_time ics_tuner_sync_lat(const ics_tuner *tu, ics_coll_proto proto);
/* NCCL's bandwidth figures (20.6 GB/s per NVLink on SM90, NVLS efficiency 0.85) are what its
 * kernels achieve on large messages, synchronization included; the simulation charges the
 * synchronization apart, so the links move data faster by the share of a full-size slice's time
 * it takes (on DGX H100: ring 2.5%, NVLS 5.7%, send/recv 3.8%). 0 where no such figure applies
 * (across nodes, PCIe) or nothing synchronizes per slice (LL, LL128). */
double ics_tuner_sync_share(const ics_tuner *tu, ics_coll_algo algo, ics_coll_proto proto);

/* NCCL's NVLS efficiency for the tuner's GPU (0.85 Hopper, 0.74 Blackwell). */
double ics_tuner_nvls_eff(const ics_tuner *tu);

/* ---- tuner_nccl.c: NCCL's cost model where its per-leg terms matter: Tree, NVLS-Tree, CollNet,
 * PAT, and rings across nodes (intra- and inter-node steps priced apart) ---- */

/* Fills the nnodes .. amd_cpu fields of tu (called by ics_tuner_init). */
void ics_tuner_nccl_init(ics_tuner *tu);
/* True if tuner_nccl.c prices this combination (the estimate below applies). */
bool ics_tuner_nccl_prices(const ics_tuner *tu, const ics_coll_req *req, ics_coll_algo algo);
/* NCCL's time estimate, microseconds; INFINITY where NCCL would not run the combination. */
double ics_tuner_nccl_estimate_us(const ics_tuner *tu, const ics_coll_req *req, ics_coll_algo algo,
                                  ics_coll_proto proto);
/* NCCL's per-channel ceiling of a tree on one node (perChMaxTreeBws), GB/s. */
double ics_tuner_nccl_tree_channel_gbps(const ics_tuner *tu);
/* NCCL's per-hop latency of algo inside a node (net false) or across the network, ps. */
ics_time ics_tuner_nccl_hop_lat(const ics_tuner *tu, ics_coll_algo algo, ics_coll_proto proto,
                                bool net);

#endif
