/* NCCL_IB_HCA: which of a node's NICs NCCL's IB transport opens (transport/net_ib.cc), by
 * NCCL's own rules (misc/utils.cc parseStringList, matchIfList):
 *   - a leading '^' keeps every NIC the rest does not match, a following '=' matches names
 *     exactly; otherwise an entry matches every name it begins (so "mlx5_1" also matches
 *     mlx5_10 and mlx5_11, NCCL's well-known surprise);
 *   - entries are separated by commas, each "name" or "name:port" (icsim's NICs are single-port:
 *     port 1), at most 32 of them (MAX_IB_DEVS); an empty list matches everything.
 * The NICs left out carry nothing: each GPU leaves its node by the nearest NIC kept (route.c),
 * sharing it with other GPUs where the kept NICs are fewer, as NCCL's graph search then does.
 * A list that keeps no compute NIC would leave NCCL no IB device (it falls back to its socket
 * transport, not modelled), so it is not applied and ics_topo_ib_hca_ignored says so. */
#include "topo/topo_internal.h"

#include <stdlib.h>
#include <string.h>

#define HCA_MAX_ENTRIES 32 /* NCCL's MAX_IB_DEVS */
#define HCA_PREFIX_MAX  64 /* struct netIf's prefix */

typedef struct {
    char prefix[HCA_PREFIX_MAX];
    int port; /* -1: any */
} hca_entry;

/* NCCL's parseStringList: "a,b:2,,c" -> a (any port), b (port 2), c. */
static int parse_list(const char *s, hca_entry *out)
{
    int n = 0;
    while (*s && n < HCA_MAX_ENTRIES) {
        size_t len = strcspn(s, ",:");
        if (len > 0) {
            size_t keep = MIN(len, (size_t)HCA_PREFIX_MAX - 1);
            memcpy(out[n].prefix, s, keep);
            out[n].prefix[keep] = '\0';
            out[n].port = s[len] == ':' ? atoi(s + len + 1) : -1;
            n++;
        }
        s += len;
        s += strcspn(s, ","); /* past a port */
        if (*s == ',')
            s++;
    }
    return n;
}

static bool matches(const char *name, int port, const hca_entry *l, int n, bool exact)
{
    if (n == 0)
        return true;
    for (int i = 0; i < n; i++) {
        bool named = exact ? strcmp(name, l[i].prefix) == 0
                           : strncmp(name, l[i].prefix, strlen(l[i].prefix)) == 0;
        if (named && (l[i].port == -1 || l[i].port == port))
            return true;
    }
    return false;
}

void ics_topo_apply_hca(ics_topo *t)
{
    g_clear_pointer(&t->hca_off, g_free);
    t->hca_ignored = false;
    const char *v = t->paths.ib_hca;
    if (!*v)
        return;
    bool not = *v == '^';
    v += not ;
    bool exact = *v == '=';
    v += exact;
    hca_entry list[HCA_MAX_ENTRIES];
    int n = parse_list(v, list), kept = 0;
    const ics_hw_node *node = ics_hw_node_of(t->hw);
    uint8_t *off = g_new0(uint8_t, MAX(t->nics, 1));
    for (int i = 0; i < t->nics; i++) {
        const ics_hw_pcie *e = &node->pcie[t->nic_pcie[i]];
        off[i] = !(matches(e->name, 1, list, n, exact) ^ not );
        kept += !off[i] && e->role == ICS_NIC_COMPUTE;
    }
    if (kept == 0) {
        g_free(off);
        t->hca_ignored = true;
        return;
    }
    t->hca_off = off;
}

bool ics_topo_ib_hca_ignored(const ics_topo *t)
{
    return t->hca_ignored;
}

bool ics_topo_ib_hca_keeps(const ics_topo *t, int nic_index)
{
    return !t->hca_off || !t->hca_off[nic_index];
}
