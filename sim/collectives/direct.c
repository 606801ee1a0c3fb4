/* Direct algorithms, as nccl-tests' alltoall_perf and sendrecv_perf drive NCCL's point-to-point
 * path: all-to-all posts a send to every peer at once (size / n bytes each); send/recv sends
 * the whole buffer to the next rank and receives from the previous one. */
#include "algo.h"

static bool direct_supports(const ics_algo_ctx *c)
{
    return (c->req.op == ICS_COLL_ALLTOALL || c->req.op == ICS_COLL_SENDRECV) && c->n >= 2;
}

static void direct_plan(const ics_algo_ctx *c, ics_sched *s)
{
    int n = c->n, start = ics_sched_delay(s, c->base_lat_ps + c->step_lat_ps, NULL, 0);
    if (c->req.op == ICS_COLL_SENDRECV) {
        for (int r = 0; r < n; r++)
            ics_sched_send(s, c->ranks[r], c->ranks[(r + 1) % n],
                           ics_algo_wire(c, c->req.size_bytes), (uint64_t)r, &start, 1);
        return;
    }
    uint64_t each = c->req.size_bytes / (uint64_t)n;
    for (int r = 0; r < n; r++)
        for (int k = 1; k < n; k++) {
            int peer = (r + k) % n; /* NCCL walks the peers in this order */
            ics_sched_send(s, c->ranks[r], c->ranks[peer], ics_algo_wire(c, each),
                           (uint64_t)r * (uint64_t)n + (uint64_t)peer, &start, 1);
        }
}

const ics_algo_ops ics_algo_direct = {
    .algo = ICS_ALGO_DIRECT,
    .supports = direct_supports,
    .plan = direct_plan,
};
