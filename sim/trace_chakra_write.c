/* The Chakra writer (trace_chakra.h): one file per rank, a GlobalMetadata then one Node per op,
 * each framed by its length as a varint; ids are op indices. A stream's order becomes control
 * dependencies (Chakra has no streams), the op's own deps data dependencies. */
#include "trace_chakra.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <glib.h>
#include <glib/gstdio.h>

#include "et_def.pb-c.h"

typedef ChakraProtoMsg__AttributeProto attr;

/* Attribute storage for one node: at most this many. */
#define MAX_ATTRS 12

typedef struct {
    attr a[MAX_ATTRS];
    attr *p[MAX_ATTRS];
    size_t n;
} attrs;

static attr *next(attrs *s, const char *name)
{
    attr *a = &s->a[s->n];
    chakra_proto_msg__attribute_proto__init(a);
    a->name = (char *)name;
    s->p[s->n++] = a;
    return a;
}

static void put_int(attrs *s, const char *name, int64_t v)
{
    attr *a = next(s, name);
    a->value_case = CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_INT64_VAL;
    a->int64_val = v;
}

static void put_double(attrs *s, const char *name, double v)
{
    attr *a = next(s, name);
    a->value_case = CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_DOUBLE_VAL;
    a->double_val = v;
}

static void put_str(attrs *s, const char *name, const char *v)
{
    attr *a = next(s, name);
    a->value_case = CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_STRING_VAL;
    a->string_val = (char *)v;
}

static const int coll_type[ICS_COLL_OP_COUNT] = {
    [ICS_COLL_ALL_REDUCE] = CHAKRA_PROTO_MSG__COLLECTIVE_COMM_TYPE__ALL_REDUCE,
    [ICS_COLL_ALL_GATHER] = CHAKRA_PROTO_MSG__COLLECTIVE_COMM_TYPE__ALL_GATHER,
    [ICS_COLL_REDUCE_SCATTER] = CHAKRA_PROTO_MSG__COLLECTIVE_COMM_TYPE__REDUCE_SCATTER,
    [ICS_COLL_ALLTOALL] = CHAKRA_PROTO_MSG__COLLECTIVE_COMM_TYPE__ALL_TO_ALL,
    [ICS_COLL_BROADCAST] = CHAKRA_PROTO_MSG__COLLECTIVE_COMM_TYPE__BROADCAST,
    [ICS_COLL_REDUCE] = CHAKRA_PROTO_MSG__COLLECTIVE_COMM_TYPE__REDUCE,
};

static void put_varint(FILE *f, uint64_t v)
{
    do {
        uint8_t b = v & 0x7f;
        v >>= 7;
        fputc(b | (v ? 0x80 : 0), f);
    } while (v);
}

static void put_msg(FILE *f, const ProtobufCMessage *m)
{
    size_t n = protobuf_c_message_get_packed_size(m);
    uint8_t *buf = g_malloc(n + 1);
    protobuf_c_message_pack(m, buf);
    put_varint(f, n);
    fwrite(buf, 1, n, f);
    g_free(buf);
}

static void put_node(FILE *f, const ics_trace *t, int rank, int i, int prev_on_stream,
                     char *const *cnames)
{
    const ics_trace_op *op = ics_trace_get_op(t, rank, i);
    ChakraProtoMsg__Node n;
    chakra_proto_msg__node__init(&n);
    n.id = (uint64_t)i;
    n.name = (char *)(op->name ? op->name : "");
    attrs s = {.n = 0};
    put_str(&s, "icsim_stream", ics_trace_stream_name(t, rank, op->stream));
    put_str(&s, "icsim_category", ics_trace_cat_name(op->cat));
    switch (op->kind) {
    case ICS_TOP_COMPUTE:
        n.type = CHAKRA_PROTO_MSG__NODE_TYPE__COMP_NODE;
        if (op->duration_ps > 0) {
            n.duration_micros = (uint64_t)((op->duration_ps + ICS_PS_PER_US / 2) / ICS_PS_PER_US);
            put_int(&s, "icsim_duration_ps", op->duration_ps);
        } else {
            put_double(&s, "num_ops", op->flops);
            put_double(&s, "tensor_size", op->mem_bytes);
            put_int(&s, "icsim_work", op->work);
        }
        break;
    case ICS_TOP_COLL:
        n.type = CHAKRA_PROTO_MSG__NODE_TYPE__COMM_COLL_NODE;
        put_int(&s, "comm_type", coll_type[op->coll.op]);
        put_int(&s, "comm_size", (int64_t)op->coll.size_bytes);
        put_str(&s, "pg_name", cnames[op->comm]);
        put_int(&s, "icsim_dtype_bytes", op->coll.dtype_bytes);
        if (op->coll.root)
            put_int(&s, "root", op->coll.root);
        break;
    default:
        n.type = op->kind == ICS_TOP_SEND ? CHAKRA_PROTO_MSG__NODE_TYPE__COMM_SEND_NODE
                                          : CHAKRA_PROTO_MSG__NODE_TYPE__COMM_RECV_NODE;
        put_int(&s, op->kind == ICS_TOP_SEND ? "comm_dst" : "comm_src", op->peer);
        put_int(&s, "comm_size", (int64_t)op->bytes);
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
    put_msg(f, &n.base);
    g_free(data);
}

static FILE *open_tmp(const char *path, char **tmp, char **err)
{
    char *dir = g_path_get_dirname(path);
    *tmp = g_build_filename(dir, ".icsim-chakra-XXXXXX", NULL);
    g_free(dir);
    int fd = g_mkstemp(*tmp);
    if (fd >= 0)
        fchmod(fd, 0644);
    FILE *f = fd >= 0 ? fdopen(fd, "wb") : NULL;
    if (!f) {
        *err = g_strdup_printf("%s: cannot write: %s", path, g_strerror(errno));
        if (fd >= 0)
            close(fd);
        g_unlink(*tmp);
    }
    return f;
}

static bool close_tmp(FILE *f, char *tmp, const char *path, char **err)
{
    bool ok = !ferror(f);
    ok = fclose(f) == 0 && ok;
    if (ok && g_rename(tmp, path) != 0)
        ok = false;
    if (!ok) {
        *err = g_strdup_printf("%s: cannot write: %s", path, g_strerror(errno));
        g_unlink(tmp);
    }
    g_free(tmp);
    return ok;
}

static bool write_rank(const ics_trace *t, int rank, const char *prefix, char *const *cnames,
                       char **err)
{
    char *path = g_strdup_printf("%s.%d.et", prefix, rank), *tmp;
    FILE *f = open_tmp(path, &tmp, err);
    if (!f) {
        g_free(path);
        g_free(tmp);
        return false;
    }
    ChakraProtoMsg__GlobalMetadata meta;
    chakra_proto_msg__global_metadata__init(&meta);
    meta.version = (char *)"0.0.4";
    /* the rank's streams in order, so that a read-back trace has the same ones */
    GString *names = g_string_new(NULL);
    for (int s = 0; s < ics_trace_nstreams(t, rank); s++)
        g_string_append_printf(names, "%s%s", s ? "\n" : "", ics_trace_stream_name(t, rank, s));
    attrs ma = {.n = 0};
    put_str(&ma, "icsim_streams", names->str);
    meta.n_attr = ma.n;
    meta.attr = ma.p;
    put_msg(f, &meta.base);
    g_string_free(names, TRUE);
    int nst = ics_trace_nstreams(t, rank);
    int *last = g_new(int, nst + 1);
    for (int s = 0; s < nst; s++)
        last[s] = -1;
    for (int i = 0; i < ics_trace_nops(t, rank); i++) {
        int s = ics_trace_get_op(t, rank, i)->stream;
        put_node(f, t, rank, i, last[s], cnames);
        last[s] = i;
    }
    g_free(last);
    bool ok = close_tmp(f, tmp, path, err);
    g_free(path);
    return ok;
}

/* Group names: the trace's, made unique and non-empty (they are JSON keys and pg_names). */
static char **group_names(const ics_trace *t)
{
    int nc = ics_trace_ncomms(t);
    char **names = g_new0(char *, nc + 1);
    GHashTable *used = g_hash_table_new(g_str_hash, g_str_equal);
    for (int c = 0; c < nc; c++) {
        const char *base = ics_trace_comm_name(t, c);
        names[c] = *base && !g_hash_table_contains(used, base) ? g_strdup(base)
                                                               : g_strdup_printf("%s#%d", base, c);
        g_hash_table_add(used, names[c]);
    }
    g_hash_table_destroy(used);
    return names;
}

static bool write_groups(const ics_trace *t, const char *prefix, char *const *cnames, char **err)
{
    char *path = g_strdup_printf("%s.comm_groups.json", prefix), *tmp;
    FILE *f = open_tmp(path, &tmp, err);
    if (!f) {
        g_free(path);
        g_free(tmp);
        return false;
    }
    fputc('{', f);
    for (int c = 0; c < ics_trace_ncomms(t); c++) {
        int n;
        const int *ranks = ics_trace_comm_ranks(t, c, &n);
        char *key = g_strescape(cnames[c], NULL);
        fprintf(f, "%s\n  \"%s\": [", c ? "," : "", key);
        g_free(key);
        for (int i = 0; i < n; i++)
            fprintf(f, "%s%d", i ? ", " : "", ranks[i]);
        fputc(']', f);
    }
    fputs("\n}\n", f);
    bool ok = close_tmp(f, tmp, path, err);
    g_free(path);
    return ok;
}

bool ics_trace_write_chakra(const ics_trace *t, const char *prefix, char **err)
{
    *err = NULL;
    char **cnames = group_names(t);
    bool ok = write_groups(t, prefix, cnames, err);
    for (int k = 0; ok && k < ics_trace_nranks(t); k++)
        ok = write_rank(t, k, prefix, cnames, err);
    g_strfreev(cnames);
    return ok;
}
