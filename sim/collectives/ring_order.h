/* The order of ranks around each channel's ring, shared by the ring algorithm (ring.c) and the
 * tuner's estimate of a ring's bandwidth (tuner.c), so the two always agree. */
#ifndef ICS_RING_ORDER_H
#define ICS_RING_ORDER_H

#include <stdbool.h>

#include "topo/topo.h"

/* order[k] = index (into ranks) of the rank at position k of channel ch's ring.
 *   - GPUs of one node wired to each other by direct NVLinks (DGX-1's hybrid cube-mesh): the
 *     rings NCCL's search finds, Hamiltonian cycles over NVLink only, the channels spread over
 *     the cycles so that each link carries as few channels per bonded link as possible;
 *   - otherwise (NVSwitch, PCIe, several nodes): ranks grouped by node in rank order, each
 *     node's group rotated to start at its (ch mod size)-th GPU, so that channels leave a node
 *     through different GPUs (and NICs). */
void ics_ring_order(const ics_topo *t, const int *ranks, int n, int ch, int *order);

/* True if channels' rings may use different links (NVLink-only rings), false if every channel's
 * ring is a rotation of one order and crosses the same links. */
bool ics_ring_orders_differ(const ics_topo *t, const int *ranks, int n);

/* How many NVLink-only rings NCCL's search finds on ranks that ics_ring_orders_differ calls a
 * mesh: on the intact machine one per NVLink of the first rank (DGX-1V: 6; the count its logs
 * were matched with); after failures (topo.h, ics_topo_fail) as many fewer as the rings the
 * failures break, counted as the most directed Hamiltonian cycles the bonds carry at once (a
 * bond of w links carries w rings each way) on the intact wiring less on what is left. At
 * least 1. O(cycles x depth) per count, bounded; only run when the topology has failures. */
int ics_ring_mesh_rings(const ics_topo *t, const int *ranks, int n);

#endif
