/* NVLink (and the chip-to-chip NVLink-C2C): point-to-point GPU links, bonded per pair. */
#include "links/link.h"

static void explain(const ics_hw_standard *s, GString *out)
{
    g_string_append(out, "  NVLink links between the same two chips are bonded: traffic is\n"
                         "  striped over all of them, so a bond of k links is one channel of\n"
                         "  k times the bandwidth. Data moves in packets of 16-byte flits; the\n"
                         "  header flit is the per-packet overhead.\n");
}

const ics_link_ops ics_link_nvlink = {
    .family = ICS_LINK_NVLINK,
    .title = "NVLink",
    .explain = explain,
};
