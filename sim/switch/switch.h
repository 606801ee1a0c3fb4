/* Switch and endpoint kinds as the packet model sees them: how deep the buffer at a receiving
 * port is, and whether the device can reduce in the network. One file per kind fills one
 * ics_switch_ops; switch.c lists them once. */
#ifndef ICS_SWITCH_H
#define ICS_SWITCH_H

#include <stdint.h>

#include "topo/topo.h"

typedef struct {
    ics_dev_kind kind;
    const char *title;
    /* Input buffer per receiving port, bytes, before the bandwidth-delay floor (see
     * ics_switch_buffer_bytes). 0: an endpoint that drains at once (GPU memory, host). */
    uint32_t buffer_bytes;
} ics_switch_ops;

const ics_switch_ops *ics_switch_ops_of(ics_dev_kind kind);

/* The buffer at the receiving end of a channel: the kind's default (or `override` if > 0),
 * raised to hold two packets plus a round trip of the link at full rate, which every real
 * design provisions so that credits never throttle an uncontended link. 0: no limit. */
uint64_t ics_switch_buffer_bytes(const ics_topo *t, int chan, uint32_t override,
                                 uint64_t max_wire_bytes);

#endif
