/* NCCL's point-to-point batches (NCCL 2.29: init.cc ncclP2pSchedule, channel.h
 * ncclP2pChannelBaseForRound, device.h ncclP2pChannelForPart, enqueue.cc
 * ncclAddWorkBatchToPlan). An all-to-all is n rounds; in round r every rank sends to one peer
 * and receives from another. A round's operation runs on nch of the p2pnChannels channels, and
 * a channel (one CTA) runs its operations in batches, one batch after another: a batch holds at
 * most 8 operations (NCCL_MAX_DEV_WORK_P2P_PER_BATCH), all from one group of 8 consecutive
 * rounds. So past channels x 8 / nch peers a rank's sends go in waves, each waiting for the
 * previous batch of its channels to end at both its ends.
 *
 * The rounds. Ranks form groups of gs GPUs of one node (gs: NCCL_P2P_SCHEDULE_GROUP_SIZE, 8,
 * cut to the gcd with every node's GPU count; one node: all its ranks). Group deltas are walked
 * in the quadratic order (x^2 + x) / 2 modulo the next power of two of the group count,
 * skipping those past it, and each contributes gs rounds, one per local delta: round
 * i x gs + l sends to group (mine + the i-th delta), local index (mine + l) mod gs.
 *
 * The channels. A round's base is its group's index in the walk (across nodes; on one node the
 * round itself), its bits reversed over log2(p2pnChannels) bits; part j of the operation runs on
 * channel (base + j) mod p2pnChannels. Two DGX H100 put each node's 8 rounds on its own channel:
 * one batch, one wave. 540 Polaris nodes of 4 GPUs on 4 p2p channels: 540 group deltas over 4
 * channels, a batch of 4 rounds each, 135 waves. What is not modelled: a kernel plan's budget of
 * work batches, past which NCCL launches the rest as another kernel; operations of zero bytes,
 * which NCCL still batches and icsim does not post, are laid out as if posted. */
#include "collectives/p2p_waves.h"

#define P2P_PER_BATCH 8 /* NCCL_MAX_DEV_WORK_P2P_PER_BATCH */
#define P2P_GROUP     8 /* NCCL_P2P_SCHEDULE_GROUP_SIZE's default (ctx p2p_group overrides) */

struct ics_p2p_waves {
    int n, gs, ngroups, nwaves;
    bool multi;                    /* the ranks span nodes */
    int *group;                    /* per rank: its group (groups numbered node by node) */
    int *local;                    /* per rank: its index in its group */
    int *pos;                      /* per group delta: its index in the quadratic walk */
    int *delta;                    /* per walk index: its group delta */
    int *at;                       /* per (group, local index): the rank */
    int *wave;                     /* per round */
    int *wave_start, *wave_rounds; /* rounds of wave k: wave_rounds[wave_start[k] .. [k + 1]) */
};

static int gcd(int a, int b)
{
    while (b) {
        int t = a % b;
        a = b;
        b = t;
    }
    return a;
}

static int pow2_up(int n)
{
    int p = 1;
    while (p < n)
        p *= 2;
    return p;
}

static int log2_up(int n)
{
    int b = 0;
    while ((1 << b) < n)
        b++;
    return b;
}

static unsigned reverse_bits(unsigned x, int bits)
{
    unsigned r = 0;
    for (int i = 0; i < bits; i++)
        r |= ((x >> i) & 1u) << (bits - 1 - i);
    return r;
}

/* Groups of gs ranks of one node, numbered node by node (nodes in order of their lowest rank,
 * ranks in rank order inside each: NCCL's nodeRanks). */
static void make_groups(ics_p2p_waves *w, const ics_algo_ctx *c)
{
    ics_algo_nodes g;
    ics_algo_nodes_init(c->t, c->ranks, c->n, &g);
    w->gs = c->n;
    if (g.nnodes > 1) {
        w->gs = c->p2p_group > 0 ? c->p2p_group : P2P_GROUP;
        for (int k = 0; k < g.nnodes; k++)
            w->gs = gcd(w->gs, ics_algo_nodes_size(&g, k));
    }
    w->group = g_new(int, c->n);
    w->local = g_new(int, c->n);
    w->at = g_new(int, c->n);
    int base = 0;
    for (int k = 0; k < g.nnodes; k++) {
        for (int i = g.start[k]; i < g.start[k + 1]; i++) {
            int l = i - g.start[k];
            w->group[g.rank[i]] = base + l / w->gs;
            w->local[g.rank[i]] = l % w->gs;
            w->at[(base + l / w->gs) * w->gs + l % w->gs] = g.rank[i];
        }
        base += ics_algo_nodes_size(&g, k) / w->gs;
    }
    w->ngroups = base;
    w->multi = g.nnodes > 1;
    ics_algo_nodes_clear(&g);
}

/* pos[d]: where group delta d comes in the walk (x^2 + x) / 2 mod the next power of two. */
static void walk_groups(ics_p2p_waves *w)
{
    int np2 = pow2_up(w->ngroups), i = 0;
    w->pos = g_new(int, w->ngroups);
    w->delta = g_new(int, w->ngroups);
    unsigned delta = 0, round = 0;
    do {
        if (delta < (unsigned)w->ngroups) {
            w->delta[i] = (int)delta;
            w->pos[delta] = i++;
        }
        round++;
        delta = (delta + round) & (unsigned)(np2 - 1);
    } while (round != (unsigned)np2);
}

/* The channel of part j of round r's operation. */
static int round_channel(const ics_p2p_waves *w, int r, int j, int nchan)
{
    int base = r;
    if (w->multi) {
        int per_group = (w->gs + P2P_PER_BATCH - 1) / P2P_PER_BATCH;
        base = r / w->gs * per_group + r % w->gs / P2P_PER_BATCH;
    }
    unsigned rev = reverse_bits((unsigned)base, log2_up(nchan));
    return (int)((rev + (unsigned)j) & (unsigned)(nchan - 1));
}

/* Each round's wave: rounds laid into their channels' batches in round order (the round with
 * the rank itself included: nccl-tests' all-to-all copies to itself through a channel too). A
 * channel opens a new batch when its current one holds 8 operations or another group of 8
 * rounds; a round's wave is its latest batch over its channels. */
static void lay_batches(ics_p2p_waves *w, int nch, int nchan)
{
    int *batch = g_new(int, nchan), *count = g_new0(int, nchan), *in = g_new(int, nchan);
    for (int ch = 0; ch < nchan; ch++)
        batch[ch] = in[ch] = -1;
    w->wave = g_new0(int, w->n);
    for (int r = 0; r < w->n; r++)
        for (int j = 0; j < nch; j++) {
            int ch = round_channel(w, r, j, nchan);
            if (batch[ch] < 0 || count[ch] == P2P_PER_BATCH || in[ch] != r / P2P_PER_BATCH) {
                batch[ch]++;
                count[ch] = 0;
                in[ch] = r / P2P_PER_BATCH;
            }
            count[ch]++;
            w->wave[r] = MAX(w->wave[r], batch[ch]);
            w->nwaves = MAX(w->nwaves, batch[ch] + 1);
        }
    g_free(batch);
    g_free(count);
    g_free(in);
}

/* The rounds of each wave, in round order. */
static void list_rounds(ics_p2p_waves *w)
{
    w->wave_start = g_new0(int, w->nwaves + 1);
    w->wave_rounds = g_new(int, w->n);
    for (int r = 0; r < w->n; r++)
        w->wave_start[w->wave[r] + 1]++;
    for (int k = 0; k < w->nwaves; k++)
        w->wave_start[k + 1] += w->wave_start[k];
    int *fill = g_memdup2(w->wave_start, sizeof(int) * (size_t)w->nwaves);
    for (int r = 0; r < w->n; r++)
        w->wave_rounds[fill[w->wave[r]]++] = r;
    g_free(fill);
}

ics_p2p_waves *ics_p2p_waves_new(const ics_algo_ctx *c)
{
    ics_p2p_waves *w = g_new0(ics_p2p_waves, 1);
    w->n = c->n;
    make_groups(w, c);
    walk_groups(w);
    /* a caller's own kernel (req.sms: DeepEP's) is not batched by NCCL; a context made by hand
     * may give no channel count: one wave either way */
    if (c->p2p_channels > 0 && c->req.sms <= 0) {
        int nchan = pow2_up(c->p2p_channels);
        lay_batches(w, CLAMP(c->nch, 1, nchan), nchan);
    } else {
        w->wave = g_new0(int, w->n);
        w->nwaves = 1;
    }
    list_rounds(w);
    return w;
}

void ics_p2p_waves_free(ics_p2p_waves *w)
{
    if (!w)
        return;
    g_free(w->group);
    g_free(w->local);
    g_free(w->pos);
    g_free(w->delta);
    g_free(w->at);
    g_free(w->wave);
    g_free(w->wave_start);
    g_free(w->wave_rounds);
    g_free(w);
}

int ics_p2p_waves_count(const ics_p2p_waves *w)
{
    return MAX(1, w->nwaves);
}

int ics_p2p_waves_of(const ics_p2p_waves *w, int a, int b)
{
    int d = (w->group[b] - w->group[a] + w->ngroups) % w->ngroups;
    int l = (w->local[b] - w->local[a] + w->gs) % w->gs;
    return w->wave[w->pos[d] * w->gs + l];
}

int ics_p2p_waves_rounds(const ics_p2p_waves *w, int wave, const int **rounds)
{
    *rounds = w->wave_rounds + w->wave_start[wave];
    return w->wave_start[wave + 1] - w->wave_start[wave];
}

int ics_p2p_waves_receiver(const ics_p2p_waves *w, int a, int round)
{
    int d = w->delta[round / w->gs], l = round % w->gs;
    int g = (w->group[a] + d) % w->ngroups;
    return w->at[g * w->gs + (w->local[a] + l) % w->gs];
}
