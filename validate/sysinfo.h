/* sysinfo.h: the facts about the host that reports carry besides the GPUs. */
#ifndef ICSV_SYSINFO_H
#define ICSV_SYSINFO_H

#include <glib.h>

/* The host name up to its first '.', as nccl-tests prints it. Transfer full: g_free. */
char *icsv_host_name(void);

/* unix_seconds as ISO 8601 UTC, "2026-02-03T10:11:12Z". Transfer full: g_free. */
char *icsv_date_iso(gint64 unix_seconds);

/* The machine's model as its firmware names it (/sys/class/dmi/id/product_name, e.g.
 * "DGXH100"), trimmed, into buf; "unknown" when unreadable or empty. */
void icsv_system_name(char *buf, size_t size);

#endif /* ICSV_SYSINFO_H */
