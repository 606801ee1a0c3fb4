/* The JSON trace reader and writer (trace_json.h). */
#include "trace_json.h"
#include "json.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <glib/gstdio.h>

#define MAX_BYTES (INT64_C(1) << 50)
#define MAX_RANKS (1 << 20)
#define MAX_US    1e12 /* eleven and a half days */

/* Data types of collectives (bytes per element) and of compute (the GPU's peak to use). */
static const char *const coll_dtypes[] = {"fp64", "fp32",  "fp16",  "bf16", "fp8",
                                          "int8", "int32", "int64", NULL};
static const int coll_dtype_bytes[] = {8, 4, 2, 2, 1, 1, 4, 8};
static const char *const math_dtypes[] = {"fp64", "fp32", "tf32", "fp16", "bf16", "fp8", NULL};
static const ics_dtype math_dtype_values[] = {ICS_DTYPE_FP64, ICS_DTYPE_FP32, ICS_DTYPE_TF32,
                                              ICS_DTYPE_FP16, ICS_DTYPE_BF16, ICS_DTYPE_FP8};
static const char *const works[] = {"gemm", "attention", "elementwise", NULL};
static const char *const cats[] = {"compute", "tp", "pp", "dp", "other", NULL};
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
enum { KIND_COMPUTE = 0, KIND_SEND = 7, KIND_RECV = 8 };

typedef struct {
    ics_jr *jr;
    ics_trace *t;
    int nranks;
    GHashTable *comms; /* name -> index + 1 */
} reader;

/* ---- communicators -------------------------------------------------------------------------- */

static void read_comms(reader *r, const cJSON *root)
{
    const cJSON *cs = ics_jr_obj(r->jr, root, "communicators", false);
    if (!cs)
        return;
    size_t mark = ics_jr_push_key(r->jr, "communicators");
    if (!ics_jr_unique_keys(r->jr, cs)) {
        ics_jr_pop(r->jr, mark);
        return;
    }
    const cJSON *c;
    cJSON_ArrayForEach(c, cs)
    {
        if (!ics_jr_ok(r->jr))
            break;
        int n = cJSON_GetArraySize(c);
        if (!cJSON_IsArray(c) || n < 1) {
            char *got = ics_json_describe(c);
            ics_jr_fail(r->jr, c, c->string, "expected a non-empty array of ranks, got %s", got);
            g_free(got);
            break;
        }
        int *ranks = g_new(int, n);
        bool *seen = g_new0(bool, r->nranks);
        size_t m2 = ics_jr_push_key(r->jr, c->string);
        int i = 0;
        const cJSON *x;
        cJSON_ArrayForEach(x, c)
        {
            double v = cJSON_IsNumber(x) ? x->valuedouble : -1;
            if (v < 0 || v >= r->nranks || v != floor(v) || seen[(int)v]) {
                char *got = ics_json_describe(x);
                ics_jr_push_index(r->jr, i);
                ics_jr_fail(r->jr, x, NULL, "expected a distinct rank 0..%d, got %s", r->nranks - 1,
                            got);
                g_free(got);
                break;
            }
            seen[(int)v] = true;
            ranks[i++] = (int)v;
        }
        ics_jr_pop(r->jr, m2);
        if (ics_jr_ok(r->jr)) {
            int id = ics_trace_add_comm(r->t, ranks, n, c->string);
            g_hash_table_insert(r->comms, g_strdup(c->string), GINT_TO_POINTER(id + 1));
        }
        g_free(ranks);
        g_free(seen);
    }
    ics_jr_pop(r->jr, mark);
}

/* ---- ops ------------------------------------------------------------------------------------ */

typedef struct {
    GHashTable *ids; /* id -> op index + 1, of this rank */
    int rank;
    int nstreams;
    const cJSON *streams;
} rank_ctx;

static int stream_index(const cJSON *streams, const char *name)
{
    int i = 0;
    const cJSON *s;
    cJSON_ArrayForEach(s, streams)
    {
        if (cJSON_IsString(s) && strcmp(s->valuestring, name) == 0)
            return i;
        i++;
    }
    return -1;
}

static bool member(const ics_trace *t, int comm, int rank)
{
    int n;
    const int *ranks = ics_trace_comm_ranks(t, comm, &n);
    for (int i = 0; i < n; i++)
        if (ranks[i] == rank)
            return true;
    return false;
}

static void read_compute(reader *r, const cJSON *o, ics_trace_op *op)
{
    double us = -1, flops = 0, bytes = 0;
    int64_t m = 0, n = 0, k = 0;
    ics_jr_num(r->jr, o, "duration_us", false, 0, MAX_US, &us);
    bool work = ics_jr_num(r->jr, o, "flops", false, 0, 1e24, &flops);
    work |= ics_jr_num(r->jr, o, "bytes", false, 0, 1e18, &bytes);
    if (!ics_jr_ok(r->jr))
        return;
    if ((us >= 0) == work) {
        ics_jr_fail(r->jr, o, NULL,
                    "expected a compute op with \"duration_us\" or with \"flops\" "
                    "and \"bytes\", not %s",
                    work ? "both" : "neither");
        return;
    }
    op->duration_ps = us >= 0 ? (ics_time)llround(us * ICS_PS_PER_US) : 0;
    if (us >= 0 && op->duration_ps == 0)
        op->duration_ps = 1; /* 0 means "from the work": keep a zero duration tiny but fixed */
    op->flops = flops;
    op->mem_bytes = bytes;
    int e;
    op->dtype = ICS_DTYPE_BF16;
    op->work = ICS_WORK_GEMM;
    if (ics_jr_enum(r->jr, o, "dtype", false, math_dtypes, &e))
        op->dtype = math_dtype_values[e];
    if (ics_jr_enum(r->jr, o, "work", false, works, &e))
        op->work = (ics_work_kind)e;
    ics_jr_int(r->jr, o, "m", false, 1, INT32_MAX, &m);
    ics_jr_int(r->jr, o, "n", false, 1, INT32_MAX, &n);
    ics_jr_int(r->jr, o, "k", false, 1, INT32_MAX, &k);
    op->m = (int)m;
    op->n = (int)n;
    op->k = (int)k;
}

static void read_coll(reader *r, const cJSON *o, int rank, ics_trace_op *op)
{
    const char *comm = NULL;
    int64_t bytes = 0, root = 0;
    int e = 1;
    if (!ics_jr_str(r->jr, o, "comm", true, &comm))
        return;
    int id = GPOINTER_TO_INT(g_hash_table_lookup(r->comms, comm)) - 1;
    if (id < 0) {
        ics_jr_fail(r->jr, cJSON_GetObjectItemCaseSensitive(o, "comm"), "comm",
                    "expected a communicator of $.communicators, got \"%s\"", comm);
        return;
    }
    if (!member(r->t, id, rank)) {
        ics_jr_fail(r->jr, cJSON_GetObjectItemCaseSensitive(o, "comm"), "comm",
                    "expected a communicator rank %d belongs to, got \"%s\"", rank, comm);
        return;
    }
    ics_jr_int(r->jr, o, "bytes", true, 1, MAX_BYTES - 1, &bytes);
    ics_jr_enum(r->jr, o, "dtype", false, coll_dtypes, &e);
    int n;
    ics_trace_comm_ranks(r->t, id, &n);
    ics_jr_int(r->jr, o, "root", false, 0, n - 1, &root);
    op->comm = id;
    op->coll.size_bytes = (uint64_t)bytes;
    op->coll.dtype_bytes = coll_dtype_bytes[e];
    op->coll.root = (int)root;
}

static void read_p2p(reader *r, const cJSON *o, int rank, ics_trace_op *op)
{
    int64_t peer = 0, bytes = 0;
    if (ics_jr_int(r->jr, o, "peer", true, 0, r->nranks - 1, &peer) && peer == rank)
        ics_jr_fail(r->jr, cJSON_GetObjectItemCaseSensitive(o, "peer"), "peer",
                    "expected a rank other than this one (%d), got %d", rank, rank);
    ics_jr_int(r->jr, o, "bytes", true, 1, MAX_BYTES - 1, &bytes);
    op->peer = (int)peer;
    op->bytes = (uint64_t)bytes;
}

/* The op's deps, as indices of earlier ops of the rank; NULL (and an error) if one is not. */
static int *read_deps(reader *r, const cJSON *o, rank_ctx *rc, int *nd)
{
    const cJSON *deps = ics_jr_arr(r->jr, o, "deps", false);
    *nd = 0;
    if (!deps)
        return NULL;
    int *out = g_new(int, cJSON_GetArraySize(deps) + 1);
    size_t mark = ics_jr_push_key(r->jr, "deps");
    int i = 0;
    const cJSON *d;
    cJSON_ArrayForEach(d, deps)
    {
        int idx = cJSON_IsString(d)
                      ? GPOINTER_TO_INT(g_hash_table_lookup(rc->ids, d->valuestring)) - 1
                      : -1;
        if (idx < 0) {
            char *got = ics_json_describe(d);
            ics_jr_push_index(r->jr, i);
            ics_jr_fail(r->jr, d, NULL, "expected the id of an earlier op of rank %d, got %s",
                        rc->rank, got);
            g_free(got);
            break;
        }
        out[(*nd)++] = idx;
        i++;
    }
    ics_jr_pop(r->jr, mark);
    return out;
}

static void read_op(reader *r, const cJSON *o, rank_ctx *rc)
{
    static const char *const keys[] = {
        "id",   "op",   "stream", "deps",        "category", "name", "comm", "bytes", "dtype",
        "root", "peer", "flops",  "duration_us", "work",     "m",    "n",    "k",     NULL};
    if (!ics_jr_keys(r->jr, o, keys))
        return;
    int kind;
    if (!ics_jr_enum(r->jr, o, "op", true, kinds, &kind))
        return;
    ics_trace_op op = {.cat = kind == KIND_COMPUTE ? ICS_CAT_COMPUTE : ICS_CAT_OTHER};
    op.kind = kind == KIND_COMPUTE ? ICS_TOP_COMPUTE
              : kind == KIND_SEND  ? ICS_TOP_SEND
              : kind == KIND_RECV  ? ICS_TOP_RECV
                                   : ICS_TOP_COLL;
    if (op.kind == ICS_TOP_COLL)
        op.coll.op = kind_coll[kind];
    const char *stream = NULL, *id = NULL;
    if (ics_jr_str(r->jr, o, "stream", false, &stream)) {
        op.stream = stream_index(rc->streams, stream);
        if (op.stream < 0)
            ics_jr_fail(r->jr, cJSON_GetObjectItemCaseSensitive(o, "stream"), "stream",
                        "expected one of the rank's streams, got \"%s\"", stream);
    }
    int e;
    if (ics_jr_enum(r->jr, o, "category", false, cats, &e))
        op.cat = (ics_trace_cat)e;
    ics_jr_str(r->jr, o, "name", false, &op.name);
    if (op.kind == ICS_TOP_COMPUTE)
        read_compute(r, o, &op);
    else if (op.kind == ICS_TOP_COLL)
        read_coll(r, o, rc->rank, &op);
    else
        read_p2p(r, o, rc->rank, &op);
    if (op.kind != ICS_TOP_COMPUTE &&
        (cJSON_HasObjectItem(o, "flops") || cJSON_HasObjectItem(o, "duration_us")))
        ics_jr_fail(r->jr, o, NULL, "expected no \"flops\" or \"duration_us\" on a %s op",
                    kinds[kind]);
    int nd;
    int *deps = read_deps(r, o, rc, &nd);
    bool have_id = ics_jr_str(r->jr, o, "id", false, &id);
    if (have_id && g_hash_table_contains(rc->ids, id))
        ics_jr_fail(r->jr, cJSON_GetObjectItemCaseSensitive(o, "id"), "id",
                    "expected an id not used before on rank %d, got \"%s\"", rc->rank, id);
    if (ics_jr_ok(r->jr)) {
        int idx = ics_trace_add_op(r->t, rc->rank, &op, deps, nd);
        if (have_id)
            g_hash_table_insert(rc->ids, (gpointer)id, GINT_TO_POINTER(idx + 1));
    }
    g_free(deps);
}

static void read_rank(reader *r, const cJSON *o, int rank)
{
    static const char *const keys[] = {"streams", "ops", NULL};
    if (!ics_jr_keys(r->jr, o, keys))
        return;
    rank_ctx rc = {.rank = rank, .ids = g_hash_table_new(g_str_hash, g_str_equal)};
    rc.streams = ics_jr_arr(r->jr, o, "streams", false);
    if (rc.streams) {
        int i = 0;
        const cJSON *s;
        size_t mark = ics_jr_push_key(r->jr, "streams");
        cJSON_ArrayForEach(s, rc.streams)
        {
            if (!cJSON_IsString(s) || !*s->valuestring ||
                stream_index(rc.streams, s->valuestring) != i) {
                char *got = ics_json_describe(s);
                ics_jr_push_index(r->jr, i);
                ics_jr_fail(r->jr, s, NULL, "expected a distinct stream name, got %s", got);
                g_free(got);
                break;
            }
            ics_trace_add_stream(r->t, rank, s->valuestring);
            i++;
        }
        ics_jr_pop(r->jr, mark);
    } else {
        ics_trace_add_stream(r->t, rank, "compute");
    }
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
    g_hash_table_destroy(rc.ids);
}

static ics_trace *read_root(reader *r, const cJSON *root, const char *name, char **err)
{
    static const char *const keys[] = {"format",        "version", "comment",
                                       "communicators", "ranks",   NULL};
    static const char *const formats[] = {"icsim-trace", NULL};
    int e;
    int64_t version = 0;
    const cJSON *ranks = NULL;
    if (ics_jr_keys(r->jr, root, keys) && ics_jr_enum(r->jr, root, "format", true, formats, &e) &&
        ics_jr_int(r->jr, root, "version", true, 1, 1, &version))
        ranks = ics_jr_arr(r->jr, root, "ranks", true);
    int n = ranks ? cJSON_GetArraySize(ranks) : 0;
    if (ranks && (n < 1 || n > MAX_RANKS))
        ics_jr_fail(r->jr, ranks, "ranks", "expected 1 to %d ranks, got %d", MAX_RANKS, n);
    if (ics_jr_ok(r->jr)) {
        r->nranks = n;
        r->t = ics_trace_new(n);
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
    }
    GError *ge = ics_jr_take_error(r->jr);
    if (ge) {
        *err = g_strdup(ge->message);
        g_error_free(ge);
        ics_trace_free(r->t);
        return NULL;
    }
    char *why = NULL;
    if (!ics_trace_check(r->t, &why)) {
        *err = g_strdup_printf("%s: %s", name, why);
        g_free(why);
        ics_trace_free(r->t);
        return NULL;
    }
    return r->t;
}

static ics_trace *read_doc(ics_jr *jr, const cJSON *root, const char *name, char **err)
{
    reader r = {.jr = jr, .comms = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL)};
    ics_trace *t = NULL;
    if (root) {
        t = read_root(&r, root, name, err);
    } else {
        GError *ge = ics_jr_take_error(jr);
        *err = g_strdup(ge ? ge->message : "cannot read");
        if (ge)
            g_error_free(ge);
    }
    g_hash_table_destroy(r.comms);
    return t;
}

ics_trace *ics_trace_read_json(const char *path, char **err)
{
    *err = NULL;
    ics_jr *jr = ics_jr_new();
    ics_trace *t = read_doc(jr, ics_jr_load(jr, path), path, err);
    ics_jr_free(jr);
    return t;
}

ics_trace *ics_trace_read_json_text(const char *name, const char *text, size_t len, char **err)
{
    *err = NULL;
    ics_jr *jr = ics_jr_new();
    ics_trace *t = read_doc(jr, ics_jr_load_text(jr, name, text, len), name, err);
    ics_jr_free(jr);
    return t;
}

/* ---- writing -------------------------------------------------------------------------------- */

static void put_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; s && *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c < 0x20)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
    }
    fputc('"', f);
}

static const char *coll_dtype_name(int bytes)
{
    switch (bytes) {
    case 8:
        return "fp64";
    case 4:
        return "fp32";
    case 1:
        return "int8";
    default:
        return "bf16";
    }
}

/* Communicator names as written: the trace's, made unique (JSON object keys) and non-empty. */
static char **comm_names(const ics_trace *t)
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

static void put_op(FILE *f, const ics_trace *t, int rank, int i, const bool *is_dep,
                   char *const *cnames)
{
    const ics_trace_op *op = ics_trace_get_op(t, rank, i);
    fputs("        {", f);
    if (is_dep[i])
        fprintf(f, "\"id\": \"o%d\", ", i);
    static const char *const knames[] = {"compute", "?", "send", "recv"};
    const char *kind = op->kind == ICS_TOP_COLL ? ics_coll_op_name(op->coll.op) : knames[op->kind];
    fprintf(f, "\"op\": \"%s\", \"stream\": ", kind);
    put_str(f, ics_trace_stream_name(t, rank, op->stream));
    fprintf(f, ", \"category\": \"%s\"", ics_trace_cat_name(op->cat));
    if (op->name) {
        fputs(", \"name\": ", f);
        put_str(f, op->name);
    }
    switch (op->kind) {
    case ICS_TOP_COMPUTE:
        if (op->duration_ps > 0) {
            fprintf(f, ", \"duration_us\": %.6f", (double)op->duration_ps / ICS_PS_PER_US);
        } else {
            fprintf(f, ", \"flops\": %.17g, \"bytes\": %.17g, \"dtype\": \"%s\", \"work\": \"%s\"",
                    op->flops, op->mem_bytes,
                    math_dtypes[op->dtype <= ICS_DTYPE_FP8 ? op->dtype : ICS_DTYPE_FP8],
                    works[op->work]);
            if (op->m > 0)
                fprintf(f, ", \"m\": %d, \"n\": %d, \"k\": %d", op->m, op->n, op->k);
        }
        break;
    case ICS_TOP_COLL:
        fputs(", \"comm\": ", f);
        put_str(f, cnames[op->comm]);
        fprintf(f, ", \"bytes\": %" PRIu64 ", \"dtype\": \"%s\"", op->coll.size_bytes,
                coll_dtype_name(op->coll.dtype_bytes));
        if (op->coll.root)
            fprintf(f, ", \"root\": %d", op->coll.root);
        break;
    default:
        fprintf(f, ", \"peer\": %d, \"bytes\": %" PRIu64, op->peer, op->bytes);
    }
    int nd;
    const int *deps = ics_trace_op_deps(t, rank, i, &nd);
    if (nd > 0) {
        fputs(", \"deps\": [", f);
        for (int d = 0; d < nd; d++)
            fprintf(f, "%s\"o%d\"", d ? ", " : "", deps[d]);
        fputc(']', f);
    }
    fputc('}', f);
}

static void put_rank(FILE *f, const ics_trace *t, int rank, char *const *cnames)
{
    fputs("    {\"streams\": [", f);
    for (int s = 0; s < ics_trace_nstreams(t, rank); s++) {
        if (s)
            fputs(", ", f);
        put_str(f, ics_trace_stream_name(t, rank, s));
    }
    fputs("], \"ops\": [", f);
    int n = ics_trace_nops(t, rank);
    bool *is_dep = g_new0(bool, n + 1);
    for (int i = 0; i < n; i++) {
        int nd;
        const int *deps = ics_trace_op_deps(t, rank, i, &nd);
        for (int d = 0; d < nd; d++)
            is_dep[deps[d]] = true;
    }
    for (int i = 0; i < n; i++) {
        fputs(i ? ",\n" : "\n", f);
        put_op(f, t, rank, i, is_dep, cnames);
    }
    g_free(is_dep);
    fputs(n ? "\n    ]}" : "]}", f);
}

bool ics_trace_write_json(const ics_trace *t, const char *path, char **err)
{
    *err = NULL;
    char *dir = g_path_get_dirname(path);
    char *tmpl = g_build_filename(dir, ".icsim-trace-XXXXXX", NULL);
    g_free(dir);
    int fd = g_mkstemp(tmpl);
    if (fd >= 0)
        fchmod(fd, 0644); /* mkstemp's 0600 is for secrets: this is a result to share */
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!f) {
        *err = g_strdup_printf("%s: cannot write: %s", path, g_strerror(errno));
        if (fd >= 0)
            close(fd);
        g_free(tmpl);
        return false;
    }
    char **cnames = comm_names(t);
    fputs("{\n  \"format\": \"icsim-trace\",\n  \"version\": 1,\n  \"communicators\": {", f);
    for (int c = 0; c < ics_trace_ncomms(t); c++) {
        int n;
        const int *ranks = ics_trace_comm_ranks(t, c, &n);
        fputs(c ? ",\n    " : "\n    ", f);
        put_str(f, cnames[c]);
        fputs(": [", f);
        for (int i = 0; i < n; i++)
            fprintf(f, "%s%d", i ? ", " : "", ranks[i]);
        fputc(']', f);
    }
    fputs(ics_trace_ncomms(t) ? "\n  },\n  \"ranks\": [\n" : "},\n  \"ranks\": [\n", f);
    for (int k = 0; k < ics_trace_nranks(t); k++) {
        put_rank(f, t, k, cnames);
        fputs(k + 1 < ics_trace_nranks(t) ? ",\n" : "\n", f);
    }
    fputs("  ]\n}\n", f);
    g_strfreev(cnames);
    bool ok = !ferror(f);
    ok = fclose(f) == 0 && ok;
    if (ok && g_rename(tmpl, path) != 0)
        ok = false;
    if (!ok) {
        *err = g_strdup_printf("%s: cannot write: %s", path, g_strerror(errno));
        g_unlink(tmpl);
    }
    g_free(tmpl);
    return ok;
}
