/* A configuration's settings, merged from the base and one value of every axis in axis order,
 * and the study's accessors. */
#include "sweep/sweep_internal.h"

#include <string.h>

static void take_str(char **dst, const char *src)
{
    if (src) {
        g_free(*dst);
        *dst = g_strdup(src);
    }
}

void ics_sweep_set_merge(ics_sweep_set *dst, const ics_sweep_set *src)
{
    take_str(&dst->system, src->system);
    take_str(&dst->engine, src->engine);
    take_str(&dst->nccl_algo, src->nccl_algo);
    take_str(&dst->nccl_proto, src->nccl_proto);
    if (src->patch) {
        char *merged = dst->patch ? ics_sweep_merge_patch(dst->patch, src->patch) : NULL;
        g_free(dst->patch);
        dst->patch = merged ? merged : g_strdup(src->patch);
    }
    /* failures add up: each axis may take something else down */
    if (src->fail && *src->fail) {
        char *both =
            dst->fail ? g_strdup_printf("%s,%s", dst->fail, src->fail) : g_strdup(src->fail);
        g_free(dst->fail);
        dst->fail = both;
    }
    if (src->nodes)
        dst->nodes = src->nodes;
    if (src->gpus_per_node)
        dst->gpus_per_node = src->gpus_per_node;
    if (src->nics)
        dst->nics = src->nics;
    if (src->nvls >= 0)
        dst->nvls = src->nvls;
    if (src->collnet >= 0)
        dst->collnet = src->collnet;
    if (src->min_channels >= 0)
        dst->min_channels = src->min_channels;
    if (src->max_channels >= 0)
        dst->max_channels = src->max_channels;
    int *d[] = {&dst->tp, &dst->pp, &dst->dp, &dst->vp, &dst->mbs, &dst->gbs};
    const int v[] = {src->tp, src->pp, src->dp, src->vp, src->mbs, src->gbs};
    for (size_t i = 0; i < G_N_ELEMENTS(d); i++)
        if (v[i])
            *d[i] = v[i];
}

void ics_sweep_config(const ics_sweep *s, int c, ics_sweep_set *out)
{
    g_assert(c >= 0 && c < s->nconfigs);
    *out = (ics_sweep_set){.nvls = -1, .collnet = -1, .min_channels = -1, .max_channels = -1};
    ics_sweep_set_merge(out, &s->base);
    for (int a = 0; a < s->naxes; a++)
        ics_sweep_set_merge(out, &s->axes[a].values[s->choice[c * s->naxes + a]]);
}

const char *ics_sweep_name(const ics_sweep *s)
{
    return s->name;
}

int ics_sweep_nconfigs(const ics_sweep *s)
{
    return s->nconfigs;
}

int ics_sweep_nsizes(const ics_sweep *s)
{
    return s->nsizes;
}

uint64_t ics_sweep_size(const ics_sweep *s, int i)
{
    g_assert(i >= 0 && i < s->nsizes);
    return s->sizes[i];
}

int ics_sweep_naxes(const ics_sweep *s)
{
    return s->naxes;
}

const char *ics_sweep_axis_name(const ics_sweep *s, int axis)
{
    g_assert(axis >= 0 && axis < s->naxes);
    return s->axes[axis].name;
}

const char *ics_sweep_label(const ics_sweep *s, int c, int axis)
{
    g_assert(c >= 0 && c < s->nconfigs && axis >= 0 && axis < s->naxes);
    return s->axes[axis].labels[s->choice[c * s->naxes + axis]];
}
