/* NVLink planes (net_planes.c): a GPU's NVLinks to the switches of a symmetric NVSwitch domain,
 * which a fluid solver may see as one link each way when nothing loads one plane alone. */
#ifndef ICS_NET_PLANES_H
#define ICS_NET_PLANES_H

#include <stdbool.h>

#include "topo/topo.h"

/* t's planes, found as they are asked about. Transfer full. */
typedef struct ics_net_planes ics_net_planes;
ics_net_planes *ics_net_planes_new(const ics_topo *t);
void ics_net_planes_free(ics_net_planes *p);
/* The channel that stands for chan's bundle: where chan is a GPU's NVLink to (or from) a switch
 * of a symmetric domain, the lowest-numbered of that GPU's channels to (from) the domain's
 * switches; otherwise chan itself. O(the domain's channels) the first time a domain is met,
 * O(1) after. */
int ics_net_planes_of(ics_net_planes *p, int chan);
/* The links (bond widths) of the bundle channel `rep` stands for (ics_net_planes_of's answer
 * for some channel): all its GPU's links that way; 0 for a channel in no bundle. */
int ics_net_planes_width(const ics_net_planes *p, int rep);
/* Whether device dev is a switch of a symmetric domain (whose bundles a reduction or multicast
 * at it would load one plane alone). */
bool ics_net_planes_merges_at(ics_net_planes *p, int dev);

#endif
