/* What the report files share and the CLI does not see. Not a public header. */
#ifndef ICS_REPORT_INTERNAL_H
#define ICS_REPORT_INTERNAL_H

#include <cjson/cJSON.h>

#include "report/report.h"

/* The hot-spot report as one JSON object (report_hotspot.c): span_s, channels, channels_used,
 * busiest (h->top links: src, dst, kind, width, gbps, bytes, utilization) and by_kind.
 * Transfer full. */
cJSON *ics_report_hotspots_cjson(const ics_hotspots *h);

#endif
