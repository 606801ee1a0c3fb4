/* Topology reports: the text summary, the nvidia-smi matrix, JSON and DOT. Bandwidths print in
 * GB/s (1e9 bytes/s, one direction unless said otherwise), as vendors and nccl-tests do. */
#include "report/report.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>

#include "topo/topo.h"

/* ---- shared facts ------------------------------------------------------------------------- */

typedef struct {
    int links;      /* NVLinks of GPU 0 */
    uint64_t nv_bw; /* their bandwidth, one direction */
    int lanes;      /* host link width */
    uint64_t host_bw;
    const ics_hw_standard *host_std;
    int nic;         /* nearest compute NIC of GPU 0, or -1 */
    int nics;        /* how many NICs its channels leave by (4 EFA on a p5) */
    uint64_t nic_bw; /* each */
} gpu_facts;

static void get_gpu_facts(const ics_topo *t, gpu_facts *f)
{
    int g0 = ics_topo_gpu(t, 0, 0), w;
    *f = (gpu_facts){.nic = -1};
    f->nv_bw = ics_topo_dev_bw(t, g0, ICS_CHAN_NVLINK, &f->links);
    f->host_bw = ics_topo_dev_bw(t, g0, ICS_CHAN_PCIE, &f->lanes);
    int n;
    const int *out = ics_topo_out(t, g0, &n);
    for (int i = 0; i < n; i++)
        if (ics_topo_chan_get(t, out[i])->kind == ICS_CHAN_PCIE)
            f->host_std = ics_topo_chan_get(t, out[i])->standard;
    int all[ICS_ROUTE_MAX_NICS];
    f->nics = ics_route_nics_of_gpu(t, g0, all);
    f->nic = f->nics > 0 ? all[0] : -1;
    if (f->nic >= 0) {
        /* the port's own speed; a fabric may train it lower */
        const ics_hw_node *node = ics_hw_node_of(ics_topo_hw(t));
        const ics_hw_pcie *e = &node->pcie[ics_topo_dev_get(t, f->nic)->local];
        f->nic_bw = ics_hw_standard_bw(e->nic_type->standard, 1);
        if (ics_topo_dev_bw(t, f->nic, ICS_CHAN_NETWORK, &w) > 0)
            f->nic_bw = ics_topo_dev_bw(t, f->nic, ICS_CHAN_NETWORK, &w);
    }
}

static int count_links(const ics_topo *t)
{
    return ics_topo_nchans(t) / 2;
}

/* ---- text --------------------------------------------------------------------------------- */

static void text_devices(const ics_topo *t, GString *out)
{
    int counts[ICS_DEV_KIND_COUNT];
    ics_topo_count_kinds(t, counts);
    g_string_append(out, "devices: ");
    bool first = true;
    for (int k = 0; k < ICS_DEV_KIND_COUNT; k++) {
        if (!counts[k])
            continue;
        g_string_append_printf(out, "%s%s %d", first ? "" : ", ",
                               ics_dev_kind_name((ics_dev_kind)k), counts[k]);
        first = false;
    }
    g_string_append_printf(out, "\nlinks: %d (%d one-way channels)\n", count_links(t),
                           ics_topo_nchans(t));
}

static void text_gpu(const ics_topo *t, GString *out)
{
    const ics_hw_node *n = ics_hw_node_of(ics_topo_hw(t));
    gpu_facts f;
    get_gpu_facts(t, &f);
    g_string_append_printf(out, "per GPU (%s, %s):\n", n->gpu_type->product, n->gpu_type->arch);
    if (f.links > 0)
        g_string_append_printf(out, "  NVLink  %d x %s = %.1f GB/s per direction, %.1f GB/s both\n",
                               f.links, n->gpu_type->nvlink->name, f.nv_bw / 1e9,
                               2 * f.nv_bw / 1e9);
    else
        g_string_append(out, "  NVLink  none\n");
    if (f.host_std)
        g_string_append_printf(out, "  host    x%d %s = %.1f GB/s per direction\n", f.lanes,
                               f.host_std->name, f.host_bw / 1e9);
    if (f.nic >= 0 && f.nics == 1) {
        char cls[16];
        g_string_append_printf(out, "  NIC     %s (%s from gpu0), %.1f GB/s per direction\n",
                               ics_topo_dev_get(t, f.nic)->name,
                               ics_topo_path_class(t, ics_topo_gpu(t, 0, 0), f.nic, cls),
                               f.nic_bw / 1e9);
    } else if (f.nic >= 0) {
        char cls[16];
        g_string_append_printf(out,
                               "  NICs    %d, %s first (%s from gpu0), %.1f GB/s per direction "
                               "each, %.1f together\n",
                               f.nics, ics_topo_dev_get(t, f.nic)->name,
                               ics_topo_path_class(t, ics_topo_gpu(t, 0, 0), f.nic, cls),
                               f.nic_bw / 1e9, f.nics * f.nic_bw / 1e9);
    }
}

/* A dragonfly's line: its shape and routing (hw/dragonfly.h). */
static void text_dragonfly(const ics_topo *t, const ics_hw_fabric *f, GString *out)
{
    ics_dragonfly_params p;
    ics_hw_dragonfly_params(ics_topo_hw(t), &p);
    g_string_append_printf(out,
                           "fabric: dragonfly of %s (radix %d, %s), %s routing\n"
                           "  groups %d x %d switches x %d nodes; a local link between every two "
                           "switches of a group, %d global links a switch (%d between every two "
                           "groups)\n"
                           "  bisection %.1f GB/s per direction\n",
                           f->switch_type->name, f->radix, f->standard->name,
                           f->valiant ? "Valiant (non-minimal)" : "minimal", p.groups,
                           p.group_switches, p.switch_nodes, p.global_links,
                           ics_dragonfly_pair_links(&p), ics_topo_bisection_bw(t) / 1e9);
}

static void text_fabric(const ics_topo *t, GString *out)
{
    const ics_hw_fabric *f = ics_hw_fabric_of(ics_topo_hw(t));
    const ics_fattree_plan *p = ics_topo_fattree(t);
    if (!f)
        return;
    if (f->topology == ICS_FABRIC_DRAGONFLY) {
        text_dragonfly(t, f, out);
        return;
    }
    g_string_append_printf(out,
                           "fabric: %d-tier fat-tree of %s (radix %d, %s), %s, %.3g:1 at the "
                           "leaf%s\n",
                           f->tiers, f->switch_type->name, f->radix, f->standard->name,
                           f->rail_optimized ? "rail-optimized" : "not rail-optimized",
                           (double)p->down_ports / (p->up_ports ? p->up_ports : p->down_ports),
                           f->sharp ? ", SHARP" : "");
    if (f->rail_optimized)
        g_string_append_printf(out, "  units of %d nodes: %d\n", f->nodes_per_unit, p->units);
    g_string_append_printf(out, "  leaves %d (%d down, %d up ports)", p->leaves, p->down_ports,
                           p->up_ports);
    if (f->tiers >= 2)
        g_string_append_printf(out, ", spines %d (%d per pod, %d links to each leaf)",
                               p->pods * p->spines_per_pod, p->spines_per_pod, p->links_leaf_spine);
    if (f->tiers == 3)
        g_string_append_printf(out, ", pods %d, cores %d (%d links to each spine)", p->pods,
                               p->cores, p->links_spine_core);
    g_string_append_printf(out, "\n  bisection %.1f GB/s per direction\n",
                           ics_topo_bisection_bw(t) / 1e9);
}

void ics_report_topo_text(const ics_topo *t, GString *out)
{
    const ics_hw *hw = ics_topo_hw(t);
    const ics_hw_node *n = ics_hw_node_of(hw);
    g_string_append_printf(out, "%s (%s)\n", ics_hw_name(hw), ics_hw_path(hw));
    g_string_append_printf(out, "nodes: %d x %s, GPUs: %d\n", ics_topo_nodes(t), n->name,
                           ics_topo_nodes(t) * n->gpus);
    text_devices(t, out);
    text_gpu(t, out);
    text_fabric(t, out);
}

/* ---- matrix ------------------------------------------------------------------------------- */

/* Node 0's GPUs, then its NICs, as matrix rows/columns. */
static int matrix_devs(const ics_topo *t, int *devs)
{
    int n = 0;
    for (int g = 0; g < ics_topo_gpus_per_node(t); g++)
        devs[n++] = ics_topo_gpu(t, 0, g);
    for (int i = 0; i < ics_topo_nics_per_node(t); i++)
        devs[n++] = ics_topo_nic(t, 0, i);
    return n;
}

static const char *matrix_label(const ics_topo *t, int d, char *buf, size_t len)
{
    const ics_topo_dev *dv = ics_topo_dev_get(t, d);
    if (dv->kind == ICS_DEV_GPU)
        snprintf(buf, len, "GPU%d", dv->local);
    else
        snprintf(buf, len, "%s", dv->name);
    return buf;
}

void ics_report_topo_matrix(const ics_topo *t, GString *out)
{
    int *devs = g_new(int, ics_topo_gpus_per_node(t) + ics_topo_nics_per_node(t) + 1);
    int n = matrix_devs(t, devs);
    char buf[64], cls[16];
    for (int j = 0; j < n; j++)
        g_string_append_printf(out, "\t%s", matrix_label(t, devs[j], buf, sizeof buf));
    g_string_append(out, "\tNUMA Affinity\n");
    for (int i = 0; i < n; i++) {
        g_string_append(out, matrix_label(t, devs[i], buf, sizeof buf));
        for (int j = 0; j < n; j++) {
            const char *c = ics_topo_path_class(t, devs[i], devs[j], cls);
            g_string_append_printf(out, "\t%s", strcmp(c, "X") == 0 ? " X " : c);
        }
        int numa = ics_topo_dev_get(t, devs[i])->numa;
        if (numa >= 0)
            g_string_append_printf(out, "\t%d", numa);
        else
            g_string_append(out, "\tN/A");
        g_string_append_c(out, '\n');
    }
    g_string_append(
        out, "\nLegend:\n\n"
             "  X    = Self\n"
             "  SYS  = Connection traversing PCIe as well as the SMP interconnect between NUMA "
             "nodes (e.g., QPI/UPI)\n"
             "  NODE = Connection traversing PCIe as well as the interconnect between PCIe Host "
             "Bridges within a NUMA node\n"
             "  PHB  = Connection traversing PCIe as well as a PCIe Host Bridge (typically the "
             "CPU)\n"
             "  PXB  = Connection traversing multiple PCIe bridges (without traversing the PCIe "
             "Host Bridge)\n"
             "  PIX  = Connection traversing at most a single PCIe bridge\n"
             "  NV#  = Connection traversing a bonded set of # NVLinks\n");
    g_free(devs);
}

/* ---- JSON --------------------------------------------------------------------------------- */

static cJSON *json_matrix(const ics_topo *t, const int *rows, int nr, const int *cols, int nc)
{
    cJSON *m = cJSON_CreateArray();
    char cls[16];
    for (int i = 0; i < nr; i++) {
        cJSON *row = cJSON_CreateArray();
        for (int j = 0; j < nc; j++)
            cJSON_AddItemToArray(row,
                                 cJSON_CreateString(ics_topo_path_class(t, rows[i], cols[j], cls)));
        cJSON_AddItemToArray(m, row);
    }
    return m;
}

static cJSON *json_fabric(const ics_topo *t)
{
    const ics_hw_fabric *f = ics_hw_fabric_of(ics_topo_hw(t));
    const ics_fattree_plan *p = ics_topo_fattree(t);
    cJSON *o = cJSON_CreateObject();
    if (f->topology == ICS_FABRIC_DRAGONFLY) {
        ics_dragonfly_params dp;
        ics_hw_dragonfly_params(ics_topo_hw(t), &dp);
        cJSON_AddStringToObject(o, "topology", "dragonfly");
        cJSON_AddStringToObject(o, "switch", f->switch_type->name);
        cJSON_AddStringToObject(o, "standard", f->standard->name);
        cJSON_AddNumberToObject(o, "radix", f->radix);
        cJSON_AddNumberToObject(o, "groups", dp.groups);
        cJSON_AddNumberToObject(o, "switches_per_group", dp.group_switches);
        cJSON_AddNumberToObject(o, "nodes_per_switch", dp.switch_nodes);
        cJSON_AddNumberToObject(o, "global_links_per_switch", dp.global_links);
        cJSON_AddNumberToObject(o, "global_links_per_group_pair", ics_dragonfly_pair_links(&dp));
        cJSON_AddStringToObject(o, "routing", f->valiant ? "valiant" : "minimal");
        cJSON_AddNumberToObject(o, "bisection_gbytes_per_s", ics_topo_bisection_bw(t) / 1e9);
        return o;
    }
    cJSON_AddStringToObject(o, "topology", "fat-tree");
    cJSON_AddNumberToObject(o, "tiers", f->tiers);
    cJSON_AddStringToObject(o, "switch", f->switch_type->name);
    cJSON_AddStringToObject(o, "standard", f->standard->name);
    cJSON_AddNumberToObject(o, "radix", f->radix);
    cJSON_AddBoolToObject(o, "rail_optimized", f->rail_optimized);
    cJSON_AddNumberToObject(o, "leaf_down_ports", p->down_ports);
    cJSON_AddNumberToObject(o, "leaf_up_ports", p->up_ports);
    cJSON_AddNumberToObject(o, "oversubscription",
                            p->up_ports ? (double)p->down_ports / p->up_ports : 1.0);
    cJSON_AddNumberToObject(o, "leaves", p->leaves);
    cJSON_AddNumberToObject(o, "spines", p->pods * p->spines_per_pod * (f->tiers >= 2));
    cJSON_AddNumberToObject(o, "cores", p->cores);
    cJSON_AddNumberToObject(o, "pods", p->pods);
    cJSON_AddBoolToObject(o, "sharp", f->sharp);
    cJSON_AddNumberToObject(o, "bisection_gbytes_per_s", ics_topo_bisection_bw(t) / 1e9);
    return o;
}

void ics_report_topo_json(const ics_topo *t, GString *out)
{
    const ics_hw *hw = ics_topo_hw(t);
    const ics_hw_node *node = ics_hw_node_of(hw);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "name", ics_hw_name(hw));
    cJSON_AddNumberToObject(o, "nodes", ics_topo_nodes(t));
    cJSON_AddNumberToObject(o, "gpus", ics_topo_nodes(t) * node->gpus);
    cJSON_AddNumberToObject(o, "gpus_per_node", node->gpus);
    cJSON_AddStringToObject(o, "gpu_type", node->gpu_type->name);
    int counts[ICS_DEV_KIND_COUNT];
    ics_topo_count_kinds(t, counts);
    cJSON *devs = cJSON_AddObjectToObject(o, "devices");
    for (int k = 0; k < ICS_DEV_KIND_COUNT; k++)
        cJSON_AddNumberToObject(devs, ics_dev_kind_name((ics_dev_kind)k), counts[k]);
    cJSON_AddNumberToObject(o, "links", count_links(t));
    cJSON_AddNumberToObject(o, "channels", ics_topo_nchans(t));
    gpu_facts f;
    get_gpu_facts(t, &f);
    cJSON *pg = cJSON_AddObjectToObject(o, "per_gpu");
    cJSON_AddNumberToObject(pg, "nvlinks", f.links);
    cJSON_AddNumberToObject(pg, "nvlink_gbytes_per_s", f.nv_bw / 1e9);
    cJSON_AddNumberToObject(pg, "host_lanes", f.lanes);
    cJSON_AddNumberToObject(pg, "host_gbytes_per_s", f.host_bw / 1e9);
    cJSON_AddNumberToObject(pg, "nic_gbytes_per_s", f.nic_bw / 1e9);
    cJSON_AddNumberToObject(pg, "nics", f.nics);
    int ng = node->gpus, nn = ics_topo_nics_per_node(t);
    int *gpus = g_new(int, ng + 1), *nics = g_new(int, nn + 1);
    for (int g = 0; g < ng; g++)
        gpus[g] = ics_topo_gpu(t, 0, g);
    cJSON *nic_names = cJSON_AddArrayToObject(o, "nics");
    for (int i = 0; i < nn; i++) {
        nics[i] = ics_topo_nic(t, 0, i);
        cJSON_AddItemToArray(nic_names, cJSON_CreateString(ics_topo_dev_get(t, nics[i])->name));
    }
    cJSON_AddItemToObject(o, "matrix", json_matrix(t, gpus, ng, gpus, ng));
    cJSON_AddItemToObject(o, "nic_matrix", json_matrix(t, gpus, ng, nics, nn));
    if (ics_hw_fabric_of(hw))
        cJSON_AddItemToObject(o, "fabric", json_fabric(t));
    char *s = cJSON_Print(o);
    /* names come from the user's files, whose bytes need not be UTF-8; JSON must be (a byte
     * that is not becomes U+FFFD, as the trace writer does) */
    char *valid = g_utf8_validate(s, -1, NULL) ? NULL : g_utf8_make_valid(s, -1);
    g_string_append(out, valid ? valid : s);
    g_string_append_c(out, '\n');
    g_free(valid);
    cJSON_free(s);
    cJSON_Delete(o);
    g_free(gpus);
    g_free(nics);
}

/* ---- DOT ---------------------------------------------------------------------------------- */

/* ---- a route ------------------------------------------------------------------------------ */

/* How NCCL moves data from src to dst: P2P or SHM inside a node, GPUDirect RDMA or host buffers
 * at each end of a network path (ics_topo_uses_p2p, ics_topo_uses_gdr). */
static void route_transport(const ics_topo *t, int src, int dst, GString *out)
{
    const ics_topo_dev *a = ics_topo_dev_get(t, src), *b = ics_topo_dev_get(t, dst);
    if (a->kind != ICS_DEV_GPU || src == dst)
        return;
    if (a->node == b->node && b->kind == ICS_DEV_GPU) {
        ics_path_type p = ics_topo_path_type(t, src, dst);
        bool p2p = ics_topo_uses_p2p(t, src, dst) || a->socket < 0 || b->socket < 0;
        g_string_append_printf(out, "transport: %s (path %s)\n",
                               p2p ? "P2P" : "SHM, through host memory", ics_path_type_name(p));
        return;
    }
    if (a->node == b->node)
        return;
    int via, ns = ics_route_send_nic(t, src, dst, 0, &via); /* ics_report_route's hash */
    int nd = b->kind == ICS_DEV_GPU ? ics_route_nic_of_gpu(t, dst) : dst;
    if (ns < 0 || nd < 0)
        return;
    bool gs = ics_topo_uses_gdr(t, via, ns, true) || a->socket < 0;
    bool gd = b->kind != ICS_DEV_GPU || ics_topo_uses_gdr(t, dst, nd, false) || b->socket < 0;
    g_string_append(out, "transport: network; send ");
    if (via != src)
        g_string_append_printf(out, "over NVLink through %s (PXN), ", ics_topo_dev_label(t, via));
    g_string_append_printf(out, "%s (path %s), receive %s\n",
                           gs ? "GPUDirect RDMA" : "from host memory",
                           ics_path_type_name(ics_topo_path_type(t, via, ns)),
                           gd ? "GPUDirect RDMA" : "into host memory");
}

void ics_report_route(const ics_topo *t, int src, int dst, GString *out)
{
    ics_route r;
    if (!ics_route_find(t, src, dst, 0, &r)) {
        g_string_append_printf(out, "no route from %s to %s\n", ics_topo_dev_label(t, src),
                               ics_topo_dev_label(t, dst));
        return;
    }
    g_string_append_printf(out, "route %s -> %s: %d path%s\n", ics_topo_dev_label(t, src),
                           ics_topo_dev_label(t, dst), r.n_paths, r.n_paths == 1 ? "" : "s");
    route_transport(t, src, dst, out);
    for (int p = 0; p < r.n_paths; p++) {
        const ics_route_path *path = &r.paths[p];
        g_string_append_printf(out, "  %.3f of the bytes: %s", path->weight,
                               ics_topo_dev_label(t, src));
        for (int h = 0; h < path->n_hops; h++) {
            const ics_topo_chan *c = ics_topo_chan_get(t, path->chans[h]);
            g_string_append_printf(out, " -[%s x%d]-> %s",
                                   c->standard ? c->standard->name : ics_chan_kind_name(c->kind),
                                   c->width, ics_topo_dev_label(t, c->dst));
        }
        g_string_append_printf(out, "\n    latency %.1f ns, bottleneck %.1f GB/s\n",
                               ics_route_path_latency(t, path) / 1e3,
                               ics_route_path_bw(t, path) / 1e9);
    }
    ics_route_clear(&r);
}
