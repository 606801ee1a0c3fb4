/* The training generator's mixture-of-experts MLP (workload_internal.h), as Megatron-Core's MoE
 * layer runs it with its all-to-all token dispatcher (megatron/core/transformer/moe):
 *
 *   forward:  router (norm, gate GEMM, top-k, permute by expert)
 *             -> all-to-all over the expert-parallel group (dispatch: each token copy to the
 *                rank holding its expert)
 *             -> all-gather over tensor parallelism (expert weights split like a dense MLP's,
 *                so every tp rank needs every token of its experts)
 *             -> the rank's experts (grouped GEMMs)
 *             -> reduce-scatter over tensor parallelism
 *             -> all-to-all back (combine)
 *             -> shared experts (a dense MLP with its tp collectives), unpermute and the
 *                residual add
 *   backward: the same in reverse, the routed experts' weight gradients reduced over the
 *             expert-data-parallel group (dp / ep ranks: the ranks holding the same experts),
 *             everything else's over dp.
 *
 * With expert tensor parallelism 1 (Megatron-Core's MoE parallel folding, --etp 1) each expert
 * is whole on its rank, the tp ranks join the expert-parallel groups, and the tensor-parallel
 * gather and reduce-scatter around the experts go: each rank dispatches its own sequence shard.
 *
 * Routing is taken as balanced: every expert gets its share of the tokens (topk x tokens /
 * experts), or with a capacity factor exactly capacity x that share (Megatron pads each expert's
 * input to capacity). The all-to-alls run on the compute stream, exposed, as Megatron runs them
 * without its --overlap-moe-expert-parallel-comm. */
#include "workload/workload_internal.h"

#include <math.h>

static bool moe(const ics_wl *w)
{
    return w->m->moe.experts > 0;
}

void ics_wl__moe_setup(ics_wl *w)
{
    w->ep = w->l->ep;
    w->etp = ics_layout_etp(w->l);
    if (!moe(w))
        return;
    double rep, shared, expert;
    ics_model_moe_params(w->m, &rep, &shared, &expert);
    w->moe_rep_params = rep;
    w->moe_shared_params = shared / w->t;
    w->moe_expert_params = (double)(w->m->moe.experts / w->ep) * expert / w->etp;
}

/* The expert side of a stage (Megatron-Core's expert rank order, tp innermost): the stage's
 * rank q = dp rank x tp + tp rank is expert-tp rank q mod etp, expert-parallel rank
 * (q / etp) mod ep, in expert-data-parallel group q / (etp x ep). With etp = tp that is the
 * classic order: the ep consecutive dp ranks of one tp rank. The rank of expert position
 * (g, i, j) of stage s: */
static int expert_rank(const ics_wl *w, int s, int g, int i, int j, int *tr, int *dr)
{
    int q = (g * w->ep + i) * w->etp + j;
    *tr = q % w->t;
    *dr = q / w->t;
    return ics_layout_rank(w->l, *tr, s, *dr);
}

/* A group's name: its expert-tp index only where it names a tp rank (etp = tp). */
static char *group_name(const ics_wl *w, const char *kind, int j, int s, char what, int k)
{
    if (w->etp == w->t)
        return g_strdup_printf("%s.tp%d.pp%d.%c%d", kind, j, s, what, k);
    return g_strdup_printf("%s.pp%d.%c%d", kind, s, what, k);
}

/* Expert-parallel groups: the ep ranks of one (edp group, expert-tp index); expert-data-parallel
 * groups: the ranks holding the same experts, one of each edp group. Per stage. A folded trace
 * makes only those of its representative (tp rank 0, dp rank 0: expert position 0, 0, 0). */
void ics_wl__moe_comms(ics_wl *w, int *ranks)
{
    if (!moe(w))
        return;
    int edp = ics_layout_edp(w->l), etp = w->etp, tr, dr;
    w->ep_comm = g_new(int, w->p *edp *etp);
    w->edp_comm = g_new(int, w->p * w->ep * etp);
    for (int j = 0; j < etp; j++) /* the order the groups were made in before etp */
        for (int s = 0; s < w->p; s++) {
            for (int g = 0; g < edp; g++) {
                int *c = &w->ep_comm[(s * edp + g) * etp + j];
                *c = -1;
                expert_rank(w, s, g, 0, j, &tr, &dr);
                if (w->ep == 1 || ics_wl__mirrored(w, tr, dr))
                    continue;
                for (int i = 0; i < w->ep; i++)
                    ranks[i] = expert_rank(w, s, g, i, j, &tr, &dr);
                char *name = group_name(w, "ep", j, s, 'g', g);
                *c = ics_trace_add_comm(w->trace, ranks, w->ep, name);
                g_free(name);
            }
            for (int i = 0; i < w->ep; i++) {
                int *c = &w->edp_comm[(s * w->ep + i) * etp + j];
                *c = -1;
                expert_rank(w, s, 0, i, j, &tr, &dr);
                if (edp == 1 || ics_wl__mirrored(w, tr, dr))
                    continue;
                for (int g = 0; g < edp; g++)
                    ranks[g] = expert_rank(w, s, g, i, j, &tr, &dr);
                char *name = group_name(w, "ep.dp", j, s, 'e', i);
                *c = ics_trace_add_comm(w->trace, ranks, edp, name);
                g_free(name);
            }
        }
}

static bool deepep_row(const ics_wl *w, const int *ranks, int n, uint64_t *row);

void ics_wl__moe_rank(ics_wl *w)
{
    w->epc = w->edpc = -1;
    g_clear_pointer(&w->ep_row, g_free);
    if (!moe(w))
        return;
    int q = w->dpr * w->t + w->tpr, edp = ics_layout_edp(w->l), etp = w->etp;
    int j = q % etp, i = q / etp % w->ep, g = q / (etp * w->ep);
    w->epc = w->ep_comm[(w->s * edp + g) * etp + j];
    w->edpc = w->edp_comm[(w->s * w->ep + i) * etp + j];
    w->expert.comm = w->edpc;
    if (w->l->moe_deepep && w->epc >= 0) { /* the same row for every dispatch of the rank */
        int n;
        const int *ranks = ics_trace_comm_ranks(w->trace, w->epc, &n);
        w->ep_row = g_new0(uint64_t, n);
        if (!deepep_row(w, ranks, n, w->ep_row))
            g_clear_pointer(&w->ep_row, g_free);
    }
}

/* Bytes of the token copies a rank sends in one dispatch (or receives in one combine): its
 * tokens of the residual stream (a sequence shard with tensor parallelism), topk copies each,
 * padded to capacity when a capacity factor is set. nccl-tests' all-to-all size: the whole
 * send buffer. */
static uint64_t dispatch_bytes(const ics_wl *w)
{
    double tokens = (double)w->l->mbs * w->m->seq / (w->l->sp ? w->t : 1);
    double copies = tokens * w->m->moe.topk * (w->l->moe_capacity > 0 ? w->l->moe_capacity : 1);
    return (uint64_t)(copies * w->m->hidden * ics_layout_act_bytes(w->l));
}

/* The SMs DeepEP's kernels run on: Megatron-Core's --moe-deepep-num-sms default (20; HybridEP's
 * --moe-hybridep-num-sms default is larger). The dispatch's sends share them (direct.c). */
#define DEEPEP_SMS 20

/* DeepEP's and HybridEP's dispatch across nodes (Megatron-Core's flex dispatcher; DeepEP's
 * README, "normal kernels"): a token crosses the network once to each node holding any of its
 * experts, to the GPU with the sender's local index there (its rail), which forwards it over
 * NVLink to the experts' GPUs; the combine comes back the same way, the copies summed on that
 * node first. Per rank and remote node: its tokens x the chance the node holds one of a
 * token's experts (ics_model_moe_nodes_hit / nodes), each hidden x the activation's bytes. As
 * an all-to-allv over the expert-parallel group whose row holds that for each rail peer and,
 * as a local copy, for itself; run by DeepEP's own kernels (req.sms: GPU-initiated RDMA, no
 * proxy thread, not NCCL's p2p channels). The NVLink forwarding, which DeepEP pipelines beside
 * the RDMA phase at several times its bandwidth, is not priced; nor is capacity padding (the
 * experts pad, the dispatch moves tokens). Returns false where the group is inside one node, the
 * node size is unknown, or its nodes hold unequal or differently placed shares of it (then
 * NCCL's all-to-all is priced, as docs/workload.md says). Fills row (n entries). */
static bool deepep_row(const ics_wl *w, const int *ranks, int n, uint64_t *row)
{
    int gpn = w->l->node_gpus, me = -1, nodes = 0, per = 0;
    if (gpn <= 0)
        return false;
    GHashTable *seen = g_hash_table_new(g_direct_hash, g_direct_equal);
    bool twice = false; /* a node met again after another: not node by node */
    for (int i = 0; i < n; i++) {
        if (ranks[i] == w->rank)
            me = i;
        if (i == 0 || ranks[i] / gpn != ranks[i - 1] / gpn) {
            nodes++;
            twice |= !g_hash_table_add(seen, GINT_TO_POINTER(ranks[i] / gpn));
        }
    }
    g_hash_table_destroy(seen);
    if (twice || me < 0 || nodes <= 1 || n % nodes != 0)
        return false;
    per = n / nodes;
    /* each node holds `per` consecutive members, at the same local indices as the first node's
     * (so the member at my position on another node is the GPU of my local index: my rail) */
    for (int i = 0; i < n; i++)
        if (ranks[i] / gpn != ranks[i - i % per] / gpn || ranks[i] % gpn != ranks[i % per] % gpn)
            return false;
    double tokens = (double)w->l->mbs * w->m->seq / (w->l->sp ? w->t : 1);
    int act = ics_layout_act_bytes(w->l); /* whole elements, as a trace holds them */
    uint64_t per_node =
        (uint64_t)ceil(tokens * ics_model_moe_nodes_hit(w->m, nodes) / nodes * w->m->hidden) *
        (uint64_t)act;
    for (int i = 0; i < n; i++)
        row[i] = i % per == me % per ? per_node : 0;
    return true;
}

static void all_to_all(ics_wl *w, const char *name)
{
    if (w->ep == 1)
        return;
    ics_trace_op op = {.kind = ICS_TOP_COLL,
                       .cat = ICS_CAT_EP,
                       .name = name,
                       .comm = w->epc,
                       .coll = {.op = ICS_COLL_ALLTOALL,
                                .size_bytes = dispatch_bytes(w),
                                .dtype_bytes = ics_layout_act_bytes(w->l)}};
    if (w->ep_row) {
        int n;
        ics_trace_comm_ranks(w->trace, w->epc, &n);
        op.splits = w->ep_row;
        op.coll.sms = DEEPEP_SMS;
        op.coll.size_bytes = 0;
        for (int i = 0; i < n; i++)
            op.coll.size_bytes += w->ep_row[i];
    }
    ics_wl__on_compute(w, &op, -1);
}

/* The experts of the rank between their tensor-parallel gather and reduce-scatter (none with
 * etp = 1: each expert whole, each rank's own tokens); returns the compute op. */
static int experts(ics_wl *w, ics_wl_block b, const char *name)
{
    if (w->etp == 1)
        return ics_wl__compute(w, b, name);
    uint64_t gathered = dispatch_bytes(w) * (uint64_t)w->t;
    ics_wl__tp_coll(w, ICS_COLL_ALL_GATHER, gathered, "tp.all_gather");
    int op = ics_wl__compute(w, b, name);
    ics_wl__tp_coll(w, ICS_COLL_REDUCE_SCATTER, gathered, "tp.reduce_scatter");
    return op;
}

/* Shared experts: a dense MLP, so the dense MLP's tensor-parallel collectives around it. */
static int shared(ics_wl *w, ics_wl_block b, const char *name)
{
    if (w->m->moe.shared_ffn == 0)
        return -1;
    ics_wl__tp_before(w);
    int op = ics_wl__compute(w, b, name);
    ics_wl__tp_after(w);
    return op;
}

void ics_wl__moe_fwd(ics_wl *w, bool again)
{
    ics_wl__compute(w, ICS_WL_ROUTER_FWD, again ? "rec.moe.router" : NULL);
    /* Dropless routing: the host reads each expert's token count back from the GPU before it
     * launches the dispatch (the all-to-all's split sizes) and the grouped GEMMs (TE's m_splits):
     * Megatron-Core's MoEAlltoAllTokenDispatcher syncs there unless it drops and pads, and
     * DeepEP's normal-mode dispatch waits on the host for the received counts. The backward
     * reuses the counts: no sync. */
    w->host_sync_next = w->l->moe_capacity == 0;
    all_to_all(w, "ep.dispatch");
    experts(w, ICS_WL_EXPERTS_FWD, again ? "rec.moe.experts" : NULL);
    all_to_all(w, "ep.combine");
    shared(w, ICS_WL_SHARED_FWD, again ? "rec.moe.shared" : NULL);
    ics_wl__compute(w, ICS_WL_UNPERMUTE_FWD, again ? "rec.moe.unpermute" : NULL);
}

void ics_wl__moe_bwd(ics_wl *w, bool last_mb)
{
    ics_wl__compute(w, ICS_WL_UNPERMUTE_BWD, NULL);
    int sh = shared(w, ICS_WL_SHARED_BWD, NULL);
    if (sh >= 0)
        ics_wl__grads(w, &w->dense, w->moe_shared_params, sh, last_mb);
    all_to_all(w, "ep.combine.grad");
    int ex = experts(w, ICS_WL_EXPERTS_BWD, NULL);
    ics_wl__grads(w, &w->expert, w->moe_expert_params, ex, last_mb);
    all_to_all(w, "ep.dispatch.grad");
    int rt = ics_wl__compute(w, ICS_WL_ROUTER_BWD, NULL);
    ics_wl__grads(w, &w->dense, w->moe_rep_params, rt, last_mb);
}
