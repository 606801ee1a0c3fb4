/* Ring orders (ring_order.h). NVLink-only rings are searched by backtracking: small (a node has
 * at most 16 GPUs here, each with a handful of direct NVLink neighbours), exhaustive, and in a
 * fixed order, so that every run finds the same rings. */
#include "collectives/ring_order.h"

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

static void by_node(const ics_topo *t, const int *ranks, int n, int ch, int *order)
{
    int i = 0;
    while (i < n) {
        int node = ics_topo_dev_get(t, ranks[i])->node, m = 0;
        while (i + m < n && ics_topo_dev_get(t, ranks[i + m])->node == node)
            m++;
        for (int k = 0; k < m; k++)
            order[i + k] = i + (ch + k) % m;
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
