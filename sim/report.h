/* Reports: what the simulator prints, built into GStrings so that the CLI decides where they
 * go and nothing is written before a run has succeeded (no half-written output). */
#ifndef ICS_REPORT_H
#define ICS_REPORT_H

#include <glib.h>

#include "topo.h"

/* `icsim topo` text summary: devices by kind, per-GPU links and bandwidth, the fabric. */
void ics_report_topo_text(const ics_topo *t, GString *out);
/* The GPU and NIC matrix of node 0 in `nvidia-smi topo -m` form, with its legend. */
void ics_report_topo_matrix(const ics_topo *t, GString *out);
/* The same facts as JSON (one object, 2-space indented, trailing newline). */
void ics_report_topo_json(const ics_topo *t, GString *out);
/* Graphviz DOT: one vertex per device, one edge per physical link (channel pair). */
void ics_report_topo_dot(const ics_topo *t, GString *out);
/* A route between two devices, hop by hop, with latency and bottleneck bandwidth. */
void ics_report_route(const ics_topo *t, int src, int dst, GString *out);

#endif
