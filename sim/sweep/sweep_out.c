/* The text of rows: CSV fields quoted as RFC 4180 asks (only when they must be), JSON strings
 * escaped and made valid UTF-8, numbers in the C locale. What is written here is what resuming
 * compares, so it depends on nothing but the values. */
#include "sweep/sweep_internal.h"

#include <string.h>

void ics_sweep_csv_field(GString *out, const char *s)
{
    s = s ? s : "";
    if (!s[strcspn(s, ",\"\r\n")]) {
        g_string_append(out, s);
        return;
    }
    g_string_append_c(out, '"');
    for (const char *p = s; *p; p++) {
        if (*p == '"')
            g_string_append_c(out, '"');
        g_string_append_c(out, *p);
    }
    g_string_append_c(out, '"');
}

void ics_sweep_json_string(GString *out, const char *s)
{
    char *valid = g_utf8_make_valid(s ? s : "", -1);
    g_string_append_c(out, '"');
    for (const unsigned char *p = (const unsigned char *)valid; *p; p++) {
        if (*p == '"' || *p == '\\')
            g_string_append_printf(out, "\\%c", *p);
        else if (*p < 0x20)
            g_string_append_printf(out, "\\u%04x", *p);
        else
            g_string_append_c(out, (char)*p);
    }
    g_string_append_c(out, '"');
    g_free(valid);
}

char *ics_sweep_csv_header(const ics_sweep *s)
{
    GString *out = g_string_new("config,study");
    for (int a = 0; a < s->naxes; a++) {
        g_string_append_c(out, ',');
        ics_sweep_csv_field(out, s->axes[a].name);
    }
    if (s->step)
        g_string_append(out,
                        ",model,nodes,gpus,tp,pp,dp,vp,mbs,gbs,step_time_s,tokens_per_s,"
                        "tflops_per_gpu,mfu,memory_gb,compute_s,tp_s,pp_s,dp_s,ep_s,cp_s,other_s,"
                        "bubble_s,host_s,error\n");
    else
        g_string_append(out, ",system,nodes,ranks,op,size_bytes,count,time_us,algbw_gbps,"
                             "busbw_gbps,algo,proto,channels,error\n");
    return g_string_free(out, FALSE);
}
