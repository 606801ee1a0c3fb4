/* The device-kind registry and buffer sizing for the packet model. */
#include "switch/switch.h"

extern const ics_switch_ops ics_switch_nvswitch;
extern const ics_switch_ops ics_switch_pcie;
extern const ics_switch_ops ics_switch_ib;

/* Endpoints and CPU-side devices: GPUs and NICs drain into memory; host bridges and sockets
 * are modelled as deep (their queues are in the CPU's fabric). */
static const ics_switch_ops endpoint = {.kind = ICS_DEV_GPU, .title = "endpoint"};
static const ics_switch_ops host = {
    .kind = ICS_DEV_CPU, .title = "root complex", .buffer_bytes = 64 * 1024};
static const ics_switch_ops nic = {.kind = ICS_DEV_NIC, .title = "NIC", .buffer_bytes = 0};

const ics_switch_ops *ics_switch_ops_of(ics_dev_kind kind)
{
    switch (kind) {
    case ICS_DEV_NVSWITCH:
        return &ics_switch_nvswitch;
    case ICS_DEV_PCIE_SWITCH:
        return &ics_switch_pcie;
    case ICS_DEV_NET_SWITCH:
        return &ics_switch_ib;
    case ICS_DEV_HOST_BRIDGE:
    case ICS_DEV_CPU:
        return &host;
    case ICS_DEV_NIC:
        return &nic;
    default:
        return &endpoint;
    }
}

uint64_t ics_switch_buffer_bytes(const ics_topo *t, int chan, uint32_t override,
                                 uint64_t max_wire_bytes)
{
    const ics_topo_chan *c = ics_topo_chan_get(t, chan);
    const ics_switch_ops *ops = ics_switch_ops_of(ics_topo_dev_get(t, c->dst)->kind);
    /* A NIC's buffer only matters when it forwards into a fabric or a GPU: it is bounded by
     * what it can forward, so it gets the same floor as switches. */
    uint64_t b = override ? override : ops->buffer_bytes;
    if (b == 0 && ops != ics_switch_ops_of(ICS_DEV_NIC))
        return 0;
    /* A credit comes back after the packet's latency there, the device's forwarding latency,
     * its serialization onward and the credit's latency back: the buffer must cover that loop
     * at full rate, plus a few packets in service. */
    ics_time loop_ps = 2 * c->latency_ps + ics_topo_dev_get(t, c->dst)->latency_ps;
    unsigned __int128 loop_bytes =
        (unsigned __int128)c->bw_bytes_per_s * (uint64_t)loop_ps / ICS_PS_PER_S;
    uint64_t floor = (uint64_t)loop_bytes + 4 * max_wire_bytes;
    return b > floor ? b : floor;
}
