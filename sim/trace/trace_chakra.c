/* The Chakra reader (trace.h: ics_trace_read_chakra). Per rank: frame the file's messages, unpack
 * them with protobuf-c, order the nodes so that dependencies come first, and turn each node that
 * does GPU work into an op (chakra/node.c; docs/trace-format.md, "Chakra execution traces"); nodes
 * without work (metadata, CPU-side ops) are folded: whoever depends on them depends on their
 * dependencies. With every rank read, the communicators are resolved (pg_name through the
 * groups file, or the ranks that use it) and the trace is built.
 * Invariant: every error names the file, and the node's position and id where there is one. */
#include "trace/trace.h"
#include "core/json.h"

#include <inttypes.h>
#include <string.h>

#include <glib.h>
#include <glib/gstdio.h>

#include "trace/chakra/node.h"
#include "et_def.pb-c.h"

typedef ChakraProtoMsg__Node node;
typedef ChakraProtoMsg__AttributeProto attr;

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
    uint64_t nodes; /* read so far, every rank: the memory budget counts their ops */
    rank_rec *ranks;
    GStringChunk *strs;
    GHashTable *groups;     /* key -> group_rec *, keys interned */
    GPtrArray *group_order; /* keys, in order of first use */
    GError *err;            /* the first error */
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
    g_clear_error(&r->err);
    g_free(r);
}

static const char *intern(reader *r, const char *s)
{
    return ics_chakra__intern(r->strs, s);
}

/* Keeps e as the reader's error unless it has one; takes e. */
static bool fail_with(reader *r, GError *e)
{
    if (!r->err)
        r->err = e;
    else
        g_error_free(e);
    return false;
}

/* Bad input, msg the message; takes msg. */
static bool fail(reader *r, char *msg)
{
    if (!r->err)
        r->err = g_error_new_literal(ICS_ERROR, ICS_ERROR_INPUT, msg);
    g_free(msg);
    return false;
}

/* "FILE: node IDX (id ID, "NAME"): " before why's message; takes why. */
static bool node_fail_error(reader *r, const char *file, size_t idx, const node *n, GError *why)
{
    char *name = g_strescape(n->name ? n->name : "", NULL);
    g_prefix_error(&why, "%s: node %zu (id %" PRIu64 ", \"%.60s\"): ", file, idx, n->id, name);
    g_free(name);
    return fail_with(r, why);
}

/* "FILE: node IDX (id ID, "NAME"): WHY"; takes why. */
static bool node_fail(reader *r, const char *file, size_t idx, const node *n, char *why)
{
    node_fail_error(r, file, idx, n, g_error_new_literal(ICS_ERROR, ICS_ERROR_INPUT, why));
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

/* ---- groups as the nodes use them ---------------------------------------------------------- */

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

/* ---- one file ------------------------------------------------------------------------------- */

/* What reading costs (docs/limits.md): per byte of a rank's file, protobuf-c's unpacked nodes
 * (their attributes are allocated one by one: ~8.4 bytes per byte measured on icsim-written
 * nodes); per node of that file, the reader's state for it (ids, order, reach); per node of
 * every rank, its pending op and the trace's. The estimate is 1.5 times the peak measured on
 * traces of 200,000 and 800,000 nodes, one rank and eight. */
#define CHAKRA_BYTES_PER_FILE_BYTE 9
#define CHAKRA_BYTES_PER_NODE      256
#define CHAKRA_BYTES_PER_OP        320

/* Length-delimited messages in d: counted without storing them, to estimate before framing
 * (a sparse file of zeros is a billion empty messages); stops at a malformed length, which
 * frames() reports. */
static uint64_t count_frames(const uint8_t *d, size_t len)
{
    uint64_t n = 0;
    for (size_t at = 0; at < len; n++) {
        uint64_t v = 0;
        for (int shift = 0;; shift += 7) {
            if (at >= len || shift > 63)
                return n;
            uint8_t b = d[at++];
            v |= (uint64_t)(b & 0x7f) << shift;
            if (!(b & 0x80))
                break;
        }
        if (v > len - at)
            return n + 1;
        at += (size_t)v;
    }
    return n;
}

/* The memory budget (core/budget.h) for a rank's file of len bytes and `frames` messages (0:
 * not yet counted, the file not yet read), on top of the ops of the ranks read before it. */
static bool check_budget(reader *r, const char *file, uint64_t len, uint64_t frames)
{
    uint64_t bytes = ics_budget_mul_add(
        r->nodes + frames, CHAKRA_BYTES_PER_OP,
        ics_budget_mul_add(len, CHAKRA_BYTES_PER_FILE_BYTE,
                           ics_budget_mul_add(frames, CHAKRA_BYTES_PER_NODE, 0)));
    char *what = frames ? g_strdup_printf("%s: %" PRIu64 " bytes, %" PRIu64 " nodes, after %" PRIu64
                                          " in the ranks before it",
                                          file, len, frames, r->nodes)
                        : g_strdup_printf("%s: %" PRIu64 " bytes to read, after %" PRIu64
                                          " nodes in the ranks before it",
                                          file, len, r->nodes);
    GError *e = NULL;
    bool ok = ics_budget_check(bytes, what, &e);
    g_free(what);
    if (!ok)
        fail_with(r, e);
    return ok;
}

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
    lists[0] = x->data_deps;
    counts[0] = x->n_data_deps;
    lists[1] = x->ctrl_deps;
    counts[1] = x->n_ctrl_deps;
    return ics_chakra__has_attr(x, "icsim_stream") ? 1 : 2;
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
        GError *why = NULL;
        ics_chakra_op co;
        int role = ics_chakra__node_role(x, &why);
        if (role < 0 ||
            (role > 0 && !ics_chakra__node_op(x, rank, r->nranks, r->strs, &co, &why))) {
            ok = node_fail_error(r, file, i, x, why);
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
        pend p = {.op = co.op, .pg = co.pg, .desc = co.desc, .file = file, .idx = i, .id = x->id};
        p.op.stream = stream_of(r, rank, co.stream);
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
            char *why = ics_chakra__wrong(a, "a string");
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
    uint64_t nframes = count_frames(data, len);
    if (!check_budget(r, file, len, nframes))
        return false;
    r->nodes += nframes;
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
static GHashTable *read_groups(const char *path, int nranks, GPtrArray *order, GError **error)
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
        g_propagate_error(error, ge);
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
        GArray *ranks = g_hash_table_lookup(file_groups, g_ptr_array_index(file_order, i));
        const char *key = intern(r, g_ptr_array_index(file_order, i));
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

/* Checks what replay relies on; the trace, or NULL and sets *error. Takes r. */
static ics_trace *finish(reader *r, ics_trace *t, const char *name, GError **error)
{
    GError *why = NULL;
    if (t && !ics_trace_check(t, &why)) {
        g_prefix_error(&why, "%s: ", name);
        fail_with(r, why);
        ics_trace_free(t);
        t = NULL;
    }
    if (!t && r->err) {
        g_propagate_error(error, r->err);
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

/* A rank's file before it is read: at most ICS_TRACE_CHAKRA_MAX_BYTES, and what it holds within
 * the memory budget at the least (its bytes unpacked, nodes not yet counted). */
static bool size_ok(reader *r, const char *file)
{
    GStatBuf st;
    if (g_stat(file, &st) != 0)
        return true; /* g_file_get_contents says why */
    if ((guint64)st.st_size > ICS_TRACE_CHAKRA_MAX_BYTES) {
        fail_with(r, g_error_new(ICS_ERROR, ICS_ERROR_LIMIT,
                                 "%s: expected a rank's file of at most %zu MiB, got %lld bytes",
                                 file, ICS_TRACE_CHAKRA_MAX_BYTES >> 20, (long long)st.st_size));
        return false;
    }
    return check_budget(r, file, (uint64_t)st.st_size, 0);
}

ics_trace *ics_trace_read_chakra(const char *path, const char *comm_groups, GError **error)
{
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
        g_set_error(error, ICS_ERROR, ICS_ERROR_INPUT,
                    "%s: expected a Chakra trace: files %s.0.et, %s.1.et, ... (or an icsim JSON "
                    "trace), found none",
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
        if (!size_ok(r, f)) {
            /* refused before reading */
        } else if (!g_file_get_contents(f, &data, &len, &ge)) {
            fail_with(r,
                      g_error_new(ICS_ERROR, ICS_ERROR_IO, "%s: cannot read: %s", f, ge->message));
            g_error_free(ge);
        } else {
            read_rank_data(r, k, intern(r, f), (const uint8_t *)data, len);
        }
        g_free(data);
        g_free(f);
    }
    ics_trace *t = r->err ? NULL : assemble(r, groups, order, gpath);
    t = finish(r, t, prefix, error);
    if (groups)
        g_hash_table_destroy(groups);
    g_ptr_array_free(order, TRUE);
    g_free(gpath);
    g_free(prefix);
    return t;
}

ics_trace *ics_trace_read_chakra_mem(const char *name, int nranks, const uint8_t *const *data,
                                     const size_t *len, GError **error)
{
    reader *r = reader_new(nranks);
    for (int k = 0; k < nranks && !r->err; k++)
        read_rank_data(r, k, name, data[k], len[k]);
    ics_trace *t = r->err ? NULL : assemble(r, NULL, NULL, NULL);
    return finish(r, t, name, error);
}
