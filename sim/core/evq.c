/* Monotone radix event queue (see evq.h for the structure and why it beats a heap here).
 * Invariant: every key is >= q->floor; a bucketed entry sits in bucket (L, d) where L is the
 * highest byte in which its key differs from floor (0 if equal) and d is its key's byte L; equal
 * keys share a bucket (or the bottom), and buckets and the bottom keep push order among ties. */
#include "core/evq.h"

#include <glib.h>

#define EVQ_LEVELS      8
#define EVQ_DIGITS      256
#define EVQ_CHUNK       32   /* entries per chunk: 1.3 KB, long enough to stream through */
#define EVQ_SLAB_CHUNKS 64   /* chunks allocated at once when the pool runs dry */
#define EVQ_COMPACT_MIN 4096 /* tombstones tolerated before compaction is considered */
#define EVQ_SMALL_SORT  32   /* buckets up to this size are insertion-sorted into the bottom */
/* Level-1 buckets up to this size are sorted into the bottom (two passes over the bucket);
 * bigger ones are split into level 0 in one pass, which streams better (+30% events/s with
 * 1 M pending and delays up to 1 ns, where a level-1 bucket holds ~250 k events). */
#define EVQ_BOTTOM_MAX 65536
/* Each pop stores to its record's gen, a line that is usually cold (the record was last touched
 * when the event was pushed). Without prefetching, those misses cost 2.6x on the hold model. The
 * records of a bucket of at most EVQ_PREFETCH_ALL entries are fetched when the bucket is split or
 * sorted (all of them pop soon); in bigger bottoms and level-0 buckets, pops fetch the record
 * EVQ_LOOKAHEAD entries ahead. */
#define EVQ_PREFETCH_ALL 256
#define EVQ_LOOKAHEAD    16

typedef struct {
    uint64_t key; /* the time with its sign bit flipped: unsigned order == signed order */
    ics_event_fn fn;
    void *ctx;
    uint64_t arg;
    uint32_t slot;
    uint32_t gen; /* the slot's generation at push; differs from gen[slot] once cancelled */
} evq_entry;

/* Every chunk of a bucket but its tail is full, so only the bucket counts entries. */
typedef struct evq_chunk {
    struct evq_chunk *next;
    evq_entry e[EVQ_CHUNK];
} evq_chunk;

typedef struct {
    evq_chunk *head; /* NULL iff the bucket is empty */
    evq_chunk *tail;
    uint32_t pos;    /* entries of head already popped (only level 0 is popped from) */
    uint32_t tail_n; /* entries in tail; EVQ_CHUNK when empty, so one test covers both */
    size_t n;        /* entries appended since the bucket was last empty */
} evq_bucket;

struct ics_evq {
    uint64_t floor; /* key of the last pop (or a bucket's lower bound); all keys >= floor */
    size_t live;    /* pending events */
    size_t stale;   /* cancelled entries still in buckets */
    uint32_t level_mask;
    uint64_t bits[EVQ_LEVELS][EVQ_DIGITS / 64]; /* non-empty buckets */
    evq_bucket b[EVQ_LEVELS][EVQ_DIGITS];

    /* Slot s is live iff gen[s] is odd. A cancelled slot has an even gen but is not on the free
     * stack until its tombstone is dropped, so a tombstone can never match a reused slot. */
    uint32_t *gen;
    uint64_t *free_slots; /* (gen << 32) | slot: alloc need not read the (cold) gen array */
    uint32_t nslots, cap_slots, nfree;

    /* The bottom: the entries of the last level-1 bucket, sorted (stable) by key. Later pushes
     * into its 256 ps window go to level 0, and pops merge the two (the bottom first on ties:
     * its entries are older). Empty iff bot_head == bot_n. */
    evq_entry *bottom;
    uint32_t bot_head, bot_n, bot_cap;

    evq_chunk *free_chunks;
    evq_chunk **slabs;
    size_t nslabs, cap_slabs;

    /* The last peek's answer, kept up to date by pushes until a pop or a cancel may change it.
     * A co-simulator peeks after each of its steps, pushing between them but popping nothing;
     * without it each peek rescans the earliest bucket, which can hold most of the queue. */
    bool peek_valid, peek_found;
    uint64_t peek_key;
};

static inline uint64_t key_of(ics_time at)
{
    return (uint64_t)at ^ (UINT64_C(1) << 63);
}

static inline ics_time time_of(uint64_t key)
{
    return (ics_time)(key ^ (UINT64_C(1) << 63));
}

static inline unsigned level_of(uint64_t floor, uint64_t key)
{
    /* x | 1 maps "equal" to level 0 without a branch. */
    return (unsigned)(63 - __builtin_clzll((key ^ floor) | 1)) >> 3;
}

static inline uint64_t id_of(uint32_t slot, uint32_t gen)
{
    return ((uint64_t)gen << 32) | slot;
}

static evq_chunk *chunk_get(ics_evq *q)
{
    if (G_UNLIKELY(!q->free_chunks)) {
        if (q->nslabs == q->cap_slabs) {
            q->cap_slabs = q->cap_slabs ? 2 * q->cap_slabs : 16;
            q->slabs = g_renew(evq_chunk *, q->slabs, q->cap_slabs);
        }
        evq_chunk *slab = g_new(evq_chunk, EVQ_SLAB_CHUNKS);
        q->slabs[q->nslabs++] = slab;
        for (size_t i = 0; i < EVQ_SLAB_CHUNKS; i++) {
            slab[i].next = q->free_chunks;
            q->free_chunks = &slab[i];
        }
    }
    evq_chunk *c = q->free_chunks;
    q->free_chunks = c->next;
    c->next = NULL;
    return c;
}

static inline void chunk_put(ics_evq *q, evq_chunk *c)
{
    c->next = q->free_chunks;
    q->free_chunks = c;
}

static inline void bucket_append(ics_evq *q, unsigned l, unsigned d, const evq_entry *e)
{
    evq_bucket *b = &q->b[l][d];
    if (G_UNLIKELY(b->tail_n == EVQ_CHUNK)) {
        evq_chunk *c = chunk_get(q);
        if (b->head) {
            b->tail->next = c;
        } else {
            b->head = c;
            b->pos = 0;
            q->bits[l][d >> 6] |= UINT64_C(1) << (d & 63);
            q->level_mask |= 1u << l;
        }
        b->tail = c;
        b->tail_n = 0;
    }
    b->tail->e[b->tail_n++] = *e;
    b->n++;
}

/* Entries in chunk c of bucket b (consumed ones included). */
static inline uint32_t chunk_len(const evq_bucket *b, const evq_chunk *c)
{
    return c == b->tail ? b->tail_n : EVQ_CHUNK;
}

static inline void bucket_clear(ics_evq *q, unsigned l, unsigned d)
{
    evq_bucket *b = &q->b[l][d];
    b->head = b->tail = NULL;
    b->pos = 0;
    b->tail_n = EVQ_CHUNK;
    b->n = 0;
    q->bits[l][d >> 6] &= ~(UINT64_C(1) << (d & 63));
    if (!(q->bits[l][0] | q->bits[l][1] | q->bits[l][2] | q->bits[l][3]))
        q->level_mask &= ~(1u << l);
}

/* The lowest non-empty bucket; false if all are empty. */
static inline bool bucket_lowest(const ics_evq *q, unsigned *l, unsigned *d)
{
    if (!q->level_mask)
        return false;
    unsigned lv = (unsigned)__builtin_ctz(q->level_mask);
    for (unsigned w = 0;; w++) {
        if (q->bits[lv][w]) {
            *l = lv;
            *d = w * 64 + (unsigned)__builtin_ctzll(q->bits[lv][w]);
            return true;
        }
    }
}

/* Smallest key bucket (l, d) can hold, given the current floor. */
static inline uint64_t bucket_base(uint64_t floor, unsigned l, unsigned d)
{
    unsigned shift = 8 * l;
    uint64_t high = l == EVQ_LEVELS - 1 ? 0 : floor >> (shift + 8) << (shift + 8);
    return high | ((uint64_t)d << shift);
}

static inline void slot_release(ics_evq *q, uint32_t slot, uint32_t free_gen)
{
    q->free_slots[q->nfree++] = ((uint64_t)free_gen << 32) | slot;
}

/* A tombstone's slot goes back to the free stack only when the tombstone leaves the queue;
 * cancel left its gen at the entry's + 1. */
static inline void slot_release_stale(ics_evq *q, const evq_entry *e)
{
    slot_release(q, e->slot, e->gen + 1);
    q->stale--;
}

static inline bool entry_is_stale(const ics_evq *q, const evq_entry *e)
{
    return q->stale && q->gen[e->slot] != e->gen;
}

/* Chunks of a big bucket are scattered and cold: the next one is fetched while the current one
 * is being read (NULL: no-op). Level-1 buckets were just written by a split and are warm; there
 * it only costs (-30% events/s when tried in bucket_to_bottom). */
static inline void chunk_prefetch(const evq_chunk *c)
{
    if (c)
        for (size_t off = 0; off < sizeof(evq_chunk); off += 64)
            __builtin_prefetch((const char *)c + off, 0, 3);
}

/* Moves every entry of bucket (l, d), l > 0, to lower levels; the floor is already its base. */
static void bucket_split(ics_evq *q, unsigned l, unsigned d)
{
    evq_chunk *c = q->b[l][d].head;
    uint32_t tail_n = q->b[l][d].tail_n;
    const bool fetch_gen = q->b[l][d].n <= EVQ_PREFETCH_ALL;
    bucket_clear(q, l, d);
    const uint64_t floor = q->floor;
    const uint32_t *gen = q->gen;
    const bool check_stale = q->stale > 0; /* stale only decreases in here */
    while (c) {
        evq_chunk *next = c->next;
        chunk_prefetch(next);
        uint32_t n = next ? EVQ_CHUNK : tail_n;
        for (uint32_t i = 0; i < n; i++) {
            const evq_entry *e = &c->e[i];
            if (G_UNLIKELY(check_stale) && gen[e->slot] != e->gen) {
                slot_release_stale(q, e);
                continue;
            }
            if (fetch_gen)
                __builtin_prefetch(&gen[e->slot], 1, 3);
            unsigned nl = level_of(floor, e->key);
            bucket_append(q, nl, (unsigned)(e->key >> (8 * nl)) & 0xff, e);
        }
        chunk_put(q, c);
        c = next;
    }
}

/* Moves bucket (1, d) into the (empty) bottom, sorted by key; the floor is already its base,
 * so keys differ only in byte 0. Small buckets: insertion sort; others: counting sort on byte 0.
 * Both are stable, which keeps ties FIFO. */
static void bucket_to_bottom(ics_evq *q, unsigned d)
{
    evq_bucket *b = &q->b[1][d];
    evq_chunk *head = b->head;
    uint32_t tail_n = b->tail_n;
    size_t total = b->n;
    bucket_clear(q, 1, d);
    if (total > q->bot_cap) {
        g_assert(total <= UINT32_MAX);
        g_free(q->bottom);
        q->bot_cap = (uint32_t)MAX(total, 2 * (size_t)q->bot_cap);
        q->bottom = g_new(evq_entry, q->bot_cap);
    }
    uint32_t *gen = q->gen;
    const bool check_stale = q->stale > 0;
    evq_entry *out = q->bottom;
    uint32_t n = 0;
    if (total <= EVQ_SMALL_SORT) {
        for (evq_chunk *c = head; c;) {
            evq_chunk *next = c->next;
            uint32_t cn = next ? EVQ_CHUNK : tail_n;
            for (uint32_t i = 0; i < cn; i++) {
                const evq_entry *e = &c->e[i];
                if (G_UNLIKELY(check_stale) && gen[e->slot] != e->gen) {
                    slot_release_stale(q, e);
                    continue;
                }
                __builtin_prefetch(&gen[e->slot], 1, 3);
                uint32_t j = n++;
                for (; j > 0 && out[j - 1].key > e->key; j--)
                    out[j] = out[j - 1];
                out[j] = *e;
            }
            chunk_put(q, c);
            c = next;
        }
    } else {
        uint32_t start[EVQ_DIGITS] = {0};
        for (const evq_chunk *c = head; c; c = c->next) {
            uint32_t cn = c->next ? EVQ_CHUNK : tail_n;
            for (uint32_t i = 0; i < cn; i++)
                if (!check_stale || gen[c->e[i].slot] == c->e[i].gen)
                    start[c->e[i].key & 0xff]++;
        }
        for (unsigned k = 0, sum = 0; k < EVQ_DIGITS; k++) {
            uint32_t cnt = start[k];
            start[k] = sum;
            sum += cnt;
            n = sum;
        }
        for (evq_chunk *c = head; c;) {
            evq_chunk *next = c->next;
            uint32_t cn = next ? EVQ_CHUNK : tail_n;
            for (uint32_t i = 0; i < cn; i++) {
                const evq_entry *e = &c->e[i];
                if (G_UNLIKELY(check_stale) && gen[e->slot] != e->gen) {
                    slot_release_stale(q, e);
                    continue;
                }
                if (total <= EVQ_PREFETCH_ALL)
                    __builtin_prefetch(&gen[e->slot], 1, 3);
                out[start[e->key & 0xff]++] = *e;
            }
            chunk_put(q, c);
            c = next;
        }
    }
    if (total > EVQ_PREFETCH_ALL)
        for (uint32_t i = 0; i < EVQ_LOOKAHEAD && i < n; i++)
            __builtin_prefetch(&gen[out[i].slot], 1, 3);
    q->bot_head = 0;
    q->bot_n = n;
}

/* Drops every tombstone, keeping each bucket's order. O(pending + tombstones). */
static void compact(ics_evq *q)
{
    for (unsigned l = 0; l < EVQ_LEVELS; l++) {
        for (unsigned d = 0; d < EVQ_DIGITS; d++) {
            evq_bucket *b = &q->b[l][d];
            if (!b->head)
                continue;
            evq_chunk *c = b->head;
            uint32_t i = b->pos;
            uint32_t tail_n = b->tail_n;
            bucket_clear(q, l, d);
            while (c) {
                uint32_t n = c->next ? EVQ_CHUNK : tail_n;
                for (; i < n; i++) {
                    if (entry_is_stale(q, &c->e[i]))
                        slot_release_stale(q, &c->e[i]);
                    else
                        bucket_append(q, l, d, &c->e[i]);
                }
                evq_chunk *next = c->next;
                chunk_put(q, c); /* fully read: safe to reuse for the appends above */
                c = next;
                i = 0;
            }
        }
    }
    uint32_t kept = q->bot_head;
    for (uint32_t i = q->bot_head; i < q->bot_n; i++) {
        if (entry_is_stale(q, &q->bottom[i]))
            slot_release_stale(q, &q->bottom[i]);
        else
            q->bottom[kept++] = q->bottom[i];
    }
    q->bot_n = kept;
    g_assert(q->stale == 0);
}

ics_evq *ics_evq_new(size_t capacity_hint)
{
    ics_evq *q = g_new0(ics_evq, 1);
    for (unsigned l = 0; l < EVQ_LEVELS; l++)
        for (unsigned d = 0; d < EVQ_DIGITS; d++)
            q->b[l][d].tail_n = EVQ_CHUNK;
    q->floor = 0; /* key 0 is INT64_MIN: any time may be pushed first */
    size_t cap = capacity_hint < 64 ? 64 : capacity_hint;
    g_assert(cap <= UINT32_MAX);
    q->cap_slots = (uint32_t)cap;
    q->gen = g_new(uint32_t, q->cap_slots);
    q->free_slots = g_new(uint64_t, q->cap_slots);
    return q;
}

void ics_evq_free(ics_evq *q)
{
    if (!q)
        return;
    for (size_t i = 0; i < q->nslabs; i++)
        g_free(q->slabs[i]);
    g_free(q->slabs);
    g_free(q->bottom);
    g_free(q->gen);
    g_free(q->free_slots);
    g_free(q);
}

/* Takes a free record and makes it live; returns its slot, its new (odd) gen in *gen. */
static inline uint32_t slot_alloc(ics_evq *q, uint32_t *gen)
{
    uint32_t s, g;
    if (G_LIKELY(q->nfree)) {
        uint64_t v = q->free_slots[--q->nfree];
        s = (uint32_t)v;
        g = (uint32_t)(v >> 32) + 1;
    } else {
        if (q->nslots == q->cap_slots) {
            g_assert(q->cap_slots <= UINT32_MAX / 2);
            q->cap_slots *= 2;
            q->gen = g_renew(uint32_t, q->gen, q->cap_slots);
            q->free_slots = g_renew(uint64_t, q->free_slots, q->cap_slots);
        }
        s = q->nslots++;
        g = 1;
    }
    q->gen[s] = g; /* a plain store: the line is often cold, and nothing waits on it */
    *gen = g;
    return s;
}

ics_event_id ics_evq_push(ics_evq *q, ics_time at, ics_event_fn fn, void *ctx, uint64_t arg)
{
    uint64_t key = key_of(at);
    if (G_UNLIKELY(key < q->floor)) {
        /* Popping tombstones raises the floor past what the caller has seen; that can only
         * leave it above the caller's bound once nothing at all is left (pop_until(MAX) drained
         * the queue). Otherwise the caller broke the monotone contract. */
        g_assert(q->level_mask == 0 && q->bot_head == q->bot_n);
        q->floor = key;
    }
    uint32_t g;
    uint32_t s = slot_alloc(q, &g);
    evq_entry e = {.key = key, .fn = fn, .ctx = ctx, .arg = arg, .slot = s, .gen = g};
    unsigned l = level_of(q->floor, key);
    bucket_append(q, l, (unsigned)(key >> (8 * l)) & 0xff, &e);
    q->live++;
    if (q->peek_valid && (!q->peek_found || key < q->peek_key)) {
        q->peek_found = true;
        q->peek_key = key;
    }
    return id_of(s, e.gen);
}

bool ics_evq_cancel(ics_evq *q, ics_event_id id)
{
    uint32_t s = (uint32_t)id;
    uint32_t g = (uint32_t)(id >> 32);
    if (s >= q->nslots || !(g & 1) || q->gen[s] != g)
        return false;
    q->gen[s] = g + 1; /* stale; the slot is freed when its tombstone leaves */
    q->live--;
    q->peek_valid = false;
    q->stale++;
    if (q->stale > EVQ_COMPACT_MIN && q->stale > q->live)
        compact(q);
    return true;
}

/* Removes the head of level-0 bucket d, whose entries all have key (floor & ~0xff) | d. */
static evq_entry level0_take(ics_evq *q, unsigned d)
{
    evq_bucket *b = &q->b[0][d];
    evq_chunk *c = b->head;
    uint32_t ahead = b->pos + EVQ_LOOKAHEAD;
    if (ahead < chunk_len(b, c))
        __builtin_prefetch(&q->gen[c->e[ahead].slot], 1, 3);
    else if (c->next && ahead - EVQ_CHUNK < chunk_len(b, c->next))
        __builtin_prefetch(&q->gen[c->next->e[ahead - EVQ_CHUNK].slot], 1, 3);
    evq_entry e = c->e[b->pos++];
    if (b->pos == chunk_len(b, c)) {
        if (c->next) {
            b->head = c->next;
            b->pos = 0;
        } else {
            bucket_clear(q, 0, d);
        }
        chunk_put(q, c);
    }
    return e;
}

static inline unsigned level0_lowest(const ics_evq *q)
{
    for (unsigned w = 0;; w++)
        if (q->bits[0][w])
            return w * 64 + (unsigned)__builtin_ctzll(q->bits[0][w]);
}

/* Removes the earliest entry, live or not, into *e if its key is <= until_key. */
static bool take_next(ics_evq *q, uint64_t until_key, evq_entry *e)
{
    for (;;) {
        if (q->bot_head < q->bot_n) {
            /* Everything above level 0 is later than the bottom's window; level 0 holds what
             * was pushed into the window after it was sorted, so the bottom wins ties. */
            const evq_entry *be = &q->bottom[q->bot_head];
            if (G_UNLIKELY(q->level_mask & 1)) {
                unsigned d0 = level0_lowest(q);
                uint64_t k0 = (q->floor & ~UINT64_C(0xff)) | d0;
                if (k0 < be->key) {
                    if (k0 > until_key)
                        return false;
                    *e = level0_take(q, d0);
                    return true;
                }
            }
            if (be->key > until_key)
                return false;
            if (q->bot_head + EVQ_LOOKAHEAD < q->bot_n)
                __builtin_prefetch(&q->gen[be[EVQ_LOOKAHEAD].slot], 1, 3);
            *e = *be;
            q->bot_head++;
            return true;
        }
        unsigned l, d;
        if (!bucket_lowest(q, &l, &d))
            return false;
        uint64_t base = bucket_base(q->floor, l, d);
        if (base > until_key)
            return false;
        if (l == 0) {
            *e = level0_take(q, d);
            return true;
        }
        /* Raising the floor to base is safe: base <= until, and every key is >= base. */
        q->floor = base;
        if (l == 1 && q->b[1][d].n <= EVQ_BOTTOM_MAX)
            bucket_to_bottom(q, d);
        else
            bucket_split(q, l, d);
    }
}

bool ics_evq_pop_until(ics_evq *q, ics_time until, ics_event *out)
{
    const uint64_t until_key = key_of(until);
    evq_entry e;
    while (take_next(q, until_key, &e)) {
        q->floor = e.key;
        if (G_UNLIKELY(entry_is_stale(q, &e))) {
            slot_release_stale(q, &e);
            continue;
        }
        /* A plain store, not gen[slot]++: the record is usually cold, and nothing waits on it. */
        q->gen[e.slot] = e.gen + 1;
        slot_release(q, e.slot, e.gen + 1);
        q->live--;
        q->peek_valid = false;
        out->at = time_of(e.key);
        out->fn = e.fn;
        out->ctx = e.ctx;
        out->arg = e.arg;
        out->id = id_of(e.slot, e.gen);
        return true;
    }
    return false;
}

bool ics_evq_pop(ics_evq *q, ics_event *out)
{
    return ics_evq_pop_until(q, ICS_TIME_MAX, out);
}

/* The least live key in bucket b, if it has a live entry. A level-0 bucket's entries share one
 * key, so its first live entry answers (a scan of the whole bucket, once per pop, made draining
 * 100,000 events of one instant quadratic). */
static bool bucket_min_live(const ics_evq *q, const evq_bucket *b, bool one_key, uint64_t *min)
{
    bool found = false;
    uint32_t i = b->pos;
    for (const evq_chunk *c = b->head; c; c = c->next, i = 0) {
        for (uint32_t n = chunk_len(b, c); i < n; i++) {
            if (!entry_is_stale(q, &c->e[i]) && (!found || c->e[i].key < *min)) {
                *min = c->e[i].key;
                found = true;
                if (one_key)
                    return true;
            }
        }
    }
    return found;
}

bool ics_evq_peek_time(ics_evq *q, ics_time *at)
{
    if (q->peek_valid) {
        if (q->peek_found)
            *at = time_of(q->peek_key);
        return q->peek_found;
    }
    /* The bottom and level 0 share the earliest window; every other bucket is later, and
     * buckets are ordered by (level, digit). Tombstones may leave any of them without a live
     * entry, hence the scans. */
    bool found = false;
    uint64_t best = UINT64_MAX;
    for (uint32_t i = q->bot_head; i < q->bot_n && !found; i++) {
        if (!entry_is_stale(q, &q->bottom[i])) {
            best = q->bottom[i].key;
            found = true;
        }
    }
    for (unsigned l = 0; l < EVQ_LEVELS && !(found && l > 0); l++) {
        for (unsigned d = 0; d < EVQ_DIGITS; d++) {
            uint64_t m = UINT64_MAX; /* read only when found (quiets -O3 -Werror) */
            if (q->b[l][d].head && bucket_min_live(q, &q->b[l][d], l == 0, &m)) {
                best = found ? MIN(best, m) : m;
                found = true;
                break;
            }
        }
    }
    if (found)
        *at = time_of(best);
    q->peek_valid = true;
    q->peek_found = found;
    q->peek_key = best;
    return found;
}

size_t ics_evq_size(const ics_evq *q)
{
    return q->live;
}

size_t ics_evq_capacity(const ics_evq *q)
{
    return q->nslots;
}

size_t ics_evq_memory_bytes(const ics_evq *q)
{
    return sizeof(*q) + (size_t)q->cap_slots * (sizeof(uint32_t) + sizeof(uint64_t)) +
           q->nslabs * EVQ_SLAB_CHUNKS * sizeof(evq_chunk) + q->cap_slabs * sizeof(evq_chunk *) +
           (size_t)q->bot_cap * sizeof(evq_entry);
}
