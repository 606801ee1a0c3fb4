/* The Chakra reader (trace_chakra.h). Per rank: frame the file's messages, unpack them with
 * protobuf-c, order the nodes so that dependencies come first, and turn each into an op:
 *   COMP_NODE       compute: `icsim_duration_ps`, else duration_micros, else the work
 *                   (`num_ops` FLOPs, `tensor_size` bytes) for the GPU model;
 *   COMM_COLL_NODE  a collective: `comm_type`, `comm_size` bytes, on the group `pg_name`;
 *   COMM_SEND_NODE  a send to `comm_dst`; COMM_RECV_NODE a recv from `comm_src`; `comm_size`;
 *   anything else   (metadata, memory, CPU-only ops) is no work: whoever depends on it depends
 *                   on its dependencies instead.
 * Chakra gives a DAG, not streams: compute nodes go on stream "compute", communication on
 * "comm" (a GPU runs one kernel at a time; NCCL runs a communicator's calls in order), unless
 * an `icsim_stream` attribute names one. data_deps and ctrl_deps are both dependencies, except
 * in nodes icsim wrote (with icsim_stream), whose ctrl_deps only repeat the stream order. */
#include "trace_chakra.h"
#include "json.h"

#include <inttypes.h>
#include <string.h>

#include <glib.h>

#include "et_def.pb-c.h"

typedef ChakraProtoMsg__Node node;
typedef ChakraProtoMsg__AttributeProto attr;

/* ---- attributes ----------------------------------------------------------------------------- */

static const attr *find_attr(const node *n, const char *name)
{
    for (size_t i = 0; i < n->n_attr; i++)
        if (n->attr[i]->name && strcmp(n->attr[i]->name, name) == 0)
            return n->attr[i];
    return NULL;
}

/* An integer attribute of any integer type (Chakra writers differ); false if absent or not an
 * integer. */
static bool attr_int(const node *n, const char *name, int64_t *out)
{
    const attr *a = find_attr(n, name);
    if (!a)
        return false;
    switch (a->value_case) {
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_INT32_VAL:
        *out = a->int32_val;
        return true;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_INT64_VAL:
        *out = a->int64_val;
        return true;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_UINT32_VAL:
        *out = a->uint32_val;
        return true;
    case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_UINT64_VAL:
        *out = a->uint64_val > INT64_MAX ? -1 : (int64_t)a->uint64_val;
        return true;
    default:
        return false;
    }
}

static bool attr_num(const node *n, const char *name, double *out)
{
    int64_t v;
    const attr *a = find_attr(n, name);
    if (a && a->value_case == CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_DOUBLE_VAL) {
        *out = a->double_val;
        return true;
    }
    if (!attr_int(n, name, &v))
        return false;
    *out = (double)v;
    return true;
}

static const char *attr_str(const node *n, const char *name)
{
    const attr *a = find_attr(n, name);
    return a && a->value_case == CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_STRING_VAL ? a->string_val
                                                                                     : NULL;
}

static bool attr_true(const node *n, const char *name)
{
    const attr *a = find_attr(n, name);
    return a && a->value_case == CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_BOOL_VAL && a->bool_val;
}

/* ---- one file ------------------------------------------------------------------------------- */

typedef struct {
    const char *file;
    int rank, nranks;
    ics_trace *t;
    GHashTable *groups;  /* pg_name -> GArray of ranks (from the groups file), or NULL */
    GHashTable *comms;   /* communicator name -> index + 1 */
    GHashTable *streams; /* this rank's stream name -> index + 1 */
    char *err;
} reader;

static bool fail(reader *r, char *msg)
{
    if (!r->err)
        r->err = msg;
    else
        g_free(msg);
    return false;
}

/* Splits a file into its length-delimited messages: *n of them, (offset, length) pairs. */
static bool frames(reader *r, const uint8_t *d, size_t len, GArray *out)
{
    size_t at = 0;
    while (at < len) {
        uint64_t v = 0;
        int shift = 0;
        size_t start = at;
        for (;;) {
            if (at >= len || shift > 63)
                return fail(r, g_strdup_printf("%s: byte %zu: expected a message length "
                                               "(varint), got the end of the file or a "
                                               "malformed varint",
                                               r->file, start));
            uint8_t b = d[at++];
            v |= (uint64_t)(b & 0x7f) << shift;
            shift += 7;
            if (!(b & 0x80))
                break;
        }
        if (v > len - at)
            return fail(r, g_strdup_printf("%s: byte %zu: expected a message of %" PRIu64
                                           " bytes, the file has %zu left",
                                           r->file, start, v, len - at));
        size_t fr[2] = {at, (size_t)v};
        g_array_append_vals(out, fr, 1);
        at += (size_t)v;
    }
    return true;
}

static int stream_of(reader *r, const char *name)
{
    int s = GPOINTER_TO_INT(g_hash_table_lookup(r->streams, name)) - 1;
    if (s < 0) {
        s = ics_trace_add_stream(r->t, r->rank, name);
        g_hash_table_insert(r->streams, g_strdup(name), GINT_TO_POINTER(s + 1));
    }
    return s;
}

static int comm_of(reader *r, const char *pg, size_t idx, uint64_t id)
{
    const char *name = pg && r->groups ? pg : "world";
    int c = GPOINTER_TO_INT(g_hash_table_lookup(r->comms, name)) - 1;
    if (c >= 0)
        return c;
    GArray *ranks = r->groups && pg ? g_hash_table_lookup(r->groups, pg) : NULL;
    if (r->groups && pg && !ranks) {
        fail(r, g_strdup_printf("%s: node %zu (id %" PRIu64 "): pg_name: expected a group of "
                                "the communicator-groups file, got \"%s\"",
                                r->file, idx, id, pg));
        return -1;
    }
    int *all = NULL, n = 0;
    if (ranks) {
        all = g_memdup2(ranks->data, sizeof(int) * ranks->len);
        n = (int)ranks->len;
    } else {
        all = g_new(int, r->nranks);
        for (n = 0; n < r->nranks; n++)
            all[n] = n;
    }
    c = ics_trace_add_comm(r->t, all, n, name);
    g_free(all);
    g_hash_table_insert(r->comms, g_strdup(name), GINT_TO_POINTER(c + 1));
    return c;
}

static const struct {
    int chakra;
    ics_coll_op op;
} coll_map[] = {
    {CHAKRA_PROTO_MSG__COLLECTIVE_COMM_TYPE__ALL_REDUCE, ICS_COLL_ALL_REDUCE},
    {CHAKRA_PROTO_MSG__COLLECTIVE_COMM_TYPE__REDUCE, ICS_COLL_REDUCE},
    {CHAKRA_PROTO_MSG__COLLECTIVE_COMM_TYPE__ALL_GATHER, ICS_COLL_ALL_GATHER},
    {CHAKRA_PROTO_MSG__COLLECTIVE_COMM_TYPE__BROADCAST, ICS_COLL_BROADCAST},
    {CHAKRA_PROTO_MSG__COLLECTIVE_COMM_TYPE__ALL_TO_ALL, ICS_COLL_ALLTOALL},
    {CHAKRA_PROTO_MSG__COLLECTIVE_COMM_TYPE__REDUCE_SCATTER, ICS_COLL_REDUCE_SCATTER},
};

static const char *const cat_names[] = {"compute", "tp", "pp", "dp", "other"};

/* Fills op from a node that does work; returns false (with an error) if it is malformed. */
static bool node_op(reader *r, const node *n, size_t idx, ics_trace_op *op)
{
    int64_t v;
    const char *what = NULL;
    op->name = n->name && *n->name ? n->name : NULL;
    const char *cat = attr_str(n, "icsim_category");
    for (int c = 0; cat && c < ICS_CAT_COUNT; c++)
        if (strcmp(cat, cat_names[c]) == 0)
            op->cat = (ics_trace_cat)c;
    if (n->type == CHAKRA_PROTO_MSG__NODE_TYPE__COMP_NODE) {
        op->kind = ICS_TOP_COMPUTE;
        if (attr_int(n, "icsim_duration_ps", &v) && v >= 0)
            op->duration_ps = v > 0 ? v : 1;
        else if (n->duration_micros > 0 && n->duration_micros < (UINT64_C(1) << 40))
            op->duration_ps = (ics_time)n->duration_micros * ICS_PS_PER_US;
        else {
            bool flops = attr_num(n, "num_ops", &op->flops);
            bool bytes = attr_num(n, "tensor_size", &op->mem_bytes);
            if (!flops && !bytes)
                op->duration_ps = 1; /* no time and no work: an empty kernel */
        }
        op->dtype = ICS_DTYPE_BF16;
        if (attr_int(n, "icsim_work", &v) && v >= 0 && v < ICS_WORK_KIND_COUNT)
            op->work = (ics_work_kind)v;
        if (op->flops < 0 || op->mem_bytes < 0)
            what = "num_ops and tensor_size >= 0";
    } else if (n->type == CHAKRA_PROTO_MSG__NODE_TYPE__COMM_COLL_NODE) {
        op->kind = ICS_TOP_COLL;
        op->cat = cat ? op->cat : ICS_CAT_OTHER;
        bool known = false;
        if (attr_int(n, "comm_type", &v))
            for (size_t i = 0; i < G_N_ELEMENTS(coll_map); i++)
                if (coll_map[i].chakra == v) {
                    op->coll.op = coll_map[i].op;
                    known = true;
                }
        if (!known)
            what = "comm_type: ALL_REDUCE, REDUCE, ALL_GATHER, BROADCAST, ALL_TO_ALL or "
                   "REDUCE_SCATTER";
        else if (!attr_int(n, "comm_size", &v) || v < 1 || v >= (INT64_C(1) << 50))
            what = "comm_size: a byte count 1 .. 2^50 - 1";
        op->coll.size_bytes = (uint64_t)MAX(v, 0);
        op->coll.dtype_bytes = 2;
        if (attr_int(n, "icsim_dtype_bytes", &v) && v >= 1 && v <= 8)
            op->coll.dtype_bytes = (int)v;
        if (!what && (op->comm = comm_of(r, attr_str(n, "pg_name"), idx, n->id)) < 0)
            return false;
        if (!what && attr_int(n, "root", &v)) {
            int members;
            ics_trace_comm_ranks(r->t, op->comm, &members);
            if (v < 0 || v >= members)
                what = "root: an index into the communicator";
            op->coll.root = (int)MAX(v, 0);
        }
    } else {
        bool send = n->type == CHAKRA_PROTO_MSG__NODE_TYPE__COMM_SEND_NODE;
        op->kind = send ? ICS_TOP_SEND : ICS_TOP_RECV;
        op->cat = cat ? op->cat : ICS_CAT_OTHER;
        if (!attr_int(n, send ? "comm_dst" : "comm_src", &v) || v < 0 || v >= r->nranks ||
            v == r->rank)
            what = send ? "comm_dst: another rank of the trace"
                        : "comm_src: another rank of the "
                          "trace";
        op->peer = (int)MAX(v, 0);
        if (!what && (!attr_int(n, "comm_size", &v) || v < 1 || v >= (INT64_C(1) << 50)))
            what = "comm_size: a byte count 1 .. 2^50 - 1";
        op->bytes = (uint64_t)MAX(v, 0);
    }
    if (what)
        return fail(r, g_strdup_printf("%s: node %zu (id %" PRIu64 ", \"%s\"): expected %s",
                                       r->file, idx, n->id, n->name ? n->name : "", what));
    const char *stream = attr_str(n, "icsim_stream");
    op->stream = stream_of(r, stream && *stream             ? stream
                              : op->kind == ICS_TOP_COMPUTE ? "compute"
                                                            : "comm");
    return true;
}

static bool does_work(const node *n)
{
    switch (n->type) {
    case CHAKRA_PROTO_MSG__NODE_TYPE__COMP_NODE:
        return !attr_true(n, "is_cpu_op");
    case CHAKRA_PROTO_MSG__NODE_TYPE__COMM_COLL_NODE:
    case CHAKRA_PROTO_MSG__NODE_TYPE__COMM_SEND_NODE:
    case CHAKRA_PROTO_MSG__NODE_TYPE__COMM_RECV_NODE:
        return true;
    default:
        return false;
    }
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

/* Dependencies first (Kahn's algorithm, ties in file order); false on a cycle or a dangling
 * dependency. order: node indices. */
static bool topo_order(reader *r, node **nodes, size_t n, GHashTable *by_id, size_t *order)
{
    int *indeg = g_new0(int, n + 1);
    GArray **succ = g_new0(GArray *, n + 1);
    bool ok = true;
    for (size_t i = 0; i < n && ok; i++) {
        const node *x = nodes[i];
        for (int kind = 0; kind < 2 && ok; kind++) {
            size_t nd = kind ? x->n_ctrl_deps : x->n_data_deps;
            const uint64_t *deps = kind ? x->ctrl_deps : x->data_deps;
            for (size_t d = 0; d < nd && ok; d++) {
                gpointer p = g_hash_table_lookup(by_id, &deps[d]);
                if (!p) {
                    ok = fail(r, g_strdup_printf("%s: node %zu (id %" PRIu64 "): expected "
                                                 "dependencies on nodes of the file, got id "
                                                 "%" PRIu64,
                                                 r->file, i, x->id, deps[d]));
                    break;
                }
                size_t from = (size_t)GPOINTER_TO_SIZE(p) - 1;
                if (!succ[from])
                    succ[from] = g_array_new(FALSE, FALSE, sizeof(size_t));
                g_array_append_val(succ[from], i);
                indeg[i]++;
            }
        }
    }
    /* ready nodes in a min-heap by file position: a file already in dependency order reads
     * back in its own order */
    GArray *heap = g_array_new(FALSE, FALSE, sizeof(size_t));
    size_t done = 0;
    for (size_t i = 0; i < n && ok; i++)
        if (indeg[i] == 0)
            heap_push(heap, i);
    while (ok && heap->len > 0) {
        size_t i = heap_pop(heap);
        order[done++] = i;
        for (guint k = 0; succ[i] && k < succ[i]->len; k++) {
            size_t s = g_array_index(succ[i], size_t, k);
            if (--indeg[s] == 0)
                heap_push(heap, s);
        }
    }
    if (ok && done < n)
        ok = fail(r, g_strdup_printf("%s: expected dependencies without a cycle, got %zu nodes "
                                     "on or behind a cycle",
                                     r->file, n - done));
    g_array_free(heap, TRUE);
    for (size_t i = 0; i < n; i++)
        if (succ[i])
            g_array_free(succ[i], TRUE);
    g_free(succ);
    g_free(indeg);
    return ok;
}

/* The ops' dependencies: a node's deps that do work, and through the ones that do not, their
 * deps, transitively (memoized per node as a sorted, duplicate-free op list). */
static void collect_deps(node **nodes, size_t i, GHashTable *by_id, const int *op_of, GArray **memo,
                         GArray *out)
{
    const node *x = nodes[i];
    /* in icsim's own files control dependencies are the stream order, which the stream named
     * by icsim_stream imposes again: reading them as deps too would only add redundant ones */
    int kinds = attr_str(x, "icsim_stream") ? 1 : 2;
    for (int kind = 0; kind < kinds; kind++) {
        size_t nd = kind ? x->n_ctrl_deps : x->n_data_deps;
        const uint64_t *deps = kind ? x->ctrl_deps : x->data_deps;
        for (size_t d = 0; d < nd; d++) {
            size_t j = (size_t)GPOINTER_TO_SIZE(g_hash_table_lookup(by_id, &deps[d])) - 1;
            if (op_of[j] >= 0) {
                g_array_append_val(out, op_of[j]);
            } else {
                if (!memo[j]) {
                    memo[j] = g_array_new(FALSE, FALSE, sizeof(int));
                    collect_deps(nodes, j, by_id, op_of, memo, memo[j]);
                }
                g_array_append_vals(out, memo[j]->data, memo[j]->len);
            }
        }
    }
}

static int cmp_int(gconstpointer a, gconstpointer b)
{
    return *(const int *)a - *(const int *)b;
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

static bool add_ops(reader *r, node **nodes, size_t n)
{
    GHashTable *by_id = g_hash_table_new(g_int64_hash, g_int64_equal);
    for (size_t i = 0; i < n; i++) {
        if (g_hash_table_contains(by_id, &nodes[i]->id)) {
            g_hash_table_destroy(by_id);
            return fail(r,
                        g_strdup_printf("%s: node %zu: expected a unique id, got %" PRIu64 " again",
                                        r->file, i, nodes[i]->id));
        }
        g_hash_table_insert(by_id, &nodes[i]->id, GSIZE_TO_POINTER(i + 1));
    }
    size_t *order = g_new(size_t, n + 1);
    int *op_of = g_new(int, n + 1);
    GArray **memo = g_new0(GArray *, n + 1);
    bool ok = topo_order(r, nodes, n, by_id, order);
    for (size_t i = 0; i < n; i++)
        op_of[i] = -1;
    GArray *deps = g_array_new(FALSE, FALSE, sizeof(int));
    for (size_t k = 0; k < n && ok; k++) {
        size_t i = order[k];
        if (!does_work(nodes[i]))
            continue;
        ics_trace_op op = {0};
        if (!(ok = node_op(r, nodes[i], i, &op)))
            break;
        g_array_set_size(deps, 0);
        collect_deps(nodes, i, by_id, op_of, memo, deps);
        unique_sorted(deps);
        op_of[i] =
            ics_trace_add_op(r->t, r->rank, &op, (const int *)(void *)deps->data, (int)deps->len);
    }
    for (size_t i = 0; i < n; i++)
        if (memo[i])
            g_array_free(memo[i], TRUE);
    g_array_free(deps, TRUE);
    g_free(memo);
    g_free(op_of);
    g_free(order);
    g_hash_table_destroy(by_id);
    return ok;
}

/* Streams icsim wrote in the metadata ("icsim_streams", newline-separated), created in order. */
static void meta_streams(reader *r, const ChakraProtoMsg__GlobalMetadata *m)
{
    for (size_t i = 0; i < m->n_attr; i++) {
        const attr *a = m->attr[i];
        if (!a->name || strcmp(a->name, "icsim_streams") != 0 ||
            a->value_case != CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_STRING_VAL)
            continue;
        char **names = g_strsplit(a->string_val, "\n", -1);
        for (char **s = names; *s; s++)
            if (**s)
                stream_of(r, *s);
        g_strfreev(names);
    }
}

static bool read_rank_data(reader *r, const char *path, const uint8_t *data, size_t len)
{
    GArray *fr = g_array_new(FALSE, FALSE, sizeof(size_t) * 2);
    GPtrArray *nodes = g_ptr_array_new();
    r->streams = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    bool ok = frames(r, (const uint8_t *)data, len, fr);
    if (ok && fr->len == 0)
        ok = fail(
            r, g_strdup_printf("%s: expected a GlobalMetadata message, got an empty file", path));
    for (guint i = 0; ok && i < fr->len; i++) {
        const size_t *f = &g_array_index(fr, size_t, 2 * i);
        const uint8_t *p = (const uint8_t *)data + f[0];
        if (i == 0) {
            ChakraProtoMsg__GlobalMetadata *m =
                chakra_proto_msg__global_metadata__unpack(NULL, f[1], p);
            if (!m)
                ok = fail(r, g_strdup_printf("%s: message 0: expected a GlobalMetadata", path));
            else
                meta_streams(r, m);
            chakra_proto_msg__global_metadata__free_unpacked(m, NULL);
            continue;
        }
        node *x = chakra_proto_msg__node__unpack(NULL, f[1], p);
        if (!x)
            ok = fail(r, g_strdup_printf("%s: message %u: expected a Node", path, i));
        else
            g_ptr_array_add(nodes, x);
    }
    if (ok)
        ok = add_ops(r, (node **)nodes->pdata, nodes->len);
    g_hash_table_destroy(r->streams);
    for (guint i = 0; i < nodes->len; i++)
        chakra_proto_msg__node__free_unpacked(g_ptr_array_index(nodes, i), NULL);
    g_ptr_array_free(nodes, TRUE);
    g_array_free(fr, TRUE);
    return ok;
}

static bool read_rank(reader *r, const char *path)
{
    char *data = NULL;
    gsize len = 0;
    GError *ge = NULL;
    if (!g_file_get_contents(path, &data, &len, &ge)) {
        fail(r, g_strdup_printf("%s: cannot read: %s", path, ge->message));
        g_error_free(ge);
        return false;
    }
    bool ok = read_rank_data(r, path, (const uint8_t *)data, len);
    g_free(data);
    return ok;
}

/* ---- the groups file and the prefix --------------------------------------------------------- */

static void free_ranks(gpointer a)
{
    g_array_free(a, TRUE);
}

/* {"name": [ranks...], ...}, with located errors. */
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
                if (v < 0 || v >= nranks || v != (int)v || seen[(int)v]) {
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
    reader r = {.nranks = nranks,
                .comms = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL)};
    char *gpath =
        comm_groups ? g_strdup(comm_groups) : g_strdup_printf("%s.comm_groups.json", prefix);
    GPtrArray *order = g_ptr_array_new_with_free_func(g_free);
    if (comm_groups || g_file_test(gpath, G_FILE_TEST_IS_REGULAR))
        r.groups = read_groups(gpath, nranks, order, &r.err);
    if (!r.err) {
        r.t = ics_trace_new(nranks);
        /* communicators in the groups file's order, so a written trace reads back the same */
        for (guint i = 0; i < order->len; i++)
            comm_of(&r, g_ptr_array_index(order, i), 0, 0);
        for (int k = 0; k < nranks && !r.err; k++) {
            char *f = g_strdup_printf("%s.%d.et", prefix, k);
            r.file = f;
            r.rank = k;
            read_rank(&r, f);
            g_free(f);
        }
    }
    char *why = NULL;
    if (!r.err && !ics_trace_check(r.t, &why))
        r.err = g_strdup_printf("%s: %s", prefix, why);
    g_free(why);
    if (r.err) {
        ics_trace_free(r.t);
        r.t = NULL;
        *err = r.err;
    }
    if (r.groups)
        g_hash_table_destroy(r.groups);
    g_hash_table_destroy(r.comms);
    g_ptr_array_free(order, TRUE);
    g_free(gpath);
    g_free(prefix);
    return r.t;
}

ics_trace *ics_trace_read_chakra_mem(const char *name, int nranks, const uint8_t *const *data,
                                     const size_t *len, char **err)
{
    *err = NULL;
    reader r = {.nranks = nranks,
                .comms = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL),
                .file = name};
    r.t = ics_trace_new(nranks);
    for (int k = 0; k < nranks && !r.err; k++) {
        r.rank = k;
        read_rank_data(&r, name, data[k], len[k]);
    }
    char *why = NULL;
    if (!r.err && !ics_trace_check(r.t, &why))
        r.err = g_strdup_printf("%s: %s", name, why);
    g_free(why);
    g_hash_table_destroy(r.comms);
    if (r.err) {
        ics_trace_free(r.t);
        *err = r.err;
        return NULL;
    }
    return r.t;
}
