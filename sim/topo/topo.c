/* Building the device/channel graph from a hardware model: per node the GPUs, sockets, PCIe
 * tree, NICs and NVSwitches; then the fat-tree that joins the nodes' compute NICs.
 * Invariant: channels come in pairs (2k, 2k+1) that are each other's reverse. */
#include "topo/topo_internal.h"

#include <stdio.h>
#include <string.h>

static const char *const dev_kind_names[] = {"gpu", "nvswitch", "pcie_switch", "host_bridge",
                                             "cpu", "nic",      "net_switch"};
static const char *const chan_kind_names[] = {"nvlink", "pcie",    "cpu",
                                              "socket", "network", "memory"};

const char *ics_dev_kind_name(ics_dev_kind k)
{
    return (unsigned)k < ICS_DEV_KIND_COUNT ? dev_kind_names[k] : "?";
}

const char *ics_chan_kind_name(ics_chan_kind k)
{
    return (unsigned)k < ICS_CHAN_KIND_COUNT ? chan_kind_names[k] : "?";
}

static int add_dev(ics_topo *t, ics_dev_kind kind, const char *name, int node, int local)
{
    ics_topo_dev d = {.kind = kind,
                      .name = name,
                      .node = node,
                      .local = local,
                      .pcie_parent = -1,
                      .numa = -1,
                      .socket = -1,
                      .rail = -1};
    g_array_append_val(t->devs, d);
    return (int)t->devs->len - 1;
}

static ics_topo_dev *dev(ics_topo *t, int id)
{
    return &g_array_index(t->devs, ics_topo_dev, id);
}

/* One physical link (or bond) as two channels. */
static void add_link(ics_topo *t, int a, int b, ics_chan_kind kind, const ics_hw_standard *std,
                     int width, uint64_t bw_bytes_per_s, ics_time latency_ps)
{
    int c = (int)t->chans->len;
    ics_topo_chan ab = {.src = a,
                        .dst = b,
                        .reverse = c + 1,
                        .kind = kind,
                        .standard = std,
                        .width = width,
                        .bw_bytes_per_s = bw_bytes_per_s,
                        .latency_ps = latency_ps};
    ics_topo_chan ba = ab;
    ba.src = b;
    ba.dst = a;
    ba.reverse = c;
    g_array_append_val(t->chans, ab);
    g_array_append_val(t->chans, ba);
}

static void add_std_link(ics_topo *t, int a, int b, ics_chan_kind kind, const ics_hw_standard *std,
                         int width)
{
    add_link(t, a, b, kind, std, width, ics_hw_standard_bw(std, width), std->latency_ps);
}

/* ---- one node ----------------------------------------------------------------------------- */

/* Device offsets within a node: GPUs, sockets, non-GPU PCIe elements, NVSwitches. */
static void plan_node_layout(ics_topo *t, const ics_hw_node *n)
{
    t->pcie_dev = g_new(int, n->n_pcie + 1);
    t->gpu_pcie = g_new(int, n->gpus);
    t->nic_pcie = g_new(int, n->n_pcie + 1);
    for (int g = 0; g < n->gpus; g++)
        t->gpu_pcie[g] = -1;
    int next = n->gpus + n->n_cpus;
    for (int i = 0; i < n->n_pcie; i++) {
        const ics_hw_pcie *e = &n->pcie[i];
        if (e->kind == ICS_PCIE_GPU) {
            t->pcie_dev[i] = e->gpu;
            t->gpu_pcie[e->gpu] = i;
        } else {
            t->pcie_dev[i] = next++;
        }
        if (e->kind == ICS_PCIE_NIC)
            t->nic_pcie[t->nics++] = i;
    }
    t->devs_per_node = next + n->n_nvswitches;
}

static int socket_of_numa(const ics_hw_node *n, int numa)
{
    for (int s = 0; s < n->n_cpus; s++)
        for (int k = 0; k < n->cpus[s].n_numa; k++)
            if (n->cpus[s].numa[k] == numa)
                return s;
    return -1;
}

static void build_cpus(ics_topo *t, const ics_hw_node *n, int base, int node)
{
    for (int s = 0; s < n->n_cpus; s++) {
        int d = add_dev(t, ICS_DEV_CPU, n->cpus[s].name, node, s);
        dev(t, d)->socket = d;
        dev(t, d)->numa = n->cpus[s].numa[0];
    }
    /* Sockets are fully meshed: two-socket boards have one UPI/xGMI group between them. */
    for (int a = 0; a < n->n_cpus; a++)
        for (int b = a + 1; b < n->n_cpus; b++) {
            const ics_hw_cpu_type *ct = n->cpus[a].type;
            add_link(t, base + n->gpus + a, base + n->gpus + b, ICS_CHAN_SOCKET, NULL, 1,
                     ct->socket_link_bw_bytes_per_s, ct->socket_link_latency_ps);
        }
}

static void build_pcie(ics_topo *t, const ics_hw_node *n, int base, int node)
{
    for (int i = 0; i < n->n_pcie; i++) {
        const ics_hw_pcie *e = &n->pcie[i];
        int d = base + t->pcie_dev[i];
        if (e->kind != ICS_PCIE_GPU) {
            static const ics_dev_kind kinds[] = {[ICS_PCIE_HOST_BRIDGE] = ICS_DEV_HOST_BRIDGE,
                                                 [ICS_PCIE_SWITCH] = ICS_DEV_PCIE_SWITCH,
                                                 [ICS_PCIE_NIC] = ICS_DEV_NIC};
            int got = add_dev(t, kinds[e->kind], e->name, node, i);
            g_assert(got == d);
        }
        ics_topo_dev *dv = dev(t, d);
        dv->numa = e->numa;
        dv->socket = base + n->gpus + socket_of_numa(n, e->numa);
        if (e->kind == ICS_PCIE_SWITCH) {
            dv->latency_ps = e->switch_type->latency_ps;
            dv->switch_type = e->switch_type;
        }
        if (e->kind == ICS_PCIE_NIC) {
            dv->latency_ps = e->nic_type->latency_ps;
            dv->rail = e->rail;
        }
        if (e->kind == ICS_PCIE_HOST_BRIDGE) {
            const ics_hw_cpu_type *ct = n->cpus[socket_of_numa(n, e->numa)].type;
            dv->pcie_parent = dv->socket;
            add_link(t, d, dv->socket, ICS_CHAN_CPU, NULL, 1, ct->p2p_bw_bytes_per_s, 0);
        } else {
            dv->pcie_parent = base + t->pcie_dev[e->parent];
            add_std_link(t, d, dv->pcie_parent, ICS_CHAN_PCIE, e->standard, e->lanes);
        }
    }
}

/* Each host bridge's way into its socket's DRAM, beside the root complex's P2P channel: a DMA
 * to host memory is not peer-to-peer forwarding, so it runs at what the bridge's PCIe links
 * bring, bounded by the socket's DRAM bandwidth where the CPU type gives one. Added last in
 * the node so that ics_topo_chan_between(bridge, socket) stays the P2P channel. Latency 0:
 * NCCL's per-step costs already stand for the protocol's host-memory round trips. */
static void build_memory(ics_topo *t, const ics_hw_node *n, int base)
{
    for (int i = 0; i < n->n_pcie; i++) {
        if (n->pcie[i].kind != ICS_PCIE_HOST_BRIDGE)
            continue;
        int hb = base + t->pcie_dev[i];
        uint64_t bw = 0;
        for (int j = 0; j < n->n_pcie; j++)
            if (n->pcie[j].parent == i)
                bw += ics_hw_standard_bw(n->pcie[j].standard, n->pcie[j].lanes);
        const ics_hw_cpu_type *ct = n->cpus[socket_of_numa(n, n->pcie[i].numa)].type;
        if (ct->memory_bw_bytes_per_s)
            bw = MIN(bw, ct->memory_bw_bytes_per_s);
        if (bw > 0)
            add_link(t, hb, dev(t, hb)->socket, ICS_CHAN_MEMORY, NULL, 1, bw, 0);
    }
}

static void build_nvlink(ics_topo *t, const ics_hw_node *n, int base, int node)
{
    int sw0 = base + t->devs_per_node - n->n_nvswitches;
    for (int j = 0; j < n->n_nvswitches; j++) {
        int d = add_dev(t, ICS_DEV_NVSWITCH, n->nvswitches[j].name, node, j);
        g_assert(d == sw0 + j);
        dev(t, d)->latency_ps = n->nvswitches[j].type->latency_ps;
        dev(t, d)->switch_type = n->nvswitches[j].type;
    }
    for (int k = 0; k < n->n_nvbonds; k++) {
        const ics_hw_nvbond *b = &n->nvbonds[k];
        int da = b->a < n->gpus ? base + b->a : sw0 + (b->a - n->gpus);
        int db = b->b < n->gpus ? base + b->b : sw0 + (b->b - n->gpus);
        add_std_link(t, da, db, ICS_CHAN_NVLINK, b->standard, b->count);
    }
}

static void build_node(ics_topo *t, const ics_hw_node *n, int node)
{
    int base = node * t->devs_per_node;
    for (int g = 0; g < n->gpus; g++) {
        char name[24];
        snprintf(name, sizeof name, "gpu%d", g);
        add_dev(t, ICS_DEV_GPU, g_intern_string(name), node, g);
    }
    build_cpus(t, n, base, node);
    build_pcie(t, n, base, node);
    build_nvlink(t, n, base, node);
    build_memory(t, n, base);
}

/* Connected components of the NVSwitch graph (DGX-2 joins two boards' switches). */
static void switch_components(ics_topo *t, const ics_hw_node *n)
{
    int ns = n->n_nvswitches;
    t->sw_comp = g_new(int, ns + 1);
    for (int j = 0; j < ns; j++)
        t->sw_comp[j] = j;
    for (bool changed = true; changed;) {
        changed = false;
        for (int k = 0; k < n->n_nvbonds; k++) {
            int a = n->nvbonds[k].a - n->gpus, b = n->nvbonds[k].b - n->gpus;
            if (a < 0 || b < 0 || t->sw_comp[a] == t->sw_comp[b])
                continue;
            int lo = MIN(t->sw_comp[a], t->sw_comp[b]);
            t->sw_comp[a] = t->sw_comp[b] = lo;
            changed = true;
        }
    }
}

/* ---- the fabric --------------------------------------------------------------------------- */

static int add_net_switch(ics_topo *t, const char *name, int tier, int pod, int local)
{
    int d = add_dev(t, ICS_DEV_NET_SWITCH, g_intern_string(name), -1, local);
    dev(t, d)->tier = tier;
    dev(t, d)->pod = pod;
    dev(t, d)->latency_ps = ics_hw_fabric_of(t->hw)->switch_latency_ps;
    dev(t, d)->switch_type = ics_hw_fabric_of(t->hw)->switch_type;
    return d;
}

static void build_fabric_switches(ics_topo *t, int *leaf0, int *spine0, int *core0)
{
    const ics_fattree_plan *p = &t->plan;
    char name[48];
    *leaf0 = (int)t->devs->len;
    for (int l = 0; l < p->leaves; l++) {
        snprintf(name, sizeof name, "leaf%d", l);
        int d = add_net_switch(t, name, 1, ics_fattree_pod_of(&t->fp, p, l), l);
        if (t->fp.rail_optimized)
            dev(t, d)->rail = l % t->fp.rails;
    }
    *spine0 = (int)t->devs->len;
    if (t->fp.tiers >= 2)
        for (int s = 0; s < p->pods * p->spines_per_pod; s++) {
            snprintf(name, sizeof name, "spine%d", s);
            add_net_switch(t, name, 2, s / p->spines_per_pod, s);
        }
    *core0 = (int)t->devs->len;
    for (int c = 0; c < p->cores; c++) {
        snprintf(name, sizeof name, "core%d", c);
        add_net_switch(t, name, 3, c / p->cores_per_group, c);
    }
}

/* A dragonfly (hw/dragonfly.h): switch s of group G is "gG-swS", tier 1, pod G; each node's
 * compute NICs on its switch; a local link between every two switches of a group; the global
 * links, those between the same two switches bonded into one. */
static void build_dragonfly(ics_topo *t)
{
    const ics_hw_fabric *f = ics_hw_fabric_of(t->hw);
    const ics_hw_node *n = ics_hw_node_of(t->hw);
    const ics_dragonfly_params *p = &t->df;
    int a = p->group_switches, sw0 = (int)t->devs->len;
    for (int G = 0; G < p->groups; G++)
        for (int s = 0; s < a; s++) {
            char name[48];
            snprintf(name, sizeof name, "g%d-sw%d", G, s);
            add_net_switch(t, name, 1, G, G * a + s);
        }
    t->tier0[1] = sw0;
    t->tier0[2] = t->tier0[3] = (int)t->devs->len;
    uint64_t fab_bw = ics_hw_standard_bw(f->standard, 1);
    for (int node = 0; node < t->nodes; node++)
        for (int i = 0; i < t->nics; i++) {
            const ics_hw_pcie *e = &n->pcie[t->nic_pcie[i]];
            if (e->role != ICS_NIC_COMPUTE)
                continue;
            uint64_t bw = MIN(fab_bw, ics_hw_standard_bw(e->nic_type->standard, 1));
            add_link(t, ics_topo_nic(t, node, i), sw0 + ics_dragonfly_switch_of(p, node),
                     ICS_CHAN_NETWORK, f->standard, 1, bw, f->standard->latency_ps);
        }
    for (int G = 0; G < p->groups; G++)
        for (int s = 0; s < a; s++)
            for (int s2 = s + 1; s2 < a; s2++)
                add_std_link(t, sw0 + G * a + s, sw0 + G * a + s2, ICS_CHAN_NETWORK, f->standard,
                             1);
    int links = ics_dragonfly_pair_links(p);
    int *width = g_new0(int, (size_t)a *a);
    for (int G = 0; G < p->groups; G++)
        for (int H = G + 1; H < p->groups; H++) {
            memset(width, 0, sizeof(int) * (size_t)a * a);
            for (int r = 0; r < links; r++) {
                int from, to;
                ics_dragonfly_global(p, G, H, r, &from, &to);
                width[from * a + to]++;
            }
            for (int x = 0; x < a * a; x++)
                if (width[x])
                    add_std_link(t, sw0 + G * a + x / a, sw0 + H * a + x % a, ICS_CHAN_NETWORK,
                                 f->standard, width[x]);
        }
    g_free(width);
}

static void build_fabric(ics_topo *t)
{
    const ics_hw_fabric *f = ics_hw_fabric_of(t->hw);
    const ics_hw_node *n = ics_hw_node_of(t->hw);
    const ics_fattree_plan *p = &t->plan;
    int leaf0, spine0, core0;
    build_fabric_switches(t, &leaf0, &spine0, &core0);
    t->tier0[1] = leaf0;
    t->tier0[2] = spine0;
    t->tier0[3] = core0;
    uint64_t fab_bw = ics_hw_standard_bw(f->standard, 1);
    for (int node = 0; node < t->nodes; node++) {
        int k = 0;
        for (int i = 0; i < t->nics; i++) {
            const ics_hw_pcie *e = &n->pcie[t->nic_pcie[i]];
            if (e->role != ICS_NIC_COMPUTE)
                continue;
            int leaf = leaf0 + ics_fattree_leaf_of(&t->fp, p, node, k++, e->rail);
            /* A NIC and a switch port train to the slower of their two standards. */
            uint64_t bw = MIN(fab_bw, ics_hw_standard_bw(e->nic_type->standard, 1));
            add_link(t, ics_topo_nic(t, node, i), leaf, ICS_CHAN_NETWORK, f->standard, 1, bw,
                     f->standard->latency_ps);
        }
    }
    for (int l = 0; t->fp.tiers >= 2 && l < p->leaves; l++) {
        int pod = dev(t, leaf0 + l)->pod;
        for (int s = 0; s < p->spines_per_pod; s++)
            add_std_link(t, leaf0 + l, spine0 + pod * p->spines_per_pod + s, ICS_CHAN_NETWORK,
                         f->standard, p->links_leaf_spine);
    }
    for (int s = 0; t->fp.tiers == 3 && s < p->pods * p->spines_per_pod; s++) {
        int group = s % p->spines_per_pod;
        for (int c = 0; c < p->cores_per_group; c++)
            add_std_link(t, spine0 + s, core0 + group * p->cores_per_group + c, ICS_CHAN_NETWORK,
                         f->standard, p->links_spine_core);
    }
}

/* ---- indexes ------------------------------------------------------------------------------ */

void ics_topo_build_csr(ics_topo *t)
{
    int nd = (int)t->devs->len, nc = (int)t->chans->len;
    g_clear_pointer(&t->gpu_nic_index, g_free); /* the channels changed: search again */
    g_clear_pointer(&t->path_index, g_free);
    g_free(t->out_start);
    g_free(t->out_list);
    g_free(t->out_dst);
    t->out_start = g_new0(int, nd + 1);
    t->out_list = g_new(int, nc + 1);
    t->out_dst = g_new(int, nc + 1);
    for (int c = 0; c < nc; c++)
        t->out_start[g_array_index(t->chans, ics_topo_chan, c).src + 1]++;
    for (int d = 0; d < nd; d++)
        t->out_start[d + 1] += t->out_start[d];
    int *fill = g_memdup2(t->out_start, sizeof(int) * (nd + 1));
    for (int c = 0; c < nc; c++) {
        const ics_topo_chan *ch = &g_array_index(t->chans, ics_topo_chan, c);
        int at = fill[ch->src]++;
        t->out_list[at] = c;
        t->out_dst[at] = ch->dst;
    }
    g_free(fill);
}

/* "node:name", written by hand: a 100,000-GPU cluster has hundreds of thousands of devices,
 * and g_strdup_printf took ~2,000 instructions a label (an eighth of a 4,096-GPU call). */
static char *node_label(int node, const char *name)
{
    char digits[16];
    int n = 0;
    do
        digits[n++] = (char)('0' + node % 10);
    while ((node /= 10) > 0);
    size_t len = strlen(name);
    char *out = g_malloc((size_t)n + 1 + len + 1), *w = out;
    while (n > 0)
        *w++ = digits[--n];
    *w++ = ':';
    memcpy(w, name, len + 1);
    return out;
}

static void build_labels(ics_topo *t)
{
    int nd = (int)t->devs->len;
    t->labels = g_new0(char *, nd + 1);
    t->by_label = g_hash_table_new(g_str_hash, g_str_equal);
    for (int d = 0; d < nd; d++) {
        const ics_topo_dev *dv = dev(t, d);
        t->labels[d] = dv->node >= 0 ? node_label(dv->node, dv->name) : g_strdup(dv->name);
        g_hash_table_insert(t->by_label, t->labels[d], GINT_TO_POINTER(d + 1));
    }
}

ics_topo *ics_topo_new(const ics_hw *hw)
{
    const ics_hw_node *n = ics_hw_node_of(hw);
    ics_topo *t = g_new0(ics_topo, 1);
    t->hw = hw;
    t->paths = (ics_topo_paths){-1, -1, -1, 0, 0, ""};
    t->nodes = ics_hw_nodes(hw);
    t->gpus = n->gpus;
    t->devs = g_array_new(FALSE, TRUE, sizeof(ics_topo_dev));
    t->chans = g_array_new(FALSE, TRUE, sizeof(ics_topo_chan));
    plan_node_layout(t, n);
    switch_components(t, n);
    for (int node = 0; node < t->nodes; node++)
        build_node(t, n, node);
    if (ics_hw_fabric_of(hw) && ics_hw_fabric_of(hw)->topology == ICS_FABRIC_DRAGONFLY) {
        t->has_fabric = t->dragonfly = true;
        ics_hw_dragonfly_params(hw, &t->df);
        t->fp = (ics_fattree_params){.tiers = 1, .radix = t->df.radix, .nodes = t->nodes};
        t->plan = (ics_fattree_plan){.leaves = t->df.groups * t->df.group_switches,
                                     .pods = t->df.groups,
                                     .leaves_per_pod = t->df.group_switches};
        build_dragonfly(t);
    } else if (ics_hw_fabric_of(hw)) {
        t->has_fabric = true;
        ics_hw_fattree_params(hw, &t->fp);
        bool ok = ics_fattree_plan_make(&t->fp, &t->plan, NULL);
        g_assert(ok); /* ics_hw_load checked the same plan */
        build_fabric(t);
    }
    ics_topo_build_csr(t);
    build_labels(t);
    ics_topo_index_nics(t);
    ics_topo_index_paths(t);
    return t;
}

void ics_topo_free(ics_topo *t)
{
    if (!t)
        return;
    for (guint d = 0; d < t->devs->len; d++)
        g_free(t->labels[d]);
    g_free(t->labels);
    g_hash_table_destroy(t->by_label);
    g_array_free(t->devs, TRUE);
    g_array_free(t->chans, TRUE);
    g_free(t->out_start);
    g_free(t->out_list);
    g_free(t->out_dst);
    g_free(t->pcie_dev);
    g_free(t->gpu_pcie);
    g_free(t->nic_pcie);
    g_free(t->sw_comp);
    g_free(t->gpu_nic_index);
    g_free(t->hca_off);
    g_free(t->path_index);
    if (t->failures)
        g_ptr_array_free(t->failures, TRUE);
    g_free(t);
}

/* ---- accessors ---------------------------------------------------------------------------- */

const ics_hw *ics_topo_hw(const ics_topo *t)
{
    return t->hw;
}

int ics_topo_ndevs(const ics_topo *t)
{
    return (int)t->devs->len;
}

int ics_topo_nchans(const ics_topo *t)
{
    return (int)t->chans->len;
}

const ics_topo_dev *ics_topo_dev_get(const ics_topo *t, int d)
{
    g_assert(d >= 0 && (guint)d < t->devs->len);
    return &g_array_index(t->devs, ics_topo_dev, d);
}

const ics_topo_chan *ics_topo_chan_get(const ics_topo *t, int c)
{
    g_assert(c >= 0 && (guint)c < t->chans->len);
    return &g_array_index(t->chans, ics_topo_chan, c);
}

int ics_topo_nodes(const ics_topo *t)
{
    return t->nodes;
}

int ics_topo_gpus_per_node(const ics_topo *t)
{
    return t->gpus;
}

int ics_topo_gpu(const ics_topo *t, int node, int gpu)
{
    return node * t->devs_per_node + gpu;
}

void ics_topo_gpus_by_node(const ics_topo *t, int gpn, int n, int *out)
{
    g_assert(gpn >= 1 && gpn <= ics_topo_gpus_per_node(t));
    for (int r = 0; r < n; r++)
        out[r] = ics_topo_gpu(t, r / gpn, r % gpn);
}

int ics_topo_nics_per_node(const ics_topo *t)
{
    return t->nics;
}

int ics_topo_nic(const ics_topo *t, int node, int i)
{
    return node * t->devs_per_node + t->pcie_dev[t->nic_pcie[i]];
}

const int *ics_topo_out(const ics_topo *t, int d, int *n)
{
    *n = t->out_start[d + 1] - t->out_start[d];
    return t->out_list + t->out_start[d];
}

/* A walk of a's channels. Routes ask this for every hop of every transfer, and a fabric switch
 * has dozens of ports: their far ends are scanned where they lie side by side (out_dst, 4 bytes
 * a channel), not read channel by channel, a cache miss each. With the packet engine's
 * allocations (net_packet.c), the 2,160-GPU Polaris all-to-all 10.5-11.5 -> 8.1-9.3 s, this
 * alone A/B 0.95 there. Tried before (2026-11): a binary search over each device's channels
 * sorted by destination; its share of a 16,384-GPU sweep fell from 12% to 5%, but the time went
 * to the cache misses of the route code around it: neither that sweep (4 pairs: A/B 0.96; 8
 * pairs with a GPU's NVSwitch bonds in one array as well: 1.03) nor the 100,000-GPU all-reduce
 * (17.0-18.0 s both) got faster beyond noise, and the index took 25 MB more there. */
int ics_topo_chan_between(const ics_topo *t, int a, int b)
{
    for (int i = t->out_start[a]; i < t->out_start[a + 1]; i++)
        if (t->out_dst[i] == b)
            return t->out_list[i];
    return -1;
}

const ics_fattree_plan *ics_topo_fattree(const ics_topo *t)
{
    return t->has_fabric ? &t->plan : NULL;
}

int ics_topo_net_switch(const ics_topo *t, int tier, int index)
{
    if (!t->has_fabric || tier < 1 || tier > 3 || index < 0)
        return -1;
    int count[4] = {0, t->plan.leaves, t->plan.pods * t->plan.spines_per_pod, t->plan.cores};
    if (tier == 2 && t->fp.tiers < 2)
        return -1;
    return index < count[tier] ? t->tier0[tier] + index : -1;
}

const char *ics_topo_dev_label(const ics_topo *t, int d)
{
    return t->labels[d];
}

int ics_topo_find(const ics_topo *t, const char *label)
{
    int d = GPOINTER_TO_INT(g_hash_table_lookup(t->by_label, label)) - 1;
    if (d < 0 && !strchr(label, ':')) {
        char *l0 = g_strdup_printf("0:%s", label);
        d = GPOINTER_TO_INT(g_hash_table_lookup(t->by_label, l0)) - 1;
        g_free(l0);
    }
    return d;
}

/* ---- nvidia-smi path classes -------------------------------------------------------------- */

/* NVLinks between two GPU devices of one node as the live channels have them: a direct bond,
 * else the smaller of the two GPUs' links into switches of one
 * switch component they both reach. */
static int live_nvlinks_between(const ics_topo *t, int da, int db)
{
    int c = ics_topo_chan_between(t, da, db);
    if (c >= 0 && ics_topo_chan_get(t, c)->kind == ICS_CHAN_NVLINK)
        return ics_topo_chan_get(t, c)->width;
    int to_sw[2] = {0, 0};
    guint64 comps[2] = {0, 0};
    for (int side = 0; side < 2; side++) {
        int deg;
        const int *out = ics_topo_out(t, side ? db : da, &deg);
        for (int i = 0; i < deg; i++) {
            const ics_topo_chan *ch = ics_topo_chan_get(t, out[i]);
            const ics_topo_dev *d = ics_topo_dev_get(t, ch->dst);
            if (ch->kind != ICS_CHAN_NVLINK || d->kind != ICS_DEV_NVSWITCH)
                continue;
            to_sw[side] += ch->width;
            comps[side] |= G_GUINT64_CONSTANT(1) << (t->sw_comp[d->local] % 64);
        }
    }
    return (comps[0] & comps[1]) ? MIN(to_sw[0], to_sw[1]) : 0;
}

/* NVLinks between two GPUs of one node: a direct bond, or each GPU's links into a common
 * NVSwitch fabric (nvidia-smi reports the GPU's bonded set: NV12 on DGX A100). 0 if none. */
static int nvlinks_between(const ics_topo *t, int ga, int gb)
{
    const ics_hw_node *n = ics_hw_node_of(t->hw);
    int to_sw[2] = {0, 0};
    guint64 comps[2] = {0, 0}; /* bit per switch component (first 64) */
    for (int k = 0; k < n->n_nvbonds; k++) {
        const ics_hw_nvbond *b = &n->nvbonds[k];
        if ((b->a == ga && b->b == gb) || (b->a == gb && b->b == ga))
            return b->count;
        for (int side = 0; side < 2; side++) {
            int g = side ? gb : ga;
            int other = b->a == g ? b->b : (b->b == g ? b->a : -1);
            if (other >= n->gpus) {
                to_sw[side] += b->count;
                comps[side] |= G_GUINT64_CONSTANT(1) << (t->sw_comp[other - n->gpus] % 64);
            }
        }
    }
    return (comps[0] & comps[1]) ? MIN(to_sw[0], to_sw[1]) : 0;
}

static int pcie_elem(const ics_topo *t, const ics_topo_dev *d)
{
    if (d->kind == ICS_DEV_GPU)
        return t->gpu_pcie[d->local];
    if (d->kind == ICS_DEV_NIC || d->kind == ICS_DEV_PCIE_SWITCH || d->kind == ICS_DEV_HOST_BRIDGE)
        return d->local;
    return -1;
}

static const char *pcie_class(const ics_topo *t, int ea, int eb, int numa_a, int numa_b)
{
    const ics_hw_node *n = ics_hw_node_of(t->hw);
    int switches_a = 0;
    for (int x = ea; x >= 0; x = n->pcie[x].parent) {
        int switches_b = 0;
        for (int y = eb; y >= 0; y = n->pcie[y].parent) {
            if (x == y) {
                if (n->pcie[x].kind == ICS_PCIE_HOST_BRIDGE)
                    return "PHB";
                /* switches on the path: a's side, b's side, and the common one */
                return switches_a + switches_b + 1 == 1 ? "PIX" : "PXB";
            }
            if (y != eb && n->pcie[y].kind == ICS_PCIE_SWITCH)
                switches_b++;
        }
        if (x != ea && n->pcie[x].kind == ICS_PCIE_SWITCH)
            switches_a++;
    }
    return numa_a == numa_b ? "NODE" : "SYS";
}

int ics_topo_path_class_rank(const char *cls)
{
    static const char *const order[] = {"PIX", "PXB", "PHB", "NODE", "SYS"};
    for (int i = 0; i < 5; i++)
        if (strcmp(cls, order[i]) == 0)
            return i;
    return 5;
}

const char *ics_topo_path_class(const ics_topo *t, int a, int b, char buf[16])
{
    const ics_topo_dev *da = ics_topo_dev_get(t, a), *db = ics_topo_dev_get(t, b);
    if (a == b)
        return strcpy(buf, "X");
    if (da->node != db->node || da->node < 0)
        return strcpy(buf, "NET");
    if (da->kind == ICS_DEV_GPU && db->kind == ICS_DEV_GPU) {
        /* after failures (topo_fail.c), what is left of the bonds, not what the model wired */
        int nv =
            t->failures ? live_nvlinks_between(t, a, b) : nvlinks_between(t, da->local, db->local);
        if (nv > 0) {
            snprintf(buf, 16, "NV%d", nv);
            return buf;
        }
    }
    int ea = pcie_elem(t, da), eb = pcie_elem(t, db);
    if (ea < 0 || eb < 0)
        return strcpy(buf, "SYS");
    return strcpy(buf, pcie_class(t, ea, eb, da->numa, db->numa));
}
