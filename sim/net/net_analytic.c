/* The analytic backend: a fluid model on the packet backend's routes. Every transfer path (or
 * multicast/reduce op) is one fluid flow whose time is a fixed offset (latencies, pipeline fill,
 * the last packet) plus a fluid part run at a max-min fair rate over the channels it crosses.
 * Invariant: a flow alone on its path finishes at exactly start + ics_net_idle_path_time, to
 * the picosecond: its fluid work is counted in picoseconds at its uncontended rate, and an
 * uncontended flow advances at speed exactly 1.
 *
 * Model. A flow has payload rate r = speed * r0, where r0 = P / max_h ser(P, h) is its
 * uncontended packet rate (P: its payload per packet). On each resource it uses it consumes
 * r * coef: coef = wire(P, c) / P on a channel (capacity bw_bytes_per_s of wire bytes), nsrc on
 * a switch's reduction unit (capacity ics_net_reduce_bw). Rates are max-min fair (progressive
 * filling, each flow capped at r0), recomputed once per simulated instant at which a flow
 * starts or ends; flows whose speed changed get their completion event moved. A multicast or
 * reduce is one coupled flow over all its legs (and the reduction unit) at one rate; its fixed
 * part comes from the tandem closed form of its slowest branch, which is what the packet
 * backend's join does packet by packet. A stream is one coupled flow over its legs' paths, a
 * leg of b bytes weighted b / B (B: the largest leg), its idle time its slowest leg's.
 *
 * Costs. A recomputation is O(F * H * log R + F log F) for F flows of H resources each and R
 * resources in it (a heap of resources by saturation level, flows sorted by r0), F being the
 * flows the change is coupled to (Locality, below; at worst every active flow), and every
 * start or end (batched per instant) that meets a contended resource triggers one. Measured
 * (Release, 2-core VM): 2048 random transfers among 256 GPUs of a 32-node NDR fat-tree, ~1000 in
 * flight, 1.4 s, 0.7 ms per recomputation. An all-to-all couples everything: 1 GiB over 256
 * GPUs of a 2:1 fat-tree (fattree-2tier.json) recomputes ~60,000 flows ~530 times; the lazy
 * heap, the compact sort, the bucketed caps and Floyd's heap construction below took it from
 * 34.5 s to 28.9 s, now bound by memory (the passes over the flows' uses miss the cache); a
 * 16 MiB one over 128 GPUs went from 8.85 G instructions to 5.54 G (callgrind). Summing the
 * loads in the closure's pass (one pass fewer) then took the 256-GPU one 0.89x (farm-bench, 4
 * pairs), packing ics_an_use in 32 bytes 0.87x, and the fair share's fields of ics_an_flow first
 * 0.88x: 22.6 s, with shares unchanged to the bit. Then the share's arithmetic in double, each
 * resource's maintained flow list as its adjacency, and the flows' fields in a dense array by
 * slot (ics_an_slot): 8.7 s, the same results but for one row of bench accuracy's 0.01 us (a
 * saturated resource's flows now freeze in its list's order). It had drifted to 13.0 s (more
 * uses a flow: 12 channels across a DGX fat-tree); leaving dominated resources out
 * (net_analytic_dom.c: 4 of the 12 can bind) with those 4 held in the slot itself took it to 2.2 s,
 * results unchanged to the byte (bench accuracy, the 1024-GPU sweep, the all-to-all's table).
 * Holding up to 5 (a dragonfly's global link is the fifth) took a 540-rank Polaris all-to-all
 * from 35.6 to 18.5 s (BIND_INLINE), and prefetching a saturated resource's slots to 13.5 s
 * (PREFETCH_AHEAD; 0.80x on 384 ranks, farm-bench), all of each slot's lines 0.91x more.
 * Memory: O(flows x hops) plus O(channels + devices).
 *
 * Locality. A start or end changes only the shares of flows it is coupled to through
 * contended resources: a resource is contended when its flows' uncontended demands (r0 x coef)
 * fill it (within AN_TOL), and one that is not can never saturate before each of its flows
 * reaches its own cap, so it binds nobody. Each recomputation therefore takes the started flows
 * and the flows of the contended resources that ending flows left, closes the set over
 * contended resources (every flow of a contended resource of a flow in the set joins), and
 * runs the progressive filling on that set over its contended resources only. Flows outside
 * keep their speeds, and that is exact: an outside flow held back is held at a saturated,
 * hence contended, resource, which would have pulled it in had the set touched it; a resource
 * the set shares with outside flows is not contended, so it limits neither side. Per resource
 * the arithmetic is the one the global computation does on the same flows in the same order,
 * so the speeds are the same numbers: params.full_shares runs the global computation and the
 * tests compare the two to the picosecond. A flow that meets no contended resource starts at
 * full speed at once, and one that leaves none frees nobody: no recomputation at all. When a
 * set grows to most of the active flows (channels sharing every NIC of a tree) the closure costs
 * as much as it saves, so the next GLOBAL_STREAK computations take every flow, then look again.
 * The per-resource lists of flows (n->on) and demands are kept as flows start and end, O(H)
 * each. Dominated resources (net_analytic_dom.c) take no part in either. Measured (callgrind, one
 * 16 MiB tree all-reduce over 32 nodes x 1 GPU, chunks,
 * everything coupled): 1.227 G instructions before, 1.236 G after; a Llama 3 70B step on 64
 * GPUs with --collectives full (TP groups per node, independent): 36 s before, 17-19 s after.
 *
 * Accounting. chan_bytes counts a flow's payload on each of its channels when the flow is
 * delivered (completed flows only: in-flight bytes are not counted). bytes_delivered counts the
 * payload arriving at destinations over the network: bytes for a send (0 when src == dst),
 * bytes x ndst for multicast and reduce; as the packet backend counts.
 * params: packet_bytes is honoured; train_bytes, per_packet and buffer_bytes concern packets
 * and are ignored; adaptive_routing is not implemented (routes follow the flow hash). */
#include "net/net.h"
#include "net/net_analytic_internal.h"
#include "net/net_fluid.h"

#include <math.h>
#include <string.h>

extern const ics_net_ops ics_net_analytic_ops;

/* ---- transfers ----------------------------------------------------------------------------- */

static ics_an_xfer *xfer_new(ics_an_net *n, int n_flows, ics_net_done_fn done, void *ctx,
                             uint64_t tag)
{
    ics_an_xfer *x = g_new0(ics_an_xfer, 1);
    *x = (ics_an_xfer){
        .net = n, .done = done, .ctx = ctx, .tag = tag, .n_flows = n_flows, .left = n_flows};
    x->flows = g_new0(ics_an_flow, MAX(n_flows, 1));
    x->next = n->live;
    if (n->live)
        n->live->prev = x;
    n->live = x;
    return x;
}

static void xfer_free(ics_an_net *n, ics_an_xfer *x)
{
    if (x->prev)
        x->prev->next = x->next;
    else
        n->live = x->next;
    if (x->next)
        x->next->prev = x->prev;
    for (int i = 0; i < x->n_flows; i++)
        g_free(x->flows[i].use);
    g_free(x->flows);
    g_free(x);
}

/* Completion: stats, free, then the callback (which may start new transfers). */
static void xfer_finish(ics_an_net *n, ics_an_xfer *x)
{
    ics_net_done_fn done = x->done;
    void *ctx = x->ctx;
    uint64_t tag = x->tag;
    n->stats.transfers++;
    n->stats.bytes_delivered += x->delivered;
    xfer_free(n, x);
    if (done)
        done(n->e, ctx, tag);
}

static void ev_done_now(ics_engine *e, void *ctx, uint64_t arg)
{
    (void)e;
    (void)arg;
    ics_an_xfer *x = ctx;
    xfer_finish(x->net, x);
}

/* ---- the fair share ------------------------------------------------------------------------ */

/* Progressive filling: every unfrozen flow's rate rises together (the level); a resource
 * saturates at level lv + rem / load, which stays put while the level rises and moves only when
 * one of its flows freezes; a flow also stops at its own r0. So: a heap of resources keyed by
 * saturation level, flows sorted by r0, and each freeze updates only its own resources.
 *
 * The heap is lazy. A freeze only ever raises a resource's saturation level (less load, the
 * same room), so a resource keeps its old key, a lower bound, and is put in its place only when
 * it reaches the top (heap_top): one sift per resource that comes up stale instead of one per
 * use of every frozen flow (an all-to-all's 60,000 flows x 7 resources each). The top is then
 * the least (level, index) exactly as an eager heap would give it: every other key is at most
 * its level, and a tie in level is a tie in key broken by the index. Rounding can lower a level
 * by an ulp; that resource is raised at once, which keeps every key a lower bound. */

static bool res_before(const ics_an_net *n, int a, int b)
{
    const ics_an_res *x = &n->res[a], *y = &n->res[b];
    return x->key < y->key || (x->key == y->key && a < b);
}

static void heap_swap(ics_an_net *n, int i, int j)
{
    int a = n->heap[i], b = n->heap[j];
    n->heap[i] = b;
    n->heap[j] = a;
    n->res[b].heap_pos = i;
    n->res[a].heap_pos = j;
}

static void heap_up(ics_an_net *n, int i)
{
    while (i > 0 && res_before(n, n->heap[i], n->heap[(i - 1) / 2])) {
        heap_swap(n, i, (i - 1) / 2);
        i = (i - 1) / 2;
    }
}

static void heap_down(ics_an_net *n, int i)
{
    for (;;) {
        int best = i, l = 2 * i + 1, r = l + 1;
        if (l < n->heap_len && res_before(n, n->heap[l], n->heap[best]))
            best = l;
        if (r < n->heap_len && res_before(n, n->heap[r], n->heap[best]))
            best = r;
        if (best == i)
            return;
        heap_swap(n, i, best);
        i = best;
    }
}

static void heap_remove(ics_an_net *n, int r)
{
    int i = n->res[r].heap_pos;
    heap_swap(n, i, --n->heap_len);
    n->res[r].heap_pos = -1;
    if (i < n->heap_len) {
        heap_up(n, i);
        heap_down(n, i);
    }
}

/* Resource r's scratch, (re)initialized once per computation. */
static ics_an_res *res_touch(ics_an_net *n, int r)
{
    ics_an_res *x = &n->res[r];
    if (n->stamp[r] != n->epoch) {
        n->stamp[r] = n->epoch;
        *x = (ics_an_res){.rem = n->cap[r], .heap_pos = -1};
        g_array_append_val(n->touched, r);
    }
    return x;
}

/* True if resource r takes part in this computation (closure() stamped it). */
static bool in_share(const ics_an_net *n, int r)
{
    return n->stamp[r] == n->epoch;
}

/* Flow f joins the computation: unfrozen, its uses added to the loads and users of the
 * resources closure() stamped. */
static void share_load(ics_an_net *n, ics_an_flow *f)
{
    for (int u = 0; u < f->n_bind; u++) {
        if (!in_share(n, f->use[u].res))
            continue;
        ics_an_res *x = &n->res[f->use[u].res];
        x->load += f->use[u].coef;
        x->users++;
    }
}

/* The same where every resource of every active flow takes part. */
static void share_load_all(ics_an_net *n, const ics_an_slot *s)
{
    for (int u = 0; u < s->n_bind; u++) {
        ics_an_res *x = &n->res[slot_res(s, u)];
        x->load += slot_coef(s, u);
        x->users++;
    }
}

static ics_an_cap cap_of(const ics_an_net *n, const ics_an_flow *f)
{
    return (ics_an_cap){.r0 = (double)n->slots[f->slot].r0, .slot = f->slot};
}

/* Loads and users (unless closure() summed them: `loaded`) and the heap, over the resources
 * closure() stamped. A stamped resource's flows are all in n->set (closure() takes every flow of
 * a resource it takes in), so its list n->on[r] is its flows in the computation. */
static void share_build(ics_an_net *n, bool loaded)
{
    for (guint i = 0; i < (loaded ? 0 : n->set->len); i++)
        share_load(n, g_ptr_array_index(n->set, i));
    n->heap = g_renew(int, n->heap, MAX(n->touched->len, 1));
    n->heap_len = 0;
    for (guint i = 0; i < n->touched->len; i++) {
        int r = g_array_index(n->touched, int, i);
        ics_an_res *x = &n->res[r];
        x->sat = x->key = x->rem / x->load;
        x->heap_pos = n->heap_len;
        n->heap[n->heap_len++] = r;
    }
    /* Floyd's heap construction, O(resources): (key, index) is a total order, so the heap
     * yields the same sequence however it was built */
    for (int i = n->heap_len / 2 - 1; i >= 0; i--)
        heap_down(n, i);
}

static bool is_frozen(const ics_an_net *n, int slot)
{
    return n->frozen[slot] == n->epoch;
}

/* Fixes the speed of the flow in `slot` at this level and takes its load off its resources. */
static void share_freeze(ics_an_net *n, int slot, double level)
{
    ics_an_slot *s = &n->slots[slot];
    n->frozen[slot] = n->epoch;
    s->next = s->r0 <= level * (1 + AN_TOL) ? 1 : level / s->r0;
    n->stats.share_flows++;
    n->stats.share_uses += (uint64_t)s->n_bind;
    for (int u = 0; u < s->n_bind; u++) {
        int r = slot_res(s, u);
        if (!in_share(n, r))
            continue;
        ics_an_res *x = &n->res[r];
        x->rem -= (level - x->lv) * x->load;
        x->lv = level;
        x->load -= slot_coef(s, u);
        if (--x->users == 0)
            continue; /* heap_top drops it */
        x->sat = x->lv + x->rem / x->load;
        if (x->sat < x->key) { /* only through rounding: less load leaves more room */
            x->key = x->sat;
            heap_up(n, x->heap_pos);
        }
    }
}

/* The resource that saturates first among those with unfrozen flows (-1: none): stale tops are
 * put in their place, emptied ones dropped, until the top is current. */
static int heap_top(ics_an_net *n)
{
    while (n->heap_len > 0) {
        int r = n->heap[0];
        ics_an_res *x = &n->res[r];
        if (x->users == 0) {
            heap_remove(n, r);
        } else if (x->key < x->sat) { /* (a NaN level is taken as it is, never refreshed) */
            x->key = x->sat;
            heap_down(n, 0);
        } else {
            return r;
        }
    }
    return -1;
}

static int by_r0(const void *a, const void *b)
{
    const ics_an_cap *f = a, *g = b;
    if (f->r0 != g->r0)
        return f->r0 < g->r0 ? -1 : 1;
    return (f->slot > g->slot) - (f->slot < g->slot);
}

/* Distinct caps caps_order buckets; more, and it sorts. */
#define CAP_BUCKETS 16

static int cap_bucket(const double *val, int k, double r0)
{
    int b = 0;
    while (b < k && val[b] != r0)
        b++;
    return b;
}

/* Puts the caps in (r0, slot) order. A computation over every active flow takes them in slot
 * order, and their caps have a handful of values (one per kind of path: NVLink, the NICs): such
 * a list is bucketed by cap, each bucket keeping its order, in O(flows), where sorting 60,000
 * of them was a fifth of an all-to-all's run. Anything else is sorted. */
static void caps_order(ics_an_net *n, ics_an_cap *caps, guint len)
{
    double val[CAP_BUCKETS];
    guint cnt[CAP_BUCKETS], start[CAP_BUCKETS];
    int k = 0, order[CAP_BUCKETS];
    bool bucketed = true;
    for (guint i = 0; i < len && bucketed; i++) {
        int b = cap_bucket(val, k, caps[i].r0);
        if (b == k && k == CAP_BUCKETS)
            bucketed = false;
        else if (b == k)
            val[k] = caps[i].r0, cnt[k++] = 0;
        bucketed = bucketed && (i == 0 || caps[i - 1].slot < caps[i].slot);
        if (bucketed)
            cnt[b]++;
    }
    if (!bucketed) {
        qsort(caps, len, sizeof(ics_an_cap), by_r0);
        return;
    }
    for (int b = 0; b < k; b++) { /* the buckets by value: an insertion sort of k */
        int j = b;
        for (; j > 0 && val[order[j - 1]] > val[b]; j--)
            order[j] = order[j - 1];
        order[j] = b;
    }
    for (int j = 0, at = 0; j < k; at += (int)cnt[order[j]], j++)
        start[order[j]] = (guint)at;
    g_array_set_size(n->caps_tmp, len);
    ics_an_cap *out = (ics_an_cap *)(void *)n->caps_tmp->data;
    for (guint i = 0; i < len; i++)
        out[start[cap_bucket(val, k, caps[i].r0)]++] = caps[i];
    if (len > 0)
        memcpy(caps, out, sizeof(ics_an_cap) * len);
}

/* How many flows ahead a saturated resource's list asks for their slots: the list is in the
 * order flows joined, their slots anywhere in the array, and each read missed the cache (half
 * a 384-rank Polaris all-to-all's time). Asking 8 ahead took it 0.80x, the 256-GPU fat-tree one
 * 0.91x (farm-bench, 4-5 pairs); the same for the caps' loop, already in slot order within a
 * cap, gained nothing. */
#define PREFETCH_AHEAD 8

/* A slot is 144 bytes: three cache lines, all of which share_freeze reads (r0 first, the bind[]
 * after). Asking for the first only left the others to miss: all three, 0.91x more on the
 * 384-rank all-to-all (farm-bench, 3 pairs, nothing else running). */
static inline void slot_prefetch(const ics_an_slot *s)
{
    const char *p = (const char *)s;
    for (size_t off = 0; off < sizeof *s; off += 64)
        __builtin_prefetch(p + off);
}

/* Leaves each flow of n->set its fair speed in next. A flow's cap within AN_TOL of a saturation
 * level wins, so that a flow alone gets speed exactly 1. */
static void share_compute(ics_an_net *n, bool loaded)
{
    share_build(n, loaded);
    g_array_set_size(n->by_r0, n->set->len);
    ics_an_cap *caps = (ics_an_cap *)(void *)n->by_r0->data;
    for (guint i = 0; i < (loaded ? 0 : n->set->len); i++)
        caps[i] = cap_of(n, g_ptr_array_index(n->set, i));
    caps_order(n, caps, n->by_r0->len);
    double level = 0;
    guint ci = 0, left = n->set->len;
    while (left > 0) {
        while (is_frozen(n, caps[ci].slot))
            ci++;
        double cap = caps[ci].r0;
        int top = heap_top(n);
        double sat = top >= 0 ? n->res[top].sat : INFINITY;
        if (cap <= sat * (1 + AN_TOL)) {
            level = MAX(level, cap);
            for (; ci < n->by_r0->len; ci++) {
                if (caps[ci].r0 > level * (1 + AN_TOL))
                    break;
                if (!is_frozen(n, caps[ci].slot)) {
                    share_freeze(n, caps[ci].slot, level);
                    left--;
                }
            }
            continue;
        }
        level = MAX(level, sat);
        const GArray *l = n->on[top];
        for (guint k = 0; k < l->len; k++) {
            if (k + PREFETCH_AHEAD < l->len) /* the list's slots are scattered: ask early */
                slot_prefetch(
                    &n->slots[n->slot_of[g_array_index(l, ics_an_ref, k + PREFETCH_AHEAD).hid]]);
            int slot = n->slot_of[g_array_index(l, ics_an_ref, k).hid];
            if (!is_frozen(n, slot)) {
                share_freeze(n, slot, level);
                left--;
            }
        }
    }
}

/* ---- fluid flows --------------------------------------------------------------------------- */

static void ev_fluid_end(ics_engine *e, void *ctx, uint64_t arg);

static void flow_schedule(ics_an_net *n, ics_an_flow *f, ics_time now)
{
    long double left = ceill(MAX(f->work, 0.0L) / f->speed);
    /* a flow slowed to a crawl may need longer than the horizon: the engine refuses it */
    ics_time d = left < (long double)ICS_TIME_LIMIT ? (ics_time)left : ICS_TIME_LIMIT;
    f->ev = ics_engine_at(n->e, now + d, ev_fluid_end, f, 0);
}

/* ---- locality ------------------------------------------------------------------------------ */

static GArray *on_list(ics_an_net *n, int r)
{
    if (!n->on[r])
        n->on[r] = g_array_new(FALSE, FALSE, sizeof(ics_an_ref));
    return n->on[r];
}

/* f's uses join their resources' lists and demands (a started flow), and the dominance of
 * those resources is brought up to date (above). */
static void flow_join(ics_an_net *n, ics_an_flow *f)
{
    ics_an_rooms rooms;
    bool part = ics_an_dom_begin(n, f, &rooms);
    for (int u = 0; u < f->n_use; u++) {
        int r = f->use[u].res;
        GArray *l = on_list(n, r);
        ics_an_dom_join(n, f, u, &rooms, part);
        f->use[u].pos = (int)l->len;
        ics_an_ref ref = {f, u, f->hid};
        g_array_append_val(l, ref);
        if (l->len == 1) {
            n->busy_pos[r] = (int)n->busy->len;
            g_array_append_val(n->busy, r);
        }
        n->demand[r] += f->r0 * f->use[u].coef;
    }
    ics_an_dom_partition(n, f);
}

/* f's uses leave them (a flow whose fluid part ended). */
static void flow_leave(ics_an_net *n, ics_an_flow *f)
{
    for (int u = 0; u < f->n_use; u++) {
        int r = f->use[u].res;
        GArray *l = n->on[r];
        int pos = f->use[u].pos;
        ics_an_ref last = g_array_index(l, ics_an_ref, l->len - 1);
        g_array_index(l, ics_an_ref, pos) = last;
        last.f->use[last.u].pos = pos;
        g_array_set_size(l, l->len - 1);
        n->demand[r] -= f->r0 * f->use[u].coef;
        if (l->len == 0) { /* r leaves busy: the last busy resource takes its place */
            n->dom_by[r] = -1;
            int moved = g_array_index(n->busy, int, n->busy->len - 1);
            g_array_index(n->busy, int, n->busy_pos[r]) = moved;
            n->busy_pos[moved] = n->busy_pos[r];
            n->busy_pos[r] = -1;
            g_array_set_size(n->busy, n->busy->len - 1);
        }
    }
}

/* True if r could hold a flow back: its flows' uncontended demands (nearly) fill it. One that
 * does not never saturates before all its flows reach their own caps, so it takes no part in
 * the fair share. Near the line the running sum's rounding could decide, so it is recounted. */
static bool contended(ics_an_net *n, int r)
{
    long double line = n->cap[r] * (1 - AN_TOL);
    if (fabsl(n->demand[r] - line) <= n->cap[r] * 1e-9L) {
        long double d = 0;
        const GArray *l = n->on[r];
        for (guint i = 0; l && i < l->len; i++) {
            const ics_an_ref *x = &g_array_index(l, ics_an_ref, i);
            d += x->f->r0 * x->f->use[x->u].coef;
        }
        n->demand[r] = d;
    }
    return n->demand[r] > line;
}

/* (A dominated resource that is contended has a contended dominator, whose own dominator, if
 * any, is contended too, and so on up to one among f's binding uses: only those are looked at,
 * here and in closure() and ev_fluid_end.) */
static bool any_contended(ics_an_net *n, const ics_an_flow *f)
{
    for (int u = 0; u < f->n_bind; u++)
        if (contended(n, f->use[u].res))
            return true;
    return false;
}

static void set_add(ics_an_net *n, ics_an_flow *f)
{
    if (f->mark != n->epoch) {
        f->mark = n->epoch;
        g_ptr_array_add(n->set, f);
    }
}

/* Every flow of resource r joins the set; r joins the computation. */
static void set_add_res(ics_an_net *n, int r)
{
    if (in_share(n, r))
        return;
    res_touch(n, r);
    const GArray *l = n->on[r];
    for (guint i = 0; l && i < l->len; i++)
        set_add(n, g_array_index(l, ics_an_ref, i).f);
}

/* The flows whose speed may change, in n->set: the started ones and those of the contended
 * resources ending flows left, closed over contended resources (every flow of a contended
 * resource of a flow in the set is in the set). With params.full_shares: every active flow and
 * resource, as the computation was before it was made local. True if it took every flow and
 * summed their loads on the way (share_build then does not). */
static bool closure(ics_an_net *n)
{
    if (++n->epoch == 0) { /* wrapped: clear so that no stale stamp or mark matches */
        memset(n->stamp, 0, sizeof *n->stamp * (size_t)n->nres);
        memset(n->calm, 0, sizeof *n->calm * (size_t)n->nres);
        memset(n->frozen, 0, sizeof *n->frozen * n->slots_len);
        for (guint i = 0; i < n->active->len; i++)
            ((ics_an_flow *)g_ptr_array_index(n->active, i))->mark = 0;
        n->epoch = 1;
    }
    g_array_set_size(n->touched, 0);
    g_ptr_array_set_size(n->set, 0);
    bool all = n->params.full_shares || n->global_left > 0;
    if (n->global_left > 0)
        n->global_left--;
    if (all) {
        /* every busy resource, then every flow in one pass: in the set, its cap listed, its
         * loads summed in the order share_build would sum them */
        for (guint i = 0; i < n->busy->len; i++)
            if (n->dom_by[g_array_index(n->busy, int, i)] < 0)
                res_touch(n, g_array_index(n->busy, int, i));
        g_array_set_size(n->by_r0, n->active->len);
        ics_an_cap *caps = (ics_an_cap *)(void *)n->by_r0->data;
        g_ptr_array_set_size(n->set, n->active->len); /* the set is the active flows, in order */
        memcpy(n->set->pdata, n->active->pdata, sizeof(gpointer) * n->active->len);
        for (guint i = 0; i < n->active->len; i++) {
            caps[i] = (ics_an_cap){.r0 = (double)n->slots[i].r0, .slot = (int)i};
            share_load_all(n, &n->slots[i]);
        }
        return true;
    }
    for (guint i = 0; i < n->dirty->len; i++)
        set_add(n, g_ptr_array_index(n->dirty, i));
    for (guint i = 0; i < n->dirty_res->len; i++)
        set_add_res(n, g_array_index(n->dirty_res, int, i));
    for (guint i = 0; i < n->set->len; i++) {
        const ics_an_flow *f = g_ptr_array_index(n->set, i);
        for (int u = 0; u < f->n_bind; u++) {
            int r = f->use[u].res;
            if (in_share(n, r) || n->calm[r] == n->epoch)
                continue; /* in already, or known not to be contended */
            if (contended(n, r))
                set_add_res(n, r);
            else
                n->calm[r] = n->epoch;
        }
    }
    /* Everything is coupled (channels sharing every NIC, say): the closure costs as much as the
     * computation it saves, so the next ones skip it, then look again. */
    if ((uint64_t)n->set->len * 4 > (uint64_t)n->active->len * 3)
        n->global_left = GLOBAL_STREAK;
    return false;
}

/* Applies the new speeds: flows whose speed changed bring their work up to date and move
 * their completion; the others keep their event (so an undisturbed flow stays exact). */
static void ev_share(ics_engine *e, void *ctx, uint64_t arg)
{
    (void)arg;
    ics_an_net *n = ctx;
    ics_time now = ics_engine_now(e);
    n->share_ev = ICS_EVENT_NONE;
    bool loaded = closure(n);
    g_ptr_array_set_size(n->dirty, 0);
    g_array_set_size(n->dirty_res, 0);
    share_compute(n, loaded);
    for (guint i = 0; i < n->set->len; i++) {
        /* loaded: the set is the active flows in slot order, so a flow whose speed stays is
         * passed over without reading it */
        int slot = loaded ? (int)i : ((const ics_an_flow *)g_ptr_array_index(n->set, i))->slot;
        ics_an_slot *s = &n->slots[slot];
        if (s->next == s->speed && s->speed != 0) /* scheduled (a speed), and it stays */
            continue;
        ics_an_flow *f = g_ptr_array_index(n->set, i);
        if (f->ev != ICS_EVENT_NONE) {
            f->work -= f->speed * (long double)(now - f->t_last);
            ics_engine_cancel(e, f->ev);
        }
        f->t_last = now;
        f->speed = s->speed = s->next;
        flow_schedule(n, f, now);
    }
}

/* Shares are recomputed once per instant, after the starts and ends already due then. */
static void share_later(ics_an_net *n)
{
    if (n->share_ev == ICS_EVENT_NONE)
        n->share_ev = ics_engine_after(n->e, 0, ev_share, n, 0);
}

/* A free handle for a flow entering the fluid phase (the last freed first: its slot_of entry
 * is likely still cached). */
static int hid_take(ics_an_net *n)
{
    if (n->hid_free->len > 0) {
        int h = g_array_index(n->hid_free, int, n->hid_free->len - 1);
        g_array_set_size(n->hid_free, n->hid_free->len - 1);
        return h;
    }
    /* at most one handle per active flow: slot_of grows with the slots */
    return n->hid_len++;
}

static void flow_start(ics_an_net *n, ics_an_flow *f)
{
    f->ev = ICS_EVENT_NONE;
    f->t_last = ics_engine_now(n->e);
    f->slot = (int)n->active->len;
    g_ptr_array_add(n->active, f);
    if (n->active->len > n->slots_len) {
        n->slots_len = MAX(64, 2 * n->active->len);
        n->frozen = g_renew(uint32_t, n->frozen, n->slots_len);
        n->slots = g_renew(ics_an_slot, n->slots, n->slots_len);
        n->slot_of = g_renew(int, n->slot_of, n->slots_len);
    }
    f->hid = hid_take(n);
    n->slot_of[f->hid] = f->slot;
    n->frozen[f->slot] = 0;
    n->slots[f->slot] = (ics_an_slot){.r0 = f->r0, .use = f->use, .n_bind = f->n_use};
    flow_join(n, f);
    if (!n->params.full_shares && !any_contended(n, f)) {
        /* nothing it uses can hold it back, and it holds nobody back: full speed at once */
        f->speed = n->slots[f->slot].speed = 1;
        flow_schedule(n, f, f->t_last);
        return;
    }
    f->speed = 0;
    g_ptr_array_add(n->dirty, f);
    share_later(n);
}

static void ev_deliver(ics_engine *e, void *ctx, uint64_t arg)
{
    (void)e;
    (void)arg;
    ics_an_flow *f = ctx;
    ics_an_net *n = f->x->net;
    f->ev = ICS_EVENT_NONE;
    for (int u = 0; u < f->n_use; u++)
        if (f->use[u].res < n->nchans)
            n->chan_bytes[f->use[u].res] += f->use[u].bytes;
    if (--f->x->left == 0)
        xfer_finish(n, f->x);
}

/* The fluid part is over: the flow frees its share and is delivered offset_ps later. */
static void ev_fluid_end(ics_engine *e, void *ctx, uint64_t arg)
{
    (void)arg;
    ics_an_flow *f = ctx;
    ics_an_net *n = f->x->net;
    ics_an_flow *last = g_ptr_array_index(n->active, n->active->len - 1);
    last->slot = f->slot;
    n->slots[f->slot] = n->slots[n->active->len - 1];
    n->slot_of[last->hid] = f->slot; /* its refs follow it to its new slot */
    g_ptr_array_remove_index_fast(n->active, (guint)f->slot);
    g_array_append_val(n->hid_free, f->hid);
    f->slot = f->hid = -1;
    f->work = 0;
    /* flows held back on its contended resources may speed up; elsewhere nobody was */
    bool freed = n->params.full_shares;
    for (int u = 0; u < f->n_bind; u++)
        if (contended(n, f->use[u].res)) {
            g_array_append_val(n->dirty_res, f->use[u].res);
            freed = true;
        }
    flow_leave(n, f);
    if (freed)
        share_later(n);
    f->ev = ics_engine_after(e, f->offset_ps, ev_deliver, f, 0);
}

/* ---- flow set-up --------------------------------------------------------------------------- */

/* total_ps: the flow's idle time. The fixed part is what the fluid part leaves of it; where
 * rounding would make it negative (a single short packet, no latency) the fluid part shrinks. */
static void flow_set_time(ics_an_flow *f, uint64_t bytes, uint32_t payload, ics_time max_ser,
                          ics_time total_ps)
{
    ics_time w = ics_fluid_ps(bytes, payload, max_ser);
    w = MIN(w, total_ps);
    f->bytes = bytes;
    f->r0 = (long double)payload / (long double)max_ser;
    f->work = (long double)w;
    f->offset_ps = total_ps - w;
}

/* Appends a path's channels to f->use; returns the largest serialization of a packet. */
static ics_time flow_add_path(ics_an_net *n, ics_an_flow *f, const ics_route_path *p,
                              uint32_t payload)
{
    ics_time max_ser = 0;
    for (int h = 0; h < p->n_hops; h++) {
        int c = p->chans[h];
        ics_time ser = ics_net_ser(n->t, c, payload);
        max_ser = MAX(max_ser, ser);
        f->use[f->n_use++] =
            (ics_an_use){.res = c,
                         .bytes = f->bytes,
                         .coef = (long double)ics_net_wire_bytes(n->t, c, payload) / payload};
    }
    return max_ser;
}

static void flow_init_path(ics_an_net *n, ics_an_flow *f, const ics_route_path *p, uint64_t bytes)
{
    uint32_t payload = ics_net_packet_payload(n->t, p, n->params.packet_bytes);
    f->bytes = bytes;
    f->use = g_new(ics_an_use, p->n_hops);
    ics_time max_ser = flow_add_path(n, f, p, payload);
    flow_set_time(f, bytes, payload, max_ser, ics_net_idle_path_time(n->t, p, bytes, payload));
}

/* A transfer with nothing to move completes at the current time, as an event. */
static void done_now(ics_an_net *n, uint64_t delivered, ics_net_done_fn done, void *ctx,
                     uint64_t tag)
{
    ics_an_xfer *x = xfer_new(n, 0, done, ctx, tag);
    x->delivered = delivered;
    x->ev = ics_engine_after(n->e, 0, ev_done_now, x, 0);
}

/* ---- send ---------------------------------------------------------------------------------- */

static void an_send(ics_net *net, const ics_net_xfer *xf)
{
    ics_an_net *n = (ics_an_net *)net;
    if (xf->src == xf->dst || xf->bytes == 0) {
        done_now(n, 0, xf->done, xf->ctx, xf->tag);
        return;
    }
    GArray *parts = g_array_new(FALSE, FALSE, sizeof(ics_fluid_part));
    const ics_route *r = ics_net_routes_find(n->routes, xf->src, xf->dst, xf->flow_hash);
    if (!r)
        g_error("net: no route from %s to %s", ics_topo_dev_label(n->t, xf->src),
                ics_topo_dev_label(n->t, xf->dst));
    ics_fluid_parts_of(n->t, n->params.packet_bytes, r, xf->bytes, parts);
    ics_an_xfer *x = xfer_new(n, (int)parts->len, xf->done, xf->ctx, xf->tag);
    x->delivered = xf->bytes;
    for (guint i = 0; i < parts->len; i++) {
        const ics_fluid_part *q = &g_array_index(parts, ics_fluid_part, i);
        x->flows[i].x = x;
        flow_init_path(n, &x->flows[i], &q->path, q->bytes);
        flow_start(n, &x->flows[i]);
    }
    g_array_free(parts, TRUE);
}

/* ---- multicast and reduce ------------------------------------------------------------------ */

/* One coupled flow over every leg at one rate, plus (reduce) the switch's reduction unit. */
static void op_init_flow(ics_an_net *n, const ics_fluid_op *op, ics_an_flow *f)
{
    uint32_t payload = ics_net_packet_payload(n->t, &op->legs[0][0], n->params.packet_bytes);
    int hops = 1;
    for (int s = 0; s < 2; s++)
        for (int i = 0; i < op->nlegs[s]; i++)
            hops += op->legs[s][i].n_hops;
    f->use = g_new(ics_an_use, hops);
    f->bytes = op->bytes;
    ics_time max_ser = 0;
    for (int s = 0; s < 2; s++)
        for (int i = 0; i < op->nlegs[s]; i++) {
            ics_time leg_ser = flow_add_path(n, f, &op->legs[s][i], payload);
            max_ser = MAX(max_ser, leg_ser);
        }
    if (op->reduce_bw) {
        /* The switch reads nsrc inputs per byte it outputs: its reduction unit consumes
         * nsrc x the op's rate, against ics_net_reduce_bw (input bytes/s, as the packet
         * backend's join charges nsrc x payload per packet). */
        uint64_t nin = (uint64_t)op->nlegs[0];
        ics_time red_ser = ics_time_serialize(nin * payload, op->reduce_bw);
        max_ser = MAX(max_ser, red_ser);
        f->use[f->n_use++] = (ics_an_use){.res = n->nchans + op->sw, .coef = (long double)nin};
    }
    flow_set_time(f, op->bytes, payload, max_ser, ics_fluid_op_idle_time(n->t, op, payload));
}

static void op_start(ics_an_net *n, ics_fluid_op *op, const int *srcs, const int *dsts,
                     ics_net_done_fn done, void *ctx, uint64_t tag)
{
    g_assert(op->nlegs[0] >= 1 && op->nlegs[1] >= 1);
    uint64_t delivered = op->bytes * (uint64_t)op->nlegs[1];
    if (op->bytes == 0) {
        done_now(n, 0, done, ctx, tag);
        return;
    }
    for (int s = 0; s < 2; s++) {
        op->legs[s] = g_new(ics_route_path, op->nlegs[s]);
        for (int i = 0; i < op->nlegs[s]; i++) {
            ics_fluid_leg_to_switch(n->t, s == 0 ? srcs[i] : dsts[i], op->sw, &op->legs[s][i]);
            if (s == 1)
                ics_fluid_path_reverse(n->t, &op->legs[s][i]);
        }
    }
    ics_an_xfer *x = xfer_new(n, 1, done, ctx, tag);
    x->delivered = delivered;
    x->flows[0].x = x;
    op_init_flow(n, op, &x->flows[0]);
    flow_start(n, &x->flows[0]);
    g_free(op->legs[0]);
    g_free(op->legs[1]);
}

static void an_multicast(ics_net *net, int src, int sw, const int *dsts, int ndst, uint64_t bytes,
                         ics_net_done_fn done, void *ctx, uint64_t tag)
{
    ics_fluid_op op = {.sw = sw, .nlegs = {1, ndst}, .bytes = bytes};
    op_start((ics_an_net *)net, &op, &src, dsts, done, ctx, tag);
}

static void an_reduce(ics_net *net, const int *srcs, int nsrc, int sw, const int *dsts, int ndst,
                      uint64_t bytes, ics_net_done_fn done, void *ctx, uint64_t tag)
{
    ics_an_net *n = (ics_an_net *)net;
    ics_fluid_op op = {.sw = sw, .nlegs = {nsrc, ndst}, .bytes = bytes};
    op.reduce_bw = ics_net_reduce_bw(n->t, sw);
    if (op.reduce_bw == 0)
        g_error("analytic: reduce on %s, which cannot reduce", ics_topo_dev_label(n->t, sw));
    op_start(n, &op, srcs, dsts, done, ctx, tag);
}

/* ---- streams ------------------------------------------------------------------------------- */

/* A resource several of a stream's legs cross becomes one use carrying their loads summed (and
 * their bytes): the fair share charges it the same, and a stream of all of a rank's sends to
 * 2,000 peers crosses its own NIC 2,000 times, where every use costs at every share computation.
 * First appearances keep their order. n->merge_at (per resource, -1 when not in the flow being
 * merged) is allocated on the first stream. */
static void stream_merge_uses(ics_an_net *n, ics_an_flow *f)
{
    if (!n->merge_at) {
        n->merge_at = g_new(int, MAX(n->nres, 1));
        for (int r = 0; r < n->nres; r++)
            n->merge_at[r] = -1;
    }
    int k = 0;
    for (int u = 0; u < f->n_use; u++) {
        int r = f->use[u].res, at = n->merge_at[r];
        if (at >= 0) {
            f->use[at].coef += f->use[u].coef;
            f->use[at].bytes += f->use[u].bytes;
            continue;
        }
        n->merge_at[r] = k;
        f->use[k++] = f->use[u];
    }
    for (int u = 0; u < k; u++)
        n->merge_at[f->use[u].res] = -1;
    f->n_use = k;
    f->use = g_renew(ics_an_use, f->use, MAX(k, 1)); /* 2,000 legs' hops: give back the rest */
}

/* A stream is one coupled flow: its unit of progress is the largest part's bytes B, and a part
 * of b bytes moves b / B of it, so every leg finishes together. The uncontended rate is the
 * slowest part's packet rate scaled to B; the idle time, that of the slowest part alone. */
static void stream_init_flow(ics_an_net *n, const ics_fluid_part *parts, int np, ics_an_flow *f)
{
    int hops = 0;
    uint64_t big = 0;
    for (int i = 0; i < np; i++) {
        hops += parts[i].path.n_hops;
        big = MAX(big, parts[i].bytes);
    }
    f->use = g_new(ics_an_use, hops);
    f->bytes = big;
    long double r0 = INFINITY;
    ics_time total = 0;
    for (int i = 0; i < np; i++) {
        const ics_fluid_part *q = &parts[i];
        long double share = (long double)q->bytes / (long double)big;
        int first = f->n_use;
        ics_time max_ser = flow_add_path(n, f, &q->path, q->payload);
        for (int u = first; u < f->n_use; u++) {
            f->use[u].bytes = q->bytes;
            f->use[u].coef *= share;
        }
        r0 = MIN(r0, (long double)q->payload / (long double)max_ser / share);
        total = MAX(total, ics_net_idle_path_time(n->t, &q->path, q->bytes, q->payload));
    }
    stream_merge_uses(n, f);
    long double w = MIN(ceill((long double)big / r0), (long double)total);
    f->r0 = r0;
    f->work = w;
    f->offset_ps = total - (ics_time)w;
}

static void an_stream(ics_net *net, const ics_net_leg *legs, int nlegs, ics_net_done_fn done,
                      void *ctx, uint64_t tag)
{
    ics_an_net *n = (ics_an_net *)net;
    /* a part is ~150 bytes (its path's hops inline): an all-to-all's stream of 2,000 legs grew
     * its array a dozen times over, a tenth of the run in copies */
    GArray *parts =
        g_array_sized_new(FALSE, FALSE, sizeof(ics_fluid_part), (guint)MAX(nlegs, 0) + 1);
    uint64_t delivered = 0;
    for (int i = 0; i < nlegs; i++) {
        const ics_net_leg *l = &legs[i];
        if (l->src == l->dst || l->bytes == 0)
            continue;
        ics_fluid_route_parts(n->t, n->params.packet_bytes, l->src, l->dst, l->flow_hash, l->bytes,
                              parts);
        delivered += l->bytes;
    }
    if (parts->len == 0) {
        done_now(n, 0, done, ctx, tag);
    } else {
        ics_an_xfer *x = xfer_new(n, 1, done, ctx, tag);
        x->delivered = delivered;
        x->flows[0].x = x;
        stream_init_flow(n, (const ics_fluid_part *)(void *)parts->data, (int)parts->len,
                         &x->flows[0]);
        flow_start(n, &x->flows[0]);
    }
    g_array_free(parts, TRUE);
}

/* ---- the backend --------------------------------------------------------------------------- */

static ics_net *an_create(const ics_topo *t, ics_engine *e, const ics_net_params *p)
{
    ics_an_net *n = g_new0(ics_an_net, 1);
    n->base.ops = &ics_net_analytic_ops;
    n->t = t;
    n->e = e;
    n->params = *p;
    n->nchans = ics_topo_nchans(t);
    n->nres = n->nchans + ics_topo_ndevs(t);
    n->cap = g_new0(long double, n->nres);
    for (int c = 0; c < n->nchans; c++)
        n->cap[c] = (long double)ics_topo_chan_get(t, c)->bw_bytes_per_s / ICS_PS_PER_S;
    for (int d = 0; d < ics_topo_ndevs(t); d++)
        n->cap[n->nchans + d] = (long double)ics_net_reduce_bw(t, d) / ICS_PS_PER_S;
    n->chan_bytes = g_new0(uint64_t, n->nchans);
    n->routes = ics_net_routes_new(t);
    n->active = g_ptr_array_new();
    n->res = g_new(ics_an_res, n->nres);
    n->stamp = g_new0(uint32_t, n->nres);
    n->touched = g_array_new(FALSE, FALSE, sizeof(int));
    n->hid_free = g_array_new(FALSE, FALSE, sizeof(int));
    n->by_r0 = g_array_new(FALSE, FALSE, sizeof(ics_an_cap));
    n->caps_tmp = g_array_new(FALSE, FALSE, sizeof(ics_an_cap));
    n->on = g_new0(GArray *, n->nres);
    n->busy = g_array_new(FALSE, FALSE, sizeof(int));
    n->busy_pos = g_new(int, n->nres);
    for (int r = 0; r < n->nres; r++)
        n->busy_pos[r] = -1;
    n->demand = g_new0(long double, n->nres);
    n->dirty = g_ptr_array_new();
    n->dirty_res = g_array_new(FALSE, FALSE, sizeof(int));
    n->set = g_ptr_array_new();
    n->calm = g_new0(uint32_t, n->nres);
    n->dom_by = g_new(int, n->nres);
    n->dom_tries = g_new0(uint8_t, n->nres);
    for (int r = 0; r < n->nres; r++)
        n->dom_by[r] = -1;
    return (ics_net *)n;
}

/* Cancels this backend's pending events (the engine must still exist) and frees it all. */
static void an_destroy(ics_net *net)
{
    ics_an_net *n = (ics_an_net *)net;
    ics_engine_cancel(n->e, n->share_ev);
    while (n->live) {
        ics_an_xfer *x = n->live;
        ics_engine_cancel(n->e, x->ev);
        for (int i = 0; i < x->n_flows; i++)
            ics_engine_cancel(n->e, x->flows[i].ev);
        xfer_free(n, x);
    }
    g_free(n->cap);
    g_free(n->chan_bytes);
    g_ptr_array_free(n->active, TRUE);
    g_free(n->res);
    g_free(n->stamp);
    g_array_free(n->touched, TRUE);
    g_free(n->frozen);
    g_free(n->slots);
    g_free(n->slot_of);
    g_array_free(n->hid_free, TRUE);
    g_array_free(n->busy, TRUE);
    g_free(n->busy_pos);
    g_free(n->heap);
    g_array_free(n->by_r0, TRUE);
    g_array_free(n->caps_tmp, TRUE);
    for (int r = 0; r < n->nres; r++)
        if (n->on[r])
            g_array_free(n->on[r], TRUE);
    g_free(n->on);
    g_free(n->demand);
    g_ptr_array_free(n->dirty, TRUE);
    g_array_free(n->dirty_res, TRUE);
    g_ptr_array_free(n->set, TRUE);
    g_free(n->calm);
    g_free(n->dom_by);
    g_free(n->dom_tries);
    g_free(n->merge_at);
    ics_net_routes_free(n->routes);
    g_free(n);
}

static void an_stats(const ics_net *net, ics_net_stats *out)
{
    *out = ((const ics_an_net *)net)->stats;
}

static uint64_t an_chan_bytes(const ics_net *net, int chan)
{
    const ics_an_net *n = (const ics_an_net *)net;
    g_assert(chan >= 0 && chan < n->nchans);
    return n->chan_bytes[chan];
}

const ics_net_ops ics_net_analytic_ops = {
    .name = "analytic",
    .transfer_bytes = 1536,
    .stream_pair_bytes = 384,
    .create = an_create,
    .destroy = an_destroy,
    .send = an_send,
    .multicast = an_multicast,
    .reduce = an_reduce,
    .stream = an_stream,
    .stats = an_stats,
    .chan_bytes = an_chan_bytes,
};
