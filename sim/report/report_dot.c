/* Topologies as Graphviz DOT, drawn to be read (a teacher's slide, a design review): devices
 * grouped in clusters (one per node, one per fabric tier), a colour per link family, bandwidth
 * labels smaller than device names, failed parts dashed in grey. At the cluster level a node is
 * one vertex and nodes cabled to the same leaves (a scalable unit) are one, so a 128-node
 * fabric draws as units, leaves and spines. Invariant: every edge is one physical link or bond
 * (node level) or the links between two vertices added up (cluster level). */
#include "report/report.h"

#include <math.h>
#include <string.h>

/* Per channel kind (topo.h): NVIDIA green for NVLink, then blue, greys, orange. */
static const char *const family_color[ICS_CHAN_KIND_COUNT] = {"#76b900", "#1f77b4", "#7f7f7f",
                                                              "#7f7f7f", "#ff7f0e"};
static const char *const family_name[ICS_CHAN_KIND_COUNT] = {"NVLink", "PCIe", "host bridge",
                                                             "socket link", "network"};
static const char *const shapes[ICS_DEV_KIND_COUNT] = {"box",     "diamond",   "ellipse", "house",
                                                       "octagon", "component", "hexagon"};
static const char *const fills[ICS_DEV_KIND_COUNT] = {"#d9f2b4", "#e8f5c8", "#dbe9f6", "#eeeeee",
                                                      "#eeeeee", "#ffe3c4", "#ffd2a6"};

static void quoted(GString *out, const char *s)
{
    char *valid = g_utf8_make_valid(s ? s : "", -1);
    g_string_append_c(out, '"');
    for (const char *p = valid; *p; p++) {
        if (*p == '\n') { /* a line break of the label: DOT's escape */
            g_string_append(out, "\\n");
            continue;
        }
        if (*p == '"' || *p == '\\')
            g_string_append_c(out, '\\');
        if ((unsigned char)*p >= 0x20)
            g_string_append_c(out, *p);
    }
    g_string_append_c(out, '"');
    g_free(valid);
}

static void bw_text(char *buf, size_t n, double bytes_per_s)
{
    double g = bytes_per_s / 1e9;
    g_snprintf(buf, n, g >= 1000 ? "%.1f TB/s" : "%.0f GB/s", g >= 1000 ? g / 1000 : g);
}

/* Line width grows with the log of the bandwidth: a 25 GB/s NVLink thin, a 450 GB/s bundle
 * thick, nothing unreadably wide. */
static double pen(double bytes_per_s)
{
    double g = MAX(1.0, bytes_per_s / 1e9);
    return 1.0 + MIN(4.0, log10(g));
}

static void header(const ics_topo *t, bool concentrate, GString *out)
{
    g_string_append(out, "graph ");
    quoted(out, ics_hw_name(ics_topo_hw(t)));
    /* concentrate merges the parallel runs of a fat-tree's many edges into bundles */
    g_string_append_printf(out,
                           " {\n  graph [fontname=\"Helvetica\", compound=true, "
                           "newrank=true, concentrate=%s, ",
                           concentrate ? "true" : "false");
    g_string_append(out, "nodesep=0.25, ranksep=0.6];\n  node [fontname=\"Helvetica\", "
                         "fontsize=10, style=filled];\n  edge [fontname=\"Helvetica\", "
                         "fontsize=7, fontcolor=\"#555555\"];\n");
}

/* Which link families the picture holds, as a legend: one plain vertex whose HTML label is a
 * small table of coloured lines (colours only mean something when they are said). */
static void legend(GString *out, const bool *used)
{
    g_string_append(out, "  legend [shape=plaintext, style=\"\", fontsize=9, label=<<table "
                         "border=\"0\" cellborder=\"0\" cellspacing=\"2\"><tr><td "
                         "colspan=\"2\"><b>links</b></td></tr>");
    for (int k = 0; k < ICS_CHAN_KIND_COUNT; k++)
        if (used[k])
            g_string_append_printf(out,
                                   "<tr><td><font color=\"%s\"><b>&#9472;&#9472;&#9472;</b>"
                                   "</font></td><td align=\"left\">%s</td></tr>",
                                   family_color[k], family_name[k]);
    g_string_append(out, "</table>>];\n");
}

static void device(const ics_topo *t, int d, const char *indent, GString *out)
{
    const ics_topo_dev *dv = ics_topo_dev_get(t, d);
    g_string_append(out, indent);
    quoted(out, ics_topo_dev_label(t, d));
    g_string_append(out, " [label=");
    quoted(out, dv->name);
    g_string_append_printf(out, ", shape=%s, fillcolor=\"%s\"%s];\n", shapes[dv->kind],
                           dv->down ? "#f4f4f4" : fills[dv->kind],
                           dv->down ? ", style=\"filled,dashed\", fontcolor=\"#999999\", "
                                      "color=\"#999999\""
                                    : "");
}

static void node_level(const ics_topo *t, GString *out, bool *used)
{
    static const char *const tiers[] = {NULL, "leaves", "spines", "cores"};
    int nd = ics_topo_ndevs(t);
    for (int node = 0; node < ics_topo_nodes(t); node++) {
        g_string_append_printf(out,
                               "  subgraph cluster_node%d {\n    label=\"node %d\"; fontsize=12; "
                               "style=rounded; color=\"#999999\";\n",
                               node, node);
        for (int d = 0; d < nd; d++)
            if (ics_topo_dev_get(t, d)->node == node)
                device(t, d, "    ", out);
        g_string_append(out, "  }\n");
    }
    for (int tier = 1; tier <= 3; tier++) {
        bool any = false;
        for (int d = 0; d < nd; d++) {
            const ics_topo_dev *dv = ics_topo_dev_get(t, d);
            if (dv->kind != ICS_DEV_NET_SWITCH || dv->tier != tier)
                continue;
            if (!any)
                g_string_append_printf(out,
                                       "  subgraph cluster_tier%d {\n    label=\"%s\"; "
                                       "fontsize=12; style=rounded; color=\"#cc8844\"; "
                                       "rank=same;\n",
                                       tier, tiers[tier]);
            any = true;
            device(t, d, "    ", out);
        }
        if (any)
            g_string_append(out, "  }\n");
    }
    for (int c = 0; c < ics_topo_nchans(t); c++) {
        const ics_topo_chan *ch = ics_topo_chan_get(t, c);
        if (ch->reverse < c) /* one edge per physical link */
            continue;
        char bw[32];
        bw_text(bw, sizeof bw, (double)ch->bw_bytes_per_s);
        used[ch->kind] = true;
        g_string_append(out, "  ");
        quoted(out, ics_topo_dev_label(t, ch->src));
        g_string_append(out, " -- ");
        quoted(out, ics_topo_dev_label(t, ch->dst));
        g_string_append_printf(out, " [color=\"%s\", penwidth=%.1f, label=\"x%d %s\"];\n",
                               family_color[ch->kind], pen((double)ch->bw_bytes_per_s), ch->width,
                               bw);
    }
}

/* ---- cluster level ---------------------------------------------------------------------- */

/* Each node's vertex: nodes whose compute NICs are cabled to the same leaves share one (a
 * scalable unit of a rail-optimized fabric, or the nodes of one leaf). Returns the vertex
 * count; vertex_of[node] its vertex, first[v] / last[v] its node range. */
static int group_nodes(const ics_topo *t, int *vertex_of, int *first, int *last, int *count)
{
    int nodes = ics_topo_nodes(t), nv = 0;
    GHashTable *by_key = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    for (int node = 0; node < nodes; node++) {
        GString *key = g_string_new(NULL);
        for (int i = 0; i < ics_topo_nics_per_node(t); i++) {
            int nic = ics_topo_nic(t, node, i), n;
            const int *o = ics_topo_out(t, nic, &n);
            for (int k = 0; k < n; k++)
                if (ics_topo_chan_get(t, o[k])->kind == ICS_CHAN_NETWORK)
                    g_string_append_printf(key, "%d,", ics_topo_chan_get(t, o[k])->dst);
        }
        gpointer v;
        if (g_hash_table_lookup_extended(by_key, key->str, NULL, &v)) {
            vertex_of[node] = GPOINTER_TO_INT(v);
            g_string_free(key, TRUE);
        } else {
            vertex_of[node] = nv;
            first[nv] = node;
            count[nv] = 0;
            g_hash_table_insert(by_key, g_string_free(key, FALSE), GINT_TO_POINTER(nv));
            nv++;
        }
        last[vertex_of[node]] = node;
        count[vertex_of[node]]++;
    }
    g_hash_table_destroy(by_key);
    return nv;
}

typedef struct {
    int links;
    double bw;
    ics_chan_kind kind;
} bundle;

#define LABELLED_EDGES 64

static void cluster_level(const ics_topo *t, GString *out, bool *used)
{
    int nodes = ics_topo_nodes(t), nd = ics_topo_ndevs(t);
    int *vertex_of = g_new(int, nodes), *first = g_new(int, nodes), *last = g_new(int, nodes);
    int *count = g_new(int, nodes);
    int nv = group_nodes(t, vertex_of, first, last, count);
    const ics_hw_node *hn = ics_hw_node_of(ics_topo_hw(t));
    g_string_append(out, "  subgraph cluster_nodes {\n    label=\"nodes\"; fontsize=12; "
                         "style=rounded; color=\"#999999\"; rank=same;\n");
    for (int v = 0; v < nv; v++) {
        char *label =
            count[v] == 1 ? g_strdup_printf("node %d\n%d GPU", first[v], hn->gpus)
            : last[v] - first[v] + 1 == count[v]
                ? g_strdup_printf("nodes %d-%d\n%d x %d GPU", first[v], last[v], count[v], hn->gpus)
                : g_strdup_printf("%d nodes from %d\n%d x %d GPU", count[v], first[v], count[v],
                                  hn->gpus);
        g_string_append_printf(out, "    \"v%d\" [label=", v);
        quoted(out, label);
        g_string_append_printf(out, ", shape=box3d, fillcolor=\"%s\"];\n", fills[ICS_DEV_GPU]);
        g_free(label);
    }
    g_string_append(out, "  }\n");
    /* fabric switches as at the node level, edges added up per pair of vertices */
    GString *sw = g_string_new(NULL);
    for (int tier = 1; tier <= 3; tier++) {
        static const char *const tiers[] = {NULL, "leaves", "spines", "cores"};
        bool any = false;
        for (int d = 0; d < nd; d++) {
            const ics_topo_dev *dv = ics_topo_dev_get(t, d);
            if (dv->kind != ICS_DEV_NET_SWITCH || dv->tier != tier)
                continue;
            if (!any)
                g_string_append_printf(sw,
                                       "  subgraph cluster_tier%d {\n    label=\"%s\"; "
                                       "fontsize=12; style=rounded; color=\"#cc8844\"; "
                                       "rank=same;\n",
                                       tier, tiers[tier]);
            any = true;
            device(t, d, "    ", sw);
        }
        if (any)
            g_string_append(sw, "  }\n");
    }
    g_string_append(out, sw->str);
    g_string_free(sw, TRUE);
    /* a vertex id per device: node devices map to their node's vertex, switches to themselves */
    GHashTable *edges = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
    GPtrArray *order = g_ptr_array_new(); /* keys in first-seen order: deterministic output */
    for (int c = 0; c < ics_topo_nchans(t); c++) {
        const ics_topo_chan *ch = ics_topo_chan_get(t, c);
        if (ch->reverse < c)
            continue;
        const ics_topo_dev *a = ics_topo_dev_get(t, ch->src), *b = ics_topo_dev_get(t, ch->dst);
        if (a->node >= 0 && b->node >= 0)
            continue; /* inside a node */
        char *ka = a->node >= 0 ? g_strdup_printf("v%d", vertex_of[a->node])
                                : g_strdup(ics_topo_dev_label(t, ch->src));
        char *kb = b->node >= 0 ? g_strdup_printf("v%d", vertex_of[b->node])
                                : g_strdup(ics_topo_dev_label(t, ch->dst));
        char *key = g_strdup_printf("%s\t%s", ka, kb);
        bundle *e = g_hash_table_lookup(edges, key);
        if (!e) {
            e = g_new0(bundle, 1);
            e->kind = ch->kind;
            g_hash_table_insert(edges, g_strdup(key), e);
            g_ptr_array_add(order, g_strdup(key));
        }
        e->links += ch->width;
        e->bw += (double)ch->bw_bytes_per_s;
        g_free(key);
        g_free(ka);
        g_free(kb);
    }
    /* past LABELLED_EDGES switch-to-switch edges (512 leaf-spine pairs of a SuperPOD) labels
     * would make the picture metres wide: the pairs' figure goes in the caption instead (a
     * fat-tree's pairs are alike), and every edge keeps it as a tooltip */
    int between_switches = 0;
    for (guint i = 0; i < order->len; i++)
        between_switches += ((const char *)g_ptr_array_index(order, i))[0] != 'v';
    bool label_all = between_switches <= LABELLED_EDGES;
    char *caption = NULL;
    for (guint i = 0; i < order->len; i++) {
        const char *key = g_ptr_array_index(order, i);
        const bundle *e = g_hash_table_lookup(edges, key);
        char **ends = g_strsplit(key, "\t", 2);
        char bw[32];
        bw_text(bw, sizeof bw, e->bw);
        used[e->kind] = true;
        bool label = label_all || key[0] == 'v';
        if (!label && !caption)
            caption = g_strdup_printf("switch pairs: %d links, %s each (%d pairs)", e->links, bw,
                                      between_switches);
        g_string_append(out, "  ");
        quoted(out, ends[0]);
        g_string_append(out, " -- ");
        quoted(out, ends[1]);
        g_string_append_printf(out, " [color=\"%s\", penwidth=%.1f, %s=\"%d links %s\"];\n",
                               family_color[e->kind], pen(e->bw), label ? "label" : "tooltip",
                               e->links, bw);
        g_strfreev(ends);
        g_free(order->pdata[i]);
    }
    if (caption) {
        g_string_append(out, "  label=");
        quoted(out, caption);
        g_string_append(out, "; labelloc=b; fontsize=11;\n");
        g_free(caption);
    }
    g_ptr_array_free(order, TRUE);
    g_hash_table_destroy(edges);
    g_free(vertex_of);
    g_free(first);
    g_free(last);
    g_free(count);
}

void ics_report_topo_dot_level(const ics_topo *t, ics_dot_level level, GString *out)
{
    bool used[ICS_CHAN_KIND_COUNT] = {false};
    bool cluster = level == ICS_DOT_CLUSTER && ics_topo_fattree(t);
    header(t, cluster, out);
    if (cluster)
        cluster_level(t, out, used);
    else
        node_level(t, out, used);
    legend(out, used);
    g_string_append(out, "}\n");
}

void ics_report_topo_dot(const ics_topo *t, GString *out)
{
    ics_report_topo_dot_level(t, ICS_DOT_NODE, out);
}
