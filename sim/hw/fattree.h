/* Sizing a fat-tree: how many leaf, spine and core switches a cluster's NICs need, and which
 * ports join which. The plan is pure arithmetic (no devices), so the hardware reader can
 * reject an impossible fabric with a clear message before any topology is built.
 *
 * Construction (deterministic):
 *   leaf:  radix R, up ports u = floor(R / (1 + o)), down ports d = min(R - u, floor(u x o))
 *          (1 tier: d = R). Rail-optimized: unit k's NICs of rail r share leaf (k, r);
 *          otherwise NICs fill leaf ports in (node, nic) order.
 *   pods:  2 tiers: one pod of all leaves. 3 tiers: rail-optimized, one pod per rail (per
 *          R/2 leaves of a rail), so same-rail traffic never climbs to the core; otherwise
 *          consecutive groups of R/2 leaves.
 *   spine: per pod, the fewest spines S (a divisor of u) such that each spine's down ports
 *          (leaves_in_pod * u/S) fit; each leaf bonds u/S links to each of its pod's spines.
 *   core:  (3 tiers) spine i of every pod joins core group i; each group has the fewest cores
 *          C (a divisor of the spine's uplinks) such that pods * uplinks/C fit in R.
 * Upper tiers are 1:1: a spine has as many up links as it uses down links. */
#ifndef ICS_FATTREE_H
#define ICS_FATTREE_H

#include <stdbool.h>

#include <glib.h>

typedef struct {
    int radix;
    int tiers; /* 1..3 */
    double oversubscription;
    bool rail_optimized;
    int nodes_per_unit; /* rail-optimized only */
    int nodes;
    int nics_per_node; /* compute NICs */
    int rails;         /* 1 + the largest rail of a compute NIC */
    int max_nics_per_rail;
} ics_fattree_params;

typedef struct {
    int down_ports, up_ports; /* per leaf */
    int units;                /* rail-optimized: scalable units */
    int leaves;
    int pods;
    int leaves_per_pod;   /* at most */
    int spines_per_pod;   /* 2 tiers: the spines */
    int links_leaf_spine; /* bonded links between a leaf and each spine of its pod */
    int spine_down;       /* used down links of a spine */
    int cores_per_group;  /* 3 tiers */
    int links_spine_core; /* bonded links between a spine and each core of its group */
    int cores;
} ics_fattree_plan;

/* Leaf down ports for a radix and up-port count: up x oversubscription, at most the rest. */
int ics_fattree_down_ports(int radix, int up_ports, double oversubscription);

/* Fills plan; on failure returns false and sets *error (ICS_ERROR_INPUT) saying what does not
 * fit, e.g. "expected at most 2048 NICs on a 2-tier fat-tree of radix 64, got 4096". */
bool ics_fattree_plan_make(const ics_fattree_params *p, ics_fattree_plan *plan, GError **error);

/* The leaf a compute NIC (node, rail) attaches to. */
int ics_fattree_leaf_of(const ics_fattree_params *p, const ics_fattree_plan *plan, int node,
                        int nic_index, int rail);
/* The pod of a leaf (3 tiers; 0 otherwise). */
int ics_fattree_pod_of(const ics_fattree_params *p, const ics_fattree_plan *plan, int leaf);

#endif
