/* Fat-tree sizing; the construction is described in fattree.h. Invariant of a plan: no switch
 * uses more ports than the radix, and every pair of leaves has a common ancestor. */
#include "hw/fattree.h"
#include "core/core.h"

#include <math.h>

#include <glib.h>

static int div_ceil(int a, int b)
{
    return (a + b - 1) / b;
}

/* Smallest divisor s of n with groups * (n / s) <= cap, or 0 if none. */
static int fewest_switches(int n, int groups, int cap)
{
    for (int s = 1; s <= n; s++)
        if (n % s == 0 && (long)groups * (n / s) <= cap)
            return s;
    return 0;
}

static bool place_leaves(const ics_fattree_params *p, ics_fattree_plan *plan, GError **error)
{
    if (p->rail_optimized) {
        if ((long long)p->nodes_per_unit * p->max_nics_per_rail > plan->down_ports) {
            g_set_error(error, ICS_ERROR, ICS_ERROR_INPUT,
                        "expected at most %d nodes per unit (a leaf has %d down ports), got %d",
                        plan->down_ports / p->max_nics_per_rail, plan->down_ports,
                        p->nodes_per_unit);
            return false;
        }
        plan->units = div_ceil(p->nodes, p->nodes_per_unit);
        plan->leaves = plan->units * p->rails;
    } else {
        plan->units = 1;
        plan->leaves = div_ceil(p->nodes * p->nics_per_node, plan->down_ports);
    }
    return true;
}

static bool plan_pods(const ics_fattree_params *p, ics_fattree_plan *plan)
{
    int half = p->radix / 2;
    if (p->tiers == 2) {
        plan->pods = 1;
        plan->leaves_per_pod = plan->leaves;
    } else if (p->rail_optimized) {
        plan->leaves_per_pod = MIN(half, plan->units);
        plan->pods = p->rails * div_ceil(plan->units, plan->leaves_per_pod);
    } else {
        plan->leaves_per_pod = MIN(half, plan->leaves);
        plan->pods = div_ceil(plan->leaves, plan->leaves_per_pod);
    }
    int cap = p->tiers == 2 ? p->radix : half;
    plan->spines_per_pod = fewest_switches(plan->up_ports, plan->leaves_per_pod, cap);
    if (plan->spines_per_pod == 0)
        return false;
    plan->links_leaf_spine = plan->up_ports / plan->spines_per_pod;
    plan->spine_down = plan->leaves_per_pod * plan->links_leaf_spine;
    if (p->tiers == 3) {
        plan->cores_per_group = fewest_switches(plan->spine_down, plan->pods, p->radix);
        if (plan->cores_per_group == 0)
            return false;
        plan->links_spine_core = plan->spine_down / plan->cores_per_group;
        plan->cores = plan->spines_per_pod * plan->cores_per_group;
    }
    return true;
}

int ics_fattree_down_ports(int radix, int up_ports, double oversubscription)
{
    if (up_ports == 0)
        return radix;
    /* exactly the ratio asked for where the radix allows it (64 ports at 2:1: 42 + 21, one
     * port unused), never more than the ports left */
    return MIN(radix - up_ports, (int)floor(up_ports * oversubscription + 1e-9));
}

bool ics_fattree_plan_make(const ics_fattree_params *p, ics_fattree_plan *plan, GError **error)
{
    *plan = (ics_fattree_plan){0};
    plan->up_ports = p->tiers == 1 ? 0 : (int)floor(p->radix / (1.0 + p->oversubscription));
    plan->down_ports = ics_fattree_down_ports(p->radix, plan->up_ports, p->oversubscription);
    if (p->tiers > 1 && plan->up_ports < 1) {
        g_set_error(error, ICS_ERROR, ICS_ERROR_INPUT,
                    "expected an oversubscription that leaves a leaf at least one up port (radix "
                    "%d), got %g",
                    p->radix, p->oversubscription);
        return false;
    }
    if (!place_leaves(p, plan, error))
        return false;
    bool ok = p->tiers == 1 ? plan->leaves == 1 : plan_pods(p, plan);
    if (!ok) {
        g_set_error(error, ICS_ERROR, ICS_ERROR_INPUT,
                    "expected a cluster that fits a %d-tier fat-tree of radix %d, got %d nodes x "
                    "%d NICs (%d leaves%s)",
                    p->tiers, p->radix, p->nodes, p->nics_per_node, plan->leaves,
                    p->tiers < 3 ? "; try more tiers" : "");
        return false;
    }
    return true;
}

int ics_fattree_leaf_of(const ics_fattree_params *p, const ics_fattree_plan *plan, int node,
                        int nic_index, int rail)
{
    if (p->rail_optimized)
        return (node / p->nodes_per_unit) * p->rails + rail;
    return (node * p->nics_per_node + nic_index) / plan->down_ports;
}

int ics_fattree_pod_of(const ics_fattree_params *p, const ics_fattree_plan *plan, int leaf)
{
    if (p->tiers < 3)
        return 0;
    if (p->rail_optimized) {
        int unit = leaf / p->rails, rail = leaf % p->rails;
        int per_rail = div_ceil(plan->units, plan->leaves_per_pod);
        return rail * per_rail + unit / plan->leaves_per_pod;
    }
    return leaf / plan->leaves_per_pod;
}
