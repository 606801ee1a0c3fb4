/* Fluid flows on the packet backend's routes, shared by the fluid backends (net_analytic.c,
 * net_flow.c): how a transfer splits over its route's paths, the legs of a multicast or reduce,
 * and each flow's idle time, split into a fluid part and a fixed part (net_fluid.c). Internal to
 * net/. */
#ifndef ICS_NET_FLUID_H
#define ICS_NET_FLUID_H

#include "net/net.h"

/* One path of a transfer's route, the bytes it carries and its payload per packet. */
typedef struct {
    ics_route_path path;
    uint64_t bytes;
    uint32_t payload;
} ics_fluid_part;

/* A multicast (reduce_bw 0) or an in-switch reduce: sources -> switch -> destinations. */
typedef struct {
    int sw, nlegs[2]; /* [0]: sources -> sw, [1]: sw -> destinations */
    ics_route_path *legs[2];
    uint64_t bytes;
    uint64_t reduce_bw; /* 0: multicast */
} ics_fluid_op;

/* The fluid part of `bytes` at r0 = payload / max_ser, in ps, rounded up: the same function
 * serves a flow's offset and its run, which is what makes an uncontended flow exact. */
ics_time ics_fluid_ps(uint64_t bytes, uint32_t payload, ics_time max_ser);

/* Appends to parts (ics_fluid_part) the paths of src -> dst's route that carry some of `bytes`
 * (packet_bytes as in ics_net_params). */
void ics_fluid_route_parts(const ics_topo *t, uint32_t packet_bytes, int src, int dst,
                           uint64_t hash, uint64_t bytes, GArray *parts);
/* The same for a route already found (a memo's: net_routes.h). */
void ics_fluid_parts_of(const ics_topo *t, uint32_t packet_bytes, const ics_route *r,
                        uint64_t bytes, GArray *parts);

/* The path from endpoint `dev` (a GPU or NIC) to switch `sw`. */
void ics_fluid_leg_to_switch(const ics_topo *t, int dev, int sw, ics_route_path *out);
/* The same path walked backwards: sw -> dev. */
void ics_fluid_path_reverse(const ics_topo *t, ics_route_path *p);

/* The op's idle time, as the packet backend's join runs it: the slowest source leg, the
 * reduction unit (every packet once all sources delivered it), the switch's latency, the
 * slowest destination leg. */
ics_time ics_fluid_op_idle_time(const ics_topo *t, const ics_fluid_op *op, uint32_t payload);

#endif
