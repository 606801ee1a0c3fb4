/* Ethernet carrying RoCEv2: Ethernet, IP, UDP and IB transport headers around each packet. */
#include "links/link.h"

static void explain(const ics_hw_standard *s, GString *out)
{
    g_string_append(out, "  RoCEv2 wraps each packet in Ethernet (14 B + 4 B FCS, plus 20 B of\n"
                         "  preamble and inter-frame gap), IPv4 (20 B), UDP (8 B) and the IB\n"
                         "  transport header (12 B) with its ICRC (4 B).\n");
}

const ics_link_ops ics_link_ethernet = {
    .family = ICS_LINK_ETHERNET,
    .title = "Ethernet",
    .explain = explain,
};
