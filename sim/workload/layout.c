/* Parallel layouts (layout.h): defaults, the rules a layout must satisfy, and rank arithmetic.
 * Messages name the field to change and the numbers that clash. */
#include "workload/layout.h"

#include <stdarg.h>
#include <string.h>

#include <glib.h>

static const char *const recompute_names[] = {"none", "selective", "full", NULL};
static const char *const placement_names[] = {"tp-pp-dp", "tp-dp-pp", NULL};
static const char *const attention_names[] = {"flash", "unfused", NULL};

/* Megatron-core's DistributedDataParallelConfig.bucket_size default: max(40,000,000,
 * 1,000,000 x dp) parameters ("larger DP sizes need larger buckets to ensure collectives do not
 * become latency-bound"). */
#define BUCKET_MIN_PARAMS    40000000ULL
#define BUCKET_PARAMS_PER_DP 1000000ULL

ics_layout ics_layout_defaults(void)
{
    return (ics_layout){.tp = 1,
                        .pp = 1,
                        .vp = 1,
                        .dp = 1,
                        .mbs = 1,
                        .gbs = 1,
                        .recompute = ICS_RECOMPUTE_NONE,
                        .dtype = ICS_DTYPE_BF16,
                        .grad_dtype = ICS_DTYPE_FP32,
                        .overlap_grad_reduce = true,
                        .placement = ICS_PLACE_TP_PP_DP,
                        .attention = ICS_ATTN_FLASH};
}

int ics_layout_world(const ics_layout *l)
{
    return l->tp * l->pp * l->dp;
}

int ics_layout_microbatches(const ics_layout *l)
{
    return l->gbs / (l->mbs * l->dp);
}

int ics_layout_rank(const ics_layout *l, int tp, int pp, int dp)
{
    if (l->placement == ICS_PLACE_TP_DP_PP)
        return (pp * l->dp + dp) * l->tp + tp;
    return (dp * l->pp + pp) * l->tp + tp;
}

int ics_layout_act_bytes(const ics_layout *l)
{
    (void)l;
    return 2;
}

int ics_layout_grad_bytes(const ics_layout *l)
{
    return l->grad_dtype == ICS_DTYPE_FP32 ? 4 : 2;
}

uint64_t ics_layout_bucket_params(const ics_layout *l)
{
    if (l->bucket_bytes > 0) {
        uint64_t p = l->bucket_bytes / (uint64_t)ics_layout_grad_bytes(l);
        return p > 0 ? p : 1;
    }
    uint64_t by_dp = BUCKET_PARAMS_PER_DP * (uint64_t)l->dp;
    return by_dp > BUCKET_MIN_PARAMS ? by_dp : BUCKET_MIN_PARAMS;
}

const char *ics_recompute_name(ics_recompute r)
{
    return (unsigned)r < ICS_RECOMPUTE_COUNT ? recompute_names[r] : "?";
}

const char *ics_placement_name(ics_placement p)
{
    return (unsigned)p < ICS_PLACE_COUNT ? placement_names[p] : "?";
}

static int parse(const char *const *names, const char *s)
{
    for (int i = 0; s && names[i]; i++)
        if (strcmp(names[i], s) == 0)
            return i;
    return -1;
}

int ics_recompute_parse(const char *s)
{
    return parse(recompute_names, s);
}

int ics_placement_parse(const char *s)
{
    return parse(placement_names, s);
}

const char *ics_attention_name(ics_attention a)
{
    return (unsigned)a < ICS_ATTN_COUNT ? attention_names[a] : "?";
}

int ics_attention_parse(const char *s)
{
    return parse(attention_names, s);
}

/* ---- the rules ------------------------------------------------------------------------------- */

static bool fail(GError **error, int code, const char *fmt, ...) G_GNUC_PRINTF(3, 4);

/* Sets *error (domain ICS_ERROR); returns false. */
static bool fail(GError **error, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *msg = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    g_set_error_literal(error, ICS_ERROR, code, msg);
    g_free(msg);
    return false;
}

static bool check_sizes(const ics_layout *l, GError **error)
{
    const struct {
        const char *what;
        int v;
    } f[] = {{"tp", l->tp}, {"pp", l->pp},   {"vp", l->vp},
             {"dp", l->dp}, {"mbs", l->mbs}, {"gbs", l->gbs}};
    for (size_t i = 0; i < G_N_ELEMENTS(f); i++)
        if (f[i].v < 1)
            return fail(error, ICS_ERROR_INPUT, "layout: %s: expected an integer >= 1, got %d",
                        f[i].what, f[i].v);
    if ((int64_t)l->tp * l->pp * l->dp > 1 << 24)
        return fail(error, ICS_ERROR_LIMIT,
                    "layout: tp x pp x dp: expected at most %d GPUs, got %lld", 1 << 24,
                    (long long)l->tp * l->pp * l->dp);
    if (l->dtype != ICS_DTYPE_BF16 && l->dtype != ICS_DTYPE_FP16 && l->dtype != ICS_DTYPE_FP8)
        return fail(error, ICS_ERROR_INPUT, "layout: dtype: expected bf16, fp16 or fp8, got %s",
                    ics_dtype_name(l->dtype));
    if (l->grad_dtype != ICS_DTYPE_FP32 && l->grad_dtype != ICS_DTYPE_BF16 &&
        l->grad_dtype != ICS_DTYPE_FP16)
        return fail(error, ICS_ERROR_INPUT,
                    "layout: grad_dtype: expected fp32, bf16 or fp16, got %s",
                    ics_dtype_name(l->grad_dtype));
    if ((unsigned)l->recompute >= ICS_RECOMPUTE_COUNT ||
        (unsigned)l->placement >= ICS_PLACE_COUNT || (unsigned)l->attention >= ICS_ATTN_COUNT)
        return fail(
            error, ICS_ERROR_INPUT,
            "layout: recompute, placement or attention: expected a known value, got another");
    return true;
}

static bool divides(GError **error, const char *what, int d, const char *of, int n)
{
    if (n % d == 0)
        return true;
    return fail(error, ICS_ERROR_INPUT,
                "layout: %s: expected a divisor of the model's %s (%d), got %d", what, of, n, d);
}

static bool check_model(const ics_layout *l, const ics_model *m, GError **error)
{
    if (!divides(error, "tp", l->tp, "heads", m->heads) ||
        !divides(error, "tp", l->tp, "kv_heads", m->kv_heads) ||
        !divides(error, "tp", l->tp, "ffn", m->ffn))
        return false;
    int64_t chunks = (int64_t)l->pp * l->vp;
    if (chunks > m->layers || m->layers % chunks)
        return fail(
            error, ICS_ERROR_INPUT,
            "layout: pp x vp: expected a divisor of the model's layers (%d), got %d x %d = %lld",
            m->layers, l->pp, l->vp, (long long)chunks);
    if (l->sp && m->seq % l->tp)
        return fail(error, ICS_ERROR_INPUT,
                    "layout: sp: expected the sequence (%d) divisible by tp (%d), got a remainder",
                    m->seq, l->tp);
    return true;
}

static bool check_batches(const ics_layout *l, GError **error)
{
    int64_t per_step = (int64_t)l->mbs * l->dp;
    if (l->gbs % per_step)
        return fail(error, ICS_ERROR_INPUT,
                    "layout: gbs: expected a multiple of mbs x dp (%d x %d = %lld), got %d", l->mbs,
                    l->dp, (long long)per_step, l->gbs);
    int m = ics_layout_microbatches(l);
    if (l->vp > 1 && l->pp <= 2)
        return fail(error, ICS_ERROR_INPUT,
                    "layout: vp: expected 1 with pp = %d (interleaving needs more than 2 stages, "
                    "as in Megatron), got %d",
                    l->pp, l->vp);
    if (l->vp > 1 && m % l->pp)
        return fail(error, ICS_ERROR_INPUT,
                    "layout: vp: interleaving expected micro-batches (gbs / (mbs x dp) = %d) "
                    "divisible by pp (%d), got a remainder",
                    m, l->pp);
    if ((int64_t)m * l->vp > 1 << 20)
        return fail(error, ICS_ERROR_LIMIT,
                    "layout: gbs: expected at most %d micro-batches per stage, got %lld", 1 << 20,
                    (long long)m * l->vp);
    return true;
}

bool ics_layout_check(const ics_layout *l, const ics_model *m, GError **error)
{
    return check_sizes(l, error) && check_model(l, m, error) && check_batches(l, error);
}
