/* The packet backend's ops table (net.h): sends from net_packet.c, multicast and reduction at a
 * switch from net_packet_join.c. Listed once, in net/net.c's registry. */
#include "net/net_packet_internal.h"

const ics_net_ops ics_net_packet_ops = {
    .name = "packet",
    .transfer_bytes = 1536,
    .stream_pair_bytes = 1536,
    .create = ics_pk_create,
    .destroy = ics_pk_destroy,
    .send = ics_pk_send,
    .multicast = ics_pk_multicast,
    .reduce = ics_pk_reduce,
    .batch = ics_pk_batch,
    .stats = ics_pk_stats,
    .chan_bytes = ics_pk_chan_bytes,
};
