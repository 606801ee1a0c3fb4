/* NVSwitch: a crossbar with per-port input buffers and credit-based flow control; gen3+
 * reduces and multicasts in the switch (NVLS). Forwarding is virtual cut-through at packet
 * granularity, round-robin over the inputs competing for an output. */
#include "switch/switch.h"

const ics_switch_ops ics_switch_nvswitch = {
    .kind = ICS_DEV_NVSWITCH,
    .title = "NVSwitch",
    /* NVIDIA does not publish per-port buffer sizes; 32 KiB is an estimate of the order of
     * what NVLink's credit loop needs (see docs/network.md). */
    .buffer_bytes = 32 * 1024,
};
