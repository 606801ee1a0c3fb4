/* One Chakra node as an op (node.h): which nodes do GPU work, and the typed attribute reads that
 * turn one into an op. Invariant: every failure sets one "NAME: expected ..., got ..." line. */
#include "trace/chakra/node.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>

typedef ChakraProtoMsg__Node node;
typedef ChakraProtoMsg__AttributeProto attr;

#define MAX_BYTES  ((INT64_C(1) << 50) - 1) /* sizes past a PiB are corrupt data */
#define MAX_MICROS (INT64_C(1) << 40)       /* 12.7 days: past it ps overflow looms */

/* ---- attributes ----------------------------------------------------------------------------- */

/* Writers differ in the protobuf type of an attribute (PyTorch's converter writes comm_size as
 * int64, Chakra's generator as uint64), so every integer type reads as an integer, as
 * ASTRA-sim's feeder accepts. Unsigned values past INT64_MAX read as INT64_MAX, which no range
 * admits. */
static bool int_of(const attr *a, int64_t *v)
{
    switch (a->value_case) {
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_INT32_VAL:
        *v = a->int32_val;
        return true;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_INT64_VAL:
        *v = a->int64_val;
        return true;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_UINT32_VAL:
        *v = a->uint32_val;
        return true;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_UINT64_VAL:
        *v = a->uint64_val > INT64_MAX ? INT64_MAX : (int64_t)a->uint64_val;
        return true;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_SINT32_VAL:
        *v = a->sint32_val;
        return true;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_SINT64_VAL:
        *v = a->sint64_val;
        return true;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_FIXED32_VAL:
        *v = a->fixed32_val;
        return true;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_FIXED64_VAL:
        *v = a->fixed64_val > INT64_MAX ? INT64_MAX : (int64_t)a->fixed64_val;
        return true;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_SFIXED32_VAL:
        *v = a->sfixed32_val;
        return true;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_SFIXED64_VAL:
        *v = a->sfixed64_val;
        return true;
    default:
        return false;
    }
}

/* What an attribute holds, for messages. Transfer full. */
static char *describe(const attr *a)
{
    int64_t v;
    switch (a->value_case) {
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_DOUBLE_VAL:
        return g_strdup_printf("a double (%g)", a->double_val);
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_FLOAT_VAL:
        return g_strdup_printf("a float (%g)", (double)a->float_val);
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_BOOL_VAL:
        return g_strdup_printf("a bool (%s)", a->bool_val ? "true" : "false");
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_STRING_VAL: {
        char *e = g_strescape(a->string_val ? a->string_val : "", NULL);
        char *s = g_strdup_printf("a string (\"%.60s\")", e);
        g_free(e);
        return s;
    }
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_UINT64_VAL:
        return g_strdup_printf("%" PRIu64, a->uint64_val);
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_FIXED64_VAL:
        return g_strdup_printf("%" PRIu64, a->fixed64_val);
    default:
        if (int_of(a, &v))
            return g_strdup_printf("%" PRId64, v);
        return g_strdup("no value of a type icsim reads (a list?)");
    }
}

/* The attribute `name` of n in *out: 1 when found, 0 when absent (*out NULL), -1 when it
 * appears twice (sets *error). */
static int find(const node *n, const char *name, const attr **out, GError **error)
{
    *out = NULL;
    for (size_t i = 0; i < n->n_attr; i++)
        if (n->attr[i]->name && strcmp(n->attr[i]->name, name) == 0) {
            if (*out) {
                g_set_error(error, ICS_ERROR, ICS_ERROR_INPUT,
                            "%s: expected one attribute of that name, got several", name);
                return -1;
            }
            *out = n->attr[i];
        }
    return *out ? 1 : 0;
}

static int wrong(const attr *a, GError **error, const char *fmt, ...) G_GNUC_PRINTF(3, 4);

/* Sets *error to "NAME: expected <fmt>, got <what a holds>"; returns -1. */
static int wrong(const attr *a, GError **error, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *expected = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    char *msg = ics_chakra__wrong(a, expected);
    g_set_error_literal(error, ICS_ERROR, ICS_ERROR_INPUT, msg);
    g_free(msg);
    g_free(expected);
    return -1;
}

/* The getters return 1 when they read the attribute, 0 when it is absent (*out unchanged), -1
 * when it is there but unusable (sets *error). */
static int get_int(const node *n, const char *name, int64_t lo, int64_t hi, int64_t *out,
                   GError **error)
{
    int64_t v;
    const attr *a;
    int found = find(n, name, &a, error);
    if (found <= 0)
        return found;
    if (!int_of(a, &v) || v < lo || v > hi)
        return wrong(a, error, "an integer %" PRId64 " .. %" PRId64, lo, hi);
    *out = v;
    return 1;
}

static int get_num(const node *n, const char *name, double hi, double *out, GError **error)
{
    int64_t v;
    double x;
    const attr *a;
    int found = find(n, name, &a, error);
    if (found <= 0)
        return found;
    if (a->value_case == CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_DOUBLE_VAL)
        x = a->double_val;
    else if (a->value_case == CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_FLOAT_VAL)
        x = a->float_val;
    else if (int_of(a, &v))
        x = (double)v;
    else
        x = NAN;
    if (!(x >= 0 && x <= hi))
        return wrong(a, error, "a number 0 .. %g", hi);
    *out = x;
    return 1;
}

static int get_bool(const node *n, const char *name, bool *out, GError **error)
{
    int64_t v;
    const attr *a;
    int found = find(n, name, &a, error);
    if (found <= 0)
        return found;
    if (a->value_case == CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_BOOL_VAL)
        *out = a->bool_val;
    else if (int_of(a, &v) && (v == 0 || v == 1))
        *out = v == 1;
    else
        return wrong(a, error, "a bool");
    return 1;
}

/* *out points into the node (transfer none). */
static int get_str(const node *n, const char *name, const char **out, GError **error)
{
    const attr *a;
    int found = find(n, name, &a, error);
    if (found <= 0)
        return found;
    if (a->value_case != CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_STRING_VAL)
        return wrong(a, error, "a string");
    *out = a->string_val ? a->string_val : "";
    return 1;
}

/* A required attribute that is absent: "NAME: expected an attribute (WHAT), got none". */
static bool absent(GError **error, const char *name, const char *what)
{
    g_set_error(error, ICS_ERROR, ICS_ERROR_INPUT, "%s: expected an attribute (%s), got none", name,
                what);
    return false;
}

/* ---- one node ------------------------------------------------------------------------------- */

static const char *enum_name(const ProtobufCEnumDescriptor *d, int v, char *buf, size_t n)
{
    const ProtobufCEnumValue *e = protobuf_c_enum_descriptor_get_value(d, v);
    if (e)
        return e->name;
    g_snprintf(buf, n, "%d", v);
    return buf;
}

int ics_chakra__node_role(const node *n, GError **error)
{
    bool cpu = false;
    char buf[16];
    switch (n->type) {
    case CHAKRA_PROTO_MSG__NODE_TYPE__INVALID_NODE:
    case CHAKRA_PROTO_MSG__NODE_TYPE__METADATA_NODE:
        return 0;
    case CHAKRA_PROTO_MSG__NODE_TYPE__COMP_NODE:
        if (get_bool(n, "is_cpu_op", &cpu, error) < 0)
            return -1;
        return cpu ? 0 : 1;
    case CHAKRA_PROTO_MSG__NODE_TYPE__COMM_COLL_NODE:
    case CHAKRA_PROTO_MSG__NODE_TYPE__COMM_SEND_NODE:
    case CHAKRA_PROTO_MSG__NODE_TYPE__COMM_RECV_NODE:
        if (get_bool(n, "is_cpu_op", &cpu, error) < 0)
            return -1;
        if (cpu) {
            g_set_error_literal(error, ICS_ERROR, ICS_ERROR_INPUT,
                                "is_cpu_op: expected false on a communication node (ASTRA-sim "
                                "rejects it too), got true");
            return -1;
        }
        return 1;
    default:
        g_set_error(
            error, ICS_ERROR, ICS_ERROR_INPUT,
            "type: expected a node icsim replays (COMP_NODE, COMM_COLL_NODE, COMM_SEND_NODE, "
            "COMM_RECV_NODE; METADATA_NODE and INVALID_NODE carry no work), got %s",
            enum_name(&chakra_proto_msg__node_type__descriptor, (int)n->type, buf, sizeof buf));
        return -1;
    }
}

static const char *const work_names[ICS_WORK_KIND_COUNT] = {"gemm", "attention", "elementwise"};

static bool comp_op(const node *n, ics_trace_op *op, GError **error)
{
    int64_t v;
    const char *dtype = NULL;
    op->kind = ICS_TOP_COMPUTE;
    op->dtype = ICS_DTYPE_BF16;
    int rc = get_int(n, "icsim_duration_ps", 1, MAX_MICROS * ICS_PS_PER_US, &v, error);
    if (rc < 0)
        return false;
    if (rc > 0) {
        op->duration_ps = v;
    } else if (n->duration_micros > (uint64_t)MAX_MICROS) {
        g_set_error(error, ICS_ERROR, ICS_ERROR_INPUT,
                    "duration_micros: expected at most 2^40, got %" PRIu64, n->duration_micros);
        return false;
    } else if (n->duration_micros > 0) {
        op->duration_ps = (ics_time)n->duration_micros * ICS_PS_PER_US;
    }
    /* the work is read even with a duration (which wins): it is part of the op */
    int f = get_num(n, "num_ops", 1e24, &op->flops, error);
    int b = f < 0 ? -1 : get_num(n, "tensor_size", 1e18, &op->mem_bytes, error);
    if (f < 0 || b < 0)
        return false;
    if (!op->duration_ps && !f && !b) /* no time, no work: ASTRA-sim replays such a node as 1 ns */
        op->duration_ps = ICS_PS_PER_NS;
    const char *work = NULL;
    if ((rc = get_str(n, "icsim_work", &work, error)) < 0)
        return false;
    for (int w = 0; rc > 0 && w < ICS_WORK_KIND_COUNT; w++)
        if (strcmp(work, work_names[w]) == 0) {
            op->work = (ics_work_kind)w;
            rc = 0;
        }
    if (rc > 0) {
        const attr *a;
        find(n, "icsim_work", &a, NULL); /* there once: get_str read it */
        wrong(a, error, "gemm, attention or elementwise");
        return false;
    }
    if ((rc = get_str(n, "icsim_dtype", &dtype, error)) < 0)
        return false;
    for (int d = 0; rc > 0 && d < ICS_DTYPE_COUNT; d++)
        if (strcmp(dtype, ics_dtype_name((ics_dtype)d)) == 0) {
            op->dtype = (ics_dtype)d;
            rc = 0;
        }
    if (rc > 0) {
        const attr *a;
        find(n, "icsim_dtype", &a, NULL); /* there once: get_str read it */
        wrong(a, error, "a data type (fp32, bf16, ...)");
        return false;
    }
    int *mnk[3] = {&op->m, &op->n, &op->k};
    const char *names[3] = {"icsim_m", "icsim_n", "icsim_k"};
    for (int i = 0; i < 3; i++) {
        v = 0;
        if (get_int(n, names[i], 0, INT32_MAX, &v, error) < 0)
            return false;
        *mnk[i] = (int)v;
    }
    return true;
}

static bool coll_op(const node *n, ics_trace_op *op, GError **error)
{
    int64_t v = 0;
    char buf[16];
    op->kind = ICS_TOP_COLL;
    int rc = get_int(n, "comm_type", 0, INT32_MAX, &v, error);
    if (rc <= 0)
        return rc == 0 ? absent(error, "comm_type", "the collective") : false;
    switch (v) {
    case CHAKRA_PROTO_MSG__COLLECTIVE_COMM_TYPE__ALL_REDUCE:
        op->coll.op = ICS_COLL_ALL_REDUCE;
        break;
    case CHAKRA_PROTO_MSG__COLLECTIVE_COMM_TYPE__REDUCE:
        op->coll.op = ICS_COLL_REDUCE;
        break;
    case CHAKRA_PROTO_MSG__COLLECTIVE_COMM_TYPE__ALL_GATHER:
        op->coll.op = ICS_COLL_ALL_GATHER;
        break;
    case CHAKRA_PROTO_MSG__COLLECTIVE_COMM_TYPE__BROADCAST:
        op->coll.op = ICS_COLL_BROADCAST;
        break;
    case CHAKRA_PROTO_MSG__COLLECTIVE_COMM_TYPE__ALL_TO_ALL:
        op->coll.op = ICS_COLL_ALLTOALL;
        break;
    case CHAKRA_PROTO_MSG__COLLECTIVE_COMM_TYPE__REDUCE_SCATTER:
    case CHAKRA_PROTO_MSG__COLLECTIVE_COMM_TYPE__REDUCE_SCATTER_BLOCK: /* NCCL's is the block one */
        op->coll.op = ICS_COLL_REDUCE_SCATTER;
        break;
    default:
        g_set_error(error, ICS_ERROR, ICS_ERROR_INPUT,
                    "comm_type: expected ALL_REDUCE, REDUCE, ALL_GATHER, BROADCAST, ALL_TO_ALL, "
                    "REDUCE_SCATTER or REDUCE_SCATTER_BLOCK, got %s",
                    enum_name(&chakra_proto_msg__collective_comm_type__descriptor, (int)v, buf,
                              sizeof buf));
        return false;
    }
    if ((rc = get_int(n, "comm_size", 1, MAX_BYTES, &v, error)) <= 0)
        return rc == 0 ? absent(error, "comm_size", "bytes") : false;
    op->coll.size_bytes = (uint64_t)v;
    v = 2;
    if (get_int(n, "icsim_dtype_bytes", 1, 8, &v, error) < 0)
        return false;
    op->coll.dtype_bytes = (int)v;
    v = 0;
    if (get_int(n, "icsim_root", 0, INT32_MAX, &v, error) < 0)
        return false;
    op->coll.root = (int)v;
    return true;
}

static bool p2p_op(const node *n, int rank, int nranks, ics_trace_op *op, GError **error)
{
    bool send = n->type == CHAKRA_PROTO_MSG__NODE_TYPE__COMM_SEND_NODE;
    const char *peer = send ? "comm_dst" : "comm_src", *self = send ? "comm_src" : "comm_dst";
    int64_t v = 0, me = rank;
    op->kind = send ? ICS_TOP_SEND : ICS_TOP_RECV;
    int rc = get_int(n, peer, 0, nranks - 1, &v, error);
    if (rc <= 0)
        return rc == 0 ? absent(error, peer, send ? "the receiving rank" : "the sending rank")
                       : false;
    if (v == rank) {
        g_set_error(error, ICS_ERROR, ICS_ERROR_INPUT,
                    "%s: expected another rank than this file's, got %d", peer, rank);
        return false;
    }
    op->peer = (int)v;
    if (get_int(n, self, 0, INT32_MAX, &me, error) < 0)
        return false;
    if (me != rank) {
        g_set_error(error, ICS_ERROR, ICS_ERROR_INPUT,
                    "%s: expected this file's rank %d, got %" PRId64, self, rank, me);
        return false;
    }
    if ((rc = get_int(n, "comm_size", 1, MAX_BYTES, &v, error)) <= 0)
        return rc == 0 ? absent(error, "comm_size", "bytes") : false;
    op->bytes = (uint64_t)v;
    int64_t tag = 0; /* our channel, when the writer was icsim */
    if (get_int(n, "icsim_tag", 0, ICS_TRACE_MAX_TAG, &tag, error) < 0)
        return false;
    op->tag = (int)tag;
    return true;
}

/* A category from a group's name or description, when its words say which: "tp0",
 * "TENSOR_MODEL_PARALLEL_GROUP" -> tp; a name that says nothing or two things -> other. */
static ics_trace_cat cat_of_name(const char *s)
{
    static const struct {
        const char *word;
        ics_trace_cat cat;
    } words[] = {{"tp", ICS_CAT_TP},       {"tensor", ICS_CAT_TP}, {"sp", ICS_CAT_TP},
                 {"sequence", ICS_CAT_TP}, {"pp", ICS_CAT_PP},     {"pipeline", ICS_CAT_PP},
                 {"dp", ICS_CAT_DP},       {"data", ICS_CAT_DP},   {"fsdp", ICS_CAT_DP},
                 {"ep", ICS_CAT_EP},       {"expert", ICS_CAT_EP}, {"cp", ICS_CAT_CP},
                 {"context", ICS_CAT_CP}};
    int found = -1;
    for (const char *p = s; p && *p;) {
        while (*p && !g_ascii_isalpha(*p))
            p++;
        const char *w = p;
        while (g_ascii_isalpha(*p))
            p++;
        for (size_t i = 0; i < G_N_ELEMENTS(words); i++)
            if (strlen(words[i].word) == (size_t)(p - w) &&
                g_ascii_strncasecmp(w, words[i].word, (gsize)(p - w)) == 0) {
                if (found >= 0 && found != (int)words[i].cat)
                    return ICS_CAT_OTHER;
                found = (int)words[i].cat;
            }
    }
    return found < 0 ? ICS_CAT_OTHER : (ics_trace_cat)found;
}

static const char *const cat_names[ICS_CAT_COUNT] = {"compute", "tp", "pp",   "dp",
                                                     "ep",      "cp", "other"};

bool ics_chakra__node_op(const node *n, int rank, int nranks, GStringChunk *strs,
                         ics_chakra_op *out, GError **error)
{
    const char *cat = NULL, *st = NULL, *pg = NULL, *desc = NULL;
    ics_trace_op *op = &out->op;
    memset(out, 0, sizeof *out);
    if (get_str(n, "icsim_category", &cat, error) < 0 ||
        get_str(n, "icsim_stream", &st, error) < 0 || get_str(n, "pg_name", &pg, error) < 0 ||
        get_str(n, "pg_desc", &desc, error) < 0)
        return false;
    op->name = n->name && *n->name ? ics_chakra__intern(strs, n->name) : NULL;
    bool ok = n->type == CHAKRA_PROTO_MSG__NODE_TYPE__COMP_NODE ? comp_op(n, op, error)
              : n->type == CHAKRA_PROTO_MSG__NODE_TYPE__COMM_COLL_NODE
                  ? coll_op(n, op, error)
                  : p2p_op(n, rank, nranks, op, error);
    int64_t launches = 0; /* the host, when the writer was icsim (trace.h) */
    if (!ok || get_int(n, "icsim_launches", 0, ICS_TRACE_MAX_LAUNCHES, &launches, error) < 0 ||
        get_bool(n, "icsim_host_sync", &op->host_sync, error) < 0)
        return false;
    op->launches = (int)launches;
    if (cat) {
        int c = 0;
        while (c < ICS_CAT_COUNT && strcmp(cat, cat_names[c]) != 0)
            c++;
        if (c == ICS_CAT_COUNT) {
            const attr *a;
            find(n, "icsim_category", &a, NULL); /* there once: get_str read it */
            wrong(a, error, "compute, tp, pp, dp, ep, cp or other");
            return false;
        }
        op->cat = (ics_trace_cat)c;
    } else {
        op->cat = op->kind == ICS_TOP_COMPUTE ? ICS_CAT_COMPUTE : cat_of_name(desc ? desc : pg);
    }
    if (op->kind == ICS_TOP_COLL) { /* no group or ASTRA-sim's default group "0": all ranks */
        out->pg = ics_chakra__intern(strs, pg && strcmp(pg, "0") != 0 ? pg : "");
        out->desc = desc && *desc ? ics_chakra__intern(strs, desc) : NULL;
    }
    out->stream = g_string_chunk_insert_const(strs, st && *st                     ? st
                                                    : op->kind == ICS_TOP_COMPUTE ? "compute"
                                                                                  : "comm");
    return true;
}

const char *ics_chakra__intern(GStringChunk *strs, const char *s)
{
    const char *c = s;
    while (*c && (unsigned char)*c >= 0x20 && *c != 0x7f)
        c++;
    if (!*c)
        return g_string_chunk_insert_const(strs, s);
    GString *e = g_string_new(NULL);
    for (c = s; *c; c++)
        if ((unsigned char)*c < 0x20 || *c == 0x7f)
            g_string_append_printf(e, "\\x%02x", (unsigned char)*c);
        else
            g_string_append_c(e, *c);
    const char *out = g_string_chunk_insert_const(strs, e->str);
    g_string_free(e, TRUE);
    return out;
}

bool ics_chakra__has_attr(const node *n, const char *name)
{
    for (size_t i = 0; i < n->n_attr; i++)
        if (n->attr[i]->name && strcmp(n->attr[i]->name, name) == 0)
            return true;
    return false;
}

char *ics_chakra__wrong(const attr *a, const char *what)
{
    char *got = describe(a), *msg = g_strdup_printf("%s: expected %s, got %s", a->name, what, got);
    g_free(got);
    return msg;
}
