/* The schedule DAG and its player. Invariant: a step starts exactly when its last dependency
 * ends (or at 0 with none), and every step ends exactly once. */
#include "sched.h"

typedef struct {
    ics_step_kind kind;
    int src, dst, sw; /* send: src, dst; reduce: sw */
    int dev0, ndevs;  /* reduce: devices devs[dev0 .. dev0 + ndevs) */
    uint64_t bytes, hash;
    ics_time delay_ps;
    int waiting;      /* dependencies not yet ended, while playing */
    int succ0, nsucc; /* successors: succ[succ0 .. succ0 + nsucc), built before playing */
} step;

struct ics_sched {
    GArray *steps; /* step */
    GArray *devs;  /* int: devices of reduce steps */
    GArray *edges; /* (from, to) pairs */
};

ics_sched *ics_sched_new(void)
{
    ics_sched *s = g_new0(ics_sched, 1);
    s->steps = g_array_new(FALSE, TRUE, sizeof(step));
    s->devs = g_array_new(FALSE, FALSE, sizeof(int));
    s->edges = g_array_new(FALSE, FALSE, sizeof(int) * 2);
    return s;
}

void ics_sched_free(ics_sched *s)
{
    if (!s)
        return;
    g_array_free(s->steps, TRUE);
    g_array_free(s->devs, TRUE);
    g_array_free(s->edges, TRUE);
    g_free(s);
}

int ics_sched_len(const ics_sched *s)
{
    return (int)s->steps->len;
}

static int add(ics_sched *s, const step *st, const int *deps, int ndeps)
{
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

int ics_sched_reduce(ics_sched *s, const int *devs, int ndevs, int sw, uint64_t bytes,
                     const int *deps, int ndeps)
{
    step st = {.kind = ICS_STEP_REDUCE,
               .sw = sw,
               .dev0 = (int)s->devs->len,
               .ndevs = ndevs,
               .bytes = bytes};
    g_array_append_vals(s->devs, devs, (guint)ndevs);
    return add(s, &st, deps, ndeps);
}

/* ---- playing -------------------------------------------------------------------------------- */

typedef struct {
    const ics_sched *s;
    step *steps; /* a working copy */
    int *succ;
    int *devs;
    ics_engine *e;
    ics_net *net;
    ics_time last_end;
} player;

static void step_start(player *p, int id);

static void step_end(ics_engine *e, void *ctx, uint64_t id)
{
    player *p = ctx;
    p->last_end = MAX(p->last_end, ics_engine_now(e));
    const step *st = &p->steps[id];
    for (int i = 0; i < st->nsucc; i++) {
        int n = p->succ[st->succ0 + i];
        if (--p->steps[n].waiting == 0)
            step_start(p, n);
    }
}

static void step_start(player *p, int id)
{
    step *st = &p->steps[id];
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
        ics_net_reduce(p->net, devs, st->ndevs, st->sw, devs, st->ndevs, st->bytes, step_end, p,
                       (uint64_t)id);
        break;
    }
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
}

ics_time ics_sched_run(const ics_sched *s, const ics_topo *t, const ics_net_ops *backend,
                       const ics_net_params *params)
{
    player p = {.s = s};
    int n = (int)s->steps->len;
    p.steps = g_memdup2(s->steps->data, sizeof(step) * (size_t)(n + 1));
    p.devs = (int *)(void *)s->devs->data;
    build_succ(&p);
    p.e = ics_engine_new(0);
    p.net = ics_net_new(backend, t, p.e, params);
    for (int i = 0; i < n; i++)
        if (p.steps[i].waiting == 0)
            step_start(&p, i);
    ics_engine_run(p.e, ICS_TIME_MAX);
    g_assert(ics_engine_pending(p.e) == 0);
    ics_net_free(p.net);
    ics_engine_free(p.e);
    g_free(p.steps);
    g_free(p.succ);
    return p.last_end;
}
