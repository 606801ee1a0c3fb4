/* The schedule DAG and its player. Invariant: a step starts exactly when its last dependency
 * ends (or at 0 with none), and every step ends exactly once. */
#include "collectives/comm.h"

#include <string.h>

typedef struct {
    ics_step_kind kind;
    int src, dst, sw; /* send: src, dst; reduce: sw */
    int dev0, ndevs;  /* reduce: devices devs[dev0 .. dev0 + ndevs); stream: legs */
    int dst0, ndst;   /* reduce, multicast: destinations devs[dst0 ..); ndst 0: the sources */
    uint64_t bytes, hash;
    ics_time delay_ps;
    ics_time floor_ps; /* the step ends no earlier than this long after it starts */
    ics_time tail_ps;  /* ... and this long after its work is done */
    ics_time start_ps; /* while playing: when it started */
    bool finishing;    /* while playing: floor and tail scheduled */
    int waiting;       /* dependencies not yet ended, while playing */
    int succ0, nsucc;  /* successors: succ[succ0 .. succ0 + nsucc), built before playing */
} step;

struct ics_sched {
    GArray *steps; /* step */
    GArray *devs;  /* int: devices of reduce steps */
    GArray *legs;  /* ics_net_leg: legs of stream steps */
    GArray *edges; /* (from, to) pairs */
    int max_steps; /* 0: unbounded (ics_sched_limit) */
    bool over;     /* a step was refused: past max_steps */
};

ics_sched *ics_sched_new(void)
{
    ics_sched *s = g_new0(ics_sched, 1);
    s->steps = g_array_new(FALSE, TRUE, sizeof(step));
    s->devs = g_array_new(FALSE, FALSE, sizeof(int));
    s->legs = g_array_new(FALSE, FALSE, sizeof(ics_net_leg));
    s->edges = g_array_new(FALSE, FALSE, sizeof(int) * 2);
    return s;
}

void ics_sched_free(ics_sched *s)
{
    if (!s)
        return;
    g_array_free(s->steps, TRUE);
    g_array_free(s->devs, TRUE);
    g_array_free(s->legs, TRUE);
    g_array_free(s->edges, TRUE);
    g_free(s);
}

void ics_sched_set_floor(ics_sched *s, int id, ics_time floor_ps)
{
    g_assert(id >= 0 && id < (int)s->steps->len && floor_ps >= 0);
    g_array_index(s->steps, step, id).floor_ps = floor_ps;
}

void ics_sched_set_tail(ics_sched *s, int id, ics_time tail_ps)
{
    g_assert(id >= 0 && id < (int)s->steps->len && tail_ps >= 0);
    g_array_index(s->steps, step, id).tail_ps = tail_ps;
}

int ics_sched_len(const ics_sched *s)
{
    return (int)s->steps->len;
}

void ics_sched_limit(ics_sched *s, int max_steps)
{
    s->max_steps = MAX(max_steps, 0);
}

bool ics_sched_over(const ics_sched *s)
{
    return s->over;
}

/* Whether s is full: the step about to be added is refused (ics_sched_limit). */
static bool full(ics_sched *s)
{
    if (s->max_steps > 0 && (int)s->steps->len >= s->max_steps)
        s->over = true;
    return s->over;
}

static int add(ics_sched *s, const step *st, const int *deps, int ndeps)
{
    if (full(s))
        return (int)s->steps->len - 1;
    int id = (int)s->steps->len;
    g_array_append_val(s->steps, *st);
    for (int i = 0; i < ndeps; i++) {
        g_assert(deps[i] >= 0 && deps[i] < id);
        int e[2] = {deps[i], id};
        g_array_append_val(s->edges, e);
    }
    return id;
}

int ics_sched_send(ics_sched *s, int src, int dst, uint64_t bytes, uint64_t flow_hash,
                   const int *deps, int ndeps)
{
    step st = {.kind = ICS_STEP_SEND, .src = src, .dst = dst, .bytes = bytes, .hash = flow_hash};
    return add(s, &st, deps, ndeps);
}

int ics_sched_delay(ics_sched *s, ics_time delay_ps, const int *deps, int ndeps)
{
    step st = {.kind = ICS_STEP_DELAY, .delay_ps = delay_ps};
    return add(s, &st, deps, ndeps);
}

int ics_sched_reduce_to(ics_sched *s, const int *srcs, int nsrc, int sw, const int *dsts, int ndst,
                        uint64_t bytes, const int *deps, int ndeps)
{
    if (full(s))
        return (int)s->steps->len - 1;
    step st = {.kind = ICS_STEP_REDUCE,
               .sw = sw,
               .dev0 = (int)s->devs->len,
               .ndevs = nsrc,
               .dst0 = (int)s->devs->len + nsrc,
               .ndst = ndst,
               .bytes = bytes};
    g_array_append_vals(s->devs, srcs, (guint)nsrc);
    if (ndst > 0)
        g_array_append_vals(s->devs, dsts, (guint)ndst);
    return add(s, &st, deps, ndeps);
}

int ics_sched_reduce(ics_sched *s, const int *devs, int ndevs, int sw, uint64_t bytes,
                     const int *deps, int ndeps)
{
    return ics_sched_reduce_to(s, devs, ndevs, sw, NULL, 0, bytes, deps, ndeps); /* dsts = devs */
}

int ics_sched_multicast(ics_sched *s, int src, int sw, const int *dsts, int ndst, uint64_t bytes,
                        const int *deps, int ndeps)
{
    if (full(s))
        return (int)s->steps->len - 1;
    step st = {.kind = ICS_STEP_MULTICAST,
               .src = src,
               .sw = sw,
               .dst0 = (int)s->devs->len,
               .ndst = ndst,
               .bytes = bytes};
    g_array_append_vals(s->devs, dsts, (guint)ndst);
    return add(s, &st, deps, ndeps);
}

static int add_legs(ics_sched *s, ics_step_kind kind, const ics_net_leg *legs, int nlegs,
                    const int *deps, int ndeps)
{
    g_assert(nlegs >= 1);
    if (full(s))
        return (int)s->steps->len - 1;
    step st = {.kind = kind, .dev0 = (int)s->legs->len, .ndevs = nlegs};
    g_array_append_vals(s->legs, legs, (guint)nlegs);
    return add(s, &st, deps, ndeps);
}

int ics_sched_stream(ics_sched *s, const ics_net_leg *legs, int nlegs, const int *deps, int ndeps)
{
    return add_legs(s, ICS_STEP_STREAM, legs, nlegs, deps, ndeps);
}

int ics_sched_batch(ics_sched *s, const ics_net_leg *legs, int nlegs, const int *deps, int ndeps)
{
    return add_legs(s, ICS_STEP_BATCH, legs, nlegs, deps, ndeps);
}

/* ---- playing -------------------------------------------------------------------------------- */

typedef struct ics_sched_play {
    ics_sched *s; /* owned */
    step *steps;  /* s's, played in place */
    int *succ;
    int *devs;
    const ics_net_leg *legs;
    ics_engine *e;
    ics_net *net;
    int remaining; /* steps not yet ended */
    ics_net_done_fn done;
    void *done_ctx;
    uint64_t done_tag;
} player;

static void step_start(player *p, int id);
static void player_free(player *p);

static void finish(ics_engine *e, player *p)
{
    ics_net_done_fn done = p->done;
    void *ctx = p->done_ctx;
    uint64_t tag = p->done_tag;
    player_free(p);
    done(e, ctx, tag);
}

static void player_empty_done(ics_engine *e, void *ctx, uint64_t arg)
{
    (void)arg;
    finish(e, ctx);
}

static void record_end(ics_engine *e, void *ctx, uint64_t tag)
{
    (void)tag;
    *(ics_time *)ctx = ics_engine_now(e);
}

static void step_end(ics_engine *e, void *ctx, uint64_t id)
{
    player *p = ctx;
    step *st = &p->steps[id];
    /* the work is done: the step ends at its floor, if later, plus its tail (an event only if
     * that is later than now: most floors have passed when a send's last byte lands) */
    if (!st->finishing && (st->floor_ps > 0 || st->tail_ps > 0)) {
        st->finishing = true;
        ics_time at = ics_time_add(MAX(ics_engine_now(e), ics_time_add(st->start_ps, st->floor_ps)),
                                   st->tail_ps); /* saturated: the engine refuses it */
        if (at > ics_engine_now(e)) {
            ics_engine_at(e, at, step_end, p, id);
            return;
        }
    }
    /* each successor's counter is a miss (its step was built long ago); kept inside the step:
     * the counters in an array of their own were tried (2026-12-03, Llama 3 405B on 6,048 GPUs)
     * and saved nothing that repeated (D1 misses -0.4% in cachegrind, A/B 0.94 then 1.00) */
    for (int i = 0; i < st->nsucc; i++) {
        int n = p->succ[st->succ0 + i];
        if (--p->steps[n].waiting == 0)
            step_start(p, n);
    }
    /* every step ends exactly once, so the last to end is the schedule's end */
    if (--p->remaining == 0)
        finish(e, p);
}

static void step_start(player *p, int id)
{
    step *st = &p->steps[id];
    st->start_ps = ics_engine_now(p->e);
    switch (st->kind) {
    case ICS_STEP_SEND: {
        ics_net_xfer x = {.src = st->src,
                          .dst = st->dst,
                          .bytes = st->bytes,
                          .flow_hash = st->hash,
                          .done = step_end,
                          .ctx = p,
                          .tag = (uint64_t)id};
        ics_net_send(p->net, &x);
        break;
    }
    case ICS_STEP_REDUCE: {
        const int *devs = p->devs + st->dev0;
        const int *dsts = st->ndst ? p->devs + st->dst0 : devs;
        ics_net_reduce(p->net, devs, st->ndevs, st->sw, dsts, st->ndst ? st->ndst : st->ndevs,
                       st->bytes, step_end, p, (uint64_t)id);
        break;
    }
    case ICS_STEP_MULTICAST:
        ics_net_multicast(p->net, st->src, st->sw, p->devs + st->dst0, st->ndst, st->bytes,
                          step_end, p, (uint64_t)id);
        break;
    case ICS_STEP_STREAM:
        ics_net_stream(p->net, p->legs + st->dev0, st->ndevs, step_end, p, (uint64_t)id);
        break;
    case ICS_STEP_BATCH:
        ics_net_batch(p->net, p->legs + st->dev0, st->ndevs, step_end, p, (uint64_t)id);
        break;
    case ICS_STEP_DELAY:
        ics_engine_after(p->e, st->delay_ps, step_end, p, (uint64_t)id);
        break;
    default:
        g_assert_not_reached();
    }
}

/* Successor lists in CSR form, and each step's count of dependencies. */
static void build_succ(player *p)
{
    int n = (int)p->s->steps->len, ne = (int)p->s->edges->len;
    const int(*edges)[2] = (const int(*)[2])(void *)p->s->edges->data;
    for (int i = 0; i < ne; i++) {
        p->steps[edges[i][0]].nsucc++;
        p->steps[edges[i][1]].waiting++;
    }
    int acc = 0;
    for (int i = 0; i < n; i++) {
        p->steps[i].succ0 = acc;
        acc += p->steps[i].nsucc;
        p->steps[i].nsucc = 0;
    }
    p->succ = g_new(int, ne + 1);
    for (int i = 0; i < ne; i++) {
        step *from = &p->steps[edges[i][0]];
        p->succ[from->succ0 + from->nsucc++] = edges[i][1];
    }
    /* the successor lists say it all now: the edge list goes (memory of 100,000-GPU calls) */
    g_array_free(p->s->edges, TRUE);
    p->s->edges = g_array_new(FALSE, FALSE, sizeof(int) * 2);
}

/* Takes ownership of s; returns a player with every step ready to go. The steps are played in
 * place: s is the player's own (no working copy of a schedule that can hold millions). */
static player *player_new(ics_sched *s, ics_engine *e, ics_net *net)
{
    player *p = g_new0(player, 1);
    int n = (int)s->steps->len;
    p->s = s;
    p->steps = (step *)(void *)s->steps->data;
    p->devs = (int *)(void *)s->devs->data;
    p->legs = (const ics_net_leg *)(void *)s->legs->data;
    p->e = e;
    p->net = net;
    p->remaining = n;
    build_succ(p);
    return p;
}

static void player_free(player *p)
{
    ics_sched_free(p->s);
    g_free(p->succ);
    g_free(p);
}

void ics_sched_abandon(ics_sched_play *p)
{
    if (p)
        player_free(p);
}

static void player_go(player *p)
{
    int n = (int)p->s->steps->len;
    if (n == 0) { /* nothing to play: end now, from an event as every other end */
        ics_engine_after(p->e, 0, player_empty_done, p, 0);
        return;
    }
    for (int i = 0; i < n; i++)
        if (p->steps[i].waiting == 0)
            step_start(p, i);
}

ics_sched_play *ics_sched_start(ics_sched *s, ics_engine *e, ics_net *net, ics_net_done_fn done,
                                void *ctx, uint64_t tag)
{
    player *p = player_new(s, e, net);
    p->done = done;
    p->done_ctx = ctx;
    p->done_tag = tag;
    player_go(p);
    return p;
}

ics_time ics_sched_run(const ics_sched *s, const ics_topo *t, const ics_net_ops *backend,
                       const ics_net_params *params)
{
    return ics_sched_run_traffic(s, t, backend, params, NULL);
}

ics_time ics_sched_run_traffic(const ics_sched *s, const ics_topo *t, const ics_net_ops *backend,
                               const ics_net_params *params, uint64_t *chan_bytes)
{
    /* the player owns (and frees) its schedule: give it a copy */
    ics_sched *copy = ics_sched_new();
    g_array_append_vals(copy->steps, s->steps->data, s->steps->len);
    g_array_append_vals(copy->devs, s->devs->data, s->devs->len);
    g_array_append_vals(copy->legs, s->legs->data, s->legs->len);
    g_array_append_vals(copy->edges, s->edges->data, s->edges->len);
    return ics_sched_run_take(copy, t, backend, params, chan_bytes);
}

/* Whether any step reduces or multicasts in a switch (NVLS, SHARP). */
static bool switch_ops(const ics_sched *s)
{
    for (guint i = 0; i < s->steps->len; i++) {
        ics_step_kind k = g_array_index(s->steps, step, i).kind;
        if (k == ICS_STEP_REDUCE || k == ICS_STEP_MULTICAST)
            return true;
    }
    return false;
}

ics_time ics_sched_run_take(ics_sched *s, const ics_topo *t, const ics_net_ops *backend,
                            const ics_net_params *params, uint64_t *chan_bytes)
{
    ics_engine *e = ics_engine_new(0);
    /* a schedule with no reduction or multicast in a switch loads no NVLink plane alone: the
     * flow backend may merge them (net_planes.c), unless asked for every channel as itself */
    ics_net_params np = params ? *params : (ics_net_params){0};
    np.merge_planes = !np.every_link && !switch_ops(s);
    ics_net *net = ics_net_new(backend, t, e, &np);
    ics_time end = -1;
    ics_sched_play *p = ics_sched_start(s, e, net, record_end, &end, 0);
    ics_engine_run(e, ICS_TIME_MAX);
    if (end < 0) { /* it never ended: the engine stopped at its horizon */
        g_assert(ics_engine_past_horizon(e));
        ics_sched_abandon(p);
        end = ICS_TIME_LIMIT;
    }
    g_assert(ics_engine_past_horizon(e) || ics_engine_pending(e) == 0);
    for (int c = 0; chan_bytes && c < ics_topo_nchans(t); c++)
        chan_bytes[c] += ics_net_chan_bytes(net, c);
    ics_net_free(net);
    ics_engine_free(e);
    return end;
}
