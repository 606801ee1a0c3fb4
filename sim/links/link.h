/* Link families: how each standard's figures become a bandwidth and a packet efficiency, and
 * how to explain that to a student. One file per family fills one ics_link_ops; the registry
 * in link.c lists them once. Adding a family: one file, one row. */
#ifndef ICS_LINK_H
#define ICS_LINK_H

#include <glib.h>

#include "hw/hw.h"

typedef struct {
    ics_link_family family;
    const char *title; /* "NVLink", "PCI Express", ... */
    /* Appends what is particular to the family: lane naming, what the packet overhead is made
     * of, what limits real throughput. */
    void (*explain)(const ics_hw_standard *s, GString *out);
} ics_link_ops;

const ics_link_ops *ics_link_ops_of(ics_link_family f);

/* Fraction of wire bytes that are payload for full-size packets:
 * max_payload / (max_payload + packet_overhead). */
double ics_link_packet_efficiency(const ics_hw_standard *s);

/* The common derivation: lanes x rate x encoding = per link per direction; then the family's
 * own notes. `width` multiplies (links bonded, or PCIe lanes); 0 explains one link. */
void ics_link_explain(const ics_hw_standard *s, int width, GString *out);

extern const ics_link_ops ics_link_nvlink;
extern const ics_link_ops ics_link_pcie;
extern const ics_link_ops ics_link_infiniband;
extern const ics_link_ops ics_link_ethernet;

#endif
