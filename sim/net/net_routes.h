/* A memo of routes for the packet and analytic backends (net_routes.c). ics_route_find is a pure
 * function of the topology, and a network's transfers come back to the same few (source,
 * destination, flow hash) again and again: every chunk of a ring channel, every micro-batch's
 * pipeline send, every bucket of a data-parallel ring. So each is built once per network. Networks
 * run in one thread each (calibrate simulates points in parallel threads), so a memo is never
 * shared. The fluid backends build a route per flow, not per packet train: on five large cases they
 * gained nothing measurable from it (-2..+6%, within the machine's noise), but the analytic
 * backend's sends use it since a replay's memoized chunk plans came to be most of its time (a
 * million-step reduce-scatter on 84 ranks, every slice of a channel on the same route: Llama 3 405B
 * on 6,048 GPUs 10.2 -> 8.7 s). The flow backend, whose time is SimGrid's, does without. */
#ifndef ICS_NET_ROUTES_H
#define ICS_NET_ROUTES_H

#include "topo/topo.h"

typedef struct ics_net_routes ics_net_routes;

ics_net_routes *ics_net_routes_new(const ics_topo *t);
void ics_net_routes_free(ics_net_routes *m);
/* src -> dst's route for flow `hash` (ics_route_find's), or NULL where there is none. Transfer
 * none: valid until the next call on m (the memo starts again past a bound on its size). */
const ics_route *ics_net_routes_find(ics_net_routes *m, int src, int dst, uint64_t hash);
/* Routes held now (for tests: the bound, and the memo standing aside where keys never repeat). */
unsigned ics_net_routes_held(const ics_net_routes *m);

#endif
