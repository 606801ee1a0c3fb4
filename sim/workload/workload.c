/* The training generator (workload.h): walks each stage's pipeline schedule and writes every
 * rank's ops. Compute ops are blocks of kernels between tensor-parallel collectives, timed once
 * per layout (workload_cost.c); everything else is communication with its dependencies:
 * a forward waits for its activation recv, a send for the op that produced what it sends, a
 * gradient bucket's reduction for the backward op that completes it, the optimizer for every
 * reduction. */
#include "workload/workload_internal.h"
#include "workload/compute.h"

#include <math.h>
#include <string.h>
#include <stdlib.h>

/* Adam with fp32 master weights: reads parameter, gradient and both moments (4 x 4 bytes),
 * writes parameter and moments (3 x 4) and the bf16 copy (2): about 32 bytes per parameter. */
#define OPTIMIZER_BYTES_PER_PARAM 32
/* Megatron-LM's step around Adam: the gradient norm for clipping (`clip_grad` 1.0 by default:
 * get_grad_norm_fp32 reads every fp32 main gradient of the rank's shard once, 4 bytes) and the
 * zeroing of the gradient buffer for the next step (train_step's zero_grad_buffer: the rank's
 * whole buffer, at the gradient type). The clipping itself scales the gradients only when the
 * norm exceeds the bound, which depends on the data: not charged. */
#define GRAD_NORM_BYTES_PER_PARAM 4
/* Model parameters (what the distributed optimizer all-gathers) stay 16-bit. */
#define PARAM_BYTES 2

/* Memory per op of a step counted from its layout, its trace and the replay that plays it
 * (replay.c measures the same step: GPT-3 175B on 1024 GPUs unfolded, 17.4M ops counted for
 * 19.3M made, peaks at 5.04 GiB, 310 B a counted op; 1.1 times that). */
#define STEP_BYTES_PER_OP 340

/* ---- ops ------------------------------------------------------------------------------------- */

static int add(ics_wl *w, const ics_trace_op *op, int dep)
{
    return ics_trace_add_op(w->trace, w->rank, op, &dep, dep >= 0 ? 1 : 0);
}

/* An op on the compute stream: it also waits for the recv the pass starts with, a parameter
 * all-gather it needs (--overlap-param-gather), or `dep`. */
int ics_wl__on_compute(ics_wl *w, ics_trace_op *op, int dep)
{
    op->stream = ICS_WL_STREAM_COMPUTE;
    if (op->launches == 0) /* a collective's kernel, a compute op priced whole */
        op->launches = 1;
    op->host_sync = w->host_sync_next;
    w->host_sync_next = false;
    int deps[5], nd = 0;
    if (w->pending_recv >= 0)
        deps[nd++] = w->pending_recv;
    if (w->pending_gate >= 0)
        deps[nd++] = w->pending_gate;
    if (w->pending_cp >= 0)
        deps[nd++] = w->pending_cp;
    if (w->pending_tp >= 0)
        deps[nd++] = w->pending_tp;
    if (dep >= 0)
        deps[nd++] = dep;
    w->pending_recv = w->pending_gate = w->pending_cp = w->pending_tp = -1;
    return w->last_compute = ics_trace_add_op(w->trace, w->rank, op, deps, nd);
}

/* A compute op of its duration; its FLOPs and bytes are what it does (a trace counts bytes whole:
 * shares of tokens and of the userbuffers' chunks leave fractions, rounded up). */
static ics_trace_op compute_op(const ics_wl *w, const char *name, ics_time dur, double flops,
                               double bytes)
{
    return (ics_trace_op){.kind = ICS_TOP_COMPUTE,
                          .cat = ICS_CAT_COMPUTE,
                          .name = name,
                          .duration_ps = dur > 0 ? dur : 1,
                          .work = ICS_WORK_GEMM,
                          .flops = flops,
                          .mem_bytes = ceil(bytes),
                          .dtype = w->l->dtype};
}

int ics_wl__compute(ics_wl *w, ics_wl_block b, const char *name)
{
    const ics_wl_cost *c = &w->cost[b];
    ics_trace_op op =
        compute_op(w, name ? name : ics_wl__block_name(b), c->dur_ps, c->flops, c->bytes);
    op.launches = c->launches;
    return ics_wl__on_compute(w, &op, -1);
}

void ics_wl__tp_coll(ics_wl *w, ics_coll_op kind, uint64_t bytes, const char *name)
{
    if (w->t == 1)
        return;
    ics_trace_op op = {
        .kind = ICS_TOP_COLL,
        .cat = ICS_CAT_TP,
        .name = name,
        .comm = w->tpc,
        .coll = {.op = kind, .size_bytes = bytes, .dtype_bytes = ics_layout_act_bytes(w->l)}};
    ics_wl__on_compute(w, &op, -1);
}

/* Around a block: with sequence parallelism its input is gathered before and its output
 * reduce-scattered after; without, its output is all-reduced after. */
void ics_wl__tp_before(ics_wl *w)
{
    if (w->l->sp)
        ics_wl__tp_coll(w, ICS_COLL_ALL_GATHER, w->act_bytes, "tp.all_gather");
}

void ics_wl__tp_after(ics_wl *w)
{
    if (w->l->sp)
        ics_wl__tp_coll(w, ICS_COLL_REDUCE_SCATTER, w->act_bytes, "tp.reduce_scatter");
    else
        ics_wl__tp_coll(w, ICS_COLL_ALL_REDUCE, w->act_bytes, "tp.all_reduce");
}

/* P2P channels (tags): with 2 stages the activations and the gradients join the same two
 * ranks both ways, and each kind must match in its own order, as Megatron's batched sends and
 * receives keep it. */
enum { TAG_ACT, TAG_GRAD, TAG_CP };

static int p2p(ics_wl *w, ics_top_kind kind, int stream, int peer, int dep, const char *name)
{
    bool grad = stream == ICS_WL_STREAM_SEND_GRAD || stream == ICS_WL_STREAM_RECV_GRAD;
    ics_trace_op op = {.kind = kind,
                       .stream = stream,
                       .cat = ICS_CAT_PP,
                       .name = name,
                       .peer = peer,
                       .bytes = w->p2p_bytes,
                       .tag = grad ? TAG_GRAD : TAG_ACT};
    return add(w, &op, dep);
}

static void dp_coll_on(ics_wl *w, int comm, ics_coll_op kind, double params, int elem_bytes,
                       int dep, const char *name)
{
    ics_trace_op op = {.kind = ICS_TOP_COLL,
                       .stream = ICS_WL_STREAM_DP,
                       .cat = ICS_CAT_DP,
                       .name = name,
                       .comm = comm,
                       .coll = {.op = kind,
                                .size_bytes = (uint64_t)params * (uint64_t)elem_bytes,
                                .dtype_bytes = elem_bytes}};
    w->last_dp = add(w, &op, dep);
}

static void dp_coll(ics_wl *w, ics_coll_op kind, double params, int elem_bytes, int dep,
                    const char *name)
{
    dp_coll_on(w, w->dpc, kind, params, elem_bytes, dep, name);
}

/* Makes virtual stage v the chunk being written: its layers (w->L) and the global index of its
 * first (w->layer0). */
static void set_chunk(ics_wl *w, int v)
{
    w->L = ics_layout_chunk_layers(w->l, w->m, v);
    w->layer0 = ics_layout_chunk_first_layer(w->l, w->m, v);
}

/* ---- gradient buckets ------------------------------------------------------------------------ */

static void reduce_bucket(ics_wl *w, const ics_wl_grads *g, double params, int dep)
{
    if (w->l->dist_opt)
        dp_coll_on(w, g->comm, ICS_COLL_REDUCE_SCATTER, params, w->grad_bytes, dep,
                   g->reduce_scatter);
    else
        dp_coll_on(w, g->comm, ICS_COLL_ALL_REDUCE, params, w->grad_bytes, dep, g->all_reduce);
}

/* Closes the bucket being filled: its reduction starts once op `dep` has produced its last
 * gradients (with overlap), or after the whole backward (without). */
static void flush(ics_wl *w, ics_wl_grads *g, int dep)
{
    if (g->fill <= 0)
        return;
    double params = g->fill;
    g->fill = 0;
    if (w->l->dist_opt) /* Megatron pads a bucket to a multiple of dp for the reduce-scatter */
        params = ceil(params / g->size) * g->size;
    g_array_append_val(g->buckets, params);
    if (w->l->overlap_grad_reduce)
        reduce_bucket(w, g, params, dep);
    else
        g_array_append_val(g->deferred, params);
}

static bool fsdp(const ics_wl *w)
{
    return w->l->fsdp && w->d > 1;
}

/* Op `op` produced the final gradients of `params` parameters of set g (in the last
 * micro-batch's backward); a bucket closes once it holds at least the bucket size, as
 * Megatron's do (a parameter is never split). */
void ics_wl__grads(ics_wl *w, ics_wl_grads *g, double params, int op, bool last_mb)
{
    if (!last_mb || g->size == 1 || fsdp(w)) /* FSDP reduce-scatters per block (fsdp_done) */
        return;
    g->fill += params;
    g->last_grad_op = op;
    if (g->fill >= w->bucket_params)
        flush(w, g, op);
}

static void grads(ics_wl *w, double params, int op, bool last_mb)
{
    ics_wl__grads(w, &w->dense, params, op, last_mb);
}

/* ---- parameter all-gathers beside the forward (--overlap-param-gather) ----------------------- */

static bool param_gather_overlap(const ics_wl *w)
{
    return w->l->overlap_param_gather && w->l->dist_opt && !w->l->fsdp && w->dense.size > 1;
}

/* The gradient buckets of virtual stage v, as its last micro-batch's backward fills them: the
 * output layer (last virtual stage), each layer's MLP then attention from the last layer down,
 * the embedding (first); a bucket closes at the bucket size or the chunk's end, padded to a
 * multiple of dp (flush). Appends them to w->gather in forward order and writes into unit[]
 * (the embedding, then attention and MLP of layers 0..L-1, then the head) the index in
 * w->gather of the bucket holding each. */
static void chunk_buckets(ics_wl *w, int v, int *unit)
{
    int n = 2 * w->L + 2, nb = 0;
    double *size = g_new0(double, n), fill = 0;
    int *back = g_new(int, n); /* bucket of each unit, counted in backward order */
    for (int i = n - 1; i >= 0; i--) {
        bool embed = i == 0, head = i == n - 1;
        double params = head    ? (v == w->V - 1 ? w->head_params : 0)
                        : embed ? (v == 0 ? w->embed_params : 0)
                                : (i % 2 ? w->attn_params : w->mlp_params);
        back[i] = nb;
        fill += params;
        if (fill >= w->bucket_params || (i == 0 && fill > 0)) {
            size[nb++] = ceil(fill / w->dense.size) * w->dense.size;
            fill = 0;
        }
    }
    int base = (int)w->gather->len;
    for (int b = nb - 1; b >= 0; b--)
        g_array_append_val(w->gather, size[b]);
    for (int i = 0; i < n; i++)
        unit[i] = base + (nb - 1 - MIN(back[i], nb - 1));
    g_free(size);
    g_free(back);
}

/* Dispatches the all-gathers of buckets up to `last` (in w->gather) not dispatched yet, now:
 * after the compute stream's last op. */
static void gather_upto(ics_wl *w, int last)
{
    while ((int)w->gathers->len <= MIN(last, (int)w->gather->len - 1)) {
        int i = (int)w->gathers->len;
        dp_coll(w, ICS_COLL_ALL_GATHER, g_array_index(w->gather, double, i), PARAM_BYTES,
                w->last_compute, "dp.all_gather");
        g_array_append_val(w->gathers, w->last_dp);
    }
}

/* Before a forward unit of the first micro-batch: Megatron-Core's forward pre-hook waits for the
 * all-gather of the unit's bucket k and dispatches the next bucket's (one ahead); the first
 * bucket's is dispatched as the forward starts. The compute op after this waits for it. */
static void param_gate(ics_wl *w, int k)
{
    gather_upto(w, k + 1);
    w->pending_gate = g_array_index(w->gathers, int, k);
}

/* Entries per model chunk in w->gate: the largest chunk's units (chunks may differ by a layer). */
static int gate_stride(const ics_wl *w)
{
    return 2 * w->Lmax + 2;
}

/* The rank's buckets in forward order, every model chunk's (w->gate, w->chunk_first). */
static void plan_gathers(ics_wl *w)
{
    int n = gate_stride(w), vp = w->l->vp;
    w->gate = g_renew(int, w->gate, (size_t)vp *n);
    w->chunk_first = g_renew(int, w->chunk_first, (size_t)vp + 1);
    for (int c = 0; c < vp; c++) {
        w->chunk_first[c] = (int)w->gather->len;
        set_chunk(w, c * w->p + w->s);
        chunk_buckets(w, c * w->p + w->s, w->gate + (size_t)c * n);
    }
    w->chunk_first[vp] = (int)w->gather->len;
}

/* ---- fully sharded data parallelism (--fsdp) ------------------------------------------------- */

/* The units FSDP gathers whole, of virtual stage v in forward order: the embedding (first
 * virtual stage), each transformer block (torchtitan wraps each in fully_shard), the final norm
 * and output layer (last); their parameters on one tensor-parallel rank into params[]; returns
 * the count (at most L + 2). */
static int fsdp_units(const ics_wl *w, int v, double *params)
{
    int n = 0;
    if (v == 0)
        params[n++] = w->embed_params;
    for (int i = 0; i < w->L; i++)
        params[n++] = w->attn_params + w->mlp_params;
    if (v == w->V - 1)
        params[n++] = w->head_params;
    return n;
}

/* One pass's units in the pass's order and their all-gathers issued so far (-1: not yet). */
typedef struct {
    int n;
    double *params;
    int *ids;
} fsdp_pass;

/* Before unit i of a pass: its all-gather and the next unit's are issued once the compute
 * stream gets here (FSDP2 prefetches one ahead), and the unit's first op waits for its own. */
static void fsdp_gate(ics_wl *w, fsdp_pass *fp, int i)
{
    for (int j = i; j <= MIN(i + 1, fp->n - 1); j++) {
        if (fp->ids[j] >= 0)
            continue;
        ics_trace_op op = {
            .kind = ICS_TOP_COLL,
            .stream = ICS_WL_STREAM_GATHER,
            .cat = ICS_CAT_DP,
            .name = "dp.all_gather",
            .comm = w->shc >= 0 ? w->shc : w->dpc,
            .coll = {.op = ICS_COLL_ALL_GATHER,
                     .size_bytes = (uint64_t)(ceil(fp->params[j] / w->sh) * w->sh) * PARAM_BYTES,
                     .dtype_bytes = PARAM_BYTES}};
        fp->ids[j] = add(w, &op, w->last_compute);
    }
    w->pending_gate = fp->ids[i];
}

static void fsdp_pass_init(const ics_wl *w, int v, bool backward, fsdp_pass *fp)
{
    double *p = g_new(double, w->L + 2);
    fp->n = fsdp_units(w, v, p);
    fp->params = g_new(double, fp->n);
    fp->ids = g_new(int, fp->n);
    for (int i = 0; i < fp->n; i++) {
        fp->params[i] = backward ? p[fp->n - 1 - i] : p[i];
        fp->ids[i] = -1;
    }
    g_free(p);
}

static void fsdp_pass_clear(fsdp_pass *fp)
{
    g_free(fp->params);
    g_free(fp->ids);
}

/* After unit i's backward: its gradients reduce-scattered over the shard group; with HSDP the
 * shard is then all-reduced over the replicas. FSDP2 does it after every micro-batch's backward
 * by default; torch's pipeline schedules turn gradient sync off but for the last micro-batch
 * (then the stage holds whole gradients until it: memory.c), so with pp > 1 only the last. */
static void fsdp_done(ics_wl *w, const fsdp_pass *fp, int i, bool last_mb)
{
    if (!last_mb && w->p > 1)
        return;
    double padded = ceil(fp->params[i] / w->sh) * w->sh;
    int saved = w->dpc;
    if (w->shc >= 0)
        w->dpc = w->shc;
    dp_coll(w, ICS_COLL_REDUCE_SCATTER, padded, w->grad_bytes, w->last_compute,
            "dp.reduce_scatter");
    if (w->repc >= 0) {
        w->dpc = w->repc;
        dp_coll(w, ICS_COLL_ALL_REDUCE, padded / w->sh, w->grad_bytes, w->last_dp,
                "dp.replicate_all_reduce");
    }
    w->dpc = saved;
}

/* ---- tensor-parallel communication beside the GEMMs (--tp-comm-overlap) --------------------- */

/* The GEMMs beside the collectives are priced as userbuffers runs them (in chunks, the pipelined
 * reduce-scatter's GEMM on the SMs it leaves): workload_cost.c's gemm_ag and gemm_rs. */

static bool tp_overlap(const ics_wl *w)
{
    return w->l->tp_comm_overlap && w->l->sp && w->t > 1;
}

/* A tensor-parallel collective of `bytes` on the overlap stream, after ops `dep` and `dep2`
 * (-1: none). */
static int side_coll(ics_wl *w, ics_coll_op kind, uint64_t bytes, int dep, int dep2,
                     const char *name)
{
    ics_trace_op op = {
        .kind = ICS_TOP_COLL,
        .stream = ICS_WL_STREAM_TP_OVERLAP,
        .cat = ICS_CAT_TP,
        .name = name,
        .comm = w->tpc,
        .coll = {.op = kind, .size_bytes = bytes, .dtype_bytes = ics_layout_act_bytes(w->l)}};
    int deps[2], nd = 0;
    if (dep >= 0)
        deps[nd++] = dep;
    if (dep2 >= 0)
        deps[nd++] = dep2;
    return ics_trace_add_op(w->trace, w->rank, &op, deps, nd);
}

/* A part of block c lasting `dur` on the compute stream, with the share of the block's FLOPs and
 * bytes its kernels' own time `own` is of the block's, after op `dep` (-1: the compute stream's
 * order only). */
static int part(ics_wl *w, const ics_wl_cost *c, const char *name, ics_time dur, ics_time own,
                int dep)
{
    double share = c->dur_ps > 0 ? (double)own / (double)c->dur_ps : 0;
    ics_trace_op op = compute_op(w, name, dur, c->flops * share, c->bytes * share);
    op.launches = MAX(1, (int)lround(c->launches * share)); /* the host's share, as the time's */
    return ics_wl__on_compute(w, &op, dep);
}

/* One attention or MLP block with its sequence-parallel collectives overlapped, as Transformer
 * Engine's userbuffers run them under Megatron-Core's --tp-comm-overlap:
 *   - the all-gather of the block's input is a ring exchange beside the GEMM that consumes it,
 *     which starts on the local shard; the rest of the block waits for the whole input;
 *   - the GEMM that produces the block's output runs in chunks, each chunk's reduce-scatter
 *     beside the next chunk's GEMM: all but the last chunk overlap, the last follows;
 * so a block costs about its compute plus what the collectives take beyond their GEMMs, plus the
 * last chunk's reduce-scatter. Returns the op that ends with the block's output GEMM (its
 * gradients, for the buckets). */
static int overlapped_block(ics_wl *w, ics_wl_block b, const char *name)
{
    const ics_wl_cost *c = &w->cost[b];
    const char *nm = name ? name : ics_wl__block_name(b);
    uint64_t last_chunk = w->act_bytes / (uint64_t)w->t;
    /* the gather also waits for the input a pipeline recv brings (the first part does too) */
    int ag = side_coll(w, ICS_COLL_ALL_GATHER, w->act_bytes, w->last_compute, w->pending_recv,
                       "tp.all_gather");
    part(w, c, nm, MAX(c->gemm_in_ps, 1), c->gemm_in_ps, -1);
    ics_time rest = c->dur_ps - MIN(c->dur_ps, c->gemm_in_ps + c->gemm_out_ps);
    int mid = part(w, c, nm, MAX(rest, 1), rest, ag);
    int rs = side_coll(w, ICS_COLL_REDUCE_SCATTER, w->act_bytes - last_chunk, mid, -1,
                       "tp.reduce_scatter");
    int out = part(w, c, nm, MAX(c->gemm_out_ps, 1), c->gemm_out_ps, -1);
    ics_trace_op op = {.kind = ICS_TOP_COLL,
                       .cat = ICS_CAT_TP,
                       .name = "tp.reduce_scatter",
                       .comm = w->tpc,
                       .coll = {.op = ICS_COLL_REDUCE_SCATTER,
                                .size_bytes = last_chunk,
                                .dtype_bytes = ics_layout_act_bytes(w->l)}};
    ics_wl__on_compute(w, &op, rs);
    return out;
}

/* Whether the backward's tensor-parallel reductions run beside the GEMMs (async_bwd_block). */
static bool tp_async(const ics_wl *w)
{
    return w->t > 1 && !tp_overlap(w) && !w->l->tp_sync_bwd;
}

/* One attention or MLP block's backward (after its output gradient's all-gather with sequence
 * parallelism, ics_wl__tp_before, which the caller issues) as Megatron-LM's Linear runs it since
 * September 2021
 * (LinearWithGradAccumulationAndAsyncCommunication, Megatron-Core's tensor_parallel/layers.py):
 * the block's input gradient comes out of its column-parallel linear (QKV, fc1), whose data
 * gradient is launched first and then reduced (all-reduce, or reduce-scatter with sequence
 * parallelism) asynchronously beside the linear's weight-gradient GEMM; with sequence
 * parallelism that linear's input, kept sharded, is all-gathered again beside the data
 * gradient (the weight gradient waits for it). The NCCL kernels hold SMs the GEMMs beside them
 * lose (workload_cost.c, linear_bwd_rs). What follows the block waits for the reduction.
 * Returns the op that ends with the block's weight gradients. */
static int async_bwd_block(ics_wl *w, ics_wl_block b)
{
    const ics_wl_cost *c = &w->cost[b];
    const char *nm = ics_wl__block_name(b);
    bool attn = b == ICS_WL_ATTN_BWD; /* the linear's GEMMs named apart, for timelines */
    const char *dx_name = attn ? "bwd.attn.qkv_dgrad" : "bwd.mlp.fc1_dgrad";
    const char *dw_name = attn ? "bwd.attn.qkv_wgrad" : "bwd.mlp.fc1_wgrad";
    ics_time lin = MIN(c->dur_ps, c->gemm_out_ps), dx = MIN(lin, c->gemm_out_dx_ps);
    ics_time rest = c->dur_ps - lin, dw = lin - dx;
    part(w, c, nm, MAX(rest, 1), rest, -1);
    /* frozen weights (LoRA) have no weight gradient, so nothing to gather its input for */
    int ag = w->l->sp && w->l->lora_rank == 0 ? side_coll(w, ICS_COLL_ALL_GATHER, w->act_bytes,
                                                          w->last_compute, -1, "tp.all_gather")
                                              : -1;
    int dgrad = part(w, c, dx_name, MAX(dx, 1), dx, -1);
    int red =
        w->l->sp
            ? side_coll(w, ICS_COLL_REDUCE_SCATTER, w->act_bytes, dgrad, -1, "tp.reduce_scatter")
            : side_coll(w, ICS_COLL_ALL_REDUCE, w->act_bytes, dgrad, -1, "tp.all_reduce");
    int out = part(w, c, dw_name, MAX(dw, 1), dw, ag);
    w->pending_tp = red;
    return out;
}

/* ---- context parallelism -------------------------------------------------------------------- */

/* Megatron-Core's context parallelism passes each rank's K and V chunk around the ring of cp
 * ranks in cp - 1 steps, each step's exchange beside the attention of the chunk it has (its
 * attention kernels run one chunk at a time); the backward passes K and V and the gradients dK
 * and dV, twice the bytes. The ring starts with the attention block (on the K and V it
 * computes) and the op after the block waits for its last step: the block costs its compute or
 * the ring, whichever is longer. Returns the last recv, or -1 without context parallelism. */
static int cp_ring(ics_wl *w, bool backward)
{
    if (w->c == 1)
        return -1;
    double dh = ics_model_head_dim(w->m);
    uint64_t bytes =
        (uint64_t)((double)w->l->mbs * (w->m->seq / w->c) * 2 * ((double)w->m->kv_heads / w->t) *
                   dh * ics_layout_act_bytes(w->l) * (backward ? 2 : 1));
    int next = ics_layout_rank_cp(w->l, w->tpr, (w->cpr + 1) % w->c, w->s, w->dpr);
    int prev = ics_layout_rank_cp(w->l, w->tpr, (w->cpr + w->c - 1) % w->c, w->s, w->dpr);
    int deps[3], nd = 0, last = -1;
    if (w->last_compute >= 0)
        deps[nd++] = w->last_compute;
    if (w->pending_tp >= 0) /* the gradient the ring starts from is reduced first */
        deps[nd++] = w->pending_tp;
    if (w->pending_recv >= 0) /* K and V come from the activations a pipeline recv brings */
        deps[nd++] = w->pending_recv;
    for (int j = 0; j < w->c - 1; j++) {
        ics_trace_op send = {.kind = ICS_TOP_SEND,
                             .stream = ICS_WL_STREAM_CP_SEND,
                             .cat = ICS_CAT_CP,
                             .name = backward ? "cp.send.kv_grad" : "cp.send.kv",
                             .peer = next,
                             .bytes = bytes,
                             .tag = TAG_CP};
        ics_trace_add_op(w->trace, w->rank, &send, deps, nd);
        ics_trace_op recv = send;
        recv.kind = ICS_TOP_RECV;
        recv.stream = ICS_WL_STREAM_CP_RECV;
        recv.name = backward ? "cp.recv.kv_grad" : "cp.recv.kv";
        recv.peer = prev;
        last = ics_trace_add_op(w->trace, w->rank, &recv, NULL, 0);
        deps[0] = last; /* the next step forwards what this one received */
        nd = 1;
    }
    return last;
}

/* ---- passes ---------------------------------------------------------------------------------- */

/* A forward block with its collectives; gate >= 0: the parameter all-gather (in w->gather)
 * its first op waits for. */
static void block_fwd(ics_wl *w, ics_wl_block b, const char *name, int gate)
{
    if (gate >= 0)
        param_gate(w, gate);
    int ring = b == ICS_WL_ATTN_FWD ? cp_ring(w, false) : -1;
    if (tp_overlap(w)) {
        overlapped_block(w, b, name);
    } else {
        ics_wl__tp_before(w);
        ics_wl__compute(w, b, name);
        ics_wl__tp_after(w);
    }
    w->pending_cp = ring;
}

/* Layer i of the chunk being written (its first is w->layer0): attention, then a dense or a
 * mixture-of-experts MLP (workload_moe.c; no parameter gates: refused with experts). */
static bool moe_layer(const ics_wl *w, int i)
{
    return ics_model_is_moe_layer(w->m, w->layer0 + i);
}

static void layer_fwd(ics_wl *w, int i, bool again, int gate_attn, int gate_mlp)
{
    block_fwd(w, ICS_WL_ATTN_FWD, again ? "rec.attn" : NULL, gate_attn);
    if (moe_layer(w, i))
        ics_wl__moe_fwd(w, again);
    else
        block_fwd(w, ICS_WL_MLP_FWD, again ? "rec.mlp" : NULL, gate_mlp);
}

/* The attention half of a layer's backward (after its MLP's), with its gradients. */
static void attn_bwd(ics_wl *w, bool last_mb)
{
    int ring;
    if (tp_overlap(w)) {
        if (w->l->recompute == ICS_RECOMPUTE_SELECTIVE)
            ics_wl__compute(w, ICS_WL_ATTN_RECOMP, NULL);
        ring = cp_ring(w, true);
        grads(w, w->attn_params, overlapped_block(w, ICS_WL_ATTN_BWD, NULL), last_mb);
    } else if (tp_async(w)) {
        ics_wl__tp_before(w);
        if (w->l->recompute == ICS_RECOMPUTE_SELECTIVE)
            ics_wl__compute(w, ICS_WL_ATTN_RECOMP, NULL);
        ring = cp_ring(w, true);
        grads(w, w->attn_params, async_bwd_block(w, ICS_WL_ATTN_BWD), last_mb);
    } else {
        ics_wl__tp_before(w);
        if (w->l->recompute == ICS_RECOMPUTE_SELECTIVE)
            ics_wl__compute(w, ICS_WL_ATTN_RECOMP, NULL);
        ring = cp_ring(w, true);
        grads(w, w->attn_params, ics_wl__compute(w, ICS_WL_ATTN_BWD, NULL), last_mb);
        ics_wl__tp_after(w);
    }
    w->pending_cp = ring;
}

/* Layer i's backward, its forward first again when `recompute`. */
static void layer_bwd_as(ics_wl *w, int i, bool recompute, bool last_mb)
{
    if (recompute)
        layer_fwd(w, i, true, -1, -1);
    if (moe_layer(w, i))
        ics_wl__moe_bwd(w, last_mb);
    else if (tp_overlap(w))
        grads(w, w->mlp_params, overlapped_block(w, ICS_WL_MLP_BWD, NULL), last_mb);
    else if (tp_async(w)) {
        ics_wl__tp_before(w);
        grads(w, w->mlp_params, async_bwd_block(w, ICS_WL_MLP_BWD), last_mb);
    } else {
        ics_wl__tp_before(w);
        grads(w, w->mlp_params, ics_wl__compute(w, ICS_WL_MLP_BWD, NULL), last_mb);
        ics_wl__tp_after(w);
    }
    attn_bwd(w, last_mb);
}

static void layer_bwd(ics_wl *w, int i, bool last_mb)
{
    layer_bwd_as(w, i, ics_layout_recomputes(w->l, i), last_mb);
}

static int peer(const ics_wl *w, int stage)
{
    return ics_layout_rank_cp(w->l, w->tpr, w->cpr, (stage + w->p) % w->p, w->dpr);
}

/* ---- multi-token prediction ----------------------------------------------------------------- */

/* Megatron-Core's MTP layers (the pipeline layout's m) on the last virtual stage, after its
 * decoder layers: each its block (the next tokens' embedding, the norms, the 2h -> h
 * projection), a decoder layer of the model's last layer's kind (DeepSeek-V3's: MoE, with its
 * all-to-alls) and an output head and loss of its own; the head's weights are the output
 * layer's, whose gradient it joins (no bucket of its own). The layer's index within the chunk
 * is the model's last layer's, as the layer functions take it. */
static int mtp_layer(const ics_wl *w)
{
    return w->m->layers - 1 - w->layer0;
}

static double mtp_params(const ics_wl *w)
{
    double h = w->m->hidden;
    return 2 * h * h / w->t + 2 * h; /* the projection's share, the two norms */
}

static void mtp_fwd(ics_wl *w)
{
    for (int k = 0; k < ics_layout_mtp(w->l); k++) {
        ics_wl__compute(w, ICS_WL_MTP_FWD, NULL);
        layer_fwd(w, mtp_layer(w), false, -1, -1);
        ics_wl__tp_before(w);
        ics_wl__compute(w, ICS_WL_HEAD_FWD, "fwd.mtp.head");
    }
}

static void mtp_bwd(ics_wl *w, bool last_mb)
{
    for (int k = 0; k < ics_layout_mtp(w->l); k++) {
        ics_wl__compute(w, ICS_WL_HEAD_BWD, "bwd.mtp.head");
        ics_wl__tp_after(w);
        /* Megatron-Core recomputes the MTP layer with full recomputation, whatever the count */
        layer_bwd_as(w, mtp_layer(w), w->l->recompute == ICS_RECOMPUTE_FULL, last_mb);
        grads(w, mtp_params(w), ics_wl__compute(w, ICS_WL_MTP_BWD, NULL), last_mb);
    }
}

/* first: the first micro-batch's forward through this chunk, which with --overlap-param-gather
 * waits for the parameters the last step's optimizer updated, bucket by bucket. */
static void forward(ics_wl *w, int v, bool first)
{
    set_chunk(w, v);
    int n = 2 * w->L + 2, c = v / w->p, *gate = g_new(int, n);
    for (int i = 0; i < n; i++)
        gate[i] = first && param_gather_overlap(w) ? w->gate[(size_t)c * gate_stride(w) + i] : -1;
    /* interleaved: Megatron-Core's schedule launches the next model chunk's parameter
     * all-gathers as this chunk's first micro-batch starts (param_sync_func) */
    if (first && param_gather_overlap(w) && c + 1 < w->l->vp)
        gather_upto(w, w->chunk_first[c + 2] - 1);
    fsdp_pass fp = {0};
    int u = 0; /* the FSDP unit next */
    if (fsdp(w))
        fsdp_pass_init(w, v, false, &fp);
    if (v > 0)
        w->pending_recv =
            p2p(w, ICS_TOP_RECV, ICS_WL_STREAM_RECV_ACT, peer(w, w->s - 1), -1, "pp.recv.act");
    if (v == 0) {
        if (gate[0] >= 0)
            param_gate(w, gate[0]);
        if (fp.n)
            fsdp_gate(w, &fp, u++);
        ics_wl__compute(w, ICS_WL_EMBED_FWD, NULL);
        ics_wl__tp_after(w); /* the vocabulary-parallel lookup is summed over tp ranks */
    }
    for (int i = 0; i < w->L; i++) {
        if (fp.n)
            fsdp_gate(w, &fp, u++);
        layer_fwd(w, i, false, gate[1 + 2 * i], gate[2 + 2 * i]);
    }
    if (v == w->V - 1) {
        if (gate[n - 1] >= 0)
            param_gate(w, gate[n - 1]);
        if (fp.n)
            fsdp_gate(w, &fp, u++);
        mtp_fwd(w);
        ics_wl__tp_before(w);
        ics_wl__compute(w, ICS_WL_HEAD_FWD, NULL);
    } else {
        p2p(w, ICS_TOP_SEND, ICS_WL_STREAM_SEND_ACT, peer(w, w->s + 1), w->last_compute,
            "pp.send.act");
    }
    g_free(gate);
    fsdp_pass_clear(&fp);
}

static void backward(ics_wl *w, int v, bool last_mb)
{
    fsdp_pass fp = {0};
    int u = 0; /* the FSDP unit next, from the last */
    set_chunk(w, v);
    if (fsdp(w))
        fsdp_pass_init(w, v, true, &fp);
    if (v < w->V - 1)
        w->pending_recv =
            p2p(w, ICS_TOP_RECV, ICS_WL_STREAM_RECV_GRAD, peer(w, w->s + 1), -1, "pp.recv.grad");
    if (v == w->V - 1) {
        if (fp.n)
            fsdp_gate(w, &fp, u);
        mtp_bwd(w, last_mb); /* first: the shared output weights' gradient is whole after */
        grads(w, w->head_params, ics_wl__compute(w, ICS_WL_HEAD_BWD, NULL), last_mb);
        ics_wl__tp_after(w); /* the output layer's input gradient, summed over tp ranks */
        if (fp.n)
            fsdp_done(w, &fp, u++, last_mb);
    }
    for (int i = 0; i < w->L; i++) {
        if (fp.n)
            fsdp_gate(w, &fp, u);
        layer_bwd(w, w->L - 1 - i, last_mb);
        if (fp.n)
            fsdp_done(w, &fp, u++, last_mb);
    }
    if (v == 0) {
        if (fp.n)
            fsdp_gate(w, &fp, u);
        ics_wl__tp_before(w);
        grads(w, w->embed_params, ics_wl__compute(w, ICS_WL_EMBED_BWD, NULL), last_mb);
        if (fp.n)
            fsdp_done(w, &fp, u++, last_mb);
    }
    fsdp_pass_clear(&fp);
    if (last_mb) {
        flush(w, &w->dense, w->dense.last_grad_op);
        flush(w, &w->expert, w->expert.last_grad_op);
    }
    /* the input gradient is sent once reduced (a reduction beside the last GEMMs) */
    if (v > 0)
        p2p(w, ICS_TOP_SEND, ICS_WL_STREAM_SEND_GRAD, peer(w, w->s - 1),
            w->pending_tp >= 0 ? w->pending_tp : w->last_compute, "pp.send.grad");
}

/* ---- the end of the step --------------------------------------------------------------------- */

/* The rank's parameters: all but the experts' (*dense) and the experts' (*experts); of the
 * dense ones, those outside Transformer Engine's modules (*not_te: the embedding and the output
 * layer, Megatron-Core's own). */
static void rank_params(ics_wl *w, double *dense, double *experts, double *not_te)
{
    *dense = *experts = *not_te = 0;
    for (int c = 0; c < w->l->vp; c++) {
        set_chunk(w, c * w->p + w->s);
        for (int i = 0; i < w->L; i++) {
            bool moe = moe_layer(w, i);
            *dense +=
                w->attn_params + (moe ? w->moe_rep_params + w->moe_shared_params : w->mlp_params);
            *experts += moe ? w->moe_expert_params : 0;
        }
    }
    if (w->s == 0)
        *not_te += w->embed_params;
    if (w->s == (w->V - 1) % w->p) {
        *not_te += w->head_params;
        set_chunk(w, w->V - 1); /* the MTP layers' (the last stage's) */
        for (int k = 0; k < ics_layout_mtp(w->l); k++) {
            bool moe = moe_layer(w, mtp_layer(w));
            *dense += mtp_params(w) + w->attn_params +
                      (moe ? w->moe_rep_params + w->moe_shared_params : w->mlp_params);
            *experts += moe ? w->moe_expert_params : 0;
        }
    }
    *dense += *not_te;
}

/* The dist-opt's parameter all-gathers of set g after the optimizer `opt`. */
static void gather_params(ics_wl *w, const ics_wl_grads *g, int opt)
{
    for (guint i = 0; i < g->buckets->len; i++)
        dp_coll_on(w, g->comm, ICS_COLL_ALL_GATHER, g_array_index(g->buckets, double, i),
                   PARAM_BYTES, opt, g->all_gather);
}

static void finish_step(ics_wl *w)
{
    ics_wl_grads *sets[] = {&w->dense, &w->expert};
    for (int k = 0; k < 2; k++) /* without overlap, every bucket after the backward */
        for (guint i = 0; i < sets[k]->deferred->len; i++)
            reduce_bucket(w, sets[k], g_array_index(sets[k]->deferred, double, i), w->last_compute);
    bool holds_embedding = w->s == 0 || w->s == w->p - 1;
    if (w->emb_comm && holds_embedding && w->l->lora_rank == 0) {
        int saved = w->dpc;
        w->dpc = w->emb_comm[(w->tpr * w->d + w->dpr) * w->c + w->cpr];
        dp_coll(w, ICS_COLL_ALL_REDUCE, ceil((double)w->m->vocab / w->t) * w->m->hidden,
                w->grad_bytes, w->last_compute, "dp.embedding_all_reduce");
        w->dpc = saved;
    }
    double dense, experts, not_te;
    rank_params(w, &dense, &experts, &not_te);
    /* the optimizer runs on the rank's shard: of dp (expert dp for the experts) with the
     * distributed optimizer, of FSDP's shard group */
    double params = dense / (fsdp(w)          ? w->sh
                             : w->l->dist_opt ? w->dense.size
                                              : 1) +
                    experts / (w->l->dist_opt ? w->expert.size : 1);
    /* fp8: Transformer Engine casts every weight of its modules the rank runs to FP8 (and its
     * transpose) once a step: 2 B read, 1 + 1 B written per parameter. The embedding and the
     * output layer are Megatron-Core's own modules, not TE's: no cast. */
    double casts = w->l->dtype == ICS_DTYPE_FP8 ? 4 * (dense - not_te + experts) : 0;
    double zero = w->grad_bytes * (fsdp(w) ? params : dense + experts);
    ics_trace_op upd = {.kind = ICS_TOP_COMPUTE,
                        .work = ICS_WORK_ELEMENTWISE,
                        .mem_bytes =
                            params * (OPTIMIZER_BYTES_PER_PARAM + GRAD_NORM_BYTES_PER_PARAM) +
                            zero + casts,
                        .dtype = ICS_DTYPE_FP32};
    ics_trace_op op = compute_op(w, "optimizer", ics_compute_time(w->g, &upd), 0, upd.mem_bytes);
    op.work = ICS_WORK_ELEMENTWISE;
    int opt = ics_wl__on_compute(w, &op, w->last_dp);
    /* with --overlap-param-gather the updated parameters are gathered beside the next step's
     * forward: in the steady state, the all-gathers this step's forward waited for */
    if (w->l->dist_opt && !param_gather_overlap(w) && !fsdp(w)) {
        gather_params(w, &w->dense, opt);
        gather_params(w, &w->expert, opt);
    }
}

static void write_rank(ics_wl *w, const ics_wl_step *sched, int nsteps)
{
    w->last_compute = w->pending_recv = w->last_dp = w->pending_gate = w->pending_cp =
        w->pending_tp = -1;
    w->host_sync_next = false;
    ics_wl_grads *sets[] = {&w->dense, &w->expert};
    for (int i = 0; i < 2; i++) {
        sets[i]->fill = 0;
        sets[i]->last_grad_op = -1;
        g_array_set_size(sets[i]->buckets, 0);
        g_array_set_size(sets[i]->deferred, 0);
    }
    g_array_set_size(w->gather, 0);
    g_array_set_size(w->gathers, 0);
    if (param_gather_overlap(w))
        plan_gathers(w);
    w->tpc = w->tp_comm ? w->tp_comm[(w->dpr * w->p + w->s) * w->c + w->cpr] : -1;
    w->dpc = w->dp_comm ? w->dp_comm[w->tpr * w->p + w->s] : -1;
    w->dense.comm = w->dpc;
    ics_wl__moe_rank(w);
    int base = w->tpr * w->p + w->s;
    w->shc = w->shard_comm ? w->shard_comm[base * (w->d / w->sh) + w->dpr / w->sh] : -1;
    w->repc = w->rep_comm ? w->rep_comm[base * w->sh + w->dpr % w->sh] : -1;
    for (int i = 0; i < nsteps; i++) {
        int v = sched[i].chunk * w->p + w->s;
        if (sched[i].fwd)
            forward(w, v, sched[i].mb == 0);
        else
            backward(w, v, sched[i].mb == w->nmb - 1);
    }
    finish_step(w);
}

/* ---- communicators --------------------------------------------------------------------------- */

bool ics_wl__mirrored(const ics_wl *w, int tr, int dr)
{
    return w->l->fold && (tr != 0 || dr != 0);
}

/* Tensor-parallel groups (per stage and replica), data-parallel groups (per tp rank and stage),
 * and the tied embedding's first-and-last-stage pairs (per tp rank and replica). A folded
 * trace only makes those its representatives use. */
/* HSDP: data-parallel rank dr is replica dr / sh, shard index dr % sh (torchtitan's mesh,
 * dp_shard innermost); a shard group per (tp rank, stage, replica), a replicate group per
 * (tp rank, stage, shard index). A folded trace makes only its representative's. */
static void make_hsdp_comms(ics_wl *w, int *ranks)
{
    const ics_layout *l = w->l;
    int r = w->d / w->sh, groups = w->t * w->p;
    w->shard_comm = g_new(int, groups *r);
    w->rep_comm = g_new(int, groups * w->sh);
    for (int tr = 0; tr < w->t; tr++)
        for (int s = 0; s < w->p; s++) {
            int base = tr * w->p + s;
            for (int rep = 0; rep < r; rep++) {
                w->shard_comm[base * r + rep] = -1;
                if (ics_wl__mirrored(w, tr, rep * w->sh))
                    continue;
                for (int i = 0; i < w->sh; i++)
                    ranks[i] = ics_layout_rank(l, tr, s, rep * w->sh + i);
                char *name = g_strdup_printf("dp.shard.tp%d.pp%d.r%d", tr, s, rep);
                w->shard_comm[base * r + rep] = ics_trace_add_comm(w->trace, ranks, w->sh, name);
                g_free(name);
            }
            for (int k = 0; k < w->sh; k++) {
                w->rep_comm[base * w->sh + k] = -1;
                if (ics_wl__mirrored(w, tr, k))
                    continue;
                for (int i = 0; i < r; i++)
                    ranks[i] = ics_layout_rank(l, tr, s, i * w->sh + k);
                char *name = g_strdup_printf("dp.replicate.tp%d.pp%d.s%d", tr, s, k);
                w->rep_comm[base * w->sh + k] = ics_trace_add_comm(w->trace, ranks, r, name);
                g_free(name);
            }
        }
}

static void make_comms(ics_wl *w)
{
    const ics_layout *l = w->l;
    /* the largest group: tp, dp x cp, or an expert group of the stage's tp x dp */
    int *ranks = g_new(int, MAX(MAX(w->t, w->d * w->c), MAX(w->t * w->d, 2)));
    if (w->t > 1) { /* per (replica, stage, context rank) */
        w->tp_comm = g_new(int, w->p * w->d * w->c);
        for (int dr = 0; dr < w->d; dr++)
            for (int s = 0; s < w->p; s++)
                for (int cr = 0; cr < w->c; cr++) {
                    int k = (dr * w->p + s) * w->c + cr;
                    w->tp_comm[k] = -1;
                    if (ics_wl__mirrored(w, 0, dr))
                        continue;
                    for (int i = 0; i < w->t; i++)
                        ranks[i] = ics_layout_rank_cp(l, i, cr, s, dr);
                    char *name = w->c > 1 ? g_strdup_printf("tp.pp%d.dp%d.cp%d", s, dr, cr)
                                          : g_strdup_printf("tp.pp%d.dp%d", s, dr);
                    w->tp_comm[k] = ics_trace_add_comm(w->trace, ranks, w->t, name);
                    g_free(name);
                }
    }
    /* gradients are reduced over dp x cp: the context-parallel ranks hold the same weights */
    if (w->d * w->c > 1) {
        w->dp_comm = g_new(int, w->t * w->p);
        for (int tr = 0; tr < w->t; tr++)
            for (int s = 0; s < w->p; s++) {
                w->dp_comm[tr * w->p + s] = -1;
                if (ics_wl__mirrored(w, tr, 0))
                    continue;
                for (int i = 0; i < w->d; i++)
                    for (int cr = 0; cr < w->c; cr++)
                        ranks[i * w->c + cr] = ics_layout_rank_cp(l, tr, cr, s, i);
                char *name = g_strdup_printf("dp.tp%d.pp%d", tr, s);
                w->dp_comm[tr * w->p + s] = ics_trace_add_comm(w->trace, ranks, w->d * w->c, name);
                g_free(name);
            }
    }
    if (w->sh < w->d && fsdp(w))
        make_hsdp_comms(w, ranks);
    ics_wl__moe_comms(w, ranks);
    if (w->m->tied_embeddings && w->p > 1) { /* per (tp rank, replica, context rank) */
        w->emb_comm = g_new(int, w->t * w->d * w->c);
        for (int tr = 0; tr < w->t; tr++)
            for (int dr = 0; dr < w->d; dr++)
                for (int cr = 0; cr < w->c; cr++) {
                    int k = (tr * w->d + dr) * w->c + cr;
                    w->emb_comm[k] = -1;
                    if (ics_wl__mirrored(w, tr, dr))
                        continue;
                    ranks[0] = ics_layout_rank_cp(l, tr, cr, 0, dr);
                    ranks[1] = ics_layout_rank_cp(l, tr, cr, w->p - 1, dr);
                    char *name = w->c > 1 ? g_strdup_printf("embedding.tp%d.dp%d.cp%d", tr, dr, cr)
                                          : g_strdup_printf("embedding.tp%d.dp%d", tr, dr);
                    w->emb_comm[k] = ics_trace_add_comm(w->trace, ranks, 2, name);
                    g_free(name);
                }
    }
    g_free(ranks);
}

/* ---- setting up ------------------------------------------------------------------------------ */

static bool check_inputs(const ics_model *m, const ics_layout *l, const ics_hw_gpu_type *g,
                         GError **error)
{
    if (!ics_model_check(m, error) || !ics_layout_check(l, m, error))
        return false;
    if (!g) {
        g_set_error_literal(error, ICS_ERROR, ICS_ERROR_INPUT,
                            "workload: expected a GPU type to time compute on, got none");
        return false;
    }
    if (ics_compute_peak(g, l->dtype) <= 0 ||
        (l->dtype == ICS_DTYPE_FP8 && g->tflops[l->dtype] <= 0)) {
        g_set_error(error, ICS_ERROR, ICS_ERROR_INPUT,
                    "layout: dtype: expected a type GPU %s has tensor cores for (tflops.%s in its "
                    "catalog entry), got %s",
                    g->name, ics_dtype_name(l->dtype), ics_dtype_name(l->dtype));
        return false;
    }
    /* MXFP8's block scales are Blackwell's tensor cores' (sm_100 on); Hopper has none */
    if (l->dtype == ICS_DTYPE_FP8 && l->fp8_recipe == ICS_FP8_MX &&
        (!g->arch || strncmp(g->arch, "sm", 2) != 0 || atoi(g->arch + 2) < 100)) {
        g_set_error(error, ICS_ERROR, ICS_ERROR_INPUT,
                    "layout: fp8_recipe: expected delayed or current on GPU %s (%s), got mxfp8 "
                    "(block scaling needs Blackwell's tensor cores, sm100 or newer)",
                    g->name, g->arch ? g->arch : "architecture unknown");
        return false;
    }
    return true;
}

static void setup(ics_wl *w, const ics_model *m, const ics_layout *l, const ics_hw_gpu_type *g)
{
    *w = (ics_wl){.m = m, .l = l, .g = g, .p = l->pp, .t = l->tp, .d = l->dp, .c = l->cp};
    w->sh = l->fsdp && l->fsdp_shard > 0 ? l->fsdp_shard : l->dp;
    w->nmb = ics_layout_microbatches(l);
    w->V = l->pp * l->vp;
    /* layers per model chunk: each chunk's are set as it is written (set_chunk; uneven stages
     * and a split that counts the embedding and loss make them differ), and the largest stands
     * for the gate arrays and the budget's estimate */
    w->L = 0;
    for (int v = 0; v < w->V; v++)
        w->L = MAX(w->L, ics_layout_chunk_layers(l, m, v));
    w->Lmax = w->L;
    ics_wl__costs(m, l, g, w->cost);
    /* a rank's share of the sequence: seq / cp tokens */
    w->act_bytes =
        (uint64_t)l->mbs * (uint64_t)(m->seq / l->cp) * m->hidden * ics_layout_act_bytes(l);
    w->p2p_bytes = w->act_bytes / (l->sp ? (uint64_t)l->tp : 1);
    w->grad_bytes = ics_layout_grad_bytes(l);
    w->bucket_params = (double)ics_layout_bucket_params(l);
    ics_wl__layer_rank_params(m, l->tp, &w->attn_params, &w->mlp_params);
    double word, pos, fin, out;
    ics_model_edge_params(m, &word, &pos, &fin, &out);
    double word_rank = ceil((double)m->vocab / l->tp) * m->hidden;
    w->embed_params = word_rank + pos;
    /* the last stage holds the output layer, or a copy of the tied embedding (one stage: the
     * same tensor, counted at the embedding) */
    w->head_params = fin + (m->tied_embeddings && w->V == 1 ? 0 : word_rank);
    if (l->lora_rank > 0) {
        /* LoRA: only the adapters train, so they are all the gradients and optimizer hold;
         * the embedding and output layer stay frozen */
        ics_model_lora_params(m, l->lora_rank, &w->attn_params, &w->mlp_params);
        w->attn_params /= l->tp;
        w->mlp_params /= l->tp;
        w->embed_params = w->head_params = 0;
    }
    w->dense = (ics_wl_grads){.comm = -1,
                              .size = l->dp * l->cp,
                              .all_reduce = "dp.all_reduce",
                              .reduce_scatter = "dp.reduce_scatter",
                              .all_gather = "dp.all_gather"};
    w->expert = (ics_wl_grads){.comm = -1,
                               .size = ics_layout_edp(l),
                               .all_reduce = "ep.dp.all_reduce",
                               .reduce_scatter = "ep.dp.reduce_scatter",
                               .all_gather = "ep.dp.all_gather"};
    ics_wl_grads *sets[] = {&w->dense, &w->expert};
    for (int i = 0; i < 2; i++) {
        sets[i]->buckets = g_array_new(FALSE, FALSE, sizeof(double));
        sets[i]->deferred = g_array_new(FALSE, FALSE, sizeof(double));
    }
    ics_wl__moe_setup(w);
    w->gather = g_array_new(FALSE, FALSE, sizeof(double));
    w->gathers = g_array_new(FALSE, FALSE, sizeof(int));
    w->gate = w->chunk_first = NULL;
}

/* Each block of kernels must end within the simulator's horizon (core/time.h): the compute
 * model saturates its time there, and a block that long is the model's part to name. */
static bool check_blocks(const ics_wl *w, GError **error)
{
    for (int b = 0; b < ICS_WL_BLOCK_COUNT; b++) {
        const ics_wl_cost *c = &w->cost[b];
        if (c->dur_ps < ICS_TIME_LIMIT)
            continue;
        g_set_error(error, ICS_ERROR, ICS_ERROR_LIMIT,
                    "model %s: %s (one micro-batch on one tensor-parallel rank: %.3g FLOPs, "
                    "%.3g bytes of HBM traffic) takes longer on GPU %s than the simulator's "
                    "horizon of %s (docs/limits.md)",
                    w->m->name, ics_wl__block_name((ics_wl_block)b), c->flops, c->bytes, w->g->name,
                    ICS_TIME_LIMIT_TEXT);
        return false;
    }
    return true;
}

/* The step's ops, counted from the layout before any is made (docs/workload.md, "Size"): per
 * layer and micro-batch up to 6 forward (4 without sequence parallelism), twice that backward,
 * three times with full recomputation, and 2 pipeline ops; 8 per micro-batch and chunk; one
 * reduction per gradient bucket (two with the distributed optimizer). Not an upper count: GPT-3
 * 175B on 1024 GPUs unfolded counts 17.4M for 19.3M made (the backward's blocks split around
 * their overlapped reductions are counted once); STEP_BYTES_PER_OP is per counted op. */
static uint64_t estimate_ops(const ics_wl *w)
{
    const ics_layout *l = w->l;
    /* per layer and pass: two blocks, each with its collectives (overlapped: three compute
     * parts and three collectives) */
    uint64_t per_pass = (tp_overlap(w) ? 12 : l->sp ? 6 : 4) + (fsdp(w) ? 3 : 0);
    /* a MoE MLP: three compute blocks, two all-to-alls, two tp collectives, a shared MLP with
     * its two, in place of a dense MLP's (at most) three */
    per_pass += w->m->moe.experts > 0 ? 7 : 0;
    per_pass += 2 * (uint64_t)(w->c - 1); /* the context-parallel ring's sends and recvs */
    uint64_t per_layer = per_pass * (l->recompute == ICS_RECOMPUTE_FULL ? 3 : 2) + 2;
    uint64_t layers = (uint64_t)l->vp * (uint64_t)w->L + 2 * (uint64_t)ics_layout_mtp(l);
    double mlp = MAX(w->mlp_params, w->moe_rep_params + w->moe_shared_params);
    double params =
        layers * (w->attn_params + mlp + w->moe_expert_params) + w->embed_params + w->head_params;
    double buckets = params / MAX(w->bucket_params, 1.0) * (l->dist_opt ? 2 : 1) + 2;
    uint64_t per_rank = ics_budget_mul_add((uint64_t)w->nmb, per_layer * layers + 8 * l->vp, 64);
    per_rank += buckets < 1e15 ? (uint64_t)buckets : UINT64_C(1) << 50;
    uint64_t ranks = l->fold ? (uint64_t)w->p * (uint64_t)w->c : (uint64_t)ics_layout_world(l);
    return ics_budget_mul_add(per_rank, ranks, 0);
}

static bool check_budget(const ics_wl *w, GError **error)
{
    uint64_t ops = estimate_ops(w);
    char *what = g_strdup_printf("model %s: a step of about %" G_GUINT64_FORMAT " ops x %d B",
                                 w->m->name, ops, STEP_BYTES_PER_OP);
    bool ok = ics_budget_check(ics_budget_mul_add(ops, STEP_BYTES_PER_OP, 0), what, error);
    g_free(what);
    return ok;
}

static void teardown(ics_wl *w)
{
    g_free(w->tp_comm);
    g_free(w->dp_comm);
    g_free(w->emb_comm);
    g_free(w->shard_comm);
    g_free(w->rep_comm);
    g_free(w->ep_comm);
    g_free(w->edp_comm);
    g_free(w->ep_row);
    ics_wl_grads *sets[] = {&w->dense, &w->expert};
    for (int i = 0; i < 2; i++) {
        g_array_free(sets[i]->buckets, TRUE);
        g_array_free(sets[i]->deferred, TRUE);
    }
    g_array_free(w->gather, TRUE);
    g_array_free(w->gathers, TRUE);
    g_free(w->gate);
    g_free(w->chunk_first);
}

static void add_streams(ics_trace *tr, int rank)
{
    static const char *const names[ICS_WL_STREAM_COUNT] = {
        "compute",      "pp.send.act", "dp",        "pp.recv.act", "pp.send.grad",
        "pp.recv.grad", "tp.overlap",  "dp.gather", "cp.send",     "cp.recv"};
    for (int s = 0; s < ICS_WL_STREAM_COUNT; s++)
        ics_trace_add_stream(tr, rank, names[s]);
}

ics_trace *ics_workload_build(const ics_model *m, const ics_layout *l, const ics_hw_gpu_type *g,
                              GError **error)
{
    if (!check_inputs(m, l, g, error))
        return NULL;
    ics_wl w;
    setup(&w, m, l, g);
    if (!check_blocks(&w, error) || !check_budget(&w, error)) {
        teardown(&w);
        return NULL;
    }
    int world = ics_layout_world(l);
    w.trace = ics_trace_new(world);
    for (int r = 0; r < world; r++)
        add_streams(w.trace, r);
    make_comms(&w);
    for (w.s = 0; w.s < w.p; w.s++) {
        int nsteps;
        ics_wl_step *sched = ics_workload_schedule(l, w.s, &nsteps);
        for (w.dpr = 0; w.dpr < w.d; w.dpr++)
            for (w.cpr = 0; w.cpr < w.c; w.cpr++)
                for (w.tpr = 0; w.tpr < w.t; w.tpr++) {
                    if (ics_wl__mirrored(&w, w.tpr, w.dpr))
                        continue;
                    w.rank = ics_layout_rank_cp(l, w.tpr, w.cpr, w.s, w.dpr);
                    write_rank(&w, sched, nsteps);
                }
        g_free(sched);
    }
    teardown(&w);
    return w.trace;
}
