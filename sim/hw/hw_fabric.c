/* Reading a cluster's fabric and checking that the fat-tree it describes can be built for the
 * node count (the cluster's, or --nodes). */
#include "hw/hw_internal.h"

#include <inttypes.h>
#include <math.h>

#include "hw/dragonfly.h"
#include "hw/fattree.h"

static const char *const topology_names[] = {"fat-tree", "dragonfly", NULL};
static const char *const routing_names[] = {"minimal", "valiant", NULL};

#define ICS_HW__MAX_FABRIC_NICS (1 << 24)

/* What a topology holds per device and per one-way channel (topo.c's records, labels, the
 * adjacency): fitted on clusters of 1,024 to 262,144 nodes (58k to 3.4M devices), within 2% of
 * the peak measured. docs/limits.md. */
#define TOPO_BYTES_PER_DEV  128
#define TOPO_BYTES_PER_CHAN 64

/* The memory budget (core/budget.h) for the topology this cluster makes, counted from the
 * node's parts and the fat-tree plan before any of it is built: per node its GPUs, NVSwitches,
 * CPUs and PCIe devices, their links (NVLink bonds, PCIe and CPU links, one per compute NIC to
 * the fabric); the fabric's switches and their bonds. Two channels per link. */
static bool check_budget(const ics_hw *hw, const ics_fattree_plan *plan, GError **error)
{
    const ics_hw_node *n = &hw->node;
    uint64_t node_devs = (uint64_t)n->gpus + n->n_nvswitches + n->n_cpus;
    for (int i = 0; i < n->n_pcie; i++) /* a GPU's PCIe entry is the GPU, counted */
        node_devs += n->pcie[i].kind != ICS_PCIE_GPU;
    uint64_t node_links =
        (uint64_t)n->n_nvbonds + n->n_pcie + (uint64_t)n->n_cpus * n->n_cpus + n->compute_nics;
    uint64_t spines = (uint64_t)plan->pods * plan->spines_per_pod;
    uint64_t fabric_devs = (uint64_t)plan->leaves + spines + plan->cores;
    uint64_t fabric_links =
        (uint64_t)plan->leaves * plan->spines_per_pod + spines * plan->cores_per_group;
    uint64_t devs = ics_budget_mul_add(node_devs, (uint64_t)hw->nodes, fabric_devs);
    uint64_t chans = 2 * ics_budget_mul_add(node_links, (uint64_t)hw->nodes, fabric_links);
    uint64_t bytes = ics_budget_mul_add(devs, TOPO_BYTES_PER_DEV,
                                        ics_budget_mul_add(chans, TOPO_BYTES_PER_CHAN, 0));
    char *what = g_strdup_printf("a topology of %d nodes: about %" PRIu64
                                 " devices x %d B and %" PRIu64 " channels x %d B",
                                 hw->nodes, devs, TOPO_BYTES_PER_DEV, chans, TOPO_BYTES_PER_CHAN);
    bool ok = ics_budget_check(bytes, what, error);
    g_free(what);
    return ok;
}

/* The same for a dragonfly: per node as above; the switches, and their links: a local link
 * between every two switches of a group, the global links. */
static bool check_dragonfly_budget(const ics_hw *hw, const ics_dragonfly_params *p, GError **error)
{
    ics_fattree_plan as_plan = {.leaves = p->groups * p->group_switches};
    uint64_t local = (uint64_t)p->groups * p->group_switches * (p->group_switches - 1) / 2;
    uint64_t global = (uint64_t)p->groups * (p->groups - 1) / 2 * ics_dragonfly_pair_links(p);
    as_plan.spines_per_pod = (int)MIN((local + global) / MAX(as_plan.leaves, 1) + 1, INT32_MAX);
    return check_budget(hw, &as_plan, error);
}

/* "groups", "switches_per_group", "nodes_per_switch", "global_links_per_switch", "routing". */
static void read_dragonfly(ics_hw__ld *ld, const cJSON *o, ics_hw_fabric *f)
{
    static const char *const keys[] = {"groups", "switches_per_group", "nodes_per_switch",
                                       "global_links_per_switch"};
    int *dst[] = {&f->groups, &f->group_switches, &f->switch_nodes, &f->global_links};
    const int64_t hi[] = {1 << 14, 1 << 10, 1 << 10, 1 << 10};
    for (int i = 0; i < 4; i++) {
        int64_t v;
        if (ics_jr_int(ld->r, o, keys[i], true, i == 0 ? 2 : 1, hi[i], &v))
            *dst[i] = (int)v;
    }
    int routing = 0;
    if (ics_jr_enum(ld->r, o, "routing", false, routing_names, &routing))
        f->valiant = routing == 1;
    if (ics_jr_ok(ld->r) && f->valiant && f->groups < 3)
        ics_jr_fail(ld->r, cJSON_GetObjectItemCaseSensitive(o, "routing"), "routing",
                    "expected \"minimal\" with %d groups (Valiant routing goes through a third "
                    "group), got \"valiant\"",
                    f->groups);
}

/* The keys of the other topology, refused by name: "expected no \"tiers\" on a dragonfly (a
 * fat-tree's), got it". keys is NULL-terminated. */
static void refuse_keys(ics_hw__ld *ld, const cJSON *o, const char *const *keys, const char *on,
                        const char *whose)
{
    for (int i = 0; keys[i] && ics_jr_ok(ld->r); i++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, keys[i]);
        if (v)
            ics_jr_fail(ld->r, v, keys[i], "expected no \"%s\" on a %s (a %s's), got it", keys[i],
                        on, whose);
    }
}

static void read_switch_params(ics_hw__ld *ld, const cJSON *o, ics_hw_fabric *f)
{
    f->switch_type = ics_hw__ref_switch(ld, o, "switch");
    if (!f->switch_type)
        return;
    const ics_hw_switch_type *t = f->switch_type;
    if (t->kind != ICS_SWITCH_INFINIBAND && t->kind != ICS_SWITCH_ETHERNET) {
        ics_jr_fail(ld->r, cJSON_GetObjectItemCaseSensitive(o, "switch"), "switch",
                    "expected an ib_switch or eth_switch type, got \"%s\" (%s)", t->name,
                    ics_switch_kind_name(t->kind));
        return;
    }
    f->standard = t->standard;
    if (cJSON_GetObjectItemCaseSensitive(o, "standard")) {
        const ics_hw_standard *s = ics_hw__ref_standard(ld, o, "standard", true);
        if (s && s->family != t->standard->family)
            ics_jr_fail(ld->r, cJSON_GetObjectItemCaseSensitive(o, "standard"), "standard",
                        "expected a standard of family %s (the switch's), got \"%s\"",
                        ics_link_family_name(t->standard->family), s->name);
        f->standard = s;
    }
    f->radix = t->ports;
    int64_t radix;
    if (ics_jr_int(ld->r, o, "radix", false, 2, t->ports, &radix))
        f->radix = (int)radix;
    f->switch_latency_ps = t->latency_ps;
    double ns;
    if (ics_jr_num(ld->r, o, "switch_latency_ns", false, 0, 1e6, &ns))
        f->switch_latency_ps = ics_time_from_ns(ns);
    if (ics_jr_bool(ld->r, o, "sharp", false, &f->sharp) && f->sharp && !t->sharp)
        ics_jr_fail(ld->r, cJSON_GetObjectItemCaseSensitive(o, "sharp"), "sharp",
                    "expected false (switch type \"%s\" has no in-network reduction), got true",
                    t->name);
}

bool ics_hw__read_fabric(ics_hw__ld *ld, const cJSON *o)
{
    static const char *const keys[] = {"topology",
                                       "tiers",
                                       "switch",
                                       "standard",
                                       "radix",
                                       "oversubscription",
                                       "rail_optimized",
                                       "nodes_per_unit",
                                       "switch_latency_ns",
                                       "sharp",
                                       "groups",
                                       "switches_per_group",
                                       "nodes_per_switch",
                                       "global_links_per_switch",
                                       "routing",
                                       NULL};
    ics_hw *hw = ld->hw;
    ics_hw_fabric *f = &hw->fabric;
    size_t mark = ics_jr_push_key(ld->r, "fabric");
    int topo = 0;
    int64_t v;
    if (ics_jr_keys(ld->r, o, keys) &&
        ics_jr_enum(ld->r, o, "topology", true, topology_names, &topo))
        f->topology = (ics_fabric_topology)topo;
    bool dragonfly = ics_jr_ok(ld->r) && f->topology == ICS_FABRIC_DRAGONFLY;
    static const char *const fat_tree_only[] = {
        "tiers", "oversubscription", "rail_optimized", "nodes_per_unit", "sharp", NULL};
    static const char *const dragonfly_only[] = {"groups",           "switches_per_group",
                                                 "nodes_per_switch", "global_links_per_switch",
                                                 "routing",          NULL};
    if (dragonfly) {
        read_dragonfly(ld, o, f);
        refuse_keys(ld, o, fat_tree_only, "dragonfly", "fat-tree");
        f->tiers = 1;
    } else {
        refuse_keys(ld, o, dragonfly_only, "fat-tree", "dragonfly");
    }
    if (!dragonfly && ics_jr_int(ld->r, o, "tiers", true, 1, 3, &v))
        f->tiers = (int)v;
    read_switch_params(ld, o, f);
    f->oversubscription = 1;
    ics_jr_num(ld->r, o, "oversubscription", false, 1, 64, &f->oversubscription);
    ics_jr_bool(ld->r, o, "rail_optimized", false, &f->rail_optimized);
    if (ics_jr_ok(ld->r)) {
        int up = f->tiers == 1 ? 0 : (int)floor(f->radix / (1.0 + f->oversubscription));
        f->nodes_per_unit = ics_fattree_down_ports(f->radix, up, f->oversubscription);
    }
    if (ics_jr_int(ld->r, o, "nodes_per_unit", false, 1, 1 << 20, &v)) {
        f->nodes_per_unit = (int)v;
        if (!f->rail_optimized)
            ics_jr_fail(ld->r, cJSON_GetObjectItemCaseSensitive(o, "nodes_per_unit"),
                        "nodes_per_unit",
                        "expected no nodes_per_unit unless \"rail_optimized\" is true, got %d",
                        f->nodes_per_unit);
    }
    if (ics_jr_ok(ld->r) && hw->node.compute_nics == 0)
        ics_jr_fail(ld->r, o, NULL,
                    "expected a node with at least one compute NIC to attach, got none");
    /* Bounds the fat-tree arithmetic (int) far above any real cluster. */
    int64_t nics = (int64_t)hw->nodes * hw->node.compute_nics;
    if (ics_jr_ok(ld->r) && nics > ICS_HW__MAX_FABRIC_NICS)
        ics_jr_fail(ld->r, o, NULL,
                    "expected at most %d compute NICs in a cluster, got %" PRId64
                    " (%d nodes x %d NICs)",
                    ICS_HW__MAX_FABRIC_NICS, nics, hw->nodes, hw->node.compute_nics);
    int64_t gpus = (int64_t)hw->nodes * hw->node.gpus;
    if (ics_jr_ok(ld->r) && gpus > ICS_HW_MAX_CLUSTER_GPUS)
        ics_jr_fail(ld->r, o, NULL,
                    "expected a cluster of at most %d GPUs, got %" PRId64 " (%d nodes x %d GPUs)",
                    ICS_HW_MAX_CLUSTER_GPUS, gpus, hw->nodes, hw->node.gpus);
    ics_fattree_params p;
    ics_fattree_plan plan;
    GError *why = NULL;
    if (ics_jr_ok(ld->r) && dragonfly) {
        ics_dragonfly_params dp;
        ics_hw_dragonfly_params(hw, &dp);
        if (!ics_dragonfly_check(&dp, &why) || !check_dragonfly_budget(hw, &dp, &why))
            ics_jr_fail(ld->r, o, NULL, "%s", why->message);
        g_clear_error(&why);
    } else if (ics_jr_ok(ld->r)) {
        ics_hw_fattree_params(hw, &p);
        if (!ics_fattree_plan_make(&p, &plan, &why))
            ics_jr_fail(ld->r, o, NULL, "%s", why->message);
        else if (!check_budget(hw, &plan, &why))
            ics_jr_fail(ld->r, o, NULL, "%s", why->message);
        g_clear_error(&why);
    }
    ics_jr_pop(ld->r, mark);
    return ics_jr_ok(ld->r);
}
