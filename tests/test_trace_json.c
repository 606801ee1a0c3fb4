/* The JSON trace format: the documented example is the shipped file and replays; traces written
 * and read back are the same trace op by op and the same bytes when written again; the doc's
 * key tables are the keys the reader takes; every check of the reader rejects its bad input
 * (tests/bad-input-trace) with a located message; the writer leaves nothing half-written.
 * `-m slow -p /trace_json/million` times a 10^6-op trace written and read. */
#include "core/json.h"
#include "hw/hw.h"
#include "replay/replay.h"
#include "trace/trace.h"
#include "workload/workload.h"

#include <glib.h>
#include <glib/gstdio.h>
#include <stdio.h>
#include <string.h>

#define MIN_BAD_CASES 40

/* ---- helpers -------------------------------------------------------------------------------- */

static char *source_path(const char *a, const char *b)
{
    return g_build_filename(ICS_SOURCE_DIR, a, b, NULL);
}

static ics_topo *open_topo(const char *model, int nodes, ics_hw **hw)
{
    char *path = source_path("hwmodels", model);
    GError *err = NULL;
    *hw = ics_hw_load(path, nodes, &err);
    g_assert_no_error(err);
    g_free(path);
    return ics_topo_new(*hw);
}

static ics_time replay(const ics_trace *tr, const ics_topo *t)
{
    ics_replay_opts o = {
        .tuning = {.nvls_enable = true}, .backend = ics_net_backend("packet"), .p2p_lat_ps = -1};
    GError *err = NULL;
    ics_replay *r = ics_replay_new(tr, t, &o, &err);
    g_assert_no_error(err);
    ics_replay_result res;
    g_assert_true(ics_replay_run(r, &res, &err));
    ics_replay_free(r);
    return res.step_ps;
}

/* Not inlined: GCC -O3 otherwise mistakes pointers into the returned buffer for pointers to
 * the local `text` (-Wdangling-pointer false positive). */
G_GNUC_NO_INLINE static char *slurp(const char *path, gsize *len)
{
    char *text = NULL;
    GError *err = NULL;
    g_assert_true(g_file_get_contents(path, &text, len, &err));
    return text;
}

/* The trace written to memory (transfer full). */
static char *to_text(const ics_trace *t, size_t *len)
{
    char *buf = NULL;
    FILE *f = open_memstream(&buf, len);
    GError *err = NULL;
    g_assert_true(ics_trace_write_json_to(t, f, &err));
    g_assert_no_error(err);
    fclose(f);
    return buf;
}

static ics_trace *from_text(const char *text, size_t len)
{
    GError *err = NULL;
    ics_trace *t = ics_trace_read_json_text("mem.json", text, len, &err);
    if (!t)
        g_error("%s", err->message);
    return t;
}

static bool rooted(const ics_trace_op *op)
{
    return op->coll.op == ICS_COLL_BROADCAST || op->coll.op == ICS_COLL_REDUCE;
}

static void assert_same_op(const ics_trace_op *x, const ics_trace_op *y)
{
    g_assert_cmpint(x->kind, ==, y->kind);
    g_assert_cmpint(x->stream, ==, y->stream);
    g_assert_cmpint(x->cat, ==, y->cat);
    g_assert_cmpstr(x->name, ==, y->name);
    g_assert_cmpint(x->launches, ==, y->launches);
    g_assert_cmpint(x->host_sync, ==, y->host_sync);
    switch (x->kind) {
    case ICS_TOP_COMPUTE:
        g_assert_cmpint(x->duration_ps, ==, y->duration_ps);
        g_assert_cmpfloat(x->flops, ==, y->flops);
        g_assert_cmpfloat(x->mem_bytes, ==, y->mem_bytes);
        g_assert_cmpint(x->dtype, ==, y->dtype);
        g_assert_cmpint(x->work, ==, y->work);
        g_assert_cmpint(x->m, ==, y->m);
        g_assert_cmpint(x->n, ==, y->n);
        g_assert_cmpint(x->k, ==, y->k);
        break;
    case ICS_TOP_COLL:
        g_assert_cmpint(x->comm, ==, y->comm);
        g_assert_cmpint(x->coll.op, ==, y->coll.op);
        g_assert_cmpuint(x->coll.size_bytes, ==, y->coll.size_bytes);
        g_assert_cmpint(x->coll.dtype_bytes, ==, y->coll.dtype_bytes);
        if (rooted(x))
            g_assert_cmpint(x->coll.root, ==, y->coll.root);
        g_assert_cmpint(x->coll.sms, ==, y->coll.sms);
        break;
    default:
        g_assert_cmpint(x->peer, ==, y->peer);
        g_assert_cmpuint(x->bytes, ==, y->bytes);
        g_assert_cmpint(x->tag, ==, y->tag);
    }
}

/* Whether the writer keeps every communicator name: non-empty and distinct. */
static bool names_kept(const ics_trace *t)
{
    for (int c = 0; c < ics_trace_ncomms(t); c++) {
        if (!*ics_trace_comm_name(t, c))
            return false;
        for (int d = 0; d < c; d++)
            if (strcmp(ics_trace_comm_name(t, d), ics_trace_comm_name(t, c)) == 0)
                return false;
    }
    return true;
}

/* a and b are the same trace: communicators, streams, every field of every op, deps. */
static void assert_same(const ics_trace *a, const ics_trace *b)
{
    g_assert_cmpint(ics_trace_nranks(a), ==, ics_trace_nranks(b));
    g_assert_cmpint(ics_trace_ncomms(a), ==, ics_trace_ncomms(b));
    for (int c = 0; c < ics_trace_ncomms(a); c++) {
        int na, nb;
        const int *ra = ics_trace_comm_ranks(a, c, &na), *rb = ics_trace_comm_ranks(b, c, &nb);
        g_assert_cmpmem(ra, na * sizeof *ra, rb, nb * sizeof *rb);
        if (names_kept(a)) /* else renamed: see test_roundtrip_every_field */
            g_assert_cmpstr(ics_trace_comm_name(a, c), ==, ics_trace_comm_name(b, c));
    }
    for (int k = 0; k < ics_trace_nranks(a); k++) {
        g_assert_cmpint(ics_trace_nstreams(a, k), ==, ics_trace_nstreams(b, k));
        for (int s = 0; s < ics_trace_nstreams(a, k); s++)
            g_assert_cmpstr(ics_trace_stream_name(a, k, s), ==, ics_trace_stream_name(b, k, s));
        g_assert_cmpint(ics_trace_nops(a, k), ==, ics_trace_nops(b, k));
        for (int i = 0; i < ics_trace_nops(a, k); i++) {
            assert_same_op(ics_trace_get_op(a, k, i), ics_trace_get_op(b, k, i));
            int nx, ny;
            const int *dx = ics_trace_op_deps(a, k, i, &nx), *dy = ics_trace_op_deps(b, k, i, &ny);
            g_assert_cmpmem(dx, nx * sizeof(int), dy, ny * sizeof(int));
        }
    }
}

/* Written to a file, read back: the same trace; written again: the same bytes. */
static void assert_roundtrip(const ics_trace *tr)
{
    char *dir = g_dir_make_tmp("icsim-trace-XXXXXX", NULL);
    char *p1 = g_build_filename(dir, "a.json", NULL), *p2 = g_build_filename(dir, "b.json", NULL);
    GError *err = NULL;
    g_assert_true(ics_trace_write_json(tr, p1, &err));
    ics_trace *back = ics_trace_read_json(p1, &err);
    if (!back)
        g_error("%s", err->message);
    assert_same(tr, back);
    g_assert_true(ics_trace_write_json(back, p2, &err));
    gsize la, lb;
    char *ta = slurp(p1, &la), *tb = slurp(p2, &lb);
    g_assert_cmpmem(ta, la, tb, lb);
    size_t lm;
    char *tm = to_text(tr, &lm); /* the stream writer writes the file's bytes */
    g_assert_cmpmem(ta, la, tm, lm);
    free(tm);
    g_free(ta);
    g_free(tb);
    g_unlink(p1);
    g_unlink(p2);
    g_assert_cmpint(g_rmdir(dir), ==, 0); /* no temporary file left behind */
    g_free(p1);
    g_free(p2);
    g_free(dir);
    ics_trace_free(back);
}

/* ---- the example ---------------------------------------------------------------------------- */

/* docs/trace-format.md's example is scenarios/traces/example.json, which reads and replays. */
static void test_example(void)
{
    char *doc_path = source_path("docs", "trace-format.md");
    char *path = source_path("scenarios/traces", "example.json");
    gsize ld, lf;
    char *doc = slurp(doc_path, &ld), *file = slurp(path, &lf);
    const char *start = strstr(doc, "```json\n");
    g_assert_nonnull(start);
    start += strlen("```json\n");
    const char *end = strstr(start, "```\n");
    g_assert_nonnull(end);
    g_assert_cmpmem(start, end - start, file, lf);

    GError *err = NULL;
    ics_trace *tr = ics_trace_read_json(path, &err);
    if (!tr)
        g_error("%s", err->message);
    g_assert_cmpint(ics_trace_nranks(tr), ==, 4);
    g_assert_cmpint(ics_trace_ncomms(tr), ==, 3);
    g_assert_cmpstr(ics_trace_comm_name(tr, 2), ==, "world");
    g_assert_cmpint(ics_trace_nstreams(tr, 2), ==, 2);
    g_assert_cmpint(ics_trace_nops(tr, 2), ==, 5);
    const ics_trace_op *op = ics_trace_get_op(tr, 2, 1);
    g_assert_cmpint(op->kind, ==, ICS_TOP_COMPUTE);
    g_assert_cmpint(op->cat, ==, ICS_CAT_COMPUTE);
    g_assert_cmpint(op->duration_ps, ==, 2500 * ICS_PS_PER_US);
    int nd;
    const int *deps = ics_trace_op_deps(tr, 2, 1, &nd);
    g_assert_cmpint(nd, ==, 1);
    g_assert_cmpint(deps[0], ==, 0);
    op = ics_trace_get_op(tr, 2, 0);
    g_assert_cmpint(op->kind, ==, ICS_TOP_RECV);
    g_assert_cmpint(op->stream, ==, 1);
    g_assert_cmpint(op->peer, ==, 0);
    op = ics_trace_get_op(tr, 0, 0);
    g_assert_cmpint(op->duration_ps, ==, 0);
    g_assert_cmpint(op->work, ==, ICS_WORK_GEMM);
    g_assert_cmpint(op->dtype, ==, ICS_DTYPE_BF16);
    g_assert_cmpfloat(op->flops, ==, 2.5e12);
    g_assert_cmpfloat(op->mem_bytes, ==, 4e9);
    g_assert_cmpint(op->m, ==, 8192);
    op = ics_trace_get_op(tr, 0, 1);
    g_assert_cmpint(op->coll.op, ==, ICS_COLL_ALL_REDUCE);
    g_assert_cmpint(op->coll.dtype_bytes, ==, 2);
    g_assert_cmpint(op->cat, ==, ICS_CAT_TP);
    op = ics_trace_get_op(tr, 3, 4);
    g_assert_cmpint(op->coll.op, ==, ICS_COLL_BROADCAST);
    g_assert_cmpint(op->coll.root, ==, 2);
    g_assert_cmpint(op->coll.dtype_bytes, ==, 4); /* the default, fp32 */
    g_assert_cmpint(op->cat, ==, ICS_CAT_OTHER);
    ics_hw *hw;
    ics_topo *t = open_topo("dgx-h100.json", 0, &hw);
    /* stage 1 waits for stage 0's forward pass (GPU-timed) and its send, then computes 2.5 ms */
    g_assert_cmpint(replay(tr, t), >, 2500 * ICS_PS_PER_US);
    assert_roundtrip(tr);
    ics_topo_free(t);
    ics_hw_free(hw);
    ics_trace_free(tr);
    g_free(doc);
    g_free(file);
    g_free(doc_path);
    g_free(path);
}

/* ---- round trips ---------------------------------------------------------------------------- */

static ics_trace *small_job(const ics_hw *hw, bool fold)
{
    ics_model m = ics_model_make("small", 4, 2048, 16, 8192, 32000, 1024);
    ics_layout l = ics_layout_defaults();
    l.tp = 4;
    l.pp = 2;
    l.dp = 2;
    l.gbs = 8;
    l.sp = true;
    l.recompute = ICS_RECOMPUTE_FULL;
    l.fold = fold;
    GError *err = NULL;
    ics_trace *tr = ics_workload_build(&m, &l, ics_hw_node_of(hw)->gpu_type, &err);
    if (!tr)
        g_error("%s", err->message);
    return tr;
}

/* A generated job (2 stages x TP 4 x DP 2), every rank and folded: the same trace back, the
 * same replayed step. */
static void test_roundtrip_generated(void)
{
    ics_hw *hw;
    ics_topo *t = open_topo("superpod-h100-ndr.json", 2, &hw);
    for (int fold = 0; fold <= 1; fold++) {
        ics_trace *tr = small_job(hw, fold);
        assert_roundtrip(tr);
        size_t len;
        char *text = to_text(tr, &len);
        ics_trace *back = from_text(text, len);
        g_assert_cmpint(replay(back, t), ==, replay(tr, t));
        ics_trace_free(back);
        free(text);
        ics_trace_free(tr);
    }
    ics_topo_free(t);
    ics_hw_free(hw);
}

/* A trace with every field the format has, and names the writer must escape or rename. */
static ics_trace *every_field(void)
{
    ics_trace *t = ics_trace_new(4);
    const int all[] = {3, 1, 0, 2}, pair[] = {0, 1};
    ics_trace_add_comm(t, all, 4, "all \"ranks\"\n");
    ics_trace_add_comm(t, pair, 2, "");        /* written as "unnamed" */
    ics_trace_add_comm(t, pair, 2, "unnamed"); /* written as "unnamed#2" */
    for (int k = 0; k < 4; k++) {
        ics_trace_add_stream(t, k, "main");
        ics_trace_add_stream(t, k, "side\\\t\xc3\xa9");
    }
    ics_trace_op c = {.kind = ICS_TOP_COMPUTE, .name = "t", .duration_ps = 1234567891};
    ics_trace_add_op(t, 0, &c, NULL, 0);
    c = (ics_trace_op){.kind = ICS_TOP_COMPUTE,
                       .stream = 1,
                       .cat = ICS_CAT_OTHER,
                       .flops = 0.1,
                       .mem_bytes = 3,
                       .dtype = ICS_DTYPE_FP8,
                       .work = ICS_WORK_ATTENTION,
                       .m = 1,
                       .n = 2,
                       .k = 3,
                       .launches = ICS_TRACE_MAX_LAUNCHES,
                       .host_sync = true};
    ics_trace_add_op(t, 0, &c, NULL, 0);
    c = (ics_trace_op){.kind = ICS_TOP_COMPUTE,
                       .duration_ps = 1,
                       .flops = 1.0 / 3,
                       .mem_bytes = 1e15,
                       .dtype = ICS_DTYPE_FP4,
                       .work = ICS_WORK_ELEMENTWISE};
    const int d01[] = {1, 0};
    ics_trace_add_op(t, 0, &c, d01, 2);
    const ics_coll_op ops[] = {ICS_COLL_ALL_REDUCE, ICS_COLL_ALL_GATHER, ICS_COLL_REDUCE_SCATTER,
                               ICS_COLL_ALLTOALL,   ICS_COLL_BROADCAST,  ICS_COLL_REDUCE};
    const int esize[] = {1, 2, 4, 8, 2, 8};
    for (int k = 0; k < 4; k++)
        for (size_t j = 0; j < G_N_ELEMENTS(ops); j++) {
            ics_trace_op o = {.kind = ICS_TOP_COLL,
                              .cat = (ics_trace_cat)(j % ICS_CAT_COUNT),
                              .comm = 0,
                              .coll = {.op = ops[j],
                                       .size_bytes = 4096 * (j + 1),
                                       .dtype_bytes = esize[j],
                                       .root = ops[j] == ICS_COLL_REDUCE ? 3 : 0,
                                       .sms = ops[j] == ICS_COLL_ALLTOALL ? 20 : 0}};
            ics_trace_add_op(t, k, &o, NULL, 0);
        }
    for (int k = 0; k < 2; k++) { /* ranks 0 and 1: both pair communicators */
        ics_trace_op o = {.kind = ICS_TOP_COLL,
                          .comm = 1 + k,
                          .coll = {.op = ICS_COLL_BROADCAST, .size_bytes = 8, .dtype_bytes = 4}};
        ics_trace_add_op(t, 0, &o, NULL, 0);
        ics_trace_add_op(t, 1, &o, NULL, 0);
    }
    ics_trace_op s = {
        .kind = ICS_TOP_SEND, .cat = ICS_CAT_PP, .peer = 3, .bytes = 5, .launches = 1};
    int last = ics_trace_add_op(t, 2, &s, NULL, 0);
    ics_trace_op r = {.kind = ICS_TOP_RECV, .stream = 1, .peer = 2, .bytes = 5};
    ics_trace_add_op(t, 3, &r, NULL, 0);
    ics_trace_add_op(t, 2, &c, &last, 1);
    return t;
}

static void test_roundtrip_every_field(void)
{
    ics_trace *t = every_field();
    GError *err = NULL;
    g_assert_true(ics_trace_check(t, &err));
    size_t len;
    char *text = to_text(t, &len);
    ics_trace *back = from_text(text, len);
    /* names the format cannot hold are made unique and non-empty, and only those */
    g_assert_cmpstr(ics_trace_comm_name(back, 0), ==, "all \"ranks\"\n");
    g_assert_cmpstr(ics_trace_comm_name(back, 1), ==, "unnamed");
    g_assert_cmpstr(ics_trace_comm_name(back, 2), ==, "unnamed#2");
    assert_same(t, back);
    g_assert_nonnull(strstr(text, "\"duration_us\": 1234.567891,"));
    g_assert_nonnull(strstr(text, "\"duration_us\": 0.000001,"));
    g_assert_nonnull(strstr(text, "\"flops\": 0.1,"));
    g_assert_null(strstr(text, "\"stream\": \"main\"")); /* defaults are left out */
    assert_roundtrip(t);
    ics_trace_free(back);
    free(text);
    ics_trace_free(t);
}

/* ---- the writer's failures ------------------------------------------------------------------ */

static int count_entries(const char *dir)
{
    GDir *d = g_dir_open(dir, 0, NULL);
    int n = 0;
    while (g_dir_read_name(d))
        n++;
    g_dir_close(d);
    return n;
}

/* A trace the format cannot hold, and a directory that does not exist: refused with the reason,
 * the old file untouched, nothing left behind. */
static void test_write_failures(void)
{
    char *dir = g_dir_make_tmp("icsim-trace-XXXXXX", NULL);
    char *path = g_build_filename(dir, "t.json", NULL);
    g_assert_true(g_file_set_contents(path, "old", 3, NULL));
    ics_trace *t = ics_trace_new(2);
    const int both[] = {0, 1};
    ics_trace_add_comm(t, both, 2, "w");
    ics_trace_add_stream(t, 0, "compute");
    ics_trace_add_stream(t, 1, "compute");
    ics_trace_op o = {.kind = ICS_TOP_COLL,
                      .coll = {.op = ICS_COLL_ALL_REDUCE, .size_bytes = 9, .dtype_bytes = 3}};
    ics_trace_add_op(t, 0, &o, NULL, 0);
    ics_trace_add_op(t, 1, &o, NULL, 0);
    GError *err = NULL;
    g_assert_false(ics_trace_write_json(t, path, &err));
    g_assert_nonnull(strstr(err->message, "rank 0 op 0"));
    g_assert_nonnull(strstr(err->message, "3-byte elements"));
    g_assert_error(err, ICS_ERROR, ICS_ERROR_INPUT);
    g_clear_error(&err);
    gsize len;
    char *text = slurp(path, &len);
    g_assert_cmpstr(text, ==, "old");
    g_free(text);
    g_assert_cmpint(count_entries(dir), ==, 1);

    /* a name that is not UTF-8 (Chakra traces may carry one): JSON could not give it back */
    ics_trace *latin1 = ics_trace_new(1);
    const int one[] = {0};
    ics_trace_add_comm(latin1, one, 1, "n\xe9ud");
    g_assert_false(ics_trace_write_json(latin1, path, &err));
    g_assert_nonnull(strstr(err->message, "communicator \"n\\351ud\": the trace format cannot "
                                          "hold a name that is not UTF-8"));
    g_clear_error(&err);
    ics_trace_free(latin1);
    text = slurp(path, &len);
    g_assert_cmpstr(text, ==, "old");
    g_free(text);

    char *nowhere = g_build_filename(dir, "no-such-dir", "t.json", NULL);
    ics_trace *ok = ics_trace_new(1);
    g_assert_false(ics_trace_write_json(ok, nowhere, &err));
    g_assert_true(g_str_has_prefix(err->message, nowhere));
    g_assert_nonnull(strstr(err->message, "cannot write"));
    g_assert_error(err, ICS_ERROR, ICS_ERROR_IO);
    g_clear_error(&err);
    g_assert_cmpint(count_entries(dir), ==, 1);

    g_unlink(path);
    g_rmdir(dir);
    ics_trace_free(ok);
    ics_trace_free(t);
    g_free(nowhere);
    g_free(path);
    g_free(dir);
}

/* ---- the documented keys are the keys the reader takes -------------------------------------- */

/* The keys in the first column of the table under "### heading" (transfer full). */
static GPtrArray *doc_keys(const char *doc, const char *heading)
{
    GPtrArray *keys = g_ptr_array_new_with_free_func(g_free);
    char *h = g_strdup_printf("\n### %s\n", heading);
    const char *p = strstr(doc, h);
    g_free(h);
    g_assert_nonnull(p);
    const char *end = strstr(p + 1, "\n#");
    GRegex *row = g_regex_new("^\\| ([^|]*)\\|", G_REGEX_MULTILINE, 0, NULL);
    GRegex *tick = g_regex_new("`([a-z_]+)`", 0, 0, NULL);
    char *section = g_strndup(p, end ? (gsize)(end - p) : strlen(p));
    GMatchInfo *m;
    g_regex_match(row, section, 0, &m);
    for (; g_match_info_matches(m); g_match_info_next(m, NULL)) {
        char *cell = g_match_info_fetch(m, 1);
        GMatchInfo *t;
        g_regex_match(tick, cell, 0, &t);
        for (; g_match_info_matches(t); g_match_info_next(t, NULL))
            g_ptr_array_add(keys, g_match_info_fetch(t, 1));
        g_match_info_free(t);
        g_free(cell);
    }
    g_match_info_free(m);
    g_free(section);
    g_regex_unref(row);
    g_regex_unref(tick);
    return keys;
}

/* The keys the reader lists when it meets an unknown key in `text` (transfer full). */
static char **reader_keys(const char *text)
{
    GError *err = NULL;
    ics_trace *t = ics_trace_read_json_text("k.json", text, strlen(text), &err);
    g_assert_null(t);
    const char *from = strstr(err->message, "expected one of the keys "),
               *to = strstr(err->message, ", got \"zz\"");
    if (!from || !to)
        g_error("%s: %s", text, err->message);
    from += strlen("expected one of the keys ");
    char *list = g_strndup(from, to - from);
    char **keys = g_strsplit(list, ", ", -1);
    g_free(list);
    g_clear_error(&err);
    return keys;
}

static void assert_same_keys(const char *what, GPtrArray *doc, char **reader)
{
    g_assert_cmpuint(doc->len, ==, g_strv_length(reader));
    for (guint i = 0; i < doc->len; i++)
        if (!g_strv_contains((const char *const *)reader, g_ptr_array_index(doc, i)))
            g_error("%s: docs/trace-format.md lists `%s`, the reader does not take it", what,
                    (char *)g_ptr_array_index(doc, i));
}

/* The Collectives table's keys only alltoall takes. */
static bool alltoall_only(const char *key)
{
    return strcmp(key, "splits") == 0 || strcmp(key, "sms") == 0;
}

static void test_doc_keys(void)
{
#define TOP   "{\"format\": \"icsim-trace\", \"version\": 1, "
#define OP(x) TOP "\"ranks\": [{\"ops\": [{\"op\": \"" x "\", \"zz\": 1}]}]}"
    static const struct {
        const char *what, *tables[2], *text;
    } cases[] = {
        {"top level", {"Top level", NULL}, TOP "\"ranks\": [{}], \"zz\": 1}"},
        {"rank", {"A rank", NULL}, TOP "\"ranks\": [{\"zz\": 1}]}"},
        {"compute", {"Every op", "Compute ops"}, OP("compute")},
        {"broadcast", {"Every op", "Collectives"}, OP("broadcast")},
        {"reduce", {"Every op", "Collectives"}, OP("reduce")},
        {"send", {"Every op", "Sends and recvs"}, OP("send")},
        {"recv", {"Every op", "Sends and recvs"}, OP("recv")},
    };
    static const char *const unrooted[] = {"all_reduce", "all_gather", "reduce_scatter",
                                           "alltoall"};
    char *path = source_path("docs", "trace-format.md");
    gsize len;
    char *doc = slurp(path, &len);
    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        GPtrArray *keys = doc_keys(doc, cases[i].tables[0]);
        if (cases[i].tables[1]) {
            GPtrArray *more = doc_keys(doc, cases[i].tables[1]);
            for (guint j = 0; j < more->len; j++) /* `splits`, `sms`: alltoall's alone */
                if (!alltoall_only(g_ptr_array_index(more, j)))
                    g_ptr_array_add(keys, g_strdup(g_ptr_array_index(more, j)));
            g_ptr_array_free(more, TRUE);
        }
        char **rk = reader_keys(cases[i].text);
        assert_same_keys(cases[i].what, keys, rk);
        g_strfreev(rk);
        g_ptr_array_free(keys, TRUE);
    }
    /* the Collectives table but `root`, and `splits` and `sms` but for alltoall */
    for (size_t i = 0; i < G_N_ELEMENTS(unrooted); i++) {
        char *text = g_strdup_printf(OP("%s"), unrooted[i]);
        char **rk = reader_keys(text);
        GPtrArray *keys = doc_keys(doc, "Every op"), *coll = doc_keys(doc, "Collectives");
        for (guint j = 0; j < coll->len; j++)
            if (strcmp(g_ptr_array_index(coll, j), "root") != 0 &&
                (!alltoall_only(g_ptr_array_index(coll, j)) ||
                 strcmp(unrooted[i], "alltoall") == 0))
                g_ptr_array_add(keys, g_strdup(g_ptr_array_index(coll, j)));
        assert_same_keys(unrooted[i], keys, rk);
        g_ptr_array_free(coll, TRUE);
        g_ptr_array_free(keys, TRUE);
        g_strfreev(rk);
        g_free(text);
    }
    g_free(doc);
    g_free(path);
#undef OP
#undef TOP
}

/* ---- bad input ------------------------------------------------------------------------------ */

static int cmp_names(gconstpointer a, gconstpointer b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorted names of the files in dir ending in suffix (transfer full). */
static GPtrArray *list_files(const char *dir, const char *suffix)
{
    GPtrArray *names = g_ptr_array_new_with_free_func(g_free);
    GDir *d = g_dir_open(dir, 0, NULL);
    g_assert_nonnull(d);
    for (const char *n; (n = g_dir_read_name(d));)
        if (g_str_has_suffix(n, suffix))
            g_ptr_array_add(names, g_strdup(n));
    g_dir_close(d);
    g_ptr_array_sort(names, cmp_names);
    return names;
}

/* "FILE:LINE:COL: $PATH: expected ..., got ..." on one line. */
static void assert_shape(const char *file, const char *msg)
{
    char *re = g_strdup_printf("^%s:[0-9]+:[0-9]+: \\$[^ ]*: expected .*, got ", file);
    if (!g_regex_match_simple(re, msg, 0, 0) || strchr(msg, '\n'))
        g_error("%s: message has the wrong shape: %s", file, msg);
    g_free(re);
}

/* Each tests/bad-input-trace/NAME.json is rejected with a message holding every line of
 * NAME.expect, in the house shape; from memory, with the same message. */
static void test_bad_inputs(void)
{
    GPtrArray *cases = list_files("bad-input-trace", ".json");
    g_assert_cmpuint(cases->len, >=, MIN_BAD_CASES);
    for (guint i = 0; i < cases->len; i++) {
        const char *name = g_ptr_array_index(cases, i);
        char *file = g_strdup_printf("bad-input-trace/%s", name);
        char *exp_file = g_strdup_printf("bad-input-trace/%.*s.expect",
                                         (int)(strlen(name) - strlen(".json")), name);
        gsize len;
        char *expect = NULL;
        if (!g_file_get_contents(exp_file, &expect, &len, NULL))
            g_error("%s: no .expect beside it", file);
        GError *err = NULL;
        ics_trace *t = ics_trace_read_json(file, &err);
        if (t)
            g_error("%s: read, expected an error containing: %s", file, expect);
        char **lines = g_strsplit(g_strchomp(expect), "\n", -1);
        for (char **l = lines; *l; l++)
            if (**l && !strstr(err->message, *l))
                g_error("%s:\n  message: %s\n  expected it to contain: %s", file, err->message, *l);
        assert_shape(file, err->message);
        g_assert_error(err, ICS_JSON_ERROR, ICS_JSON_ERROR_INPUT); /* the reader's, not a copy */
        char *text = slurp(file, &len);
        GError *err2 = NULL;
        g_assert_null(ics_trace_read_json_text(file, text, len, &err2));
        g_assert_cmpstr(err2->message, ==, err->message);
        g_clear_error(&err2);
        g_free(text);
        g_strfreev(lines);
        g_clear_error(&err);
        g_free(expect);
        g_free(exp_file);
        g_free(file);
    }
    GPtrArray *side = list_files("bad-input-trace", ".expect");
    g_assert_cmpuint(side->len, ==, cases->len); /* and no .expect without its case */
    g_ptr_array_free(side, TRUE);
    g_ptr_array_free(cases, TRUE);
}

/* What is not a readable regular file is named, not read. */
static void test_bad_files(void)
{
    GError *err = NULL;
    g_assert_null(ics_trace_read_json("bad-input-trace", &err));
    g_assert_cmpstr(err->message, ==, "bad-input-trace: expected a regular file, got a directory");
    g_assert_error(err, ICS_JSON_ERROR, ICS_JSON_ERROR_INPUT);
    g_clear_error(&err);
    g_assert_null(ics_trace_read_json("bad-input-trace/no-such-file.json", &err));
    g_assert_true(
        g_str_has_prefix(err->message, "bad-input-trace/no-such-file.json: expected a readable"));
    g_clear_error(&err);
}

/* ---- scale ---------------------------------------------------------------------------------- */

/* A generated job of over 10^6 ops written and read back, timed; same trace. */
static void test_million(void)
{
    if (!g_test_slow()) {
        g_test_skip("slow: run with -m slow");
        return;
    }
    ics_hw *hw;
    ics_topo *t = open_topo("superpod-h100-ndr.json", 8, &hw);
    ics_model m = ics_model_make("deep", 96, 2048, 16, 8192, 32000, 1024);
    ics_layout l = ics_layout_defaults();
    l.tp = 8;
    l.pp = 4;
    l.dp = 2;
    l.gbs = 192;
    l.fold = false;
    GError *err = NULL;
    ics_trace *tr = ics_workload_build(&m, &l, ics_hw_node_of(hw)->gpu_type, &err);
    if (!tr)
        g_error("%s", err->message);
    long ops = 0;
    for (int k = 0; k < ics_trace_nranks(tr); k++)
        ops += ics_trace_nops(tr, k);
    g_assert_cmpint(ops, >=, 1000000);
    char *dir = g_dir_make_tmp("icsim-trace-XXXXXX", NULL);
    char *path = g_build_filename(dir, "big.json", NULL);
    gint64 t0 = g_get_monotonic_time();
    g_assert_true(ics_trace_write_json(tr, path, &err));
    gint64 t1 = g_get_monotonic_time();
    ics_trace *back = ics_trace_read_json(path, &err);
    gint64 t2 = g_get_monotonic_time();
    if (!back)
        g_error("%s", err->message);
    GStatBuf st;
    g_assert_cmpint(g_stat(path, &st), ==, 0);
    g_test_message("%ld ops on %d ranks, %.1f MB: written in %.2f s, read in %.2f s", ops,
                   ics_trace_nranks(tr), st.st_size / 1e6, (t1 - t0) / 1e6, (t2 - t1) / 1e6);
    assert_same(tr, back);
    g_unlink(path);
    g_rmdir(dir);
    g_free(path);
    g_free(dir);
    ics_trace_free(back);
    ics_trace_free(tr);
    ics_topo_free(t);
    ics_hw_free(hw);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    if (g_chdir(ICS_SOURCE_DIR "/tests") != 0)
        g_error("cannot enter %s/tests", ICS_SOURCE_DIR);
    g_test_add_func("/trace_json/example", test_example);
    g_test_add_func("/trace_json/roundtrip-generated", test_roundtrip_generated);
    g_test_add_func("/trace_json/roundtrip-every-field", test_roundtrip_every_field);
    g_test_add_func("/trace_json/write-failures", test_write_failures);
    g_test_add_func("/trace_json/doc-keys", test_doc_keys);
    g_test_add_func("/trace_json/bad-inputs", test_bad_inputs);
    g_test_add_func("/trace_json/bad-files", test_bad_files);
    g_test_add_func("/trace_json/million", test_million);
    return g_test_run();
}
