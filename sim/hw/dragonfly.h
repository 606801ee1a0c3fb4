/* Sizing a dragonfly (Kim, Dally, Scott and Abts, ISCA 2008; HPE Slingshot's topology): groups
 * of switches, every two switches of a group joined by a local link, every two groups joined by
 * global links. Pure arithmetic, as fattree.h, so the hardware reader can refuse a dragonfly
 * that cannot be wired before a topology is built.
 *
 * Construction (deterministic; the "consecutive" arrangement of the global links):
 *   switch s of group G has h global ports, numbered p = s h + j within the group (0 .. a h - 1,
 *   a switches a group); port p leads to group T = (G + 1 + p mod (g - 1)) mod g, and there to
 *   port p' = r (g - 1) + ((G - T - 1) mod g) with r = p / (g - 1): every pair of groups gets
 *   a h / (g - 1) global links (a h must be a multiple of g - 1), the r-th of them between
 *   switch p / h of one group and p' / h of the other.
 *   Nodes fill switches in order, nodes_per_switch each; every compute NIC of a node goes to its
 *   node's switch. */
#ifndef ICS_DRAGONFLY_H
#define ICS_DRAGONFLY_H

#include <stdbool.h>

#include <glib.h>

typedef struct ics_dragonfly_params {
    int groups;         /* g */
    int group_switches; /* a */
    int switch_nodes;   /* nodes per switch */
    int global_links;   /* h, per switch */
    int radix;          /* ports a switch has */
    int nics_per_node;  /* compute NICs, each on a port of the node's switch */
    int nodes;          /* of the cluster */
} ics_dragonfly_params;

/* Whether the dragonfly can be wired for p: g >= 2, a h a multiple of g - 1, a switch's ports
 * (nodes x NICs + a - 1 local + h global) within its radix, the nodes within g a switches.
 * False and *error (ICS_ERROR_INPUT) saying what does not fit. */
bool ics_dragonfly_check(const ics_dragonfly_params *p, GError **error);

/* Global links between any two groups: a h / (g - 1). */
int ics_dragonfly_pair_links(const ics_dragonfly_params *p);

/* The r-th global link between groups G and H (G != H, 0 <= r < pair links): the switch (index
 * within its group) it leaves G from, and the one it enters H by. */
void ics_dragonfly_global(const ics_dragonfly_params *p, int G, int H, int r, int *from, int *to);

/* The switch (a global index, group x a + index) node `node` hangs from. */
int ics_dragonfly_switch_of(const ics_dragonfly_params *p, int node);

#endif
