/* InfiniBand / Ethernet fabric switch: output queues fed by per-port input buffers with credits
 * per virtual lane (one lane modelled), cut-through forwarding, SHARP aggregation on switches
 * that have it. Routing (ECMP by flow hash, or adaptive) is in route.c / the backend. */
#include "switch/switch.h"

const ics_switch_ops ics_switch_ib = {
    .kind = ICS_DEV_NET_SWITCH,
    .title = "InfiniBand switch",
    /* Quantum-class switches share tens of MB across 40-64 ports; 256 KiB per port and lane
     * is the order of what one port can claim (estimate). */
    .buffer_bytes = 256 * 1024,
};
