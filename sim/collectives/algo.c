/* The helpers every algorithm's plan uses (algo.h): wire bytes, reduction and hop times, a
 * channel's charges, pieces of a buffer, ranks grouped by node and their heads. */
#include "collectives/algo.h"

#include <math.h>

uint64_t ics_algo_wire(const ics_algo_ctx *c, uint64_t payload)
{
    return (uint64_t)llround((double)payload * c->wire_factor);
}

ics_time ics_algo_reduce_time(const ics_algo_ctx *c, uint64_t bytes)
{
    return c->reduce_bytes_per_s ? ics_time_serialize(3 * bytes, c->reduce_bytes_per_s) : 0;
}

ics_time ics_algo_cta_time(const ics_algo_ctx *c, uint64_t bytes, uint64_t ctas)
{
    uint64_t cta = c->cta_bytes_per_s * ctas;
    return cta > 0 ? ics_time_serialize(bytes, cta) : 0;
}

void ics_algo_charge(const ics_algo_ctx *c, ics_sched *s, int id, uint64_t bytes, uint64_t ctas,
                     ics_time syncs)
{
    ics_sched_set_floor(s, id, ics_algo_cta_time(c, bytes, ctas)); /* 0: no ceiling, no floor */
    ics_sched_set_tail(s, id, ics_time_mul(c->sync_ps, (uint64_t)syncs)); /* saturates */
}

ics_time ics_algo_beyond_sync(const ics_algo_ctx *c, ics_time hop_ps)
{
    return hop_ps > c->sync_ps ? hop_ps - c->sync_ps : 0;
}

uint64_t ics_algo_wire_by(double factor, uint64_t payload)
{
    return (uint64_t)llround((double)payload * factor);
}

bool ics_algo_same_node(const ics_algo_ctx *c, int a, int b)
{
    return ics_topo_dev_get(c->t, c->ranks[a])->node == ics_topo_dev_get(c->t, c->ranks[b])->node;
}

ics_time ics_algo_net_msg(const ics_algo_ctx *c, int a, int b)
{
    return c->net_msg_ps == 0 || ics_algo_same_node(c, a, b) ? 0 : c->net_msg_ps;
}

uint64_t ics_algo_net_gap(const ics_algo_ctx *c, int a, int b, uint64_t wire, uint64_t messages)
{
    if (c->net_msg_bytes == 0 || ics_algo_same_node(c, a, b))
        return wire;
    messages = MAX(1, messages);
    /* saturating: a fuzzed size's messages times the gap's bytes may pass 2^64 */
    if (messages > (UINT64_MAX - wire) / c->net_msg_bytes)
        return UINT64_MAX;
    return wire + c->net_msg_bytes * messages;
}

uint64_t ics_algo_piece(uint64_t total, int parts, int i)
{
    uint64_t each = total / (uint64_t)parts;
    return i + 1 < parts ? each : total - each * (uint64_t)(parts - 1);
}

ics_time ics_algo_hop_time(const ics_algo_ctx *c, int a, int b, uint64_t wire_bytes,
                           ics_time *lat_ps)
{
    ics_route r;
    *lat_ps = 0;
    if (a == b || !ics_route_find(c->t, c->ranks[a], c->ranks[b], 0, &r))
        return 0;
    uint64_t bw = ics_route_bw(c->t, &r);
    *lat_ps = ics_route_path_latency(c->t, &r.paths[0]);
    ics_route_clear(&r);
    return bw ? ics_time_serialize(wire_bytes, bw) : 0;
}

void ics_algo_nodes_init(const ics_topo *t, const int *ranks, int n, ics_algo_nodes *g)
{
    /* a node's index by order of first appearance, then a counting sort of the ranks by it
     * (stable: rank order inside a node); O(n + nodes), where scanning the nodes seen for each
     * rank was O(n x nodes): 1.25 G steps for 100,000 ranks on 12,500 nodes, at every call */
    int nodes = MAX(ics_topo_nodes(t), 1);
    int *index = g_new(int, nodes + 1), *of = g_new(int, n), nnodes = 0;
    for (int k = 0; k <= nodes; k++)
        index[k] = -1;
    for (int r = 0; r < n; r++) {
        int node = ics_topo_dev_get(t, ranks[r])->node;
        int slot = node >= 0 && node < nodes ? node : nodes; /* not in a node: one group */
        if (index[slot] < 0)
            index[slot] = nnodes++;
        of[r] = index[slot];
    }
    g->nnodes = nnodes;
    g->start = g_new0(int, nnodes + 1);
    g->rank = g_new(int, n);
    for (int r = 0; r < n; r++)
        g->start[of[r] + 1]++;
    for (int k = 0; k < nnodes; k++)
        g->start[k + 1] += g->start[k];
    int *at = g_memdup2(g->start, sizeof(int) * ((size_t)nnodes + 1));
    for (int r = 0; r < n; r++)
        g->rank[at[of[r]]++] = r;
    g_free(at);
    g_free(of);
    g_free(index);
}

void ics_algo_nodes_clear(ics_algo_nodes *g)
{
    g_free(g->start);
    g_free(g->rank);
    *g = (ics_algo_nodes){0};
}

uint64_t ics_algo_flow(const ics_algo_ctx *c, int ch, uint64_t x)
{
    return ics_route_flow((uint64_t)ch * 131071 + x, ch / MAX(c->ppn, 1));
}

int ics_algo_node_heads(const ics_topo *t, const int *ranks, const ics_algo_nodes *g, int k,
                        int *heads, int *nics)
{
    int count = 0;
    int *used = g_new(int, ics_algo_nodes_size(g, k));
    for (int i = g->start[k]; i < g->start[k + 1]; i++) {
        int nic = ics_route_nic_of_gpu(t, ranks[g->rank[i]]);
        bool taken = nic < 0;
        for (int j = 0; j < count && !taken; j++)
            taken = used[j] == nic;
        if (taken)
            continue;
        used[count] = nic;
        heads[count] = g->rank[i];
        if (nics)
            nics[count] = nic;
        count++;
    }
    g_free(used);
    return count;
}

uint64_t ics_algo_simple_step(const ics_algo_ctx *c)
{
    uint64_t buff = c->simple_buffsize ? c->simple_buffsize : (uint64_t)4 << 20;
    return MAX(buff / 8, (uint64_t)4096);
}
