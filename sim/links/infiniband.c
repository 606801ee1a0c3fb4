/* InfiniBand: 4x links; packets of an MTU of payload inside LRH/BTH/ICRC/VCRC. */
#include "links/link.h"

static void explain(const ics_hw_standard *s, GString *out)
{
    g_string_append(out, "  A 4x port; lane_gbps is the data rate after forward error\n"
                         "  correction. Each packet carries up to one MTU of payload inside\n"
                         "  LRH (8 B) + BTH (12 B) + ICRC (4 B) + VCRC (2 B); credit-based\n"
                         "  flow control per virtual lane means no packet is dropped.\n");
}

const ics_link_ops ics_link_infiniband = {
    .family = ICS_LINK_INFINIBAND,
    .title = "InfiniBand",
    .explain = explain,
};
