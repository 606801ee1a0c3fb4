/* Memory per GPU of a training layout (memory.h): closed forms, no simulation. The activation
 * terms follow Korthikanti et al. (MLSys 2023), section 4 and Table 2, one stored tensor at a
 * time, so that grouped-query attention, SwiGLU, FlashAttention and models without dropout
 * (Megatron's Llama recipes set both dropouts to 0) change exactly the tensors they change. */
#include "workload/memory.h"

#include <glib.h>

/* Model state per parameter (Megatron-LM, docs of the distributed optimizer): 16-bit weights,
 * then fp32 master weights and Adam's first and second moments. */
#define WEIGHT_BYTES    2.0
#define OPTIMIZER_BYTES 12.0

/* NCCL's receive buffers per connection and channel (src/include/device.h, init.cc defaults):
 * Simple NCCL_BUFFSIZE (4 MiB unless the run sets it), LL128 120 x 640 x 8 steps x 8 B =
 * 4.69 MiB, LL 8 x 512 x 8 steps x 16 B = 512 KiB; one connection per channel of each
 * communicator a rank talks on, at NCCL's widest NVLink count of channels (24: channels.c). */
#define NCCL_SIMPLE_BYTES 4194304.0
#define NCCL_LL_BYTES     (4915200.0 + 524288.0)
#define NCCL_CHANNELS     24
#define FP32_LOGITS_BYTES 4.0

/* Megatron's GPT recipes train with dropout 0.1 on attention probabilities and hidden states;
 * its Llama recipes (SwiGLU) with 0: no masks stored. */
static bool has_dropout(const ics_model *m)
{
    return m->act != ICS_ACT_SWIGLU;
}

double ics_memory_layer_activations(const ics_model *m, const ics_layout *l)
{
    /* context parallelism: the rank's share of the sequence (FlashAttention keeps no s x s) */
    double s = (double)m->seq / l->cp, b = l->mbs, h = m->hidden, a = m->heads, t = l->tp;
    double dh = ics_model_head_dim(m), hq = m->heads * dh, hk = m->kv_heads * dh, f = m->ffn;
    double e = ics_layout_act_bytes(l), sbh = s * b * h;
    /* a GEMM's input kept for its weight gradient: in an fp8 layout Transformer Engine keeps
     * the FP8 copy it cast (1 byte), not the 16-bit tensor */
    double gi = l->dtype == ICS_DTYPE_FP8 ? 1 : e;
    bool drop = has_dropout(m);
    /* the part every tensor-parallel rank holds whole unless sequence parallelism splits it:
     * the inputs of the two norms and of QKV and fc1 (the norms' outputs), the two dropout
     * masks on the hidden state (Korthikanti's 10 s b h) */
    double whole = (2 * e + 2 * gi) * sbh + (drop ? 2 * sbh : 0);
    /* split over tensor parallelism: Q, K, V; the attention output (proj's input); fc1's output
     * and the activation's (fc2's input) (Korthikanti's 24 s b h) */
    double fc1 = (m->act == ICS_ACT_SWIGLU ? 2 : 1) * f;
    double split = e * s * b * (hq + 2 * hk) + gi * s * b * hq + e * s * b * fc1 + gi * s * b * f;
    /* the attention core: the s x s probabilities (softmax output, dropout mask and output:
     * Korthikanti's 5 a s^2 b) unless FlashAttention never writes them (it keeps one fp32
     * log-sum-exp per row); selective recomputation drops them */
    double core =
        l->attention == ICS_ATTN_FLASH ? 4 * s * b * a : (drop ? 2 * e + 1 : e) * a * s * s * b;
    if (l->recompute == ICS_RECOMPUTE_SELECTIVE)
        core = 0;
    double sp = l->sp ? t : 1;
    if (l->recompute == ICS_RECOMPUTE_FULL)
        return e * sbh / sp; /* the layer's input: the rest is recomputed in backward */
    return whole / sp + (split + core) / t;
}

/* A MoE layer's activations in place of the dense MLP's (Megatron-Core's MoE layer, balanced
 * routing): the MLP norm's input and output as a dense layer's, the router's fp32 scores, the
 * permuted token copies (topk x capacity per token) the rank dispatched and, gathered over tp
 * (with etp = 1: its own), those its experts run with their fc1 and activation outputs, and the
 * shared experts' like a dense MLP's. */
static double moe_mlp_activations(const ics_model *m, const ics_layout *l)
{
    double s = m->seq, b = l->mbs, h = m->hidden, t = l->tp, e = ics_layout_act_bytes(l);
    double sp = l->sp ? t : 1, copies = m->moe.topk * (l->moe_capacity > 0 ? l->moe_capacity : 1);
    double fe = m->moe.ffn, fs = m->moe.shared_ffn, glu = m->act == ICS_ACT_SWIGLU ? 2 : 1;
    double norm = 2 * e * s * b * h / sp, scores = 4 * s * b * m->moe.experts / sp;
    double dispatched = e * s * b * copies * h / sp;
    double etp = ics_layout_etp(l), run = etp < t ? 1 / sp : 1;
    double gathered = e * s * b * copies * run * (h + (glu * fe + fe) / etp);
    double shared = fs > 0 ? e * s * b * (h + (glu * fs + fs) / t) : 0;
    return norm + scores + dispatched + gathered + shared;
}

/* The dense MLP's part of ics_memory_layer_activations (none with full recomputation). */
static double dense_mlp_activations(const ics_model *m, const ics_layout *l)
{
    double s = m->seq, b = l->mbs, h = m->hidden, t = l->tp, e = ics_layout_act_bytes(l);
    double sp = l->sp ? t : 1, f = m->ffn, fc1 = (m->act == ICS_ACT_SWIGLU ? 2 : 1) * f;
    double whole = 2 * e * s * b * h + (has_dropout(m) ? s * b * h : 0);
    return whole / sp + e * s * b * (fc1 + f) / t;
}

/* Activations of layer `layer` (global index) of one micro-batch: a MoE layer's MLP part
 * replaces the dense one's. */
static double layer_activations(const ics_model *m, const ics_layout *l, int layer)
{
    double dense = ics_memory_layer_activations(m, l);
    if (!ics_model_is_moe_layer(m, layer) || l->recompute == ICS_RECOMPUTE_FULL)
        return dense;
    return dense - dense_mlp_activations(m, l) + moe_mlp_activations(m, l);
}

/* Micro-batches of one model chunk in flight on stage `stage` at its peak, counted in layers'
 * worth of a whole stage: Megatron's 1F1B warms up pp - stage - 1 forwards before its first
 * backward; the interleaved schedule warms up (pp - stage - 1) x 2 + (vp - 1) x pp model chunks
 * (schedules.py). Never more than the step has. */
static double stage_in_flight(const ics_layout *l, int stage)
{
    double nmb = ics_layout_microbatches(l);
    if (l->vp <= 1)
        return MIN(nmb, (double)(l->pp - stage));
    double chunks = (double)(l->pp - stage - 1) * 2 + (double)(l->vp - 1) * l->pp + 1;
    return MIN(nmb * l->vp, chunks) / l->vp;
}

/* Parameters of stage `stage` on one tensor-parallel rank: its layers (sharded part / tp), the
 * embeddings on the first stage, the final norm and the output layer on the last; with tied
 * embeddings and several stages the last stage keeps its own copy of the word embedding
 * (Megatron all-reduces the two copies' gradients). */
static double stage_params(const ics_model *m, const ics_layout *l, int stage, double *experts)
{
    double sh, rep, word, pos, fin, out, ash, arep, mrep, shared, expert;
    ics_model_layer_params(m, &sh, &rep);
    ics_model_attn_params(m, &ash, &arep);
    ics_model_moe_params(m, &mrep, &shared, &expert);
    ics_model_edge_params(m, &word, &pos, &fin, &out);
    double p = 0;
    *experts = 0;
    int n = ics_layout_stage_layers(l, m, stage);
    for (int i = 0; i < n; i++) {
        if (!ics_model_is_moe_layer(m, ics_layout_stage_layer(l, m, stage, i))) {
            p += sh / l->tp + rep;
            continue;
        }
        /* attention, the router and norm, the shared experts, and the experts of its ep rank */
        p += ash / l->tp + arep + mrep + shared / l->tp;
        *experts += (double)(m->moe.experts / l->ep) * expert / ics_layout_etp(l);
    }
    if (stage == 0)
        p += word / l->tp + pos;
    if (stage == l->pp - 1) {
        p += fin + out / l->tp;
        if (m->tied_embeddings && l->pp > 1)
            p += word / l->tp;
    }
    return p;
}

/* Communicators a rank runs collectives or sends on: tensor, pipeline and data parallel, each
 * when it has more than one rank, HSDP's shard and replicate groups, and the expert-parallel
 * and expert-data-parallel groups. */
static int communicators(const ics_model *m, const ics_layout *l)
{
    bool hsdp = l->fsdp && l->fsdp_shard > 0 && l->fsdp_shard < l->dp;
    return (l->tp > 1) + (l->pp > 1) + (l->dp > 1) + (hsdp ? 2 : 0) + (l->ep > 1) +
           (m->moe.experts > 0 && ics_layout_edp(l) > 1) /* expert parallel, expert dp */ +
           (l->cp > 1); /* the context-parallel ring */
}

/* FSDP's units on stage `stage` that are ever whole at once (workload.c, fsdp_units): the two
 * largest consecutive ones (the one running and the one prefetched), and the largest (its
 * unsharded gradients, until they are reduce-scattered). */
static void fsdp_whole(const ics_model *m, const ics_layout *l, int stage, double *pair,
                       double *largest)
{
    double sh, rep, word, pos, fin, out;
    ics_model_layer_params(m, &sh, &rep);
    ics_model_edge_params(m, &word, &pos, &fin, &out);
    double block = sh / l->tp + rep, first = 0, last = 0;
    if (stage == 0)
        first = word / l->tp + pos;
    if (stage == l->pp - 1)
        last = fin + (m->tied_embeddings && l->pp > 1 ? word : out) / l->tp;
    *pair = MAX(2 * block, MAX(first + block, last + block));
    *largest = MAX(block, MAX(first, last));
}

void ics_memory_of_stage(const ics_model *m, const ics_layout *l, int stage, ics_memory *out)
{
    *out = (ics_memory){.stage = stage};
    double experts;
    out->params = stage_params(m, l, stage, &experts);
    out->weights = WEIGHT_BYTES * (out->params + experts);
    out->grads = ics_layout_grad_bytes(l) * (out->params + experts);
    int shard = l->fsdp && l->fsdp_shard > 0 ? l->fsdp_shard : l->dp; /* HSDP: its groups */
    /* the distributed optimizer shards the experts' state over expert data parallelism */
    /* (dp x cp with context parallelism: its ranks hold the same weights) */
    out->optimizer = OPTIMIZER_BYTES * (out->params / (l->fsdp       ? shard
                                                       : l->dist_opt ? l->dp * l->cp
                                                                     : 1) +
                                        experts / (l->dist_opt ? ics_layout_edp(l) : 1));
    if (l->lora_rank > 0) {
        /* LoRA: the base (frozen) weights held in 16 bits, and the adapters (this rank's 1/tp)
         * with their gradients and optimizer state, the only ones trained */
        double attn, mlp;
        ics_model_lora_params(m, l->lora_rank, &attn, &mlp);
        double adapters = ics_layout_stage_layers(l, m, stage) * (attn + mlp) / l->tp;
        out->weights = WEIGHT_BYTES * (out->params + adapters);
        out->grads = ics_layout_grad_bytes(l) * adapters;
        out->optimizer = OPTIMIZER_BYTES * adapters / (l->dist_opt ? l->dp * l->cp : 1);
    }
    if (l->zero2 && l->lora_rank == 0) {
        /* ZeRO-2: the gradients' shard (as the optimizer state's), and one bucket whole, the
         * one being filled, until its reduce-scatter has run (Rajbhandari et al., SC'20: the
         * gradient term 2 Psi becomes 2 Psi / Nd) */
        double bucket = MIN((double)ics_layout_bucket_params(l), out->params + experts);
        out->grads = ics_layout_grad_bytes(l) *
                     (out->params / (l->dp * l->cp) + experts / ics_layout_edp(l) + bucket);
    }
    if (l->fsdp && shard > 1) {
        /* FSDP keeps the shard, and whole only the unit it runs and the one it prefetches, and
         * one unit's gradients until they are reduce-scattered; with pp > 1 the pipeline
         * schedule syncs gradients in the last micro-batch only, so the stage holds them whole
         * until then (workload.c, fsdp_done) */
        double pair, largest;
        fsdp_whole(m, l, stage, &pair, &largest);
        out->weights = WEIGHT_BYTES * (out->params / shard + pair);
        bool whole = l->pp > 1 && ics_layout_microbatches(l) > 1;
        out->grads =
            ics_layout_grad_bytes(l) * (whole ? out->params : out->params / shard + largest);
    }
    out->in_flight = stage_in_flight(l, stage);
    /* a layer outside full recomputation keeps what the layout's own recomputation keeps:
     * everything, or with selective recomputation everything but the attention core */
    ics_layout whole = *l;
    if (whole.recompute == ICS_RECOMPUTE_FULL)
        whole.recompute = ICS_RECOMPUTE_NONE;
    double kept = 0, largest = 0;
    bool any = false;
    /* chunk by chunk: with recompute_layers only a chunk's first layers keep just their input */
    for (int c = 0; c < l->vp; c++) {
        int v = c * l->pp + stage, first = ics_layout_chunk_first_layer(l, m, v);
        for (int j = 0; j < ics_layout_chunk_layers(l, m, v); j++) {
            bool rec = ics_layout_recomputes(l, j);
            kept += layer_activations(m, rec ? l : &whole, first + j);
            if (rec)
                largest = MAX(largest, layer_activations(m, &whole, first + j));
            any |= rec;
        }
    }
    out->activations = out->in_flight * kept;
    /* full recomputation: backward recomputes one layer at a time, its whole working set back
     * for a while */
    if (any)
        out->activations += largest;
    if (stage == l->pp - 1) /* the logits of the micro-batch in its backward: 16-bit and fp32 */
        out->activations += (ics_layout_act_bytes(l) + FP32_LOGITS_BYTES) * (double)m->seq / l->cp *
                            l->mbs * (double)m->vocab / l->tp;
    double simple = l->nccl_buffsize > 0 ? l->nccl_buffsize : NCCL_SIMPLE_BYTES;
    out->nccl = communicators(m, l) * NCCL_CHANNELS * (simple + NCCL_LL_BYTES);
    out->total = out->weights + out->grads + out->optimizer + out->activations + out->nccl;
}

void ics_memory_peak(const ics_model *m, const ics_layout *l, ics_memory *out)
{
    /* every stage: uneven edge stages and a MoE model's dense first layers can make a middle
     * stage the largest */
    ics_memory_of_stage(m, l, 0, out);
    for (int s = 1; s < l->pp; s++) {
        ics_memory st;
        ics_memory_of_stage(m, l, s, &st);
        if (st.total > out->total)
            *out = st;
    }
}
