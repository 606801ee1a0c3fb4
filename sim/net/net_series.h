/* Channels in series (net_series.c): chains of channels that always carry the same flows. */
#ifndef ICS_NET_SERIES_H
#define ICS_NET_SERIES_H

#include "topo/topo.h"

/* Finds t's chains: for every channel, the channel that stands for its chain, the chain's least
 * capacity (cap[], per channel; the lowest index among equals); a channel in no chain stands
 * for itself. O(channels + devices). Transfer full (g_free). */
int *ics_net_series_find(const ics_topo *t, const double *cap);

#endif
