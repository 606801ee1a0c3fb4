/* Ring orders (ring_order.h). NVLink-only rings are searched by backtracking: small (a node has
 * at most 16 GPUs here, each with a handful of direct NVLink neighbours), exhaustive, and in a
 * fixed order, so that every run finds the same rings. */
#include "collectives/ring_order.h"

#include <limits.h>
#include <string.h>

#include <glib.h>

#define MAX_GPUS   16
#define MAX_CYCLES 256

typedef struct {
    int n;
    int width[MAX_GPUS][MAX_GPUS]; /* bonded NVLinks from a to b, 0 if none */
    int cycles[MAX_CYCLES][MAX_GPUS];
    int ncycles;
} search;

static void grow(search *s, int *path, int len, bool *used)
{
    if (s->ncycles >= MAX_CYCLES)
        return;
    if (len == s->n) {
        if (s->width[path[len - 1]][path[0]] > 0)
            memcpy(s->cycles[s->ncycles++], path, sizeof(int) * (size_t)s->n);
        return;
    }
    for (int v = 0; v < s->n; v++)
        if (!used[v] && s->width[path[len - 1]][v] > 0) {
            used[v] = true;
            path[len] = v;
            grow(s, path, len + 1, used);
            used[v] = false;
        }
}

/* Direct NVLink bonds between the ranks, if they all sit in one node; false otherwise. */
static bool nvlink_mesh(const ics_topo *t, const int *ranks, int n, search *s)
{
    if (n < 3 || n > MAX_GPUS)
        return false;
    int node = ics_topo_dev_get(t, ranks[0])->node;
    s->n = n;
    for (int a = 0; a < n; a++) {
        if (ics_topo_dev_get(t, ranks[a])->node != node)
            return false;
        int deg = 0;
        for (int b = 0; b < n; b++) {
            int c = a == b ? -1 : ics_topo_chan_between(t, ranks[a], ranks[b]);
            const ics_topo_chan *ch = c >= 0 ? ics_topo_chan_get(t, c) : NULL;
            s->width[a][b] = ch && ch->kind == ICS_CHAN_NVLINK ? MAX(ch->width, 1) : 0;
            deg += s->width[a][b] > 0;
        }
        if (deg < 2)
            return false;
    }
    return true;
}

/* The cycle for channel ch: channels 0..ch each take the cycle whose busiest link (channels per
 * bonded link, this one included) is least loaded, then whose links are least loaded in all;
 * ties go to the earlier cycle. */
static const int *pick(const search *s, int ch)
{
    int load[MAX_GPUS][MAX_GPUS] = {{0}};
    int best = 0;
    for (int k = 0; k <= ch; k++) {
        double best_cost = 1e300, best_sum = 1e300;
        for (int c = 0; c < s->ncycles; c++) {
            double cost = 0, sum = 0; /* the busiest link, then the load of all its links */
            for (int i = 0; i < s->n; i++) {
                int a = s->cycles[c][i], b = s->cycles[c][(i + 1) % s->n];
                double r = (double)(load[a][b] + 1) / s->width[a][b];
                cost = MAX(cost, r);
                sum += r;
            }
            if (cost < best_cost || (cost == best_cost && sum < best_sum)) {
                best_cost = cost;
                best_sum = sum;
                best = c;
            }
        }
        for (int i = 0; i < s->n; i++)
            load[s->cycles[best][i]][s->cycles[best][(i + 1) % s->n]]++;
    }
    return s->cycles[best];
}

/* Across nodes NCCL's ring graph leaves a node by the NIC it entered by (crossNic 0, tried
 * first) and its search takes the nearest paths first: where another GPU of the node reaches
 * the start GPU's NIC through PCIe switches alone (two GPUs and their NICs under one switch, a
 * DGX A100), the ring ends there and sends without an NVLink relay (route.c,
 * ics_route_send_nic). Moves the first such GPU after the start (positions at..at+m-1 of order)
 * to the end. */
static void end_at_sibling(const ics_topo *t, const int *ranks, int *order, int at, int m)
{
    int nic = ics_route_nic_of_gpu(t, ranks[order[at]]);
    if (nic < 0)
        return;
    for (int k = 1; k < m - 1; k++) {
        int g = ranks[order[at + k]];
        if (ics_topo_pcie_sends(t, g, nic)) {
            int sib = order[at + k];
            memmove(&order[at + k], &order[at + k + 1], sizeof(int) * (size_t)(m - 1 - k));
            order[at + m - 1] = sib;
            return;
        }
    }
}

static void by_node(const ics_topo *t, const int *ranks, int n, int ch, int *order)
{
    int i = 0;
    while (i < n) {
        int node = ics_topo_dev_get(t, ranks[i])->node, m = 0;
        while (i + m < n && ics_topo_dev_get(t, ranks[i + m])->node == node)
            m++;
        for (int k = 0; k < m; k++)
            order[i + k] = i + (ch + k) % m;
        if (m < n && m > 2)
            end_at_sibling(t, ranks, order, i, m);
        i += m;
    }
}

void ics_ring_order(const ics_topo *t, const int *ranks, int n, int ch, int *order)
{
    search *s = g_new0(search, 1);
    if (nvlink_mesh(t, ranks, n, s)) {
        int path[MAX_GPUS] = {0};
        bool used[MAX_GPUS] = {true};
        grow(s, path, 1, used);
    }
    if (s->ncycles > 0)
        memcpy(order, pick(s, ch), sizeof(int) * (size_t)n);
    else
        by_node(t, ranks, n, ch, order);
    g_free(s);
}

bool ics_ring_orders_differ(const ics_topo *t, const int *ranks, int n)
{
    search *s = g_new0(search, 1);
    if (nvlink_mesh(t, ranks, n, s)) {
        int path[MAX_GPUS] = {0};
        bool used[MAX_GPUS] = {true};
        grow(s, path, 1, used);
    }
    bool differ = s->ncycles > 0;
    g_free(s);
    return differ;
}

/* ---- ring counts after failures ------------------------------------------------------------ */

/* Direct NVLink bonds between the ranks as the model wired them (before any failure). */
static void intact_widths(const ics_topo *t, const int *ranks, int n, search *s)
{
    const ics_hw_node *hn = ics_hw_node_of(ics_topo_hw(t));
    s->n = n;
    for (int a = 0; a < n; a++)
        for (int b = 0; b < n; b++) {
            int ga = ics_topo_dev_get(t, ranks[a])->local,
                gb = ics_topo_dev_get(t, ranks[b])->local;
            s->width[a][b] = 0;
            for (int k = 0; k < hn->n_nvbonds && a != b; k++) {
                const ics_hw_nvbond *bd = &hn->nvbonds[k];
                if ((bd->a == ga && bd->b == gb) || (bd->a == gb && bd->b == ga))
                    s->width[a][b] = bd->count;
            }
        }
}

#define PACK_BUDGET 200000 /* DFS steps: far above what 8 GPUs need (DGX-1V: 60 cycles) */

typedef struct {
    const search *s;
    int cap[MAX_GPUS][MAX_GPUS];
    int best, steps;
} packing;

/* The most cycles (from index `from` on, repeats allowed) the remaining capacity takes, k so
 * far; prunes on the smallest remaining out-capacity of a GPU (each ring leaves every GPU once). */
static void pack(packing *p, int from, int k)
{
    const search *s = p->s;
    p->best = MAX(p->best, k);
    if (++p->steps > PACK_BUDGET)
        return;
    int bound = INT_MAX;
    for (int a = 0; a < s->n; a++) {
        int out = 0;
        for (int b = 0; b < s->n; b++)
            out += p->cap[a][b];
        bound = MIN(bound, out);
    }
    if (k + bound <= p->best)
        return;
    for (int c = from; c < s->ncycles; c++) {
        const int *cy = s->cycles[c];
        bool fits = true;
        for (int i = 0; i < s->n && fits; i++)
            fits = p->cap[cy[i]][cy[(i + 1) % s->n]] > 0;
        if (!fits)
            continue;
        for (int i = 0; i < s->n; i++)
            p->cap[cy[i]][cy[(i + 1) % s->n]]--;
        pack(p, c, k + 1);
        for (int i = 0; i < s->n; i++)
            p->cap[cy[i]][cy[(i + 1) % s->n]]++;
    }
}

/* Rings a set of widths carries at once (the cycles enumerated from s's widths). */
static int max_rings(search *s)
{
    int path[MAX_GPUS] = {0};
    bool used[MAX_GPUS] = {true};
    s->ncycles = 0;
    grow(s, path, 1, used);
    packing *p = g_new0(packing, 1);
    p->s = s;
    memcpy(p->cap, s->width, sizeof p->cap);
    pack(p, 0, 0);
    int best = p->best;
    g_free(p);
    return best;
}

int ics_ring_mesh_rings(const ics_topo *t, const int *ranks, int n)
{
    int nvlinks;
    ics_topo_dev_bw(t, ranks[0], ICS_CHAN_NVLINK, &nvlinks);
    if (ics_topo_nfailures(t) == 0)
        return MAX(1, nvlinks);
    /* the first rank's links as wired: the intact count */
    const ics_hw_node *hn = ics_hw_node_of(ics_topo_hw(t));
    int g0 = ics_topo_dev_get(t, ranks[0])->local, wired = 0;
    for (int k = 0; k < hn->n_nvbonds; k++)
        if (hn->nvbonds[k].a == g0 || hn->nvbonds[k].b == g0)
            wired += hn->nvbonds[k].count;
    search *s = g_new0(search, 1);
    int live = nvlink_mesh(t, ranks, n, s) ? max_rings(s) : 0;
    intact_widths(t, ranks, n, s);
    int intact = max_rings(s);
    g_free(s);
    return MAX(1, wired - MAX(0, intact - live));
}
