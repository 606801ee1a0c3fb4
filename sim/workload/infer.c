/* Inference passes priced with the GPU compute model (infer.h). Per layer and GPU, a forward of
 * T rows over a context: norm, QKV GEMM, the KV cache written, attention (prefill: causal over
 * the prompt, FlashAttention skipping the masked half; decode: one query against the cached
 * context, bound by reading the cache), projection GEMM, residual add, norm, fc1 GEMM, the
 * activation, fc2 GEMM, residual add. At small batch the GEMMs are bound by reading their
 * weights, which the roofline gives (compute.h). */
#include "workload/infer.h"

#include <math.h>

#include "core/core.h"
#include "workload/compute.h"

#define ACT_BYTES 2.0 /* activations and the KV cache stay 16-bit */
/* batch x (prompt + output) tokens at most: what a static batch of one instance holds */
#define MAX_TOKENS (1LL << 31)
/* the largest all-reduce a prefill may make: `icsim collective`'s bound on a size */
#define MAX_ALLREDUCE_BYTES (1LL << 40)

typedef struct {
    const ics_hw_gpu_type *g;
    ics_dtype dtype;
    double in_bytes; /* a GEMM operand element: 1 for fp8 */
    ics_time t;      /* accumulated */
} pricer;

/* A kernel of `batch` products of m x n x k (0: FLOPs / 2mnk; see ics_compute_batched). */
static void op(pricer *p, ics_work_kind w, ics_dtype d, double flops, double bytes, double batch,
               double m, double n, double k)
{
    p->t = ics_time_add(p->t, ics_compute_batched(p->g, w, d, flops, bytes, batch, m, n, k));
}

/* Y (m x n) = X (m x k) . W (k x n): the weights read once, the output written 16-bit. */
static void gemm(pricer *p, double m, double n, double k)
{
    op(p, ICS_WORK_GEMM, p->dtype, 2 * m * n * k, (m * k + k * n) * p->in_bytes + m * n * ACT_BYTES,
       1, m, n, k);
}

static void stream(pricer *p, double bytes)
{
    op(p, ICS_WORK_ELEMENTWISE, ICS_DTYPE_BF16, 0, bytes, 0, 0, 0, 0);
}

/* Per GPU: heads, KV heads (replicated when tp exceeds them), MLP width. */
typedef struct {
    double h, dh, heads, kv, ffn, fc1, vocab;
} shapes;

static shapes shapes_of(const ics_model *m, const ics_infer_layout *l)
{
    shapes s = {.h = m->hidden,
                .dh = ics_model_head_dim(m),
                .heads = (double)m->heads / l->tp,
                .kv = m->kv_heads >= l->tp ? (double)m->kv_heads / l->tp : 1,
                .ffn = (double)m->ffn / l->tp,
                .vocab = ceil((double)m->vocab / l->tp)};
    s.fc1 = (m->act == ICS_ACT_SWIGLU ? 2 : 1) * s.ffn;
    return s;
}

/* The attention half of a layer over `rows` query rows: `keys` keys per query on average
 * (prefill: causal, half the prompt; decode: the context), `cached` rows of keys and values read
 * by the attention (prefill: the prompt's own; decode: every request's whole context), `rows`
 * rows written to the cache. */
static void attention(const shapes *s, pricer *p, double rows, double keys, double cached)
{
    double e = ACT_BYTES, qkv = (s->heads + 2 * s->kv) * s->dh, kv_row = 2 * s->kv * s->dh * e;
    stream(p, 2 * rows * s->h * e); /* norm */
    gemm(p, rows, qkv, s->h);
    stream(p, 2 * rows * kv_row); /* K and V into the cache: read and written */
    op(p, ICS_WORK_ATTENTION, ICS_DTYPE_BF16, 2 * 2 * rows * keys * s->heads * s->dh,
       rows * 2 * s->heads * s->dh * e + cached * kv_row, 0, 0, 0, 0);
    gemm(p, rows, s->h, s->heads * s->dh);
    stream(p, 3 * rows * s->h * e); /* residual */
}

/* A dense MLP of `ffn` columns on this GPU (fc1 twice that with SwiGLU), without its norm. */
static void mlp(const ics_model *m, const shapes *s, pricer *p, double rows, double ffn)
{
    double fc1 = (m->act == ICS_ACT_SWIGLU ? 2 : 1) * ffn;
    gemm(p, rows, fc1, s->h);
    stream(p, (m->act == ICS_ACT_SWIGLU ? 3 : 2) * rows * ffn * ACT_BYTES);
    gemm(p, rows, s->h, ffn);
}

static ics_time dense_layer(const ics_model *m, const shapes *s, pricer *p, double rows,
                            double keys, double cached)
{
    p->t = 0;
    attention(s, p, rows, keys, cached);
    stream(p, 2 * rows * s->h * ACT_BYTES); /* norm */
    mlp(m, s, p, rows, s->ffn);
    stream(p, 3 * rows * s->h * ACT_BYTES); /* residual */
    return p->t;
}

/* The routed rows the busiest GPU of `ep` computes when `routed` token-expert pairs fall on the
 * experts at random, evenly in expectation (a balanced router): each GPU's count is binomial
 * with mean mu = routed / ep; the largest of ep such counts sits near mu + sigma sqrt(2 ln ep)
 * (the expected maximum of ep normals, sigma^2 = mu (1 - 1/ep)). ep 1: all of them. */
static double busiest_rows(double routed, int ep)
{
    if (ep <= 1)
        return routed;
    double mu = routed / ep, sigma = sqrt(mu * (1 - 1.0 / ep));
    return MIN(routed, mu + sigma * sqrt(2 * log(ep)));
}

/* One GEMM per touched expert in one grouped kernel: `rows` rows over `experts` experts of
 * k x n weights each, every touched expert's weights read once. */
static void grouped_gemm(pricer *p, double rows, double experts, double n, double k)
{
    double per = rows / MAX(experts, 1);
    op(p, ICS_WORK_GEMM, p->dtype, 2 * rows * n * k,
       experts * k * n * p->in_bytes + rows * (k * p->in_bytes + n * ACT_BYTES), experts, per, n,
       k);
}

/* A mixture-of-experts layer (Megatron's and the serving engines' order): attention, norm,
 * router, the tokens permuted by expert, each expert's MLP as one grouped kernel, the outputs
 * weighted and summed back in token order, the shared experts as a dense MLP, residual. Experts
 * split over tp: every GPU computes 1/tp of every routed row; with ep = tp each GPU holds
 * experts / ep whole experts and the busiest one sets the pace. An expert is touched by a step
 * when at least one of its T tokens picks it: E (1 - (1 - k/E)^T) experts on average. */
static ics_time moe_layer(const ics_model *m, const ics_infer_layout *l, const shapes *s, pricer *p,
                          double rows, double keys, double cached)
{
    p->t = 0;
    attention(s, p, rows, keys, cached);
    double e = ACT_BYTES, E = m->moe.experts, k = m->moe.topk;
    stream(p, 2 * rows * s->h * e); /* norm */
    gemm(p, rows, E, s->h);         /* router logits */
    stream(p, rows * E * 4);        /* softmax / top-k over fp32 logits */
    double routed = busiest_rows(rows * k, l->ep);
    double local = E / l->ep, width = (double)m->moe.ffn / (l->ep > 1 ? 1 : l->tp);
    double touched = local * (1 - pow(1 - k / E, rows));
    double fc1 = (m->act == ICS_ACT_SWIGLU ? 2 : 1) * width;
    stream(p, 2 * routed * s->h * e); /* permute */
    grouped_gemm(p, routed, touched, fc1, s->h);
    stream(p, (m->act == ICS_ACT_SWIGLU ? 3 : 2) * routed * width * e);
    grouped_gemm(p, routed, touched, s->h, width);
    stream(p, 2 * routed * s->h * e + rows * s->h * e); /* unpermute, weighted sum */
    if (m->moe.shared_ffn > 0)
        mlp(m, s, p, rows, (double)m->moe.shared_ffn / l->tp);
    stream(p, 3 * rows * s->h * e); /* residual */
    return p->t;
}

static ics_time head(const shapes *s, pricer *p, double batch)
{
    p->t = 0;
    stream(p, 2 * batch * s->h * ACT_BYTES);
    gemm(p, batch, s->vocab, s->h);
    return p->t;
}

bool ics_infer_check(const ics_model *m, const ics_infer_layout *l, const ics_hw_gpu_type *g,
                     GError **error)
{
    if (l->tp < 1 || l->pp < 1 || l->ep < 1 || l->batch < 1 || l->input < 1 || l->output < 1) {
        g_set_error(error, ICS_ERROR, ICS_ERROR_INPUT,
                    "infer: expected tp, pp, ep, batch, input and output of 1 or more, got %d, "
                    "%d, %d, %d, %d, %d",
                    l->tp, l->pp, l->ep, l->batch, l->input, l->output);
        return false;
    }
    if (l->pp > m->layers) {
        g_set_error(error, ICS_ERROR, ICS_ERROR_INPUT,
                    "--pp: expected at most the model's %d layers, got %d", m->layers, l->pp);
        return false;
    }
    if (l->ep > 1 && (m->moe.experts == 0 || l->ep != l->tp || m->moe.experts % l->ep)) {
        g_set_error(error, ICS_ERROR, ICS_ERROR_INPUT,
                    "--ep: expected 1, or the tensor-parallel size (%d) dividing the experts of "
                    "a mixture-of-experts model, got %d (%s has %d experts)",
                    l->tp, l->ep, m->name, m->moe.experts);
        return false;
    }
    bool split_experts = m->moe.experts > 0 && l->ep == 1;
    const char *what = m->heads % l->tp                               ? "heads"
                       : m->ffn % l->tp                               ? "ffn"
                       : split_experts && m->moe.ffn % l->tp          ? "experts' ffn"
                       : m->moe.shared_ffn % l->tp                    ? "shared_ffn"
                       : (m->kv_heads % l->tp && l->tp % m->kv_heads) ? "kv_heads"
                                                                      : NULL;
    if (what) {
        int n = what[0] == 'h'   ? m->heads
                : what[0] == 'f' ? m->ffn
                : what[0] == 'e' ? m->moe.ffn
                : what[0] == 's' ? m->moe.shared_ffn
                                 : m->kv_heads;
        g_set_error(error, ICS_ERROR, ICS_ERROR_INPUT,
                    "--tp: expected a divisor of the model's %s (%d)%s, got %d", what, n,
                    what[0] == 'k' ? " or a multiple of them" : "", l->tp);
        return false;
    }
    long long tokens = (long long)l->batch * ((long long)l->input + l->output);
    if (tokens > MAX_TOKENS) {
        g_set_error(error, ICS_ERROR, ICS_ERROR_LIMIT,
                    "--batch x (--input + --output): expected at most %lld tokens, got %lld",
                    (long long)MAX_TOKENS, tokens);
        return false;
    }
    double prefill = (double)l->batch * l->input * m->hidden * ACT_BYTES;
    if (prefill > (double)MAX_ALLREDUCE_BYTES) {
        g_set_error(error, ICS_ERROR, ICS_ERROR_LIMIT,
                    "--batch x --input: expected a prefill all-reduce of at most 1 TiB, got %.3g "
                    "bytes (%d x %d tokens x hidden %d x 2 B)",
                    prefill, l->batch, l->input, m->hidden);
        return false;
    }
    if (ics_compute_peak(g, l->dtype) <= 0 ||
        (l->dtype == ICS_DTYPE_FP8 && g->tflops[ICS_DTYPE_FP8] <= 0)) {
        g_set_error(error, ICS_ERROR, ICS_ERROR_INPUT,
                    "--dtype: expected a type the %s runs, got %s", g->product,
                    ics_dtype_name(l->dtype));
        return false;
    }
    return true;
}

/* One pass of `rows` rows with `keys` keys per query and `cached` cache rows read. */
static ics_infer_pass pass(const ics_model *m, const ics_infer_layout *l, const shapes *s,
                           pricer *p, double rows, double keys, double cached, double batch)
{
    ics_infer_pass x = {.tokens = rows,
                        .layer_ps = dense_layer(m, s, p, rows, keys, cached),
                        .allreduce_bytes = (uint64_t)(rows * s->h * ACT_BYTES)};
    if (m->moe.experts > 0)
        x.moe_layer_ps = moe_layer(m, l, s, p, rows, keys, cached);
    x.head_ps = head(s, p, batch);
    return x;
}

/* Parameters one GPU of stage `st` holds: its layers (stages of L / pp layers, the first ones
 * a layer more when pp does not divide L), the embedding on the first stage, the final norm and
 * output layer on the last (with tied embeddings a copy of the embedding there too, pp > 1). */
static double stage_params(const ics_model *m, const ics_infer_layout *l, int st, int *layers)
{
    double sh, rep, ash, arep, mrep, shared, expert, word, pos, fin, outp;
    ics_model_layer_params(m, &sh, &rep);
    ics_model_attn_params(m, &ash, &arep);
    if (m->moe.experts > 0)
        ics_model_moe_params(m, &mrep, &shared, &expert);
    ics_model_edge_params(m, &word, &pos, &fin, &outp);
    int per = m->layers / l->pp, extra = m->layers % l->pp;
    int from = st * per + MIN(st, extra), to = from + per + (st < extra);
    double n = 0;
    for (int i = from; i < to; i++)
        n += ics_model_is_moe_layer(m, i)
                 ? ash / l->tp + arep + mrep + (shared + m->moe.experts * expert) / l->tp
                 : sh / l->tp + rep;
    if (st == 0)
        n += word / l->tp + pos;
    if (st == l->pp - 1)
        n += fin + (m->tied_embeddings && l->pp > 1 ? word : outp) / l->tp;
    *layers = to - from;
    return n;
}

void ics_infer_plan_make(const ics_model *m, const ics_infer_layout *l, const ics_hw_gpu_type *g,
                         ics_infer_plan *out)
{
    shapes s = shapes_of(m, l);
    pricer p = {.g = g, .dtype = l->dtype, .in_bytes = l->dtype == ICS_DTYPE_FP8 ? 1 : 2};
    double b = l->batch, prompt = (double)b * l->input;
    /* prefill: every prompt token a row, each attending to half its prompt on average */
    out->prefill = pass(m, l, &s, &p, prompt, l->input / 2.0, prompt, b);
    /* decode: one row a request, against the mean context of the generation */
    double ctx = l->input + l->output / 2.0;
    out->decode = pass(m, l, &s, &p, b, ctx, b * ctx, b);
    out->moe_layers = ics_model_moe_layers(m);
    out->dense_layers = m->layers - out->moe_layers;
    out->weight_bytes = out->kv_bytes = 0;
    for (int st = 0; st < l->pp; st++) {
        int layers;
        double w = stage_params(m, l, st, &layers) * p.in_bytes;
        double kv = b * ((double)l->input + l->output) * layers * 2 * s.kv * s.dh * ACT_BYTES;
        if (w + kv > out->weight_bytes + out->kv_bytes) {
            out->weight_bytes = w;
            out->kv_bytes = kv;
        }
    }
}
