/* sysinfo.c: host name, dates and the machine's model name for reports.
 * Invariant: never fails; what cannot be read reads "unknown". */
#include "sysinfo.h"

#include <string.h>

char *icsv_host_name(void)
{
    char *host = g_strdup(g_get_host_name());
    char *dot = strchr(host, '.');
    if (dot && dot != host)
        *dot = '\0';
    return host;
}

char *icsv_date_iso(gint64 unix_seconds)
{
    GDateTime *t = g_date_time_new_from_unix_utc(unix_seconds);
    if (!t)
        return g_strdup("1970-01-01T00:00:00Z");
    char *s = g_date_time_format(t, "%Y-%m-%dT%H:%M:%SZ");
    g_date_time_unref(t);
    return s;
}

void icsv_system_name(char *buf, size_t size)
{
    char *text = NULL;
    g_strlcpy(buf, "unknown", size);
    if (!g_file_get_contents("/sys/class/dmi/id/product_name", &text, NULL, NULL))
        return;
    g_strstrip(text);
    if (text[0])
        g_strlcpy(buf, text, size);
    g_free(text);
}
