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
 * Routing is taken as balanced: every expert gets its share of the tokens (topk x tokens /
 * experts), or with a capacity factor exactly capacity x that share (Megatron pads each expert's
 * input to capacity). The all-to-alls run on the compute stream, exposed, as Megatron runs them
 * without its --overlap-moe-expert-parallel-comm. */
#include "workload/workload_internal.h"

static bool moe(const ics_wl *w)
{
    return w->m->moe.experts > 0;
}

void ics_wl__moe_setup(ics_wl *w)
{
    w->ep = w->l->ep;
    if (!moe(w))
        return;
    double rep, shared, expert;
    ics_model_moe_params(w->m, &rep, &shared, &expert);
    w->moe_rep_params = rep;
    w->moe_shared_params = shared / w->t;
    w->moe_expert_params = (double)(w->m->moe.experts / w->ep) * expert / w->t;
}

/* Expert-parallel groups: ep consecutive data-parallel ranks (Megatron's order, expert
 * parallelism inside data parallelism), per (tp rank, stage); expert-data-parallel groups: the
 * ranks holding the same experts, one in every ep group. A folded trace makes only its
 * representative's (tp rank 0, dp rank 0). */
void ics_wl__moe_comms(ics_wl *w, int *ranks)
{
    if (!moe(w))
        return;
    int groups = w->t * w->p, ng = w->d / w->ep;
    w->ep_comm = g_new(int, groups *ng);
    w->edp_comm = g_new(int, groups * w->ep);
    for (int tr = 0; tr < w->t; tr++)
        for (int s = 0; s < w->p; s++) {
            int base = tr * w->p + s;
            for (int gi = 0; gi < ng; gi++) {
                w->ep_comm[base * ng + gi] = -1;
                if (w->ep == 1 || ics_wl__mirrored(w, tr, gi * w->ep))
                    continue;
                for (int i = 0; i < w->ep; i++)
                    ranks[i] = ics_layout_rank(w->l, tr, s, gi * w->ep + i);
                char *name = g_strdup_printf("ep.tp%d.pp%d.g%d", tr, s, gi);
                w->ep_comm[base * ng + gi] = ics_trace_add_comm(w->trace, ranks, w->ep, name);
                g_free(name);
            }
            for (int k = 0; k < w->ep; k++) {
                w->edp_comm[base * w->ep + k] = -1;
                if (ng == 1 || ics_wl__mirrored(w, tr, k))
                    continue;
                for (int i = 0; i < ng; i++)
                    ranks[i] = ics_layout_rank(w->l, tr, s, i * w->ep + k);
                char *name = g_strdup_printf("ep.dp.tp%d.pp%d.e%d", tr, s, k);
                w->edp_comm[base * w->ep + k] = ics_trace_add_comm(w->trace, ranks, ng, name);
                g_free(name);
            }
        }
}

void ics_wl__moe_rank(ics_wl *w)
{
    w->epc = w->edpc = -1;
    if (!moe(w))
        return;
    int base = w->tpr * w->p + w->s;
    w->epc = w->ep_comm[base * (w->d / w->ep) + w->dpr / w->ep];
    w->edpc = w->edp_comm[base * w->ep + w->dpr % w->ep];
    w->expert.comm = w->edpc;
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
    ics_wl__on_compute(w, &op, -1);
}

/* The experts of the rank between their tensor-parallel gather and reduce-scatter; returns the
 * compute op. */
static int experts(ics_wl *w, ics_wl_block b, const char *name)
{
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
