/* Builders for the training generator's tests (test_workload.c, test_moe.c): the shipped
 * model catalog and hardware models, a checked generated trace, op counts and collective bytes
 * per rank, and a replay with memoized collectives. */
#ifndef ICS_TEST_WORKLOAD_RIG_H
#define ICS_TEST_WORKLOAD_RIG_H

#include "hw/hw.h"
#include "replay/replay.h"
#include "workload/layout.h"
#include "workload/model.h"
#include "workload/workload.h"

#include <glib.h>
#include <math.h>
#include <string.h>

/* ---- helpers --------------------------------------------------------------------------------- */

static inline ics_model_catalog *catalog(void)
{
    GError *err = NULL;
    ics_model_catalog *c = ics_model_catalog_load(ICS_SOURCE_DIR "/models/models.json", &err);
    g_assert_no_error(err);
    return c;
}

static inline ics_hw *load_hw(const char *file, int nodes)
{
    GError *err = NULL;
    char *path = g_build_filename(ICS_SOURCE_DIR, "hwmodels", file, NULL);
    ics_hw *hw = ics_hw_load(path, nodes, &err);
    g_assert_no_error(err);
    g_free(path);
    return hw;
}

static inline const ics_hw_gpu_type *gpu_of(const ics_hw *hw)
{
    return ics_hw_node_of(hw)->gpu_type;
}

static inline ics_trace *build(const ics_model *m, const ics_layout *l, const ics_hw_gpu_type *g)
{
    GError *err = NULL;
    ics_trace *tr = ics_workload_build(m, l, g, &err);
    if (!tr)
        g_error("build failed: %s", err->message);
    g_assert_true(ics_trace_check(tr, &err));
    g_assert_no_error(err);
    return tr;
}

/* Ops of `rank` whose name is `name` (and, for collectives, of operation `op` unless -1). */
static inline int count_named(const ics_trace *tr, int rank, const char *name)
{
    int n = 0;
    for (int i = 0; i < ics_trace_nops(tr, rank); i++) {
        const ics_trace_op *op = ics_trace_get_op(tr, rank, i);
        n += op->name && strcmp(op->name, name) == 0;
    }
    return n;
}

static inline uint64_t sum_coll_bytes(const ics_trace *tr, int rank, ics_trace_cat cat,
                                      ics_coll_op op)
{
    uint64_t b = 0;
    for (int i = 0; i < ics_trace_nops(tr, rank); i++) {
        const ics_trace_op *o = ics_trace_get_op(tr, rank, i);
        if (o->kind == ICS_TOP_COLL && o->cat == cat && o->coll.op == op)
            b += o->coll.size_bytes;
    }
    return b;
}

static inline ics_replay_result replay(const ics_trace *tr, const ics_topo *t, ics_time p2p_lat)
{
    ics_replay_opts o = {
        .tuning = {.nvls_enable = true}, .colls = ICS_REPLAY_MEMO, .p2p_lat_ps = p2p_lat};
    GError *err = NULL;
    ics_replay *r = ics_replay_new(tr, t, &o, &err);
    if (!r)
        g_error("replay: %s", err->message);
    ics_replay_result res;
    if (!ics_replay_run(r, &res, &err))
        g_error("replay: %s", err->message);
    ics_replay_free(r);
    return res;
}

/* A Llama-like model (SwiGLU, RMSNorm, no biases, rope, untied): h 1024, 16 heads, 4 KV heads,
 * vocabulary 32000, the given layers, MLP width and sequence. */
static inline ics_model small_llama_like(const char *name, int layers, int ffn, int seq)
{
    ics_model m = ics_model_make(name, layers, 1024, 16, ffn, 32000, seq);
    m.kv_heads = 4;
    m.act = ICS_ACT_SWIGLU;
    m.norm = ICS_NORM_RMSNORM;
    m.bias = false;
    m.pos = ICS_POS_ROPE;
    m.tied_embeddings = false;
    return m;
}

/* Layout l fails ics_layout_check with a message holding `want`. */
static inline void expect_layout_refused(const ics_model *m, const ics_layout *l, const char *want)
{
    GError *err = NULL;
    g_assert_false(ics_layout_check(l, m, &err));
    g_assert_nonnull(err);
    if (!strstr(err->message, want))
        g_error("expected \"%s\" in \"%s\"", want, err->message);
    g_error_free(err);
}

/* The step of model m on layout l (its fold ignored) replays to the same time folded and
 * unfolded, on `nodes` nodes of hardware model `hw_file`; returns it. */
static inline ics_time expect_fold_equal(const char *hw_file, int nodes, const ics_model *m,
                                         ics_layout l)
{
    ics_hw *hw = load_hw(hw_file, nodes);
    ics_topo *t = ics_topo_new(hw);
    l.fold = false;
    ics_trace *full = build(m, &l, gpu_of(hw));
    l.fold = true;
    ics_trace *folded = build(m, &l, gpu_of(hw));
    ics_time a = replay(full, t, -1).step_ps, b = replay(folded, t, -1).step_ps;
    g_test_message("step %.3f ms unfolded, %.3f ms folded", a / 1e9, b / 1e9);
    g_assert_cmpint(a, >, 0);
    g_assert_cmpfloat(fabs((double)a - (double)b), <=, 1e-6 * (double)a);
    ics_trace_free(full);
    ics_trace_free(folded);
    ics_topo_free(t);
    ics_hw_free(hw);
    return a;
}

#endif
