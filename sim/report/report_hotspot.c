/* The busiest links of a run (`--hotspots N`): which channels carried the bytes, and how hard
 * each one worked.
 *
 * A channel is one direction of a link (topo.h), so a ring's two directions show apart: a ring
 * all-reduce loads every link one way per ring, and NCCL's rings go both ways only when it
 * builds them so. Utilization is the payload a channel carried over the span divided by what
 * it could have carried in that time (its payload bandwidth x the span): an average over the
 * span, so a link saturated for a tenth of a step shows 10%, and a collective's links sit below
 * 100% by its latency, synchronization and pipeline fill. Wire overheads (packet headers, flow
 * control) are outside the payload on both sides of the ratio. Links rank by utilization, then
 * bytes, then channel id, so equal links keep a stable order. */
#include "report/report.h"
#include "report/report_internal.h"

#include <stdlib.h>

typedef struct {
    int chan;
    uint64_t bytes;
    double load; /* seconds of the channel's bandwidth the bytes take */
} hot;

static int by_load(const void *a, const void *b)
{
    const hot *x = a, *y = b;
    if (x->load != y->load)
        return x->load > y->load ? -1 : 1;
    if (x->bytes != y->bytes)
        return x->bytes > y->bytes ? -1 : 1;
    return (x->chan > y->chan) - (x->chan < y->chan);
}

/* Every channel that carried bytes, busiest first; *n of them. Transfer full. */
static hot *ranked(const ics_hotspots *h, int *n)
{
    const ics_topo *t = h->t;
    int nch = ics_topo_nchans(t);
    hot *v = g_new(hot, nch > 0 ? nch : 1);
    *n = 0;
    for (int c = 0; c < nch; c++) {
        if (!h->chan_bytes[c])
            continue;
        double bw = (double)ics_topo_chan_get(t, c)->bw_bytes_per_s;
        v[(*n)++] = (hot){c, h->chan_bytes[c], bw > 0 ? (double)h->chan_bytes[c] / bw : 0};
    }
    qsort(v, (size_t)*n, sizeof *v, by_load);
    return v;
}

static double utilization(const hot *x, const ics_hotspots *h)
{
    return h->span_ps > 0 ? x->load / ics_time_to_s(h->span_ps) : 0;
}

/* Per kind of channel: how many carried bytes, the bytes, the busiest one's utilization. */
typedef struct {
    int used;
    uint64_t bytes;
    double max_util;
} kind_sum;

static void sum_kinds(const ics_topo *t, const hot *v, int n, const ics_hotspots *h,
                      kind_sum out[ICS_CHAN_KIND_COUNT])
{
    for (int k = 0; k < ICS_CHAN_KIND_COUNT; k++)
        out[k] = (kind_sum){0};
    for (int i = 0; i < n; i++) {
        kind_sum *s = &out[ics_topo_chan_get(t, v[i].chan)->kind];
        s->used++;
        s->bytes += v[i].bytes;
        s->max_util = MAX(s->max_util, utilization(&v[i], h));
    }
}

static char *link_name(const ics_topo *t, int chan)
{
    const ics_topo_chan *c = ics_topo_chan_get(t, chan);
    return g_strdup_printf("%s -> %s", ics_topo_dev_label(t, c->src),
                           ics_topo_dev_label(t, c->dst));
}

void ics_report_hotspots_text(const ics_hotspots *h, const char *prefix, GString *out)
{
    const ics_topo *t = h->t;
    int n;
    hot *v = ranked(h, &n);
    g_string_append_printf(out,
                           "%sBusiest links over %.6g ms (%d of %d channels carried bytes; "
                           "util: payload / (bandwidth x time)):\n",
                           prefix, ics_time_to_s(h->span_ps) * 1e3, n, ics_topo_nchans(t));
    if (h->note)
        g_string_append_printf(out, "%s  (%s)\n", prefix, h->note);
    g_string_append_printf(out, "%s  %-40s %-8s %5s %9s %12s %7s\n", prefix, "link", "kind",
                           "width", "GB/s", "bytes", "util");
    for (int i = 0; i < n && i < h->top; i++) {
        const ics_topo_chan *c = ics_topo_chan_get(t, v[i].chan);
        char *name = link_name(t, v[i].chan);
        g_string_append_printf(out, "%s  %-40s %-8s %5d %9.1f %12" G_GUINT64_FORMAT " %6.1f%%\n",
                               prefix, name, ics_chan_kind_name(c->kind), c->width,
                               (double)c->bw_bytes_per_s / 1e9, v[i].bytes,
                               100 * utilization(&v[i], h));
        g_free(name);
    }
    kind_sum s[ICS_CHAN_KIND_COUNT];
    sum_kinds(t, v, n, h, s);
    for (int k = 0; k < ICS_CHAN_KIND_COUNT; k++)
        if (s[k].used)
            g_string_append_printf(out,
                                   "%s  by kind: %-8s %6d channels carried %" G_GUINT64_FORMAT
                                   " bytes, busiest %.1f%%\n",
                                   prefix, ics_chan_kind_name((ics_chan_kind)k), s[k].used,
                                   s[k].bytes, 100 * s[k].max_util);
    g_free(v);
}

static cJSON *json_link(const ics_topo *t, const hot *x, const ics_hotspots *h)
{
    const ics_topo_chan *c = ics_topo_chan_get(t, x->chan);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "src", ics_topo_dev_label(t, c->src));
    cJSON_AddStringToObject(o, "dst", ics_topo_dev_label(t, c->dst));
    cJSON_AddStringToObject(o, "kind", ics_chan_kind_name(c->kind));
    cJSON_AddNumberToObject(o, "width", c->width);
    cJSON_AddNumberToObject(o, "gbps", (double)c->bw_bytes_per_s / 1e9);
    cJSON_AddNumberToObject(o, "bytes", (double)x->bytes);
    cJSON_AddNumberToObject(o, "utilization", utilization(x, h));
    return o;
}

cJSON *ics_report_hotspots_cjson(const ics_hotspots *h)
{
    const ics_topo *t = h->t;
    int n;
    hot *v = ranked(h, &n);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "span_s", ics_time_to_s(h->span_ps));
    cJSON_AddNumberToObject(o, "channels", ics_topo_nchans(t));
    cJSON_AddNumberToObject(o, "channels_used", n);
    if (h->note)
        cJSON_AddStringToObject(o, "note", h->note);
    cJSON *busiest = cJSON_AddArrayToObject(o, "busiest");
    for (int i = 0; i < n && i < h->top; i++)
        cJSON_AddItemToArray(busiest, json_link(t, &v[i], h));
    kind_sum s[ICS_CHAN_KIND_COUNT];
    sum_kinds(t, v, n, h, s);
    cJSON *kinds = cJSON_AddObjectToObject(o, "by_kind");
    for (int k = 0; k < ICS_CHAN_KIND_COUNT; k++) {
        if (!s[k].used)
            continue;
        cJSON *ko = cJSON_AddObjectToObject(kinds, ics_chan_kind_name((ics_chan_kind)k));
        cJSON_AddNumberToObject(ko, "channels_used", s[k].used);
        cJSON_AddNumberToObject(ko, "bytes", (double)s[k].bytes);
        cJSON_AddNumberToObject(ko, "max_utilization", s[k].max_util);
    }
    g_free(v);
    return o;
}
