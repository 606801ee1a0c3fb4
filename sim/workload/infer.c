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

static void op(pricer *p, ics_work_kind w, ics_dtype d, double flops, double bytes, double m,
               double n, double k)
{
    p->t = ics_time_add(p->t, ics_compute_kernel(p->g, w, d, flops, bytes, m, n, k));
}

/* Y (m x n) = X (m x k) . W (k x n): the weights read once, the output written 16-bit. */
static void gemm(pricer *p, double m, double n, double k)
{
    op(p, ICS_WORK_GEMM, p->dtype, 2 * m * n * k, (m * k + k * n) * p->in_bytes + m * n * ACT_BYTES,
       m, n, k);
}

static void stream(pricer *p, double bytes)
{
    op(p, ICS_WORK_ELEMENTWISE, ICS_DTYPE_BF16, 0, bytes, 0, 0, 0);
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

/* One layer's forward over `rows` query rows: `keys` keys per query on average (prefill:
 * causal, half the prompt; decode: the context), `cached` rows of keys and values read by the
 * attention (prefill: the prompt's own; decode: every request's whole context), `rows` rows
 * written to the cache. */
static ics_time layer(const ics_model *m, const shapes *s, pricer *p, double rows, double keys,
                      double cached)
{
    p->t = 0;
    double e = ACT_BYTES, qkv = (s->heads + 2 * s->kv) * s->dh, kv_row = 2 * s->kv * s->dh * e;
    stream(p, 2 * rows * s->h * e); /* norm */
    gemm(p, rows, qkv, s->h);
    stream(p, 2 * rows * kv_row); /* K and V into the cache: read and written */
    op(p, ICS_WORK_ATTENTION, ICS_DTYPE_BF16, 2 * 2 * rows * keys * s->heads * s->dh,
       rows * 2 * s->heads * s->dh * e + cached * kv_row, 0, 0, 0);
    gemm(p, rows, s->h, s->heads * s->dh);
    stream(p, 3 * rows * s->h * e); /* residual */
    stream(p, 2 * rows * s->h * e); /* norm */
    gemm(p, rows, s->fc1, s->h);
    stream(p, (m->act == ICS_ACT_SWIGLU ? 3 : 2) * rows * s->ffn * e);
    gemm(p, rows, s->h, s->ffn);
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
    if (l->tp < 1 || l->batch < 1 || l->input < 1 || l->output < 1) {
        g_set_error(error, ICS_ERROR, ICS_ERROR_INPUT,
                    "infer: expected tp, batch, input and output of 1 or more, got %d, %d, %d, %d",
                    l->tp, l->batch, l->input, l->output);
        return false;
    }
    if (m->moe.experts > 0) {
        g_set_error(error, ICS_ERROR, ICS_ERROR_INPUT,
                    "--model: expected a dense model (icsim infer does not model experts), got "
                    "%s with %d experts",
                    m->name, m->moe.experts);
        return false;
    }
    const char *what = m->heads % l->tp                               ? "heads"
                       : m->ffn % l->tp                               ? "ffn"
                       : (m->kv_heads % l->tp && l->tp % m->kv_heads) ? "kv_heads"
                                                                      : NULL;
    if (what) {
        int n = what[0] == 'h' ? m->heads : what[0] == 'f' ? m->ffn : m->kv_heads;
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

void ics_infer_plan_make(const ics_model *m, const ics_infer_layout *l, const ics_hw_gpu_type *g,
                         ics_infer_plan *out)
{
    shapes s = shapes_of(m, l);
    pricer p = {.g = g, .dtype = l->dtype, .in_bytes = l->dtype == ICS_DTYPE_FP8 ? 1 : 2};
    double b = l->batch, prompt = (double)b * l->input;
    /* prefill: every prompt token a row, each attending to half its prompt on average */
    out->prefill = (ics_infer_pass){.tokens = prompt,
                                    .layer_ps = layer(m, &s, &p, prompt, l->input / 2.0, prompt),
                                    .head_ps = head(&s, &p, b),
                                    .allreduce_bytes = (uint64_t)(prompt * s.h * ACT_BYTES)};
    /* decode: one row a request, against the mean context of the generation */
    double ctx = l->input + l->output / 2.0;
    out->decode = (ics_infer_pass){.tokens = b,
                                   .layer_ps = layer(m, &s, &p, b, ctx, b * ctx),
                                   .head_ps = head(&s, &p, b),
                                   .allreduce_bytes = (uint64_t)(b * s.h * ACT_BYTES)};
    double sh, rep, word, pos, fin, outp;
    ics_model_layer_params(m, &sh, &rep);
    ics_model_edge_params(m, &word, &pos, &fin, &outp);
    double params = m->layers * (sh / l->tp + rep) + word / l->tp + pos + fin + outp / l->tp;
    out->weight_bytes = params * p.in_bytes;
    out->kv_bytes = b * ((double)l->input + l->output) * m->layers * 2 * s.kv * s.dh * ACT_BYTES;
}
