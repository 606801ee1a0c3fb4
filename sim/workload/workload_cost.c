/* What the generator's compute ops cost (workload_internal.h) and the FLOP counts of a step
 * (workload.h). Both come from one list of kernels per block, so the FLOPs a trace carries and
 * the FLOPs the tests compare with Megatron's formula are the same numbers. */
#include "workload/workload_internal.h"
#include "workload/compute.h"

#include <math.h>

static const char *const block_names[ICS_WL_BLOCK_COUNT] = {
    "fwd.embed",       "bwd.embed",         "fwd.attn",
    "bwd.attn",        "fwd.mlp",           "bwd.mlp",
    "fwd.head",        "bwd.head",          "rec.attn.core",
    "fwd.moe.router",  "bwd.moe.router",    "fwd.moe.experts",
    "bwd.moe.experts", "fwd.moe.unpermute", "bwd.moe.unpermute",
    "fwd.moe.shared",  "bwd.moe.shared",    "fwd.mtp",
    "bwd.mtp"};

const char *ics_wl__block_name(ics_wl_block b)
{
    return (unsigned)b < ICS_WL_BLOCK_COUNT ? block_names[b] : "?";
}

/* One micro-batch on one tensor-parallel rank: the shapes every kernel sees. */
typedef struct {
    const ics_hw_gpu_type *g;
    ics_dtype gemm_dtype; /* the layout's: fp8 GEMMs when asked */
    ics_fp8_recipe fp8;   /* with fp8 GEMMs, how TE scales (fp8_quantize) */
    double gemm_in_bytes; /* per element of a GEMM's inputs */
    double act;           /* bytes per activation element (bf16) */
    double T;             /* tokens: mbs x seq */
    double Te;            /* tokens an elementwise kernel on the residual stream sees (T / tp
                             with sequence parallelism) */
    double s, h, dh, heads, kv, ffn, fc1, vocab; /* per rank where split */
    double tp;
    bool swiglu;
    bool unfused; /* attention without FlashAttention */
    double keys;  /* keys each query attends to: the sequence, or a packed sample's length */
    bool frozen;  /* LoRA: the base weights get no gradient */
    bool
        tp_overlap; /* --tp-comm-overlap: the GEMMs beside userbuffers' collectives run in chunks */
    bool tp_async;  /* the backward's reductions beside the weight gradients (NCCL kernels) */
    bool sp;
    double lora; /* its adapters' rank (0: none) */
    /* mixture of experts: experts (of the model) and on the rank, token copies one expert
     * layer processes on the rank (after the tensor-parallel gather), each expert's width per
     * rank, the shared experts' */
    double experts, local_experts, Tx, moe_ffn, shared_ffn, topk_copies;
    bool dropless; /* no capacity factor: each expert takes what it is sent */
    bool deepep;   /* the flex dispatcher (DeepEP / HybridEP): no sorts by local expert */
    ics_wl_cost *c;
} kern;

/* A kernel that does `run` FLOPs of the `flops` counted for it (fused causal attention skips the
 * key blocks past the diagonal; every other kernel runs what is counted). */
static void add_run(kern *k, ics_work_kind w, ics_dtype d, double flops, double run, double bytes,
                    double batch, double m, double n, double kk)
{
    k->c->flops += flops;
    k->c->bytes += bytes;
    k->c->kernels++;
    k->c->launches++;
    if (k->g) /* saturates */
        k->c->dur_ps = ics_time_add(k->c->dur_ps,
                                    ics_compute_batched(k->g, w, d, run, bytes, batch, m, n, kk));
}

static void add(kern *k, ics_work_kind w, ics_dtype d, double flops, double bytes, double batch,
                double m, double n, double kk)
{
    add_run(k, w, d, flops, flops, bytes, batch, m, n, kk);
}

/* Y (m x n) = X (m x k) . W (k x n) */
static void gemm(kern *k, double m, double n, double kk)
{
    add(k, ICS_WORK_GEMM, k->gemm_dtype, 2 * m * n * kk,
        (m * kk + kk * n) * k->gemm_in_bytes + m * n * k->act, 1, m, n, kk);
}

/* Its backward: dX = dY . W^T (m x k, inner n) and dW = X^T . dY (k x n, inner m). */
static void gemm_bwd(kern *k, double m, double n, double kk)
{
    gemm(k, m, kk, n);
    gemm(k, kk, n, m);
}

static void chunked_gemm(kern *k, double m, double n, double kk, int chunks, int lost);

/* A linear layer's backward: dX by `dx` (gemm, or a userbuffers variant), and dW unless its
 * weight is frozen (LoRA), on the SMs less `dw_lost`. */
static void backward(kern *k, double m, double n, double kk,
                     void (*dx)(kern *, double, double, double), int dw_lost)
{
    dx(k, m, kk, n);
    if (!k->frozen)
        chunked_gemm(k, kk, n, m, 1, dw_lost);
}

static void linear_bwd(kern *k, double m, double n, double kk)
{
    backward(k, m, n, kk, gemm, 0);
}

/* A LoRA adapter beside a frozen linear layer of in x out on this rank: X . A (in x r) then
 * . B (r x out), both trained. Each adapter's matrices split over tp along the base weight's
 * split dimension, so a rank runs 1/tp of it (NeMo's adapters also gather the T x r
 * intermediate over tp: not modelled, r is small). */
static void adapter(kern *k, bool fwd, double in, double out)
{
    if (k->lora <= 0)
        return;
    if (fwd) {
        gemm(k, k->T, k->lora, in);
        gemm(k, k->T, out, k->lora);
    } else {
        gemm_bwd(k, k->T, out, k->lora);
        gemm_bwd(k, k->T, k->lora, in);
    }
}

static void elementwise(kern *k, double bytes)
{
    add(k, ICS_WORK_ELEMENTWISE, ICS_DTYPE_BF16, 0, bytes, 0, 0, 0, 0);
}

/* `n` kernels around the big ones whose work is negligible (index maps, counts, scalars, loss
 * bookkeeping): each still costs the GPU a launch gap and the host a launch. */
static void small_kernels(kern *k, int n)
{
    for (int i = 0; i < n; i++)
        elementwise(k, 0);
}

/* Transformer Engine's FP8 (an fp8 layout): a GEMM reads FP8 operands that kernels of their own
 * write. In forward the input is cast to FP8 with its transpose kept for the weight gradient
 * (TE's cast_transpose: 2 B read, 1 + 1 B written per element); in backward the output gradient
 * likewise; the weights' casts are once a step (the optimizer op, workload.c). A grouped GEMM's
 * input is quantized in `pieces`, one per expert (TE's split_quantize ->
 * multi_tensor_quantize_impl, pytorch/csrc/extensions/cast.cpp): under delayed scaling by one
 * fused multi-tensor cast-transpose (nvte_multi_cast_transpose), otherwise piece by piece. A
 * quantize under current scaling is four kernels, the amax of the tensor itself before its scale
 * (zero the amax, reduce it reading the input, compute the scale, cast-transpose:
 * Float8CurrentScalingQuantizer::quantize, common/util/current_scaling.cu); under delayed and
 * MXFP8 scaling one, the amax or the block scales riding in the cast. bf16 layouts: nothing. */
static void fp8_quantize(kern *k, double elems, double pieces)
{
    if (k->gemm_dtype != ICS_DTYPE_FP8)
        return;
    if (k->fp8 == ICS_FP8_DELAYED) {
        elementwise(k, 4 * elems);
        return;
    }
    int n = (int)fmax(1, ceil(pieces));
    for (int i = 0; i < n; i++) {
        if (k->fp8 == ICS_FP8_CURRENT) {
            small_kernels(k, 2);           /* zero the amax; the scale from it */
            elementwise(k, 2 * elems / n); /* the amax: the piece read once */
        }
        elementwise(k, 4 * elems / n);
    }
}

static void fp8_cast(kern *k, double elems)
{
    fp8_quantize(k, elems, 1);
}

/* Batched GEMMs, one per (sequence, head): bf16 operands and output. */
static void batched_gemm(kern *k, double batch, double m, double n, double kk)
{
    add(k, ICS_WORK_GEMM, ICS_DTYPE_BF16, batch * 2 * m * n * kk,
        batch * (m * kk + kk * n + m * n) * k->act, batch, m, n, kk);
}

/* Megatron-LM before FlashAttention: scores Q.K^T by batched GEMM into HBM, a fused
 * scale-mask-softmax (read, write), dropout (read, write, one-byte mask), values P.V by
 * batched GEMM; the backward mirrors it (four batched GEMMs, dropout's and softmax's
 * backward). */
static void unfused_core(kern *k, bool fwd)
{
    double batch = k->T / k->s * k->heads, s = k->s, dh = k->dh;
    double pass = batch * s * s * k->act, mask = batch * s * s;
    if (fwd) {
        batched_gemm(k, batch, s, s, dh);
        elementwise(k, 2 * pass);
        elementwise(k, 2 * pass + mask);
        batched_gemm(k, batch, s, dh, s);
    } else {
        batched_gemm(k, batch, s, s, dh); /* dP = dO . V^T */
        batched_gemm(k, batch, s, dh, s); /* dV = P^T . dO */
        elementwise(k, 2 * pass + mask);
        elementwise(k, 3 * pass);
        batched_gemm(k, batch, s, dh, s); /* dQ = dS . K */
        batched_gemm(k, batch, s, dh, s); /* dK = dS^T . Q */
    }
}

/* The share of a causal attention's query x key pairs a fused kernel computes. FlashAttention and
 * cuDNN walk the scores in tiles of ATTN_TILE queries x ATTN_TILE keys and skip every tile wholly
 * above the diagonal: of n x n tiles, n(n+1)/2 run, (1 + 1/n) / 2 of the work (0.508 at 8192
 * keys). The tile is FlashAttention-3's forward tile for head dim 128 (Shah et al.,
 * arXiv:2407.08608, section 3). */
#define ATTN_TILE 128.0

static double causal_share(double keys)
{
    double n = ceil(keys / ATTN_TILE);
    return n > 1 ? (n + 1) / (2 * n) : 1;
}

/* Scores Q.K^T and values P.V, the backward twice that. Counted over all s x s pairs (Megatron's
 * count, so the FLOPs match its formula); run as the fused kernel runs a causal mask, the tiles
 * past the diagonal skipped (causal_share), reading Q, K, V and writing the output, at the
 * attention efficiency. Unfused: see above (the scores are computed whole, then masked). */
static void attention_core(kern *k, bool fwd)
{
    if (k->unfused) {
        unfused_core(k, fwd);
        return;
    }
    double times = fwd ? 1 : 2;
    double flops = 2 * 2 * k->T * k->keys * k->heads * k->dh;
    double bytes = (2 * k->heads + 2 * k->kv) * k->T * k->dh * k->act;
    add_run(k, ICS_WORK_ATTENTION, ICS_DTYPE_BF16, times * flops,
            times * flops * causal_share(k->keys), times * bytes, 0, 0, 0, 0);
}

/* Norm: read and write the residual stream; bias-dropout-add: read two, write one, plus the
 * one-byte dropout mask. */
static double norm_bytes(const kern *k)
{
    return 2 * k->Te * k->h * k->act;
}

static double bda_bytes(const kern *k)
{
    return 3 * k->Te * k->h * k->act + k->Te * k->h;
}

static double qkv_out(const kern *k)
{
    return (k->heads + 2 * k->kv) * k->dh;
}

/* Runs GEMM (or its backward pair) `f` and returns the time it added to the block. */
static ics_time timed(kern *k, void (*f)(kern *, double, double, double), double m, double n,
                      double kk)
{
    ics_time before = k->c->dur_ps;
    f(k, m, n, kk);
    return k->c->dur_ps - before;
}

/* ---- Transformer Engine's userbuffers (--tp-comm-overlap) ---- */

/* What TE's initialize_ub gives a pipelined reduce-scatter when no configuration names one: its
 * chunks (num_splits) and the SMs that run it (num_sm), which the GEMM beside it does not get
 * (set_sm_margin). NeMo's H100 configurations vary them (16-24 SMs for bf16; FP8 ones ring-
 * exchange the reduce-scatter on 1 SM); these are the defaults Megatron-Core gets. */
#define UB_RS_SPLITS 4
#define UB_RS_SMS    16

/* GEMM Y (m x n) = X (m x k) . W run as `chunks` GEMMs of m / chunks rows each, on all of the
 * GPU's SMs but `lost` (their share of the peak with them): how userbuffers runs a GEMM beside
 * its collective, one chunk computing while the next moves. TE launches the chunks round-robin
 * on several compute streams (CommOverlap's _stream_compute[i % n], 3 by default), so
 * consecutive chunks run at once and their tiles share the waves: the chunks cost the whole
 * GEMM's waves, plus a launch each. */
static void chunked_gemm(kern *k, double m, double n, double kk, int chunks, int lost)
{
    const ics_hw_gpu_type *whole = k->g;
    ics_hw_gpu_type fewer;
    if (whole && lost > 0 && whole->sms > lost) {
        fewer = *whole;
        fewer.sms = whole->sms - lost;
        for (int d = 0; d < ICS_DTYPE_COUNT; d++)
            fewer.tflops[d] *= (double)fewer.sms / whole->sms;
        k->g = &fewer;
    }
    gemm(k, m, n, kk);
    for (int c = 1; c < chunks; c++) /* the other chunks' launches */
        add(k, ICS_WORK_ELEMENTWISE, ICS_DTYPE_BF16, 0, 0, 0, 0, 0, 0);
    k->g = whole;
}

/* The GEMM that consumes an all-gathered input (QKV, fc1): TE's ring exchange computes on each
 * of the tp shards as it arrives, moving the next with one SM. */
static void gemm_ag(kern *k, double m, double n, double kk)
{
    if (k->tp_overlap)
        chunked_gemm(k, m, n, kk, (int)k->tp, 0);
    else
        gemm(k, m, n, kk);
}

/* The GEMM whose output is reduce-scattered (projection, fc2): pipelined in UB_RS_SPLITS
 * chunks on the SMs the reduce-scatter leaves. */
static void gemm_rs(kern *k, double m, double n, double kk)
{
    if (k->tp_overlap)
        chunked_gemm(k, m, n, kk, UB_RS_SPLITS, UB_RS_SMS);
    else
        gemm(k, m, n, kk);
}

/* A backward whose data gradient consumes an all-gathered output gradient (the projection's,
 * fc2's): the data gradient ring-exchanged like gemm_ag, the weight gradient whole. */
static void linear_bwd_ag(kern *k, double m, double n, double kk)
{
    backward(k, m, n, kk, gemm_ag, 0);
}

/* SMs an NCCL collective inside an NVLink node holds while a GEMM runs beside it: one per
 * channel, and NCCL runs its widest NVLink collectives on 24 (collectives/channels.c). */
#define NCCL_TP_SMS 24

/* Seconds a tensor-parallel ring collective beside a GEMM holds its SMs: what each rank sends,
 * `passes` x (tp - 1) / tp of the b s h activation (1: all-gather or reduce-scatter, 2:
 * all-reduce), at the GPU's NVLink bandwidth. An estimate for pricing the GEMM only: the
 * collective's own time is the network's, in the replay. 0 without NVLink (none overlapped). */
static double tp_coll_s(const kern *k, double passes)
{
    const ics_hw_gpu_type *g = k->g;
    if (!g || !g->nvlink || g->nvlinks <= 0)
        return 0;
    double bw = (double)ics_hw_standard_bw(g->nvlink, g->nvlinks);
    return passes * (k->tp - 1) / k->tp * k->T * k->h * k->act / bw;
}

/* GEMM X (m x k) . W beside an NCCL collective lasting `beside` seconds: on every SM but
 * NCCL_TP_SMS while the collective runs, on all of them after. */
static void gemm_beside_nccl(kern *k, double m, double n, double kk, double beside)
{
    kern whole = *k;
    ics_wl_cost scratch = {0};
    whole.c = &scratch;
    gemm(&whole, m, n, kk);
    double full = (double)scratch.dur_ps / ICS_PS_PER_S;
    ics_time before = k->c->dur_ps;
    chunked_gemm(k, m, n, kk, 1, beside > 0 ? NCCL_TP_SMS : 0);
    double fewer = (double)(k->c->dur_ps - before) / ICS_PS_PER_S;
    /* the part done while the collective runs, at the fewer SMs' rate; the rest at full */
    double t = beside >= fewer ? fewer : beside + (1 - beside / fewer) * full;
    k->c->dur_ps = before + (ics_time)llround(t * ICS_PS_PER_S);
}

/* The QKV's and fc1's backward: the data gradient beside a bulk all-gather of the layer's input
 * (a few SMs), the weight gradient beside the bulk reduce-scatter of that data gradient, whose
 * kernel holds UB_RS_SMS SMs the GEMM cannot use while it runs (TE's bulk overlap; NeMo's H100
 * configurations give it 2-24). Without userbuffers, Megatron's Linear backward does the same
 * with NCCL (workload.c, async_bwd_block): the data gradient beside the input's all-gather
 * (with sequence parallelism), the weight gradient beside the reduction, each NCCL kernel
 * holding NCCL_TP_SMS SMs while it runs. */
static void linear_bwd_rs(kern *k, double m, double n, double kk)
{
    if (!k->tp_async) {
        backward(k, m, n, kk, gemm, k->tp_overlap ? UB_RS_SMS : 0);
        return;
    }
    ics_time before = k->c->dur_ps;
    /* frozen (LoRA): no weight gradient, no re-gather of its input beside the data gradient */
    gemm_beside_nccl(k, m, kk, n, k->sp && !k->frozen ? tp_coll_s(k, 1) : 0);
    k->c->gemm_out_dx_ps = k->c->dur_ps - before;
    if (!k->frozen)
        gemm_beside_nccl(k, kk, n, m, tp_coll_s(k, k->sp ? 1 : 2));
}

static void attn_block(kern *k, bool fwd)
{
    double x = fwd ? 1 : 2; /* a backward elementwise kernel moves about twice the bytes */
    elementwise(k, x * norm_bytes(k));
    if (fwd) {
        fp8_cast(k, k->T * k->h);
        k->c->gemm_in_ps = timed(k, gemm_ag, k->T, qkv_out(k), k->h);
        adapter(k, true, k->h / k->tp, qkv_out(k));
        attention_core(k, true);
        fp8_cast(k, k->T * k->heads * k->dh);
        k->c->gemm_out_ps = timed(k, gemm_rs, k->T, k->h, k->heads * k->dh);
        adapter(k, true, k->heads * k->dh, k->h / k->tp);
    } else {
        fp8_cast(k, k->T * k->h);
        k->c->gemm_in_ps = timed(k, linear_bwd_ag, k->T, k->h, k->heads * k->dh);
        adapter(k, false, k->heads * k->dh, k->h / k->tp);
        attention_core(k, false);
        fp8_cast(k, k->T * qkv_out(k));
        k->c->gemm_out_ps = timed(k, linear_bwd_rs, k->T, qkv_out(k), k->h);
        adapter(k, false, k->h / k->tp, qkv_out(k));
    }
    elementwise(k, x * bda_bytes(k));
}

/* An MLP's GEMMs and activation (of width k->ffn), between its norm and its residual add. */
static void mlp_gemms(kern *k, bool fwd)
{
    double x = fwd ? 1 : 2;
    /* GeLU reads and writes its input; SwiGLU reads two and writes one */
    double act_bytes = (k->swiglu ? 3 : 2) * k->T * k->ffn * k->act;
    if (fwd) {
        fp8_cast(k, k->T * k->h);
        k->c->gemm_in_ps = timed(k, gemm_ag, k->T, k->fc1, k->h);
        adapter(k, true, k->h / k->tp, k->fc1);
        elementwise(k, act_bytes);
        fp8_cast(k, k->T * k->ffn);
        k->c->gemm_out_ps = timed(k, gemm_rs, k->T, k->h, k->ffn);
        adapter(k, true, k->ffn, k->h / k->tp);
    } else {
        fp8_cast(k, k->T * k->h);
        k->c->gemm_in_ps = timed(k, linear_bwd_ag, k->T, k->h, k->ffn);
        adapter(k, false, k->ffn, k->h / k->tp);
        elementwise(k, x * act_bytes);
        fp8_cast(k, k->T * k->fc1);
        k->c->gemm_out_ps = timed(k, linear_bwd_rs, k->T, k->fc1, k->h);
        adapter(k, false, k->h / k->tp, k->fc1);
    }
}

static void mlp_block(kern *k, bool fwd)
{
    double x = fwd ? 1 : 2;
    elementwise(k, x * norm_bytes(k));
    mlp_gemms(k, fwd);
    elementwise(k, x * bda_bytes(k));
}

/* ---- mixture of experts (workload_moe.c) ---- */

/* `groups` GEMMs of one shape, one per expert, as Megatron-Core's TEGroupedMLP runs the rank's
 * experts: TE's GroupedLinear (general_grouped_gemm -> multi_stream_cublas_gemm) launches one
 * cuBLAS GEMM per expert, expert i on compute stream i mod 4. So at most 4 experts' GEMMs run
 * at once: the GEMMs go in rounds of up to 4, the tiles of a round sharing the SMs (a round of
 * small per-expert GEMMs fills one wave, and the next round waits for it), each GEMM its own
 * launch. (TE's CUTLASS grouped kernel, one launch for all experts, is opt-in on Hopper with
 * NVTE_USE_CUTLASS_GROUPED_GEMM and bf16 only; FP8 always takes this path.) The rounds are
 * ics_compute_grouped's (compute.h), which `icsim calibrate` checks against measured groups. */
static void grouped(kern *k, double groups, double m, double n, double kk)
{
    for (double left = groups; left > 0; left -= ICS_TE_COMPUTE_STREAMS) {
        double r = MIN(left, ICS_TE_COMPUTE_STREAMS);
        add(k, ICS_WORK_GEMM, k->gemm_dtype, r * 2 * m * n * kk,
            r * ((m * kk + kk * n) * k->gemm_in_bytes + m * n * k->act), r, m, n, kk);
        k->c->launches += (int)r - 1; /* one cuBLAS launch per expert (the host's cost) */
    }
}

static void grouped_bwd(kern *k, double groups, double m, double n, double kk)
{
    grouped(k, groups, m, kk, n);
    grouped(k, groups, kk, n, m);
}

/* The small kernels Megatron-Core's MoE layer launches around its big ones, as its all-to-all
 * dispatcher runs with the fused router and permutation Megatron-Bridge's recipes set
 * (moe_router_fusion, moe_permute_fusion, aux-loss balancing; Megatron-Core 0.15-0.16,
 * Transformer Engine 2.9-2.12, read from their source):
 * - the router's forward: force-balanced logits (2, the benchmarks' setting), TE's fused top-k,
 *   the aux loss's scores, the routing map's sum, TE's aux-loss kernel, the loss tracker (2),
 *   beside the gate GEMM and the top-k's memory traffic counted below: 7 more;
 * - the dispatcher's preprocessing (token counts, sums, contiguous copies): 7;
 * - the fused permutation's three row-id-map kernels before its copy: 3;
 * - the router's backward: the aux loss's scaler (2), its backward, the score's backward, the
 *   logits' gradient add, the gate weight's main_grad add, the input gradient's accumulation:
 *   7 beside the gate GEMMs and the top-k's backward below.
 * The all-to-alls of the routing probabilities and the all-gather of the token counts (tiny
 * collectives) are not listed (docs/workload.md). */
#define MOE_ROUTER_FWD_SMALL  7
#define MOE_PREPROCESS_SMALL  7
#define MOE_PERMUTE_MAP_SMALL 3
#define MOE_ROUTER_BWD_SMALL  7
/* FP8 needs each expert's rows a multiple of 16 (MXFP8: 32): without a capacity (dropless) the
 * experts pad their input and probabilities and unpad the output (Fp8Padding / Fp8Unpadding),
 * forward and backward */
#define MOE_FP8_PAD_SMALL 3

/* Norm, the router's gate GEMM (tokens x experts) and top-k softmax in fp32, and the permute
 * that copies each token once per expert it goes to, with the small kernels around them. */
static void router_block(kern *k, bool fwd)
{
    double x = fwd ? 1 : 2, scores = k->Te * k->experts * 4;
    double permute = (1 + k->topk_copies) * k->Te * k->h * k->act;
    if (fwd) {
        elementwise(k, norm_bytes(k));
        gemm(k, k->Te, k->experts, k->h);
        elementwise(k, 2 * scores);
        small_kernels(k, MOE_ROUTER_FWD_SMALL + MOE_PREPROCESS_SMALL + MOE_PERMUTE_MAP_SMALL);
        elementwise(k, permute);
    } else {
        elementwise(k, permute);
        elementwise(k, 3 * scores);
        small_kernels(k, MOE_ROUTER_BWD_SMALL);
        gemm_bwd(k, k->Te, k->experts, k->h);
        elementwise(k, x * norm_bytes(k));
    }
}

/* With several local experts the all-to-all dispatcher reorders what the all-to-all brought
 * from each rank into one block per expert, and back before the combine (sort_chunks_by_idxs:
 * the tokens' copy, and the probabilities' alongside, forward; the tokens' backward). The flex
 * dispatcher (DeepEP, HybridEP) receives the tokens in expert order: no sort. */
static void sort_chunks(kern *k, bool fwd)
{
    if (k->local_experts <= 1 || k->deepep)
        return;
    elementwise(k, 2 * k->Tx * k->h * k->act);
    if (fwd)
        small_kernels(k, 1);
}

/* The rank's experts on the token copies they were sent, each expert's input an m x h matrix
 * with m = its share of the copies, between the dispatcher's sorts; FP8 quantizes each
 * expert's share apart (fp8_quantize). */
static void experts_block(kern *k, bool fwd)
{
    double g = k->local_experts, m = k->Tx / g, f = k->moe_ffn, fc1 = (k->swiglu ? 2 : 1) * f;
    double act_bytes = (k->swiglu ? 3 : 2) * k->Tx * f * k->act;
    sort_chunks(k, fwd);
    if (k->gemm_dtype == ICS_DTYPE_FP8 && k->dropless)
        small_kernels(k, MOE_FP8_PAD_SMALL);
    if (fwd) {
        fp8_quantize(k, k->Tx * k->h, g);
        grouped(k, g, m, fc1, k->h);
        elementwise(k, act_bytes);
        fp8_quantize(k, k->Tx * f, g);
        grouped(k, g, m, k->h, f);
    } else {
        fp8_quantize(k, k->Tx * k->h, g);
        grouped_bwd(k, g, m, k->h, f);
        elementwise(k, 2 * act_bytes);
        fp8_quantize(k, k->Tx * fc1, g);
        grouped_bwd(k, g, m, fc1, k->h);
    }
    sort_chunks(k, fwd);
}

/* Tokens back in order, each the routing-weighted sum of its copies, then the residual add. */
static void unpermute_block(kern *k, bool fwd)
{
    double x = fwd ? 1 : 2;
    elementwise(k, x * (1 + k->topk_copies) * k->Te * k->h * k->act);
    elementwise(k, x * bda_bytes(k));
}

static void shared_block(kern *k, bool fwd)
{
    if (k->shared_ffn <= 0)
        return;
    kern s = *k;
    s.tp_overlap = false; /* its collectives are not overlapped (workload_moe.c: shared) */
    s.tp_async = false;
    s.ffn = k->shared_ffn;
    s.fc1 = (k->swiglu ? 2 : 1) * s.ffn;
    mlp_gemms(&s, fwd);
}

/* Logits in bf16 whatever the layout's dtype: Megatron-Core's output layer is its own
 * ColumnParallelLinear (a torch matmul), not a Transformer Engine module, so FP8 never reaches
 * it. The vocabulary-parallel cross-entropy in fp32 (about three passes). */
static void head_block(kern *k, bool fwd)
{
    double ce = 3 * k->T * k->vocab * 4;
    kern b = *k;
    b.gemm_dtype = ICS_DTYPE_BF16;
    b.gemm_in_bytes = 2;
    if (fwd) {
        elementwise(k, norm_bytes(k));
        gemm(&b, k->T, k->vocab, k->h);
        elementwise(k, ce);
    } else {
        elementwise(k, ce);
        linear_bwd(&b, k->T, k->vocab, k->h);
        elementwise(k, 2 * norm_bytes(k));
    }
}

/* Megatron-Core's multi-token-prediction block ahead of its decoder layer: the next tokens'
 * embedding (the shared embedding's lookup), RMSNorm of it and of the decoder's output, their
 * concatenation projected 2h -> h (a column-parallel linear: h / tp outputs a rank; its
 * tensor-parallel gather is not priced); backward the same, and the embedding's gradient. */
static void mtp_block(kern *k, bool fwd)
{
    double th = k->T * k->h;
    if (fwd) {
        elementwise(k, 3 * th * k->act);
        elementwise(k, 2 * norm_bytes(k));
        gemm(k, k->T, k->h / k->tp, 2 * k->h);
    } else {
        linear_bwd(k, k->T, k->h / k->tp, 2 * k->h);
        elementwise(k, 4 * norm_bytes(k));
        elementwise(k, th * k->act + 2 * th * 4);
    }
}

/* Lookup writes T x h (adding positions reads two); the backward scatters the gradient into the
 * fp32 embedding gradient. */
static void embed_block(kern *k, bool fwd)
{
    double th = k->T * k->h;
    if (!fwd && k->frozen) /* a frozen embedding takes no gradient */
        return;
    elementwise(k, fwd ? 3 * th * k->act : th * k->act + 2 * th * 4);
}

static kern kern_of(const ics_model *m, const ics_layout *l, const ics_hw_gpu_type *g)
{
    int t = l->tp;
    kern k = {.g = g,
              .gemm_dtype = l->dtype,
              .fp8 = l->fp8_recipe,
              .gemm_in_bytes = l->dtype == ICS_DTYPE_FP8 ? 1 : 2,
              .act = ics_layout_act_bytes(l),
              .T = (double)l->mbs * m->seq / l->cp, /* context parallelism: a sequence share */
              .s = m->seq,
              .h = m->hidden,
              .dh = ics_model_head_dim(m),
              .heads = (double)m->heads / t,
              .kv = (double)m->kv_heads / t,
              .ffn = (double)m->ffn / t,
              .vocab = ceil((double)m->vocab / t), /* Megatron pads the vocabulary */
              .swiglu = m->act == ICS_ACT_SWIGLU,
              .unfused = l->attention == ICS_ATTN_UNFUSED,
              .keys = l->packed_len > 0 ? l->packed_len : m->seq,
              .frozen = l->lora_rank > 0,
              .lora = l->lora_rank,
              .tp = t};
    k.Te = l->sp ? k.T / t : k.T;
    k.fc1 = (k.swiglu ? 2 : 1) * k.ffn;
    k.tp_overlap = l->tp_comm_overlap && l->sp && t > 1;
    k.tp_async = !k.tp_overlap && !l->tp_sync_bwd && t > 1;
    k.sp = l->sp;
    if (m->moe.experts > 0) {
        /* balanced routing: each rank's experts get topk x its group's tokens / experts each
         * (padded to capacity x that with a capacity factor), gathered over tp; with etp = 1
         * each rank keeps its own sequence shard's and its experts whole */
        double cf = l->moe_capacity > 0 ? l->moe_capacity : 1;
        int etp = ics_layout_etp(l);
        k.experts = m->moe.experts;
        k.local_experts = (double)m->moe.experts / l->ep;
        k.topk_copies = m->moe.topk * cf;
        k.dropless = l->moe_capacity <= 0;
        k.deepep = l->moe_deepep;
        k.Tx = (etp < t ? k.Te : k.T) * k.topk_copies;
        k.moe_ffn = (double)m->moe.ffn / etp;
        k.shared_ffn = (double)m->moe.shared_ffn / t;
    }
    return k;
}

/* CUDA graphs (layout.h: ics_graph_scope): a captured region costs the host one launch, a graph
 * replay, whatever its kernels. Whole layers: every block of a transformer layer one launch
 * (icsim splits a layer into several ops, each charged one: a few launches a layer, not one).
 * The router's scope (TE's moe_router + moe_preprocess graphs): the router's and the
 * preprocessing's kernels one replay; the fused permutation after it stays outside (forward its
 * map kernels and copy, backward its copy). */
static void graph_launches(const ics_layout *l, ics_wl_cost out[ICS_WL_BLOCK_COUNT])
{
    static const ics_wl_block layer[] = {
        ICS_WL_ATTN_FWD,    ICS_WL_ATTN_BWD,      ICS_WL_MLP_FWD,       ICS_WL_MLP_BWD,
        ICS_WL_ATTN_RECOMP, ICS_WL_ROUTER_FWD,    ICS_WL_ROUTER_BWD,    ICS_WL_EXPERTS_FWD,
        ICS_WL_EXPERTS_BWD, ICS_WL_UNPERMUTE_FWD, ICS_WL_UNPERMUTE_BWD, ICS_WL_SHARED_FWD,
        ICS_WL_SHARED_BWD};
    if (l->cuda_graph == ICS_GRAPH_FULL) {
        for (size_t i = 0; i < G_N_ELEMENTS(layer); i++)
            out[layer[i]].launches = MIN(out[layer[i]].launches, 1);
    } else if (l->cuda_graph == ICS_GRAPH_MOE_ROUTER && out[ICS_WL_ROUTER_FWD].kernels > 0) {
        out[ICS_WL_ROUTER_FWD].launches = 1 + MOE_PERMUTE_MAP_SMALL + 1;
        out[ICS_WL_ROUTER_BWD].launches = 1 + 1;
        /* the scope takes in the shared experts (Megatron-Core's moe_router scope, without
         * shared-expert overlap, which icsim does not model) */
        out[ICS_WL_SHARED_FWD].launches = MIN(out[ICS_WL_SHARED_FWD].launches, 1);
        out[ICS_WL_SHARED_BWD].launches = MIN(out[ICS_WL_SHARED_BWD].launches, 1);
    }
}

void ics_wl__costs(const ics_model *m, const ics_layout *l, const ics_hw_gpu_type *g,
                   ics_wl_cost out[ICS_WL_BLOCK_COUNT])
{
    kern k = kern_of(m, l, g);
    for (int b = 0; b < ICS_WL_BLOCK_COUNT; b++) {
        out[b] = (ics_wl_cost){0};
        k.c = &out[b];
        switch ((ics_wl_block)b) {
        case ICS_WL_EMBED_FWD:
        case ICS_WL_EMBED_BWD:
            embed_block(&k, b == ICS_WL_EMBED_FWD);
            break;
        case ICS_WL_ATTN_FWD:
        case ICS_WL_ATTN_BWD:
            attn_block(&k, b == ICS_WL_ATTN_FWD);
            break;
        case ICS_WL_MLP_FWD:
        case ICS_WL_MLP_BWD:
            mlp_block(&k, b == ICS_WL_MLP_FWD);
            break;
        case ICS_WL_HEAD_FWD:
        case ICS_WL_HEAD_BWD:
            head_block(&k, b == ICS_WL_HEAD_FWD);
            break;
        case ICS_WL_ATTN_RECOMP:
            attention_core(&k, true);
            break;
        case ICS_WL_ROUTER_FWD:
        case ICS_WL_ROUTER_BWD:
            if (k.experts > 0)
                router_block(&k, b == ICS_WL_ROUTER_FWD);
            break;
        case ICS_WL_EXPERTS_FWD:
        case ICS_WL_EXPERTS_BWD:
            if (k.experts > 0)
                experts_block(&k, b == ICS_WL_EXPERTS_FWD);
            break;
        case ICS_WL_UNPERMUTE_FWD:
        case ICS_WL_UNPERMUTE_BWD:
            if (k.experts > 0)
                unpermute_block(&k, b == ICS_WL_UNPERMUTE_FWD);
            break;
        case ICS_WL_SHARED_FWD:
        case ICS_WL_SHARED_BWD:
            if (k.experts > 0)
                shared_block(&k, b == ICS_WL_SHARED_FWD);
            break;
        case ICS_WL_MTP_FWD:
        case ICS_WL_MTP_BWD:
            mtp_block(&k, b == ICS_WL_MTP_FWD);
            break;
        default:
            g_assert_not_reached();
        }
    }
    graph_launches(l, out);
}

void ics_wl__layer_rank_params(const ics_model *m, int tp, double *attn, double *mlp)
{
    double h = m->hidden, dh = ics_model_head_dim(m), q = m->heads * dh;
    double qkv = q + 2.0 * m->kv_heads * dh;
    double fc1 = (m->act == ICS_ACT_SWIGLU ? 2.0 : 1.0) * m->ffn;
    double norm = m->norm == ICS_NORM_LAYERNORM ? 2 * h : h;
    /* column-parallel weights and biases split; row-parallel biases and norms whole */
    *attn = (h * qkv + q * h + (m->bias ? qkv : 0)) / tp + norm + (m->bias ? h : 0);
    *mlp = (h * fc1 + m->ffn * h + (m->bias ? fc1 : 0)) / tp + norm + (m->bias ? h : 0);
}

/* ---- FLOPs of a step ------------------------------------------------------------------------- */

/* FLOPs of one micro-batch through the whole model (one rank holding every shard), with the
 * layout's capacity padding or without (model FLOPs count the tokens, not the padding). */
static void step_flops(const ics_model *m, const ics_layout *l, bool padded, double *per_mb,
                       double *recompute)
{
    ics_layout whole = *l;
    whole.tp = 1;
    whole.etp = 0; /* the experts whole too, whatever etp the layout named */
    whole.sp = false;
    whole.cp = 1;
    if (!padded)
        whole.moe_capacity = 0;
    ics_wl_cost c[ICS_WL_BLOCK_COUNT];
    ics_wl__costs(m, &whole, NULL, c);
    double attn_fwd = c[ICS_WL_ATTN_FWD].flops, attn_bwd = c[ICS_WL_ATTN_BWD].flops;
    double moe_fwd = c[ICS_WL_ROUTER_FWD].flops + c[ICS_WL_EXPERTS_FWD].flops +
                     c[ICS_WL_UNPERMUTE_FWD].flops + c[ICS_WL_SHARED_FWD].flops;
    double moe_bwd = c[ICS_WL_ROUTER_BWD].flops + c[ICS_WL_EXPERTS_BWD].flops +
                     c[ICS_WL_UNPERMUTE_BWD].flops + c[ICS_WL_SHARED_BWD].flops;
    double nmoe = ics_model_moe_layers(m), ndense = m->layers - nmoe;
    double fwd = ndense * (attn_fwd + c[ICS_WL_MLP_FWD].flops) + nmoe * (attn_fwd + moe_fwd);
    double bwd = ndense * (attn_bwd + c[ICS_WL_MLP_BWD].flops) + nmoe * (attn_bwd + moe_bwd);
    *per_mb = fwd + bwd + c[ICS_WL_HEAD_FWD].flops + c[ICS_WL_HEAD_BWD].flops +
              c[ICS_WL_EMBED_FWD].flops + c[ICS_WL_EMBED_BWD].flops;
    /* full recomputation of some layers (recompute_layers): their share of the forward */
    *recompute = l->recompute == ICS_RECOMPUTE_FULL
                     ? fwd * ics_layout_recomputed_layers(l, m) / m->layers
                 : l->recompute == ICS_RECOMPUTE_SELECTIVE ? m->layers * c[ICS_WL_ATTN_RECOMP].flops
                                                           : 0;
}

void ics_workload_flops(const ics_model *m, const ics_layout *l, ics_step_flops *out)
{
    double microbatches = (double)l->gbs / l->mbs, model, hardware, extra;
    step_flops(m, l, false, &model, &extra);
    step_flops(m, l, true, &hardware, &extra);
    out->model_flops = microbatches * model;
    out->hardware_flops = microbatches * (hardware + extra);
    out->tokens = (double)l->gbs * m->seq;
}

double ics_workload_megatron_flops(const ics_model *m, double batch, bool full_recompute)
{
    double s = m->seq, l = m->layers, h = m->hidden, V = m->vocab;
    if (full_recompute)
        return 96 * batch * s * l * h * h * (1 + s / (6 * h) + V / (16 * l * h));
    return 72 * batch * s * l * h * h * (1 + s / (6 * h) + V / (12 * l * h));
}
