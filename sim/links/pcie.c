/* PCI Express: lanes at a transfer rate with a line code; TLPs with a Max Payload Size. */
#include "links/link.h"

static void explain(const ics_hw_standard *s, GString *out)
{
    g_string_append_printf(out,
                           "  a x16 slot: %.2f GB/s per direction before TLP overhead.\n"
                           "  Each TLP carries at most the Max Payload Size (%d B here) plus\n"
                           "  header, sequence number, LCRC and framing; ACK and flow-control\n"
                           "  DLLPs take a little more, so GPU-to-GPU P2P reaches ~80-90%% of\n"
                           "  the raw rate. Through a CPU root complex or across sockets, P2P\n"
                           "  is limited further by the CPU (its p2p_gbytes_per_s).\n",
                           ics_hw_standard_bw(s, 16) / 1e9, s->max_payload_bytes);
}

const ics_link_ops ics_link_pcie = {
    .family = ICS_LINK_PCIE,
    .title = "PCI Express",
    .explain = explain,
};
