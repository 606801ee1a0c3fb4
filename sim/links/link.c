/* The link-family registry and the derivation every family shares. */
#include "links/link.h"

static const ics_link_ops *const registry[ICS_LINK_FAMILY_COUNT] = {
    [ICS_LINK_NVLINK] = &ics_link_nvlink,
    [ICS_LINK_PCIE] = &ics_link_pcie,
    [ICS_LINK_INFINIBAND] = &ics_link_infiniband,
    [ICS_LINK_ETHERNET] = &ics_link_ethernet,
};

const ics_link_ops *ics_link_ops_of(ics_link_family f)
{
    g_assert((unsigned)f < ICS_LINK_FAMILY_COUNT);
    return registry[f];
}

double ics_link_packet_efficiency(const ics_hw_standard *s)
{
    return (double)s->max_payload_bytes / (s->max_payload_bytes + s->packet_overhead_bytes);
}

void ics_link_explain(const ics_hw_standard *s, int width, GString *out)
{
    const ics_link_ops *ops = ics_link_ops_of(s->family);
    double enc = (double)s->enc_data_bits / s->enc_total_bits;
    double link_gbps = s->lanes * s->lane_gbps * enc;
    g_string_append_printf(out, "%s (%s %s%s%s)\n", s->name, ops->title, s->generation,
                           s->modulation ? ", " : "", s->modulation ? s->modulation : "");
    g_string_append_printf(out,
                           "  %d lane%s x %g Gb/s x %s (%d/%d) = %.2f Gb/s = %.3f GB/s per "
                           "direction per %s\n",
                           s->lanes, s->lanes == 1 ? "" : "s", s->lane_gbps, s->encoding,
                           s->enc_data_bits, s->enc_total_bits, link_gbps, link_gbps / 8,
                           s->family == ICS_LINK_PCIE ? "lane" : "link");
    if (width > 1)
        g_string_append_printf(out, "  x %d = %.2f GB/s per direction, %.2f GB/s both\n", width,
                               ics_hw_standard_bw(s, width) / 1e9,
                               2 * ics_hw_standard_bw(s, width) / 1e9);
    g_string_append_printf(out,
                           "  packets: up to %d B of payload + %d B of overhead = %.1f%% "
                           "payload on the wire\n",
                           s->max_payload_bytes, s->packet_overhead_bytes,
                           100 * ics_link_packet_efficiency(s));
    g_string_append_printf(out, "  latency per hop: %.0f ns\n", s->latency_ps / 1e3);
    ops->explain(s, out);
    g_string_append_printf(out, "  source: %s\n", s->source);
}
