/* The JSON trace writer (trace.h: ics_trace_write_json): checks that the format can say everything
 * in the trace, then streams it op by op through stdio, so a 10^6-op trace never exists as a tree.
 * Keys holding their default are left out. Invariant: the reader takes the output back as the same
 * trace. */
#include "core/json.h"
#include "trace/trace.h"
#include "trace/trace_json_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <glib/gstdio.h>

#define MAX_DURATION_PS (INT64_C(1000000000000) * ICS_PS_PER_US) /* the reader's 1e12 us */

typedef struct {
    FILE *f;
    const ics_trace *t;
    char **comms; /* communicator names as written */
} writer;

/* ---- what the format can say ---------------------------------------------------------------- */

static bool size_ok(uint64_t bytes)
{
    return bytes >= 1 && bytes < (uint64_t)ICS_TRACE_JSON_SIZE_LIMIT;
}

/* What a collective's size must be a multiple of (trace_json.c says why). */
static uint64_t split_unit(const ics_trace_op *op, int n)
{
    bool split = op->coll.op == ICS_COLL_ALL_GATHER || op->coll.op == ICS_COLL_REDUCE_SCATTER ||
                 op->coll.op == ICS_COLL_ALLTOALL;
    return (uint64_t)op->coll.dtype_bytes * (uint64_t)(split ? n : 1);
}

/* Why op i of rank k cannot be written (transfer full), or NULL. */
static char *unsayable(const ics_trace *t, int k, int i)
{
    const ics_trace_op *op = ics_trace_get_op(t, k, i);
    int n;
    g_assert((unsigned)op->cat < ICS_CAT_COUNT &&
             (unsigned)op->stream < (unsigned)ics_trace_nstreams(t, k));
    if (op->launches < 0 || op->launches > ICS_TRACE_MAX_LAUNCHES)
        return g_strdup_printf("%d kernel launches", op->launches);
    switch (op->kind) {
    case ICS_TOP_COMPUTE:
        g_assert((unsigned)op->dtype < ICS_DTYPE_COUNT && (unsigned)op->work < ICS_WORK_KIND_COUNT);
        if (op->duration_ps < 0 || op->duration_ps > MAX_DURATION_PS)
            return g_strdup_printf("a duration of %" PRId64 " ps", op->duration_ps);
        if (!(op->flops >= 0 && op->flops <= 1e24) || !(op->mem_bytes >= 0) ||
            op->mem_bytes != floor(op->mem_bytes) || op->mem_bytes >= ICS_TRACE_JSON_SIZE_LIMIT)
            return g_strdup_printf("work of %g FLOPs and %g bytes (bytes: a whole number below "
                                   "2^50)",
                                   op->flops, op->mem_bytes);
        if ((op->m > 0) != (op->n > 0) || (op->m > 0) != (op->k > 0) || op->m < 0 || op->n < 0 ||
            op->k < 0)
            return g_strdup_printf("a GEMM shape %d x %d x %d (all three >= 1, or none)", op->m,
                                   op->n, op->k);
        return NULL;
    case ICS_TOP_COLL:
        ics_trace_comm_ranks(t, op->comm, &n);
        if (op->coll.op > ICS_COLL_REDUCE)
            return g_strdup_printf("a %s collective", ics_coll_op_name(op->coll.op));
        if (!ics_trace_json__coll_dtype_for(op->coll.dtype_bytes))
            return g_strdup_printf("%d-byte elements (1, 2, 4 or 8)", op->coll.dtype_bytes);
        if (op->splits) {
            uint64_t sum = 0;
            for (int j = 0; j < n; j++)
                if (op->splits[j] % (uint64_t)op->coll.dtype_bytes == 0)
                    sum += op->splits[j];
                else
                    return g_strdup_printf("an all-to-allv split of %" PRIu64
                                           " bytes in %d-byte elements",
                                           op->splits[j], op->coll.dtype_bytes);
            if (sum != op->coll.size_bytes || !size_ok(sum))
                return g_strdup_printf("an all-to-allv of %" PRIu64 " bytes whose splits sum "
                                       "to %" PRIu64,
                                       op->coll.size_bytes, sum);
        } else if (!size_ok(op->coll.size_bytes) || op->coll.size_bytes % split_unit(op, n))
            return g_strdup_printf("a %s of %" PRIu64 " bytes in %d-byte elements on %d ranks",
                                   ics_coll_op_name(op->coll.op), op->coll.size_bytes,
                                   op->coll.dtype_bytes, n);
        if ((op->coll.op == ICS_COLL_BROADCAST || op->coll.op == ICS_COLL_REDUCE) &&
            (op->coll.root < 0 || op->coll.root >= n))
            return g_strdup_printf("root %d of a %d-rank communicator", op->coll.root, n);
        return NULL;
    default:
        if (!size_ok(op->bytes))
            return g_strdup_printf("a %s of %" PRIu64 " bytes",
                                   op->kind == ICS_TOP_SEND ? "send" : "recv", op->bytes);
        if (op->peer < 0 || op->peer >= ics_trace_nranks(t) || op->peer == k)
            return g_strdup_printf("peer %d", op->peer);
        if (op->tag < 0 || op->tag > ICS_TRACE_MAX_TAG)
            return g_strdup_printf("tag %d", op->tag);
        return NULL;
    }
}

/* A name JSON can hold as it is: UTF-8 (a Chakra trace may carry other bytes; written as
 * U+FFFD, two such names could read back alike). */
static bool name_ok(const char *what, const char *name, GError **error)
{
    if (!name || g_utf8_validate(name, -1, NULL))
        return true;
    char *shown = g_strescape(name, NULL);
    g_set_error(error, ICS_ERROR, ICS_ERROR_INPUT,
                "%s \"%s\": the trace format cannot hold a name that is not UTF-8", what, shown);
    g_free(shown);
    return false;
}

static bool names_ok(const ics_trace *t, GError **error)
{
    for (int c = 0; c < ics_trace_ncomms(t); c++)
        if (!name_ok("communicator", ics_trace_comm_name(t, c), error))
            return false;
    for (int k = 0; k < ics_trace_nranks(t); k++) {
        for (int s = 0; s < ics_trace_nstreams(t, k); s++)
            if (!name_ok("stream", ics_trace_stream_name(t, k, s), error))
                return false;
        for (int i = 0; i < ics_trace_nops(t, k); i++)
            if (!name_ok("op", ics_trace_get_op(t, k, i)->name, error))
                return false;
    }
    return true;
}

static bool check(const ics_trace *t, GError **error)
{
    if (!names_ok(t, error))
        return false;
    for (int k = 0; k < ics_trace_nranks(t); k++)
        for (int i = 0; i < ics_trace_nops(t, k); i++) {
            char *why = unsayable(t, k, i);
            if (why) {
                g_set_error(error, ICS_ERROR, ICS_ERROR_INPUT,
                            "rank %d op %d: the trace format cannot hold %s", k, i, why);
                g_free(why);
                return false;
            }
        }
    return true;
}

/* ---- values --------------------------------------------------------------------------------- */

/* The shortest decimal that reads back as v, in any locale. */
static void put_num(FILE *f, double v)
{
    char buf[G_ASCII_DTOSTR_BUF_SIZE];
    for (int digits = 15; digits <= 17; digits++) {
        char fmt[8];
        snprintf(fmt, sizeof fmt, "%%.%dg", digits);
        g_ascii_formatd(buf, sizeof buf, fmt, v);
        if (g_ascii_strtod(buf, NULL) == v)
            break;
    }
    fputs(buf, f);
}

/* Picoseconds as microseconds, exactly: "2500", "12.5", "0.000001". */
static void put_us(FILE *f, ics_time ps)
{
    long long whole = ps / ICS_PS_PER_US, frac = ps % ICS_PS_PER_US;
    if (!frac) {
        fprintf(f, "%lld", whole);
        return;
    }
    char digits[8];
    snprintf(digits, sizeof digits, "%06lld", frac);
    for (int i = 5; digits[i] == '0'; i--)
        digits[i] = '\0';
    fprintf(f, "%lld.%s", whole, digits);
}

/* Names as written, in order (transfer full, g_strfreev): keys of one JSON object differ and
 * the reader takes no empty name, so a trace built elsewhere may get "name#2". */
static char **unique_names(const char **names, int n)
{
    char **out = g_new0(char *, n + 1);
    GHashTable *used = g_hash_table_new(g_str_hash, g_str_equal);
    for (int i = 0; i < n; i++) {
        const char *base = names[i] && *names[i] ? names[i] : "unnamed";
        char *s = g_strdup(base);
        for (int k = 2; g_hash_table_contains(used, s); k++) {
            g_free(s);
            s = g_strdup_printf("%s#%d", base, k);
        }
        g_hash_table_add(used, s);
        out[i] = s;
    }
    g_hash_table_destroy(used);
    return out;
}

/* ---- ops ------------------------------------------------------------------------------------ */

static void put_compute(FILE *f, const ics_trace_op *op)
{
    if (op->duration_ps > 0) {
        fputs(", \"duration_us\": ", f);
        put_us(f, op->duration_ps);
    }
    if (op->duration_ps == 0 || op->flops > 0 || op->mem_bytes > 0) {
        fputs(", \"flops\": ", f);
        put_num(f, op->flops);
        fprintf(f, ", \"bytes\": %" PRIu64, (uint64_t)op->mem_bytes);
    }
    if (op->dtype != ICS_DTYPE_BF16)
        fprintf(f, ", \"dtype\": \"%s\"", ics_trace_json__math_dtypes[op->dtype]);
    if (op->work != ICS_WORK_GEMM)
        fprintf(f, ", \"work\": \"%s\"", ics_trace_json__works[op->work]);
    if (op->m > 0)
        fprintf(f, ", \"m\": %d, \"n\": %d, \"k\": %d", op->m, op->n, op->k);
}

static void put_coll(writer *w, const ics_trace_op *op)
{
    fputs(", \"comm\": ", w->f);
    ics_json_write_string(w->f, w->comms[op->comm]);
    fprintf(w->f, ", \"bytes\": %" PRIu64, op->coll.size_bytes);
    if (op->coll.dtype_bytes != 4)
        fprintf(w->f, ", \"dtype\": \"%s\"", ics_trace_json__coll_dtype_for(op->coll.dtype_bytes));
    if (op->splits) {
        int n;
        ics_trace_comm_ranks(w->t, op->comm, &n);
        fputs(", \"splits\": [", w->f);
        for (int j = 0; j < n; j++)
            fprintf(w->f, "%s%" PRIu64, j ? ", " : "", op->splits[j]);
        fputc(']', w->f);
    }
    if ((op->coll.op == ICS_COLL_BROADCAST || op->coll.op == ICS_COLL_REDUCE) && op->coll.root)
        fprintf(w->f, ", \"root\": %d", op->coll.root);
    if (op->coll.op == ICS_COLL_ALLTOALL && op->coll.sms > 0)
        fprintf(w->f, ", \"sms\": %d", op->coll.sms);
}

static void put_op(writer *w, int rank, int i, const bool *is_dep, char *const *streams)
{
    FILE *f = w->f;
    const ics_trace_op *op = ics_trace_get_op(w->t, rank, i);
    static const char *const kind_names[] = {"compute", NULL, "send", "recv"};
    fputs("      {", f);
    if (is_dep[i])
        fprintf(f, "\"id\": \"o%d\", ", i);
    fprintf(f, "\"op\": \"%s\"",
            op->kind == ICS_TOP_COLL ? ics_coll_op_name(op->coll.op) : kind_names[op->kind]);
    if (op->name && *op->name) {
        fputs(", \"name\": ", f);
        ics_json_write_string(f, op->name);
    }
    if (op->stream != 0) {
        fputs(", \"stream\": ", f);
        ics_json_write_string(f, streams[op->stream]);
    }
    if (op->cat != (op->kind == ICS_TOP_COMPUTE ? ICS_CAT_COMPUTE : ICS_CAT_OTHER))
        fprintf(f, ", \"category\": \"%s\"", ics_trace_json__cats[op->cat]);
    if (op->launches > 0)
        fprintf(f, ", \"launches\": %d", op->launches);
    if (op->host_sync)
        fputs(", \"host_sync\": true", f);
    if (op->kind == ICS_TOP_COMPUTE)
        put_compute(f, op);
    else if (op->kind == ICS_TOP_COLL)
        put_coll(w, op);
    else {
        fprintf(f, ", \"peer\": %d, \"bytes\": %" PRIu64, op->peer, op->bytes);
        if (op->tag)
            fprintf(f, ", \"tag\": %d", op->tag);
    }
    int nd;
    const int *deps = ics_trace_op_deps(w->t, rank, i, &nd);
    if (nd > 0) {
        fputs(", \"deps\": [", f);
        for (int d = 0; d < nd; d++)
            fprintf(f, "%s\"o%d\"", d ? ", " : "", deps[d]);
        fputc(']', f);
    }
    fputc('}', f);
}

static void put_rank(writer *w, int rank)
{
    FILE *f = w->f;
    int ns = ics_trace_nstreams(w->t, rank), n = ics_trace_nops(w->t, rank);
    const char **names = g_new(const char *, ns + 1);
    for (int s = 0; s < ns; s++)
        names[s] = ics_trace_stream_name(w->t, rank, s);
    char **streams = unique_names(names, ns);
    fputs("    {", f);
    if (ns > 0) { /* none: the reader's default, "compute" */
        fputs("\"streams\": [", f);
        for (int s = 0; s < ns; s++) {
            fputs(s ? ", " : "", f);
            ics_json_write_string(f, streams[s]);
        }
        fputs("], ", f);
    }
    fputs("\"ops\": [", f);
    bool *is_dep = g_new0(bool, n + 1);
    for (int i = 0; i < n; i++) {
        int nd;
        const int *deps = ics_trace_op_deps(w->t, rank, i, &nd);
        for (int d = 0; d < nd; d++)
            is_dep[deps[d]] = true;
    }
    for (int i = 0; i < n; i++) {
        fputs(i ? ",\n" : "\n", f);
        put_op(w, rank, i, is_dep, streams);
    }
    fputs(n ? "\n    ]}" : "]}", f);
    g_free(is_dep);
    g_strfreev(streams);
    g_free(names);
}

/* ---- files ---------------------------------------------------------------------------------- */

static void put_trace(writer *w)
{
    FILE *f = w->f;
    int nc = ics_trace_ncomms(w->t), nr = ics_trace_nranks(w->t);
    fputs("{\n  \"format\": \"icsim-trace\",\n  \"version\": 1,\n  \"communicators\": {", f);
    for (int c = 0; c < nc; c++) {
        int n;
        const int *ranks = ics_trace_comm_ranks(w->t, c, &n);
        fputs(c ? ",\n    " : "\n    ", f);
        ics_json_write_string(f, w->comms[c]);
        fputs(": [", f);
        for (int i = 0; i < n; i++)
            fprintf(f, "%s%d", i ? ", " : "", ranks[i]);
        fputc(']', f);
    }
    fputs(nc ? "\n  },\n  \"ranks\": [\n" : "},\n  \"ranks\": [\n", f);
    for (int k = 0; k < nr; k++) {
        put_rank(w, k);
        fputs(k + 1 < nr ? ",\n" : "\n", f);
    }
    fputs("  ]\n}\n", f);
}

bool ics_trace_write_json_to(const ics_trace *t, FILE *f, GError **error)
{
    if (!check(t, error))
        return false;
    int nc = ics_trace_ncomms(t);
    const char **names = g_new(const char *, nc + 1);
    for (int c = 0; c < nc; c++)
        names[c] = ics_trace_comm_name(t, c);
    writer w = {.f = f, .t = t, .comms = unique_names(names, nc)};
    put_trace(&w);
    g_strfreev(w.comms);
    g_free(names);
    if (ferror(f)) {
        g_set_error(error, ICS_ERROR, ICS_ERROR_IO, "cannot write: %s", g_strerror(errno));
        return false;
    }
    return true;
}

bool ics_trace_write_json(const ics_trace *t, const char *path, GError **error)
{
    GError *why = NULL;
    if (!check(t, &why)) { /* before any file exists */
        g_prefix_error(&why, "%s: ", path);
        g_propagate_error(error, why);
        return false;
    }
    char *dir = g_path_get_dirname(path), *base = g_path_get_basename(path);
    char *tmp = g_strdup_printf("%s/.%s.XXXXXX", dir, base);
    g_free(dir);
    g_free(base);
    int fd = g_mkstemp(tmp);
    if (fd >= 0)
        fchmod(fd, 0644); /* mkstemp's 0600 is for secrets: a trace is for sharing */
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    bool ok = f != NULL;
    if (ok) {
        setvbuf(f, NULL, _IOFBF, 1 << 20);
        ok = ics_trace_write_json_to(t, f, &why); /* said below, with the path */
        g_clear_error(&why);
        ok = fclose(f) == 0 && ok;
    } else if (fd >= 0) {
        close(fd);
    }
    ok = ok && g_rename(tmp, path) == 0;
    if (!ok) {
        int e = errno; /* of the call that failed: nothing since has touched it */
        g_set_error(error, ICS_ERROR, ICS_ERROR_IO, "%s: cannot write: %s", path, g_strerror(e));
        if (fd >= 0)
            g_unlink(tmp);
    }
    g_free(tmp);
    return ok;
}
