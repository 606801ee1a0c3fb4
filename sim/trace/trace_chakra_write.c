/* The Chakra writer (trace.h: ics_trace_write_chakra): one file per rank, a GlobalMetadata then one
 * Node per op, each framed by its length as a varint; ids are op indices. Attributes are the ones
 * ASTRA-sim's workload layer reads, in the types it reads them (astra-sim/workload/Workload.cc and
 * the Chakra feeder): a stream's order becomes control dependencies (Chakra has no streams), the
 * op's own deps data dependencies, communicators numbered groups 1..n of the groups file.
 * Invariant: everything is checked and encoded in memory first, then every file is written to
 * a temporary name and renamed, so a failed write leaves no file half-written. */
#include "trace/trace.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <glib.h>
#include <glib/gstdio.h>

#include "et_def.pb-c.h"

typedef ChakraProtoMsg__AttributeProto attr;

/* Attribute storage for one node: at most this many. */
#define MAX_ATTRS 20

typedef struct {
    attr a[MAX_ATTRS];
    attr *p[MAX_ATTRS];
    size_t n;
} attrs;

static attr *next(attrs *s, const char *name)
{
    g_assert(s->n < MAX_ATTRS);
    attr *a = &s->a[s->n];
    chakra_proto_msg__attribute_proto__init(a);
    a->name = (char *)name;
    s->p[s->n++] = a;
    return a;
}

static void put_i64(attrs *s, const char *name, int64_t v)
{
    attr *a = next(s, name);
    a->value_case = CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_INT64_VAL;
    a->int64_val = v;
}

/* comm_src, comm_dst and comm_tag: int32, as Chakra's own feeder reads them */
static void put_i32(attrs *s, const char *name, int32_t v)
{
    attr *a = next(s, name);
    a->value_case = CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_INT32_VAL;
    a->int32_val = v;
}

static void put_u64(attrs *s, const char *name, uint64_t v)
{
    attr *a = next(s, name);
    a->value_case = CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_UINT64_VAL;
    a->uint64_val = v;
}

static void put_bool(attrs *s, const char *name, bool v)
{
    attr *a = next(s, name);
    a->value_case = CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_BOOL_VAL;
    a->bool_val = v;
}

static void put_str(attrs *s, const char *name, const char *v)
{
    attr *a = next(s, name);
    a->value_case = CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_STRING_VAL;
    a->string_val = (char *)v;
}

/* -1: no Chakra collective (ASTRA-sim has none for send/recv as a collective) */
static const int coll_type[ICS_COLL_OP_COUNT] = {
    [ICS_COLL_ALL_REDUCE] = CHAKRA_PROTO_MSG__COLLECTIVE_COMM_TYPE__ALL_REDUCE,
    [ICS_COLL_ALL_GATHER] = CHAKRA_PROTO_MSG__COLLECTIVE_COMM_TYPE__ALL_GATHER,
    [ICS_COLL_REDUCE_SCATTER] = CHAKRA_PROTO_MSG__COLLECTIVE_COMM_TYPE__REDUCE_SCATTER,
    [ICS_COLL_ALLTOALL] = CHAKRA_PROTO_MSG__COLLECTIVE_COMM_TYPE__ALL_TO_ALL,
    [ICS_COLL_BROADCAST] = CHAKRA_PROTO_MSG__COLLECTIVE_COMM_TYPE__BROADCAST,
    [ICS_COLL_REDUCE] = CHAKRA_PROTO_MSG__COLLECTIVE_COMM_TYPE__REDUCE,
    [ICS_COLL_SENDRECV] = -1,
};

static const char *const work_names[ICS_WORK_KIND_COUNT] = {"gemm", "attention", "elementwise"};

static void put_frame(GByteArray *out, const ProtobufCMessage *m)
{
    size_t n = protobuf_c_message_get_packed_size(m);
    uint8_t *buf = g_malloc(n + 1);
    protobuf_c_message_pack(m, buf);
    for (uint64_t v = n;;) {
        uint8_t b = (uint8_t)(v & 0x7f);
        v >>= 7;
        b |= v ? 0x80 : 0;
        g_byte_array_append(out, &b, 1);
        if (!v)
            break;
    }
    g_byte_array_append(out, buf, (guint)n);
    g_free(buf);
}

/* What Chakra cannot carry: false and sets *error. */
static bool check_op(const ics_trace_op *op, int rank, int i, GError **error)
{
    const char *why = NULL;
    if (op->launches < 0 || op->launches > ICS_TRACE_MAX_LAUNCHES)
        why = "a kernel launch count outside 0..1000000 (ICS_TRACE_MAX_LAUNCHES)";
    else if (op->kind == ICS_TOP_COLL &&
             ((unsigned)op->coll.op >= ICS_COLL_OP_COUNT || coll_type[op->coll.op] < 0))
        why = "a collective Chakra has no comm_type for";
    else if (op->kind == ICS_TOP_COLL && op->splits)
        why = "an all-to-allv, whose per-peer sizes Chakra's one comm_size cannot hold (write "
              "JSON instead)";
    else if (op->kind == ICS_TOP_COLL && op->coll.sms > 0)
        why = "an all-to-all run by a dispatcher's own kernel (sms), which Chakra's comm nodes "
              "cannot mark (write JSON instead)";
    else if (op->kind == ICS_TOP_COMPUTE &&
             !(op->flops >= 0 && op->flops < 0x1p62 && op->mem_bytes >= 0 && op->mem_bytes <= 1e18))
        why = "FLOPs or bytes that do not fit Chakra's integer num_ops and tensor_size";
    else if (op->kind == ICS_TOP_COMPUTE && op->duration_ps > (INT64_C(1) << 40) * ICS_PS_PER_US)
        why = "a duration past 2^40 us, more than the reader takes back";
    else if (op->kind != ICS_TOP_COMPUTE &&
             (op->kind == ICS_TOP_COLL ? op->coll.size_bytes : op->bytes) - 1 >=
                 (UINT64_C(1) << 50) - 1)
        why = "a size of 0 or of 1 PiB or more, which the reader does not take back";
    if (why)
        g_set_error(error, ICS_ERROR, ICS_ERROR_INPUT, "rank %d op %d: cannot write to Chakra: %s",
                    rank, i, why);
    return !why;
}

/* The node of op i of rank; tag: unique among the messages between the same two ranks in the
 * same direction, (index on the op's channel) x channels + channel, so that ASTRA-sim (which
 * matches sends and recvs by tag) pairs them as icsim does (in order on each channel). */
static void put_node(GByteArray *out, const ics_trace *t, int rank, int i, int prev_on_stream,
                     int tag)
{
    const ics_trace_op *op = ics_trace_get_op(t, rank, i);
    ChakraProtoMsg__Node n;
    chakra_proto_msg__node__init(&n);
    n.id = (uint64_t)i;
    n.name = (char *)(op->name ? op->name : "");
    attrs s = {.n = 0};
    char pg[16];
    put_bool(&s, "is_cpu_op", false); /* Chakra's older feeder assumes true when absent */
    put_str(&s, "icsim_stream", ics_trace_stream_name(t, rank, op->stream));
    put_str(&s, "icsim_category", ics_trace_cat_name(op->cat));
    if (op->launches > 0) /* the host (trace.h) */
        put_i32(&s, "icsim_launches", op->launches);
    if (op->host_sync)
        put_bool(&s, "icsim_host_sync", true);
    switch (op->kind) {
    case ICS_TOP_COMPUTE:
        n.type = CHAKRA_PROTO_MSG__NODE_TYPE__COMP_NODE;
        if (op->duration_ps > 0) {
            n.duration_micros = (uint64_t)((op->duration_ps + ICS_PS_PER_US / 2) / ICS_PS_PER_US);
            put_i64(&s, "icsim_duration_ps", op->duration_ps);
        }
        if (op->flops > 0 || op->mem_bytes > 0 || op->duration_ps <= 0) {
            put_i64(&s, "num_ops", (int64_t)llround(op->flops));
            put_u64(&s, "tensor_size", (uint64_t)llround(op->mem_bytes));
        }
        put_str(&s, "icsim_work", work_names[op->work]);
        put_str(&s, "icsim_dtype", ics_dtype_name(op->dtype));
        if (op->m || op->n || op->k) {
            put_i64(&s, "icsim_m", op->m);
            put_i64(&s, "icsim_n", op->n);
            put_i64(&s, "icsim_k", op->k);
        }
        break;
    case ICS_TOP_COLL:
        n.type = CHAKRA_PROTO_MSG__NODE_TYPE__COMM_COLL_NODE;
        put_i64(&s, "comm_type", coll_type[op->coll.op]);
        put_i64(&s, "comm_size", (int64_t)op->coll.size_bytes);
        g_snprintf(pg, sizeof pg, "%d", op->comm + 1); /* ASTRA-sim: numbers, 0 = all ranks */
        put_str(&s, "pg_name", pg);
        if (*ics_trace_comm_name(t, op->comm))
            put_str(&s, "pg_desc", ics_trace_comm_name(t, op->comm));
        put_i64(&s, "icsim_dtype_bytes", op->coll.dtype_bytes);
        if (op->coll.root)
            put_i64(&s, "icsim_root", op->coll.root);
        break;
    default:
        n.type = op->kind == ICS_TOP_SEND ? CHAKRA_PROTO_MSG__NODE_TYPE__COMM_SEND_NODE
                                          : CHAKRA_PROTO_MSG__NODE_TYPE__COMM_RECV_NODE;
        put_i32(&s, "comm_src", op->kind == ICS_TOP_SEND ? rank : op->peer);
        put_i32(&s, "comm_dst", op->kind == ICS_TOP_SEND ? op->peer : rank);
        put_i64(&s, "comm_size", (int64_t)op->bytes);
        put_i32(&s, "comm_tag", tag);
        if (op->tag)
            put_i32(&s, "icsim_tag", op->tag);
    }
    n.n_attr = s.n;
    n.attr = s.p;
    int nd;
    const int *deps = ics_trace_op_deps(t, rank, i, &nd);
    uint64_t *data = g_new(uint64_t, nd + 1), ctrl = (uint64_t)prev_on_stream;
    for (int d = 0; d < nd; d++)
        data[d] = (uint64_t)deps[d];
    n.n_data_deps = (size_t)nd;
    n.data_deps = data;
    n.n_ctrl_deps = prev_on_stream >= 0 ? 1 : 0;
    n.ctrl_deps = &ctrl;
    put_frame(out, &n.base);
    g_free(data);
}

/* Rank `rank`'s file, in memory; NULL and sets *error if an op cannot be written. Transfer
 * full. */
static GByteArray *encode_rank(const ics_trace *t, int rank, GError **error)
{
    for (int i = 0; i < ics_trace_nops(t, rank); i++)
        if (!check_op(ics_trace_get_op(t, rank, i), rank, i, error))
            return NULL;
    GByteArray *out = g_byte_array_new();
    ChakraProtoMsg__GlobalMetadata meta;
    chakra_proto_msg__global_metadata__init(&meta);
    meta.version = (char *)"0.0.4"; /* what Chakra's generator writes */
    /* the rank's streams in order, so that a read-back trace has the same ones */
    int nst = ics_trace_nstreams(t, rank), nr = ics_trace_nranks(t);
    GString *names = g_string_new(NULL);
    for (int s = 0; s < nst; s++)
        g_string_append_printf(names, "%s%s", s ? "\n" : "", ics_trace_stream_name(t, rank, s));
    attrs ma = {.n = 0};
    put_str(&ma, "icsim_streams", names->str);
    meta.n_attr = ma.n;
    meta.attr = ma.p;
    put_frame(out, &meta.base);
    g_string_free(names, TRUE);
    /* per peer and channel: messages so far, for comm_tag */
    int tags = ICS_TRACE_MAX_TAG + 1;
    int *last = g_new(int, nst + 1), *sent = g_new0(int, (size_t)nr *tags),
        *recvd = g_new0(int, (size_t)nr *tags);
    for (int s = 0; s < nst; s++)
        last[s] = -1;
    for (int i = 0; i < ics_trace_nops(t, rank); i++) {
        const ics_trace_op *op = ics_trace_get_op(t, rank, i);
        size_t slot = (size_t)op->peer * tags + (size_t)op->tag;
        int k = op->kind == ICS_TOP_SEND   ? sent[slot]++
                : op->kind == ICS_TOP_RECV ? recvd[slot]++
                                           : 0;
        int tag = k * tags + op->tag; /* unique per pair: our (channel, index) matching */
        put_node(out, t, rank, i, last[op->stream], tag);
        last[op->stream] = i;
    }
    g_free(last);
    g_free(sent);
    g_free(recvd);
    return out;
}

/* ASTRA-sim's communicator-group file: {"1": [ranks], ...}, communicator c as group c + 1 (its
 * name goes in the nodes' pg_desc). */
static GByteArray *encode_groups(const ics_trace *t)
{
    GString *s = g_string_new("{");
    for (int c = 0; c < ics_trace_ncomms(t); c++) {
        int n;
        const int *ranks = ics_trace_comm_ranks(t, c, &n);
        g_string_append_printf(s, "%s\n  \"%d\": [", c ? "," : "", c + 1);
        for (int i = 0; i < n; i++)
            g_string_append_printf(s, "%s%d", i ? ", " : "", ranks[i]);
        g_string_append_c(s, ']');
    }
    g_string_append(s, "\n}\n");
    gsize len = s->len;
    return g_byte_array_new_take((guint8 *)g_string_free(s, FALSE), len);
}

/* Writes each buffer to a temporary file next to its path, then renames them all; on any
 * failure removes the temporary files and sets *error (ICS_ERROR_IO). */
static bool write_all(char **paths, GByteArray **bufs, int n, GError **error)
{
    char **tmps = g_new0(char *, n + 1);
    bool ok = true;
    for (int i = 0; i < n && ok; i++) {
        char *dir = g_path_get_dirname(paths[i]);
        tmps[i] = g_build_filename(dir, ".icsim-chakra-XXXXXX", NULL);
        g_free(dir);
        int fd = g_mkstemp_full(tmps[i], O_WRONLY, 0644);
        if (fd < 0) {
            g_set_error(error, ICS_ERROR, ICS_ERROR_IO, "%s: cannot write: %s", paths[i],
                        g_strerror(errno));
            g_clear_pointer(&tmps[i], g_free); /* nothing was created */
            ok = false;
            break;
        }
        FILE *f = fdopen(fd, "wb");
        if (!f)
            close(fd);
        ok = f && fwrite(bufs[i]->data, 1, bufs[i]->len, f) == bufs[i]->len;
        ok = f && fclose(f) == 0 && ok;
        if (!ok)
            g_set_error(error, ICS_ERROR, ICS_ERROR_IO, "%s: cannot write: %s", paths[i],
                        g_strerror(errno));
    }
    for (int i = 0; i < n && ok; i++)
        if (g_rename(tmps[i], paths[i]) != 0) {
            g_set_error(error, ICS_ERROR, ICS_ERROR_IO, "%s: cannot write: %s", paths[i],
                        g_strerror(errno));
            ok = false;
        } else {
            g_clear_pointer(&tmps[i], g_free);
        }
    for (int i = 0; i < n; i++)
        if (tmps[i])
            g_unlink(tmps[i]);
    g_strfreev(tmps);
    return ok;
}

bool ics_trace_write_chakra(const ics_trace *t, const char *prefix, GError **error)
{
    int nr = ics_trace_nranks(t);
    char **paths = g_new0(char *, nr + 2);
    GByteArray **bufs = g_new0(GByteArray *, nr + 1);
    bool ok = true;
    for (int k = 0; k < nr && ok; k++) {
        paths[k] = g_strdup_printf("%s.%d.et", prefix, k);
        ok = (bufs[k] = encode_rank(t, k, error)) != NULL;
    }
    if (ok) {
        paths[nr] = g_strdup_printf("%s.comm_groups.json", prefix);
        bufs[nr] = encode_groups(t);
        ok = write_all(paths, bufs, nr + 1, error);
    }
    /* a longer trace written here before would otherwise lend the reader its extra ranks */
    for (int k = nr; ok; k++) {
        char *f = g_strdup_printf("%s.%d.et", prefix, k);
        bool there = g_file_test(f, G_FILE_TEST_IS_REGULAR) && g_unlink(f) == 0;
        g_free(f);
        if (!there)
            break;
    }
    for (int k = 0; k <= nr; k++)
        if (bufs[k])
            g_byte_array_free(bufs[k], TRUE);
    g_free(bufs);
    g_strfreev(paths);
    return ok;
}
