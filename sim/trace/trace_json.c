/* The JSON trace reader (trace.h: ics_trace_read_json): cJSON parses, every value is checked as it
 * is read, then what ranks issue to each other is matched (trace_json_match.c); a read that fails
 * is done again through the located reader (json.h) for the message. Invariant: a returned trace
 * passes ics_trace_check. */
#include "trace/trace.h"
#include "trace/trace_json_internal.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <glib/gstdio.h>

#define MAX_RANKS (1 << 20)
#define MAX_US    1e12 /* eleven and a half days; in picoseconds still far inside int64 */
#define MAX_FLOPS 1e24

const char *const ics_trace_json__math_dtypes[] = {"fp64", "fp32", "tf32", "fp16",
                                                   "bf16", "fp8",  "fp4",  NULL};
G_STATIC_ASSERT(G_N_ELEMENTS(ics_trace_json__math_dtypes) == ICS_DTYPE_COUNT + 1);
const char *const ics_trace_json__works[] = {"gemm", "attention", "elementwise", NULL};
G_STATIC_ASSERT(G_N_ELEMENTS(ics_trace_json__works) == ICS_WORK_KIND_COUNT + 1);
const char *const ics_trace_json__cats[] = {"compute", "tp", "pp", "dp", "ep", "cp", "other", NULL};
G_STATIC_ASSERT(G_N_ELEMENTS(ics_trace_json__cats) == ICS_CAT_COUNT + 1);
const char *const ics_trace_json__coll_dtypes[] = {"fp64", "fp32",  "fp16",  "bf16", "fp8",
                                                   "int8", "int32", "int64", NULL};
const int ics_trace_json__coll_dtype_bytes[] = {8, 4, 2, 2, 1, 1, 4, 8};
#define COLL_DTYPE_FP32 1 /* the default */

const char *ics_trace_json__coll_dtype_for(int bytes)
{
    switch (bytes) {
    case 8:
        return "fp64";
    case 4:
        return "fp32";
    case 2:
        return "bf16";
    case 1:
        return "fp8";
    default:
        return NULL;
    }
}

/* "op" values: compute, the collectives by nccl-tests' names, send, recv */
static const char *const kinds[] = {"compute",  "all_reduce", "all_gather", "reduce_scatter",
                                    "alltoall", "broadcast",  "reduce",     "send",
                                    "recv",     NULL};
static const ics_coll_op kind_coll[] = {0,
                                        ICS_COLL_ALL_REDUCE,
                                        ICS_COLL_ALL_GATHER,
                                        ICS_COLL_REDUCE_SCATTER,
                                        ICS_COLL_ALLTOALL,
                                        ICS_COLL_BROADCAST,
                                        ICS_COLL_REDUCE};
enum { KIND_COMPUTE = 0, KIND_BROADCAST = 5, KIND_REDUCE = 6, KIND_SEND = 7, KIND_RECV = 8 };

/* The keys each kind of op takes (docs/trace-format.md has one table per list). */
#define COMMON_KEYS "id", "op", "stream", "deps", "category", "name", "launches", "host_sync"
static const char *const compute_keys[] = {COMMON_KEYS, "duration_us", "flops", "bytes", "dtype",
                                           "work",      "m",           "n",     "k",     NULL};
static const char *const coll_keys[] = {COMMON_KEYS, "comm", "bytes", "dtype", NULL};
static const char *const alltoall_keys[] = {COMMON_KEYS, "comm", "bytes", "dtype",
                                            "splits",    "sms",  NULL};
static const char *const rooted_keys[] = {COMMON_KEYS, "comm", "bytes", "dtype", "root", NULL};
static const char *const p2p_keys[] = {COMMON_KEYS, "peer", "bytes", "tag", NULL};
/* Keys that belong to other kinds of op: a clearer message than "unknown key". */
static const struct {
    const char *key, *owners;
} owned_keys[] = {
    {"duration_us", "compute ops"},
    {"flops", "compute ops"},
    {"work", "compute ops"},
    {"m", "compute ops"},
    {"n", "compute ops"},
    {"k", "compute ops"},
    {"dtype", "compute ops and collectives"},
    {"comm", "collectives"},
    {"root", "broadcast and reduce"},
    {"splits", "alltoall ops"},
    {"sms", "alltoall ops"},
    {"peer", "send and recv ops"},
};

typedef struct {
    ics_jr *jr;
    ics_trace *t;
    int nranks;
    GHashTable *comms;  /* name (in the tree) -> index + 1 */
    GPtrArray *members; /* per communicator: its ranks, sorted (int *) */
    GArray *splits;     /* the op being read: its all-to-allv splits (uint64_t) */
} reader;

typedef struct {
    int rank;
    GHashTable *streams; /* name (in the tree) -> index + 1 */
    GHashTable *ids;     /* op id (in the tree) -> op index + 1 */
    GArray *stamp;       /* per op: 1 + the last op whose deps named it (duplicate deps) */
} rank_ctx;

static const cJSON *item(const cJSON *o, const char *key)
{
    return cJSON_GetObjectItemCaseSensitive(o, key);
}

/* "expected <what>, got <v>" located at v, the member `key` of the current path's value (v
 * NULL: at `parent`, "got nothing"). */
static void fail_got(reader *r, const cJSON *parent, const char *key, const cJSON *v,
                     const char *what)
{
    char *got = !v                              ? g_strdup("nothing (the key is missing)")
                : cJSON_IsArray(v) && !v->child ? g_strdup("[]")
                                                : ics_json_describe(v);
    ics_jr_fail(r->jr, v ? v : parent, key, "expected %s, got %s", what, got);
    g_free(got);
}

static bool is_int(const cJSON *v, double lo, double hi)
{
    return cJSON_IsNumber(v) && v->valuedouble >= lo && v->valuedouble <= hi &&
           v->valuedouble == floor(v->valuedouble);
}

/* The ics_jr_* getters format their "expected ..." text on every call, and a trace holds
 * millions of values: these check first and call the getter only to report a bad value (the
 * same message). Same contract as the getters, ics_jr_ok() included. */
static bool get_int(reader *r, const cJSON *o, const char *key, bool required, int64_t lo,
                    int64_t hi, int64_t *out)
{
    const cJSON *v = item(o, key);
    if (!ics_jr_ok(r->jr) || (v ? !is_int(v, (double)lo, (double)hi) : required))
        return ics_jr_int(r->jr, o, key, required, lo, hi, out);
    if (v)
        *out = (int64_t)v->valuedouble;
    return v != NULL;
}

static bool get_num(reader *r, const cJSON *o, const char *key, bool required, double lo, double hi,
                    double *out)
{
    const cJSON *v = item(o, key);
    if (!ics_jr_ok(r->jr) ||
        (v ? !(cJSON_IsNumber(v) && v->valuedouble >= lo && v->valuedouble <= hi) : required))
        return ics_jr_num(r->jr, o, key, required, lo, hi, out);
    if (v)
        *out = v->valuedouble;
    return v != NULL;
}

static bool get_str(reader *r, const cJSON *o, const char *key, bool required, const char **out)
{
    const cJSON *v = item(o, key);
    if (!ics_jr_ok(r->jr) || (v ? !cJSON_IsString(v) || !*v->valuestring : required))
        return ics_jr_str(r->jr, o, key, required, out);
    if (v)
        *out = v->valuestring;
    return v != NULL;
}

static bool get_enum(reader *r, const cJSON *o, const char *key, bool required,
                     const char *const *names, int *out)
{
    const cJSON *v = item(o, key);
    for (int i = 0; v && cJSON_IsString(v) && names[i] && ics_jr_ok(r->jr); i++)
        if (strcmp(names[i], v->valuestring) == 0) {
            *out = i;
            return true;
        }
    if (v || required)
        return ics_jr_enum(r->jr, o, key, required, names, out);
    return false;
}

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

/* ---- communicators -------------------------------------------------------------------------- */

static void read_comm(reader *r, const cJSON *c)
{
    if (!*c->string) {
        ics_jr_fail(r->jr, c, NULL, "expected non-empty communicator names, got \"\"");
        return;
    }
    int n = cJSON_IsArray(c) ? cJSON_GetArraySize(c) : 0;
    size_t mark = ics_jr_push_key(r->jr, c->string);
    if (n < 1) {
        fail_got(r, c, NULL, c, "a non-empty array of ranks");
        ics_jr_pop(r->jr, mark);
        return;
    }
    int *ranks = g_new(int, n), i = 0;
    GHashTable *seen = g_hash_table_new(NULL, NULL);
    const cJSON *x;
    cJSON_ArrayForEach(x, c)
    {
        bool ok = is_int(x, 0, r->nranks - 1);
        if (!ok || !g_hash_table_add(seen, GINT_TO_POINTER(x->valueint + 1))) {
            char *what = g_strdup_printf("a distinct rank 0..%d", r->nranks - 1);
            ics_jr_push_index(r->jr, i);
            fail_got(r, c, NULL, x, what);
            g_free(what);
            break;
        }
        ranks[i++] = x->valueint;
    }
    ics_jr_pop(r->jr, mark);
    if (ics_jr_ok(r->jr)) {
        int id = ics_trace_add_comm(r->t, ranks, n, c->string);
        g_hash_table_insert(r->comms, c->string, GINT_TO_POINTER(id + 1));
        qsort(ranks, n, sizeof *ranks, cmp_int);
        g_ptr_array_add(r->members, ranks);
    } else {
        g_free(ranks);
    }
    g_hash_table_destroy(seen);
}

static void read_comms(reader *r, const cJSON *root)
{
    const cJSON *cs = ics_jr_obj(r->jr, root, "communicators", false);
    size_t mark = ics_jr_push_key(r->jr, "communicators");
    if (cs && ics_jr_unique_keys(r->jr, cs)) {
        const cJSON *c;
        cJSON_ArrayForEach(c, cs)
        {
            if (!ics_jr_ok(r->jr))
                break;
            read_comm(r, c);
        }
    }
    ics_jr_pop(r->jr, mark);
}

static bool is_member(const reader *r, int comm, int rank)
{
    int n;
    ics_trace_comm_ranks(r->t, comm, &n);
    return bsearch(&rank, g_ptr_array_index(r->members, comm), n, sizeof(int), cmp_int) != NULL;
}

/* ---- the parts of an op --------------------------------------------------------------------- */

/* Keys this kind of op does not take: named with the ops that do, or as unknown. */
static bool key_error(reader *r, const cJSON *o, int kind, const char *const *allowed)
{
    for (const cJSON *m = o->child; m; m = m->next) {
        bool ok = false;
        for (const char *const *a = allowed; *a && !ok; a++)
            ok = strcmp(*a, m->string) == 0;
        for (size_t i = 0; i < G_N_ELEMENTS(owned_keys) && !ok; i++)
            if (strcmp(owned_keys[i].key, m->string) == 0) {
                char *what = g_strdup_printf("no \"%s\" on %s ops (only %s take it)", m->string,
                                             kinds[kind], owned_keys[i].owners);
                fail_got(r, o, m->string, m, what);
                g_free(what);
                return false;
            }
    }
    return ics_jr_keys(r->jr, o, allowed); /* unknown or repeated keys */
}

/* Every key of op o is one its kind takes, once. One pass with a bit per allowed key: a trace
 * has millions of ops; the message comes from key_error. */
static bool check_keys(reader *r, const cJSON *o, int kind)
{
    const char *const *allowed = kind == KIND_COMPUTE                            ? compute_keys
                                 : kind == KIND_SEND || kind == KIND_RECV        ? p2p_keys
                                 : kind == KIND_BROADCAST || kind == KIND_REDUCE ? rooted_keys
                                 : kind_coll[kind] == ICS_COLL_ALLTOALL          ? alltoall_keys
                                                                                 : coll_keys;
    uint32_t seen = 0;
    for (const cJSON *m = o->child; m; m = m->next) {
        int a = 0;
        while (allowed[a] && strcmp(allowed[a], m->string) != 0)
            a++;
        if (!allowed[a] || seen & (UINT32_C(1) << a))
            return key_error(r, o, kind, allowed);
        seen |= UINT32_C(1) << a;
    }
    return true;
}

static void read_compute(reader *r, const cJSON *o, ics_trace_op *op)
{
    double us = 0;
    int64_t bytes = 0, mnk[3] = {0, 0, 0};
    bool timed = get_num(r, o, "duration_us", false, 0, MAX_US, &us);
    const cJSON *fl = item(o, "flops"), *by = item(o, "bytes");
    if (ics_jr_ok(r->jr) && !fl != !by)
        ics_jr_fail(r->jr, o, NULL,
                    "expected both \"flops\" and \"bytes\" or neither, got only \"%s\"",
                    fl ? "flops" : "bytes");
    else if (ics_jr_ok(r->jr) && !timed && !fl)
        ics_jr_fail(r->jr, o, NULL,
                    "expected \"duration_us\", or \"flops\" and \"bytes\", got neither");
    get_num(r, o, "flops", false, 0, MAX_FLOPS, &op->flops);
    if (get_int(r, o, "bytes", false, 0, ICS_TRACE_JSON_SIZE_LIMIT - 1, &bytes))
        op->mem_bytes = (double)bytes;
    /* 0 in the model means "from the work": a zero duration is kept as the shortest one */
    op->duration_ps = timed ? MAX((ics_time)llround(us * (double)ICS_PS_PER_US), 1) : 0;
    int e;
    op->dtype = ICS_DTYPE_BF16;
    op->work = ICS_WORK_GEMM;
    if (get_enum(r, o, "dtype", false, ics_trace_json__math_dtypes, &e))
        op->dtype = (ics_dtype)e;
    if (get_enum(r, o, "work", false, ics_trace_json__works, &e))
        op->work = (ics_work_kind)e;
    static const char *const dims[] = {"m", "n", "k"};
    int given = 0;
    for (int d = 0; d < 3; d++)
        given += get_int(r, o, dims[d], false, 1, INT32_MAX, &mnk[d]);
    if (given > 0 && given < 3)
        ics_jr_fail(r->jr, o, NULL, "expected \"m\", \"n\" and \"k\" together, got %d of them",
                    given);
    op->m = (int)mnk[0];
    op->n = (int)mnk[1];
    op->k = (int)mnk[2];
}

/* An all-to-allv's "splits": n byte counts (whole elements of esize bytes) this rank sends to
 * each communicator rank, into r->splits; returns their sum, or -1 on bad input. */
static int64_t read_splits(reader *r, const cJSON *o, int n, int esize, const char *dtype)
{
    const cJSON *a = item(o, "splits");
    g_array_set_size(r->splits, 0);
    if (!cJSON_IsArray(a) || cJSON_GetArraySize(a) != n) {
        char *what = g_strdup_printf("an array of %d byte counts, one per communicator rank", n);
        fail_got(r, o, "splits", a, what);
        g_free(what);
        return -1;
    }
    int64_t sum = 0;
    size_t mark = ics_jr_push_key(r->jr, "splits");
    int i = 0;
    for (const cJSON *v = a->child; v && ics_jr_ok(r->jr); v = v->next, i++) {
        uint64_t b = 0;
        if (!is_int(v, 0, (double)(ICS_TRACE_JSON_SIZE_LIMIT - 1)) ||
            (b = (uint64_t)v->valuedouble) % (uint64_t)esize != 0 ||
            sum + (int64_t)b >= ICS_TRACE_JSON_SIZE_LIMIT) {
            char *what = g_strdup_printf("whole %s elements (a multiple of %d bytes), all of "
                                         "them below 2^50 bytes together",
                                         dtype, esize);
            ics_jr_push_index(r->jr, i);
            fail_got(r, a, NULL, v, what);
            g_free(what);
            break;
        }
        g_array_append_val(r->splits, b);
        sum += (int64_t)b;
    }
    ics_jr_pop(r->jr, mark);
    if (ics_jr_ok(r->jr) && sum == 0)
        fail_got(r, o, "splits", a, "at least one byte to send");
    return ics_jr_ok(r->jr) ? sum : -1;
}

static void read_coll(reader *r, const cJSON *o, int rank, int kind, ics_trace_op *op)
{
    const char *name = NULL;
    if (!get_str(r, o, "comm", true, &name))
        return;
    int id = GPOINTER_TO_INT(g_hash_table_lookup(r->comms, name)) - 1;
    if (id < 0) {
        fail_got(r, o, "comm", item(o, "comm"), "a communicator of $.communicators");
        return;
    }
    if (!is_member(r, id, rank)) {
        char *what = g_strdup_printf("a communicator rank %d belongs to", rank);
        fail_got(r, o, "comm", item(o, "comm"), what);
        g_free(what);
        return;
    }
    int e = COLL_DTYPE_FP32, n;
    int64_t bytes = 0, root = 0, sms = 0;
    ics_trace_comm_ranks(r->t, id, &n);
    get_enum(r, o, "dtype", false, ics_trace_json__coll_dtypes, &e);
    int esize = ics_trace_json__coll_dtype_bytes[e];
    /* nccl-tests' size: whole elements; for the split operations the whole buffer, n shares */
    bool split = kind_coll[kind] == ICS_COLL_ALL_GATHER ||
                 kind_coll[kind] == ICS_COLL_REDUCE_SCATTER || kind_coll[kind] == ICS_COLL_ALLTOALL;
    int64_t unit = (int64_t)esize * (split ? n : 1);
    if (item(o, "splits")) { /* all-to-allv: "bytes", if given, is the splits' sum */
        int64_t sum = read_splits(r, o, n, esize, ics_trace_json__coll_dtypes[e]);
        if (sum >= 0 && get_int(r, o, "bytes", false, 1, ICS_TRACE_JSON_SIZE_LIMIT - 1, &bytes) &&
            bytes != sum) {
            char *what = g_strdup_printf("%" PRId64 " (the sum of \"splits\") or nothing", sum);
            fail_got(r, o, "bytes", item(o, "bytes"), what);
            g_free(what);
        }
        bytes = sum;
        op->splits = (const uint64_t *)(void *)r->splits->data;
    } else if (get_int(r, o, "bytes", true, 1, ICS_TRACE_JSON_SIZE_LIMIT - 1, &bytes) &&
               bytes % unit != 0) {
        char *what = split ? g_strdup_printf("a multiple of %" PRId64 " bytes (the whole buffer: "
                                             "%d ranks x whole %s elements)",
                                             unit, n, ics_trace_json__coll_dtypes[e])
                           : g_strdup_printf("a multiple of %d bytes (whole %s elements)", esize,
                                             ics_trace_json__coll_dtypes[e]);
        fail_got(r, o, "bytes", item(o, "bytes"), what);
        g_free(what);
    }
    if (kind == KIND_BROADCAST || kind == KIND_REDUCE)
        get_int(r, o, "root", false, 0, n - 1, &root);
    if (kind_coll[kind] == ICS_COLL_ALLTOALL) /* a dispatcher's own kernel on this many SMs */
        get_int(r, o, "sms", false, 0, ICS_TRACE_JSON_MAX_SMS, &sms);
    op->comm = id;
    op->coll = (ics_coll_req){.op = kind_coll[kind],
                              .size_bytes = (uint64_t)bytes,
                              .dtype_bytes = esize,
                              .root = (int)root,
                              .sms = (int)sms};
}

static void read_p2p(reader *r, const cJSON *o, int rank, ics_trace_op *op)
{
    const cJSON *p = item(o, "peer");
    if (!is_int(p, 0, r->nranks - 1) || p->valueint == rank) {
        char *what = is_int(p, 0, r->nranks - 1)
                         ? g_strdup_printf("a rank other than this one (%d)", rank)
                         : g_strdup_printf("a rank 0..%d", r->nranks - 1);
        fail_got(r, o, "peer", p, what);
        g_free(what);
        return;
    }
    int64_t bytes = 0;
    get_int(r, o, "bytes", true, 1, ICS_TRACE_JSON_SIZE_LIMIT - 1, &bytes);
    op->peer = p->valueint;
    op->bytes = (uint64_t)bytes;
    int64_t tag = 0;
    get_int(r, o, "tag", false, 0, ICS_TRACE_MAX_TAG, &tag);
    op->tag = (int)tag;
}

/* The op's deps as indices of earlier ops of the rank (transfer full; NULL when none). `self`:
 * the index the op will have. */
static int *read_deps(reader *r, const cJSON *o, rank_ctx *rc, int self, int *nd)
{
    const cJSON *deps = ics_jr_arr(r->jr, o, "deps", false);
    *nd = 0;
    if (!deps || !deps->child)
        return NULL;
    int *out = g_new(int, cJSON_GetArraySize(deps));
    size_t mark = ics_jr_push_key(r->jr, "deps");
    const cJSON *d;
    cJSON_ArrayForEach(d, deps)
    {
        int idx = cJSON_IsString(d)
                      ? GPOINTER_TO_INT(g_hash_table_lookup(rc->ids, d->valuestring)) - 1
                      : -1;
        int *stamp = idx >= 0 ? &g_array_index(rc->stamp, int, idx) : NULL;
        if (idx < 0 || *stamp == self + 1) {
            char *got = ics_json_describe(d);
            ics_jr_push_index(r->jr, *nd);
            if (idx < 0)
                ics_jr_fail(r->jr, d, NULL, "expected the id of an earlier op of rank %d, got %s",
                            rc->rank, got);
            else
                ics_jr_fail(r->jr, d, NULL, "expected each id once, got %s again", got);
            g_free(got);
            break;
        }
        *stamp = self + 1;
        out[(*nd)++] = idx;
    }
    ics_jr_pop(r->jr, mark);
    return out;
}

/* ---- ops and ranks -------------------------------------------------------------------------- */

/* What the host does for an op (trace.h): the kernels it launches, whether it syncs first. */
static void read_host(reader *r, const cJSON *o, ics_trace_op *op)
{
    int64_t launches = 0;
    bool sync = false;
    if (get_int(r, o, "launches", false, 0, ICS_TRACE_MAX_LAUNCHES, &launches))
        op->launches = (int)launches;
    if (item(o, "host_sync") && ics_jr_bool(r->jr, o, "host_sync", false, &sync))
        op->host_sync = sync;
}

static void read_op(reader *r, const cJSON *o, rank_ctx *rc)
{
    int kind;
    if (!cJSON_IsObject(o)) {
        fail_got(r, o, NULL, o, "an op (an object)");
        return;
    }
    if (!get_enum(r, o, "op", true, kinds, &kind) || !check_keys(r, o, kind))
        return;
    ics_trace_op op = {.cat = kind == KIND_COMPUTE ? ICS_CAT_COMPUTE : ICS_CAT_OTHER};
    op.kind = kind == KIND_COMPUTE ? ICS_TOP_COMPUTE
              : kind == KIND_SEND  ? ICS_TOP_SEND
              : kind == KIND_RECV  ? ICS_TOP_RECV
                                   : ICS_TOP_COLL;
    const char *stream = NULL, *id = NULL;
    if (get_str(r, o, "stream", false, &stream)) {
        op.stream = GPOINTER_TO_INT(g_hash_table_lookup(rc->streams, stream)) - 1;
        if (op.stream < 0)
            fail_got(r, o, "stream", item(o, "stream"), "one of the rank's streams");
    }
    int e;
    if (get_enum(r, o, "category", false, ics_trace_json__cats, &e))
        op.cat = (ics_trace_cat)e;
    get_str(r, o, "name", false, &op.name);
    read_host(r, o, &op);
    if (op.kind == ICS_TOP_COMPUTE)
        read_compute(r, o, &op);
    else if (op.kind == ICS_TOP_COLL)
        read_coll(r, o, rc->rank, kind, &op);
    else
        read_p2p(r, o, rc->rank, &op);
    int self = ics_trace_nops(r->t, rc->rank), nd = 0;
    int *deps = ics_jr_ok(r->jr) ? read_deps(r, o, rc, self, &nd) : NULL;
    if (get_str(r, o, "id", false, &id) && g_hash_table_contains(rc->ids, id)) {
        char *what = g_strdup_printf("an id not used before on rank %d", rc->rank);
        fail_got(r, o, "id", item(o, "id"), what);
        g_free(what);
    }
    if (ics_jr_ok(r->jr)) {
        ics_trace_add_op(r->t, rc->rank, &op, deps, nd);
        g_array_append_val(rc->stamp, (int){0});
        if (id)
            g_hash_table_insert(rc->ids, (gpointer)id, GINT_TO_POINTER(self + 1));
    }
    g_free(deps);
}

static void read_streams(reader *r, const cJSON *o, rank_ctx *rc)
{
    const cJSON *ss = ics_jr_arr(r->jr, o, "streams", false);
    if (!ss && ics_jr_ok(r->jr)) {
        ics_trace_add_stream(r->t, rc->rank, "compute");
        return;
    }
    if (ss && !ss->child)
        fail_got(r, o, "streams", ss, "a non-empty array of stream names");
    size_t mark = ics_jr_push_key(r->jr, "streams");
    int i = 0;
    const cJSON *s;
    cJSON_ArrayForEach(s, ss)
    {
        if (!ics_jr_ok(r->jr))
            break;
        bool named = cJSON_IsString(s) && *s->valuestring;
        if (!named || g_hash_table_contains(rc->streams, s->valuestring)) {
            ics_jr_push_index(r->jr, i);
            fail_got(r, ss, NULL, s, named ? "a distinct stream name" : "a stream name");
            break;
        }
        int idx = ics_trace_add_stream(r->t, rc->rank, s->valuestring);
        g_hash_table_insert(rc->streams, s->valuestring, GINT_TO_POINTER(idx + 1));
        i++;
    }
    ics_jr_pop(r->jr, mark);
}

static void read_rank(reader *r, const cJSON *o, int rank)
{
    static const char *const keys[] = {"streams", "ops", NULL};
    if (!ics_jr_keys(r->jr, o, keys))
        return;
    rank_ctx rc = {.rank = rank,
                   .streams = g_hash_table_new(g_str_hash, g_str_equal),
                   .ids = g_hash_table_new(g_str_hash, g_str_equal),
                   .stamp = g_array_new(FALSE, FALSE, sizeof(int))};
    read_streams(r, o, &rc);
    const cJSON *ops = ics_jr_arr(r->jr, o, "ops", false);
    size_t mark = ics_jr_push_key(r->jr, "ops");
    int i = 0;
    const cJSON *op;
    cJSON_ArrayForEach(op, ops)
    {
        if (!ics_jr_ok(r->jr))
            break;
        size_t m2 = ics_jr_push_index(r->jr, i++);
        read_op(r, op, &rc);
        ics_jr_pop(r->jr, m2);
    }
    ics_jr_pop(r->jr, mark);
    g_hash_table_destroy(rc.streams);
    g_hash_table_destroy(rc.ids);
    g_array_free(rc.stamp, TRUE);
}

/* ---- the document --------------------------------------------------------------------------- */

/* The "ranks" array, once the header is right; NULL (and the error) otherwise. */
static const cJSON *read_header(reader *r, const cJSON *root)
{
    static const char *const keys[] = {"format",        "version", "comment",
                                       "communicators", "ranks",   NULL};
    static const char *const formats[] = {"icsim-trace", NULL};
    int e;
    int64_t version;
    const char *comment;
    if (!ics_jr_keys(r->jr, root, keys) || !ics_jr_enum(r->jr, root, "format", true, formats, &e) ||
        !ics_jr_int(r->jr, root, "version", true, 1, 1, &version))
        return NULL;
    ics_jr_str(r->jr, root, "comment", false, &comment);
    const cJSON *ranks = ics_jr_arr(r->jr, root, "ranks", true);
    int n = ranks ? cJSON_GetArraySize(ranks) : 0;
    if (ranks && (n < 1 || n > MAX_RANKS))
        ics_jr_fail(r->jr, ranks, "ranks", "expected 1 to %d ranks, got %d", MAX_RANKS, n);
    return ics_jr_ok(r->jr) ? ranks : NULL;
}

static ics_trace *read_root(reader *r, const cJSON *root)
{
    const cJSON *ranks = read_header(r, root);
    if (!ranks)
        return NULL;
    r->nranks = cJSON_GetArraySize(ranks);
    r->t = ics_trace_new(r->nranks);
    read_comms(r, root);
    size_t mark = ics_jr_push_key(r->jr, "ranks");
    int i = 0;
    const cJSON *rk;
    cJSON_ArrayForEach(rk, ranks)
    {
        if (!ics_jr_ok(r->jr))
            break;
        size_t m2 = ics_jr_push_index(r->jr, i);
        read_rank(r, rk, i++);
        ics_jr_pop(r->jr, m2);
    }
    ics_jr_pop(r->jr, mark);
    if (ics_jr_ok(r->jr))
        ics_trace_json__match(r->jr, ranks, r->t);
    return r->t;
}

/* The trace in the loaded document `root` (NULL: loading failed), or NULL and sets *error. */
static ics_trace *read_doc(ics_jr *jr, const cJSON *root, const char *name, GError **error)
{
    reader r = {.jr = jr,
                .comms = g_hash_table_new(g_str_hash, g_str_equal),
                .members = g_ptr_array_new_with_free_func(g_free),
                .splits = g_array_new(FALSE, FALSE, sizeof(uint64_t))};
    ics_trace *t = root ? read_root(&r, root) : NULL;
    GError *ge = ics_jr_take_error(jr), *why = NULL;
    bool ok = false;
    if (ge) {
        g_propagate_error(error, ge);
    } else if (!t) {
        /* loaders always say why */
        g_set_error(error, ICS_ERROR, ICS_ERROR_INPUT, "%s: cannot be read", name);
    } else if (!ics_trace_check(t, &why)) {
        /* the matcher checks all of this first; reaching here is a bug in it, still reported
         * as bad input rather than replayed */
        g_prefix_error(&why, "%s: ", name);
        g_propagate_error(error, why);
    } else {
        ok = true;
    }
    if (!ok) {
        ics_trace_free(t);
        t = NULL;
    }
    g_hash_table_destroy(r.comms);
    g_ptr_array_free(r.members, TRUE);
    g_array_free(r.splits, TRUE);
    return t;
}

/* What reading costs, per byte of text (the text and cJSON's copies of its strings), per value
 * (a cJSON node and its key) and per object (an op in the trace and the reader's state):
 * measured on 800,000-op traces of three shapes (compact compute ops, named ops with deps,
 * collectives), the estimate is 1.2 to 1.5 times the peak resident size, and covers the second,
 * located pass of a bad file. docs/limits.md. */
#define READ_BYTES_PER_TEXT_BYTE 2
#define READ_BYTES_PER_VALUE     112
#define READ_BYTES_PER_OBJECT    256

/* The memory budget (core/budget.h) against what reading `text` will take, counted before
 * parsing: every value follows a ':', a ',' or a '[' (strings' own count too: an estimate
 * aims high). */
static bool check_budget(const char *name, const char *text, size_t len, GError **error)
{
    uint64_t values = 1, objects = 0;
    for (size_t i = 0; i < len; i++) {
        char c = text[i];
        values += c == ':' || c == ',' || c == '[';
        objects += c == '{';
    }
    uint64_t bytes = ics_budget_mul_add(
        len, READ_BYTES_PER_TEXT_BYTE,
        ics_budget_mul_add(values, READ_BYTES_PER_VALUE,
                           ics_budget_mul_add(objects, READ_BYTES_PER_OBJECT, 0)));
    char *what =
        g_strdup_printf("%s: %zu bytes of JSON, %" PRIu64 " values, %" PRIu64 " objects to read",
                        name, len, values, objects);
    bool ok = ics_budget_check(bytes, what, error);
    g_free(what);
    return ok;
}

/* Reads `text` (len bytes; text[len] is NUL when `terminated`) in two passes at most: locating
 * every value (json.h) costs twice what parsing does and a valid trace never needs a location,
 * so the first pass parses with cJSON alone, and only a read that fails is done again through
 * the located reader, for the message. Both passes read the same tree, so they fail alike. */
static ics_trace *read_text(const char *name, const char *text, size_t len, bool terminated,
                            GError **error)
{
    if (!check_budget(name, text, len, error))
        return NULL;
    char *copy = terminated ? NULL : g_strndup(text, len);
    const char *z = terminated ? text : copy;
    /* as json.h parses: nothing after the value, no NUL inside, UTF-8 throughout */
    cJSON *root =
        ics_json_text_ok(z, len) ? cJSON_ParseWithLengthOpts(z, len + 1, NULL, true) : NULL;
    g_free(copy);
    if (root) {
        ics_jr *jr = ics_jr_new();
        ics_jr_adopt(jr, root);
        ics_trace *t = read_doc(jr, root, name, NULL); /* the second pass says why */
        ics_jr_free(jr);
        if (t)
            return t;
    }
    ics_jr *jr = ics_jr_new();
    ics_trace *t = read_doc(jr, ics_jr_load_text(jr, name, text, len), name, error);
    ics_jr_free(jr);
    return t;
}

/* The least reading a file of `size` bytes can take (its text, twice), before reading it. */
static bool budget_before_reading(const char *path, uint64_t size, GError **error)
{
    char *what = g_strdup_printf("%s: %" PRIu64 " bytes of JSON to read", path, size);
    bool ok = ics_budget_check(ics_budget_mul_add(size, READ_BYTES_PER_TEXT_BYTE, 0), what, error);
    g_free(what);
    return ok;
}

ics_trace *ics_trace_read_json(const char *path, GError **error)
{
    GStatBuf st;
    char *text = NULL;
    gsize len = 0;
    GError *io = NULL;
    ics_trace *t = NULL;
    /* json.h's loader caps files at the size of a hardware model; traces are read here */
    if (g_stat(path, &st) != 0 || !S_ISREG(st.st_mode)) {
        ics_jr *jr = ics_jr_new(); /* its message for what is not a regular file */
        t = read_doc(jr, ics_jr_load(jr, path), path, error);
        ics_jr_free(jr);
    } else if ((guint64)st.st_size > ICS_TRACE_JSON_MAX_BYTES) {
        g_set_error(error, ICS_ERROR, ICS_ERROR_LIMIT,
                    "%s: expected a trace of at most %zu MiB, got %lld bytes", path,
                    ICS_TRACE_JSON_MAX_BYTES >> 20, (long long)st.st_size);
    } else if (!budget_before_reading(path, (uint64_t)st.st_size, error)) {
        /* refused before a byte is read */
    } else if (!g_file_get_contents(path, &text, &len, &io)) {
        g_set_error(error, ICS_ERROR, ICS_ERROR_IO, "%s: expected a readable file, got %s", path,
                    io->message);
        g_error_free(io);
    } else {
        t = read_text(path, text, len, true, error); /* g_file_get_contents ends it with a NUL */
        g_free(text);
    }
    return t;
}

ics_trace *ics_trace_read_json_text(const char *name, const char *text, size_t len, GError **error)
{
    return read_text(name, text, len, false, error);
}
