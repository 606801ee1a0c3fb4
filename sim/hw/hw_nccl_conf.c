/* A model's "nccl_conf": the NCCL settings the system itself carries, as an administrator's
 * /etc/nccl.conf or a vendor's network-plugin profile sets them (Google's TCPXO nodes source
 * nccl-env-profile.sh, whose guest config checker enforces part of it). NCCL loads such a file
 * beneath the process's environment (setenv without overwriting), so a variable the user sets
 * wins; ics_coll_env_stacked (collectives/nccl_env.c) looks values up in that order. */
#include "hw/hw_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* One value: a string, or an integer written as NCCL would read it. */
static const char *conf_value(ics_hw__ld *ld, const cJSON *v, const char *key, char *buf,
                              size_t len)
{
    if (cJSON_IsString(v) && v->valuestring[0])
        return v->valuestring;
    if (cJSON_IsNumber(v) && v->valuedouble == floor(v->valuedouble) &&
        fabs(v->valuedouble) < 1e15) {
        g_snprintf(buf, len, "%lld", (long long)v->valuedouble); /* -0 as 0 */
        return buf;
    }
    char *got = ics_json_describe(v);
    ics_jr_fail(ld->r, v, key, "expected a non-empty string or an integer, got %s", got);
    g_free(got);
    return NULL;
}

bool ics_hw__read_nccl_conf(ics_hw__ld *ld, const cJSON *obj)
{
    const cJSON *o = ics_jr_obj(ld->r, obj, "nccl_conf", false);
    if (!o)
        return ics_jr_ok(ld->r);
    size_t mark = ics_jr_push_key(ld->r, "nccl_conf");
    if (ics_jr_unique_keys(ld->r, o)) {
        const cJSON *v;
        cJSON_ArrayForEach(v, o)
        {
            if (strcmp(v->string, "source") == 0) {
                const char *src = NULL;
                ics_jr_str(ld->r, o, "source", false, &src);
            } else if (!g_str_has_prefix(v->string, "NCCL_") || !v->string[5]) {
                char *shown = g_strescape(v->string, NULL);
                ics_jr_fail(ld->r, v, v->string,
                            "expected an NCCL variable (NCCL_...) or \"source\", got \"%s\"",
                            shown);
                g_free(shown);
            } else {
                char buf[32];
                const char *s = conf_value(ld, v, v->string, buf, sizeof buf);
                if (s) /* a later file (the cluster's) replaces the node's value */
                    g_hash_table_insert(ld->hw->nccl_conf, (char *)ics_hw__str(ld->hw, v->string),
                                        (char *)ics_hw__str(ld->hw, s));
            }
            if (!ics_jr_ok(ld->r))
                break;
        }
    }
    ics_jr_pop(ld->r, mark);
    return ics_jr_ok(ld->r);
}

const char *ics_hw_nccl_conf(const ics_hw *hw, const char *name)
{
    return hw ? g_hash_table_lookup(hw->nccl_conf, name) : NULL;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

const char **ics_hw_nccl_conf_names(const ics_hw *hw)
{
    guint n = 0;
    const char **names = (const char **)g_hash_table_get_keys_as_array(hw->nccl_conf, &n);
    qsort(names, n, sizeof *names, by_name);
    return names;
}
