/* The flow backend: the analytic backend's fluid flows (net_fluid.h), with the bandwidth shared
 * by SimGrid 3.32 (net_flow_sg.h) instead of icsim's own max-min solver: the field's validated
 * flow-level simulator, on exactly icsim's routes.
 *
 * Model. Every transfer becomes the same flows as on the analytic backend, each a fixed part
 * (latencies, pipeline fill, the last packet) and a fluid part, delivered offset_ps after its
 * fluid part ends. The fluid part runs in SimGrid: the flow's paths that carry the same bytes
 * (a send's path; all legs of a multicast or reduce; the equal legs of a stream) are one
 * SimGrid communication whose route is all their resources, so they move at one rate, as the
 * analytic backend's coupled flow does.
 *   - Links carry payload: a channel's capacity is its bandwidth times the payload share of a
 *     full packet of its standard (payload / wire bytes); a switch's reduction unit has its
 *     reduction throughput in input bytes, and each of a reduce's source legs crosses it, so a
 *     reduce of n sources loads it n times its rate (as the packet backend charges it).
 *   - SimGrid charges a link the same for each appearance in a communication's route (its
 *     CM02 model has no per-path weight): that is exact for paths of equal bytes, which is why
 *     paths of different bytes (a stream's unequal legs, a striped route's parts) are separate
 *     communications. Alone, each lasts its bytes at its rate, the slowest exactly the flow's
 *     fluid time; under contention they are shared separately, where the analytic backend
 *     holds all of a stream's legs to one rate: the one place the two models differ (a group
 *     longer than group_max_links is split the same way, at path boundaries).
 *   - So a flow alone on its paths is delivered at start + ics_net_idle_path_time, as on the
 *     other backends, to within a picosecond of rounding between SimGrid's seconds and icsim's
 *     picoseconds; the tests compare the backends on contended cases and on collectives.
 *   - Where the caller allows it (params.merge_planes: no NVLS op will come), a GPU's NVLinks to
 *     the switches of a symmetric NVSwitch domain go to SimGrid as one link each way, and a
 *     transfer's paths over them, one per plane, as one path (net_planes.c, sg_paths): the same
 *     shares inside a domain (/net/planes/exact), 8 links per GPU hop down to 2 on a DGX H100.
 *     A send inside a domain is then one flow, not one per plane. Across nodes a stream's legs
 *     inside the domains join the byte count of its legs between nodes, so its groups differ,
 *     and times move by up to 0.3% (/net/planes/across-nodes).
 *
 * Clocks. SimGrid's clock is per process and never goes back; icsim's is per engine. Each network
 * keeps base_s, the SimGrid time of its icsim time 0, re-anchored whenever none of its transfers
 * is moving (so idle icsim time costs SimGrid nothing), and registers itself as its engine's
 * co-simulator (ics_engine_set_cosim): before each icsim event, SimGrid runs up to that event or
 * to its own first completion, which becomes an icsim event. A network created while another
 * is alive (a collective simulated inside a replay's step) suspends the outer one's transfers
 * and, when it is freed, resumes them and shifts the outer base by the SimGrid time it used.
 *
 * Costs. SimGrid's lazy LMM re-solves, at each instant where a communication completes, the
 * part of the system connected to it through shared links: on a large collective that is every
 * communication under way, so a run costs (completion instants) x (communications in flight).
 * Few communications per flow (one per group, not per leg) keep both down, and so do fewer links
 * in each: a chain of channels in series goes to SimGrid once (net_series.c). (SimGrid's own
 * host-to-host Comms cost more: each is unlisted from a list of all of them at completion, a
 * linear walk that was 93% of a 1024-GPU sweep; net_flow_sg.cpp starts two-host executions
 * instead, which join no list.)
 * Memory: SimGrid's links, one per channel and device (~0.6 KiB each), kept for the process;
 * per flow under way, a SimGrid communication per group (of at most group_max_links links).
 * params: packet_bytes is honoured; the packet-only parameters are ignored; adaptive_routing is
 * not implemented (routes follow the flow hash). */
#include "net/net.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "net/net_flow_sg.h"
#include "net/net_fluid.h"
#include "net/net_planes.h"
#include "net/net_series.h"

extern const ics_net_ops ics_net_flow_ops;

/* SimGrid units per payload byte: SimGrid sizes are whole numbers; this keeps the rounding of a
 * communication's size far below a picosecond of its time. */
#define SG_UNIT 4096.0

typedef struct fl_net fl_net;
typedef struct fl_xfer fl_xfer;
typedef struct fl_flow fl_flow;

/* A path of a flow: its resources (a reduce's source legs end at the switch's reduction unit),
 * and its payload, for the channels' accounting. */
typedef struct {
    int *res; /* n of them, in the flow's hops */
    int n;
    uint64_t bytes;
} fl_path;

/* One SimGrid communication of a flow: the flow's paths that carry the same bytes. */
typedef struct {
    fl_flow *f;
    ics_sg_comm *c; /* NULL once it completed */
} fl_group;

struct fl_flow {
    fl_xfer *x;
    int ngroups, left; /* communications, and those still moving */
    fl_group *groups;  /* owned */
    int npaths;
    fl_path *paths; /* owned */
    /* owned: every path's resources, back to back (a path's own array of the longest route's
     * size made a 100,000-GPU all-reduce's flows 5x bigger than their routes) */
    int *hops;
    ics_time work_ps, offset_ps;
    ics_event_id ev;      /* delivery */
    fl_flow *prev, *next; /* in n->moving while left > 0 */
};

struct fl_xfer {
    fl_net *net;
    ics_net_done_fn done;
    void *ctx;
    uint64_t tag;
    uint64_t delivered;
    int n_flows, left;
    fl_flow *flows;  /* owned */
    ics_event_id ev; /* completion of a transfer with nothing to move */
    fl_xfer *prev, *next;
};

struct fl_net {
    ics_net_base base;
    const ics_topo *t;
    ics_engine *e;
    ics_net_params params;
    int nchans, nres;
    double *cap;            /* per resource, payload bytes/s (0: none) */
    ics_net_series *series; /* the channel a chain goes to SimGrid as (net_series.h); NULL:
                               every channel as itself (params.every_link) */
    ics_net_planes *planes; /* the channel a GPU's NVLink planes go to SimGrid as
                               (net_planes.h); NULL: each plane as itself */
    uint8_t *bundled;       /* per channel: 1 once it stands for a bundle of planes (its cap
                               and SimGrid rate are the bundle's) */
    uint64_t *chan_bytes;
    double base_s;   /* SimGrid seconds at icsim time 0 */
    double paused_s; /* while an inner network runs: SimGrid time it started */
    int nmoving;
    uint64_t fluid_ends; /* flows whose fluid part ended, ever */
    fl_flow *moving;
    fl_xfer *live;
    fl_net *outer; /* the network alive when this one was created */
    ics_net_stats stats;
};

/* The innermost live network: SimGrid is one per process, so is this (see the header). */
static fl_net *innermost;

/* ---- clocks -------------------------------------------------------------------------------- */

static ics_time to_ps(const fl_net *n, double sg_s)
{
    double ps = nearbyint((sg_s - n->base_s) * 1e12);
    ics_time now = ics_engine_now(n->e);
    if (!(ps > (double)now))
        return now;
    return ps < (double)ICS_TIME_LIMIT ? (ics_time)ps : ICS_TIME_LIMIT;
}

static double to_sg(const fl_net *n, ics_time t)
{
    return n->base_s + (double)t * 1e-12;
}

/* ---- transfers ----------------------------------------------------------------------------- */

static fl_xfer *xfer_new(fl_net *n, int n_flows, ics_net_done_fn done, void *ctx, uint64_t tag)
{
    fl_xfer *x = g_new0(fl_xfer, 1);
    *x = (fl_xfer){
        .net = n, .done = done, .ctx = ctx, .tag = tag, .n_flows = n_flows, .left = n_flows};
    x->flows = g_new0(fl_flow, MAX(n_flows, 1));
    x->next = n->live;
    if (n->live)
        n->live->prev = x;
    n->live = x;
    return x;
}

static void xfer_free(fl_net *n, fl_xfer *x)
{
    if (x->prev)
        x->prev->next = x->next;
    else
        n->live = x->next;
    if (x->next)
        x->next->prev = x->prev;
    for (int i = 0; i < x->n_flows; i++) {
        g_free(x->flows[i].paths);
        g_free(x->flows[i].hops);
        g_free(x->flows[i].groups);
    }
    g_free(x->flows);
    g_free(x);
}

static void xfer_finish(fl_net *n, fl_xfer *x)
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
    fl_xfer *x = ctx;
    xfer_finish(x->net, x);
}

static void done_now(fl_net *n, ics_net_done_fn done, void *ctx, uint64_t tag)
{
    fl_xfer *x = xfer_new(n, 0, done, ctx, tag);
    x->ev = ics_engine_after(n->e, 0, ev_done_now, x, 0);
}

/* ---- flows --------------------------------------------------------------------------------- */

static void ev_deliver(ics_engine *e, void *ctx, uint64_t arg)
{
    (void)e;
    (void)arg;
    fl_flow *f = ctx;
    fl_net *n = f->x->net;
    f->ev = ICS_EVENT_NONE;
    for (int p = 0; p < f->npaths; p++)
        for (int h = 0; h < f->paths[p].n; h++)
            if (f->paths[p].res[h] < n->nchans)
                n->chan_bytes[f->paths[p].res[h]] += f->paths[p].bytes;
    if (--f->x->left == 0)
        xfer_finish(n, f->x);
}

static void moving_unlink(fl_net *n, fl_flow *f)
{
    if (f->prev)
        f->prev->next = f->next;
    else
        n->moving = f->next;
    if (f->next)
        f->next->prev = f->prev;
    f->prev = f->next = NULL;
}

/* The fluid part ended now (SimGrid's clock): delivery after the fixed part. */
static void fluid_end(fl_net *n, fl_flow *f, ics_time at)
{
    f->ev = ics_engine_at(n->e, at, ev_deliver, f, 0); /* past the horizon: the engine notes it */
}

/* SimGrid completed one of a flow's communications; after the last, its fluid part is over. */
static void group_done(void *ctx, void *user)
{
    fl_net *n = ctx;
    fl_group *g = user;
    fl_flow *f = g->f;
    g->c = NULL;
    n->nmoving--;
    if (--f->left > 0)
        return;
    moving_unlink(n, f);
    n->fluid_ends++;
    ics_time end = to_ps(n, ics_sg_clock());
    ics_time at = f->offset_ps >= ICS_TIME_LIMIT - end ? ICS_TIME_LIMIT : end + f->offset_ps;
    fluid_end(n, f, at);
}

/* The longest route a communication gets. Two costs pull apart. SimGrid's LMM looks a new link
 * up among those of the variable it expands (lmm::System::expand), quadratic in the route: a
 * stream over 1024 GPUs (~10,000 links) as one communication spent 40% of its run there. But
 * each communication of a stream completes at its own instant under contention, and each
 * completion re-solves the coupled system: with groups of at most 128 links a 16,384-GPU tree
 * (16 streams of ~280,000 links) completed ~35,000 times and ran 749 s. For a flow of L links in
 * groups of G, expanding costs ~L x G and the completions ~(L / G) x L. Measured on 1024 x 8
 * H100 (512 KiB, Tree LL128: streams of ~140,000 links), G = 128: 139 s, 1024: 24 s, 4096: 15 s,
 * 16384: 24 s. So a flow's groups are at most max(GROUP_MIN_LINKS, L / GROUP_MOST) links: about
 * GROUP_MOST groups of long equal paths (up to about twice as many when a path is long against
 * that bound, and one more per distinct byte count); sends and multicasts stay one group, and a
 * 1024-GPU stream's ~10,000 links are groups of ~160, near the 128 it had. 1024 x 8 H100 139 ->
 * 15 s, 2048 x 8 749 -> 49 s, the 1024-GPU sweep unchanged to the byte. Split at path
 * boundaries, the groups move separately (as unequal groups do). Measured again once SimGrid
 * solved in Full mode (net_flow_sg.cpp), 2048 x 8 H100 at 512 KiB: GROUP_MOST 16: 24.5 s, 64:
 * 17.7 s, 256: 59.2 s; 64 kept. An all-to-all played as streams (collectives.md) is the other
 * shape: 2n streams of a few thousand links, n x L / G communications each ending at its own
 * instant. GROUP_MIN_LINKS 128 -> 1024: a 1 GiB all-to-all on 135 Polaris nodes 36.4 -> 8.0 s,
 * on 256 GPUs of a 2:1 fat-tree 1.24 -> 0.22 s, the same times; the 1024-GPU sweep still equal
 * to the analytic engine's, the 16,384-GPU tree at 512 KiB and 256 MiB unchanged (12 s, 5 s). */
#define GROUP_MIN_LINKS 1024
#define GROUP_MOST      64

static int group_max_links(int total)
{
    return MAX(GROUP_MIN_LINKS, (total + GROUP_MOST - 1) / GROUP_MOST);
}

/* A flow's path as SimGrid gets it (route_to_sg): resources res[0..n), the bytes it carries,
 * the length its groups are cut by, and the first of the flow's paths it stands for. */
typedef struct {
    const int *res;
    int n, span, index;
    uint64_t bytes;
} sg_path;

/* By bytes, then by position: a flow's groups in a deterministic order. */
static int by_bytes(const void *a, const void *b)
{
    const sg_path *x = a, *y = b;
    if (x->bytes != y->bytes)
        return (x->bytes > y->bytes) - (x->bytes < y->bytes);
    return (x->index > y->index) - (x->index < y->index);
}

static int by_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

/* The rate a group's paths move their bytes at alone: the least capacity of their resources,
 * a reduction unit's divided among the sources crossing it. A channel two paths cross is not
 * divided (the analytic backend's r0 does not see it either): SimGrid's sharing then slows
 * the flow below that rate, on both backends, even alone. */
static double group_rate(const fl_net *n, const int *res, int len)
{
    int *sorted = g_memdup2(res, sizeof(int) * (size_t)len);
    qsort(sorted, (size_t)len, sizeof(int), by_int);
    double rate = INFINITY;
    for (int i = 0, j; i < len; i = j) {
        for (j = i; j < len && sorted[j] == sorted[i]; j++)
            ;
        rate = MIN(rate, n->cap[sorted[i]] / (sorted[i] >= n->nchans ? j - i : 1));
    }
    g_free(sorted);
    return rate;
}

/* A channel's capacity in payload bytes/s: its bandwidth times the payload share of a full
 * packet of its standard. */
static double chan_payload_bw(const ics_topo *t, int c)
{
    const ics_topo_chan *ch = ics_topo_chan_get(t, c);
    uint64_t p = ch->standard ? (uint64_t)ch->standard->max_payload_bytes : 4096;
    return (double)ch->bw_bytes_per_s * (double)p / (double)ics_net_wire_bytes(t, c, p);
}

/* Channel b now stands for its bundle of NVLink planes: its capacity and SimGrid rate become the
 * bundle's, its GPU's links that way at one link's rate (net_planes.c checked that they share
 * one rate per link). */
static void bundle_rate(fl_net *n, int b)
{
    const ics_topo_chan *ch = ics_topo_chan_get(n->t, b);
    n->cap[b] = chan_payload_bw(n->t, b) * ics_net_planes_width(n->planes, b) / ch->width;
    ics_sg_link_rate(b, n->cap[b] * SG_UNIT);
    n->bundled[b] = 1;
}

/* The resource SimGrid gets for resource r of a path: a channel's bundle of planes
 * (net_planes.c), else its chain in series, as the chain's narrowest channel (net_series.c),
 * else r itself. */
static int sg_resource(fl_net *n, int r)
{
    if (r >= n->nchans)
        return r;
    if (n->planes) {
        int b = ics_net_planes_of(n->planes, r);
        if (!n->bundled[b] && ics_net_planes_width(n->planes, b) > 0)
            bundle_rate(n, b);
        if (n->bundled[b])
            return b;
    }
    return n->series ? ics_net_series_of(n->series, r) : r;
}

/* Appends path p's resources to res at k as SimGrid gets them (sg_resource: a chain's channels
 * are consecutive in a path, and so are a bundle's, one per path). */
static int route_to_sg(fl_net *n, const fl_path *p, int *res, int k)
{
    int last = -1;
    for (int h = 0; h < p->n; h++) {
        int r = sg_resource(n, p->res[h]);
        if (r != last)
            res[k++] = r;
        last = r;
    }
    return k;
}

/* Whether sg path p may join sg path q: the same route over bundles of planes only (net_planes.c),
 * from a different path of the flow. Such paths are the planes of one transfer inside a domain:
 * each alone lasts its bytes over its plane's capacity, the same for all, so together they last
 * their bytes summed over the bundle's, and the flow's fluid time (their slowest) still holds.
 * Two copies of one path (a send's queue pairs), or planes that go on to share a link (a PXN
 * relay's NIC), were each timed as if alone on it: they stay apart, and SimGrid shares that
 * link among them. */
static bool merges(const fl_net *n, const fl_flow *f, const sg_path *q, const sg_path *p)
{
    if (q->n != p->n || memcmp(q->res, p->res, sizeof(int) * (size_t)p->n) != 0)
        return false;
    for (int h = 0; h < p->n; h++)
        if (p->res[h] >= n->nchans || !n->bundled[p->res[h]])
            return false;
    const fl_path *a = &f->paths[q->index], *b = &f->paths[p->index];
    return a->n != b->n || memcmp(a->res, b->res, sizeof(int) * (size_t)a->n) != 0;
}

/* f's paths as SimGrid gets them, into out (res: room for all their hops); their count. Where
 * planes are merged, paths that merge (see merges) are one, carrying their bytes summed, and
 * groups are cut by the paths' lengths as SimGrid gets them; otherwise one per path, cut by its
 * full length, so that the groups are the same as with every channel (params.every_link). A
 * route's paths come one after another (ics_fluid_route_parts), so a path is only compared with
 * the one before it: a sort to find equal routes anywhere was a tenth of a 16,384-GPU call. */
static int sg_paths(fl_net *n, const fl_flow *f, int *res, sg_path *out)
{
    for (int p = 0, k = 0; p < f->npaths; p++) {
        int end = route_to_sg(n, &f->paths[p], res, k);
        out[p] = (sg_path){.res = res + k,
                           .n = end - k,
                           .span = f->paths[p].n,
                           .index = p,
                           .bytes = f->paths[p].bytes};
        k = end;
    }
    if (!n->planes)
        return f->npaths;
    int m = 0;
    for (int p = 0; p < f->npaths; p++) {
        if (m > 0 && merges(n, f, &out[m - 1], &out[p])) {
            out[m - 1].bytes += out[p].bytes; /* the first keeps its (least) position */
            continue;
        }
        out[m] = out[p];
        out[m++].span = out[p].n;
    }
    return m;
}

/* Starts a flow whose paths, work and offset are set. Its paths that carry the same bytes are
 * one SimGrid communication (SimGrid charges a link the same for each appearance in a route,
 * so only paths of equal weight can share one), over all their resources, of their payload:
 * all move at one rate, as the analytic backend's coupled flow does. Groups of different bytes
 * are separate communications; alone, the slowest lasts exactly the flow's fluid time (sizes
 * scaled by work / its time, which is 1 but for the rounding of ics_fluid_ps).
 * Each group's priority is its bytes over the largest group's (to within 2^-16 of it:
 * ics_sg_priority rounds it so that SimGrid's solve stays fast). Where groups meet (a relayed
 * send's legs, one per NVSwitch, meet at the relay's NIC) SimGrid then shares the link in
 * proportion to their bytes, as the analytic backend's coupled flow loads it (a leg of b bytes
 * at b / B of the flow's rate), so they finish together; at priority 1 each took an equal
 * share, the larger legs finished last, and a 1024-GPU tree all-reduce came out 8.5% slower
 * than on the analytic backend. A flow whose groups share no link runs alone as before, at
 * its links' capacity; the groups of a relayed send alone share the relay's NIC in proportion
 * to their bytes, so they still end together at the flow's fluid time. */
static void flow_start(fl_net *n, fl_flow *f)
{
    f->ev = ICS_EVENT_NONE;
    ics_time now = ics_engine_now(n->e);
    if (f->work_ps == 0) {
        ics_time at = f->offset_ps >= ICS_TIME_LIMIT - now ? ICS_TIME_LIMIT : now + f->offset_ps;
        fluid_end(n, f, at);
        return;
    }
    if (n->nmoving == 0) /* idle: SimGrid's now is this network's now */
        n->base_s = ics_sg_clock() - (double)now * 1e-12;
    int total = 0;
    for (int p = 0; p < f->npaths; p++)
        total += f->paths[p].n;
    int *mapped = g_new(int, MAX(total, 1));
    sg_path *sp = g_new(sg_path, f->npaths);
    int nsp = sg_paths(n, f, mapped, sp), spans = 0;
    qsort(sp, (size_t)nsp, sizeof(*sp), by_bytes);
    for (int p = 0; p < nsp; p++)
        spans += sp[p].span;
    int *res = g_new(int, MAX(total, 1)), *start = g_new(int, nsp + 1),
        most = group_max_links(spans);
    double *bytes = g_new(double, nsp), *rate = g_new(double, nsp), slowest = 0;
    f->ngroups = 0;
    for (int p = 0, k = 0; p < nsp; f->ngroups++) { /* the groups' routes */
        int g = f->ngroups, span = 0;               /* span: the group's spans (see sg_paths) */
        start[g] = k;
        bytes[g] = (double)sp[p].bytes;
        for (uint64_t b = sp[p].bytes;
             p < nsp && sp[p].bytes == b && (span == 0 || span + sp[p].span <= most);
             span += sp[p].span, p++) {
            memcpy(res + k, sp[p].res, sizeof(int) * (size_t)sp[p].n);
            k += sp[p].n;
        }
        start[g + 1] = k;
        rate[g] = group_rate(n, res + start[g], k - start[g]);
        slowest = MAX(slowest, bytes[g] / rate[g]);
    }
    double scale = (double)f->work_ps * 1e-12 / slowest, most_bytes = 0;
    for (int g = 0; g < f->ngroups; g++)
        most_bytes = MAX(most_bytes, bytes[g]);
    f->groups = g_new0(fl_group, f->ngroups);
    f->left = f->ngroups;
    for (int g = 0; g < f->ngroups; g++) {
        double size = nearbyint(bytes[g] * scale * SG_UNIT);
        f->groups[g].f = f;
        f->groups[g].c = ics_sg_start(res + start[g], start[g + 1] - start[g], MAX(size, 1.0),
                                      bytes[g] / most_bytes, &f->groups[g]);
    }
    n->nmoving += f->ngroups;
    f->next = n->moving;
    if (n->moving)
        n->moving->prev = f;
    n->moving = f;
    g_free(mapped);
    g_free(sp);
    g_free(res);
    g_free(start);
    g_free(bytes);
    g_free(rate);
}

/* Fills *out from route r, its resources at *hops, which it advances past them and `spare`
 * more (room for resources the caller appends). */
static void path_from_route(const ics_route_path *r, uint64_t bytes, fl_path *out, int **hops,
                            int spare)
{
    *out = (fl_path){.res = *hops, .n = r->n_hops, .bytes = bytes};
    for (int h = 0; h < r->n_hops; h++)
        out->res[h] = r->chans[h];
    *hops += r->n_hops + spare;
}

static ics_time max_ser_of(const fl_net *n, const ics_route_path *p, uint32_t payload)
{
    ics_time m = 0;
    for (int h = 0; h < p->n_hops; h++)
        m = MAX(m, ics_net_ser(n->t, p->chans[h], payload));
    return m;
}

/* work and offset from the fluid time w and the idle time total, as the analytic backend
 * splits them (w never beyond total). */
static void flow_set_time(fl_flow *f, ics_time w, ics_time total)
{
    f->work_ps = MIN(w, total);
    f->offset_ps = total - f->work_ps;
}

/* ---- send ---------------------------------------------------------------------------------- */

/* One flow of parts (ics_fluid_part) that move at one rate, as a stream's legs do: its fluid time
 * is its slowest part's, and so is its idle time. */
static void parts_flow(fl_net *n, const GArray *parts, uint64_t delivered, ics_net_done_fn done,
                       void *ctx, uint64_t tag)
{
    fl_xfer *x = xfer_new(n, 1, done, ctx, tag);
    x->delivered = delivered;
    fl_flow *f = &x->flows[0];
    f->x = x;
    f->npaths = (int)parts->len;
    f->paths = g_new(fl_path, f->npaths);
    int nhops = 0;
    for (int i = 0; i < f->npaths; i++)
        nhops += g_array_index(parts, ics_fluid_part, i).path.n_hops;
    f->hops = g_new(int, MAX(nhops, 1));
    int *hops = f->hops;
    ics_time w = 0, total = 0;
    for (int i = 0; i < f->npaths; i++) {
        const ics_fluid_part *q = &g_array_index(parts, ics_fluid_part, i);
        path_from_route(&q->path, q->bytes, &f->paths[i], &hops, 0);
        w = MAX(w, ics_fluid_ps(q->bytes, q->payload, max_ser_of(n, &q->path, q->payload)));
        total = MAX(total, ics_net_idle_path_time(n->t, &q->path, q->bytes, q->payload));
    }
    flow_set_time(f, w, total);
    flow_start(n, f);
}

/* Whether every hop of every part goes to SimGrid as a bundle of planes (a send between two GPUs
 * of a symmetric NVLink domain, where planes are merged). */
static bool over_bundles(fl_net *n, const GArray *parts)
{
    if (!n->planes)
        return false;
    for (guint i = 0; i < parts->len; i++) {
        const ics_route_path *r = &g_array_index(parts, ics_fluid_part, i).path;
        for (int h = 0; h < r->n_hops; h++)
            if (!n->bundled[sg_resource(n, r->chans[h])])
                return false;
    }
    return true;
}

/* A send's parts (the paths of its route: one per NVLink plane, per queue pair) are flows of
 * their own, each delivered at its own time. Between two GPUs of a domain whose planes are
 * merged they are one flow instead, whose paths become one (sg_paths): as flows of their own,
 * each part alone would take the whole bundle. */
static void fl_send(ics_net *net, const ics_net_xfer *xf)
{
    fl_net *n = (fl_net *)net;
    if (xf->src == xf->dst || xf->bytes == 0) {
        done_now(n, xf->done, xf->ctx, xf->tag);
        return;
    }
    GArray *parts = g_array_new(FALSE, FALSE, sizeof(ics_fluid_part));
    ics_fluid_route_parts(n->t, n->params.packet_bytes, xf->src, xf->dst, xf->flow_hash, xf->bytes,
                          parts);
    if (parts->len > 1 && over_bundles(n, parts)) {
        parts_flow(n, parts, xf->bytes, xf->done, xf->ctx, xf->tag);
        g_array_free(parts, TRUE);
        return;
    }
    fl_xfer *x = xfer_new(n, (int)parts->len, xf->done, xf->ctx, xf->tag);
    x->delivered = xf->bytes;
    for (guint i = 0; i < parts->len; i++) {
        const ics_fluid_part *q = &g_array_index(parts, ics_fluid_part, i);
        fl_flow *f = &x->flows[i];
        f->x = x;
        f->npaths = 1;
        f->paths = g_new(fl_path, 1);
        f->hops = g_new(int, MAX(q->path.n_hops, 1));
        int *hops = f->hops;
        path_from_route(&q->path, q->bytes, &f->paths[0], &hops, 0);
        ics_time w = ics_fluid_ps(q->bytes, q->payload, max_ser_of(n, &q->path, q->payload));
        flow_set_time(f, w, ics_net_idle_path_time(n->t, &q->path, q->bytes, q->payload));
    }
    for (guint i = 0; i < parts->len; i++)
        flow_start(n, &x->flows[i]);
    g_array_free(parts, TRUE);
}

/* ---- multicast and reduce ------------------------------------------------------------------ */

static void op_start(fl_net *n, ics_fluid_op *op, const int *srcs, const int *dsts,
                     ics_net_done_fn done, void *ctx, uint64_t tag)
{
    g_assert(op->nlegs[0] >= 1 && op->nlegs[1] >= 1);
    if (n->planes && ics_net_planes_merges_at(n->planes, op->sw))
        g_error("flow: a reduction or multicast at %s on a network that merges its NVLink planes "
                "(ics_net_params.merge_planes promises none)",
                ics_topo_dev_label(n->t, op->sw));
    if (op->bytes == 0) {
        done_now(n, done, ctx, tag);
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
    fl_xfer *x = xfer_new(n, 1, done, ctx, tag);
    x->delivered = op->bytes * (uint64_t)op->nlegs[1];
    fl_flow *f = &x->flows[0];
    f->x = x;
    f->npaths = op->nlegs[0] + op->nlegs[1];
    f->paths = g_new(fl_path, f->npaths);
    int nhops = op->nlegs[0]; /* room for the reduction unit on each source leg */
    for (int s = 0; s < 2; s++)
        for (int i = 0; i < op->nlegs[s]; i++)
            nhops += op->legs[s][i].n_hops;
    f->hops = g_new(int, nhops);
    int *hops = f->hops;
    uint32_t payload = ics_net_packet_payload(n->t, &op->legs[0][0], n->params.packet_bytes);
    ics_time max_ser = 0;
    int k = 0;
    for (int s = 0; s < 2; s++)
        for (int i = 0; i < op->nlegs[s]; i++) {
            fl_path *p = &f->paths[k++];
            path_from_route(&op->legs[s][i], op->bytes, p, &hops, s == 0);
            max_ser = MAX(max_ser, max_ser_of(n, &op->legs[s][i], payload));
            if (s == 0 && op->reduce_bw) /* every source crosses the reduction unit */
                p->res[p->n++] = n->nchans + op->sw;
        }
    if (op->reduce_bw)
        max_ser = MAX(max_ser, ics_time_serialize((uint64_t)op->nlegs[0] * payload, op->reduce_bw));
    flow_set_time(f, ics_fluid_ps(op->bytes, payload, max_ser),
                  ics_fluid_op_idle_time(n->t, op, payload));
    flow_start(n, f);
    g_free(op->legs[0]);
    g_free(op->legs[1]);
}

static void fl_multicast(ics_net *net, int src, int sw, const int *dsts, int ndst, uint64_t bytes,
                         ics_net_done_fn done, void *ctx, uint64_t tag)
{
    ics_fluid_op op = {.sw = sw, .nlegs = {1, ndst}, .bytes = bytes};
    op_start((fl_net *)net, &op, &src, dsts, done, ctx, tag);
}

static void fl_reduce(ics_net *net, const int *srcs, int nsrc, int sw, const int *dsts, int ndst,
                      uint64_t bytes, ics_net_done_fn done, void *ctx, uint64_t tag)
{
    fl_net *n = (fl_net *)net;
    ics_fluid_op op = {.sw = sw, .nlegs = {nsrc, ndst}, .bytes = bytes};
    op.reduce_bw = ics_net_reduce_bw(n->t, sw);
    if (op.reduce_bw == 0)
        g_error("flow: reduce on %s, which cannot reduce", ics_topo_dev_label(n->t, sw));
    op_start(n, &op, srcs, dsts, done, ctx, tag);
}

/* ---- streams ------------------------------------------------------------------------------- */

/* A stream's legs end together when alone: the flow's fluid time is its slowest part's, and
 * each part's communication is sized to last exactly that long (flow_start). */
static void fl_stream(ics_net *net, const ics_net_leg *legs, int nlegs, ics_net_done_fn done,
                      void *ctx, uint64_t tag)
{
    fl_net *n = (fl_net *)net;
    GArray *parts = g_array_new(FALSE, FALSE, sizeof(ics_fluid_part));
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
        done_now(n, done, ctx, tag);
        g_array_free(parts, TRUE);
        return;
    }
    parts_flow(n, parts, delivered, done, ctx, tag);
    g_array_free(parts, TRUE);
}

/* ---- co-simulation ------------------------------------------------------------------------- */

/* The engine's co-simulator (ics_engine_set_cosim): SimGrid catches up to `limit`, stopping at
 * its first completions, which become delivery events. */
static void fl_cosim(void *ctx, ics_engine *e, ics_time limit)
{
    (void)e;
    fl_net *n = ctx;
    if (n->nmoving == 0)
        return;
    double until = to_sg(n, limit);
    if (ics_sg_clock() >= until - 0.5e-12)
        return; /* already there: nothing of positive size can complete before */
    /* until a flow's fluid part ends (a completion of one of several legs schedules nothing) or
     * SimGrid reaches `until` (it may stop a rounding error short: a few tries) */
    uint64_t ends = n->fluid_ends;
    int idle = 0;
    for (;;) {
        int k = ics_sg_run_until(until, group_done, n);
        if (n->fluid_ends != ends || n->nmoving == 0)
            return;
        if (k == 0 && (ics_sg_clock() >= until - 0.5e-12 || ++idle == 4))
            return;
    }
}

static void moving_each(fl_net *n, void (*fn)(ics_sg_comm *c))
{
    for (fl_flow *f = n->moving; f; f = f->next)
        for (int g = 0; g < f->ngroups; g++)
            if (f->groups[g].c)
                fn(f->groups[g].c);
}

/* ---- the backend --------------------------------------------------------------------------- */

/* SimGrid's memory per link (an s4u::Link, its implementation, its LMM constraint and name),
 * measured: 1,000,000 links took 560 MiB over an empty engine; rounded up. */
#define SG_LINK_BYTES 640

static bool fl_ready(const ics_topo *t, GError **err)
{
    int links = ics_topo_nchans(t) + ics_topo_ndevs(t);
    char *what = g_strdup_printf("the flow engine's SimGrid platform (%d links x %d B)", links,
                                 SG_LINK_BYTES);
    bool fits = ics_budget_check((uint64_t)links * SG_LINK_BYTES, what, err);
    g_free(what);
    if (!fits)
        return false;
    GError *sg = NULL;
    if (ics_sg_acquire(links, &sg))
        return true;
    g_set_error(err, ICS_ERROR, ICS_ERROR_LIMIT, "%s", sg->message);
    g_error_free(sg);
    return false;
}

static ics_net *fl_create(const ics_topo *t, ics_engine *e, const ics_net_params *p)
{
    GError *err = NULL;
    if (!fl_ready(t, &err))
        g_error("flow: %s (callers check ics_net_backend_ready first)", err->message);
    fl_net *n = g_new0(fl_net, 1);
    n->base.ops = &ics_net_flow_ops;
    n->t = t;
    n->e = e;
    n->params = *p;
    n->nchans = ics_topo_nchans(t);
    n->nres = n->nchans + ics_topo_ndevs(t);
    n->cap = g_new0(double, n->nres);
    for (int c = 0; c < n->nchans; c++)
        n->cap[c] = chan_payload_bw(t, c);
    for (int d = 0; d < ics_topo_ndevs(t); d++)
        n->cap[n->nchans + d] = (double)ics_net_reduce_bw(t, d);
    n->series = p->every_link ? NULL : ics_net_series_new(t, n->cap);
    if (p->merge_planes && !p->every_link) {
        n->planes = ics_net_planes_new(t);
        n->bundled = g_new0(uint8_t, MAX(n->nchans, 1));
    }
    n->chan_bytes = g_new0(uint64_t, n->nchans);
    n->outer = innermost;
    if (n->outer) {
        n->outer->paused_s = ics_sg_clock();
        moving_each(n->outer, ics_sg_suspend);
    }
    innermost = n;
    /* the pool's links are shared by every network of the process: rate them for this one
     * (and again for the outer one when this one is freed) */
    for (int r = 0; r < n->nres; r++)
        ics_sg_link_rate(r, (n->cap[r] > 0 ? n->cap[r] : 1.0) * SG_UNIT);
    ics_engine_set_cosim(e, fl_cosim, n);
    return (ics_net *)n;
}

static void fl_destroy(ics_net *net)
{
    fl_net *n = (fl_net *)net;
    g_assert(innermost == n); /* networks nest: the innermost goes first */
    moving_each(n, ics_sg_cancel);
    while (n->live) {
        fl_xfer *x = n->live;
        ics_engine_cancel(n->e, x->ev);
        for (int i = 0; i < x->n_flows; i++)
            ics_engine_cancel(n->e, x->flows[i].ev);
        xfer_free(n, x);
    }
    ics_engine_set_cosim(n->e, NULL, NULL);
    innermost = n->outer;
    if (n->outer) {
        fl_net *o = n->outer;
        for (int r = 0; r < o->nres; r++)
            ics_sg_link_rate(r, (o->cap[r] > 0 ? o->cap[r] : 1.0) * SG_UNIT);
        o->base_s += ics_sg_clock() - o->paused_s;
        moving_each(o, ics_sg_resume);
    }
    g_free(n->cap);
    ics_net_series_free(n->series);
    ics_net_planes_free(n->planes);
    g_free(n->bundled);
    g_free(n->chan_bytes);
    g_free(n);
}

static void fl_stats(const ics_net *net, ics_net_stats *out)
{
    *out = ((const fl_net *)net)->stats;
}

static uint64_t fl_chan_bytes(const ics_net *net, int chan)
{
    const fl_net *n = (const fl_net *)net;
    g_assert(chan >= 0 && chan < n->nchans);
    return n->chan_bytes[chan];
}

const ics_net_ops ics_net_flow_ops = {
    .name = "flow",
    .transfer_bytes = 3072,
    .stream_pair_bytes = 1536,
    .ready = fl_ready,
    .create = fl_create,
    .destroy = fl_destroy,
    .send = fl_send,
    .multicast = fl_multicast,
    .reduce = fl_reduce,
    .stream = fl_stream,
    .stats = fl_stats,
    .chan_bytes = fl_chan_bytes,
};
