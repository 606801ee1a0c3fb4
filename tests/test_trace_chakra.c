/* Chakra traces (trace.h: ics_trace_read_chakra). A small trace built here (three ranks: compute
 * with a time and with work, collectives on two communicators, a send/recv pair, dependencies
 * across streams) is written and read back op by op, written again to the same bytes, and its files
 * say what ASTRA-sim reads; traces as other tools write them (nodes out of order, CPU and metadata
 * nodes, groups named only by pg_name) read as Chakra means; every kind of broken file, built here
 * in a temporary directory, gives the error it should and no trace. */
#include "trace/trace.h"

#include <glib.h>
#include <glib/gstdio.h>
#include <string.h>

#include "et_def.pb-c.h"

/* ---- a scratch directory -------------------------------------------------------------------- */

static char *scratch(void)
{
    char *dir = g_dir_make_tmp("icsim-chakra-XXXXXX", NULL);
    g_assert_nonnull(dir);
    return dir;
}

static void rm_scratch(char *dir)
{
    GDir *d = g_dir_open(dir, 0, NULL);
    for (const char *n; d && (n = g_dir_read_name(d));) {
        char *f = g_build_filename(dir, n, NULL);
        g_unlink(f);
        g_free(f);
    }
    if (d)
        g_dir_close(d);
    g_rmdir(dir);
    g_free(dir);
}

static int count_files(const char *dir)
{
    int n = 0;
    GDir *d = g_dir_open(dir, 0, NULL);
    while (d && g_dir_read_name(d))
        n++;
    if (d)
        g_dir_close(d);
    return n;
}

/* ---- a trace built by hand ------------------------------------------------------------------ */

static int op(ics_trace *t, int rank, ics_trace_op o, int ndeps, const int *deps)
{
    return ics_trace_add_op(t, rank, &o, deps, ndeps);
}

/* rank 0: compute -> all-reduce on tp (comm stream) -> send to 2; a GEMM waiting on the
 *         all-reduce (a dependency across streams); a broadcast from dp's rank 1.
 * rank 1: compute -> all-reduce on tp; the broadcast.
 * rank 2: recv from 0 on its own stream "p2p" -> compute (across streams); the broadcast. */
static ics_trace *small_trace(void)
{
    ics_trace *t = ics_trace_new(3);
    int tp[] = {1, 0}, dp[] = {0, 1, 2};
    int ctp = ics_trace_add_comm(t, tp, 2, "tp0");
    int cdp = ics_trace_add_comm(t, dp, 3, "dp");
    for (int k = 0; k < 3; k++) {
        ics_trace_add_stream(t, k, "compute");
        ics_trace_add_stream(t, k, k == 2 ? "p2p" : "comm");
    }
    ics_coll_req ar = {.op = ICS_COLL_ALL_REDUCE, .size_bytes = 3 << 20, .dtype_bytes = 2};
    ics_coll_req bc = {.op = ICS_COLL_BROADCAST, .size_bytes = 4096, .dtype_bytes = 4, .root = 1};
    ics_trace_op comp = {.kind = ICS_TOP_COMPUTE,
                         .cat = ICS_CAT_COMPUTE,
                         .name = "fwd.mlp",
                         .duration_ps = 12345678,
                         .dtype = ICS_DTYPE_BF16,
                         .launches = 7,
                         .host_sync = true};
    ics_trace_op gemm = {.kind = ICS_TOP_COMPUTE,
                         .cat = ICS_CAT_COMPUTE,
                         .name = "bwd.qkv",
                         .work = ICS_WORK_GEMM,
                         .flops = 3e12,
                         .mem_bytes = 6e8,
                         .dtype = ICS_DTYPE_FP16,
                         .m = 4096,
                         .n = 3072,
                         .k = 1024};
    ics_trace_op allred = {.kind = ICS_TOP_COLL,
                           .stream = 1,
                           .cat = ICS_CAT_TP,
                           .name = "tp.ar",
                           .comm = ctp,
                           .coll = ar};
    ics_trace_op bcast = {
        .kind = ICS_TOP_COLL, .stream = 1, .cat = ICS_CAT_DP, .comm = cdp, .coll = bc};
    ics_trace_op send = {.kind = ICS_TOP_SEND,
                         .stream = 1,
                         .cat = ICS_CAT_PP,
                         .name = "act",
                         .peer = 2,
                         .bytes = 1 << 16};
    ics_trace_op recv = send;
    recv.kind = ICS_TOP_RECV;
    recv.peer = 0;
    int d0[] = {0}, d1[] = {1};
    op(t, 0, comp, 0, NULL);  /* 0 */
    op(t, 0, allred, 1, d0);  /* 1 */
    op(t, 0, send, 0, NULL);  /* 2 */
    op(t, 0, gemm, 1, d1);    /* 3 */
    op(t, 0, bcast, 0, NULL); /* 4 */
    op(t, 1, comp, 0, NULL);  /* 0 */
    op(t, 1, allred, 1, d0);  /* 1 */
    op(t, 1, bcast, 0, NULL); /* 2 */
    op(t, 2, recv, 0, NULL);  /* 0 */
    op(t, 2, comp, 1, d0);    /* 1 */
    op(t, 2, bcast, 0, NULL); /* 2 */
    GError *why = NULL;
    g_assert_true(ics_trace_check(t, &why));
    return t;
}

static void assert_same(const ics_trace *a, const ics_trace *b)
{
    g_assert_cmpint(ics_trace_nranks(a), ==, ics_trace_nranks(b));
    g_assert_cmpint(ics_trace_ncomms(a), ==, ics_trace_ncomms(b));
    for (int c = 0; c < ics_trace_ncomms(a); c++) {
        int na, nb;
        const int *ra = ics_trace_comm_ranks(a, c, &na), *rb = ics_trace_comm_ranks(b, c, &nb);
        g_assert_cmpmem(ra, na * sizeof *ra, rb, nb * sizeof *rb);
        g_assert_cmpstr(ics_trace_comm_name(a, c), ==, ics_trace_comm_name(b, c));
    }
    for (int k = 0; k < ics_trace_nranks(a); k++) {
        g_assert_cmpint(ics_trace_nstreams(a, k), ==, ics_trace_nstreams(b, k));
        for (int s = 0; s < ics_trace_nstreams(a, k); s++)
            g_assert_cmpstr(ics_trace_stream_name(a, k, s), ==, ics_trace_stream_name(b, k, s));
        g_assert_cmpint(ics_trace_nops(a, k), ==, ics_trace_nops(b, k));
        for (int i = 0; i < ics_trace_nops(a, k); i++) {
            const ics_trace_op *x = ics_trace_get_op(a, k, i), *y = ics_trace_get_op(b, k, i);
            g_assert_cmpint(x->kind, ==, y->kind);
            g_assert_cmpint(x->stream, ==, y->stream);
            g_assert_cmpint(x->cat, ==, y->cat);
            g_assert_cmpstr(x->name, ==, y->name);
            g_assert_cmpint(x->launches, ==, y->launches);
            g_assert_cmpint(x->host_sync, ==, y->host_sync);
            g_assert_cmpint(x->duration_ps, ==, y->duration_ps);
            g_assert_cmpint(x->work, ==, y->work);
            g_assert_cmpfloat(x->flops, ==, y->flops);
            g_assert_cmpfloat(x->mem_bytes, ==, y->mem_bytes);
            g_assert_cmpint(x->dtype, ==, y->dtype);
            g_assert_cmpint(x->m, ==, y->m);
            g_assert_cmpint(x->n, ==, y->n);
            g_assert_cmpint(x->k, ==, y->k);
            if (x->kind == ICS_TOP_COLL) {
                g_assert_cmpint(x->comm, ==, y->comm);
                g_assert_cmpint(x->coll.op, ==, y->coll.op);
                g_assert_cmpuint(x->coll.size_bytes, ==, y->coll.size_bytes);
                g_assert_cmpint(x->coll.dtype_bytes, ==, y->coll.dtype_bytes);
                g_assert_cmpint(x->coll.root, ==, y->coll.root);
            }
            g_assert_cmpint(x->peer, ==, y->peer);
            g_assert_cmpuint(x->bytes, ==, y->bytes);
            g_assert_cmpint(x->tag, ==, y->tag);
            int nx, ny;
            const int *dx = ics_trace_op_deps(a, k, i, &nx), *dy = ics_trace_op_deps(b, k, i, &ny);
            g_assert_cmpint(nx, ==, ny);
            if (nx)
                g_assert_cmpmem(dx, nx * sizeof(int), dy, ny * sizeof(int));
        }
    }
}

/* ---- reading a written file back as messages ------------------------------------------------ */

static void free_node(gpointer x)
{
    chakra_proto_msg__node__free_unpacked(x, NULL);
}

/* The nodes of a file, unpacked (the metadata skipped). */
static GPtrArray *load_nodes(const char *path)
{
    char *d;
    gsize n;
    g_assert_true(g_file_get_contents(path, &d, &n, NULL));
    GPtrArray *nodes = g_ptr_array_new_with_free_func(free_node);
    gsize at = 0;
    for (int msg = 0; at < n; msg++) {
        uint64_t len = 0;
        for (int shift = 0;; shift += 7) {
            uint8_t b = (uint8_t)d[at++];
            len |= (uint64_t)(b & 0x7f) << shift;
            if (!(b & 0x80))
                break;
        }
        g_assert_cmpuint(at + len, <=, n);
        if (msg > 0) {
            ChakraProtoMsg__Node *x =
                chakra_proto_msg__node__unpack(NULL, len, (const uint8_t *)d + at);
            g_assert_nonnull(x);
            g_ptr_array_add(nodes, x);
        }
        at += len;
    }
    g_free(d);
    return nodes;
}

static const ChakraProtoMsg__AttributeProto *attr_of(const ChakraProtoMsg__Node *x,
                                                     const char *name)
{
    for (size_t i = 0; i < x->n_attr; i++)
        if (strcmp(x->attr[i]->name, name) == 0)
            return x->attr[i];
    return NULL;
}

/* The written files carry what ASTRA-sim's workload layer reads, in the types it reads them. */
static void check_astra_view(const char *prefix)
{
    char *p0 = g_strdup_printf("%s.0.et", prefix), *p2 = g_strdup_printf("%s.2.et", prefix);
    GPtrArray *r0 = load_nodes(p0), *r2 = load_nodes(p2);
    g_assert_cmpuint(r0->len, ==, 5);
    const ChakraProtoMsg__Node *comp = r0->pdata[0], *ar = r0->pdata[1], *snd = r0->pdata[2],
                               *gemm = r0->pdata[3], *rcv = r2->pdata[0];
    g_assert_cmpint(comp->type, ==, CHAKRA_PROTO_MSG__NODE_TYPE__COMP_NODE);
    g_assert_cmpuint(comp->duration_micros, ==, 12); /* 12.345678 us, rounded */
    const ChakraProtoMsg__AttributeProto *a = attr_of(comp, "is_cpu_op");
    g_assert_true(a && a->value_case == CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_BOOL_VAL &&
                  !a->bool_val);
    a = attr_of(gemm, "num_ops"); /* an integer: ASTRA-sim will not convert a double */
    g_assert_true(a && a->value_case == CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_INT64_VAL &&
                  a->int64_val == 3000000000000);
    g_assert_cmpuint(gemm->n_data_deps, ==, 1);
    g_assert_cmpuint(gemm->data_deps[0], ==, 1);
    g_assert_cmpint(ar->type, ==, CHAKRA_PROTO_MSG__NODE_TYPE__COMM_COLL_NODE);
    a = attr_of(ar, "comm_type");
    g_assert_true(a && a->int64_val == CHAKRA_PROTO_MSG__COLLECTIVE_COMM_TYPE__ALL_REDUCE);
    a = attr_of(ar, "pg_name"); /* ASTRA-sim reads the group as a number: tp0 is group 1 */
    g_assert_true(a && a->value_case == CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_STRING_VAL);
    g_assert_cmpstr(a->string_val, ==, "1");
    g_assert_cmpint(snd->type, ==, CHAKRA_PROTO_MSG__NODE_TYPE__COMM_SEND_NODE);
    const char *need[] = {"comm_src", "comm_dst", "comm_tag"};
    int want0[] = {0, 2, 0};
    for (int i = 0; i < 3; i++) {
        a = attr_of(snd, need[i]);
        g_assert_true(a && a->value_case == CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_INT32_VAL);
        g_assert_cmpint(a->int32_val, ==, want0[i]);
        a = attr_of(rcv, need[i]);
        g_assert_true(a && a->value_case == CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_INT32_VAL);
        g_assert_cmpint(a->int32_val, ==, want0[i]);
    }
    g_ptr_array_free(r0, TRUE);
    g_ptr_array_free(r2, TRUE);
    char *groups = g_strdup_printf("%s.comm_groups.json", prefix), *text;
    g_assert_true(g_file_get_contents(groups, &text, NULL, NULL));
    g_assert_cmpstr(text, ==, "{\n  \"1\": [1, 0],\n  \"2\": [0, 1, 2]\n}\n");
    g_free(text);
    g_free(groups);
    g_free(p0);
    g_free(p2);
}

static char *slurp_all(const char *prefix, int nranks)
{
    GString *s = g_string_new(NULL);
    for (int k = 0; k <= nranks; k++) {
        char *f = k < nranks ? g_strdup_printf("%s.%d.et", prefix, k)
                             : g_strdup_printf("%s.comm_groups.json", prefix);
        char *d;
        gsize n;
        g_assert_true(g_file_get_contents(f, &d, &n, NULL));
        g_string_append_len(s, d, (gssize)n);
        g_free(d);
        g_free(f);
    }
    return g_string_free(s, FALSE);
}

static void test_roundtrip(void)
{
    char *dir = scratch(), *prefix = g_build_filename(dir, "small", NULL);
    GError *err = NULL;
    ics_trace *t = small_trace();
    /* a longer trace written first: its extra rank must not come back */
    ics_trace *longer = ics_trace_new(4);
    for (int k = 0; k < 4; k++)
        ics_trace_add_stream(longer, k, "compute");
    g_assert_true(ics_trace_write_chakra(longer, prefix, &err));
    g_assert_true(ics_trace_write_chakra(t, prefix, &err));
    g_assert_no_error(err);
    g_assert_cmpint(count_files(dir), ==, 4); /* 3 ranks and the groups file, nothing else */
    ics_trace *back = ics_trace_read_chakra(prefix, NULL, &err);
    if (!back)
        g_error("%s", err->message);
    assert_same(t, back);
    check_astra_view(prefix);
    /* same trace, same bytes */
    char *first = slurp_all(prefix, 3);
    g_assert_true(ics_trace_write_chakra(back, prefix, &err));
    char *second = slurp_all(prefix, 3);
    g_assert_cmpstr(first, ==, second);
    g_free(first);
    g_free(second);
    ics_trace_free(back);
    ics_trace_free(longer);
    ics_trace_free(t);
    g_free(prefix);
    rm_scratch(dir);
}

/* What Chakra cannot carry fails before anything is written; so does a directory that is not. */
static void test_write_errors(void)
{
    char *dir = scratch(), *prefix = g_build_filename(dir, "bad", NULL);
    GError *err = NULL;
    ics_trace *t = ics_trace_new(2);
    int all[] = {0, 1};
    int c = ics_trace_add_comm(t, all, 2, "w");
    ics_trace_op sr = {.kind = ICS_TOP_COLL,
                       .comm = c,
                       .coll = {.op = ICS_COLL_SENDRECV, .size_bytes = 64, .dtype_bytes = 4}};
    for (int k = 0; k < 2; k++) {
        ics_trace_add_stream(t, k, "compute");
        ics_trace_add_op(t, k, &sr, NULL, 0);
    }
    g_assert_false(ics_trace_write_chakra(t, prefix, &err));
    g_assert_nonnull(strstr(err->message, "rank 0 op 0: cannot write to Chakra"));
    g_assert_error(err, ICS_ERROR, ICS_ERROR_INPUT);
    g_assert_cmpint(count_files(dir), ==, 0);
    g_clear_error(&err);
    /* an empty message: the reader takes sizes from 1 byte */
    ics_trace *empty = ics_trace_new(2);
    ics_trace_op snd = {.kind = ICS_TOP_SEND, .peer = 1}, rcv = {.kind = ICS_TOP_RECV, .peer = 0};
    ics_trace_add_stream(empty, 0, "compute");
    ics_trace_add_stream(empty, 1, "compute");
    ics_trace_add_op(empty, 0, &snd, NULL, 0);
    ics_trace_add_op(empty, 1, &rcv, NULL, 0);
    g_assert_false(ics_trace_write_chakra(empty, prefix, &err));
    g_assert_nonnull(strstr(err->message, "rank 0 op 0: cannot write to Chakra: a size of 0"));
    g_assert_cmpint(count_files(dir), ==, 0);
    g_clear_error(&err);
    ics_trace_free(empty);
    /* an all-to-all a dispatcher's own kernel runs (sms): Chakra cannot mark it */
    ics_trace *deep = ics_trace_new(2);
    int both = ics_trace_add_comm(deep, all, 2, "ep");
    ics_trace_op a2a = {
        .kind = ICS_TOP_COLL,
        .comm = both,
        .coll = {.op = ICS_COLL_ALLTOALL, .size_bytes = 64, .dtype_bytes = 2, .sms = 20}};
    for (int k = 0; k < 2; k++) {
        ics_trace_add_stream(deep, k, "compute");
        ics_trace_add_op(deep, k, &a2a, NULL, 0);
    }
    g_assert_false(ics_trace_write_chakra(deep, prefix, &err));
    g_assert_nonnull(strstr(err->message, "rank 0 op 0: cannot write to Chakra: an all-to-all run "
                                          "by a dispatcher's own kernel (sms)"));
    g_assert_cmpint(count_files(dir), ==, 0);
    g_clear_error(&err);
    ics_trace_free(deep);
    char *nowhere = g_build_filename(dir, "no-such-dir", "x", NULL);
    ics_trace *ok = small_trace();
    g_assert_false(ics_trace_write_chakra(ok, nowhere, &err));
    g_assert_nonnull(strstr(err->message, "cannot write"));
    g_assert_error(err, ICS_ERROR, ICS_ERROR_IO);
    g_assert_cmpint(count_files(dir), ==, 0);
    g_clear_error(&err);
    g_free(nowhere);
    ics_trace_free(ok);
    ics_trace_free(t);
    g_free(prefix);
    rm_scratch(dir);
}

/* ---- files as other tools write them -------------------------------------------------------- */

typedef struct {
    GByteArray *bytes;
} efile;

static void put_frame(GByteArray *out, const ProtobufCMessage *m)
{
    size_t n = protobuf_c_message_get_packed_size(m);
    uint8_t *buf = g_malloc(n + 1);
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

static efile ef_new(void)
{
    efile f = {g_byte_array_new()};
    ChakraProtoMsg__GlobalMetadata m;
    chakra_proto_msg__global_metadata__init(&m);
    m.version = (char *)"0.0.4";
    put_frame(f.bytes, &m.base);
    return f;
}

/* Attributes: "name=i:123" (int64), "name=u:123" (uint64), "name=s32:-5" (sint32),
 * "name=f64:7" (fixed64), "name=b:1" (bool), "name=d:1.5" (double), "name=str" (string). */
static void ef_node(efile *f, uint64_t id, int type, uint64_t dur, const char *deps,
                    const char *ctrl, const char *attrs)
{
    ChakraProtoMsg__Node n;
    chakra_proto_msg__node__init(&n);
    n.id = id;
    n.name = (char *)"n";
    n.type = type;
    n.duration_micros = dur;
    uint64_t dd[16], cd[16];
    char **ds = g_strsplit(deps ? deps : "", ",", -1), **cs = g_strsplit(ctrl ? ctrl : "", ",", -1);
    for (char **s = ds; *s && **s; s++)
        dd[n.n_data_deps++] = g_ascii_strtoull(*s, NULL, 10);
    for (char **s = cs; *s && **s; s++)
        cd[n.n_ctrl_deps++] = g_ascii_strtoull(*s, NULL, 10);
    n.data_deps = dd;
    n.ctrl_deps = cd;
    ChakraProtoMsg__AttributeProto a[16], *ap[16];
    char **as = g_strsplit(attrs ? attrs : "", " ", -1);
    for (char **s = as; *s && **s; s++) {
        ChakraProtoMsg__AttributeProto *x = &a[n.n_attr];
        chakra_proto_msg__attribute_proto__init(x);
        char *eq = strchr(*s, '=');
        *eq = 0;
        x->name = *s;
        const char *v = eq + 1;
        if (g_str_has_prefix(v, "i:")) {
            x->value_case = CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_INT64_VAL;
            x->int64_val = g_ascii_strtoll(v + 2, NULL, 10);
        } else if (g_str_has_prefix(v, "u:")) {
            x->value_case = CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_UINT64_VAL;
            x->uint64_val = g_ascii_strtoull(v + 2, NULL, 10);
        } else if (g_str_has_prefix(v, "s32:")) {
            x->value_case = CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_SINT32_VAL;
            x->sint32_val = (int32_t)g_ascii_strtoll(v + 4, NULL, 10);
        } else if (g_str_has_prefix(v, "f64:")) {
            x->value_case = CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_FIXED64_VAL;
            x->fixed64_val = g_ascii_strtoull(v + 4, NULL, 10);
        } else if (g_str_has_prefix(v, "b:")) {
            x->value_case = CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_BOOL_VAL;
            x->bool_val = v[2] == '1';
        } else if (g_str_has_prefix(v, "d:")) {
            x->value_case = CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_DOUBLE_VAL;
            x->double_val = g_ascii_strtod(v + 2, NULL);
        } else {
            x->value_case = CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_STRING_VAL;
            x->string_val = (char *)v;
        }
        ap[n.n_attr++] = x;
    }
    n.attr = ap;
    put_frame(f->bytes, &n.base);
    g_strfreev(as);
    g_strfreev(ds);
    g_strfreev(cs);
}

static void ef_save(efile *f, const char *prefix, int rank)
{
    char *p = g_strdup_printf("%s.%d.et", prefix, rank);
    g_assert_true(g_file_set_contents(p, (const char *)f->bytes->data, f->bytes->len, NULL));
    g_byte_array_free(f->bytes, TRUE);
    g_free(p);
}

enum {
    COMP = CHAKRA_PROTO_MSG__NODE_TYPE__COMP_NODE,
    COLL = CHAKRA_PROTO_MSG__NODE_TYPE__COMM_COLL_NODE,
    SEND = CHAKRA_PROTO_MSG__NODE_TYPE__COMM_SEND_NODE,
    RECV = CHAKRA_PROTO_MSG__NODE_TYPE__COMM_RECV_NODE,
    META = CHAKRA_PROTO_MSG__NODE_TYPE__METADATA_NODE,
};

/* Four ranks as a PyTorch-converted trace looks: CPU ops (folded), nodes out of order, a
 * tensor-parallel groups named only by pg_name ("5", "6") with a pg_desc, a world all-reduce as
 * ASTRA-sim's default group "0", integer types of every kind, a send/recv pair. */
static void write_foreign(const char *prefix)
{
    for (int k = 0; k < 4; k++) {
        efile f = ef_new();
        /* ranks 0 and 1 form tensor-parallel group "5", ranks 2 and 3 group "6" */
        const char *tp = k < 2 ? "comm_type=i:0 comm_size=u:4096 pg_name=5 "
                                 "pg_desc=TENSOR_MODEL_PARALLEL_GROUP"
                               : "comm_type=i:8 comm_size=s32:4096 pg_name=6 "
                                 "pg_desc=TENSOR_MODEL_PARALLEL_GROUP";
        /* the GPU kernel 30 first in the file, its CPU-side launchers 10 -> 11 after */
        ef_node(&f, 30, COMP, 7, "11", NULL, "is_cpu_op=b:0");
        ef_node(&f, 10, COMP, 100, NULL, NULL, "is_cpu_op=b:1");
        ef_node(&f, 11, COMP, 100, "10", "10", "is_cpu_op=b:1");
        ef_node(&f, 12, META, 0, "11", NULL, NULL);
        ef_node(&f, 31, COLL, 0, "12", NULL, tp);
        ef_node(&f, 32, COLL, 0, "31", NULL, "comm_type=i:0 comm_size=f64:65536 pg_name=0");
        ef_node(&f, 33, COMP, 0, "30,31", NULL, "num_ops=i:1000000 tensor_size=u:2048");
        ef_node(&f, 34, COMP, 0, "33", NULL, "is_cpu_op=b:0");
        if (k == 0)
            ef_node(&f, 40, SEND, 0, "32", NULL, "comm_dst=i:3 comm_size=i:512 comm_tag=i:9");
        if (k == 3)
            ef_node(&f, 40, RECV, 0, NULL, NULL, "comm_src=i:0 comm_size=i:512 comm_tag=i:9");
        ef_save(&f, prefix, k);
    }
}

static void test_foreign(void)
{
    char *dir = scratch(), *prefix = g_build_filename(dir, "pt", NULL);
    GError *err = NULL;
    write_foreign(prefix);
    ics_trace *t = ics_trace_read_chakra(prefix, NULL, &err);
    if (!t)
        g_error("%s", err->message);
    /* the groups: "5" and "6" made of the ranks that use them, "0" all ranks; in order of first
     * use (rank 0 first) */
    g_assert_cmpint(ics_trace_ncomms(t), ==, 3);
    int n;
    const int *r = ics_trace_comm_ranks(t, 0, &n);
    g_assert_cmpint(n, ==, 2);
    g_assert_cmpint(r[0], ==, 0);
    g_assert_cmpint(r[1], ==, 1);
    g_assert_cmpstr(ics_trace_comm_name(t, 0), ==, "TENSOR_MODEL_PARALLEL_GROUP");
    r = ics_trace_comm_ranks(t, 1, &n);
    g_assert_cmpint(n, ==, 4);
    g_assert_cmpint(r[3], ==, 3);
    g_assert_cmpstr(ics_trace_comm_name(t, 1), ==, "world");
    r = ics_trace_comm_ranks(t, 2, &n);
    g_assert_cmpint(n, ==, 2);
    g_assert_cmpint(r[0], ==, 2);
    g_assert_cmpint(r[1], ==, 3);
    g_assert_cmpint(ics_trace_nstreams(t, 0), ==, 2);
    g_assert_cmpstr(ics_trace_stream_name(t, 0, 0), ==, "compute");
    /* rank 0: kernel 30, tp all-reduce 31, world all-reduce 32, work 33, empty 34, send 40 */
    g_assert_cmpint(ics_trace_nops(t, 0), ==, 6);
    const ics_trace_op *k30 = ics_trace_get_op(t, 0, 0), *ar = ics_trace_get_op(t, 0, 1),
                       *w = ics_trace_get_op(t, 0, 3), *empty = ics_trace_get_op(t, 0, 4),
                       *snd = ics_trace_get_op(t, 0, 5);
    g_assert_cmpint(k30->duration_ps, ==, 7 * ICS_PS_PER_US);
    g_assert_cmpint(ar->kind, ==, ICS_TOP_COLL);
    g_assert_cmpint(ar->cat, ==, ICS_CAT_TP); /* from the group's description */
    g_assert_cmpint(ar->coll.op, ==, ICS_COLL_ALL_REDUCE);
    g_assert_cmpuint(ar->coll.size_bytes, ==, 4096);
    g_assert_cmpint(ics_trace_get_op(t, 3, 1)->coll.op, ==, ICS_COLL_REDUCE_SCATTER);
    g_assert_cmpint(ics_trace_get_op(t, 0, 2)->cat, ==, ICS_CAT_OTHER); /* "0" says nothing */
    g_assert_cmpuint(ics_trace_get_op(t, 0, 2)->coll.size_bytes, ==, 65536);
    g_assert_cmpint(w->duration_ps, ==, 0); /* costed from its work */
    g_assert_cmpfloat(w->flops, ==, 1e6);
    g_assert_cmpfloat(w->mem_bytes, ==, 2048);
    g_assert_cmpint(empty->duration_ps, ==, ICS_PS_PER_NS);
    g_assert_cmpint(snd->kind, ==, ICS_TOP_SEND);
    g_assert_cmpint(snd->peer, ==, 3);
    g_assert_cmpint(snd->cat, ==, ICS_CAT_OTHER);
    g_assert_cmpint(ics_trace_get_op(t, 3, 5)->kind, ==, ICS_TOP_RECV);
    /* the all-reduce depended on CPU ops and metadata only: nothing left; the work on the
     * kernel and the all-reduce */
    int nd;
    const int *deps = ics_trace_op_deps(t, 0, 1, &nd);
    g_assert_cmpint(nd, ==, 0);
    deps = ics_trace_op_deps(t, 0, 3, &nd);
    g_assert_cmpint(nd, ==, 2);
    g_assert_cmpint(deps[0], ==, 0);
    g_assert_cmpint(deps[1], ==, 1);
    ics_trace_free(t);

    /* with a groups file the groups are what it says (and a file where group "6" lacks rank 2
     * fails) */
    char *groups = g_strdup_printf("%s.comm_groups.json", prefix);
    g_assert_true(g_file_set_contents(groups, "{\"6\": [2, 3], \"5\": [1, 0]}", -1, NULL));
    t = ics_trace_read_chakra(prefix, NULL, &err);
    if (!t)
        g_error("%s", err->message);
    g_assert_cmpint(ics_trace_ncomms(t), ==, 3);
    r = ics_trace_comm_ranks(t, 1, &n); /* the file's order, the file's ranks */
    g_assert_cmpint(n, ==, 2);
    g_assert_cmpint(r[0], ==, 1);
    ics_trace_free(t);
    g_assert_true(g_file_set_contents(groups, "{\"5\": [0, 1], \"6\": [3]}", -1, NULL));
    t = ics_trace_read_chakra(prefix, NULL, &err);
    g_assert_null(t);
    g_assert_nonnull(strstr(err->message,
                            "pt.2.et: node 4 (id 31): pg_name \"6\": expected a group "
                            "that has rank 2, got one of ranks 3"));
    g_clear_error(&err);
    g_free(groups);
    g_free(prefix);
    rm_scratch(dir);
}

/* A chain of 200000 CPU ops between two GPU ops: folded in one pass, no deep recursion, and the
 * second op depends on the first. */
static void test_long_chain(void)
{
    enum { N = 200000 };
    char *dir = scratch(), *prefix = g_build_filename(dir, "chain", NULL);
    GError *err = NULL;
    efile f = ef_new();
    ef_node(&f, 0, COLL, 0, NULL, NULL, "comm_type=i:0 comm_size=i:64");
    for (uint64_t i = 1; i <= N; i++) {
        char dep[24];
        g_snprintf(dep, sizeof dep, "%" G_GUINT64_FORMAT, i - 1);
        ef_node(&f, i, COMP, 3, dep, NULL, "is_cpu_op=b:1");
    }
    char last[24];
    g_snprintf(last, sizeof last, "%d", N);
    ef_node(&f, N + 1, COMP, 5, last, NULL, NULL);
    ef_save(&f, prefix, 0);
    ics_trace *t = ics_trace_read_chakra(prefix, NULL, &err);
    if (!t)
        g_error("%s", err->message);
    g_assert_cmpint(ics_trace_nops(t, 0), ==, 2);
    int nd;
    const int *deps = ics_trace_op_deps(t, 0, 1, &nd);
    g_assert_cmpint(nd, ==, 1);
    g_assert_cmpint(deps[0], ==, 0);
    ics_trace_free(t);
    g_free(prefix);
    rm_scratch(dir);
}

/* Names come from the file; control characters in them are escaped, so that a message that
 * quotes a group's name stays one line (found by fuzz_chakra). */
static void test_control_chars(void)
{
    char *dir = scratch(), *prefix = g_build_filename(dir, "cc", NULL);
    GError *err = NULL;
    efile f0 = ef_new(), f1 = ef_new();
    ef_node(&f0, 1, COLL, 0, NULL, NULL, "comm_type=i:0 comm_size=i:8 pg_desc=tp\n0");
    ef_node(&f1, 1, COMP, 1, NULL, NULL, NULL);
    ef_save(&f0, prefix, 0);
    ef_save(&f1, prefix, 1);
    ics_trace *t = ics_trace_read_chakra(prefix, NULL, &err);
    g_assert_null(t);
    g_assert_null(strchr(err->message, '\n'));
    g_assert_nonnull(strstr(err->message, "communicator 'tp\\x0a0'"));
    g_clear_error(&err);
    g_free(prefix);
    rm_scratch(dir);
}

/* ---- broken files --------------------------------------------------------------------------- */

typedef struct {
    const char *what;
    /* rank 0's nodes, as ef_node arguments; rank 1 is one compute node */
    struct {
        uint64_t id;
        int type;
        const char *deps, *ctrl, *attrs;
    } nodes[3];
    const char *groups; /* groups file text, or NULL */
    int mangle;         /* 0: none; > 0: cut this many bytes off; -1: garbage; -2: empty */
    const char *expect;
} bad_case;

static const bad_case bad[] = {
    {"truncated",
     {{1, COMP, NULL, NULL, NULL}},
     NULL,
     3,
     "bad.0.et: byte 8: expected a message of 9 bytes, got the end of the file after 6"},
    {"garbage",
     {{1, COMP, NULL, NULL, NULL}},
     NULL,
     -1,
     "bad.0.et: byte 0: expected a message length (a varint of at most 10 bytes), got a longer"},
    {"empty",
     {{1, COMP, NULL, NULL, NULL}},
     NULL,
     -2,
     "bad.0.et: expected a GlobalMetadata message, got an empty file"},
    {"cycle",
     {{1, COMP, "3", NULL, NULL}, {2, COMP, "1", NULL, NULL}, {3, COMP, NULL, "2", NULL}},
     NULL,
     0,
     "expected dependencies without a cycle, got the cycle id "},
    {"dangling",
     {{1, COMP, "7", NULL, NULL}},
     NULL,
     0,
     "bad.0.et: node 0 (id 1, \"n\"): data_deps: expected ids of nodes of the file, got 7"},
    {"dangling ctrl",
     {{1, COMP, NULL, "8", NULL}},
     NULL,
     0,
     "ctrl_deps: expected ids of nodes of the file, got 8"},
    {"duplicate id",
     {{4, COMP, NULL, NULL, NULL}, {4, COMP, NULL, NULL, NULL}},
     NULL,
     0,
     "node 1 (id 4, \"n\"): id: expected a unique id, got the one of node 0"},
    {"gather",
     {{1, COLL, NULL, NULL, "comm_type=i:3 comm_size=i:8"}},
     NULL,
     0,
     "comm_type: expected ALL_REDUCE, REDUCE, ALL_GATHER, BROADCAST, ALL_TO_ALL, "
     "REDUCE_SCATTER or REDUCE_SCATTER_BLOCK, got GATHER"},
    {"unknown comm type",
     {{1, COLL, NULL, NULL, "comm_type=i:42 comm_size=i:8"}},
     NULL,
     0,
     "or REDUCE_SCATTER_BLOCK, got 42"},
    {"no comm_type",
     {{1, COLL, NULL, NULL, "comm_size=i:8"}},
     NULL,
     0,
     "comm_type: expected an attribute (the collective), got none"},
    {"memory node",
     {{1, CHAKRA_PROTO_MSG__NODE_TYPE__MEM_LOAD_NODE, NULL, NULL, NULL}},
     NULL,
     0,
     "INVALID_NODE carry no work), got MEM_LOAD_NODE"},
    {"unknown node type", {{1, 77, NULL, NULL, NULL}}, NULL, 0, "carry no work), got 77"},
    {"no comm_size",
     {{1, COLL, NULL, NULL, "comm_type=i:0"}},
     NULL,
     0,
     "comm_size: expected an attribute (bytes), got none"},
    {"string size",
     {{1, COLL, NULL, NULL, "comm_type=i:0 comm_size=lots"}},
     NULL,
     0,
     "comm_size: expected an integer 1 .. 1125899906842623, got a string (\"lots\")"},
    {"double size",
     {{1, COLL, NULL, NULL, "comm_type=i:0 comm_size=d:1.5"}},
     NULL,
     0,
     "comm_size: expected an integer 1 .. 1125899906842623, got a double (1.5)"},
    {"huge size",
     {{1, SEND, NULL, NULL, "comm_dst=i:1 comm_size=u:18446744073709551615"}},
     NULL,
     0,
     "got 18446744073709551615"},
    {"twice",
     {{1, COLL, NULL, NULL, "comm_type=i:0 comm_size=i:8 comm_size=i:9"}},
     NULL,
     0,
     "comm_size: expected one attribute of that name, got several"},
    {"peer out of range",
     {{1, SEND, NULL, NULL, "comm_dst=i:5 comm_size=i:8"}},
     NULL,
     0,
     "comm_dst: expected an integer 0 .. 1, got 5"},
    {"send to self",
     {{1, SEND, NULL, NULL, "comm_dst=i:0 comm_size=i:8"}},
     NULL,
     0,
     "comm_dst: expected another rank than this file's, got 0"},
    {"send from elsewhere",
     {{1, SEND, NULL, NULL, "comm_src=i:1 comm_dst=i:1 comm_size=i:8"}},
     NULL,
     0,
     "comm_src: expected this file's rank 0, got 1"},
    {"no peer",
     {{1, RECV, NULL, NULL, "comm_size=i:8"}},
     NULL,
     0,
     "comm_src: expected an attribute (the sending rank), got none"},
    {"cpu collective",
     {{1, COLL, NULL, NULL, "comm_type=i:0 comm_size=i:8 is_cpu_op=b:1"}},
     NULL,
     0,
     "is_cpu_op: expected false on a communication node"},
    {"bad category",
     {{1, COMP, NULL, NULL, "icsim_category=fwd"}},
     NULL,
     0,
     "icsim_category: expected compute, tp, pp, dp, ep, cp or other, got a string (\"fwd\")"},
    {"negative work",
     {{1, COMP, NULL, NULL, "num_ops=i:-4"}},
     NULL,
     0,
     "num_ops: expected a number 0 .. 1e+24, got -4"},
    {"bool as string",
     {{1, COMP, NULL, NULL, "is_cpu_op=yes"}},
     NULL,
     0,
     "is_cpu_op: expected a bool, got a string (\"yes\")"},
    {"group not in file",
     {{1, COLL, NULL, NULL, "comm_type=i:0 comm_size=i:8 pg_name=7"}},
     "{\"1\": [0, 1]}",
     0,
     "bad.0.et: node 0 (id 1): pg_name: expected a group of the communicator-groups file"},
    {"rank past the trace in groups",
     {{1, COMP, NULL, NULL, NULL}},
     "{\"1\": [0, 2]}",
     0,
     "bad.comm_groups.json:1:11: $.1[1]: expected a distinct rank 0..1"},
    {"groups not an object",
     {{1, COMP, NULL, NULL, NULL}},
     "[1]",
     0,
     "bad.comm_groups.json:1:1: $: expected an object"},
    {"root past the group",
     {{1, COLL, NULL, NULL, "comm_type=i:5 comm_size=i:8 icsim_root=i:2"}},
     NULL,
     0,
     "icsim_root: expected an index into the communicator's 2 ranks, got 2"},
    {"unmatched collective",
     {{1, COLL, NULL, NULL, "comm_type=i:0 comm_size=i:8"}},
     NULL,
     0,
     "bad: rank 1 issues 0 collectives on communicator 'world', rank 0 issues 1"},
};

static void test_bad(void)
{
    char *dir = scratch(), *prefix = g_build_filename(dir, "bad", NULL);
    char *groups = g_strdup_printf("%s.comm_groups.json", prefix);
    for (size_t c = 0; c < G_N_ELEMENTS(bad); c++) {
        const bad_case *b = &bad[c];
        efile f0 = ef_new(), f1 = ef_new();
        for (int i = 0; i < 3 && b->nodes[i].id; i++)
            ef_node(&f0, b->nodes[i].id, b->nodes[i].type, 1, b->nodes[i].deps, b->nodes[i].ctrl,
                    b->nodes[i].attrs);
        ef_node(&f1, 1, COMP, 1, NULL, NULL, NULL);
        if (b->mangle > 0)
            g_byte_array_set_size(f0.bytes, f0.bytes->len - (guint)b->mangle);
        if (b->mangle == -1)
            memset(f0.bytes->data, 0xff, f0.bytes->len);
        if (b->mangle == -2)
            g_byte_array_set_size(f0.bytes, 0);
        ef_save(&f0, prefix, 0);
        ef_save(&f1, prefix, 1);
        g_unlink(groups);
        if (b->groups)
            g_assert_true(g_file_set_contents(groups, b->groups, -1, NULL));
        GError *err = NULL;
        ics_trace *t = ics_trace_read_chakra(prefix, NULL, &err);
        if (t || !err || !strstr(err->message, b->expect))
            g_error("case \"%s\": expected \"%s\", got %s", b->what, b->expect,
                    err ? err->message : "a trace");
        g_assert_null(strchr(err->message, '\n'));
        g_clear_error(&err);
    }
    g_free(groups);
    g_free(prefix);
    rm_scratch(dir);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/trace_chakra/roundtrip", test_roundtrip);
    g_test_add_func("/trace_chakra/write-errors", test_write_errors);
    g_test_add_func("/trace_chakra/foreign", test_foreign);
    g_test_add_func("/trace_chakra/long-chain", test_long_chain);
    g_test_add_func("/trace_chakra/control-chars", test_control_chars);
    g_test_add_func("/trace_chakra/bad", test_bad);
    return g_test_run();
}
