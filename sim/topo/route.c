/* Route computation; the rules are in topo.h ("Routes"). Routes are built from the topology's
 * device tree and fabric plan rather than by generic shortest-path search, so that they follow what
 * the hardware and NCCL actually do (NVLink first, nearest NIC, up/down fat-tree routing). */
#include "topo/topo_internal.h"

#include <string.h>

typedef struct {
    const ics_topo *t;
    ics_route_path path;
    bool ok;
} path_builder;

static void hop(path_builder *pb, int a, int b)
{
    int c = ics_topo_chan_between(pb->t, a, b);
    if (c < 0 || pb->path.n_hops >= ICS_ROUTE_MAX_HOPS) {
        pb->ok = false;
        return;
    }
    pb->path.chans[pb->path.n_hops++] = c;
}

/* Room for a few paths at once: a GPU's route to a peer on its NVSwitches has one per switch
 * (4 on a DGX H100), and growing the array one path at a time was an eighth of the instructions
 * of a tree all-reduce on 2,048 GPUs, in realloc. */
#define ROUTE_ROOM 4

static void add_path(ics_route *r, const ics_route_path *p)
{
    if (r->n_paths == r->room) {
        r->room = r->room ? 2 * r->room : ROUTE_ROOM;
        r->paths = g_renew(ics_route_path, r->paths, r->room);
    }
    r->paths[r->n_paths++] = *p;
}

/* ---- PCIe / CPU ---------------------------------------------------------------------------- */

/* Device chain from d up through the PCIe tree to its socket; returns its length. */
static int up_chain(const ics_topo *t, int d, int *chain, int max)
{
    int n = 0;
    for (int x = d; x >= 0 && n < max; x = ics_topo_dev_get(t, x)->pcie_parent) {
        chain[n++] = x;
        if (ics_topo_dev_get(t, x)->kind == ICS_DEV_CPU)
            break;
    }
    return n;
}

/* a -> b inside one node through PCIe, the root complex and the socket link. */
static void pcie_path(path_builder *pb, int a, int b)
{
    int ca[ICS_ROUTE_MAX_HOPS], cb[ICS_ROUTE_MAX_HOPS];
    int na = up_chain(pb->t, a, ca, ICS_ROUTE_MAX_HOPS);
    int nb = up_chain(pb->t, b, cb, ICS_ROUTE_MAX_HOPS);
    int ia = -1, ib = -1;
    for (int i = 0; i < na && ia < 0; i++)
        for (int j = 0; j < nb; j++)
            if (ca[i] == cb[j]) {
                ia = i;
                ib = j;
                break;
            }
    bool join_sockets = ia < 0;
    if (join_sockets) {
        /* both chains must end at a socket */
        if (ics_topo_dev_get(pb->t, ca[na - 1])->kind != ICS_DEV_CPU ||
            ics_topo_dev_get(pb->t, cb[nb - 1])->kind != ICS_DEV_CPU) {
            pb->ok = false;
            return;
        }
        ia = na - 1;
        ib = nb - 1;
    }
    for (int i = 0; i < ia && pb->ok; i++)
        hop(pb, ca[i], ca[i + 1]);
    if (join_sockets)
        hop(pb, ca[ia], cb[ib]);
    for (int j = ib; j > 0 && pb->ok; j--)
        hop(pb, cb[j], cb[j - 1]);
}

/* The memory channel between host bridge hb and socket s, either way round. */
static void memory_hop(path_builder *pb, int from, int to)
{
    int n;
    const int *out = ics_topo_out(pb->t, from, &n);
    for (int i = 0; i < n; i++) {
        const ics_topo_chan *c = ics_topo_chan_get(pb->t, out[i]);
        if (c->dst == to && c->kind == ICS_CHAN_MEMORY) {
            if (pb->path.n_hops < ICS_ROUTE_MAX_HOPS)
                pb->path.chans[pb->path.n_hops++] = out[i];
            else
                pb->ok = false;
            return;
        }
    }
    pb->ok = false;
}

/* a -> b of one node through host memory on socket `mem` (a CPU device): a writes into it and
 * b reads from it, as NCCL's SHM transport and network buffers without GPUDirect RDMA move
 * data. Each side climbs its PCIe tree to its host bridge and crosses into DRAM by the memory
 * channel; the socket link joins sockets. */
static void host_path(path_builder *pb, int a, int b, int mem)
{
    int ca[ICS_ROUTE_MAX_HOPS], cb[ICS_ROUTE_MAX_HOPS];
    int na = up_chain(pb->t, a, ca, ICS_ROUTE_MAX_HOPS);
    int nb = up_chain(pb->t, b, cb, ICS_ROUTE_MAX_HOPS);
    if (na < 2 || nb < 2 || ics_topo_dev_get(pb->t, ca[na - 1])->kind != ICS_DEV_CPU ||
        ics_topo_dev_get(pb->t, cb[nb - 1])->kind != ICS_DEV_CPU) {
        pb->ok = false;
        return;
    }
    for (int i = 0; i + 2 < na && pb->ok; i++)
        hop(pb, ca[i], ca[i + 1]);
    memory_hop(pb, ca[na - 2], ca[na - 1]);
    if (ca[na - 1] != mem)
        hop(pb, ca[na - 1], mem);
    if (mem != cb[nb - 1])
        hop(pb, mem, cb[nb - 1]);
    memory_hop(pb, cb[nb - 1], cb[nb - 2]);
    for (int j = nb - 2; j > 0 && pb->ok; j--)
        hop(pb, cb[j], cb[j - 1]);
}

/* ---- NVLink -------------------------------------------------------------------------------- */

/* Shortest switch-only path from switch s to a switch adjacent to GPU dst (BFS, lowest
 * channel order first, so the result is deterministic). Appends hops s .. last switch. */
static bool switch_path(path_builder *pb, int s, int dst)
{
    const ics_topo *t = pb->t;
    if (ics_topo_chan_between(t, s, dst) >= 0) { /* one switch level (DGX, NVL72): no search */
        hop(pb, s, dst);
        return pb->ok;
    }
    int nd = ics_topo_ndevs(t);
    int *prev = g_new(int, nd);
    for (int i = 0; i < nd; i++)
        prev[i] = -2;
    int *queue = g_new(int, nd);
    int head = 0, tail = 0, found = -1;
    queue[tail++] = s;
    prev[s] = -1;
    while (head < tail && found < 0) {
        int x = queue[head++];
        if (ics_topo_chan_between(t, x, dst) >= 0) {
            found = x;
            break;
        }
        int n;
        const int *out = ics_topo_out(t, x, &n);
        for (int i = 0; i < n; i++) {
            int y = ics_topo_chan_get(t, out[i])->dst;
            if (prev[y] == -2 && ics_topo_dev_get(t, y)->kind == ICS_DEV_NVSWITCH) {
                prev[y] = x;
                queue[tail++] = y;
            }
        }
    }
    bool ok = found >= 0;
    if (ok) {
        int chain[ICS_ROUTE_MAX_HOPS], n = 0;
        for (int x = found; x >= 0 && n < ICS_ROUTE_MAX_HOPS; x = prev[x])
            chain[n++] = x;
        for (int i = n - 1; i > 0; i--)
            hop(pb, chain[i], chain[i - 1]);
        hop(pb, found, dst);
    }
    g_free(prev);
    g_free(queue);
    return ok && pb->ok;
}

/* One path per NVSwitch the source is bonded to, weighted by the bond's width. */
static bool nvswitch_paths(const ics_topo *t, int src, int dst, ics_route *r)
{
    int n, total = 0;
    const int *out = ics_topo_out(t, src, &n);
    for (int i = 0; i < n; i++) {
        const ics_topo_chan *c = ics_topo_chan_get(t, out[i]);
        if (c->kind != ICS_CHAN_NVLINK || ics_topo_dev_get(t, c->dst)->kind != ICS_DEV_NVSWITCH)
            continue;
        path_builder pb = {.t = t, .ok = true};
        pb.path.chans[pb.path.n_hops++] = out[i];
        if (!switch_path(&pb, c->dst, dst))
            continue;
        pb.path.weight = c->width;
        total += c->width;
        add_path(r, &pb.path);
    }
    for (int p = 0; p < r->n_paths; p++)
        r->paths[p].weight /= total;
    return r->n_paths > 0;
}

/* ---- the fabric ---------------------------------------------------------------------------- */

static uint64_t mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

static int leaf_of_nic(const ics_topo *t, int nic)
{
    int n;
    const int *out = ics_topo_out(t, nic, &n);
    for (int i = 0; i < n; i++)
        if (ics_topo_chan_get(t, out[i])->kind == ICS_CHAN_NETWORK)
            return ics_topo_chan_get(t, out[i])->dst;
    return -1;
}

/* Whether spine index i joins leaf ls (pod a) to leaf ld (pod b) through core `core` (pods
 * differ) or directly (same pod), with every channel on the way live. */
static bool up_down_live(const ics_topo *t, const ics_fattree_plan *p, int ls, int ld, int i,
                         int core)
{
    int pa = ics_topo_dev_get(t, ls)->pod, pb = ics_topo_dev_get(t, ld)->pod;
    int ss = ics_topo_net_switch(t, 2, pa * p->spines_per_pod + i);
    int sd = ics_topo_net_switch(t, 2, pb * p->spines_per_pod + i);
    if (ics_topo_chan_between(t, ls, ss) < 0 || ics_topo_chan_between(t, sd, ld) < 0)
        return false;
    return pa == pb ||
           (ics_topo_chan_between(t, ss, core) >= 0 && ics_topo_chan_between(t, core, sd) >= 0);
}

/* ECMP's pick: spine index *i and (pods differing) core *core. On an intact fabric every index
 * qualifies and the flow hash picks h mod count; once failures took parts down (topo_fail.c)
 * the hash picks among the spines and cores that still join the two leaves, as switches
 * re-hash over their live ports. False if none does. */
static bool ecmp_pick(const ics_topo *t, const ics_fattree_plan *p, int ls, int ld, uint64_t h,
                      int *i, int *core)
{
    bool cross = ics_topo_dev_get(t, ls)->pod != ics_topo_dev_get(t, ld)->pod;
    int spp = p->spines_per_pod, cpg = p->cores_per_group;
    if (!t->failures) {
        *i = (int)(h % (uint64_t)spp);
        *core = cross ? ics_topo_net_switch(t, 3, *i * cpg + (int)((h >> 32) % (uint64_t)cpg)) : -1;
        return true;
    }
    int live_i = 0, pick = -1, live_c = 0;
    for (int pass = 0; pass < 2; pass++)
        for (int s = 0, k = 0; s < spp; s++) {
            bool any = false;
            for (int c = 0; c < (cross ? cpg : 1) && !any; c++)
                any = up_down_live(t, p, ls, ld, s,
                                   cross ? ics_topo_net_switch(t, 3, s * cpg + c) : -1);
            if (!any)
                continue;
            if (pass == 0)
                live_i++;
            else if (k++ == (int)(h % (uint64_t)live_i))
                pick = s;
        }
    if (pick < 0)
        return false;
    *i = pick;
    *core = -1;
    if (!cross)
        return true;
    for (int pass = 0; pass < 2; pass++)
        for (int c = 0, k = 0; c < cpg; c++) {
            int cd = ics_topo_net_switch(t, 3, pick * cpg + c);
            if (!up_down_live(t, p, ls, ld, pick, cd))
                continue;
            if (pass == 0)
                live_c++;
            else if (k++ == (int)((h >> 32) % (uint64_t)live_c))
                *core = cd;
        }
    return true;
}

/* ---- dragonfly ---- */

/* Switch s of group G (a device id). */
static int df_switch(const ics_topo *t, int G, int s)
{
    return ics_topo_net_switch(t, 1, G * t->df.group_switches + s);
}

/* Whether channel a -> b exists (a == b: nothing to cross). */
static bool live_hop(const ics_topo *t, int a, int b)
{
    return a == b || ics_topo_chan_between(t, a, b) >= 0;
}

/* How S reaches D inside one group: D itself when their local link is live, else another
 * switch of the group both reach (around a dead link), else -1. */
static int df_local_via(const ics_topo *t, int S, int D)
{
    int G = ics_topo_dev_get(t, S)->pod;
    if (live_hop(t, S, D))
        return D;
    for (int k = 0; k < t->df.group_switches; k++) {
        int X = df_switch(t, G, k);
        if (X != S && X != D && live_hop(t, S, X) && live_hop(t, X, D))
            return X;
    }
    return -1;
}

static void df_local(path_builder *pb, int S, int D)
{
    int X = S == D ? D : df_local_via(pb->t, S, D);
    if (X < 0) {
        pb->ok = false;
        return;
    }
    if (X != S)
        hop(pb, S, X);
    if (X != D)
        hop(pb, X, D);
}

/* Minimal route between switches S and D: local hops inside a group; between groups a local
 * leg to the switch that holds the chosen global link, the global link, a local leg from where
 * it lands. The h-th of the groups' global links first, the next ones when a part is down. */
static void df_minimal(path_builder *pb, int S, int D, uint64_t h)
{
    const ics_topo *t = pb->t;
    int G = ics_topo_dev_get(t, S)->pod, H = ics_topo_dev_get(t, D)->pod;
    if (G == H) {
        df_local(pb, S, D);
        return;
    }
    int links = ics_dragonfly_pair_links(&t->df);
    for (int k = 0; k < links; k++) {
        int from, to;
        ics_dragonfly_global(&t->df, G, H, (int)((h + (uint64_t)k) % (uint64_t)links), &from, &to);
        int gs = df_switch(t, G, from), hs = df_switch(t, H, to);
        if (!live_hop(t, gs, hs) || (S != gs && df_local_via(t, S, gs) < 0) ||
            (hs != D && df_local_via(t, hs, D) < 0))
            continue;
        df_local(pb, S, gs);
        hop(pb, gs, hs);
        df_local(pb, hs, D);
        return;
    }
    pb->ok = false;
}

/* A Valiant route through group I: minimally to the switch the hashed G -> I global link lands
 * on, then minimally to D; into *pb only if every hop is live. */
static bool df_through(path_builder *pb, int S, int D, int I, uint64_t h)
{
    const ics_topo *t = pb->t;
    int G = ics_topo_dev_get(t, S)->pod, from, to;
    ics_dragonfly_global(&t->df, G, I,
                         (int)((h >> 20) % (uint64_t)ics_dragonfly_pair_links(&t->df)), &from, &to);
    path_builder tmp = *pb;
    df_minimal(&tmp, S, df_switch(t, I, to), h >> 20);
    if (tmp.ok)
        df_minimal(&tmp, df_switch(t, I, to), D, h >> 40);
    if (tmp.ok)
        *pb = tmp;
    return tmp.ok;
}

/* Dragonfly: minimal (local, global, local), or with Valiant routing through an intermediate
 * group first (twice the global hops, but no hot global link under adversarial traffic): the
 * hashed one of the g - 2 others, the next ones when a part is down, minimal when none works. */
static void dragonfly_path(path_builder *pb, int nic_s, int nic_d, uint64_t hash)
{
    const ics_topo *t = pb->t;
    int S = leaf_of_nic(t, nic_s), D = leaf_of_nic(t, nic_d);
    if (S < 0 || D < 0) {
        pb->ok = false;
        return;
    }
    uint64_t h = mix(ics_route_ecmp_bits(hash));
    int G = ics_topo_dev_get(t, S)->pod, H = ics_topo_dev_get(t, D)->pod, g = t->df.groups;
    hop(pb, nic_s, S);
    bool valiant = ics_hw_fabric_of(t->hw)->valiant && G != H && g > 2, done = false;
    for (int k = 0; valiant && k < g - 2 && !done; k++) {
        int want = (int)((h + (uint64_t)k) % (uint64_t)(g - 2)), I = -1;
        for (int x = 0; x < g && I < 0; x++) /* the want-th group other than G and H */
            if (x != G && x != H && want-- == 0)
                I = x;
        done = df_through(pb, S, D, I, h);
    }
    if (!done)
        df_minimal(pb, S, D, h);
    hop(pb, D, nic_d);
}

/* Up/down: climb only to the lowest tier that holds both leaves. */
static void fabric_path(path_builder *pb, int nic_s, int nic_d, uint64_t hash)
{
    const ics_topo *t = pb->t;
    if (t->dragonfly) {
        dragonfly_path(pb, nic_s, nic_d, hash);
        return;
    }
    const ics_fattree_plan *p = ics_topo_fattree(t);
    int ls = leaf_of_nic(t, nic_s), ld = leaf_of_nic(t, nic_d);
    if (!p || ls < 0 || ld < 0) {
        pb->ok = false;
        return;
    }
    hop(pb, nic_s, ls);
    if (ls != ld) {
        const ics_topo_dev *a = ics_topo_dev_get(t, ls), *b = ics_topo_dev_get(t, ld);
        int i, c;
        if (!ecmp_pick(t, p, ls, ld, mix(ics_route_ecmp_bits(hash)), &i, &c)) {
            pb->ok = false;
            return;
        }
        int ss = ics_topo_net_switch(t, 2, a->pod * p->spines_per_pod + i);
        hop(pb, ls, ss);
        if (a->pod != b->pod) {
            int sd = ics_topo_net_switch(t, 2, b->pod * p->spines_per_pod + i);
            hop(pb, ss, c);
            hop(pb, c, sd);
            ss = sd;
        }
        hop(pb, ss, ld);
    }
    hop(pb, ld, nic_d);
}

/* The live compute NICs at the GPU's nearest path class (their indices in the node's NIC list),
 * in NIC order; their count (at most ICS_ROUTE_MAX_NICS). */
static int nearest_nics(const ics_topo *t, int gpu, int *out)
{
    const ics_topo_dev *g = ics_topo_dev_get(t, gpu);
    int best = 99, n = 0;
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < ics_topo_nics_per_node(t); i++) {
            int nic = ics_topo_nic(t, g->node, i);
            const ics_topo_dev *d = ics_topo_dev_get(t, nic);
            if (d->rail < 0 || d->down || !ics_topo_ib_hca_keeps(t, i))
                continue; /* a storage NIC, one that failed (topo_fail.c) or NCCL_IB_HCA left
                             out (topo_hca.c) */
            char buf[16];
            int rank = ics_topo_path_class_rank(ics_topo_path_class(t, gpu, nic, buf));
            if (pass == 0)
                best = MIN(best, rank);
            else if (rank == best && n < ICS_ROUTE_MAX_NICS)
                out[n++] = i;
        }
    return n;
}

static bool same_nics(const int *a, int na, const int *b, int nb)
{
    return na == nb && memcmp(a, b, (size_t)na * sizeof *a) == 0;
}

/* The NICs a GPU uses: its nearest ones, shared out among the GPUs of its node that have the
 * same nearest set, as NCCL's graph search gives each GPU its own NIC where there are enough:
 * s GPUs sharing n NICs take one each when s >= n (two GPUs and two NICs under one DGX A100
 * switch: one each; two GPUs and one EFA under a p4de switch: both that one), and n / s each
 * otherwise (one GPU, four EFA on a p5: all four). The GPU's own rail first. */
static int nic_search(const ics_topo *t, int gpu, int *out)
{
    const ics_topo_dev *g = ics_topo_dev_get(t, gpu);
    int mine[ICS_ROUTE_MAX_NICS], n = nearest_nics(t, gpu, mine);
    if (n == 0)
        return 0;
    int s = 0, j = 0;
    for (int k = 0; k < ics_topo_gpus_per_node(t); k++) {
        int other[ICS_ROUTE_MAX_NICS], m = nearest_nics(t, ics_topo_gpu(t, g->node, k), other);
        if (same_nics(mine, n, other, m)) {
            if (k < g->local)
                j++;
            s++;
        }
    }
    int count = 0, own = -1;
    for (int i = 0; i < n; i++)
        if (ics_topo_dev_get(t, ics_topo_nic(t, g->node, mine[i]))->rail == g->local)
            own = mine[i];
    if (s >= n) {
        out[count++] = own >= 0 ? own : mine[j % n];
        return count;
    }
    if (own >= 0)
        out[count++] = own;
    for (int i = j; i < n; i += s)
        if (mine[i] != own)
            out[count++] = mine[i];
    return count;
}

#define NIC_SLOT (ICS_ROUTE_MAX_NICS + 1) /* per local GPU: the count, then the indices */

void ics_topo_index_nics(ics_topo *t)
{
    int gpn = ics_topo_gpus_per_node(t);
    int *index = g_new0(int, (size_t)MAX(gpn, 1) * NIC_SLOT);
    for (int g = 0; g < gpn; g++)
        index[g * NIC_SLOT] = nic_search(t, ics_topo_gpu(t, 0, g), index + g * NIC_SLOT + 1);
    t->gpu_nic_index = index;
}

int ics_route_nics_of_gpu(const ics_topo *t, int gpu, int *out)
{
    const ics_topo_dev *g = ics_topo_dev_get(t, gpu);
    int idx[ICS_ROUTE_MAX_NICS], n;
    if (!t->gpu_nic_index) { /* parts were taken down: nodes may differ */
        n = nic_search(t, gpu, idx);
    } else {
        n = t->gpu_nic_index[g->local * NIC_SLOT];
        memcpy(idx, t->gpu_nic_index + g->local * NIC_SLOT + 1, (size_t)n * sizeof *idx);
    }
    for (int i = 0; i < n; i++)
        out[i] = ics_topo_nic(t, g->node, idx[i]);
    return n;
}

int ics_route_nic_of_gpu(const ics_topo *t, int gpu)
{
    int nics[ICS_ROUTE_MAX_NICS];
    return ics_route_nics_of_gpu(t, gpu, nics) > 0 ? nics[0] : -1;
}

/* ---- routes -------------------------------------------------------------------------------- */

/* Where a transfer leaves (or enters) its node: a NIC itself, or one of the GPU's nearest NICs
 * picked by the flow hash, so that the channels of a GPU with several (4 EFA per GPU on a p5)
 * spread over all of them, as NCCL's graph search gives each channel its NIC; both ends take
 * the same index, the same rail. */
static int exit_nic(const ics_topo *t, int d, uint64_t hash)
{
    if (ics_topo_dev_get(t, d)->kind == ICS_DEV_NIC)
        return d;
    int nics[ICS_ROUTE_MAX_NICS], n = ics_route_nics_of_gpu(t, d, nics);
    uint64_t slot = hash >> ICS_ROUTE_HASH_BITS;
    return n > 0 ? nics[(slot ? slot - 1 : hash) % (uint64_t)n] : -1;
}

/* The hash of queue pair k of a connection: the same NIC slot (the bits above the ECMP ones),
 * other ECMP bits, as each of NCCL's queue pairs is its own flow to the fabric (RoCEv2: its own
 * UDP source port). Pair 0 keeps the connection's hash. */
static uint64_t qp_hash(uint64_t hash, int k)
{
    if (k == 0)
        return hash;
    uint64_t mask = (UINT64_C(1) << ICS_ROUTE_HASH_BITS) - 1;
    return (hash & ~mask) | (mix(hash ^ (uint64_t)k * 0xd1b54a32d192ed03ULL) & mask);
}

/* Where a send from src to dst, on another node, leaves src's node: the NIC, and in *via the GPU
 * whose memory that NIC reads (src, or its PXN relay). NCCL (2.12 on) keeps a send on the
 * destination's rail, the NIC of the GPU of src's node with dst's local index: a ring's graph
 * enters and leaves a node by one NIC (search.cc, ncclTopoSearchCheckNet with crossNic 0, tried
 * before crossNic 2), and a point-to-point send takes the NIC of the peer's local index
 * (ncclTopoGetNetDev, NCCL_P2P_PXN_LEVEL 2). src reaches that NIC itself where it sends to it by
 * GPUDirect RDMA at most PXB away (P2C on a Grace: ics_topo_pcie_sends; two GPUs and their
 * NICs under one PCIe switch: NCCL's graph then has no PXN path, ncclTopoComputePaths'
 * condition (4); its point-to-point sends would still relay, through the same NIC); else over
 * NVLink, peer to peer, through that NIC's GPU (PXN): src writes into the relay's memory and
 * the NIC reads it there, which NCCL allows only by GPUDirect RDMA ("PXN should not use host
 * buffers for data", net.cc). The relay is the GPU of dst's local index whether or not it is
 * in the communicator (NCCL's topology holds only the communicator's GPUs; the layouts icsim
 * builds use the same local GPUs on every node). Receives stay on the receiver's own NIC ("We
 * don't support PXN on receive yet", net.cc). Rings, trees and all-to-alls then cross a
 * rail-optimized fabric on one rail. Where neither applies (a NIC or switch at either end; for
 * the relay NCCL_PXN_DISABLE=1, no NVLink to it, or a relay that cannot) the send leaves by
 * src's own NIC. */
int ics_route_send_nic(const ics_topo *t, int src, int dst, uint64_t hash, int *via)
{
    const ics_topo_dev *a = ics_topo_dev_get(t, src), *b = ics_topo_dev_get(t, dst);
    int own = exit_nic(t, src, hash);
    *via = src;
    if (a->kind != ICS_DEV_GPU || b->kind != ICS_DEV_GPU || b->local >= ics_topo_gpus_per_node(t))
        return own;
    int peer = ics_topo_gpu(t, a->node, b->local);
    int rail = peer == src || ics_topo_dev_get(t, peer)->down ? -1 : exit_nic(t, peer, hash);
    if (rail < 0 || rail == own)
        return own;
    if (ics_topo_pcie_sends(t, src, rail))
        return rail;
    if (t->paths.pxn_disable == 1 || ics_topo_path_type(t, src, peer) != ICS_PATH_NVL ||
        !ics_topo_uses_p2p(t, src, peer) || !ics_topo_pcie_sends(t, peer, rail))
        return own;
    *via = peer;
    return rail;
}

/* Appends the hops of path p to pb. */
static void append(path_builder *pb, const ics_route_path *p)
{
    for (int h = 0; h < p->n_hops && pb->ok; h++) {
        if (pb->path.n_hops >= ICS_ROUTE_MAX_HOPS)
            pb->ok = false;
        else
            pb->path.chans[pb->path.n_hops++] = p->chans[h];
    }
}

/* GPU or NIC src to one on another node: through the source's exit NIC (or its PXN relay's),
 * the fabric, the destination's NIC. With NCCL_IB_QPS_PER_CONNECTION = q (t->paths.qps) a
 * connection's messages go round-robin over q queue pairs, each hashed onto the fabric on its
 * own: q paths of 1/q of the bytes, alike but for the fabric's ECMP picks; a relay's NVLink leg
 * is one path per NVSwitch (ics_route_find), each with its share of every queue pair's. */
static bool net_route(const ics_topo *t, int src, int dst, uint64_t flow_hash, ics_route *out)
{
    const ics_topo_dev *a = ics_topo_dev_get(t, src), *b = ics_topo_dev_get(t, dst);
    int via, ns = ics_route_send_nic(t, src, dst, flow_hash, &via);
    int nd = exit_nic(t, dst, flow_hash);
    if (ns < 0 || nd < 0)
        return false;
    int qps = t->paths.qps > 1 ? t->paths.qps : 1;
    /* the legs inside the two nodes are the same for every queue pair: built once */
    ics_route relay = {0};
    ics_route_path none = {.weight = 1};
    if (via != src && !ics_route_find(t, src, via, flow_hash, &relay))
        return false;
    path_builder in = {.t = t, .ok = true}, out_leg = {.t = t, .ok = true};
    if (via != src) /* the relay's memory to its NIC: GPUDirect RDMA (ics_route_send_nic) */
        pcie_path(&in, via, ns);
    else if (ns != src && (ics_topo_uses_gdr(t, src, ns, true) || a->socket < 0))
        pcie_path(&in, src, ns);
    else if (ns != src) /* the send buffer in host memory next to the GPU */
        host_path(&in, src, ns, a->socket);
    if (nd != dst && (ics_topo_uses_gdr(t, dst, nd, false) || b->socket < 0))
        pcie_path(&out_leg, nd, dst);
    else if (nd != dst)
        host_path(&out_leg, nd, dst, b->socket);
    const ics_route_path *pre = via != src ? relay.paths : &none;
    int npre = via != src ? relay.n_paths : 1;
    for (int k = 0; k < qps && in.ok && out_leg.ok; k++)
        for (int r = 0; r < npre; r++) {
            path_builder pb = {.t = t, .ok = true};
            append(&pb, &pre[r]);
            append(&pb, &in.path);
            pb.path.weight = pre[r].weight / qps;
            fabric_path(&pb, ns, nd, qp_hash(flow_hash, k));
            append(&pb, &out_leg.path);
            if (!pb.ok)
                break;
            add_path(out, &pb.path);
        }
    ics_route_clear(&relay);
    if (out->n_paths < qps * npre) {
        ics_route_clear(out);
        return false;
    }
    return true;
}

bool ics_route_find(const ics_topo *t, int src, int dst, uint64_t flow_hash, ics_route *out)
{
    *out = (ics_route){0};
    return ics_route_find_again(t, src, dst, flow_hash, out);
}

bool ics_route_find_again(const ics_topo *t, int src, int dst, uint64_t flow_hash, ics_route *out)
{
    out->n_paths = 0;
    if (src == dst)
        return true;
    const ics_topo_dev *a = ics_topo_dev_get(t, src), *b = ics_topo_dev_get(t, dst);
    path_builder pb = {.t = t, .ok = true, .path.weight = 1};
    bool gpus = a->kind == ICS_DEV_GPU && b->kind == ICS_DEV_GPU;
    bool placed = a->socket >= 0 && b->socket >= 0; /* both have a host to stage through */
    if (a->node == b->node && gpus && placed && !ics_topo_uses_p2p(t, src, dst)) {
        host_path(&pb, src, dst, b->socket); /* NCCL's SHM: the buffer is the receiver's */
    } else if (a->node == b->node && gpus) {
        int c = ics_topo_chan_between(t, src, dst);
        if (c >= 0 && ics_topo_chan_get(t, c)->kind == ICS_CHAN_NVLINK) {
            ics_route_path p = {.weight = 1, .n_hops = 1, .chans = {c}};
            add_path(out, &p);
            return true;
        }
        if (nvswitch_paths(t, src, dst, out))
            return true;
        pcie_path(&pb, src, dst);
    } else if (a->node == b->node) {
        pcie_path(&pb, src, dst);
    } else {
        return net_route(t, src, dst, flow_hash, out);
    }
    if (!pb.ok)
        return false;
    add_path(out, &pb.path);
    return true;
}

void ics_route_clear(ics_route *r)
{
    g_free(r->paths);
    *r = (ics_route){0};
}

ics_time ics_route_path_latency(const ics_topo *t, const ics_route_path *p)
{
    ics_time sum = 0;
    for (int i = 0; i < p->n_hops; i++) {
        const ics_topo_chan *c = ics_topo_chan_get(t, p->chans[i]);
        sum += c->latency_ps;
        if (i + 1 < p->n_hops)
            sum += ics_topo_dev_get(t, c->dst)->latency_ps;
    }
    return sum;
}

uint64_t ics_route_path_bw(const ics_topo *t, const ics_route_path *p)
{
    uint64_t bw = UINT64_MAX;
    for (int i = 0; i < p->n_hops; i++)
        bw = MIN(bw, ics_topo_chan_get(t, p->chans[i])->bw_bytes_per_s);
    return bw;
}

/* A channel a path crosses, with the path's share of the bytes (ics_route_bw). */
typedef struct {
    int chan;
    double weight;
} chan_share;

static int by_chan(const void *a, const void *b)
{
    int x = ((const chan_share *)a)->chan, y = ((const chan_share *)b)->chan;
    return (x > y) - (x < y);
}

/* Sorts the shares by channel. A route holds a few paths of a dozen hops: an insertion sort of
 * those costs a fifth of qsort's merge sort through a comparison function, which was a tenth of
 * the instructions of a tree all-reduce on 2,048 GPUs (every stream's pipeline fill asks for its
 * route's bandwidth). Longer lists (many queue pairs) keep qsort. Both are stable (glibc's qsort
 * is a merge sort), so equal channels' weights are summed in the same order either way. */
#define INSERTION_MAX 128

static void sort_by_chan(chan_share *all, int n)
{
    if (n > INSERTION_MAX) {
        qsort(all, (size_t)n, sizeof *all, by_chan);
        return;
    }
    for (int i = 1; i < n; i++) {
        chan_share x = all[i];
        int j = i;
        for (; j > 0 && all[j - 1].chan > x.chan; j--)
            all[j] = all[j - 1];
        all[j] = x;
    }
}

uint64_t ics_route_bw(const ics_topo *t, const ics_route *r)
{
    uint64_t sum = 0, cap = UINT64_MAX;
    for (int p = 0; p < r->n_paths; p++)
        sum += ics_route_path_bw(t, &r->paths[p]);
    if (r->n_paths < 2)
        return sum;
    /* a channel several paths cross carries their shares together: after a PXN relay its PCIe,
     * the NIC and the fabric; with several queue pairs the NICs at both ends (paths that cross
     * none in common, an NVSwitch's planes, keep their sum) */
    int n = 0;
    for (int p = 0; p < r->n_paths; p++)
        n += r->paths[p].n_hops;
    chan_share room[INSERTION_MAX], *all = n <= INSERTION_MAX ? room : g_new(chan_share, n);
    n = 0;
    for (int p = 0; p < r->n_paths; p++)
        for (int h = 0; h < r->paths[p].n_hops; h++)
            all[n++] = (chan_share){r->paths[p].chans[h], r->paths[p].weight};
    sort_by_chan(all, n);
    for (int i = 0, j; i < n; i = j) {
        double w = 0;
        for (j = i; j < n && all[j].chan == all[i].chan; j++)
            w += all[j].weight;
        if (j - i > 1 && w > 0)
            cap = MIN(cap, (uint64_t)((double)ics_topo_chan_get(t, all[i].chan)->bw_bytes_per_s /
                                      MIN(w, 1.0)));
    }
    if (all != room)
        g_free(all);
    return MIN(sum, cap);
}
