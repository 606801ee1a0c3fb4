/* The Chakra reader (trace_chakra.h). Per rank: frame the file's messages, unpack them with
 * protobuf-c, order the nodes so that dependencies come first, and turn each node that does GPU
 * work into an op (docs/trace-format.md, "Chakra execution traces", has the table); nodes
 * without work (metadata, CPU-side ops) are folded: whoever depends on them depends on their
 * dependencies. With every rank read, the communicators are resolved (pg_name through the
 * groups file, or the ranks that use it) and the trace is built.
 * Invariant: every error names the file, and the node's position and id where there is one. */
#include "trace_chakra.h"
#include "json.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>

#include <glib.h>

#include "et_def.pb-c.h"

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

/* The attribute `name` of n, NULL if absent; *why (transfer full) if it appears twice. */
static const attr *find(const node *n, const char *name, char **why)
{
    const attr *found = NULL;
    for (size_t i = 0; i < n->n_attr; i++)
        if (n->attr[i]->name && strcmp(n->attr[i]->name, name) == 0) {
            if (found) {
                *why =
                    g_strdup_printf("%s: expected one attribute of that name, got several", name);
                return NULL;
            }
            found = n->attr[i];
        }
    return found;
}

static int wrong(const attr *a, char **why, const char *fmt, ...) G_GNUC_PRINTF(3, 4);

/* Sets *why to "NAME: expected <fmt>, got <what a holds>"; returns -1. */
static int wrong(const attr *a, char **why, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *expected = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    char *got = describe(a);
    *why = g_strdup_printf("%s: expected %s, got %s", a->name, expected, got);
    g_free(got);
    g_free(expected);
    return -1;
}

/* The getters return 1 when they read the attribute, 0 when it is absent (*out unchanged), -1
 * when it is there but unusable (*why, transfer full, says why). */
static int get_int(const node *n, const char *name, int64_t lo, int64_t hi, int64_t *out,
                   char **why)
{
    int64_t v;
    const attr *a = find(n, name, why);
    if (!a)
        return *why ? -1 : 0;
    if (!int_of(a, &v) || v < lo || v > hi)
        return wrong(a, why, "an integer %" PRId64 " .. %" PRId64, lo, hi);
    *out = v;
    return 1;
}

static int get_num(const node *n, const char *name, double hi, double *out, char **why)
{
    int64_t v;
    double x;
    const attr *a = find(n, name, why);
    if (!a)
        return *why ? -1 : 0;
    if (a->value_case == CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_DOUBLE_VAL)
        x = a->double_val;
    else if (a->value_case == CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_FLOAT_VAL)
        x = a->float_val;
    else if (int_of(a, &v))
        x = (double)v;
    else
        x = NAN;
    if (!(x >= 0 && x <= hi))
        return wrong(a, why, "a number 0 .. %g", hi);
    *out = x;
    return 1;
}

static int get_bool(const node *n, const char *name, bool *out, char **why)
{
    int64_t v;
    const attr *a = find(n, name, why);
    if (!a)
        return *why ? -1 : 0;
    if (a->value_case == CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_BOOL_VAL)
        *out = a->bool_val;
    else if (int_of(a, &v) && (v == 0 || v == 1))
        *out = v == 1;
    else
        return wrong(a, why, "a bool");
    return 1;
}

/* *out points into the node (transfer none). */
static int get_str(const node *n, const char *name, const char **out, char **why)
{
    const attr *a = find(n, name, why);
    if (!a)
        return *why ? -1 : 0;
    if (a->value_case != CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_STRING_VAL)
        return wrong(a, why, "a string");
    *out = a->string_val ? a->string_val : "";
    return 1;
}

/* A required attribute that is absent: "NAME: expected an attribute (WHAT), got none". */
static bool absent(char **why, const char *name, const char *what)
{
    *why = g_strdup_printf("%s: expected an attribute (%s), got none", name, what);
    return false;
}

/* ---- the reader's state --------------------------------------------------------------------- */

/* An op read from a node, waiting for the communicators to be resolved. */
typedef struct {
    ics_trace_op op;
    const char *pg;   /* collectives: the group key ("" for all ranks), interned */
    const char *desc; /* collectives: the group's pg_desc, interned, or NULL */
    const char *file; /* where it was written, for messages */
    size_t idx;
    uint64_t id;
    int dep0, ndeps; /* into rank_rec.deps */
} pend;

typedef struct {
    GArray *ops;           /* pend, in dependency order: the trace's op order */
    GArray *deps;          /* int */
    GPtrArray *streams;    /* names (interned), in the trace's order */
    GHashTable *stream_ix; /* name -> index + 1 */
} rank_rec;

/* A communicator group as the nodes name it. */
typedef struct {
    const char *desc;         /* the first pg_desc given, or NULL */
    bool *uses;               /* per rank: issues a collective on it */
    int first_rank, first_op; /* its first use, for messages */
    int comm;                 /* the trace's communicator, -1 until resolved */
} group_rec;

typedef struct {
    int nranks;
    rank_rec *ranks;
    GStringChunk *strs;
    GHashTable *groups;     /* key -> group_rec *, keys interned */
    GPtrArray *group_order; /* keys, in order of first use */
    char *err;
} reader;

static reader *reader_new(int nranks)
{
    reader *r = g_new0(reader, 1);
    r->nranks = nranks;
    r->ranks = g_new0(rank_rec, nranks);
    for (int k = 0; k < nranks; k++) {
        r->ranks[k].ops = g_array_new(FALSE, FALSE, sizeof(pend));
        r->ranks[k].deps = g_array_new(FALSE, FALSE, sizeof(int));
        r->ranks[k].streams = g_ptr_array_new();
        r->ranks[k].stream_ix = g_hash_table_new(g_str_hash, g_str_equal);
    }
    r->strs = g_string_chunk_new(4096);
    r->groups = g_hash_table_new(g_str_hash, g_str_equal);
    r->group_order = g_ptr_array_new();
    return r;
}

static void reader_free(reader *r)
{
    for (int k = 0; k < r->nranks; k++) {
        g_array_free(r->ranks[k].ops, TRUE);
        g_array_free(r->ranks[k].deps, TRUE);
        g_ptr_array_free(r->ranks[k].streams, TRUE);
        g_hash_table_destroy(r->ranks[k].stream_ix);
    }
    g_free(r->ranks);
    for (guint i = 0; i < r->group_order->len; i++) {
        group_rec *g = g_hash_table_lookup(r->groups, g_ptr_array_index(r->group_order, i));
        g_free(g->uses);
        g_free(g);
    }
    g_hash_table_destroy(r->groups);
    g_ptr_array_free(r->group_order, TRUE);
    g_string_chunk_free(r->strs);
    g_free(r->err);
    g_free(r);
}

static const char *intern(reader *r, const char *s)
{
    return g_string_chunk_insert_const(r->strs, s);
}

static bool fail(reader *r, char *msg)
{
    if (!r->err)
        r->err = msg;
    else
        g_free(msg);
    return false;
}

/* "FILE: node IDX (id ID, "NAME"): WHY"; takes why. */
static bool node_fail(reader *r, const char *file, size_t idx, const node *n, char *why)
{
    char *name = g_strescape(n->name ? n->name : "", NULL);
    fail(r, g_strdup_printf("%s: node %zu (id %" PRIu64 ", \"%.60s\"): %s", file, idx, n->id, name,
                            why));
    g_free(name);
    g_free(why);
    return false;
}

static int stream_of(reader *r, int rank, const char *name)
{
    rank_rec *rr = &r->ranks[rank];
    int s = GPOINTER_TO_INT(g_hash_table_lookup(rr->stream_ix, name)) - 1;
    if (s < 0) {
        const char *key = intern(r, name);
        g_ptr_array_add(rr->streams, (gpointer)key);
        s = (int)rr->streams->len - 1;
        g_hash_table_insert(rr->stream_ix, (gpointer)key, GINT_TO_POINTER(s + 1));
    }
    return s;
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

/* 1: the node does GPU work (an op), 0: it does not (folded), -1: icsim cannot replay it. */
static int node_role(const node *n, char **why)
{
    bool cpu = false;
    char buf[16];
    switch (n->type) {
    case CHAKRA_PROTO_MSG__NODE_TYPE__INVALID_NODE:
    case CHAKRA_PROTO_MSG__NODE_TYPE__METADATA_NODE:
        return 0;
    case CHAKRA_PROTO_MSG__NODE_TYPE__COMP_NODE:
        if (get_bool(n, "is_cpu_op", &cpu, why) < 0)
            return -1;
        return cpu ? 0 : 1;
    case CHAKRA_PROTO_MSG__NODE_TYPE__COMM_COLL_NODE:
    case CHAKRA_PROTO_MSG__NODE_TYPE__COMM_SEND_NODE:
    case CHAKRA_PROTO_MSG__NODE_TYPE__COMM_RECV_NODE:
        if (get_bool(n, "is_cpu_op", &cpu, why) < 0)
            return -1;
        if (cpu) {
            *why = g_strdup("is_cpu_op: expected false on a communication node (ASTRA-sim "
                            "rejects it too), got true");
            return -1;
        }
        return 1;
    default:
        *why = g_strdup_printf(
            "type: expected a node icsim replays (COMP_NODE, COMM_COLL_NODE, COMM_SEND_NODE, "
            "COMM_RECV_NODE; METADATA_NODE and INVALID_NODE carry no work), got %s",
            enum_name(&chakra_proto_msg__node_type__descriptor, (int)n->type, buf, sizeof buf));
        return -1;
    }
}

static const char *const work_names[ICS_WORK_KIND_COUNT] = {"gemm", "attention", "elementwise"};

static bool comp_op(const node *n, ics_trace_op *op, char **why)
{
    int64_t v;
    const char *dtype = NULL;
    op->kind = ICS_TOP_COMPUTE;
    op->dtype = ICS_DTYPE_BF16;
    int rc = get_int(n, "icsim_duration_ps", 1, MAX_MICROS * ICS_PS_PER_US, &v, why);
    if (rc < 0)
        return false;
    if (rc > 0) {
        op->duration_ps = v;
    } else if (n->duration_micros > (uint64_t)MAX_MICROS) {
        *why = g_strdup_printf("duration_micros: expected at most 2^40, got %" PRIu64,
                               n->duration_micros);
        return false;
    } else if (n->duration_micros > 0) {
        op->duration_ps = (ics_time)n->duration_micros * ICS_PS_PER_US;
    }
    /* the work is read even with a duration (which wins): it is part of the op */
    int f = get_num(n, "num_ops", 1e24, &op->flops, why);
    int b = f < 0 ? -1 : get_num(n, "tensor_size", 1e18, &op->mem_bytes, why);
    if (f < 0 || b < 0)
        return false;
    if (!op->duration_ps && !f && !b) /* no time, no work: ASTRA-sim replays such a node as 1 ns */
        op->duration_ps = ICS_PS_PER_NS;
    const char *work = NULL;
    if ((rc = get_str(n, "icsim_work", &work, why)) < 0)
        return false;
    for (int w = 0; rc > 0 && w < ICS_WORK_KIND_COUNT; w++)
        if (strcmp(work, work_names[w]) == 0) {
            op->work = (ics_work_kind)w;
            rc = 0;
        }
    if (rc > 0) {
        wrong(find(n, "icsim_work", why), why, "gemm, attention or elementwise");
        return false;
    }
    if ((rc = get_str(n, "icsim_dtype", &dtype, why)) < 0)
        return false;
    for (int d = 0; rc > 0 && d < ICS_DTYPE_COUNT; d++)
        if (strcmp(dtype, ics_dtype_name((ics_dtype)d)) == 0) {
            op->dtype = (ics_dtype)d;
            rc = 0;
        }
    if (rc > 0) {
        wrong(find(n, "icsim_dtype", why), why, "a data type (fp32, bf16, ...)");
        return false;
    }
    int *mnk[3] = {&op->m, &op->n, &op->k};
    const char *names[3] = {"icsim_m", "icsim_n", "icsim_k"};
    for (int i = 0; i < 3; i++) {
        v = 0;
        if (get_int(n, names[i], 0, INT32_MAX, &v, why) < 0)
            return false;
        *mnk[i] = (int)v;
    }
    return true;
}

static bool coll_op(const node *n, ics_trace_op *op, char **why)
{
    int64_t v = 0;
    char buf[16];
    op->kind = ICS_TOP_COLL;
    int rc = get_int(n, "comm_type", 0, INT32_MAX, &v, why);
    if (rc <= 0)
        return rc == 0 ? absent(why, "comm_type", "the collective") : false;
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
        *why = g_strdup_printf(
            "comm_type: expected ALL_REDUCE, REDUCE, ALL_GATHER, BROADCAST, ALL_TO_ALL, "
            "REDUCE_SCATTER or REDUCE_SCATTER_BLOCK, got %s",
            enum_name(&chakra_proto_msg__collective_comm_type__descriptor, (int)v, buf,
                      sizeof buf));
        return false;
    }
    if ((rc = get_int(n, "comm_size", 1, MAX_BYTES, &v, why)) <= 0)
        return rc == 0 ? absent(why, "comm_size", "bytes") : false;
    op->coll.size_bytes = (uint64_t)v;
    v = 2;
    if (get_int(n, "icsim_dtype_bytes", 1, 8, &v, why) < 0)
        return false;
    op->coll.dtype_bytes = (int)v;
    v = 0;
    if (get_int(n, "icsim_root", 0, INT32_MAX, &v, why) < 0)
        return false;
    op->coll.root = (int)v;
    return true;
}

static bool p2p_op(const node *n, int rank, int nranks, ics_trace_op *op, char **why)
{
    bool send = n->type == CHAKRA_PROTO_MSG__NODE_TYPE__COMM_SEND_NODE;
    const char *peer = send ? "comm_dst" : "comm_src", *self = send ? "comm_src" : "comm_dst";
    int64_t v = 0, me = rank;
    op->kind = send ? ICS_TOP_SEND : ICS_TOP_RECV;
    int rc = get_int(n, peer, 0, nranks - 1, &v, why);
    if (rc <= 0)
        return rc == 0 ? absent(why, peer, send ? "the receiving rank" : "the sending rank")
                       : false;
    if (v == rank) {
        *why = g_strdup_printf("%s: expected another rank than this file's, got %d", peer, rank);
        return false;
    }
    op->peer = (int)v;
    if (get_int(n, self, 0, INT32_MAX, &me, why) < 0)
        return false;
    if (me != rank) {
        *why = g_strdup_printf("%s: expected this file's rank %d, got %" PRId64, self, rank, me);
        return false;
    }
    if ((rc = get_int(n, "comm_size", 1, MAX_BYTES, &v, why)) <= 0)
        return rc == 0 ? absent(why, "comm_size", "bytes") : false;
    op->bytes = (uint64_t)v;
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
                 {"dp", ICS_CAT_DP},       {"data", ICS_CAT_DP},   {"fsdp", ICS_CAT_DP}};
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

static const char *const cat_names[ICS_CAT_COUNT] = {"compute", "tp", "pp", "dp", "other"};

/* Notes that op `i` of `rank`, a collective, uses its group. */
static void use_group(reader *r, int rank, int i)
{
    const pend *p = &g_array_index(r->ranks[rank].ops, pend, i);
    const char *key = p->pg, *desc = p->desc;
    group_rec *g = g_hash_table_lookup(r->groups, key);
    if (!g) {
        g = g_new0(group_rec, 1);
        g->uses = g_new0(bool, r->nranks);
        g->first_rank = rank;
        g->first_op = i;
        g->comm = -1;
        g_hash_table_insert(r->groups, (gpointer)key, g);
        g_ptr_array_add(r->group_order, (gpointer)key);
    }
    if (!g->desc && desc)
        g->desc = desc;
    g->uses[rank] = true;
}

/* Fills p from a node that does work; *stream: its stream's name. */
static bool node_op(reader *r, int rank, const node *n, pend *p, const char **stream, char **why)
{
    const char *cat = NULL, *st = NULL, *pg = NULL, *desc = NULL;
    ics_trace_op *op = &p->op;
    if (get_str(n, "icsim_category", &cat, why) < 0 || get_str(n, "icsim_stream", &st, why) < 0 ||
        get_str(n, "pg_name", &pg, why) < 0 || get_str(n, "pg_desc", &desc, why) < 0)
        return false;
    op->name = n->name && *n->name ? intern(r, n->name) : NULL;
    bool ok = n->type == CHAKRA_PROTO_MSG__NODE_TYPE__COMP_NODE ? comp_op(n, op, why)
              : n->type == CHAKRA_PROTO_MSG__NODE_TYPE__COMM_COLL_NODE
                  ? coll_op(n, op, why)
                  : p2p_op(n, rank, r->nranks, op, why);
    if (!ok)
        return false;
    if (cat) {
        int c = 0;
        while (c < ICS_CAT_COUNT && strcmp(cat, cat_names[c]) != 0)
            c++;
        if (c == ICS_CAT_COUNT) {
            wrong(find(n, "icsim_category", why), why, "compute, tp, pp, dp or other");
            return false;
        }
        op->cat = (ics_trace_cat)c;
    } else {
        op->cat = op->kind == ICS_TOP_COMPUTE ? ICS_CAT_COMPUTE : cat_of_name(desc ? desc : pg);
    }
    if (op->kind == ICS_TOP_COLL) { /* no group or ASTRA-sim's default group "0": all ranks */
        p->pg = intern(r, pg && strcmp(pg, "0") != 0 ? pg : "");
        p->desc = desc && *desc ? intern(r, desc) : NULL;
    }
    *stream = st && *st ? st : op->kind == ICS_TOP_COMPUTE ? "compute" : "comm";
    return true;
}

/* ---- one file ------------------------------------------------------------------------------- */

/* Splits a file into its length-delimited messages: (offset, length) pairs. */
static bool frames(reader *r, const char *file, const uint8_t *d, size_t len, GArray *out)
{
    for (size_t at = 0; at < len;) {
        uint64_t v = 0;
        size_t start = at;
        for (int shift = 0;; shift += 7) {
            if (at >= len || shift > 63)
                return fail(r, g_strdup_printf("%s: byte %zu: expected a message length (a varint "
                                               "of at most 10 bytes), got %s",
                                               file, start,
                                               at >= len ? "the end of the file" : "a longer one"));
            uint8_t b = d[at++];
            v |= (uint64_t)(b & 0x7f) << shift;
            if (!(b & 0x80))
                break;
        }
        if (v > len - at)
            return fail(r, g_strdup_printf("%s: byte %zu: expected a message of %" PRIu64
                                           " bytes, got the end of the file after %zu "
                                           "(truncated?)",
                                           file, start, v, len - at));
        size_t fr[2] = {at, (size_t)v};
        g_array_append_vals(out, fr, 1);
        at += (size_t)v;
    }
    return true;
}

/* A node's dependency lists: data_deps, then ctrl_deps. In icsim's own files (icsim_stream set)
 * ctrl_deps only repeat the stream order, which the named stream imposes again: they are left
 * out, so that a trace reads back as it was written. Returns how many lists count. */
static int dep_lists(const node *x, const uint64_t *lists[2], size_t counts[2])
{
    bool own = false;
    for (size_t i = 0; i < x->n_attr && !own; i++)
        own = x->attr[i]->name && strcmp(x->attr[i]->name, "icsim_stream") == 0;
    lists[0] = x->data_deps;
    counts[0] = x->n_data_deps;
    lists[1] = x->ctrl_deps;
    counts[1] = x->n_ctrl_deps;
    return own ? 1 : 2;
}

static void heap_push(GArray *h, size_t v)
{
    g_array_append_val(h, v);
    size_t *a = (size_t *)(void *)h->data;
    for (size_t i = h->len - 1; i > 0 && a[(i - 1) / 2] > a[i]; i = (i - 1) / 2) {
        size_t t = a[i];
        a[i] = a[(i - 1) / 2];
        a[(i - 1) / 2] = t;
    }
}

static size_t heap_pop(GArray *h)
{
    size_t *a = (size_t *)(void *)h->data, top = a[0], n = h->len - 1;
    a[0] = a[n];
    g_array_set_size(h, (guint)n);
    for (size_t i = 0;;) {
        size_t l = 2 * i + 1, m = i;
        if (l < n && a[l] < a[m])
            m = l;
        if (l + 1 < n && a[l + 1] < a[m])
            m = l + 1;
        if (m == i)
            break;
        size_t t = a[i];
        a[i] = a[m];
        a[m] = t;
        i = m;
    }
    return top;
}

/* Some node left out of the order lies on or behind a cycle; walking from it to an unordered
 * dependency, again and again, must come back to a node already seen: the cycle. Reports it as
 * "id a -> b -> ... -> a" (data flows against the arrows: a depends on b). */
static bool report_cycle(reader *r, const char *file, node **nodes, size_t n, GHashTable *by_id,
                         const bool *placed)
{
    size_t i = 0;
    while (placed[i])
        i++;
    size_t *step = g_new(size_t, n + 1), *seen_at = g_new(size_t, n + 1), len = 0;
    for (size_t k = 0; k < n; k++)
        seen_at[k] = SIZE_MAX;
    while (seen_at[i] == SIZE_MAX) {
        seen_at[i] = len;
        step[len++] = i;
        const uint64_t *lists[2];
        size_t counts[2], next = SIZE_MAX;
        int kinds = dep_lists(nodes[i], lists, counts);
        for (int k = 0; k < kinds && next == SIZE_MAX; k++)
            for (size_t e = 0; e < counts[k] && next == SIZE_MAX; e++) {
                size_t j = GPOINTER_TO_SIZE(g_hash_table_lookup(by_id, &lists[k][e])) - 1;
                if (!placed[j])
                    next = j;
            }
        g_assert(next != SIZE_MAX); /* an unplaced node has an unplaced dependency */
        i = next;
    }
    GString *ids = g_string_new(NULL);
    size_t from = seen_at[i], shown = 0;
    for (size_t k = from; k < len && shown < 8; k++, shown++)
        g_string_append_printf(ids, "%" PRIu64 " -> ", nodes[step[k]]->id);
    g_string_append_printf(ids, "%s%" PRIu64, len - from > shown ? "... -> " : "", nodes[i]->id);
    node_fail(
        r, file, i, nodes[i],
        g_strdup_printf("expected dependencies without a cycle, got the cycle id %s", ids->str));
    g_string_free(ids, TRUE);
    g_free(step);
    g_free(seen_at);
    return false;
}

/* Dependencies first (Kahn's algorithm, ties in file order, so that a file already in
 * dependency order keeps it); false on a dangling dependency or a cycle. order: positions. */
static bool topo_order(reader *r, const char *file, node **nodes, size_t n, GHashTable *by_id,
                       size_t *order)
{
    size_t *indeg = g_new0(size_t, n + 1);
    GArray **succ = g_new0(GArray *, n + 1);
    bool ok = true;
    for (size_t i = 0; i < n && ok; i++) {
        const uint64_t *lists[2];
        size_t counts[2];
        int kinds = dep_lists(nodes[i], lists, counts);
        for (int k = 0; k < kinds && ok; k++)
            for (size_t e = 0; e < counts[k] && ok; e++) {
                gpointer p = g_hash_table_lookup(by_id, &lists[k][e]);
                if (!p) {
                    ok = node_fail(r, file, i, nodes[i],
                                   g_strdup_printf("%s: expected ids of nodes of the file, got "
                                                   "%" PRIu64,
                                                   k ? "ctrl_deps" : "data_deps", lists[k][e]));
                    break;
                }
                size_t from = GPOINTER_TO_SIZE(p) - 1;
                if (!succ[from])
                    succ[from] = g_array_new(FALSE, FALSE, sizeof(size_t));
                g_array_append_val(succ[from], i);
                indeg[i]++;
            }
    }
    GArray *heap = g_array_new(FALSE, FALSE, sizeof(size_t));
    bool *placed = g_new0(bool, n + 1);
    size_t done = 0;
    for (size_t i = 0; i < n && ok; i++)
        if (indeg[i] == 0)
            heap_push(heap, i);
    while (ok && heap->len > 0) {
        size_t i = heap_pop(heap);
        placed[i] = true;
        order[done++] = i;
        for (guint k = 0; succ[i] && k < succ[i]->len; k++) {
            size_t s = g_array_index(succ[i], size_t, k);
            if (--indeg[s] == 0)
                heap_push(heap, s);
        }
    }
    if (ok && done < n)
        ok = report_cycle(r, file, nodes, n, by_id, placed);
    g_free(placed);
    g_array_free(heap, TRUE);
    for (size_t i = 0; i < n; i++)
        if (succ[i])
            g_array_free(succ[i], TRUE);
    g_free(succ);
    g_free(indeg);
    return ok;
}

/* What a folded node stands for: per stream, the latest op it (transitively) depends on. The
 * latest suffices because a stream runs in order, so it holds at most one point per stream
 * however long the chain of folded nodes (PyTorch traces have chains of 10^5 CPU ops). */
typedef struct {
    int stream, op;
} reach_pt;

static void reach_add(GArray *a, reach_pt p)
{
    for (guint i = 0; i < a->len; i++) {
        reach_pt *q = &g_array_index(a, reach_pt, i);
        if (q->stream == p.stream) {
            q->op = MAX(q->op, p.op);
            return;
        }
    }
    g_array_append_val(a, p);
}

static int cmp_int(gconstpointer a, gconstpointer b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

static void unique_sorted(GArray *a)
{
    g_array_sort(a, cmp_int);
    guint w = 0;
    for (guint i = 0; i < a->len; i++)
        if (w == 0 || g_array_index(a, int, i) != g_array_index(a, int, w - 1))
            g_array_index(a, int, w++) = g_array_index(a, int, i);
    g_array_set_size(a, w);
}

/* The nodes of one rank, in dependency order, into pending ops. O(nodes x streams). */
static bool add_ops(reader *r, int rank, const char *file, node **nodes, size_t n)
{
    rank_rec *rr = &r->ranks[rank];
    GHashTable *by_id = g_hash_table_new(g_int64_hash, g_int64_equal);
    bool ok = true;
    for (size_t i = 0; i < n && ok; i++) {
        size_t other = GPOINTER_TO_SIZE(g_hash_table_lookup(by_id, &nodes[i]->id));
        if (other)
            ok = node_fail(
                r, file, i, nodes[i],
                g_strdup_printf("id: expected a unique id, got the one of node %zu", other - 1));
        g_hash_table_insert(by_id, &nodes[i]->id, GSIZE_TO_POINTER(i + 1));
    }
    size_t *order = g_new(size_t, n + 1);
    int *op_of = g_new(int, n + 1);
    GArray **reach = g_new0(GArray *, n + 1);
    GArray *deps = g_array_new(FALSE, FALSE, sizeof(int));
    ok = ok && topo_order(r, file, nodes, n, by_id, order);
    for (size_t k = 0; k < n && ok; k++) {
        size_t i = order[k];
        const node *x = nodes[i];
        char *why = NULL;
        int role = node_role(x, &why);
        pend p = {.file = file, .idx = i, .id = x->id};
        const char *stream = NULL;
        if (role < 0 || (role > 0 && !node_op(r, rank, x, &p, &stream, &why))) {
            ok = node_fail(r, file, i, x, why);
            break;
        }
        const uint64_t *lists[2];
        size_t counts[2];
        int kinds = dep_lists(x, lists, counts);
        if (role == 0)
            reach[i] = g_array_new(FALSE, FALSE, sizeof(reach_pt));
        g_array_set_size(deps, 0);
        for (int l = 0; l < kinds; l++)
            for (size_t e = 0; e < counts[l]; e++) {
                size_t j = GPOINTER_TO_SIZE(g_hash_table_lookup(by_id, &lists[l][e])) - 1;
                if (op_of[j] >= 0 && role == 0) {
                    int s = g_array_index(rr->ops, pend, op_of[j]).op.stream;
                    reach_add(reach[i], (reach_pt){s, op_of[j]});
                } else if (op_of[j] >= 0) {
                    g_array_append_val(deps, op_of[j]);
                }
                for (guint q = 0; op_of[j] < 0 && q < reach[j]->len; q++) {
                    reach_pt pt = g_array_index(reach[j], reach_pt, q);
                    if (role == 0)
                        reach_add(reach[i], pt);
                    else
                        g_array_append_val(deps, pt.op);
                }
            }
        op_of[i] = -1;
        if (role == 0)
            continue;
        unique_sorted(deps);
        p.op.stream = stream_of(r, rank, stream);
        p.dep0 = (int)rr->deps->len;
        p.ndeps = (int)deps->len;
        g_array_append_vals(rr->deps, deps->data, deps->len);
        g_array_append_val(rr->ops, p);
        op_of[i] = (int)rr->ops->len - 1;
        if (p.op.kind == ICS_TOP_COLL)
            use_group(r, rank, op_of[i]);
    }
    for (size_t i = 0; i < n; i++)
        if (reach[i])
            g_array_free(reach[i], TRUE);
    g_free(reach);
    g_array_free(deps, TRUE);
    g_free(op_of);
    g_free(order);
    g_hash_table_destroy(by_id);
    return ok;
}

/* Streams icsim wrote in the metadata ("icsim_streams", newline-separated), created in order;
 * without them stream 0 is "compute", the one the step-time breakdown follows. */
static bool meta_streams(reader *r, int rank, const char *file,
                         const ChakraProtoMsg__GlobalMetadata *m)
{
    for (size_t i = 0; i < m->n_attr; i++) {
        const attr *a = m->attr[i];
        if (!a->name || strcmp(a->name, "icsim_streams") != 0)
            continue;
        if (a->value_case != CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_STRING_VAL) {
            char *why = NULL;
            wrong(a, &why, "a string");
            fail(r, g_strdup_printf("%s: metadata: %s", file, why));
            g_free(why);
            return false;
        }
        char **names = g_strsplit(a->string_val ? a->string_val : "", "\n", -1);
        for (char **s = names; *s; s++)
            if (**s)
                stream_of(r, rank, *s);
        g_strfreev(names);
    }
    if (r->ranks[rank].streams->len == 0)
        stream_of(r, rank, "compute");
    return true;
}

static bool read_rank_data(reader *r, int rank, const char *file, const uint8_t *data, size_t len)
{
    GArray *fr = g_array_new(FALSE, FALSE, sizeof(size_t) * 2);
    GPtrArray *nodes = g_ptr_array_new();
    bool ok = frames(r, file, data, len, fr);
    if (ok && fr->len == 0)
        ok = fail(
            r, g_strdup_printf("%s: expected a GlobalMetadata message, got an empty file", file));
    for (guint i = 0; ok && i < fr->len; i++) {
        const size_t *f = &g_array_index(fr, size_t, 2 * i);
        if (i == 0) {
            ChakraProtoMsg__GlobalMetadata *m =
                chakra_proto_msg__global_metadata__unpack(NULL, f[1], data + f[0]);
            ok = m ? meta_streams(r, rank, file, m)
                   : fail(r, g_strdup_printf("%s: message 0: expected a GlobalMetadata, got "
                                             "bytes protobuf cannot decode as one",
                                             file));
            if (m)
                chakra_proto_msg__global_metadata__free_unpacked(m, NULL);
            continue;
        }
        node *x = chakra_proto_msg__node__unpack(NULL, f[1], data + f[0]);
        if (!x)
            ok = fail(r, g_strdup_printf("%s: message %u (byte %zu): expected a Node, got bytes "
                                         "protobuf cannot decode as one",
                                         file, i, f[0]));
        else
            g_ptr_array_add(nodes, x);
    }
    if (ok)
        ok = add_ops(r, rank, file, (node **)nodes->pdata, nodes->len);
    for (guint i = 0; i < nodes->len; i++)
        chakra_proto_msg__node__free_unpacked(g_ptr_array_index(nodes, i), NULL);
    g_ptr_array_free(nodes, TRUE);
    g_array_free(fr, TRUE);
    return ok;
}

/* ---- communicators and the trace ------------------------------------------------------------ */

static void free_ranks(gpointer a)
{
    g_array_free(a, TRUE);
}

/* ASTRA-sim's communicator-group file, {"name": [ranks...], ...}, with located errors. order:
 * the names in file order. */
static GHashTable *read_groups(const char *path, int nranks, GPtrArray *order, char **err)
{
    ics_jr *jr = ics_jr_new();
    const cJSON *root = ics_jr_load(jr, path);
    GHashTable *g = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, free_ranks);
    if (root && !cJSON_IsObject(root))
        ics_jr_fail(jr, root, NULL, "expected an object: group name -> array of ranks");
    if (root && ics_jr_ok(jr) && ics_jr_unique_keys(jr, root)) {
        const cJSON *c;
        cJSON_ArrayForEach(c, root)
        {
            GArray *ranks = g_array_new(FALSE, FALSE, sizeof(int));
            bool *seen = g_new0(bool, nranks);
            const cJSON *x;
            int i = 0;
            if (!cJSON_IsArray(c) || cJSON_GetArraySize(c) < 1)
                ics_jr_fail(jr, c, c->string, "expected a non-empty array of ranks");
            cJSON_ArrayForEach(x, c)
            {
                double v = cJSON_IsNumber(x) ? x->valuedouble : -1;
                if (!(v >= 0 && v < nranks) || v != (int)v || seen[(int)v]) {
                    size_t m = ics_jr_push_key(jr, c->string);
                    ics_jr_push_index(jr, i);
                    ics_jr_fail(jr, x, NULL, "expected a distinct rank 0..%d", nranks - 1);
                    ics_jr_pop(jr, m);
                    break;
                }
                seen[(int)v] = true;
                int rank = (int)v;
                g_array_append_val(ranks, rank);
                i++;
            }
            g_free(seen);
            g_hash_table_insert(g, g_strdup(c->string), ranks);
            g_ptr_array_add(order, g_strdup(c->string));
            if (!ics_jr_ok(jr))
                break;
        }
    }
    GError *ge = ics_jr_take_error(jr);
    ics_jr_free(jr);
    if (ge) {
        *err = g_strdup(ge->message);
        g_error_free(ge);
        g_hash_table_destroy(g);
        return NULL;
    }
    return g;
}

/* "FILE: node IDX (id ID): WHY" for a pending op; takes why. */
static bool pend_fail(reader *r, const pend *p, char *why)
{
    fail(r, g_strdup_printf("%s: node %zu (id %" PRIu64 "): %s", p->file, p->idx, p->id, why));
    g_free(why);
    return false;
}

static int add_comm(ics_trace *t, GPtrArray *members, const int *ranks, int n, const char *name)
{
    bool *m = g_new0(bool, ics_trace_nranks(t));
    for (int i = 0; i < n; i++)
        m[ranks[i]] = true;
    g_ptr_array_add(members, m);
    return ics_trace_add_comm(t, ranks, n, name);
}

/* The communicators: the groups file's, in its order (so that a written trace reads back the
 * same), then the groups nodes name that it lacks, in order of first use: all ranks for "" (no
 * pg_name, or "0": ASTRA-sim's default group), else an error with a groups file, else the ranks
 * that use the group. A group's name is its first pg_desc, or its key. members: per
 * communicator, a bool per rank (transfer: caller frees). */
static bool make_comms(reader *r, ics_trace *t, GHashTable *file_groups, GPtrArray *file_order,
                       const char *groups_path, GPtrArray *members)
{
    for (guint i = 0; file_groups && i < file_order->len; i++) {
        const char *key = g_ptr_array_index(file_order, i);
        GArray *ranks = g_hash_table_lookup(file_groups, key);
        group_rec *g = *key && strcmp(key, "0") != 0 ? g_hash_table_lookup(r->groups, key) : NULL;
        int c = add_comm(t, members, (const int *)(void *)ranks->data, (int)ranks->len,
                         g && g->desc ? g->desc : key);
        if (g)
            g->comm = c;
    }
    int *all = g_new(int, r->nranks), n;
    for (guint i = 0; i < r->group_order->len; i++) {
        const char *key = g_ptr_array_index(r->group_order, i);
        group_rec *g = g_hash_table_lookup(r->groups, key);
        if (g->comm >= 0)
            continue;
        const pend *p = &g_array_index(r->ranks[g->first_rank].ops, pend, g->first_op);
        if (*key && file_groups) {
            char *e = g_strescape(key, NULL);
            pend_fail(r, p,
                      g_strdup_printf("pg_name: expected a group of the communicator-groups file "
                                      "%s, got \"%s\"",
                                      groups_path, e));
            g_free(e);
            break;
        }
        n = 0;
        for (int k = 0; k < r->nranks; k++)
            if (!*key || g->uses[k])
                all[n++] = k;
        g->comm = add_comm(t, members, all, n, g->desc ? g->desc : *key ? key : "world");
    }
    g_free(all);
    return !r->err;
}

/* The trace from every rank's pending ops. Transfer full; NULL with r->err. */
static ics_trace *assemble(reader *r, GHashTable *file_groups, GPtrArray *file_order,
                           const char *groups_path)
{
    ics_trace *t = ics_trace_new(r->nranks);
    GPtrArray *members = g_ptr_array_new_with_free_func(g_free);
    bool ok = make_comms(r, t, file_groups, file_order, groups_path, members);
    for (int k = 0; k < r->nranks && ok; k++) {
        rank_rec *rr = &r->ranks[k];
        for (guint s = 0; s < rr->streams->len; s++)
            ics_trace_add_stream(t, k, g_ptr_array_index(rr->streams, s));
        for (guint i = 0; i < rr->ops->len && ok; i++) {
            pend *p = &g_array_index(rr->ops, pend, i);
            if (p->op.kind == ICS_TOP_COLL) {
                int c = ((group_rec *)g_hash_table_lookup(r->groups, p->pg))->comm, size;
                const int *ranks = ics_trace_comm_ranks(t, c, &size);
                p->op.comm = c;
                if (!((bool *)g_ptr_array_index(members, c))[k]) {
                    GString *list = g_string_new(NULL);
                    for (int m = 0; m < size && m < 16; m++)
                        g_string_append_printf(list, "%s%d", m ? ", " : "", ranks[m]);
                    char *e = g_strescape(p->pg, NULL);
                    ok = pend_fail(r, p,
                                   g_strdup_printf("pg_name \"%s\": expected a group that has "
                                                   "rank %d, got one of ranks %s%s",
                                                   e, k, list->str, size > 16 ? ", ..." : ""));
                    g_free(e);
                    g_string_free(list, TRUE);
                    break;
                }
                if (p->op.coll.root >= size) {
                    ok = pend_fail(r, p,
                                   g_strdup_printf("icsim_root: expected an index into the "
                                                   "communicator's %d ranks, got %d",
                                                   size, p->op.coll.root));
                    break;
                }
            }
            const int *deps = p->ndeps ? &g_array_index(rr->deps, int, p->dep0) : NULL;
            ics_trace_add_op(t, k, &p->op, deps, p->ndeps);
        }
    }
    g_ptr_array_free(members, TRUE);
    if (!ok) {
        ics_trace_free(t);
        return NULL;
    }
    return t;
}

/* Checks what replay relies on; the trace, or NULL with *err (transfer full). Takes r. */
static ics_trace *finish(reader *r, ics_trace *t, const char *name, char **err)
{
    char *why = NULL;
    if (t && !ics_trace_check(t, &why)) {
        fail(r, g_strdup_printf("%s: %s", name, why));
        ics_trace_free(t);
        t = NULL;
    }
    g_free(why);
    if (!t) {
        *err = r->err;
        r->err = NULL;
    }
    reader_free(r);
    return t;
}

/* "x/job.3.et" -> "x/job"; anything else is the prefix itself. */
static char *prefix_of(const char *path)
{
    size_t n = strlen(path);
    if (n > 3 && strcmp(path + n - 3, ".et") == 0) {
        size_t i = n - 3;
        while (i > 0 && g_ascii_isdigit(path[i - 1]))
            i--;
        if (i < n - 3 && i > 0 && path[i - 1] == '.')
            return g_strndup(path, i - 1);
    }
    return g_strdup(path);
}

ics_trace *ics_trace_read_chakra(const char *path, const char *comm_groups, char **err)
{
    *err = NULL;
    char *prefix = prefix_of(path);
    int nranks = 0;
    for (;; nranks++) {
        char *f = g_strdup_printf("%s.%d.et", prefix, nranks);
        bool there = g_file_test(f, G_FILE_TEST_IS_REGULAR);
        g_free(f);
        if (!there || nranks >= (1 << 20))
            break;
    }
    if (nranks == 0) {
        *err = g_strdup_printf("%s: expected a Chakra trace: files %s.0.et, %s.1.et, ... (or an "
                               "icsim JSON trace), found none",
                               path, prefix, prefix);
        g_free(prefix);
        return NULL;
    }
    reader *r = reader_new(nranks);
    char *gpath =
        comm_groups ? g_strdup(comm_groups) : g_strdup_printf("%s.comm_groups.json", prefix);
    GPtrArray *order = g_ptr_array_new_with_free_func(g_free);
    GHashTable *groups = NULL;
    if (comm_groups || g_file_test(gpath, G_FILE_TEST_IS_REGULAR))
        groups = read_groups(gpath, nranks, order, &r->err);
    for (int k = 0; k < nranks && !r->err; k++) {
        char *f = g_strdup_printf("%s.%d.et", prefix, k), *data = NULL;
        gsize len = 0;
        GError *ge = NULL;
        if (!g_file_get_contents(f, &data, &len, &ge)) {
            fail(r, g_strdup_printf("%s: cannot read: %s", f, ge->message));
            g_error_free(ge);
        } else {
            read_rank_data(r, k, intern(r, f), (const uint8_t *)data, len);
        }
        g_free(data);
        g_free(f);
    }
    ics_trace *t = r->err ? NULL : assemble(r, groups, order, gpath);
    t = finish(r, t, prefix, err);
    if (groups)
        g_hash_table_destroy(groups);
    g_ptr_array_free(order, TRUE);
    g_free(gpath);
    g_free(prefix);
    return t;
}

ics_trace *ics_trace_read_chakra_mem(const char *name, int nranks, const uint8_t *const *data,
                                     const size_t *len, char **err)
{
    *err = NULL;
    reader *r = reader_new(nranks);
    for (int k = 0; k < nranks && !r->err; k++)
        read_rank_data(r, k, name, data[k], len[k]);
    ics_trace *t = r->err ? NULL : assemble(r, NULL, NULL, NULL);
    return finish(r, t, name, err);
}
