/* What the tuner's three files share (tuner.c picks and prices; channels.c gives NCCL's channel
 * counts, CTA rates and synchronization; tuner_nccl.c holds NCCL's constants and cost model).
 * Calls go one way: tuner.c -> channels.c -> tuner_nccl.c; tuner.c -> tuner_nccl.c. */
#ifndef ICS_TUNER_INTERNAL_H
#define ICS_TUNER_INTERNAL_H

#include "collectives/tuner.h"

/* ---- tuner_nccl.c: NCCL's constants (src/graph/tuning.cc) and its cost model ---------------- */

/* Fills the arch-dependent and per-node fields of tu: nnodes .. amd_cpu, nvlink_gbps,
 * kernel_eff (called by ics_tuner_init once ring_gbps, ring_class and nvlinks are set). */
void ics_tuner_nccl_init(ics_tuner *tu);
/* NCCL's time estimate of a combination, microseconds; INFINITY where NCCL would not run it. */
double ics_tuner_nccl_estimate_us(const ics_tuner *tu, const ics_coll_req *req, ics_coll_algo algo,
                                  ics_coll_proto proto);
/* NCCL's base latency (launch and protocol start-up) of a combination. */
ics_time ics_tuner_nccl_base_lat(const ics_tuner *tu, ics_coll_algo algo, ics_coll_proto proto);
/* NCCL's per-hop latency of algo inside a node (net false) or across the network. */
ics_time ics_tuner_nccl_hop_lat(const ics_tuner *tu, ics_coll_algo algo, ics_coll_proto proto,
                                bool net);
/* The per-step latency of a single-class algorithm (ring, direct, NVLS) on the ring's slowest
 * link class. */
ics_time ics_tuner_nccl_step_lat(const ics_tuner *tu, ics_coll_algo algo, ics_coll_proto proto);
/* The network plugin's part of a network hop, us: its reported latency (latencyInter), twice
 * with Simple (the receive flush); 0 on NCCL's own transports. */
double ics_tuner_nccl_plugin_us(const ics_tuner *tu, ics_coll_proto proto);
/* NCCL's network overhead (tuning.cc getNetOverhead), us: what its proxy thread spends on each
 * network step, 1 on Intel hosts and others, 2 on AMD. */
double ics_tuner_nccl_net_overhead_us(const ics_tuner *tu);
/* True for the algorithms whose legs inside a node and across the network NCCL prices apart
 * (Tree, NVLS-Tree, CollNet, PAT). */
bool ics_tuner_nccl_mixed_legs(ics_coll_algo algo);
/* Wire bytes per payload byte of a combination on the ring's links: the protocol's, NCCL's
 * kernel rate on NVLink, NVLS's 1 + 1/n of the data over its efficiency. */
double ics_tuner_nccl_wire_factor(const ics_tuner *tu, ics_coll_algo algo, ics_coll_proto proto);
/* Payload per wire byte of a protocol: LL 1/2, LL128 120/128, Simple 1. */
double ics_tuner_nccl_proto_eff(ics_coll_proto proto);
/* NCCL's NVLS efficiency for the tuner's GPU (0.85 Hopper, 0.74 Blackwell). */
double ics_tuner_nccl_nvls_eff(const ics_tuner *tu);
/* NCCL's per-channel ceiling of a tree on one node (perChMaxTreeBws), GB/s. */
double ics_tuner_nccl_tree_channel_gbps(const ics_tuner *tu);
/* True on Hopper and later (NCCL's ring search and channel duplication differ). */
bool ics_tuner_nccl_sm90_or_later(const ics_tuner *tu);

/* ---- channels.c: NCCL's channels (thread blocks), what each copies, what a slice costs it ---- */

/* NCCL's NVLS channels for calls made with `want` (channels.c). */
int ics_tuner_nvls_channels(const ics_tuner *tu, const ics_coll_tuning *want);
/* NCCL's channel count for the communicator (see ics_tuner_nccl_channels). */
int ics_tuner_channels_find(const ics_tuner *tu);
/* The channels a call is simulated on and how many of NCCL's each stands for (see
 * ics_tuner_price). */
int ics_tuner_channels(const ics_tuner *tu, const ics_coll_req *req, const ics_coll_tuning *want,
                       ics_coll_algo algo, ics_coll_proto proto);
int ics_tuner_ctas_per_channel(const ics_tuner *tu, const ics_coll_req *req,
                               const ics_coll_tuning *want, ics_coll_algo algo,
                               ics_coll_proto proto, int nch);
uint64_t ics_tuner_cta_bytes_per_s(const ics_tuner *tu);
ics_time ics_tuner_sync_lat(const ics_tuner *tu, ics_coll_proto proto);
double ics_tuner_sync_share(const ics_tuner *tu, const ics_coll_tuning *want, ics_coll_algo algo,
                            ics_coll_proto proto);

/* NCCL's channels for a peer across the network from a GPU's own `nics` NICs of `gbps` in all
 * (paths.cc ncclTopoGetNchannels): one per NIC, more to carry them at `per_channel_gbps` a
 * channel (0: NCCL_P2P_PER_CHANNEL_NET_BW's 14), divided in whole GB/s; 2 without a NIC. */
int ics_tuner_net_peer_channels_of(int nics, double gbps, int per_channel_gbps);

#endif
