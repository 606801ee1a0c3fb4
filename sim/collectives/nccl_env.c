/* The tuning NCCL's environment variables ask for (comm.h: ics_coll_tuning_from_env). */
#include "collectives/comm.h"

#include <stdlib.h>

static void note(char **err, const char *var, const char *v)
{
    char *msg =
        g_strdup_printf("%s%s=%s not understood, ignored", *err ? *err : "", *err ? "; " : "", var);
    g_free(*err);
    *err = msg;
    (void)v;
}

void ics_coll_tuning_from_env(ics_coll_tuning *t, char **err)
{
    *t = (ics_coll_tuning){.algo = -1, .proto = -1, .nvls_enable = true};
    *err = NULL;
    const char *v;
    if ((v = g_getenv("NCCL_ALGO")) && *v) {
        int a = ics_coll_algo_from_name(v);
        if (a >= 0)
            t->algo = a;
        else
            note(err, "NCCL_ALGO", v);
    }
    if ((v = g_getenv("NCCL_PROTO")) && *v) {
        int p = ics_coll_proto_from_name(v);
        if (p >= 0)
            t->proto = p;
        else
            note(err, "NCCL_PROTO", v);
    }
    if ((v = g_getenv("NCCL_NVLS_ENABLE")) && *v)
        t->nvls_enable = atoi(v) != 0;
    if ((v = g_getenv("NCCL_COLLNET_ENABLE")) && *v)
        t->collnet_enable = atoi(v) != 0;
    if ((v = g_getenv("NCCL_MIN_NCHANNELS")) && *v)
        t->min_channels = MAX(0, atoi(v));
    if ((v = g_getenv("NCCL_MAX_NCHANNELS")) && *v)
        t->max_channels = MAX(0, atoi(v));
}
