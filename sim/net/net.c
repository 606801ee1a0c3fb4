/* The backend registry and the thin wrappers of net.h. Adding a backend: one file filling
 * ics_net_ops, one row below. */
#include "net/net.h"

#include <string.h>

extern const ics_net_ops ics_net_packet_ops;
extern const ics_net_ops ics_net_analytic_ops;
extern const ics_net_ops ics_net_flow_ops;

static const ics_net_ops *const backends[] = {&ics_net_packet_ops, &ics_net_analytic_ops,
                                              &ics_net_flow_ops};
static const char *const backend_names[] = {"packet", "analytic", "flow", NULL};

const ics_net_ops *ics_net_backend(const char *name)
{
    for (size_t i = 0; i < G_N_ELEMENTS(backends); i++)
        if (strcmp(backends[i]->name, name) == 0)
            return backends[i];
    return NULL;
}

const char *const *ics_net_backend_names(void)
{
    return backend_names;
}

bool ics_net_backend_ready(const ics_net_ops *ops, const ics_topo *t, GError **err)
{
    if (!ops->ready || ops->ready(t, err))
        return true;
    g_prefix_error(err, "--engine %s: ", ops->name);
    return false;
}

ics_net *ics_net_new(const ics_net_ops *ops, const ics_topo *t, ics_engine *e,
                     const ics_net_params *p)
{
    static const ics_net_params defaults = {0};
    ics_net *n = ops->create(t, e, p ? p : &defaults);
    g_assert(((ics_net_base *)n)->ops == ops);
    return n;
}

static const ics_net_ops *ops_of(const ics_net *n)
{
    return ((const ics_net_base *)n)->ops;
}

static void joins_free(ics_net_base *b);

void ics_net_free(ics_net *n)
{
    if (!n)
        return;
    joins_free((ics_net_base *)n);
    ops_of(n)->destroy(n);
}

void ics_net_send(ics_net *n, const ics_net_xfer *x)
{
    ops_of(n)->send(n, x);
}

void ics_net_multicast(ics_net *n, int src, int sw, const int *dsts, int ndst, uint64_t bytes,
                       ics_net_done_fn done, void *ctx, uint64_t tag)
{
    ops_of(n)->multicast(n, src, sw, dsts, ndst, bytes, done, ctx, tag);
}

void ics_net_reduce(ics_net *n, const int *srcs, int nsrc, int sw, const int *dsts, int ndst,
                    uint64_t bytes, ics_net_done_fn done, void *ctx, uint64_t tag)
{
    ops_of(n)->reduce(n, srcs, nsrc, sw, dsts, ndst, bytes, done, ctx, tag);
}

/* A stream on a backend without its own model: every leg a send; done after the last. The
 * network lists the joins under way (a run may stop before their legs end). */
typedef struct ics_net_legs_join {
    ics_net_base *net;
    ics_net_done_fn done;
    void *ctx;
    uint64_t tag;
    int left;
    struct ics_net_legs_join *prev, *next;
} legs_join;

static void join_unlink(legs_join *j)
{
    if (j->prev)
        j->prev->next = j->next;
    else
        j->net->joins = j->next;
    if (j->next)
        j->next->prev = j->prev;
}

static void joins_free(ics_net_base *b)
{
    while (b->joins) {
        legs_join *j = b->joins;
        join_unlink(j);
        g_free(j);
    }
}

static void leg_done(ics_engine *e, void *ctx, uint64_t tag)
{
    (void)tag;
    legs_join *j = ctx;
    if (--j->left > 0)
        return;
    legs_join copy = *j;
    join_unlink(j);
    g_free(j);
    copy.done(e, copy.ctx, copy.tag);
}

void ics_net_stream(ics_net *n, const ics_net_leg *legs, int nlegs, ics_net_done_fn done, void *ctx,
                    uint64_t tag)
{
    g_assert(nlegs >= 1);
    if (ops_of(n)->stream)
        ops_of(n)->stream(n, legs, nlegs, done, ctx, tag);
    else
        ics_net_stream_as_sends(n, legs, nlegs, done, ctx, tag);
}

void ics_net_batch(ics_net *n, const ics_net_leg *legs, int nlegs, ics_net_done_fn done, void *ctx,
                   uint64_t tag)
{
    g_assert(nlegs >= 1);
    if (ops_of(n)->batch)
        ops_of(n)->batch(n, legs, nlegs, done, ctx, tag);
    else
        ics_net_stream(n, legs, nlegs, done, ctx, tag);
}

void ics_net_stream_as_sends(ics_net *n, const ics_net_leg *legs, int nlegs, ics_net_done_fn done,
                             void *ctx, uint64_t tag)
{
    ics_net_base *b = (ics_net_base *)n;
    legs_join *j = g_new(legs_join, 1);
    *j = (legs_join){
        .net = b, .done = done, .ctx = ctx, .tag = tag, .left = nlegs, .next = b->joins};
    if (b->joins)
        b->joins->prev = j;
    b->joins = j;
    for (int i = 0; i < nlegs; i++) {
        ics_net_xfer x = {.src = legs[i].src,
                          .dst = legs[i].dst,
                          .bytes = legs[i].bytes,
                          .flow_hash = legs[i].flow_hash,
                          .done = leg_done,
                          .ctx = j};
        ics_net_send(n, &x);
    }
}

void ics_net_get_stats(const ics_net *n, ics_net_stats *out)
{
    ops_of(n)->stats(n, out);
}

uint64_t ics_net_chan_bytes(const ics_net *n, int chan)
{
    return ops_of(n)->chan_bytes(n, chan);
}
