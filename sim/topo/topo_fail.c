/* Failures and degradations of a built topology (topo.h, "failures"): each spec is parsed,
 * resolved to channels and devices, applied (dead channels dropped, derated ones slowed), and
 * the machine checked for a split; a refused list leaves the topology as it was.
 * Invariant: channels stay in reverse pairs (2k, 2k+1) and device ids never move. */
#include "topo/topo_internal.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef enum { F_NVLINK, F_NVSWITCH, F_NIC, F_SWITCH, F_LINK, F_LANES, F_KIND_COUNT } fail_kind;
static const char *const kind_names[F_KIND_COUNT] = {"nvlink", "nvswitch", "nic",
                                                     "switch", "link",     "lanes"};

/* One spec as written: KIND:[NODE:]BODY[@FACTOR | =LANES]. */
typedef struct {
    const char *text; /* the whole spec, for messages */
    fail_kind kind;
    int node;        /* -1: every node ('*') */
    bool node_given; /* a NODE: prefix was written */
    char *body;      /* the names (transfer full) */
    double factor;   /* link@F; 0 when not given */
    int lanes;       /* lanes=N */
} fail_spec;

/* What the specs do, gathered before anything changes. */
typedef struct {
    bool *dead;      /* per channel */
    double *scale;   /* per channel: rate factor (1: unchanged) */
    int *width;      /* per channel: new width (-1: unchanged) */
    bool *dev_down;  /* per device */
    GPtrArray *said; /* char *: one description per spec */
} fail_plan;

static bool spec_error(GError **error, const fail_spec *s, const char *fmt, ...)
    G_GNUC_PRINTF(3, 4);

static bool spec_error(GError **error, const fail_spec *s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *why = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    g_set_error(error, ICS_ERROR, ICS_ERROR_INPUT, "%s: %s", s->text, why);
    g_free(why);
    return false;
}

/* ---- parsing ------------------------------------------------------------------------------- */

static bool parse_node(const ics_topo *t, fail_spec *s, const char **rest, GError **error)
{
    const char *p = *rest, *colon = strchr(p, ':');
    s->node = 0;
    if (!colon)
        return true;
    if (colon == p + 1 && *p == '*') {
        s->node = -1;
    } else {
        for (const char *q = p; q < colon; q++)
            if (!g_ascii_isdigit(*q))
                return spec_error(error, s, "expected a node number or * before ':', got \"%.*s\"",
                                  (int)(colon - p), p);
        errno = 0;
        long v = colon > p ? strtol(p, NULL, 10) : -1;
        if (colon == p || errno || v >= ics_topo_nodes(t))
            return spec_error(error, s, "expected a node in 0..%d, got \"%.*s\"",
                              ics_topo_nodes(t) - 1, (int)(colon - p), p);
        s->node = (int)v;
    }
    s->node_given = true;
    *rest = colon + 1;
    return true;
}

/* @F of link:, =N of lanes:, cut off the body. */
static bool parse_suffix(fail_spec *s, GError **error)
{
    char *at = s->kind == F_LINK ? strchr(s->body, '@') : NULL;
    char *eq = s->kind == F_LANES ? strchr(s->body, '=') : NULL;
    char *end;
    if (at) {
        *at = '\0';
        errno = 0;
        s->factor = strtod(at + 1, &end);
        if (errno || end == at + 1 || *end || !isfinite(s->factor) || s->factor <= 0 ||
            s->factor > 1)
            return spec_error(error, s, "expected a rate factor in (0, 1] after '@', got \"%s\"",
                              at + 1);
    }
    if (s->kind == F_LANES) {
        if (!eq)
            return spec_error(error, s, "expected lanes:A-B=N, got no '='");
        *eq = '\0';
        errno = 0;
        long v = strtol(eq + 1, &end, 10);
        if (errno || end == eq + 1 || *end || v < 0 || v > 4096)
            return spec_error(error, s, "expected a link count >= 0 after '=', got \"%s\"", eq + 1);
        s->lanes = (int)v;
    }
    if (!*s->body)
        return spec_error(error, s, "expected a device name after '%s:'", kind_names[s->kind]);
    return true;
}

static bool parse_spec(const ics_topo *t, const char *text, fail_spec *s, GError **error)
{
    *s = (fail_spec){.text = text};
    const char *colon = strchr(text, ':');
    int k = 0;
    while (colon && k < F_KIND_COUNT &&
           !(strlen(kind_names[k]) == (size_t)(colon - text) &&
             strncmp(text, kind_names[k], (size_t)(colon - text)) == 0))
        k++;
    if (!colon || k == F_KIND_COUNT)
        return spec_error(error, s,
                          "expected nvlink:, nvswitch:, nic:, switch:, link: or lanes: first");
    s->kind = (fail_kind)k;
    const char *rest = colon + 1;
    if (!parse_node(t, s, &rest, error))
        return false;
    if (s->kind == F_SWITCH && s->node_given)
        return spec_error(error, s, "fabric switches belong to no node: write switch:NAME");
    s->body = g_strdup(rest);
    return parse_suffix(s, error);
}

/* ---- names --------------------------------------------------------------------------------- */

/* A device of `node` by name, or a fabric switch by its bare name; -1 if neither. */
static int resolve(const ics_topo *t, const char *name, int node)
{
    char *label = g_strdup_printf("%d:%s", node, name);
    int d = ics_topo_find(t, label);
    g_free(label);
    if (d < 0 && !strchr(name, ':')) {
        d = ics_topo_find(t, name);
        if (d >= 0 && ics_topo_dev_get(t, d)->node >= 0)
            d = -1; /* a bare name ics_topo_find read as node 0's */
    }
    return d;
}

/* A-B: the first '-' at which both halves name devices (names may hold '-' themselves). */
static bool resolve_pair(const ics_topo *t, const fail_spec *s, int node, int *a, int *b,
                         GError **error)
{
    for (char *dash = strchr(s->body, '-'); dash; dash = strchr(dash + 1, '-')) {
        char *left = g_strndup(s->body, (gsize)(dash - s->body));
        *a = resolve(t, left, node);
        *b = resolve(t, dash + 1, node);
        g_free(left);
        if (*a >= 0 && *b >= 0)
            return true;
    }
    return spec_error(error, s,
                      "expected A-B naming two devices of node %d or the fabric, got "
                      "\"%s\"",
                      node, s->body);
}

/* The label of d as the description prints it: "*:nvsw2" for every node. */
static char *label(const ics_topo *t, int d, const fail_spec *s)
{
    const ics_topo_dev *dv = ics_topo_dev_get(t, d);
    if (s->node < 0 && dv->node >= 0)
        return g_strdup_printf("*:%s", dv->name);
    return g_strdup(ics_topo_dev_label(t, d));
}

/* ---- the plan ------------------------------------------------------------------------------ */

static void kill_chan(const ics_topo *t, fail_plan *p, int c)
{
    const ics_topo_chan *ch = ics_topo_chan_get(t, c);
    p->dead[c] = p->dead[ch->reverse] = true;
    /* a NIC whose fabric port died is down: nothing can leave through it */
    for (int side = 0; side < 2; side++) {
        int d = side ? ch->dst : ch->src;
        if (ch->kind == ICS_CHAN_NETWORK && ics_topo_dev_get(t, d)->kind == ICS_DEV_NIC)
            p->dev_down[d] = true;
    }
}

static bool kill_device(const ics_topo *t, fail_plan *p, const fail_spec *s, int d,
                        ics_dev_kind want, bool first, GError **error)
{
    const ics_topo_dev *dv = ics_topo_dev_get(t, d);
    if (dv->kind != want)
        return spec_error(error, s, "%s is a %s, not a %s", ics_topo_dev_label(t, d),
                          ics_dev_kind_name(dv->kind), ics_dev_kind_name(want));
    if (dv->down || p->dev_down[d])
        return spec_error(error, s, "%s is already down", ics_topo_dev_label(t, d));
    int n, links = 0, width = 0;
    const int *out = ics_topo_out(t, d, &n);
    for (int i = 0; i < n; i++) {
        if (!p->dead[out[i]]) {
            links++;
            width += ics_topo_chan_get(t, out[i])->width;
        }
        kill_chan(t, p, out[i]);
    }
    p->dev_down[d] = true;
    if (first) {
        char *l = label(t, d, s);
        g_ptr_array_add(p->said, g_strdup_printf("%s down: %d %s (width %d)", l, links,
                                                 links == 1 ? "link" : "links", width));
        g_free(l);
    }
    return true;
}

static bool can_die(const ics_topo *t, const fail_spec *s, int c, GError **error)
{
    ics_chan_kind k = ics_topo_chan_get(t, c)->kind;
    if (k == ICS_CHAN_NVLINK || k == ICS_CHAN_NETWORK)
        return true;
    return spec_error(error, s,
                      "only NVLink and network links can be taken down, this one is %s (slow it "
                      "with @F instead)",
                      ics_chan_kind_name(k));
}

static bool apply_link(const ics_topo *t, fail_plan *p, const fail_spec *s, int node, bool first,
                       GError **error)
{
    int a = -1, b = -1;
    if (!resolve_pair(t, s, node, &a, &b, error))
        return false;
    int c = ics_topo_chan_between(t, a, b);
    if (c >= 0 && p->dead[c])
        c = -1;
    const ics_topo_chan *ch = c >= 0 ? ics_topo_chan_get(t, c) : NULL;
    char *la = label(t, a, s), *lb = label(t, b, s), *said = NULL;
    bool ok = true;
    if (!ch || (s->kind == F_NVLINK && ch->kind != ICS_CHAN_NVLINK)) {
        ok = spec_error(error, s, "no live %slink between %s and %s",
                        s->kind == F_NVLINK ? "NVLink " : "", la, lb);
    } else if (s->kind == F_LINK && s->factor > 0) {
        p->scale[c] *= s->factor;
        p->scale[ch->reverse] *= s->factor;
        said = g_strdup_printf("%s-%s at %g x its rate: %.1f -> %.1f GB/s", la, lb, s->factor,
                               (double)ch->bw_bytes_per_s / 1e9,
                               (double)ch->bw_bytes_per_s * p->scale[c] / 1e9);
    } else if (s->kind == F_LANES && s->lanes > 0) {
        if (s->lanes > ch->width)
            ok = spec_error(error, s, "expected at most the %d links %s-%s has, got %d", ch->width,
                            la, lb, s->lanes);
        else {
            p->width[c] = p->width[ch->reverse] = s->lanes;
            said = g_strdup_printf("%s-%s keeps %d of %d %s", la, lb, s->lanes, ch->width,
                                   ch->kind == ICS_CHAN_PCIE ? "lanes" : "links");
        }
    } else if ((ok = s->kind == F_NVLINK || can_die(t, s, c, error))) {
        kill_chan(t, p, c);
        said = g_strdup_printf("%s-%s down: %s, width %d", la, lb, ics_chan_kind_name(ch->kind),
                               ch->width);
    }
    if (ok && first)
        g_ptr_array_add(p->said, said);
    else
        g_free(said);
    g_free(la);
    g_free(lb);
    return ok;
}

static bool apply_spec(const ics_topo *t, fail_plan *p, const fail_spec *s, GError **error)
{
    int from = s->node < 0 ? 0 : s->node, to = s->node < 0 ? ics_topo_nodes(t) : s->node + 1;
    for (int node = from; node < to; node++) {
        bool first = node == from, ok;
        if (s->kind == F_NVLINK || s->kind == F_LINK || s->kind == F_LANES) {
            ok = apply_link(t, p, s, node, first, error);
        } else {
            int d = resolve(t, s->body, node);
            static const ics_dev_kind want[] = {[F_NVSWITCH] = ICS_DEV_NVSWITCH,
                                                [F_NIC] = ICS_DEV_NIC,
                                                [F_SWITCH] = ICS_DEV_NET_SWITCH};
            ok = d >= 0 ? kill_device(t, p, s, d, want[s->kind], first, error)
                        : spec_error(error, s, "no device %s in node %d%s", s->body, node,
                                     t->has_fabric ? " or the fabric" : "");
        }
        if (!ok)
            return false;
    }
    return true;
}

/* ---- applying it --------------------------------------------------------------------------- */

/* Drops dead channels, keeping pairs together and renumbering reverses; rates and widths as
 * planned; devices down. */
static void commit(ics_topo *t, const fail_plan *p)
{
    int nc = (int)t->chans->len, kept = 0;
    int *to = g_new(int, nc + 1);
    for (int c = 0; c < nc; c++)
        to[c] = p->dead[c] ? -1 : kept++;
    GArray *chans = g_array_sized_new(FALSE, TRUE, sizeof(ics_topo_chan), (guint)kept);
    for (int c = 0; c < nc; c++) {
        if (p->dead[c])
            continue;
        ics_topo_chan ch = g_array_index(t->chans, ics_topo_chan, c);
        ch.reverse = to[ch.reverse];
        if (p->width[c] >= 0 && ch.width > 0) {
            ch.bw_bytes_per_s = ch.bw_bytes_per_s * (uint64_t)p->width[c] / (uint64_t)ch.width;
            ch.width = p->width[c];
        }
        if (p->scale[c] != 1.0)
            ch.bw_bytes_per_s =
                (uint64_t)MAX(1.0, llround((double)ch.bw_bytes_per_s * p->scale[c]));
        g_array_append_val(chans, ch);
    }
    g_array_free(t->chans, TRUE);
    t->chans = chans;
    g_free(to);
    for (guint d = 0; d < t->devs->len; d++)
        if (p->dev_down[d])
            g_array_index(t->devs, ics_topo_dev, d).down = true;
    ics_topo_build_csr(t);
}

/* A live compute NIC cabled to leaf `leaf`, or -1. */
static int nic_on_leaf(const ics_topo *t, int leaf)
{
    int n;
    const int *out = ics_topo_out(t, leaf, &n);
    for (int i = 0; i < n; i++) {
        int d = ics_topo_chan_get(t, out[i])->dst;
        if (ics_topo_dev_get(t, d)->kind == ICS_DEV_NIC && !ics_topo_dev_get(t, d)->down)
            return d;
    }
    return -1;
}

/* Whether the fabric still joins every node: a live compute NIC per node, and an up/down path
 * between every two leaves that have live NICs (through ics_route_find, so that the check is
 * the router's own). O(leaves^2 x spines); a few ms for 32 leaves. */
static bool still_joined(const ics_topo *t, GError **error)
{
    if (!t->has_fabric || t->nodes < 2)
        return true;
    for (int node = 0; node < t->nodes; node++) {
        bool live = false;
        for (int i = 0; i < t->nics && !live; i++) {
            const ics_topo_dev *d = ics_topo_dev_get(t, ics_topo_nic(t, node, i));
            live = d->rail >= 0 && !d->down;
        }
        if (!live) {
            g_set_error(error, ICS_ERROR, ICS_ERROR_INPUT,
                        "the failures leave node %d without a live compute NIC", node);
            return false;
        }
    }
    int leaves = t->plan.leaves, *rep = g_new(int, leaves + 1);
    for (int l = 0; l < leaves; l++)
        rep[l] = nic_on_leaf(t, ics_topo_net_switch(t, 1, l));
    bool ok = true;
    for (int a = 0; a < leaves && ok; a++)
        for (int b = a + 1; b < leaves && ok && rep[a] >= 0; b++) {
            ics_route r;
            if (rep[b] < 0)
                continue;
            ok = ics_route_find(t, rep[a], rep[b], 0, &r);
            ics_route_clear(&r);
            if (!ok)
                g_set_error(error, ICS_ERROR, ICS_ERROR_INPUT,
                            "the failures split the fabric: %s and %s no longer reach each other",
                            ics_topo_dev_label(t, ics_topo_net_switch(t, 1, a)),
                            ics_topo_dev_label(t, ics_topo_net_switch(t, 1, b)));
        }
    g_free(rep);
    return ok;
}

/* Which pairs of GPUs of each node a dead channel touches are joined by a route now: one bit
 * per (node, a, b) in *joined (transfer full), NULL for nodes nothing touches. A node without a
 * PCIe tree has only its NVLinks; a failure must not leave two of its GPUs apart. */
static bool **gpu_pairs_joined(const ics_topo *t, const fail_plan *p)
{
    int g = t->gpus;
    bool **joined = g_new0(bool *, t->nodes + 1);
    for (int c = 0; c < (int)t->chans->len; c++) {
        int node = ics_topo_dev_get(t, ics_topo_chan_get(t, c)->src)->node;
        if (!p->dead[c] || node < 0 || joined[node])
            continue;
        joined[node] = g_new0(bool, (size_t)g *g);
        for (int a = 0; a < g; a++)
            for (int b = 0; b < g; b++) {
                ics_route r;
                joined[node][a * g + b] =
                    ics_route_find(t, ics_topo_gpu(t, node, a), ics_topo_gpu(t, node, b), 0, &r);
                ics_route_clear(&r);
            }
    }
    return joined;
}

/* After the failures: every pair joined before still is. Frees joined. */
static bool gpus_still_joined(const ics_topo *t, bool **joined, GError **error)
{
    int g = t->gpus;
    bool ok = true;
    for (int node = 0; node < t->nodes; node++) {
        for (int a = 0; ok && joined[node] && a < g; a++)
            for (int b = 0; ok && b < g; b++) {
                ics_route r;
                if (joined[node][a * g + b] &&
                    !ics_route_find(t, ics_topo_gpu(t, node, a), ics_topo_gpu(t, node, b), 0, &r)) {
                    g_set_error(error, ICS_ERROR, ICS_ERROR_INPUT,
                                "the failures leave gpu%d and gpu%d of node %d without a path "
                                "(the node has no PCIe tree to fall back on)",
                                a, b, node);
                    ok = false;
                }
                ics_route_clear(&r);
            }
        g_free(joined[node]);
    }
    g_free(joined);
    return ok;
}

bool ics_topo_fail(ics_topo *t, const char *specs, GError **error)
{
    char **words = g_strsplit_set(specs ? specs : "", ", \t\n", -1);
    int nc = (int)t->chans->len, nd = (int)t->devs->len;
    fail_plan p = {.dead = g_new0(bool, nc + 1),
                   .scale = g_new(double, nc + 1),
                   .width = g_new(int, nc + 1),
                   .dev_down = g_new0(bool, nd + 1),
                   .said = g_ptr_array_new_with_free_func(g_free)};
    for (int c = 0; c < nc; c++) {
        p.scale[c] = 1.0;
        p.width[c] = -1;
    }
    bool ok = true;
    int given = 0;
    for (char **w = words; *w && ok; w++) {
        if (!**w)
            continue;
        fail_spec s;
        ok = parse_spec(t, *w, &s, error) && apply_spec(t, &p, &s, error);
        g_free(s.body);
        given++;
    }
    if (ok && given == 0) {
        g_set_error(error, ICS_ERROR, ICS_ERROR_INPUT,
                    "expected a failure such as nvlink:gpu0-gpu1 or switch:spine3, got \"%s\"",
                    specs ? specs : "");
        ok = false;
    }
    if (ok) {
        /* apply to a copy first: a list that splits the machine changes nothing */
        GArray *chans = g_array_copy(t->chans), *devs = g_array_copy(t->devs);
        bool **joined = gpu_pairs_joined(t, &p);
        GPtrArray *failures = t->failures;
        t->failures = g_ptr_array_new(); /* non-NULL: routes take the degraded path */
        commit(t, &p);
        ok = gpus_still_joined(t, joined, error) && still_joined(t, error);
        g_ptr_array_free(t->failures, TRUE);
        t->failures = failures;
        if (ok) {
            g_array_free(chans, TRUE);
            g_array_free(devs, TRUE);
            if (!t->failures)
                t->failures = g_ptr_array_new_with_free_func(g_free);
            for (guint i = 0; i < p.said->len; i++)
                g_ptr_array_add(t->failures, g_strdup(g_ptr_array_index(p.said, i)));
        } else {
            g_array_free(t->chans, TRUE);
            g_array_free(t->devs, TRUE);
            t->chans = chans;
            t->devs = devs;
            ics_topo_build_csr(t);
        }
    }
    g_strfreev(words);
    g_free(p.dead);
    g_free(p.scale);
    g_free(p.width);
    g_free(p.dev_down);
    g_ptr_array_free(p.said, TRUE);
    return ok;
}

int ics_topo_nfailures(const ics_topo *t)
{
    return t->failures ? (int)t->failures->len : 0;
}

const char *ics_topo_failure(const ics_topo *t, int i)
{
    g_assert(i >= 0 && i < ics_topo_nfailures(t));
    return g_ptr_array_index(t->failures, i);
}
