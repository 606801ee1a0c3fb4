/* The tuning NCCL's environment variables ask for (comm.h: ics_coll_tuning_from_env). */
#include "collectives/comm.h"

#include <stdlib.h>

/* Appends the variable to the warning so far. The message has always read "=VAR not
 * understood, ignored", without the value v; it stays so, for identical outputs. */
static void note(GString *w, const char *var, const char *v)
{
    g_string_append_printf(w, "%s=%s not understood, ignored", w->len ? "; " : "", var);
    (void)v;
}

void ics_coll_tuning_from_env(ics_coll_tuning *t, GError **warning)
{
    *t = (ics_coll_tuning){.algo = -1, .proto = -1, .nvls_enable = true};
    GString *w = g_string_new(NULL);
    const char *v;
    if ((v = g_getenv("NCCL_ALGO")) && *v) {
        int a = ics_coll_algo_from_name(v);
        if (a >= 0)
            t->algo = a;
        else
            note(w, "NCCL_ALGO", v);
    }
    if ((v = g_getenv("NCCL_PROTO")) && *v) {
        int p = ics_coll_proto_from_name(v);
        if (p >= 0)
            t->proto = p;
        else
            note(w, "NCCL_PROTO", v);
    }
    if ((v = g_getenv("NCCL_NVLS_ENABLE")) && *v)
        t->nvls_enable = atoi(v) != 0;
    if ((v = g_getenv("NCCL_COLLNET_ENABLE")) && *v)
        t->collnet_enable = atoi(v) != 0;
    if ((v = g_getenv("NCCL_MIN_NCHANNELS")) && *v)
        t->min_channels = MAX(0, atoi(v));
    if ((v = g_getenv("NCCL_MAX_NCHANNELS")) && *v)
        t->max_channels = MAX(0, atoi(v));
    if (w->len)
        g_set_error_literal(warning, ICS_ERROR, ICS_ERROR_INPUT, w->str);
    g_string_free(w, TRUE);
}
