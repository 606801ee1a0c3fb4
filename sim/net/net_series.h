/* Channels in series (net_series.c): chains of channels that always carry the same flows. */
#ifndef ICS_NET_SERIES_H
#define ICS_NET_SERIES_H

#include "topo/topo.h"

/* t's chains in series, found as they are asked about. cap (per channel) is borrowed and
 * must outlive it. Transfer full. */
typedef struct ics_net_series ics_net_series;
ics_net_series *ics_net_series_new(const ics_topo *t, const double *cap);
void ics_net_series_free(ics_net_series *s);
/* The channel that stands for chan's chain: the chain's least capacity (the lowest index among
 * equals); a channel in no chain stands for itself. O(the chain's length) the first time a
 * chain is met, O(1) after. */
int ics_net_series_of(ics_net_series *s, int chan);

#endif
