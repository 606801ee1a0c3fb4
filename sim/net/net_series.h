/* Channels in series (net_series.c): chains of channels that always carry the same flows. */
#ifndef ICS_NET_SERIES_H
#define ICS_NET_SERIES_H

#include "topo/topo.h"

/* For every channel of t, the channel that stands for its chain: the chain's least capacity
 * (cap[], per channel); a channel in no chain stands for itself. Transfer full (g_free). */
int *ics_net_series_reps(const ics_topo *t, const double *cap);

#endif
