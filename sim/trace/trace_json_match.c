/* Matching what ranks issue to each other, for the JSON trace reader (trace_json_internal.h):
 * an error names the op where the ranks stop agreeing. ics_trace_check tests a subset of this
 * afterwards; this pass exists for the located message. Invariant: ops are visited grouped,
 * never searched, so the pass is O(ops log ops) whatever the trace. */
#include "trace/trace_json_internal.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct {
    ics_jr *jr;
    const cJSON *ranks; /* the document's "ranks" array */
    const ics_trace *t;
} matcher;

/* One op that others must match: issued by `rank`, the `op`-th of its ops; `key` groups it
 * (a communicator; a (src, dst) pair for sends and recvs). */
typedef struct {
    int64_t key;
    int rank, op;
} call;

static int cmp_call(const void *a, const void *b)
{
    const call *x = a, *y = b;
    if (x->key != y->key)
        return (x->key > y->key) - (x->key < y->key);
    if (x->rank != y->rank)
        return (x->rank > y->rank) - (x->rank < y->rank);
    return (x->op > y->op) - (x->op < y->op);
}

/* The array sorted (an empty GArray has no data, and qsort takes no NULL). */
static call *sorted(GArray *a)
{
    if (a->len > 0)
        qsort(a->data, a->len, sizeof(call), cmp_call);
    return (call *)(void *)a->data;
}

/* Sets the error at op i of rank k (i < 0: at its "ops" array), at its member `key` if not
 * NULL. */
static void fail_at(matcher *m, int k, int i, const char *key, const char *fmt, ...)
    G_GNUC_PRINTF(5, 6);
static void fail_at(matcher *m, int k, int i, const char *key, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *msg = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    const cJSON *ops = cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(m->ranks, k), "ops");
    const cJSON *at = i >= 0 ? cJSON_GetArrayItem(ops, i) : ops;
    if (key)
        at = cJSON_GetObjectItemCaseSensitive(at, key);
    size_t mark = ics_jr_push_key(m->jr, "ranks");
    ics_jr_push_index(m->jr, k);
    ics_jr_push_key(m->jr, "ops");
    if (i >= 0)
        ics_jr_push_index(m->jr, i);
    ics_jr_fail(m->jr, at, key, "%s", msg);
    ics_jr_pop(m->jr, mark);
    g_free(msg);
}

/* "all_reduce of 1048576 bytes in 4-byte elements[, root 1]" or "alltoall of ... [ on 20 SMs]"
 * (transfer full) */
static char *describe_coll(const ics_trace_op *op)
{
    char root[32] = "";
    if (op->coll.op == ICS_COLL_BROADCAST || op->coll.op == ICS_COLL_REDUCE)
        snprintf(root, sizeof root, ", root %d", op->coll.root);
    else if (op->coll.sms > 0)
        snprintf(root, sizeof root, " on %d SMs", op->coll.sms);
    return g_strdup_printf("%s of %" PRIu64 " bytes in %d-byte elements%s",
                           ics_coll_op_name(op->coll.op), op->coll.size_bytes, op->coll.dtype_bytes,
                           root);
}

static bool same_call(const ics_trace_op *a, const ics_trace_op *b)
{
    /* an all-to-allv's rows differ in size from rank to rank (trace.c checks the same) */
    bool sized = !a->splits && !b->splits;
    return a->coll.op == b->coll.op && (!sized || a->coll.size_bytes == b->coll.size_bytes) &&
           a->coll.dtype_bytes == b->coll.dtype_bytes && a->coll.root == b->coll.root &&
           a->coll.sms == b->coll.sms;
}

/* The calls of `rank` within the sorted group [lo, hi): [*from, *to). */
static void rank_range(const call *c, int lo, int hi, int rank, int *from, int *to)
{
    int a = lo, b = hi;
    while (a < b) { /* the first call of rank or later */
        int mid = a + (b - a) / 2;
        if (c[mid].rank < rank)
            a = mid + 1;
        else
            b = mid;
    }
    *from = a;
    for (b = a; b < hi && c[b].rank == rank;)
        b++;
    *to = b;
}

/* Member `rank` issues on communicator `comm` what member `ref` issues, call by call (ref's
 * calls are c[ref_from, ref_to), possibly none). */
static bool match_member(matcher *m, int comm, const call *c, int ref, int ref_from, int ref_to,
                         int rank, int from, int to)
{
    const ics_trace *t = m->t;
    const char *name = ics_trace_comm_name(t, comm);
    int nref = ref_to - ref_from, n = to - from;
    for (int j = 0; j < n; j++) {
        const ics_trace_op *op = ics_trace_get_op(t, rank, c[from + j].op);
        char *got = describe_coll(op);
        if (j >= nref) {
            fail_at(m, rank, c[from + j].op, NULL,
                    "expected no more collectives on \"%s\" than rank %d issues (%d), got "
                    "another: %s",
                    name, ref, nref, got);
        } else if (!same_call(op, ics_trace_get_op(t, ref, c[ref_from + j].op))) {
            char *want = describe_coll(ics_trace_get_op(t, ref, c[ref_from + j].op));
            fail_at(m, rank, c[from + j].op, NULL,
                    "expected collective #%d on \"%s\" to be rank %d's "
                    "($.ranks[%d].ops[%d]: %s), got %s",
                    j + 1, name, ref, ref, c[ref_from + j].op, want, got);
            g_free(want);
        }
        g_free(got);
        if (!ics_jr_ok(m->jr))
            return false;
    }
    if (n < nref)
        fail_at(m, rank, -1, NULL,
                "expected as many collectives on \"%s\" as rank %d issues (%d), got %d", name, ref,
                nref, n);
    return ics_jr_ok(m->jr);
}

/* Every member of a communicator with any ops issues the calls of its first such member. */
static bool match_colls(matcher *m)
{
    const ics_trace *t = m->t;
    GArray *calls = g_array_new(FALSE, FALSE, sizeof(call));
    for (int k = 0; k < ics_trace_nranks(t); k++)
        for (int i = 0; i < ics_trace_nops(t, k); i++) {
            const ics_trace_op *op = ics_trace_get_op(t, k, i);
            if (op->kind == ICS_TOP_COLL)
                g_array_append_val(calls, ((call){.key = op->comm, .rank = k, .op = i}));
        }
    const call *c = sorted(calls);
    bool ok = true;
    int lo = 0, ncalls = (int)calls->len;
    for (int comm = 0; comm < ics_trace_ncomms(t) && ok; comm++) {
        int hi = lo, n, ref = -1, ref_from = 0, ref_to = 0;
        while (hi < ncalls && c[hi].key == comm)
            hi++;
        const int *ranks = ics_trace_comm_ranks(t, comm, &n);
        for (int j = 0; j < n && ok; j++) {
            if (ics_trace_nops(t, ranks[j]) == 0) /* a folded trace's mirrored rank */
                continue;
            int from, to;
            rank_range(c, lo, hi, ranks[j], &from, &to);
            if (ref < 0) {
                ref = ranks[j];
                ref_from = from;
                ref_to = to;
            } else if (ref_to > ref_from || to > from) {
                ok = match_member(m, comm, c, ref, ref_from, ref_to, ranks[j], from, to);
            }
        }
        lo = hi;
    }
    g_array_free(calls, TRUE);
    return ok;
}

/* The k-th send from a to b and the k-th recv at b from a, on each channel (tag): both exist,
 * with the same size. */
static bool match_p2p(matcher *m)
{
    const ics_trace *t = m->t;
    int64_t nr = ics_trace_nranks(t), nt = ICS_TRACE_MAX_TAG + 1;
    GArray *sends = g_array_new(FALSE, FALSE, sizeof(call)),
           *recvs = g_array_new(FALSE, FALSE, sizeof(call));
    for (int k = 0; k < nr; k++)
        for (int i = 0; i < ics_trace_nops(t, k); i++) {
            const ics_trace_op *op = ics_trace_get_op(t, k, i);
            if (op->kind == ICS_TOP_SEND)
                g_array_append_val(sends,
                                   ((call){.key = ics_trace_channel((int)nr, k, op->peer, op->tag),
                                           .rank = k,
                                           .op = i}));
            else if (op->kind == ICS_TOP_RECV)
                g_array_append_val(recvs,
                                   ((call){.key = ics_trace_channel((int)nr, op->peer, k, op->tag),
                                           .rank = k,
                                           .op = i}));
        }
    const call *s = sorted(sends), *r = sorted(recvs);
    int ns = (int)sends->len, nrv = (int)recvs->len, a = 0, b = 0;
    int64_t key = -1;
    int nth = 0; /* how many of the pair `key` matched so far */
    while ((a < ns || b < nrv) && ics_jr_ok(m->jr)) {
        int64_t ks = a < ns ? s[a].key : INT64_MAX, kr = b < nrv ? r[b].key : INT64_MAX;
        int64_t k = ks < kr ? ks : kr;
        nth = k == key ? nth + 1 : 1;
        key = k;
        int src = (int)(k / nt / nr), dst = (int)(k / nt % nr), tag = (int)(k % nt);
        char on[24] = "";
        if (tag)
            g_snprintf(on, sizeof on, " on tag %d", tag);
        if (ks != kr && ks == k)
            fail_at(m, src, s[a].op, NULL,
                    "expected rank %d to receive from rank %d%s as often as it sends there, got "
                    "no recv for send #%d",
                    dst, src, on, nth);
        else if (ks != kr)
            fail_at(m, dst, r[b].op, NULL,
                    "expected rank %d to send to rank %d%s as often as it receives from there, got "
                    "no send for recv #%d",
                    src, dst, on, nth);
        else if (ics_trace_get_op(t, src, s[a].op)->bytes !=
                 ics_trace_get_op(t, dst, r[b].op)->bytes)
            fail_at(m, dst, r[b].op, "bytes",
                    "expected %" PRIu64 " as the matching send ($.ranks[%d].ops[%d]), got %" PRIu64,
                    ics_trace_get_op(t, src, s[a].op)->bytes, src, s[a].op,
                    ics_trace_get_op(t, dst, r[b].op)->bytes);
        a += ks == k;
        b += kr == k;
    }
    g_array_free(sends, TRUE);
    g_array_free(recvs, TRUE);
    return ics_jr_ok(m->jr);
}

bool ics_trace_json__match(ics_jr *jr, const cJSON *ranks, const ics_trace *t)
{
    matcher m = {.jr = jr, .ranks = ranks, .t = t};
    return match_colls(&m) && match_p2p(&m);
}
