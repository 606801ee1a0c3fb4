/* PCIe switch and root complex ports: TLP flow-control credits at each receiving port. A shared
 * upstream port is one channel, so devices behind it share its bandwidth. */
#include "switch/switch.h"

const ics_switch_ops ics_switch_pcie = {
    .kind = ICS_DEV_PCIE_SWITCH,
    .title = "PCIe switch",
    /* posted-data credits of the order of a few KiB per port (PCIe base spec flow control);
     * the bandwidth-delay floor raises it where the link needs more */
    .buffer_bytes = 8 * 1024,
};
