/* PAT (Parallel Aggregated Trees, NCCL 2.23+): all-gather and reduce-scatter with one GPU per
 * node in a logarithmic number of steps. It is Bruck's algorithm with the dimensions reversed:
 * all-gather talks to the farthest peer first, when it has only its own block to send, and
 * to its neighbour last, with the most (Jeaugey, "PAT: a new algorithm for all-gather and
 * reduce-scatter operations at scale", 2025); reduce-scatter is its transpose (nearest first,
 * reducing what arrives). With D = ceil(log2 n), the all-gather step at distance 2^j moves the
 * blocks of offsets d (multiples of 2^(j+1)) with d + 2^j < n: every block leaves each rank
 * exactly once over the D steps, n-1 blocks in all. */
#include "collectives/algo.h"

/* Slices of a block pipelined through the steps (NCCL bounds PAT's buffers, not its size). */
#define PAT_SLICE_BYTES (1024 * 1024)
#define PAT_MAX_SLICES  16

static bool pat_supports(const ics_algo_ctx *c)
{
    if ((c->req.op != ICS_COLL_ALL_GATHER && c->req.op != ICS_COLL_REDUCE_SCATTER) || c->n < 2)
        return false;
    ics_algo_nodes g;
    ics_algo_nodes_init(c->t, c->ranks, c->n, &g);
    bool one_per_node = g.nnodes == c->n;
    ics_algo_nodes_clear(&g);
    return one_per_node;
}

/* Blocks sent at the step of distance 2^j. */
static int blocks_at(int n, int j)
{
    int dist = 1 << j, stride = 2 * dist;
    return (n - dist + stride - 1) / stride;
}

static void pat_plan(const ics_algo_ctx *c, ics_sched *s)
{
    int n = c->n, D = 0;
    while ((1 << D) < n)
        D++;
    bool gather = c->req.op == ICS_COLL_ALL_GATHER;
    uint64_t block = c->req.size_bytes / (uint64_t)n;
    int S = (int)MAX(1, MIN(PAT_MAX_SLICES, block / PAT_SLICE_BYTES));
    int start = ics_sched_delay(s, c->base_lat_ps, NULL, 0);
    /* sent[(step * n + r) * S + k]: rank r's send of slice k at the step-th step */
    int *sent = g_new(int, D *n *S), *deps = g_new(int, D + 1);
    for (int k = 0; k < S; k++) {
        uint64_t sb = ics_algo_piece(block, S, k);
        for (int step = 0; step < D; step++) {
            int j = gather ? D - 1 - step : step, dist = 1 << j;
            for (int r = 0; r < n; r++) {
                /* everything r received so far is in what it sends now; reduce-scatter has
                 * reduced all but the last step's arrival already */
                int nd = 0;
                uint64_t got = 0;
                for (int e = 0; e < step; e++) {
                    int je = gather ? D - 1 - e : e, de = 1 << je;
                    int from = gather ? (r + de) % n : (r - de + n) % n;
                    deps[nd++] = sent[(e * n + from) * S + k];
                    got = (uint64_t)blocks_at(n, je) * sb;
                }
                int ready = start;
                if (nd > 0)
                    ready = ics_sched_delay(
                        s, c->net_step_lat_ps + (gather ? 0 : ics_algo_reduce_time(c, got)), deps,
                        nd);
                else if (k == 0) /* the first step's hop too: NCCL counts log2(n) of them; the
                                    later slices follow through the FIFO */
                    ready = ics_sched_delay(s, c->net_step_lat_ps, &start, 1);
                int sd[2] = {ready, k > 0 ? sent[(step * n + r) * S + k - 1] : -1};
                int to = gather ? (r - dist + n) % n : (r + dist) % n;
                uint64_t bytes = (uint64_t)blocks_at(n, j) * sb;
                sent[(step * n + r) * S + k] = ics_sched_send(
                    s, c->ranks[r], c->ranks[to], ics_algo_wire_by(c->net_wire_factor, bytes),
                    (uint64_t)r * 64 + (uint64_t)j, sd, k > 0 ? 2 : 1);
            }
        }
        if (!gather) /* the last step's partial sums are reduced into each rank's block */
            for (int r = 0; r < n; r++) {
                int from = (r - (1 << (D - 1)) + n) % n;
                ics_sched_delay(s, ics_algo_reduce_time(c, (uint64_t)blocks_at(n, D - 1) * sb),
                                &sent[((D - 1) * n + from) * S + k], 1);
            }
    }
    g_free(sent);
    g_free(deps);
}

const ics_algo_ops ics_algo_pat = {
    .algo = ICS_ALGO_PAT,
    .supports = pat_supports,
    .plan = pat_plan,
};
