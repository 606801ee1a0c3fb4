/* Dragonfly arithmetic (dragonfly.h). */
#include "hw/dragonfly.h"

#include "core/core.h"

static int mod(int x, int m)
{
    return ((x % m) + m) % m;
}

bool ics_dragonfly_check(const ics_dragonfly_params *p, GError **error)
{
    int g = p->groups, a = p->group_switches, h = p->global_links;
    int ports = p->switch_nodes * p->nics_per_node + (a - 1) + h;
    const char *why = NULL;
    char *msg = NULL;
    if (g < 2)
        why = "at least 2 groups";
    else if ((int64_t)a * h % (g - 1) != 0 || (int64_t)a * h < g - 1)
        msg = g_strdup_printf("expected switches_per_group x global_links_per_switch a multiple "
                              "of groups - 1 (%d), so that every two groups get as many global "
                              "links, got %d x %d = %d",
                              g - 1, a, h, a * h);
    else if (ports > p->radix)
        msg = g_strdup_printf("expected a switch's ports to fit its radix %d, got %d (%d nodes x "
                              "%d NICs + %d local + %d global)",
                              p->radix, ports, p->switch_nodes, p->nics_per_node, a - 1, h);
    else if ((int64_t)g * a * p->switch_nodes < p->nodes)
        msg = g_strdup_printf("expected at most %lld nodes on %d groups x %d switches x %d nodes, "
                              "got %d",
                              (long long)g * a * p->switch_nodes, g, a, p->switch_nodes, p->nodes);
    if (why)
        g_set_error(error, ICS_ERROR, ICS_ERROR_INPUT, "dragonfly: expected %s, got %d", why, g);
    else if (msg)
        g_set_error(error, ICS_ERROR, ICS_ERROR_INPUT, "dragonfly: %s", msg);
    g_free(msg);
    return !why && !msg;
}

int ics_dragonfly_pair_links(const ics_dragonfly_params *p)
{
    return p->group_switches * p->global_links / (p->groups - 1);
}

void ics_dragonfly_global(const ics_dragonfly_params *p, int G, int H, int r, int *from, int *to)
{
    int g = p->groups, h = p->global_links;
    int port = r * (g - 1) + mod(H - G - 1, g); /* leads to H: p mod (g - 1) = (H - G - 1) mod g */
    int back = r * (g - 1) + mod(G - H - 1, g);
    *from = port / h;
    *to = back / h;
}

int ics_dragonfly_switch_of(const ics_dragonfly_params *p, int node)
{
    return node / p->switch_nodes;
}
