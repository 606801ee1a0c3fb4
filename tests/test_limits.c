/* The two limits of every run (docs/limits.md): the memory budget (its default, the
 * environment's override, the check and its message) and the horizon of simulated time as the
 * library reports it: a replay that would pass it fails with ICS_ERROR_LIMIT naming the op, on
 * either engine, with collectives memoized or on the shared network, and leaves nothing behind
 * (the sanitizer build checks the calls and transfers a stopped run abandons). */
#include "replay/replay.h"
#include "hw/hw.h"

#include <glib.h>
#include <stdlib.h>
#include <string.h>

#define GIB (UINT64_C(1) << 30)

static void test_budget_default(void)
{
    g_unsetenv(ICS_BUDGET_ENV);
    GError *err = NULL;
    g_assert_cmpuint(ics_budget_bytes(&err), ==, 8 * GIB);
    g_assert_true(ics_budget_check(8 * GIB, "x", &err));
    g_assert_no_error(err);
    g_assert_false(ics_budget_check(8 * GIB + 1, "t.json: 3 ops x 1 B", &err));
    g_assert_error(err, ICS_ERROR, ICS_ERROR_LIMIT);
    g_assert_cmpint(ics_error_exit_status(err), ==, 2);
    g_assert_cmpstr(err->message, ==,
                    "t.json: 3 ops x 1 B: about 8.0 GiB, over the memory budget of 8 GiB "
                    "(ICSIM_MAX_MEMORY=GiB raises it; docs/limits.md)");
    g_clear_error(&err);
}

static void test_budget_env(void)
{
    GError *err = NULL;
    g_setenv(ICS_BUDGET_ENV, "0.5", TRUE);
    g_assert_cmpuint(ics_budget_bytes(&err), ==, GIB / 2);
    g_assert_false(ics_budget_check(GIB / 2 + 1, "x", &err));
    g_assert_true(g_str_has_suffix(err->message, "over the memory budget of 0.5 GiB "
                                                 "(ICSIM_MAX_MEMORY=GiB raises it; "
                                                 "docs/limits.md)"));
    g_clear_error(&err);
    g_setenv(ICS_BUDGET_ENV, "1048576", TRUE); /* a PiB: the most */
    g_assert_true(ics_budget_check(UINT64_C(1) << 49, "x", &err));
    const char *const bad[] = {"", "x", "8G", "0", "-1", "1e-7", "2e6", "nan", "inf"};
    for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
        g_setenv(ICS_BUDGET_ENV, bad[i], TRUE);
        if (ics_budget_bytes(&err) != 0)
            g_error("ICSIM_MAX_MEMORY=\"%s\" taken", bad[i]);
        g_assert_error(err, ICS_ERROR, ICS_ERROR_INPUT);
        g_assert_nonnull(strstr(err->message, "ICSIM_MAX_MEMORY: expected a memory budget"));
        g_clear_error(&err);
        g_assert_false(ics_budget_check(1, "x", &err)); /* a bad variable fails every check */
        g_assert_error(err, ICS_ERROR, ICS_ERROR_INPUT);
        g_clear_error(&err);
    }
    g_unsetenv(ICS_BUDGET_ENV);
}

static void test_budget_saturates(void)
{
    g_assert_cmpuint(ics_budget_mul_add(3, 4, 5), ==, 17);
    g_assert_cmpuint(ics_budget_mul_add(UINT64_MAX, 2, 0), ==, UINT64_MAX);
    g_assert_cmpuint(ics_budget_mul_add(1, UINT64_MAX, 1), ==, UINT64_MAX);
    g_assert_cmpuint(ics_budget_mul_add(0, UINT64_MAX, 7), ==, 7);
}

/* ---- the replay's limits ------------------------------------------------------------------- */

typedef struct {
    ics_hw *hw;
    ics_topo *t;
} rig;

/* tests/bad-input/ok/node.json (4 GPUs on an NVSwitch), or with `slow` every lane at 0.001
 * Gb/s (the reader's least), one NVLink per GPU, x1 PCIe, as tests/cli_bad_input_limits.sh
 * makes it. */
static void rig_open(rig *g, bool slow)
{
    static const char *const edits[][2] = {{"\"lane_gbps\": [0-9.]+", "\"lane_gbps\": 0.001"},
                                           {"\"lanes\": 2,", "\"lanes\": 1,"},
                                           {"\"nvlinks\": 4", "\"nvlinks\": 1"},
                                           {"\"count\": 4", "\"count\": 1"},
                                           {"\"pcie_lanes\": 16", "\"pcie_lanes\": 1"}};
    char *path = g_build_filename(ICS_SOURCE_DIR, "tests", "bad-input", "ok", "node.json", NULL);
    char *text = NULL;
    g_assert_true(g_file_get_contents(path, &text, NULL, NULL));
    for (size_t i = 0; slow && i < G_N_ELEMENTS(edits); i++) {
        GRegex *re = g_regex_new(edits[i][0], 0, 0, NULL);
        char *edited = g_regex_replace_literal(re, text, -1, 0, edits[i][1], 0, NULL);
        g_free(text);
        text = edited;
        g_regex_unref(re);
    }
    GError *err = NULL;
    g->hw = ics_hw_load_text("node.json", text, strlen(text), &err);
    g_assert_no_error(err);
    g->t = ics_topo_new(g->hw);
    g_free(text);
    g_free(path);
}

static void rig_close(rig *g)
{
    ics_topo_free(g->t);
    ics_hw_free(g->hw);
}

static ics_replay_opts opts(const char *engine, ics_replay_colls colls)
{
    ics_replay_opts o = {.backend = ics_net_backend(engine), .colls = colls, .p2p_lat_ps = -1};
    ics_coll_tuning_from_env(&o.tuning, NULL, NULL);
    return o;
}

/* n compute ops of `days` each on rank 0's one stream, the last named "last". */
static ics_trace *long_ops(int n, double days)
{
    ics_trace *tr = ics_trace_new(1);
    ics_trace_add_stream(tr, 0, "compute");
    for (int i = 0; i < n; i++) {
        ics_trace_op op = {.kind = ICS_TOP_COMPUTE,
                           .name = i == n - 1 ? "last" : NULL,
                           .duration_ps = (ics_time)(days * 86400 * ICS_PS_PER_S)};
        ics_trace_add_op(tr, 0, &op, NULL, 0);
    }
    return tr;
}

/* Runs a replay that must pass the horizon; its message must contain `want`. */
static void past_horizon(const rig *g, const ics_trace *tr, const ics_replay_opts *o,
                         const char *want)
{
    GError *err = NULL;
    ics_replay *r = ics_replay_new(tr, g->t, o, &err);
    g_assert_no_error(err);
    ics_replay_result res;
    g_assert_false(ics_replay_run(r, &res, &err));
    g_assert_error(err, ICS_ERROR, ICS_ERROR_LIMIT);
    if (!strstr(err->message, want))
        g_error("expected \"%s\" in \"%s\"", want, err->message);
    g_assert_nonnull(strstr(err->message, "past the simulator's horizon of 53.4 days"));
    g_clear_error(&err);
    ics_replay_free(r);
}

static void test_replay_durations(void)
{
    rig g;
    rig_open(&g, false);
    ics_replay_opts o = opts("analytic", ICS_REPLAY_MEMO);
    ics_trace *ok = long_ops(4, 13); /* 52 days: inside */
    GError *err = NULL;
    ics_replay *r = ics_replay_new(ok, g.t, &o, &err);
    ics_replay_result res;
    g_assert_true(ics_replay_run(r, &res, &err));
    g_assert_cmpint(res.step_ps, ==, 4 * (ics_time)(13 * 86400 * ICS_PS_PER_S));
    ics_replay_free(r);
    ics_trace_free(ok);
    ics_trace *past = long_ops(5, 13); /* 65 days */
    past_horizon(&g, past, &o, "rank 0 op 4 (last): started at 4.4928e+06 s, ends past");
    ics_trace_free(past);
    /* one op alone past the horizon: refused before the first event */
    ics_trace *alone = long_ops(1, 60);
    g_assert_null(ics_replay_new(alone, g.t, &o, &err));
    g_assert_error(err, ICS_ERROR, ICS_ERROR_LIMIT);
    if (!strstr(err->message, "rank 0 op 0 (last): compute time 5.18e+06 s on GPU g"))
        g_error("%s", err->message);
    g_clear_error(&err);
    ics_trace_free(alone);
    rig_close(&g);
}

/* 1 TiB at 0.001 Gb/s lanes: the collective and the send/recv are the ops named, on both
 * engines, memoized or on the shared network (where the schedule and the transfers in flight
 * are abandoned and freed). */
static void test_replay_transfers(void)
{
    rig g;
    rig_open(&g, true);
    ics_trace *tr = ics_trace_new(4);
    int ranks[] = {0, 1, 2, 3};
    int w = ics_trace_add_comm(tr, ranks, 4, "w");
    for (int k = 0; k < 4; k++) {
        ics_trace_add_stream(tr, k, "compute");
        ics_trace_op op = {
            .kind = ICS_TOP_COLL,
            .name = "grad",
            .comm = w,
            .coll = {.op = ICS_COLL_ALL_REDUCE, .size_bytes = UINT64_C(1) << 40, .dtype_bytes = 4}};
        ics_trace_add_op(tr, k, &op, NULL, 0);
    }
    ics_trace *p2p = ics_trace_new(2);
    for (int k = 0; k < 2; k++) {
        ics_trace_add_stream(p2p, k, "compute");
        ics_trace_op op = {.kind = k ? ICS_TOP_RECV : ICS_TOP_SEND,
                           .name = "act",
                           .peer = 1 - k,
                           .bytes = UINT64_C(1) << 40};
        ics_trace_add_op(p2p, k, &op, NULL, 0);
    }
    const char *engines[] = {"analytic", "packet"};
    const ics_replay_colls modes[] = {ICS_REPLAY_MEMO, ICS_REPLAY_FULL};
    for (int e = 0; e < 2; e++) {
        for (int m = 0; m < 2; m++) {
            ics_replay_opts o = opts(engines[e], modes[m]);
            past_horizon(&g, tr, &o, "rank 0 op 0 (grad): started at 0 s");
        }
        ics_replay_opts o = opts(engines[e], ICS_REPLAY_AUTO);
        past_horizon(&g, p2p, &o, "rank 0 op 0 (act): started at 0 s");
    }
    ics_trace_free(p2p);
    ics_trace_free(tr);
    rig_close(&g);
}

/* The replay's own estimate, reached through the library whatever built the trace. */
static void test_replay_budget(void)
{
    rig g;
    rig_open(&g, false);
    ics_trace *tr = long_ops(10000, 1e-9);
    ics_replay_opts o = opts("analytic", ICS_REPLAY_MEMO);
    GError *err = NULL;
    g_setenv(ICS_BUDGET_ENV, "0.001", TRUE);
    g_assert_null(ics_replay_new(tr, g.t, &o, &err));
    g_unsetenv(ICS_BUDGET_ENV);
    g_assert_error(err, ICS_ERROR, ICS_ERROR_LIMIT);
    g_assert_cmpstr(err->message, ==,
                    "replay: 10000 ops x 304 B and 0 dependencies x 12 B: about 2.9 MiB, over "
                    "the memory budget of 0.001 GiB (ICSIM_MAX_MEMORY=GiB raises it; "
                    "docs/limits.md)");
    g_clear_error(&err);
    ics_replay *r = ics_replay_new(tr, g.t, &o, &err);
    g_assert_nonnull(r);
    ics_replay_free(r);
    ics_trace_free(tr);
    rig_close(&g);
}

/* A collective alone (what `icsim collective` and memoized calls run): its time saturates at
 * the horizon, which callers read as "does not end within it". */
static void test_comm_saturates(void)
{
    rig g;
    rig_open(&g, true);
    int gpus[] = {0, 1, 2, 3};
    const char *engines[] = {"analytic", "packet"};
    for (int e = 0; e < 2; e++) {
        ics_comm *c = ics_comm_new(g.t, ics_net_backend(engines[e]), gpus, 4, NULL);
        ics_coll_tuning tu;
        ics_coll_tuning_from_env(&tu, NULL, NULL);
        ics_coll_req req = {
            .op = ICS_COLL_ALL_REDUCE, .size_bytes = UINT64_C(1) << 40, .dtype_bytes = 4};
        ics_coll_result res;
        g_assert_true(ics_comm_run(c, &req, &tu, &res));
        g_assert_cmpint(res.time_ps, ==, ICS_TIME_LIMIT);
        req.size_bytes = 1 << 20; /* a MiB: 8.4 s, inside */
        g_assert_true(ics_comm_run(c, &req, &tu, &res));
        g_assert_cmpint(res.time_ps, <, ICS_TIME_LIMIT);
        ics_comm_free(c);
    }
    rig_close(&g);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/limits/budget-default", test_budget_default);
    g_test_add_func("/limits/budget-env", test_budget_env);
    g_test_add_func("/limits/budget-saturates", test_budget_saturates);
    g_test_add_func("/limits/replay-durations", test_replay_durations);
    g_test_add_func("/limits/replay-transfers", test_replay_transfers);
    g_test_add_func("/limits/replay-budget", test_replay_budget);
    g_test_add_func("/limits/comm-saturates", test_comm_saturates);
    return g_test_run();
}
