/* Routes between devices: which channels a transfer crosses, and how it splits when the
 * hardware stripes it. Rules, in order:
 *   - two GPUs with a direct NVLink bond: that bond (parallel links are one bonded channel);
 *   - two GPUs on one NVSwitch fabric: one path per switch the source is wired to, weighted by
 *     its link count (GPUs spray packets over all their NVLinks), switch-to-switch hops taken
 *     by shortest path where a board boundary is crossed (DGX-2);
 *   - otherwise inside a node: up the PCIe tree to the lowest common switch or host bridge,
 *     through the root complex, across sockets when the NUMA nodes differ;
 *   - across nodes: to the source GPU's nearest compute NIC (same rail first), up the fat-tree
 *     only as far as needed (up/down routing: loop-free by construction), one spine and core
 *     chosen by a flow hash (ECMP), down to the destination's NIC, then its PCIe tree. */
#ifndef ICS_ROUTE_H
#define ICS_ROUTE_H

#include <stdint.h>

#include "topo/topo.h"

#define ICS_ROUTE_MAX_HOPS 32

typedef struct {
    double weight; /* share of the bytes; the paths of a route sum to 1 */
    int n_hops;
    int chans[ICS_ROUTE_MAX_HOPS];
} ics_route_path;

typedef struct {
    int n_paths;
    ics_route_path *paths; /* owned; free with ics_route_clear */
} ics_route;

/* Computes the route from device src to device dst (both GPUs or NICs; same device: no
 * paths). flow_hash picks among equal-cost fabric paths. Returns false if dst is unreachable,
 * which a validated model never produces for GPUs. Transfer full into *out. */
bool ics_route_find(const ics_topo *t, int src, int dst, uint64_t flow_hash, ics_route *out);
void ics_route_clear(ics_route *r);

/* The compute NIC a GPU uses to leave its node: the nearest by PCIe path class, ties broken
 * by rail == GPU index, then by NIC order. -1 if the node has no compute NIC. */
int ics_route_nic_of_gpu(const ics_topo *t, int gpu_dev);

/* Sum of hop latencies: channel latencies plus the latency of each intermediate device. */
ics_time ics_route_path_latency(const ics_topo *t, const ics_route_path *p);
/* The smallest channel bandwidth on a path. */
uint64_t ics_route_path_bw(const ics_topo *t, const ics_route_path *p);

#endif
