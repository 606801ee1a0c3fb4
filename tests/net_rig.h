/* A shipped hardware model, an engine and a network backend, and the transfers the network
 * tests start on them (test_net_packet.c, test_net_analytic.c, test_net_flow.c). */
#ifndef ICS_TEST_NET_RIG_H
#define ICS_TEST_NET_RIG_H

#include "core/core.h"
#include "hw/hw.h"
#include "net/net.h"
#include "topo/topo.h"

#include <glib.h>

typedef struct {
    ics_hw *hw;
    ics_topo *t;
    ics_engine *e;
    ics_net *n;
} rig;

/* model: a file of hwmodels/, or an absolute path; nodes 0: as the file says. */
static inline void rig_open_with(rig *g, const char *model, int nodes, const char *backend,
                                 const ics_net_params *p)
{
    char *path = g_path_is_absolute(model)
                     ? g_strdup(model)
                     : g_build_filename(ICS_SOURCE_DIR, "hwmodels", model, NULL);
    GError *err = NULL;
    g->hw = ics_hw_load(path, nodes, &err);
    g_assert_no_error(err);
    g->t = ics_topo_new(g->hw);
    g->e = ics_engine_new(0);
    g_assert_true(ics_net_backend_ready(ics_net_backend(backend), g->t, &err));
    g_assert_no_error(err);
    g->n = ics_net_new(ics_net_backend(backend), g->t, g->e, p);
    g_free(path);
}

static inline void rig_close(rig *g)
{
    g_assert_cmpuint(ics_engine_pending(g->e), ==, 0); /* drained: nothing outstanding */
    ics_net_free(g->n);
    ics_engine_free(g->e);
    ics_topo_free(g->t);
    ics_hw_free(g->hw);
}

/* done callback: at[tag] = the time of delivery */
static inline void record_done(ics_engine *e, void *ctx, uint64_t tag)
{
    ics_time *at = ctx;
    at[tag] = ics_engine_now(e);
}

static inline void send(rig *g, int src, int dst, uint64_t bytes, uint64_t hash, ics_time *done,
                        uint64_t tag)
{
    ics_net_xfer x = {.src = src,
                      .dst = dst,
                      .bytes = bytes,
                      .flow_hash = hash,
                      .done = record_done,
                      .ctx = done,
                      .tag = tag};
    ics_net_send(g->n, &x);
}

static inline int dev(const rig *g, const char *label)
{
    int d = ics_topo_find(g->t, label);
    g_assert_cmpint(d, >=, 0);
    return d;
}

/* A send scheduled for later. */
typedef struct {
    rig *g;
    ics_net_xfer x;
} later;

static inline void ev_send(ics_engine *e, void *ctx, uint64_t arg)
{
    (void)e;
    (void)arg;
    later *l = ctx;
    ics_net_send(l->g->n, &l->x);
}

/* A mixed scenario on node 0 with staggered starts, so that rates change mid-flight: an incast
 * into gpu0, a ring, and one large transfer, starting every 3 us; done[i] for transfer i. */
enum { MIXED = 16 };

static inline void mixed_scenario(rig *g, later *l, ics_time *done)
{
    for (int i = 0; i < MIXED; i++) {
        int src = i < 7 ? i + 1 : (i - 7) % 8, dst = i < 7 ? 0 : (i - 6) % 8;
        if (i == MIXED - 1) {
            src = 3;
            dst = 6;
        }
        l[i] = (later){g,
                       {.src = ics_topo_gpu(g->t, 0, src),
                        .dst = ics_topo_gpu(g->t, 0, dst),
                        .bytes = (uint64_t)(1 + i % 5) << 20 | (uint64_t)i * 77,
                        .done = record_done,
                        .ctx = done,
                        .tag = (uint64_t)i}};
        ics_engine_at(g->e, (ics_time)i * 3 * ICS_PS_PER_US, ev_send, &l[i], 0);
    }
}

#endif
