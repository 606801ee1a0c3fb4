/* Trace storage: per rank, its streams and ops in arrays; every string in one string chunk
 * (names repeat a lot in generated traces: "fwd.qkv" on every layer of every micro-batch). */
#include "trace/trace.h"

#include <inttypes.h>
#include <stdarg.h>
#include <string.h>

#include <glib.h>

typedef struct {
    ics_trace_op op;
    int dep0, ndeps; /* into rank.deps */
} op_rec;

typedef struct {
    GArray *ops;        /* op_rec */
    GArray *deps;       /* int */
    GPtrArray *streams; /* const char *, in the chunk */
} rank_rec;

typedef struct {
    int *ranks;
    int n;
    const char *name;
} comm_rec;

struct ics_trace {
    int nranks;
    rank_rec *ranks;
    GArray *comms; /* comm_rec */
    GStringChunk *strings;
    GPtrArray *splits; /* uint64_t arrays of all-to-allv ops, owned */
};

static const char *const cat_names[ICS_CAT_COUNT] = {"compute", "tp", "pp",   "dp",
                                                     "ep",      "cp", "other"};

const char *ics_trace_cat_name(ics_trace_cat c)
{
    return (unsigned)c < ICS_CAT_COUNT ? cat_names[c] : "?";
}

ics_trace *ics_trace_new(int nranks)
{
    g_assert(nranks >= 1);
    ics_trace *t = g_new0(ics_trace, 1);
    t->nranks = nranks;
    t->ranks = g_new0(rank_rec, nranks);
    for (int r = 0; r < nranks; r++) {
        t->ranks[r].ops = g_array_new(FALSE, FALSE, sizeof(op_rec));
        t->ranks[r].deps = g_array_new(FALSE, FALSE, sizeof(int));
        t->ranks[r].streams = g_ptr_array_new();
    }
    t->comms = g_array_new(FALSE, FALSE, sizeof(comm_rec));
    t->strings = g_string_chunk_new(4096);
    t->splits = g_ptr_array_new_with_free_func(g_free);
    return t;
}

void ics_trace_free(ics_trace *t)
{
    if (!t)
        return;
    for (int r = 0; r < t->nranks; r++) {
        g_array_free(t->ranks[r].ops, TRUE);
        g_array_free(t->ranks[r].deps, TRUE);
        g_ptr_array_free(t->ranks[r].streams, TRUE);
    }
    g_free(t->ranks);
    for (guint i = 0; i < t->comms->len; i++)
        g_free(g_array_index(t->comms, comm_rec, i).ranks);
    g_array_free(t->comms, TRUE);
    g_string_chunk_free(t->strings);
    g_ptr_array_free(t->splits, TRUE);
    g_free(t);
}

int ics_trace_nranks(const ics_trace *t)
{
    return t->nranks;
}

static const char *intern(ics_trace *t, const char *s)
{
    return s ? g_string_chunk_insert_const(t->strings, s) : NULL;
}

int ics_trace_add_comm(ics_trace *t, const int *ranks, int n, const char *name)
{
    comm_rec c = {.ranks = g_memdup2(ranks, sizeof(int) * (size_t)n), .n = n};
    c.name = intern(t, name ? name : "");
    g_array_append_val(t->comms, c);
    return (int)t->comms->len - 1;
}

int ics_trace_ncomms(const ics_trace *t)
{
    return (int)t->comms->len;
}

const int *ics_trace_comm_ranks(const ics_trace *t, int comm, int *n)
{
    const comm_rec *c = &g_array_index(t->comms, comm_rec, comm);
    *n = c->n;
    return c->ranks;
}

const char *ics_trace_comm_name(const ics_trace *t, int comm)
{
    return g_array_index(t->comms, comm_rec, comm).name;
}

int ics_trace_add_stream(ics_trace *t, int rank, const char *name)
{
    GPtrArray *s = t->ranks[rank].streams;
    g_ptr_array_add(s, (gpointer)intern(t, name ? name : ""));
    return (int)s->len - 1;
}

int ics_trace_nstreams(const ics_trace *t, int rank)
{
    return (int)t->ranks[rank].streams->len;
}

const char *ics_trace_stream_name(const ics_trace *t, int rank, int stream)
{
    return g_ptr_array_index(t->ranks[rank].streams, (guint)stream);
}

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

int ics_trace_add_op(ics_trace *t, int rank, const ics_trace_op *op, const int *deps, int ndeps)
{
    rank_rec *r = &t->ranks[rank];
    op_rec rec = {.op = *op, .dep0 = (int)r->deps->len, .ndeps = ndeps};
    rec.op.name = intern(t, op->name);
    rec.op.coll.splits = NULL;
    if (op->kind == ICS_TOP_COLL && op->splits) {
        int n;
        ics_trace_comm_ranks(t, op->comm, &n);
        uint64_t *copy = g_memdup2(op->splits, (gsize)n * sizeof *copy);
        g_ptr_array_add(t->splits, copy);
        rec.op.splits = copy;
    } else {
        rec.op.splits = NULL;
    }
    g_array_append_vals(r->deps, deps, (guint)ndeps);
    /* a set: kept in ascending order, so that every reader and writer (JSON, Chakra) and every
     * generator give the same trace whatever order the dependencies were listed in */
    if (ndeps > 1)
        qsort(&g_array_index(r->deps, int, rec.dep0), (size_t)ndeps, sizeof(int), cmp_int);
    g_array_append_val(r->ops, rec);
    return (int)r->ops->len - 1;
}

int ics_trace_nops(const ics_trace *t, int rank)
{
    return (int)t->ranks[rank].ops->len;
}

const ics_trace_op *ics_trace_get_op(const ics_trace *t, int rank, int i)
{
    return &g_array_index(t->ranks[rank].ops, op_rec, i).op;
}

const int *ics_trace_op_deps(const ics_trace *t, int rank, int i, int *ndeps)
{
    const rank_rec *r = &t->ranks[rank];
    const op_rec *rec = &g_array_index(r->ops, op_rec, i);
    *ndeps = rec->ndeps;
    /* a rank without any dependency has no array to point into */
    return rec->ndeps ? &g_array_index(r->deps, int, rec->dep0) : NULL;
}

/* ---- consistency ---------------------------------------------------------------------------- */

static bool fail(GError **error, const char *fmt, ...) G_GNUC_PRINTF(2, 3);

/* Sets *error (ICS_ERROR_INPUT); returns false. */
static bool fail(GError **error, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *msg = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    g_set_error_literal(error, ICS_ERROR, ICS_ERROR_INPUT, msg);
    g_free(msg);
    return false;
}

/* Every member of a communicator issues the same collectives in the same order. */
static bool check_colls(const ics_trace *t, GError **error)
{
    int nc = ics_trace_ncomms(t);
    /* per communicator, the sequence seen at its first rank, then compared at the others */
    for (int c = 0; c < nc; c++) {
        int n;
        const int *ranks = ics_trace_comm_ranks(t, c, &n);
        GArray *seq = g_array_new(FALSE, FALSE, sizeof(ics_coll_req));
        int ref = -1; /* the first member with ops: a folded trace leaves mirrored ranks empty */
        for (int m = 0; m < n; m++) {
            int r = ranks[m], k = 0;
            if (ics_trace_nops(t, r) == 0)
                continue;
            if (ref < 0)
                ref = r;
            for (int i = 0; i < ics_trace_nops(t, r); i++) {
                const ics_trace_op *op = ics_trace_get_op(t, r, i);
                if (op->kind != ICS_TOP_COLL || op->comm != c)
                    continue;
                if (r == ref) {
                    ics_coll_req q = op->coll;
                    q.splits = op->splits; /* marks an all-to-allv: rows differ in size */
                    g_array_append_val(seq, q);
                } else if (k >= (int)seq->len ||
                           g_array_index(seq, ics_coll_req, k).op != op->coll.op ||
                           g_array_index(seq, ics_coll_req, k).sms != op->coll.sms ||
                           (!op->splits && !g_array_index(seq, ics_coll_req, k).splits &&
                            g_array_index(seq, ics_coll_req, k).size_bytes !=
                                op->coll.size_bytes)) {
                    g_array_free(seq, TRUE);
                    return fail(error,
                                "rank %d op %d: collective %d on communicator '%s' differs from "
                                "rank %d's (same call, other op, size or sms)",
                                r, i, k, ics_trace_comm_name(t, c), ref);
                }
                k++;
            }
            if (r != ref && k != (int)seq->len) {
                guint want = seq->len;
                g_array_free(seq, TRUE);
                return fail(error,
                            "rank %d issues %d collectives on communicator '%s', rank %d issues %u",
                            r, k, ics_trace_comm_name(t, c), ref, want);
            }
        }
        g_array_free(seq, TRUE);
    }
    return true;
}

/* Sends from a to b and recvs at b from a pair up in order, with equal sizes. */
static bool check_p2p(const ics_trace *t, GError **error)
{
    GHashTable *queues =
        g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, (GDestroyNotify)g_queue_free);
    bool ok = true;
    /* collect the byte counts of every (src, dst) send in order */
    for (int r = 0; r < t->nranks; r++)
        for (int i = 0; i < ics_trace_nops(t, r); i++) {
            const ics_trace_op *op = ics_trace_get_op(t, r, i);
            if (op->kind != ICS_TOP_SEND)
                continue;
            gint64 key = ics_trace_channel(t->nranks, r, op->peer, op->tag);
            GQueue *q = g_hash_table_lookup(queues, &key);
            if (!q) {
                q = g_queue_new();
                g_hash_table_insert(queues, g_memdup2(&key, sizeof key), q);
            }
            g_queue_push_tail(q, (gpointer)(guintptr)op->bytes);
        }
    for (int r = 0; r < t->nranks && ok; r++)
        for (int i = 0; i < ics_trace_nops(t, r) && ok; i++) {
            const ics_trace_op *op = ics_trace_get_op(t, r, i);
            if (op->kind != ICS_TOP_RECV)
                continue;
            gint64 key = ics_trace_channel(t->nranks, op->peer, r, op->tag);
            GQueue *q = g_hash_table_lookup(queues, &key);
            if (!q || g_queue_is_empty(q)) {
                ok = fail(error, "rank %d op %d: recv from rank %d has no matching send", r, i,
                          op->peer);
            } else if ((uint64_t)(guintptr)g_queue_pop_head(q) != op->bytes) {
                ok = fail(error,
                          "rank %d op %d: recv from rank %d expects %" PRIu64
                          " bytes, the matching send has another size",
                          r, i, op->peer, op->bytes);
            }
        }
    if (ok) {
        GHashTableIter it;
        gpointer key, val;
        g_hash_table_iter_init(&it, queues);
        while (ok && g_hash_table_iter_next(&it, &key, &val))
            if (!g_queue_is_empty(val)) {
                gint64 k = *(gint64 *)key;
                ok =
                    fail(error, "rank %d sends to rank %d more times than rank %d receives from it",
                         (int)(k / t->nranks), (int)(k % t->nranks), (int)(k % t->nranks));
            }
    }
    g_hash_table_destroy(queues);
    return ok;
}

bool ics_trace_check(const ics_trace *t, GError **error)
{
    return check_colls(t, error) && check_p2p(t, error);
}
