/* The routes' memo (net_routes.h says why). Bounded: a network whose memo would hold more than
 * ROUTES_MAX routes or PATHS_MAX paths starts it again, so its memory stays under ~40 MiB (a
 * path is ~0.14 KiB: 32 channels inline; a route across the fabric has one a queue pair, up to
 * 128 with NCCL_IB_QPS_PER_CONNECTION, one across NVSwitches one a switch). 2^16 routes were
 * too few for a 1 GiB all-to-all on 256 GPUs (65,280 pairs, several hashes each): it started
 * again before its keys came back, 10% slower than without it.
 *
 * A memo only pays where keys come back. Where they do not (an all-to-all: each pair's chunks
 * once or twice) the table's inserts and its memory cost more than the routes: on 540 Polaris
 * GPUs, a 1 GiB all-to-all ran 10% slower with a memo that stayed in use at a quarter of its
 * lookups hitting. So it watches itself: over each WINDOW of lookups, if fewer than half hit, it
 * lets what it holds go and the next BYPASS lookups build their route without it (as before the
 * memo), then it tries again. A training step, whose pipeline and ring sends repeat every
 * micro-batch, stays in the memo. (Under adaptive routing the chosen route is looked up a second
 * time, a hit that counts: the rate reads a little high there.) */
#include "net/net_routes.h"

#define ROUTES_MAX (1 << 18)
#define PATHS_MAX  (1 << 18)
#define WINDOW     4096
#define BYPASS     (16 * WINDOW)

typedef struct {
    int src, dst;
    uint64_t hash;
} route_key;

typedef struct {
    route_key key;
    bool ok; /* ics_route_find found one */
    ics_route r;
} route_entry;

struct ics_net_routes {
    const ics_topo *t;
    GHashTable *table; /* route_entry by its key (the entry's first member), owned */
    int lookups, hits; /* in the current window */
    int64_t paths;     /* held in the table */
    int bypass;        /* lookups left to build without the memo */
    ics_route scratch; /* the last route built without it (its room reused by the next) */
};

static guint key_hash(gconstpointer p)
{
    const route_key *k = p;
    uint64_t h = k->hash * 0x9e3779b97f4a7c15ULL;
    h ^= ((uint64_t)(uint32_t)k->src << 32 | (uint32_t)k->dst) * 0xc2b2ae3d27d4eb4fULL;
    return (guint)(h ^ h >> 29);
}

static gboolean key_equal(gconstpointer a, gconstpointer b)
{
    const route_key *x = a, *y = b;
    return x->src == y->src && x->dst == y->dst && x->hash == y->hash;
}

static void entry_free(gpointer p)
{
    route_entry *e = p;
    ics_route_clear(&e->r);
    g_free(e);
}

ics_net_routes *ics_net_routes_new(const ics_topo *t)
{
    ics_net_routes *m = g_new0(ics_net_routes, 1);
    m->t = t;
    m->table = g_hash_table_new_full(key_hash, key_equal, NULL, entry_free);
    return m;
}

void ics_net_routes_free(ics_net_routes *m)
{
    if (!m)
        return;
    g_hash_table_destroy(m->table);
    ics_route_clear(&m->scratch);
    g_free(m);
}

/* Past a window: whether the memo paid in it; if not, the next BYPASS lookups go without. */
static void window_end(ics_net_routes *m)
{
    if (++m->lookups < WINDOW)
        return;
    if (m->hits < WINDOW / 2) { /* and what it holds did not pay either */
        m->bypass = BYPASS;
        g_hash_table_remove_all(m->table);
        m->paths = 0;
    }
    m->lookups = m->hits = 0;
}

/* Its paths in an array of their own size (ics_route_find leaves room for more): a route
 * across the fabric is one path, and the memo's memory is mostly its paths. */
static void compact(ics_route *r)
{
    if (r->room == r->n_paths)
        return;
    ics_route_path *p = r->n_paths ? g_memdup2(r->paths, sizeof *p * (size_t)r->n_paths) : NULL;
    g_free(r->paths);
    r->paths = p;
    r->room = r->n_paths;
}

const ics_route *ics_net_routes_find(ics_net_routes *m, int src, int dst, uint64_t hash)
{
    if (m->bypass == 0)
        window_end(m); /* which may start a bypass, from this lookup on */
    if (m->bypass > 0) {
        m->bypass--;
        return ics_route_find_again(m->t, src, dst, hash, &m->scratch) ? &m->scratch : NULL;
    }
    route_key k = {.src = src, .dst = dst, .hash = hash};
    route_entry *e = g_hash_table_lookup(m->table, &k);
    m->hits += e != NULL;
    if (!e) {
        e = g_new0(route_entry, 1);
        e->key = k;
        e->ok = ics_route_find(m->t, src, dst, hash, &e->r);
        compact(&e->r);
        if (g_hash_table_size(m->table) >= ROUTES_MAX || m->paths + e->r.n_paths > PATHS_MAX) {
            g_hash_table_remove_all(m->table);
            m->paths = 0;
        }
        m->paths += e->r.n_paths;
        g_hash_table_insert(m->table, &e->key, e);
    }
    return e->ok ? &e->r : NULL;
}

unsigned ics_net_routes_held(const ics_net_routes *m)
{
    return g_hash_table_size(m->table);
}
