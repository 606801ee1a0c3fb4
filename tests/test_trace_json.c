/* The JSON trace format: the documented example reads and replays; a generated trace written and
 * read back is the same trace op by op and replays to the same step; every check of the reader
 * rejects its bad input with a located message. */
#include "sim/hw.h"
#include "sim/replay.h"
#include "sim/trace_json.h"
#include "sim/workload.h"

#include <glib.h>
#include <glib/gstdio.h>
#include <string.h>

static ics_topo *open_topo(const char *model, int nodes, ics_hw **hw)
{
    char *path = g_build_filename(ICS_SOURCE_DIR, "hwmodels", model, NULL);
    GError *err = NULL;
    *hw = ics_hw_load(path, nodes, &err);
    g_assert_no_error(err);
    g_free(path);
    return ics_topo_new(*hw);
}

static ics_time replay(const ics_trace *tr, const ics_topo *t)
{
    ics_replay_opts o = {.tuning = {.algo = -1, .proto = -1, .nvls_enable = true},
                         .backend = ics_net_backend("packet"),
                         .p2p_lat_ps = -1};
    char *err = NULL;
    ics_replay *r = ics_replay_new(tr, t, &o, &err);
    g_assert_null(err);
    ics_replay_result res;
    g_assert_true(ics_replay_run(r, &res, &err));
    ics_replay_free(r);
    return res.step_ps;
}

/* The example of docs/trace-format.md (scenarios/traces/example.json) reads and replays. */
static void test_example(void)
{
    char *path = g_build_filename(ICS_SOURCE_DIR, "scenarios", "traces", "example.json", NULL);
    char *err = NULL;
    ics_trace *tr = ics_trace_read_json(path, &err);
    g_assert_null(err);
    g_assert_cmpint(ics_trace_nranks(tr), ==, 4);
    g_assert_cmpint(ics_trace_ncomms(tr), ==, 3);
    g_assert_cmpint(ics_trace_nops(tr, 2), ==, 4);
    const ics_trace_op *op = ics_trace_get_op(tr, 2, 1);
    g_assert_cmpint(op->kind, ==, ICS_TOP_COMPUTE);
    g_assert_cmpint(op->duration_ps, ==, 2500 * ICS_PS_PER_US);
    int nd;
    const int *deps = ics_trace_op_deps(tr, 2, 1, &nd);
    g_assert_cmpint(nd, ==, 1);
    g_assert_cmpint(deps[0], ==, 0);
    op = ics_trace_get_op(tr, 0, 0);
    g_assert_cmpint(op->work, ==, ICS_WORK_GEMM);
    g_assert_cmpfloat(op->flops, ==, 2.5e12);
    ics_hw *hw;
    ics_topo *t = open_topo("dgx-h100.json", 0, &hw);
    g_assert_cmpint(replay(tr, t), >, 2500 * ICS_PS_PER_US);
    ics_topo_free(t);
    ics_hw_free(hw);
    ics_trace_free(tr);
    g_free(path);
}

static void assert_same(const ics_trace *a, const ics_trace *b)
{
    g_assert_cmpint(ics_trace_nranks(a), ==, ics_trace_nranks(b));
    g_assert_cmpint(ics_trace_ncomms(a), ==, ics_trace_ncomms(b));
    for (int c = 0; c < ics_trace_ncomms(a); c++) {
        int na, nb;
        const int *ra = ics_trace_comm_ranks(a, c, &na), *rb = ics_trace_comm_ranks(b, c, &nb);
        g_assert_cmpmem(ra, na * sizeof *ra, rb, nb * sizeof *rb);
    }
    for (int k = 0; k < ics_trace_nranks(a); k++) {
        g_assert_cmpint(ics_trace_nops(a, k), ==, ics_trace_nops(b, k));
        g_assert_cmpint(ics_trace_nstreams(a, k), ==, ics_trace_nstreams(b, k));
        for (int i = 0; i < ics_trace_nops(a, k); i++) {
            const ics_trace_op *x = ics_trace_get_op(a, k, i), *y = ics_trace_get_op(b, k, i);
            g_assert_cmpint(x->kind, ==, y->kind);
            g_assert_cmpint(x->stream, ==, y->stream);
            g_assert_cmpint(x->cat, ==, y->cat);
            g_assert_cmpstr(x->name, ==, y->name);
            g_assert_cmpint(x->duration_ps, ==, y->duration_ps);
            g_assert_cmpint(x->comm, ==, y->comm);
            g_assert_cmpuint(x->coll.size_bytes, ==, y->coll.size_bytes);
            g_assert_cmpint(x->coll.dtype_bytes, ==, y->coll.dtype_bytes);
            g_assert_cmpint(x->peer, ==, y->peer);
            g_assert_cmpuint(x->bytes, ==, y->bytes);
            int nx, ny;
            const int *dx = ics_trace_op_deps(a, k, i, &nx), *dy = ics_trace_op_deps(b, k, i, &ny);
            g_assert_cmpmem(dx, nx * sizeof(int), dy, ny * sizeof(int));
        }
    }
}

/* A generated job (2 stages x TP 4 x DP 2, every rank) written, read back: the same trace, the
 * same step; written again: the same bytes. */
static void test_roundtrip(void)
{
    ics_hw *hw;
    ics_topo *t = open_topo("superpod-h100-ndr.json", 2, &hw);
    ics_model m = ics_model_make("small", 4, 2048, 16, 8192, 32000, 1024);
    ics_layout l = ics_layout_defaults();
    l.tp = 4;
    l.pp = 2;
    l.dp = 2;
    l.gbs = 8;
    l.recompute = ICS_RECOMPUTE_FULL;
    char *err = NULL;
    ics_trace *tr = ics_workload_build(&m, &l, ics_hw_node_of(hw)->gpu_type, &err);
    g_assert_null(err);
    char *dir = g_dir_make_tmp("icsim-trace-XXXXXX", NULL);
    char *p1 = g_build_filename(dir, "a.json", NULL), *p2 = g_build_filename(dir, "b.json", NULL);
    g_assert_true(ics_trace_write_json(tr, p1, &err));
    ics_trace *back = ics_trace_read_json(p1, &err);
    g_assert_null(err);
    assert_same(tr, back);
    g_assert_cmpint(replay(tr, t), ==, replay(back, t));
    g_assert_true(ics_trace_write_json(back, p2, &err));
    char *ta, *tb;
    gsize la, lb;
    g_assert_true(g_file_get_contents(p1, &ta, &la, NULL));
    g_assert_true(g_file_get_contents(p2, &tb, &lb, NULL));
    g_assert_cmpmem(ta, la, tb, lb);
    g_free(ta);
    g_free(tb);
    g_unlink(p1);
    g_unlink(p2);
    g_rmdir(dir);
    g_free(p1);
    g_free(p2);
    g_free(dir);
    ics_trace_free(back);
    ics_trace_free(tr);
    ics_topo_free(t);
    ics_hw_free(hw);
}

/* Bad input: each text, and a piece of the message it must give. */
#define HEAD "{\"format\": \"icsim-trace\", \"version\": 1, "
static const struct {
    const char *text, *expect;
} bad[] = {
    {"", "bad.json:1:1"},
    {"[1]", "$: expected an object"},
    {"{\"version\": 1, \"ranks\": [{}]}", "$.format"},
    {"{\"format\": \"chakra\", \"version\": 1, \"ranks\": [{}]}", "$.format: expected one of"},
    {"{\"format\": \"icsim-trace\", \"version\": 2, \"ranks\": [{}]}", "$.version: expected"},
    {HEAD "\"ranks\": []}", "$.ranks: expected 1 to"},
    {HEAD "\"ranks\": [{}], \"extra\": 1}", "$.extra: expected one of the keys"},
    {HEAD "\"communicators\": {\"a\": []}, \"ranks\": [{}]}",
     "$.communicators.a: expected a non-empty array"},
    {HEAD "\"communicators\": {\"a\": [0, 0]}, \"ranks\": [{}, {}]}",
     "$.communicators.a[1]: expected a distinct rank 0..1, got 0"},
    {HEAD "\"communicators\": {\"a\": [0, 2]}, \"ranks\": [{}, {}]}",
     "$.communicators.a[1]: expected a distinct rank 0..1, got 2"},
    {HEAD "\"communicators\": {\"a\": [0], \"a\": [0]}, \"ranks\": [{}]}",
     "$.communicators.a: expected each key once"},
    {HEAD "\"ranks\": [{\"streams\": [\"x\", \"x\"]}]}",
     "$.ranks[0].streams[1]: expected a distinct stream name"},
    {HEAD "\"ranks\": [{\"opz\": []}]}", "$.ranks[0].opz: expected one of the keys"},
    {HEAD "\"ranks\": [{\"ops\": [{\"op\": \"matmul\"}]}]}",
     "$.ranks[0].ops[0].op: expected one of"},
    {HEAD "\"ranks\": [{\"ops\": [{\"op\": \"compute\"}]}]}", "neither"},
    {HEAD "\"ranks\": [{\"ops\": [{\"op\": \"compute\", \"duration_us\": 1, \"flops\": 1}]}]}",
     "both"},
    {HEAD "\"ranks\": [{\"ops\": [{\"op\": \"compute\", \"duration_us\": -1}]}]}",
     "$.ranks[0].ops[0].duration_us: expected"},
    {HEAD "\"ranks\": [{\"ops\": [{\"op\": \"compute\", \"flops\": 1, \"bytes\": 1, \"work\": "
          "\"fft\"}]}]}",
     "$.ranks[0].ops[0].work: expected one of"},
    {HEAD "\"ranks\": [{\"ops\": [{\"op\": \"compute\", \"duration_us\": 1, \"stream\": "
          "\"comm\"}]}]}",
     "$.ranks[0].ops[0].stream: expected one of the rank's streams"},
    {HEAD "\"ranks\": [{\"ops\": [{\"op\": \"all_reduce\", \"comm\": \"tp\", \"bytes\": 8}]}]}",
     "$.ranks[0].ops[0].comm: expected a communicator of $.communicators, got \"tp\""},
    {HEAD "\"communicators\": {\"tp\": [1]}, \"ranks\": [{\"ops\": [{\"op\": \"all_reduce\", "
          "\"comm\": \"tp\", \"bytes\": 8}]}, {}]}",
     "expected a communicator rank 0 belongs to"},
    {HEAD "\"communicators\": {\"tp\": [0]}, \"ranks\": [{\"ops\": [{\"op\": \"all_reduce\", "
          "\"comm\": \"tp\", \"bytes\": 0}]}]}",
     "$.ranks[0].ops[0].bytes: expected"},
    {HEAD "\"communicators\": {\"tp\": [0]}, \"ranks\": [{\"ops\": [{\"op\": \"broadcast\", "
          "\"comm\": \"tp\", \"bytes\": 8, \"root\": 1}]}]}",
     "$.ranks[0].ops[0].root: expected"},
    {HEAD "\"communicators\": {\"tp\": [0]}, \"ranks\": [{\"ops\": [{\"op\": \"all_reduce\", "
          "\"comm\": \"tp\", \"bytes\": 8, \"dtype\": \"float\"}]}]}",
     "$.ranks[0].ops[0].dtype: expected one of"},
    {HEAD "\"ranks\": [{\"ops\": [{\"op\": \"send\", \"peer\": 0, \"bytes\": 8}]}]}",
     "$.ranks[0].ops[0].peer: expected a rank other than this one"},
    {HEAD "\"ranks\": [{\"ops\": [{\"op\": \"send\", \"peer\": 5, \"bytes\": 8}]}, {}]}",
     "$.ranks[0].ops[0].peer: expected"},
    {HEAD "\"ranks\": [{\"ops\": [{\"op\": \"send\", \"peer\": 1, \"bytes\": 8, \"duration_us\": "
          "3}]}, {}]}",
     "expected no \"flops\" or \"duration_us\" on a send op"},
    {HEAD "\"ranks\": [{\"ops\": [{\"op\": \"compute\", \"duration_us\": 1, \"deps\": "
          "[\"later\"]}, {\"id\": \"later\", \"op\": \"compute\", \"duration_us\": 1}]}]}",
     "$.ranks[0].ops[0].deps[0]: expected the id of an earlier op of rank 0, got \"later\""},
    {HEAD "\"ranks\": [{\"ops\": [{\"id\": \"a\", \"op\": \"compute\", \"duration_us\": 1}, "
          "{\"id\": \"a\", \"op\": \"compute\", \"duration_us\": 1}]}]}",
     "$.ranks[0].ops[1].id: expected an id not used before on rank 0, got \"a\""},
    {HEAD "\"ranks\": [{\"ops\": [{\"op\": \"send\", \"peer\": 1, \"bytes\": 8}]}, {}]}",
     "sends to rank 1 more times than rank 1 receives"},
    {HEAD "\"ranks\": [{\"ops\": [{\"op\": \"send\", \"peer\": 1, \"bytes\": 8}]}, {\"ops\": "
          "[{\"op\": \"recv\", \"peer\": 0, \"bytes\": 16}]}]}",
     "recv from rank 0 expects 16 bytes"},
    {HEAD "\"communicators\": {\"w\": [0, 1]}, \"ranks\": [{\"ops\": [{\"op\": \"all_reduce\", "
          "\"comm\": \"w\", \"bytes\": 8}]}, {\"ops\": [{\"op\": \"all_gather\", \"comm\": \"w\", "
          "\"bytes\": 8}]}]}",
     "differs from rank 0's"},
    {HEAD "\"communicators\": {\"w\": [0, 1]}, \"ranks\": [{\"ops\": [{\"op\": \"all_reduce\", "
          "\"comm\": \"w\", \"bytes\": 8}, {\"op\": \"all_reduce\", \"comm\": \"w\", \"bytes\": "
          "8}]}, {\"ops\": [{\"op\": \"all_reduce\", \"comm\": \"w\", \"bytes\": 8}]}]}",
     "rank 1 issues 1 collectives on communicator 'w', rank 0 issues 2"},
};

static void test_bad(void)
{
    for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
        char *err = NULL;
        ics_trace *t = ics_trace_read_json_text("bad.json", bad[i].text, strlen(bad[i].text), &err);
        if (t || !err || !strstr(err, bad[i].expect))
            g_error("case %zu: expected an error with \"%s\", got %s", i, bad[i].expect,
                    err ? err : "a trace");
        g_assert_true(g_str_has_prefix(err, "bad.json"));
        g_free(err);
        /* and every truncation of it is rejected cleanly, never a crash */
        for (size_t n = 0; n < strlen(bad[i].text); n += 7) {
            ics_trace *tt = ics_trace_read_json_text("cut.json", bad[i].text, n, &err);
            ics_trace_free(tt);
            g_free(err);
            err = NULL;
        }
    }
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/trace_json/example", test_example);
    g_test_add_func("/trace_json/roundtrip", test_roundtrip);
    g_test_add_func("/trace_json/bad", test_bad);
    return g_test_run();
}
