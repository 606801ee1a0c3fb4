/* Which of a flow's resources can bind it, for the analytic backend's fair share
 * (net_analytic.c): a resource that never saturates is left out of every computation. */
#include "net/net_analytic_internal.h"

/* Resource r is dominated by d when every flow on r also crosses d and, for each of them,
 * coef_r / cap_r < coef_d / cap_d by a margin: then whatever rates the flows get, r carries
 * less than cap_r / (1 + margin) while d carries at most cap_d, so r never saturates and binds
 * nobody, and the fair share can leave it out: it would never reach the top of the heap, and
 * the speeds are those of the full computation (/net/analytic/dominance compares them to the
 * picosecond; full_shares turns dominance off with locality). A GPU's PCIe hops to its NIC
 * carry exactly the flows of the NIC's link, at more capacity: an all-to-all's flows across a
 * DGX fat-tree cross 12 channels, of which 4 can bind (the NICs' links and the spine's). Kept as
 * flows come and go: a resource's first flow names the tightest of its other resources that
 * dominates it (dom_by). A later flow that does not cross that one (the first flow into a NIC
 * named the sender's NIC link; the next sender's does not cross it) has its own candidates
 * checked against every flow on the resource, and the tightest that dominates them all takes
 * over; when none does, or after DOM_TRIES such searches, the dominance ends until the resource
 * empties (each search walks the resource's flows: a spine link that nothing dominates must not
 * be searched at every flow that joins it). A flow's uses are kept in two parts, [0, n_bind)
 * the binding ones the fair share walks, then the dominated ones (ics_an_ref.u follows a use that
 * moves). Chains are fine (r by d, d by e: r carries less than d, which never saturates) and
 * cannot loop (the ratio falls strictly along one). */

#define DOM_MARGIN 1e-9L
#define DOM_TRIES  2

static long double use_coef(const ics_an_flow *f, int r)
{
    long double c = 0;
    for (int u = 0; u < f->n_use; u++)
        if (f->use[u].res == r)
            c += f->use[u].coef;
    return c;
}

/* cap_r / coef_r of flow f, or 0 where r has no capacity or f does not cross it. */
static long double room_of(const ics_an_net *n, const ics_an_flow *f, int r)
{
    long double c = use_coef(f, r);
    return c > 0 && n->cap[r] > 0 ? n->cap[r] / c : 0;
}

static bool dominates(const ics_an_net *n, const ics_an_flow *f, int r, int d)
{
    long double rd = room_of(n, f, d);
    return rd > 0 && rd * (1 + DOM_MARGIN) < room_of(n, f, r);
}

/* The tightest resource of f that dominates r (f's use u) for f, given f's rooms, and, when
 * `others`, for every flow on r too; or -1. The candidates come tightest first (ties: the lower
 * id), so the first that dominates every flow is the answer, and once one is not tight enough
 * for f itself none after it is: a flow's search costs its uses, not their square (about a
 * tenth of the analytic engine's time on Llama 3 405B's 6,048-GPU step went to the pairwise
 * walk). */
static int dom_search(const ics_an_net *n, const ics_an_flow *f, int u, const ics_an_rooms *rooms,
                      bool others)
{
    int r = f->use[u].res;
    const long double *room = rooms->room;
    for (int i = 0; i < rooms->n_by_room; i++) {
        int v = rooms->by_room[i], d = f->use[v].res;
        if (!(room[v] * (1 + DOM_MARGIN) < room[u]))
            return -1;
        if (d == r)
            continue;
        bool all = true;
        const GArray *l = n->on[r];
        for (guint k = 0; others && k < l->len && all; k++)
            all = dominates(n, g_array_index(l, ics_an_ref, k).f, r, d);
        if (all)
            return d;
    }
    return -1;
}

/* Swaps f's uses a and b; the refs of both follow them. */
static void use_swap(ics_an_net *n, ics_an_flow *f, int a, int b)
{
    ics_an_use t = f->use[a];
    f->use[a] = f->use[b];
    f->use[b] = t;
    g_array_index(n->on[f->use[a].res], ics_an_ref, f->use[a].pos).u = a;
    g_array_index(n->on[f->use[b].res], ics_an_ref, f->use[b].pos).u = b;
}

static void set_bind(ics_an_net *n, ics_an_flow *f, int n_bind)
{
    f->n_bind = n_bind;
    if (f->slot < 0)
        return;
    ics_an_slot *s = &n->slots[f->slot];
    s->n_bind = n_bind;
    for (int u = 0; u < MIN(n_bind, BIND_INLINE); u++)
        s->bind[u] = (ics_an_bind){.res = f->use[u].res, .coef = f->use[u].coef};
}

/* r binds again: each of its flows but `skip` (joining) moves its use of r to its binding part. */
static void undominate(ics_an_net *n, int r, const ics_an_flow *skip)
{
    n->dom_by[r] = -1;
    const GArray *l = n->on[r];
    for (guint i = 0; i < l->len; i++) {
        ics_an_ref ref = g_array_index(l, ics_an_ref, i);
        if (ref.f == skip || ref.u < ref.f->n_bind)
            continue;
        use_swap(n, ref.f, ref.u, ref.f->n_bind);
        set_bind(n, ref.f, ref.f->n_bind + 1);
    }
}

/* True if use a of f comes before use b in the search order: tighter, or as tight and of the
 * lower resource id (the same resource crossed twice: the earlier use). */
static bool tighter(const ics_an_flow *f, const long double *room, int a, int b)
{
    if (room[a] != room[b])
        return room[a] < room[b];
    int ra = f->use[a].res, rb = f->use[b].res;
    return ra != rb ? ra < rb : a < b;
}

/* rooms->by_room: the uses of positive room, tightest first (insertion: at most 16 of them). */
static void sort_by_room(const ics_an_flow *f, ics_an_rooms *rooms)
{
    int k = 0;
    for (int u = 0; u < f->n_use; u++) {
        if (!(rooms->room[u] > 0))
            continue;
        int i = k++;
        for (; i > 0 && tighter(f, rooms->room, u, rooms->by_room[i - 1]); i--)
            rooms->by_room[i] = rooms->by_room[i - 1];
        rooms->by_room[i] = u;
    }
    rooms->n_by_room = k;
}

/* Each use's room_of, the coefficients of a resource crossed twice (a flow of several paths)
 * summed in use order as use_coef sums them: a later use of a resource copies the first's. This
 * runs at every flow start, so it compares each pair once rather than summing per use. */
bool ics_an_dom_begin(const ics_an_net *n, const ics_an_flow *f, ics_an_rooms *rooms)
{
    if (f->n_use > ICS_AN_DOM_MAX_USES || n->params.full_shares)
        return false;
    long double *room = rooms->room;
    for (int u = 0; u < f->n_use; u++) {
        int r = f->use[u].res, v = 0;
        while (v < u && f->use[v].res != r)
            v++;
        if (v < u) {
            room[u] = room[v];
            continue;
        }
        long double c = 0;
        for (int w = u; w < f->n_use; w++)
            if (f->use[w].res == r)
                c += f->use[w].coef;
        room[u] = c > 0 && n->cap[r] > 0 ? n->cap[r] / c : 0;
    }
    sort_by_room(f, rooms);
    return true;
}

/* dominates(n, f, f->use[u].res, d) for the joining flow, from its rooms (ics_an_dom_begin). */
static bool dominated_by(const ics_an_flow *f, int u, int d, const long double *room)
{
    int v = 0;
    while (v < f->n_use && f->use[v].res != d)
        v++;
    return v < f->n_use && room[v] > 0 && room[v] * (1 + DOM_MARGIN) < room[u];
}

void ics_an_dom_join(ics_an_net *n, ics_an_flow *f, int u, const ics_an_rooms *rooms, bool part)
{
    const long double *room = rooms->room;
    int r = f->use[u].res;
    if (n->on[r]->len == 0) {
        n->dom_by[r] = part ? dom_search(n, f, u, rooms, false) : -1;
        n->dom_tries[r] = 0;
    } else if (n->dom_by[r] >= 0 && !(part && dominated_by(f, u, n->dom_by[r], room))) {
        int d = part && n->dom_tries[r] < DOM_TRIES ? dom_search(n, f, u, rooms, true) : -1;
        n->dom_tries[r]++;
        if (d >= 0)
            n->dom_by[r] = d;
        else
            undominate(n, r, f);
    }
}

void ics_an_dom_partition(ics_an_net *n, ics_an_flow *f)
{
    int k = 0;
    for (int u = 0; u < f->n_use; u++)
        if (n->dom_by[f->use[u].res] < 0) {
            if (u != k)
                use_swap(n, f, u, k);
            k++;
        }
    set_bind(n, f, k);
}
