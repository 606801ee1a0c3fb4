/* Shared by the analytic backend's files (net_analytic.c: transfers, the fair share, locality,
 * the ops; net_analytic_dom.c: which resources can bind a flow). Not a public header:
 * names carry the ics_an_ prefix and only those files include it. The model and its costs are
 * described at the top of net_analytic.c. */
#ifndef ICS_NET_ANALYTIC_INTERNAL_H
#define ICS_NET_ANALYTIC_INTERNAL_H

#include <glib.h>

#include "net/net.h"
#include "net/net_routes.h"

typedef struct ics_an_xfer ics_an_xfer;
typedef struct ics_an_net ics_an_net;

/* (24 bytes: every fair share walks all of them. The fair share's arithmetic is in double: a
 * rate's relative rounding, 1e-16, is far below AN_TOL; only a flow's work, picoseconds up to
 * the horizon, needs long double's 64-bit mantissa.) */
typedef struct {
    int res;        /* a channel id, or nchans + device id for a switch's reduction unit */
    int pos;        /* while the flow is active: its index in the resource's list (n->on) */
    uint64_t bytes; /* payload it carries over the flow's life (channel accounting) */
    double coef;    /* resource bytes consumed per payload byte of the flow */
} ics_an_use;

/* (What the fair share reads of the flow itself, together: use, n_use, slot, mark, r0, speed,
 * ev; the rest is in its slot's ics_an_slot.) */
typedef struct {
    ics_an_use *use; /* owned */
    int n_use;
    int n_bind;        /* use[0 .. n_bind): resources that may bind it; the rest are dominated */
    int slot;          /* index in the active array while in the fluid phase; else -1 */
    int hid;           /* while active: its handle, n->slot_of[hid] == slot; else -1 */
    uint32_t mark;     /* scratch: in the set being recomputed when == n->epoch */
    long double r0;    /* uncontended payload rate, bytes/ps */
    long double speed; /* rate / r0, in (0, 1]; 0 before the first share */
    ics_event_id ev;   /* fluid end while active, then delivery */
    ics_time t_last;   /* work is up to date at this time */
    long double work;  /* fluid work left, in ps at r0 */
    ics_an_xfer *x;
    uint64_t bytes;     /* payload */
    ics_time offset_ps; /* fixed part, added once the fluid part ends */
} ics_an_flow;

/* An active flow's use of a resource, in the resource's list; the flow's handle beside it, so
 * that a fair share scanning a resource's flows reads whether each is frozen from the dense
 * n->slot_of and n->frozen, not from the flow. A handle, not the slot itself: a flow that ends
 * hands its slot to the last active flow, and with the slot in every ref that move rewrote
 * each of the moved flow's refs, a stream's hundreds of thousands (a 16,384-rank tree moved
 * three times the uses it started); with the handle it is one store. */
typedef struct {
    ics_an_flow *f;
    int u;
    int hid;
} ics_an_ref;

/* A binding use as the fair share reads it. */
typedef struct {
    int res;
    double coef;
} ics_an_bind;

/* Binding uses a slot holds itself: a flow across a fat-tree has 4 (its NICs' and the fabric's
 * links; its PCIe hops are dominated), one across a dragonfly's groups 5 (its global link too),
 * so most flows' shares never leave their slot. With 4, a third of a 1 GiB all-to-all's flows on
 * 96 Polaris nodes (n_bind 5: 50,072 of 147,000) sent every fair share to their flow's own use
 * array, a cache miss each: 540 ranks took 35.6 s, with 5 18.5 s (results identical; the
 * fat-tree all-to-all 2.63 -> 2.64 s, its slots 128 -> 144 bytes). 6 gained nothing more. */
#define BIND_INLINE 5

/* What the fair share reads and writes of an active flow, by its slot: dense, so that a
 * computation over 60,000 flows walks one array in slot order instead of chasing the flows
 * (speed mirrors the flow's), and its binding uses with it (in bind[] up to BIND_INLINE, else
 * the flow's use[0 .. n_bind)): following each flow's own use array missed the cache and the
 * TLB at every flow, most of an all-to-all's run. */
typedef struct {
    long double r0;    /* the flow's */
    long double next;  /* the speed the fair share gives */
    long double speed; /* the flow's */
    const ics_an_use *use;
    int n_bind; /* the flow's binding uses (dominance) */
    ics_an_bind bind[BIND_INLINE];
} ics_an_slot;

static inline int slot_res(const ics_an_slot *s, int u)
{
    return s->n_bind <= BIND_INLINE ? s->bind[u].res : s->use[u].res;
}

static inline double slot_coef(const ics_an_slot *s, int u)
{
    return s->n_bind <= BIND_INLINE ? s->bind[u].coef : s->use[u].coef;
}

/* A flow of a computation by its cap, sorted without touching the flow (a flow's r0 and slot
 * copied beside it: sorting 60,000 pointers by what they point to missed the cache). */
typedef struct {
    double r0;
    int slot;
} ics_an_cap;

/* A resource during a fair-share computation. */
typedef struct {
    double rem;   /* capacity left at level lv, bytes/ps */
    double lv;    /* the level rem is up to date at */
    double load;  /* sum of the unfrozen flows' coefs */
    double sat;   /* the level at which it saturates: lv + rem / load */
    double key;   /* its place in the heap: sat when last placed, never above sat */
    int users;    /* unfrozen flows' uses of it */
    int heap_pos; /* -1: not in the heap */
} ics_an_res;

struct ics_an_xfer {
    ics_an_net *net;
    ics_net_done_fn done;
    void *ctx;
    uint64_t tag;
    uint64_t delivered; /* payload counted in bytes_delivered on completion */
    int n_flows, left;  /* flows, and those not yet delivered */
    ics_an_flow *flows; /* owned */
    ics_event_id ev;    /* completion of a transfer with no flows */
    ics_an_xfer *prev, *next;
};

struct ics_an_net {
    ics_net_base base;
    const ics_topo *t;
    ics_engine *e;
    ics_net_params params;
    int nchans, nres;
    long double *cap;     /* per resource, bytes/ps */
    uint64_t *chan_bytes; /* per channel */
    GPtrArray *active;    /* ics_an_flow *, in fluid phase */
    ics_an_xfer *live;    /* every transfer not yet done, for destroy */
    ics_event_id share_ev;
    ics_net_stats stats;
    /* fair-share scratch: per resource, valid where stamp == epoch */
    ics_an_res *res;
    uint32_t *stamp;
    uint32_t epoch;
    GArray *touched;    /* int: the resources in use */
    uint32_t *frozen;   /* per active slot: frozen in the computation of this epoch */
    ics_an_slot *slots; /* per active slot */
    guint slots_len;
    int *slot_of;        /* per handle: the slot of the active flow holding it */
    GArray *hid_free;    /* int: handles free for reuse, the last freed on top */
    int hid_len;         /* handles made */
    int *heap, heap_len; /* resources with unfrozen flows, by saturation level */
    GArray *by_r0;       /* ics_an_cap: the flows of the computation by r0 */
    GArray *caps_tmp;    /* ics_an_cap: caps_order's scratch */
    /* what is recomputed ("Locality" above): per resource, its active flows and the sum of
     * their uncontended demands r0 x coef; the flows and resources changed since the last
     * computation */
    GArray **on;         /* ics_an_ref, allocated on first use */
    GArray *busy;        /* int: the resources whose list is not empty */
    int *busy_pos;       /* per resource: its index in busy, or -1 */
    long double *demand; /* bytes/ps */
    GPtrArray *dirty;    /* started flows awaiting a speed */
    GArray *dirty_res;   /* int: contended resources that ending flows left */
    GPtrArray *set;      /* scratch: the flows being recomputed */
    uint32_t *calm;      /* per resource: found not contended by the closure of this epoch */
    int *dom_by; /* per resource: the resource that dominates it, or -1 (net_analytic_dom.c) */
    uint8_t *dom_tries;     /* per resource: searches for a new dominator since it was empty */
    int global_left;        /* computations left that take every flow without a closure */
    int *merge_at;          /* per resource: scratch of stream_merge_uses, -1 outside it */
    ics_net_routes *routes; /* the sends' routes, built once per (source, destination, hash) */
};

#define GLOBAL_STREAK 16

#define AN_TOL 1e-12L /* relative: a rate this close to a limit has reached it */

/* ---- dominance (net_analytic_dom.c) -------------------------------------------------------- */

/* Flows of more uses (a stream over a whole ring's legs) take no part: they end the dominance
 * of every resource they join, which costs them O(uses); checking would cost O(uses^2). */
#define ICS_AN_DOM_MAX_USES 16

/* A joining flow's rooms: room[u], each use's capacity per unit of the flow's load; by_room,
 * the uses of positive room from the tightest (ties: the lower resource id) on, n_by_room of
 * them. A use can only be dominated by a tighter one, so a search walks by_room from the start
 * and stops at the first candidate that is not tight enough. */
typedef struct {
    long double room[ICS_AN_DOM_MAX_USES];
    int by_room[ICS_AN_DOM_MAX_USES];
    int n_by_room;
} ics_an_rooms;

/* Before f's uses join their resources: whether f takes part (then *rooms is filled). */
bool ics_an_dom_begin(const ics_an_net *n, const ics_an_flow *f, ics_an_rooms *rooms);
/* f's use u is about to join its resource's list: that resource's dominance brought up to
 * date (it may end, and its flows' uses of it then bind again). */
void ics_an_dom_join(ics_an_net *n, ics_an_flow *f, int u, const ics_an_rooms *rooms, bool part);
/* Once all of f's uses have joined: its binding uses first, n_bind set, its slot updated. */
void ics_an_dom_partition(ics_an_net *n, ics_an_flow *f);

#endif
