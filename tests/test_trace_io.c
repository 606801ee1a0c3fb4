/* Trace formats. JSON: the documented example reads and replays; a generated trace written and
 * read back is the same trace op by op and replays to the same step; every check of the reader
 * rejects its bad input with a located message. Chakra: the same job written as Chakra and as
 * JSON reads back to the same trace and the same step time; a trace with only Chakra's standard
 * attributes (nodes out of order, metadata nodes, communicator groups) reads as Chakra means it;
 * broken files give clear errors. */
#include "hw/hw.h"
#include "replay/replay.h"
#include "trace/trace.h"
#include "workload/workload.h"

#include <glib.h>
#include <glib/gstdio.h>
#include <string.h>

#include "et_def.pb-c.h"

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

/* The example of docs/trace-format.md (scenarios/traces/example.json) reads and replays. */
static void test_example(void)
{
    char *path = g_build_filename(ICS_SOURCE_DIR, "scenarios", "traces", "example.json", NULL);
    GError *err = NULL;
    ics_trace *tr = ics_trace_read_json(path, &err);
    g_assert_no_error(err);
    g_assert_cmpint(ics_trace_nranks(tr), ==, 4);
    g_assert_cmpint(ics_trace_ncomms(tr), ==, 3);
    g_assert_cmpint(ics_trace_nops(tr, 2), ==, 5);
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
            g_assert_cmpint(x->tag, ==, y->tag);
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
    GError *err = NULL;
    ics_trace *tr = ics_workload_build(&m, &l, ics_hw_node_of(hw)->gpu_type, &err);
    g_assert_no_error(err);
    char *dir = g_dir_make_tmp("icsim-trace-XXXXXX", NULL);
    char *p1 = g_build_filename(dir, "a.json", NULL), *p2 = g_build_filename(dir, "b.json", NULL);
    g_assert_true(ics_trace_write_json(tr, p1, &err));
    ics_trace *back = ics_trace_read_json(p1, &err);
    g_assert_no_error(err);
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
     "expected no \"duration_us\" on send ops"},
    {HEAD "\"ranks\": [{\"ops\": [{\"op\": \"compute\", \"duration_us\": 1, \"deps\": "
          "[\"later\"]}, {\"id\": \"later\", \"op\": \"compute\", \"duration_us\": 1}]}]}",
     "$.ranks[0].ops[0].deps[0]: expected the id of an earlier op of rank 0, got \"later\""},
    {HEAD "\"ranks\": [{\"ops\": [{\"id\": \"a\", \"op\": \"compute\", \"duration_us\": 1}, "
          "{\"id\": \"a\", \"op\": \"compute\", \"duration_us\": 1}]}]}",
     "$.ranks[0].ops[1].id: expected an id not used before on rank 0, got \"a\""},
    {HEAD "\"ranks\": [{\"ops\": [{\"op\": \"send\", \"peer\": 1, \"bytes\": 8}]}, {}]}",
     "expected rank 1 to receive from rank 0 as often as it sends there"},
    {HEAD "\"ranks\": [{\"ops\": [{\"op\": \"send\", \"peer\": 1, \"bytes\": 8}]}, {\"ops\": "
          "[{\"op\": \"recv\", \"peer\": 0, \"bytes\": 16}]}]}",
     "$.ranks[1].ops[0].bytes: expected 8 as the matching send"},
    {HEAD "\"communicators\": {\"w\": [0, 1]}, \"ranks\": [{\"ops\": [{\"op\": \"all_reduce\", "
          "\"comm\": \"w\", \"bytes\": 8}]}, {\"ops\": [{\"op\": \"all_gather\", \"comm\": \"w\", "
          "\"bytes\": 8}]}]}",
     "expected collective #1 on \"w\" to be rank 0's"},
    {HEAD "\"communicators\": {\"w\": [0, 1]}, \"ranks\": [{\"ops\": [{\"op\": \"all_reduce\", "
          "\"comm\": \"w\", \"bytes\": 8}, {\"op\": \"all_reduce\", \"comm\": \"w\", \"bytes\": "
          "8}]}, {\"ops\": [{\"op\": \"all_reduce\", \"comm\": \"w\", \"bytes\": 8}]}]}",
     "$.ranks[1].ops: expected as many collectives on \"w\" as rank 0 issues (2), got 1"},
};

static void test_bad(void)
{
    for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
        GError *err = NULL;
        ics_trace *t = ics_trace_read_json_text("bad.json", bad[i].text, strlen(bad[i].text), &err);
        if (t || !err || !strstr(err->message, bad[i].expect))
            g_error("case %zu: expected an error with \"%s\", got %s", i, bad[i].expect,
                    err ? err->message : "a trace");
        g_assert_true(g_str_has_prefix(err->message, "bad.json"));
        g_clear_error(&err);
        /* and every truncation of it is rejected cleanly, never a crash */
        for (size_t n = 0; n < strlen(bad[i].text); n += 7) {
            ics_trace *tt = ics_trace_read_json_text("cut.json", bad[i].text, n, &err);
            ics_trace_free(tt);
            g_clear_error(&err);
        }
    }
}

/* ---- Chakra ---------------------------------------------------------------------------------- */

static ics_trace *small_job(ics_hw **hw, ics_topo **t)
{
    *t = open_topo("superpod-h100-ndr.json", 2, hw);
    ics_model m = ics_model_make("small", 4, 2048, 16, 8192, 32000, 1024);
    ics_layout l = ics_layout_defaults();
    l.tp = 4;
    l.pp = 2;
    l.dp = 2;
    l.gbs = 8;
    l.recompute = ICS_RECOMPUTE_FULL;
    GError *err = NULL;
    ics_trace *tr = ics_workload_build(&m, &l, ics_hw_node_of(*hw)->gpu_type, &err);
    g_assert_no_error(err);
    return tr;
}

/* The same job as Chakra and as JSON: both read back to the generated trace, same step time. */
static void test_chakra_roundtrip(void)
{
    ics_hw *hw;
    ics_topo *t;
    ics_trace *tr = small_job(&hw, &t);
    char *dir = g_dir_make_tmp("icsim-chakra-XXXXXX", NULL);
    char *prefix = g_build_filename(dir, "job", NULL),
         *js = g_build_filename(dir, "job.json", NULL);
    GError *err = NULL;
    g_assert_true(ics_trace_write_chakra(tr, prefix, &err));
    g_assert_true(ics_trace_write_json(tr, js, &err));
    ics_trace *ch = ics_trace_read_chakra(prefix, NULL, &err);
    g_assert_no_error(err);
    ics_trace *jt = ics_trace_read_json(js, &err);
    g_assert_no_error(err);
    assert_same(tr, ch);
    assert_same(tr, jt);
    ics_time step = replay(tr, t);
    g_assert_cmpint(replay(ch, t), ==, step);
    g_assert_cmpint(replay(jt, t), ==, step);
    /* one rank's file names the whole trace too */
    char *one = g_strdup_printf("%s.3.et", prefix);
    ics_trace *again = ics_trace_read_chakra(one, NULL, &err);
    g_assert_no_error(err);
    g_assert_cmpint(ics_trace_nranks(again), ==, ics_trace_nranks(tr));
    ics_trace_free(again);
    g_free(one);
    for (int k = 0; k < ics_trace_nranks(tr); k++) {
        char *f = g_strdup_printf("%s.%d.et", prefix, k);
        g_unlink(f);
        g_free(f);
    }
    char *groups = g_strdup_printf("%s.comm_groups.json", prefix);
    g_unlink(groups);
    g_unlink(js);
    g_rmdir(dir);
    g_free(groups);
    g_free(js);
    g_free(prefix);
    g_free(dir);
    ics_trace_free(ch);
    ics_trace_free(jt);
    ics_trace_free(tr);
    ics_topo_free(t);
    ics_hw_free(hw);
}

/* Writing Chakra by hand, as other tools produce it. */
typedef struct {
    ChakraProtoMsg__AttributeProto a[4], *p[4];
    int n;
} hattrs;

static void hattr(hattrs *h, const char *name, int64_t v, const char *s)
{
    ChakraProtoMsg__AttributeProto *a = &h->a[h->n];
    chakra_proto_msg__attribute_proto__init(a);
    a->name = (char *)name;
    if (s) {
        a->value_case = CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_STRING_VAL;
        a->string_val = (char *)s;
    } else {
        a->value_case = CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_UINT64_VAL;
        a->uint64_val = (uint64_t)v;
    }
    h->p[h->n++] = a;
}

static void put_frame(GByteArray *out, const ProtobufCMessage *m)
{
    size_t n = protobuf_c_message_get_packed_size(m);
    uint8_t *buf = g_malloc(n);
    protobuf_c_message_pack(m, buf);
    for (uint64_t v = n;;) {
        uint8_t b = v & 0x7f;
        v >>= 7;
        b |= v ? 0x80 : 0;
        g_byte_array_append(out, &b, 1);
        if (!v)
            break;
    }
    g_byte_array_append(out, buf, (guint)n);
    g_free(buf);
}

static void hnode(GByteArray *out, uint64_t id, int type, uint64_t dur, const uint64_t *deps,
                  int nd, hattrs *h)
{
    ChakraProtoMsg__Node n;
    chakra_proto_msg__node__init(&n);
    n.id = id;
    n.name = (char *)"n";
    n.type = type;
    n.duration_micros = dur;
    n.data_deps = (uint64_t *)deps;
    n.n_data_deps = (size_t)nd;
    n.attr = h ? h->p : NULL;
    n.n_attr = h ? (size_t)h->n : 0;
    put_frame(out, &n.base);
}

static GByteArray *hfile(void)
{
    GByteArray *out = g_byte_array_new();
    ChakraProtoMsg__GlobalMetadata m;
    chakra_proto_msg__global_metadata__init(&m);
    m.version = (char *)"0.0.4";
    put_frame(out, &m.base);
    return out;
}

static void save(const char *path, GByteArray *b)
{
    g_assert_true(g_file_set_contents(path, (const char *)b->data, b->len, NULL));
    g_byte_array_free(b, TRUE);
}

/* Two ranks with Chakra's standard attributes only: rank 0's compute node comes after the
 * all-reduce that depends on it in the file, and a metadata node sits between them; rank 1
 * receives from rank 0. With a groups file the all-reduce runs on group "g". */
static void write_plain(const char *prefix, bool with_cycle, int comm_type)
{
    GByteArray *f0 = hfile();
    hattrs ar = {.n = 0}, snd = {.n = 0};
    hattr(&ar, "comm_type", comm_type, NULL);
    hattr(&ar, "comm_size", 1 << 20, NULL);
    hattr(&ar, "pg_name", 0, "g");
    uint64_t d_meta = 5, d_comp = 7, d_ar = 9;
    hnode(f0, 9, CHAKRA_PROTO_MSG__NODE_TYPE__COMM_COLL_NODE, 0, &d_meta, 1, &ar);
    hnode(f0, 5, CHAKRA_PROTO_MSG__NODE_TYPE__METADATA_NODE, 0, &d_comp, 1, NULL);
    hnode(f0, 7, CHAKRA_PROTO_MSG__NODE_TYPE__COMP_NODE, 120, with_cycle ? &d_ar : NULL, with_cycle,
          NULL);
    hattr(&snd, "comm_dst", 1, NULL);
    hattr(&snd, "comm_size", 4096, NULL);
    hnode(f0, 11, CHAKRA_PROTO_MSG__NODE_TYPE__COMM_SEND_NODE, 0, &d_ar, 1, &snd);
    char *p0 = g_strdup_printf("%s.0.et", prefix);
    save(p0, f0);
    GByteArray *f1 = hfile();
    hattrs rcv = {.n = 0};
    hattr(&rcv, "comm_src", 0, NULL);
    hattr(&rcv, "comm_size", 4096, NULL);
    hnode(f1, 1, CHAKRA_PROTO_MSG__NODE_TYPE__COMM_COLL_NODE, 0, NULL, 0, &ar);
    hnode(f1, 2, CHAKRA_PROTO_MSG__NODE_TYPE__COMM_RECV_NODE, 0, NULL, 0, &rcv);
    char *p1 = g_strdup_printf("%s.1.et", prefix);
    save(p1, f1);
    g_free(p0);
    g_free(p1);
}

static void test_chakra_plain(void)
{
    char *dir = g_dir_make_tmp("icsim-chakra-XXXXXX", NULL);
    char *prefix = g_build_filename(dir, "plain", NULL);
    char *groups = g_strdup_printf("%s.comm_groups.json", prefix);
    write_plain(prefix, false, CHAKRA_PROTO_MSG__COLLECTIVE_COMM_TYPE__ALL_REDUCE);
    g_assert_true(g_file_set_contents(groups, "{\"g\": [0, 1]}", -1, NULL));
    GError *err = NULL;
    ics_trace *t = ics_trace_read_chakra(prefix, NULL, &err);
    g_assert_no_error(err);
    g_assert_cmpint(ics_trace_nops(t, 0), ==, 3); /* the metadata node is no op */
    const ics_trace_op *c = ics_trace_get_op(t, 0, 0), *a = ics_trace_get_op(t, 0, 1);
    g_assert_cmpint(c->kind, ==, ICS_TOP_COMPUTE);
    g_assert_cmpint(c->duration_ps, ==, 120 * ICS_PS_PER_US);
    g_assert_cmpstr(ics_trace_stream_name(t, 0, c->stream), ==, "compute");
    g_assert_cmpint(a->kind, ==, ICS_TOP_COLL);
    g_assert_cmpint(a->coll.op, ==, ICS_COLL_ALL_REDUCE);
    g_assert_cmpuint(a->coll.size_bytes, ==, 1 << 20);
    g_assert_cmpstr(ics_trace_stream_name(t, 0, a->stream), ==, "comm");
    g_assert_cmpstr(ics_trace_comm_name(t, a->comm), ==, "g");
    int nd;
    const int *deps = ics_trace_op_deps(t, 0, 1, &nd); /* through the metadata node */
    g_assert_cmpint(nd, ==, 1);
    g_assert_cmpint(deps[0], ==, 0);
    g_assert_cmpint(ics_trace_get_op(t, 1, 1)->kind, ==, ICS_TOP_RECV);
    ics_trace_free(t);

    /* broken: a cycle; an unknown collective; a group the file lacks; a truncated file;
     * garbage; no files at all */
    struct {
        bool cycle;
        int type;
        const char *groups;
        int cut;
        const char *expect;
    } broken[] = {
        {true, 0, "{\"g\": [0, 1]}", 0, "without a cycle"},
        {false, CHAKRA_PROTO_MSG__COLLECTIVE_COMM_TYPE__BARRIER, "{\"g\": [0, 1]}", 0, "comm_type"},
        {false, 0, "{\"h\": [0, 1]}", 0, "pg_name: expected a group"},
        {false, 0, "{\"g\": [0, 7]}", 0, "expected a distinct rank 0..1"},
        {false, 0, "{\"g\": [0, 1]}", 5, "plain.0.et: byte"},
        {false, 0, "{\"g\": [0, 1]}", -1, "plain.0.et"},
    };
    for (size_t i = 0; i < G_N_ELEMENTS(broken); i++) {
        write_plain(prefix, broken[i].cycle, broken[i].type);
        g_assert_true(g_file_set_contents(groups, broken[i].groups, -1, NULL));
        char *p0 = g_strdup_printf("%s.0.et", prefix);
        if (broken[i].cut) {
            char *d;
            gsize n;
            g_assert_true(g_file_get_contents(p0, &d, &n, NULL));
            if (broken[i].cut < 0)
                memset(d, 0xff, n); /* varints that never end */
            g_assert_true(g_file_set_contents(
                p0, d, broken[i].cut > 0 ? (gssize)n - broken[i].cut : (gssize)n, NULL));
            g_free(d);
        }
        t = ics_trace_read_chakra(prefix, NULL, &err);
        if (t || !err || !strstr(err->message, broken[i].expect))
            g_error("chakra case %zu: expected \"%s\", got %s", i, broken[i].expect,
                    err ? err->message : "a trace");
        g_clear_error(&err);
        g_free(p0);
    }
    for (int k = 0; k < 2; k++) {
        char *f = g_strdup_printf("%s.%d.et", prefix, k);
        g_unlink(f);
        g_free(f);
    }
    g_unlink(groups);
    t = ics_trace_read_chakra(prefix, NULL, &err);
    g_assert_null(t);
    g_assert_nonnull(strstr(err->message, "found none"));
    g_clear_error(&err);
    g_rmdir(dir);
    g_free(groups);
    g_free(prefix);
    g_free(dir);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/trace_json/example", test_example);
    g_test_add_func("/trace_json/roundtrip", test_roundtrip);
    g_test_add_func("/trace_json/bad", test_bad);
    g_test_add_func("/trace_chakra/roundtrip", test_chakra_roundtrip);
    g_test_add_func("/trace_chakra/plain", test_chakra_plain);
    return g_test_run();
}
