/* The training generator: the model catalog and its errors, layouts and theirs, FLOP counts
 * against Megatron's closed formula and the 6NT rule, pipeline schedules, the trace's structure
 * (op counts per pass, collective and send sizes, gradient bytes), and replays of generated
 * steps against closed forms: the 1F1B and interleaved bubbles with communication made free,
 * gradient reduction hidden behind the backward pass. */
#include "workload/compute.h"
#include "hw/hw.h"
#include "workload/layout.h"
#include "workload/model.h"
#include "replay/replay.h"
#include "workload/workload.h"
#include "workload/workload_internal.h"

#include <glib.h>
#include <math.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "workload_rig.h"

/* A small GPT: 8 layers, h 1024, 16 heads, vocabulary 32000, sequence 1024. */
static ics_model small_gpt(void)
{
    return ics_model_make("small", 8, 1024, 16, 4096, 32000, 1024);
}

/* ---- catalog --------------------------------------------------------------------------------- */

/* Every shipped model loads, and its parameter count rounds to the figure its publishers give
 * (SC'21's table column, Llama's released checkpoints, GPT-3's 175B): within half a unit of
 * the figure's last digit. */
static void test_catalog(void)
{
    ics_model_catalog *c = catalog();
    const struct {
        const char *name;
        double params_b, half_unit;
    } want[] = {{"gpt3-175b", 175.0, 0.5},       {"gpt-1.7b", 1.7, 0.05},
                {"gpt-3.6b", 3.6, 0.05},         {"gpt-7.5b", 7.5, 0.05},
                {"gpt-18b", 18.4, 0.05},         {"gpt-39b", 39.1, 0.05},
                {"gpt-76b", 76.1, 0.05},         {"gpt-145b", 145.6, 0.05},
                {"gpt-310b", 310.1, 0.05},       {"gpt-530b", 529.6, 0.05},
                {"gpt-1t", 1008.0, 0.05},        {"llama2-70b", 68.98, 0.005},
                {"llama3-8b", 8.03, 0.005},      {"llama3-70b", 70.55, 0.005},
                {"llama3-405b", 405.85, 0.005},  {"mixtral-8x7b", 46.7, 0.05},
                {"gpt-oss-120b", 116.83, 0.005}, {"qwen3-235b-a22b", 235.0, 0.5}};
    /* and deepseek-v3, whose attention is approximated, and qwen3-30b-a3b (test_moe.c) */
    g_assert_cmpint(ics_model_count(c), ==, G_N_ELEMENTS(want) + 2);
    for (size_t i = 0; i < G_N_ELEMENTS(want); i++) {
        const ics_model *m = ics_model_find(c, want[i].name);
        g_assert_nonnull(m);
        GError *err = NULL;
        g_assert_true(ics_model_check(m, &err));
        double p = ics_model_params(m) / 1e9;
        if (fabs(p - want[i].params_b) > want[i].half_unit)
            g_error("%s: %.3fB parameters, published %.2fB", want[i].name, p, want[i].params_b);
        g_assert_nonnull(m->source);
    }
    g_assert_null(ics_model_find(c, "gpt-2"));
    ics_model_catalog_free(c);
}

/* The per-rank split the generator uses adds up to the model's per-layer count. */
static void test_layer_params(void)
{
    ics_model_catalog *c = catalog();
    for (int i = 0; i < ics_model_count(c); i++) {
        const ics_model *m = ics_model_get(c, i);
        double sh, rep;
        ics_model_layer_params(m, &sh, &rep);
        /* Megatron's count for its GPT: 12 h^2 + 13 h per layer */
        if (m->act == ICS_ACT_GELU)
            g_assert_cmpfloat(sh + rep, ==, 12.0 * m->hidden * m->hidden + 13.0 * m->hidden);
    }
    ics_model_catalog_free(c);
}

static void expect_catalog_error(const char *text, const char *want)
{
    GError *err = NULL;
    ics_model_catalog *c = ics_model_catalog_load_text("m.json", text, strlen(text), &err);
    g_assert_null(c);
    g_assert_nonnull(err);
    if (!strstr(err->message, want))
        g_error("expected \"%s\" in: %s", want, err->message);
    g_error_free(err);
}

#define ENTRY(extra)                                                                               \
    "{\"kind\": \"models\", \"models\": {\"x\": {\"layers\": 2, \"hidden\": 64, \"heads\": 4, "    \
    "\"ffn\": 256, \"vocab\": 100, \"seq\": 16, \"activation\": \"gelu\", \"tied_embeddings\": "   \
    "true, \"source\": \"t\"" extra "}}}"

static void test_catalog_errors(void)
{
    GError *err = NULL;
    ics_model_catalog *ok =
        ics_model_catalog_load_text("m.json", ENTRY(""), strlen(ENTRY("")), &err);
    g_assert_no_error(err);
    g_assert_cmpint(ics_model_get(ok, 0)->kv_heads, ==, 4);
    ics_model_catalog_free(ok);
    expect_catalog_error(ENTRY(", \"depth\": 3"),
                         "m.json:1:175: $.models.x.depth: expected one of the keys");
    expect_catalog_error(ENTRY(", \"kv_heads\": 3"),
                         "$.models.x.kv_heads: expected a divisor of heads (4), got 3");
    expect_catalog_error(ENTRY(", \"activation\": \"relu\""), "expected each key once");
    expect_catalog_error("{\"kind\": \"models\", \"models\": {\"x\": {\"layers\": \"two\"}}}",
                         "$.models.x.layers: expected an integer in 1..100000, got \"two\"");
    expect_catalog_error("{\"kind\": \"models\", \"models\": {\"x\": {\"layers\": 2}}}",
                         "$.models.x.hidden: expected");
    /* group-limited routing: groups dividing the experts, whose group_topk hold topk */
    expect_catalog_error(ENTRY(", \"moe\": {\"experts\": 96, \"topk\": 8, \"ffn\": 64, "
                               "\"groups\": 5, \"group_topk\": 2}"),
                         "$.models.x.moe.groups: expected a divisor of the 96 experts, got 5");
    expect_catalog_error(ENTRY(", \"moe\": {\"experts\": 96, \"topk\": 8, \"ffn\": 64, "
                               "\"groups\": 48, \"group_topk\": 2}"),
                         "$.models.x.moe.group_topk: expected an integer in 4..48, got 2");
    expect_catalog_error(ENTRY(", \"moe\": {\"experts\": 96, \"topk\": 8, \"ffn\": 64, "
                               "\"groups\": 8}"),
                         "$.models.x.moe.group_topk: expected an integer in 1..8, got nothing");
    expect_catalog_error("{\"kind\": \"node\", \"models\": {}}", "$.kind: expected");
    expect_catalog_error("[1]", "expected an object");
    expect_catalog_error("{\"kind\": \"models\"", "m.json:1:");
    err = NULL;
    g_assert_null(ics_model_catalog_load("/nonexistent/models.json", &err));
    g_assert_nonnull(err);
    g_error_free(err);
}

/* Every proper prefix of the shipped catalog is rejected with a located message, never a crash
 * (a cheap stand-in for fuzzing the reader). */
static void test_catalog_truncated(void)
{
    char *text;
    gsize len;
    g_assert_true(g_file_get_contents(ICS_SOURCE_DIR "/models/models.json", &text, &len, NULL));
    for (gsize n = 0; n < len - 1; n += 7) {
        GError *err = NULL;
        ics_model_catalog *c = ics_model_catalog_load_text("m.json", text, n, &err);
        g_assert_null(c);
        g_assert_nonnull(err);
        g_assert_true(g_str_has_prefix(err->message, "m.json"));
        g_error_free(err);
    }
    g_free(text);
}

/* ---- layouts --------------------------------------------------------------------------------- */

/* code: ICS_ERROR_INPUT, or ICS_ERROR_LIMIT for a layout past what a run takes */
static void expect_layout_error(const ics_layout *l, const ics_model *m, const char *want, int code)
{
    GError *err = NULL;
    g_assert_false(ics_layout_check(l, m, &err));
    g_assert_error(err, ICS_ERROR, code);
    if (!strstr(err->message, want))
        g_error("expected \"%s\" in: %s", want, err->message);
    g_clear_error(&err);
}

static void test_layout_errors(void)
{
    ics_model m = small_gpt();
    ics_layout l = ics_layout_defaults();
    GError *err = NULL;
    g_assert_true(ics_layout_check(&l, &m, &err));
    l.tp = 3;
    expect_layout_error(&l, &m, "tp: expected a divisor of the model's heads (16), got 3",
                        ICS_ERROR_INPUT);
    l = ics_layout_defaults();
    l.pp = 3;
    expect_layout_error(&l, &m, "pp: expected pp x vp a divisor of the model's layers (8)",
                        ICS_ERROR_INPUT);
    l.pp = 4;
    l.vp = 4;
    expect_layout_error(&l, &m, "expected pp x vp a divisor of the model's layers (8), got 4 x 4",
                        ICS_ERROR_INPUT);
    l = ics_layout_defaults();
    l.dp = 4;
    l.mbs = 2;
    l.gbs = 12;
    expect_layout_error(&l, &m, "gbs: expected a multiple of mbs x dp (2 x 4 = 8), got 12",
                        ICS_ERROR_INPUT);
    l = ics_layout_defaults();
    l.vp = 2;
    l.gbs = 4;
    expect_layout_error(&l, &m, "vp: expected 1 with pp = 1", ICS_ERROR_INPUT);
    l.pp = 4;
    l.vp = 2;
    l.gbs = 6;
    expect_layout_error(&l, &m, "divisible by pp (4)", ICS_ERROR_INPUT);
    l = ics_layout_defaults();
    l.dp = 0;
    expect_layout_error(&l, &m, "layout: dp: expected an integer in 1..1048576, got 0",
                        ICS_ERROR_INPUT);
    l = ics_layout_defaults();
    l.dtype = ICS_DTYPE_FP32;
    expect_layout_error(&l, &m, "dtype: expected bf16, fp16 or fp8, got fp32", ICS_ERROR_INPUT);
    l = ics_layout_defaults();
    l.gbs = 1 << 21;
    expect_layout_error(&l, &m,
                        "gbs: expected at most 1048576 micro-batches per stage, got 2097152",
                        ICS_ERROR_LIMIT);
    ics_model bad = ics_model_make("bad", 2, 100, 3, 400, 10, 8);
    g_assert_false(ics_model_check(&bad, &err));
    g_assert_error(err, ICS_ERROR, ICS_ERROR_INPUT);
    g_assert_nonnull(strstr(err->message, "heads: expected a divisor of hidden (100), got 3"));
    g_clear_error(&err);
    /* the generator refuses them too, and a dtype the GPU lacks */
    ics_hw *hw = load_hw("dgx-a100.json", 0);
    l = ics_layout_defaults();
    l.tp = 5;
    g_assert_null(ics_workload_build(&m, &l, gpu_of(hw), &err));
    g_assert_nonnull(strstr(err->message, "tp: expected a divisor"));
    g_clear_error(&err);
    l = ics_layout_defaults();
    l.dtype = ICS_DTYPE_FP8;
    g_assert_null(ics_workload_build(&m, &l, gpu_of(hw), &err));
    g_assert_nonnull(
        strstr(err->message, "dtype: expected a type GPU a100-sxm has tensor cores for"));
    g_clear_error(&err);
    ics_hw_free(hw);
}

static void test_ranks(void)
{
    ics_layout l = ics_layout_defaults();
    l.tp = 8;
    l.pp = 4;
    l.dp = 2;
    g_assert_cmpint(ics_layout_rank(&l, 3, 2, 1), ==, (1 * 4 + 2) * 8 + 3);
    l.placement = ICS_PLACE_TP_DP_PP;
    g_assert_cmpint(ics_layout_rank(&l, 3, 2, 1), ==, (2 * 2 + 1) * 8 + 3);
    g_assert_cmpint(ics_placement_parse("tp-dp-pp"), ==, ICS_PLACE_TP_DP_PP);
    g_assert_cmpint(ics_recompute_parse("selective"), ==, ICS_RECOMPUTE_SELECTIVE);
    g_assert_cmpint(ics_recompute_parse("some"), ==, -1);
    /* Megatron's bucket rule: 40M parameters, or 1M per replica beyond 40 */
    g_assert_cmpuint(ics_layout_bucket_params(&l), ==, 40000000);
    l.dp = 64;
    g_assert_cmpuint(ics_layout_bucket_params(&l), ==, 64000000);
    l.bucket_bytes = 4000;
    g_assert_cmpuint(ics_layout_bucket_params(&l), ==, 1000);
}

/* ---- FLOPs ----------------------------------------------------------------------------------- */

/* The GPT configurations of Megatron's SC'21 table: counted from the GEMM shapes, with full
 * recomputation, the step's FLOPs are Megatron's formula (and its no-recompute variant). */
static void test_flops_formula(void)
{
    ics_model_catalog *c = catalog();
    const struct {
        const char *name;
        int gbs;
    } rows[] = {{"gpt-1.7b", 512},  {"gpt-3.6b", 512}, {"gpt-7.5b", 512},  {"gpt-18b", 1024},
                {"gpt-39b", 1536},  {"gpt-76b", 1792}, {"gpt-145b", 2304}, {"gpt-310b", 2160},
                {"gpt-530b", 2520}, {"gpt-1t", 3072}};
    for (size_t i = 0; i < G_N_ELEMENTS(rows); i++) {
        const ics_model *m = ics_model_find(c, rows[i].name);
        ics_layout l = ics_layout_defaults();
        l.gbs = rows[i].gbs;
        l.recompute = ICS_RECOMPUTE_FULL;
        ics_step_flops f;
        ics_workload_flops(m, &l, &f);
        double want_hw = ics_workload_megatron_flops(m, rows[i].gbs, true);
        double want_model = ics_workload_megatron_flops(m, rows[i].gbs, false);
        g_assert_cmpfloat(fabs(f.hardware_flops / want_hw - 1), <, 1e-12);
        g_assert_cmpfloat(fabs(f.model_flops / want_model - 1), <, 1e-12);
        g_assert_cmpfloat(f.tokens, ==, (double)rows[i].gbs * 2048);
    }
    /* unfused attention costs more time, not more FLOPs */
    ics_hw *hw = load_hw("dgx-a100.json", 0);
    ics_layout fl = ics_layout_defaults(), ul = fl;
    ul.attention = ICS_ATTN_UNFUSED;
    ics_step_flops ff, uf;
    ics_workload_flops(ics_model_find(c, "gpt-1.7b"), &fl, &ff);
    ics_workload_flops(ics_model_find(c, "gpt-1.7b"), &ul, &uf);
    g_assert_cmpfloat(ff.hardware_flops, ==, uf.hardware_flops);
    ics_trace *ft = build(ics_model_find(c, "gpt-1.7b"), &fl, gpu_of(hw));
    ics_trace *ut = build(ics_model_find(c, "gpt-1.7b"), &ul, gpu_of(hw));
    const ics_trace_op *fa = ics_trace_get_op(ft, 0, 1), *ua = ics_trace_get_op(ut, 0, 1);
    g_assert_cmpstr(fa->name, ==, "fwd.attn");
    g_assert_cmpfloat(fa->flops, ==, ua->flops);
    g_assert_cmpfloat(ua->mem_bytes, >, fa->mem_bytes);
    g_assert_cmpint(ua->duration_ps, >, fa->duration_ps);
    ics_trace_free(ft);
    ics_trace_free(ut);
    ics_hw_free(hw);
    /* selective recomputation adds the attention core's forward only */
    const ics_model *m = ics_model_find(c, "gpt-18b");
    ics_layout l = ics_layout_defaults();
    l.gbs = 8;
    l.recompute = ICS_RECOMPUTE_SELECTIVE;
    ics_step_flops f;
    ics_workload_flops(m, &l, &f);
    double core = 4.0 * 8 * m->seq * m->seq * m->hidden * m->layers;
    g_assert_cmpfloat(fabs((f.hardware_flops - f.model_flops) / core - 1), <, 1e-12);
    ics_model_catalog_free(c);
}

/* Llama (grouped-query attention, SwiGLU, untied): model FLOPs are 6 x matmul parameters x
 * tokens plus the attention term 12 s l h per token, and within that term (and the embedding
 * and norm parameters 6NT counts) of 6 N T. */
static void test_flops_6nt(void)
{
    ics_model_catalog *c = catalog();
    const char *names[] = {"llama2-70b", "llama3-8b", "llama3-70b", "llama3-405b"};
    for (size_t i = 0; i < G_N_ELEMENTS(names); i++) {
        const ics_model *m = ics_model_find(c, names[i]);
        ics_layout l = ics_layout_defaults();
        l.gbs = 4;
        ics_step_flops f;
        ics_workload_flops(m, &l, &f);
        double T = f.tokens, attn = 12.0 * T * m->seq * m->layers * m->hidden;
        double n_mm = ics_model_matmul_params(m), n = ics_model_params(m);
        g_assert_cmpfloat(fabs((f.model_flops - attn) / (6 * n_mm * T) - 1), <, 1e-12);
        double off = fabs(f.model_flops - 6 * n * T);
        g_assert_cmpfloat(off, <=, attn + 6 * (n - n_mm) * T);
        g_test_message("%s: model FLOPs %.4g = 6NT x %.4f (attention term %.1f%%)", names[i],
                       f.model_flops, f.model_flops / (6 * n * T), 100 * attn / f.model_flops);
    }
    ics_model_catalog_free(c);
}

/* ---- compute model --------------------------------------------------------------------------- */

/* TFLOP/s the compute model gives an m x n x k GEMM of dtype d on g. */
static double gemm_tflops(const ics_hw_gpu_type *g, int m, int n, int k, ics_dtype d)
{
    return ics_compute_gemm_eff(g, m, n, k, d) * ics_compute_peak(g, d) / 1e12;
}

/* |model / measured - 1| at most tol, the gap printed. */
static void assert_gemm(const ics_hw_gpu_type *g, int m, int n, int k, ics_dtype d, double measured,
                        double tol)
{
    double got = gemm_tflops(g, m, n, k, d);
    g_test_message("%s %dx%dx%d %s: model %.1f TFLOP/s, measured %.1f (%+.1f%%)", g->name, m, n, k,
                   ics_dtype_name(d), got, measured, 100 * (got / measured - 1));
    g_assert_cmpfloat(fabs(got / measured - 1), <=, tol);
}

static void test_compute_model(void)
{
    ics_hw *hw = load_hw("dgx-h100.json", 0), *a100 = load_hw("dgx-a100.json", 0);
    const ics_hw_gpu_type *g = gpu_of(hw);
    /* The measurements the wave model's constants were read from (hw_compute.c): the deep ones
     * it reproduces, the shallow ones within a few percent. */
    assert_gemm(g, 8192, 8192, 8192, ICS_DTYPE_BF16, 797.5, 0.01);
    assert_gemm(g, 2048, 2048, 2048, ICS_DTYPE_BF16, 676.6, 0.03);
    assert_gemm(g, 4096, 7168, 16384, ICS_DTYPE_FP8, 1404, 0.01);
    assert_gemm(g, 4096, 7168, 2048, ICS_DTYPE_FP8, 1031, 0.04);
    /* Not used to set them: Bekman's best-shape MAMF figures (ml-engineering), which our model
     * puts 8.0% lower on H100 (5.6% with whole waves) and 5.7% on A100 (a best shape out of
     * thousands tried is a lucky one; our H200 runs say the 2.2 us wave cost is too high) */
    assert_gemm(g, 6144, 17920, 2816, ICS_DTYPE_BF16, 792.1, 0.08);
    assert_gemm(gpu_of(a100), 6912, 16384, 2048, ICS_DTYPE_BF16, 267.9, 0.08);
    /* tile quantization: one row past a tile computes a whole tile row (1024 tiles become
     * 1056). With whole waves (an A100's library; the H100 entry with stream-K off) that row
     * lands in the last wave's idle SMs, 7.8 waves becoming 8: the same time. */
    ics_hw_gpu_type whole = *g;
    whole.compute.gemm_stream_k = false;
    double full = ics_compute_gemm_eff(&whole, 4096, 4096, 4096, ICS_DTYPE_BF16);
    double ragged = ics_compute_gemm_eff(&whole, 4097, 4096, 4096, ICS_DTYPE_BF16);
    g_assert_cmpfloat(fabs(ragged / full - 4097.0 / 4096), <, 1e-9);
    /* Hopper's persistent stream-K kernels share the partial wave out, so the extra row costs
     * its 32 tiles' K loops: the time grows by about 32 / 1024 of the K-loop time */
    g_assert_true(g->compute.gemm_stream_k);
    double sk_full = ics_compute_gemm_eff(g, 4096, 4096, 4096, ICS_DTYPE_BF16);
    double sk_ragged = ics_compute_gemm_eff(g, 4097, 4096, 4096, ICS_DTYPE_BF16);
    double grow = (4097.0 / 4096) * sk_full / sk_ragged; /* time ragged / time full */
    g_test_message("stream-K: one row past a tile: %.4f x the time", grow);
    g_assert_cmpfloat(grow, >, 1.02);
    g_assert_cmpfloat(grow, <, 1.032);
    /* wave quantization: 132 tiles fill the SMs once; one tile column more (144 tiles): with
     * whole waves a second wave (splitting K in 3 slices, 432 units in 4 waves of a third the
     * depth plus the partial sums, recovers a little of it); with stream-K the 12 tiles' K
     * loops shared over the 132 SMs and one more fill and drain. Measured on H200 (cuBLASLt
     * 13.1, validate/data/compute/h200_icsim_validate_wave_bf16.json): 46.10 -> 49.63 us,
     * 1.077 x; the run-1 files: 49.54 -> 55.28 and 49.04 -> 54.35 (1.12, 1.11). */
    g_assert_cmpint(g->sms, ==, 132);
    for (int sk = 0; sk < 2; sk++) {
        const ics_hw_gpu_type *t = sk ? g : &whole;
        ics_time one = ics_compute_kernel(t, ICS_WORK_GEMM, ICS_DTYPE_BF16,
                                          2.0 * 1536 * 1408 * 8192, 0, 1536, 1408, 8192);
        ics_time two = ics_compute_kernel(t, ICS_WORK_GEMM, ICS_DTYPE_BF16,
                                          2.0 * 1536 * 1409 * 8192, 0, 1536, 1409, 8192);
        double ratio = (double)(two - t->compute.launch_ps) / (double)(one - t->compute.launch_ps);
        g_test_message("133rd tile column, %s: %.3f x the time", sk ? "stream-K" : "whole waves",
                       ratio);
        /* whole waves: 1.80 with the sm90 constants (2 waves, K split 3 ways a little less) */
        g_assert_cmpfloat(ratio, >, (sk ? 1.10 : 1.75));
        g_assert_cmpfloat(ratio, <, (sk ? 1.16 : 2.0));
    }
    /* a grouped GEMM of 64 experts with 1.5 rows each on average (decode's routed tokens) has
     * 64 experts' tiles, not 96: no slower than 2 rows each */
    ics_time t15 = ics_compute_batched(g, ICS_WORK_GEMM, ICS_DTYPE_BF16, 2.0 * 96 * 1536 * 2048, 0,
                                       64, 1.5, 1536, 2048);
    ics_time t2 = ics_compute_batched(g, ICS_WORK_GEMM, ICS_DTYPE_BF16, 2.0 * 128 * 1536 * 2048, 0,
                                      64, 2, 1536, 2048);
    g_assert_cmpint(t15, <=, t2);
    /* a GEMM given as FLOPs only (a trace's op) runs at a large square GEMM's rate */
    ics_trace_op flat = {
        .kind = ICS_TOP_COMPUTE, .work = ICS_WORK_GEMM, .dtype = ICS_DTYPE_BF16, .flops = 1e15};
    double rate = 1e15 / ((double)(ics_compute_time(g, &flat) - g->compute.launch_ps) / 1e12);
    g_assert_cmpfloat(fabs(rate / (gemm_tflops(g, 8192, 8192, 8192, ICS_DTYPE_BF16) * 1e12 *
                                   g->compute.sustained) -
                           1),
                      <, 0.01);
    /* at the power-bound clock (sustained, H200's measured 0.848 on the H100) fused attention
     * takes 1 / sustained of its boost-clock time, less the launch; a GEMM's K loops likewise,
     * its waves' fixed fill and drain not (so a little less); memory-bound kernels (below) do
     * not slow */
    g_assert_cmpfloat(g->compute.sustained, ==, 0.848);
    ics_hw_gpu_type burst = *g;
    burst.compute.sustained = 1;
    double r[2];
    for (int w = ICS_WORK_GEMM; w <= ICS_WORK_ATTENTION; w++) {
        ics_time hot = ics_compute_kernel(g, (ics_work_kind)w, ICS_DTYPE_BF16,
                                          2.0 * 8192 * 8192 * 8192, 0, 8192, 8192, 8192);
        ics_time cold = ics_compute_kernel(&burst, (ics_work_kind)w, ICS_DTYPE_BF16,
                                           2.0 * 8192 * 8192 * 8192, 0, 8192, 8192, 8192);
        r[w - ICS_WORK_GEMM] =
            (double)(hot - g->compute.launch_ps) / (double)(cold - g->compute.launch_ps);
    }
    g_test_message("8192^3 at the power-bound clock: GEMM %.4f x, attention %.4f x the time", r[0],
                   r[1]);
    g_assert_cmpfloat(fabs(r[1] * 0.848 - 1), <, 1e-6);
    g_assert_cmpfloat(r[0], >, 1.15);
    g_assert_cmpfloat(r[0], <, 1 / 0.848);
    /* a one-token GEMM (decode) splits K over the idle SMs and reads its weights at HBM speed,
     * with one wave's fill and drain */
    double w = 2.0 * 4096 * 7168;
    ics_time gemv =
        ics_compute_kernel(g, ICS_WORK_GEMM, ICS_DTYPE_BF16, 2.0 * 4096 * 7168, w, 1, 7168, 4096);
    double hbm = w / (g->hbm_bw_bytes_per_s * g->compute.mem_eff) * ICS_PS_PER_S;
    g_assert_cmpfloat(fabs((double)(gemv - g->compute.launch_ps - g->compute.gemm_wave_ps) - hbm),
                      <=, 1);
    /* roofline: an elementwise op streams at mem_eff of HBM bandwidth plus a launch */
    ics_trace_op op = {.kind = ICS_TOP_COMPUTE, .work = ICS_WORK_ELEMENTWISE, .mem_bytes = 1e9};
    double want = 1e9 / (g->hbm_bw_bytes_per_s * g->compute.mem_eff) * ICS_PS_PER_S +
                  (double)g->compute.launch_ps;
    g_assert_cmpfloat(fabs((double)ics_compute_time(g, &op) - want), <=, 1);
    ics_hw_free(a100);
    ics_hw_free(hw);
}

/* ---- schedules ------------------------------------------------------------------------------- */

/* Every (micro-batch, chunk) runs forward once and backward once, the backward after; 1F1B warms
 * up with p - s - 1 forwards; interleaving with Megatron's count. */
static void check_schedule(const ics_layout *l)
{
    int m = ics_layout_microbatches(l);
    for (int s = 0; s < l->pp; s++) {
        int n;
        ics_wl_step *st = ics_workload_schedule(l, s, &n);
        g_assert_cmpint(n, ==, 2 * m * l->vp);
        int *fwd_at = g_new(int, m * l->vp), *bwd_at = g_new(int, m * l->vp);
        for (int i = 0; i < m * l->vp; i++)
            fwd_at[i] = bwd_at[i] = -1;
        int warmup = 0;
        while (warmup < n && st[warmup].fwd)
            warmup++;
        for (int i = 0; i < n; i++) {
            int key = st[i].mb * l->vp + st[i].chunk;
            int *at = st[i].fwd ? fwd_at : bwd_at;
            g_assert_cmpint(at[key], ==, -1);
            at[key] = i;
        }
        for (int i = 0; i < m * l->vp; i++)
            g_assert_cmpint(fwd_at[i], <, bwd_at[i]);
        int want = l->vp == 1 ? MIN(l->pp - s - 1, m) + 1
                              : MIN((l->pp - s - 1) * 2 + (l->vp - 1) * l->pp, m * l->vp) + 1;
        if (l->vp > 1 && m == l->pp)
            want = m * l->vp;
        g_assert_cmpint(warmup, ==, MIN(want, m * l->vp));
        g_free(fwd_at);
        g_free(bwd_at);
        g_free(st);
    }
}

static void test_schedules(void)
{
    ics_layout l = ics_layout_defaults();
    const int cases[][3] = {
        {4, 1, 8}, {4, 1, 2},  {1, 1, 3}, {8, 1, 16}, {4, 2, 8}, {4, 2, 4},
        {3, 3, 6}, {8, 3, 32}, {2, 2, 4}, {2, 24, 16}}; /* pp 2: Megatron-Core interleaves it */
    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        l.pp = cases[i][0];
        l.vp = cases[i][1];
        l.gbs = cases[i][2];
        check_schedule(&l);
    }
}

/* ---- trace structure ------------------------------------------------------------------------- */

/* TP 2 x PP 2 x DP 2 on a DGX A100: per rank, m forwards and m backwards per layer of its
 * chunk, two all-reduces of b s h bf16 each way per layer, sends of b s h, gradients
 * all-reduced once per step at their fp32 size. The backward's all-reduces in series (one op
 * per block; /workload/async-tp-backward checks the blocks split beside them). */
static void test_structure(void)
{
    ics_hw *hw = load_hw("dgx-a100.json", 0);
    ics_model m = small_gpt();
    ics_layout l = ics_layout_defaults();
    l.tp_sync_bwd = true;
    l.tp = 2;
    l.pp = 2;
    l.dp = 2;
    l.mbs = 2;
    l.gbs = 16; /* 4 micro-batches */
    l.bucket_bytes = 4 * 3000000;
    ics_trace *tr = build(&m, &l, gpu_of(hw));
    g_assert_cmpint(ics_trace_nranks(tr), ==, 8);
    int mb = 4, L = 4;
    uint64_t bsh = 2ULL * 1024 * 1024 * 2; /* mbs x seq x hidden x 2 bytes */
    /* gradients per rank: Megatron's 12 h^2 + 13 h per layer, of which norms and row-parallel
     * biases (6 h) are whole on every tp rank; stage 0 adds its half of the vocabulary and the
     * positions, stage 1 the final norm and its copy of the tied embedding */
    double h = 1024, per_layer = (12 * h * h + 7 * h) / 2 + 6 * h;
    double edge[2] = {32000 / 2 * h + 1024 * h, 2 * h + 32000 / 2 * h};
    for (int r = 0; r < 8; r++) {
        int stage = (r / 2) % 2;
        g_assert_cmpint(count_named(tr, r, "fwd.attn"), ==, mb * L);
        g_assert_cmpint(count_named(tr, r, "fwd.mlp"), ==, mb * L);
        g_assert_cmpint(count_named(tr, r, "bwd.attn"), ==, mb * L);
        g_assert_cmpint(count_named(tr, r, "bwd.mlp"), ==, mb * L);
        g_assert_cmpint(count_named(tr, r, "rec.attn"), ==, 0);
        g_assert_cmpint(count_named(tr, r, "fwd.embed"), ==, stage == 0 ? mb : 0);
        g_assert_cmpint(count_named(tr, r, "fwd.head"), ==, stage == 1 ? mb : 0);
        g_assert_cmpint(count_named(tr, r, "optimizer"), ==, 1);
        /* 2 all-reduces per layer each way, plus the embedding's (stage 0, forward) or the
         * output layer's input gradient (stage 1, backward) */
        g_assert_cmpint(count_named(tr, r, "tp.all_reduce"), ==, 4 * mb * L + mb);
        g_assert_cmpuint(sum_coll_bytes(tr, r, ICS_CAT_TP, ICS_COLL_ALL_REDUCE), ==,
                         (uint64_t)(4 * mb * L + mb) * bsh);
        g_assert_cmpint(count_named(tr, r, stage == 0 ? "pp.send.act" : "pp.recv.act"), ==, mb);
        g_assert_cmpint(count_named(tr, r, stage == 0 ? "pp.recv.grad" : "pp.send.grad"), ==, mb);
        for (int i = 0; i < ics_trace_nops(tr, r); i++) {
            const ics_trace_op *op = ics_trace_get_op(tr, r, i);
            if (op->kind == ICS_TOP_SEND || op->kind == ICS_TOP_RECV)
                g_assert_cmpuint(op->bytes, ==, bsh);
        }
        g_assert_cmpint(count_named(tr, r, "dp.embedding_all_reduce"), ==, 1);
        double params = L * per_layer + edge[stage];
        g_assert_cmpuint(sum_coll_bytes(tr, r, ICS_CAT_DP, ICS_COLL_ALL_REDUCE), ==,
                         (uint64_t)(params * 4) + 32000 / 2 * 1024 * 4);
        if (r < 2)
            g_test_message("stage %d: %.0f gradient bytes per rank, %.3f x params/(tp x pp) x 4",
                           stage, params * 4, params / (ics_model_params(&m) / 4));
    }
    ics_trace_free(tr);
    ics_hw_free(hw);
}

/* Sequence parallelism: each all-reduce becomes an all-gather before the block and a
 * reduce-scatter after (of the whole b s h buffer), sends carry 1/tp of it; and each backward
 * block gathers its column-parallel linear's input again for the weight gradient (Megatron
 * keeps it sharded: Korthikanti et al., section 4.2.2). */
static void test_structure_sp(void)
{
    ics_hw *hw = load_hw("dgx-a100.json", 0);
    ics_model m = small_gpt();
    ics_layout l = ics_layout_defaults();
    l.tp = 2;
    l.sp = true;
    l.pp = 2;
    l.gbs = 4;
    ics_trace *tr = build(&m, &l, gpu_of(hw));
    int mb = 4, L = 4;
    uint64_t bsh = 1024ULL * 1024 * 2;
    for (int r = 0; r < 4; r++) {
        int stage = r / 2;
        g_assert_cmpint(count_named(tr, r, "tp.all_reduce"), ==, 0);
        /* per layer 2 each way and the backward's 2 re-gathers; the head's gather (stage 1)
         * and the embedding's gradient gather (stage 0) */
        g_assert_cmpint(count_named(tr, r, "tp.all_gather"), ==, 6 * mb * L + mb);
        g_assert_cmpint(count_named(tr, r, "tp.reduce_scatter"), ==, 4 * mb * L + mb);
        g_assert_cmpuint(sum_coll_bytes(tr, r, ICS_CAT_TP, ICS_COLL_ALL_GATHER), ==,
                         (uint64_t)(6 * mb * L + mb) * bsh);
        for (int i = 0; i < ics_trace_nops(tr, r); i++) {
            const ics_trace_op *op = ics_trace_get_op(tr, r, i);
            if (op->kind == ICS_TOP_SEND)
                g_assert_cmpuint(op->bytes, ==, bsh / 2);
        }
        (void)stage;
    }
    ics_trace_free(tr);
    ics_hw_free(hw);
}

/* Recomputation: full adds each layer's forward (with its collectives) before its backward;
 * selective adds the attention core only. Interleaving gives each rank vp chunks. */
static void test_structure_recompute(void)
{
    ics_hw *hw = load_hw("dgx-a100.json", 0);
    ics_model m = small_gpt();
    ics_layout l = ics_layout_defaults();
    l.tp = 2;
    l.pp = 4;
    l.vp = 2;
    l.gbs = 8;
    l.recompute = ICS_RECOMPUTE_FULL;
    ics_trace *tr = build(&m, &l, gpu_of(hw));
    int mb = 8, L = 1, vp = 2;
    for (int r = 0; r < 8; r++) {
        g_assert_cmpint(count_named(tr, r, "fwd.attn"), ==, mb * L * vp);
        g_assert_cmpint(count_named(tr, r, "rec.attn"), ==, mb * L * vp);
        g_assert_cmpint(count_named(tr, r, "rec.mlp"), ==, mb * L * vp);
        g_assert_cmpint(count_named(tr, r, "bwd.mlp"), ==, mb * L * vp);
        int stage = r / 2, edge = (stage == 0) + (stage == 3);
        g_assert_cmpint(count_named(tr, r, "tp.all_reduce"), ==, 6 * mb * L * vp + edge * mb);
        /* chunks are virtual stages s and s + 4: only stage 0's first has no predecessor */
        g_assert_cmpint(count_named(tr, r, "pp.recv.act"), ==, mb * (stage == 0 ? 1 : 2));
    }
    ics_trace_free(tr);
    /* Megatron-Core's block method: only the first recompute_layers of each chunk (2 layers a
     * stage at vp 1: the first), so half the layers; the hardware FLOPs' extra forward halves,
     * the first stage keeps more activations than with every layer recomputed */
    l.vp = 1;
    l.recompute_layers = 1;
    tr = build(&m, &l, gpu_of(hw));
    g_assert_cmpint(count_named(tr, 0, "rec.attn"), ==, mb * 1);
    g_assert_cmpint(count_named(tr, 0, "fwd.attn"), ==, mb * 2);
    ics_trace_free(tr);
    ics_step_flops all, half, none;
    ics_layout lx = l;
    ics_workload_flops(&m, &lx, &half);
    lx.recompute_layers = 0;
    ics_workload_flops(&m, &lx, &all);
    lx.recompute = ICS_RECOMPUTE_NONE;
    ics_workload_flops(&m, &lx, &none);
    g_assert_cmpfloat(fabs((half.hardware_flops - none.hardware_flops) -
                           0.5 * (all.hardware_flops - none.hardware_flops)),
                      <, 1e-9 * all.hardware_flops);
    ics_memory mh, ma;
    ics_memory_of_stage(&m, &l, 0, &mh);
    lx = l;
    lx.recompute_layers = 0;
    ics_memory_of_stage(&m, &lx, 0, &ma);
    g_assert_cmpfloat(mh.activations, >, ma.activations);
    l.recompute_layers = 0;
    l.recompute = ICS_RECOMPUTE_SELECTIVE;
    tr = build(&m, &l, gpu_of(hw));
    g_assert_cmpint(count_named(tr, 0, "rec.attn.core"), ==, mb * 2);
    g_assert_cmpint(count_named(tr, 0, "rec.attn"), ==, 0);
    ics_trace_free(tr);
    ics_hw_free(hw);
}

/* The distributed optimizer reduce-scatters each bucket (padded to a multiple of dp) and
 * all-gathers it after the optimizer; without overlap the buckets wait for the backward. */
static void test_structure_dist_opt(void)
{
    ics_hw *hw = load_hw("dgx-a100.json", 0);
    ics_model m = small_gpt();
    ics_layout l = ics_layout_defaults();
    l.dp = 8;
    l.gbs = 16;
    l.dist_opt = true;
    l.overlap_grad_reduce = false;
    l.bucket_bytes = 4 * 5000000;
    ics_trace *tr = build(&m, &l, gpu_of(hw));
    int nrs = count_named(tr, 0, "dp.reduce_scatter"), nag = count_named(tr, 0, "dp.all_gather");
    g_assert_cmpint(nrs, >, 1);
    g_assert_cmpint(nrs, ==, nag);
    int opt = -1, last_bwd = -1;
    for (int i = 0; i < ics_trace_nops(tr, 0); i++) {
        const ics_trace_op *op = ics_trace_get_op(tr, 0, i);
        if (op->name && strcmp(op->name, "optimizer") == 0)
            opt = i;
        if (op->name && strncmp(op->name, "bwd.", 4) == 0)
            last_bwd = i;
        int nd;
        const int *deps = ics_trace_op_deps(tr, 0, i, &nd);
        if (op->kind == ICS_TOP_COLL && op->coll.op == ICS_COLL_REDUCE_SCATTER) {
            g_assert_cmpuint(op->coll.size_bytes % (8 * 4), ==, 0);
            g_assert_cmpint(nd, ==, 1);
            g_assert_cmpint(deps[0], ==, last_bwd); /* no overlap: after the whole backward */
        }
        if (op->kind == ICS_TOP_COLL && op->coll.op == ICS_COLL_ALL_GATHER) {
            g_assert_cmpint(nd, ==, 1);
            g_assert_cmpint(deps[0], ==, opt);
        }
    }
    g_assert_cmpint(opt, >, last_bwd);
    ics_trace_free(tr);
    ics_hw_free(hw);
}

/* A folded trace gives ops to one representative per stage, the same ops the full trace gives
 * it; the other ranks are empty. */
static void test_fold(void)
{
    ics_hw *hw = load_hw("dgx-a100.json", 0);
    ics_model m = small_gpt();
    ics_layout l = ics_layout_defaults();
    l.tp = 2;
    l.pp = 2;
    l.dp = 2;
    l.gbs = 8;
    ics_trace *full = build(&m, &l, gpu_of(hw));
    l.fold = true;
    ics_trace *fold = build(&m, &l, gpu_of(hw));
    g_assert_cmpint(ics_trace_nranks(fold), ==, 8);
    for (int r = 0; r < 8; r++) {
        bool rep = r % 2 == 0 && r / 4 == 0; /* tp 0 of replica 0 */
        g_assert_cmpint(ics_trace_nops(fold, r), ==, rep ? ics_trace_nops(full, r) : 0);
    }
    ics_trace_free(full);
    ics_trace_free(fold);
    ics_hw_free(hw);
}

/* ---- replays --------------------------------------------------------------------------------- */

/* A copy of tr in which communication costs (almost) nothing: sends and collectives of one
 * element; and the edge blocks (embedding, head) and the optimizer last 1 ps, so that every
 * stage does the same work. */
static ics_trace *free_comm(const ics_trace *tr)
{
    int nr = ics_trace_nranks(tr);
    ics_trace *out = ics_trace_new(nr);
    for (int c = 0; c < ics_trace_ncomms(tr); c++) {
        int n;
        const int *ranks = ics_trace_comm_ranks(tr, c, &n);
        ics_trace_add_comm(out, ranks, n, ics_trace_comm_name(tr, c));
    }
    for (int r = 0; r < nr; r++) {
        for (int s = 0; s < ics_trace_nstreams(tr, r); s++)
            ics_trace_add_stream(out, r, ics_trace_stream_name(tr, r, s));
        for (int i = 0; i < ics_trace_nops(tr, r); i++) {
            ics_trace_op op = *ics_trace_get_op(tr, r, i);
            if (op.kind == ICS_TOP_SEND || op.kind == ICS_TOP_RECV)
                op.bytes = 1;
            if (op.kind == ICS_TOP_COLL)
                op.coll.size_bytes = (uint64_t)op.coll.dtype_bytes * 8;
            if (op.kind == ICS_TOP_COMPUTE &&
                (strstr(op.name, "embed") || strstr(op.name, "head") ||
                 strcmp(op.name, "optimizer") == 0))
                op.duration_ps = 1;
            int nd;
            const int *deps = ics_trace_op_deps(tr, r, i, &nd);
            ics_trace_add_op(out, r, &op, deps, nd);
        }
    }
    return out;
}

/* Sum of the durations of rank r's compute ops whose names start with `prefix`. */
static ics_time compute_ps(const ics_trace *tr, int r, const char *prefix)
{
    ics_time t = 0;
    for (int i = 0; i < ics_trace_nops(tr, r); i++) {
        const ics_trace_op *op = ics_trace_get_op(tr, r, i);
        if (op->kind == ICS_TOP_COMPUTE && g_str_has_prefix(op->name, prefix))
            t += op->duration_ps;
    }
    return t;
}

/* Appends to every rank a 1 ps compute op that depends on its first op, so that no rank's
 * dependency list is empty (the trace's dependency storage is then never a null array); the
 * measured ops end 1 ps before the step. */
static void with_deps(ics_trace *tr)
{
    ics_trace_op tick = {.kind = ICS_TOP_COMPUTE, .cat = ICS_CAT_OTHER, .duration_ps = 1};
    int first = 0;
    for (int r = 0; r < ics_trace_nranks(tr); r++)
        ics_trace_add_op(tr, r, &tick, &first, 1);
}

/* What a one-byte transfer between GPUs 0 and 1 costs with no fixed p2p cost: the slack the
 * bubble checks allow per transfer. */
static ics_time one_byte_ps(const ics_topo *t)
{
    ics_trace *tr = ics_trace_new(2);
    for (int r = 0; r < 2; r++)
        ics_trace_add_stream(tr, r, "s");
    ics_trace_op send = {.kind = ICS_TOP_SEND, .cat = ICS_CAT_PP, .peer = 1, .bytes = 1};
    ics_trace_op recv = {.kind = ICS_TOP_RECV, .cat = ICS_CAT_PP, .peer = 0, .bytes = 1};
    ics_trace_add_op(tr, 0, &send, NULL, 0);
    ics_trace_add_op(tr, 1, &recv, NULL, 0);
    with_deps(tr);
    ics_replay_result res = replay(tr, t, 0);
    ics_trace_free(tr);
    return res.step_ps - 1;
}

/* With communication free, a pipeline step lasts m (F + B) plus the bubble (p - 1)(F + B) / vp:
 * (p - 1) / m of the ideal time for 1F1B, (p - 1) / (m vp) interleaved. F and B are one
 * micro-batch's forward and backward through a stage's layers. Each transfer on the critical
 * path may add its one-byte latency. */
static void check_bubble(int pp, int vp, int m)
{
    ics_hw *hw = load_hw("dgx-h100.json", 0);
    ics_topo *t = ics_topo_new(hw);
    ics_model model = small_gpt();
    model.tied_embeddings = false;
    ics_layout l = ics_layout_defaults();
    l.pp = pp;
    l.vp = vp;
    l.gbs = m;
    ics_trace *gen = build(&model, &l, gpu_of(hw));
    ics_trace *tr = free_comm(gen);
    ics_time fb = (compute_ps(tr, 0, "fwd.") + compute_ps(tr, 0, "bwd.")) / m;
    ics_time ideal = m * fb, bubble = (pp - 1) * fb / vp;
    ics_replay_result res = replay(tr, t, 0);
    ics_time slack = 2 * (ics_time)(m * vp + pp) * one_byte_ps(t) + 1000;
    g_test_message("pp %d vp %d m %d: step %.3f ms, ideal %.3f ms, bubble %.4f (closed form "
                   "%.4f)",
                   pp, vp, m, res.step_ps / 1e9, ideal / 1e9, (double)(res.step_ps - ideal) / ideal,
                   (double)(pp - 1) / (m * vp));
    g_assert_cmpint(res.step_ps, >=, ideal + bubble - 100);
    g_assert_cmpint(res.step_ps, <=, ideal + bubble + slack);
    ics_trace_free(tr);
    ics_trace_free(gen);
    ics_topo_free(t);
    ics_hw_free(hw);
}

static void test_bubble_1f1b(void)
{
    check_bubble(4, 1, 8);
    check_bubble(8, 1, 4);
}

static void test_bubble_interleaved(void)
{
    check_bubble(4, 2, 8);
    check_bubble(4, 2, 4);
}

/* What one all-reduce of `bytes` over GPUs 0..n-1 lasts alone (memoized, as the replays here
 * run them). */
static ics_time all_reduce_ps(const ics_topo *t, int n, uint64_t bytes)
{
    ics_trace *tr = ics_trace_new(n);
    int *ranks = g_new(int, n);
    for (int r = 0; r < n; r++) {
        ranks[r] = r;
        ics_trace_add_stream(tr, r, "s");
    }
    int c = ics_trace_add_comm(tr, ranks, n, "dp");
    ics_trace_op op = {.kind = ICS_TOP_COLL,
                       .cat = ICS_CAT_DP,
                       .comm = c,
                       .coll = {.op = ICS_COLL_ALL_REDUCE, .size_bytes = bytes, .dtype_bytes = 4}};
    for (int r = 0; r < n; r++)
        ics_trace_add_op(tr, r, &op, NULL, 0);
    with_deps(tr);
    ics_replay_result res = replay(tr, t, -1);
    ics_trace_free(tr);
    g_free(ranks);
    return res.step_ps - 1;
}

/* A data-parallel-only rank's step by hand: compute ops back to back on their stream, each
 * bucket's all-reduce on the dp stream from when its gradients are ready and the previous one
 * is done, the optimizer after the last. *exposed: the time the compute stream waits. */
static ics_time dp_step_by_hand(const ics_trace *tr, const ics_topo *t, int n, ics_time *exposed)
{
    int nops = ics_trace_nops(tr, 0);
    ics_time *end = g_new0(ics_time, nops), compute_end = 0, dp_end = 0, waited = 0;
    for (int i = 0; i < nops; i++) {
        const ics_trace_op *op = ics_trace_get_op(tr, 0, i);
        int nd;
        const int *deps = ics_trace_op_deps(tr, 0, i, &nd);
        ics_time ready = op->stream == ICS_WL_STREAM_DP ? dp_end : compute_end;
        for (int d = 0; d < nd; d++)
            ready = MAX(ready, end[deps[d]]);
        if (op->stream == ICS_WL_STREAM_DP) {
            end[i] = dp_end = ready + all_reduce_ps(t, n, op->coll.size_bytes);
        } else {
            waited += ready - compute_end;
            end[i] = compute_end = ready + op->duration_ps;
        }
    }
    g_free(end);
    *exposed = waited;
    return MAX(compute_end, dp_end);
}

/* Data parallelism alone: with overlap, the buckets reduce while the backward goes on, and
 * only what the backward cannot cover shows (here the embedding's bucket, whose backward is
 * short); without, every bucket waits for the end of the backward. The replay matches the
 * step worked out by hand, and overlap hides all but the tail. */
static void test_dp_overlap(void)
{
    ics_hw *hw = load_hw("dgx-h100.json", 0);
    ics_topo *t = ics_topo_new(hw);
    ics_model m = small_gpt();
    ics_layout l = ics_layout_defaults();
    l.dp = 8;
    l.mbs = 4;
    l.gbs = 64; /* 2 micro-batches */
    l.bucket_bytes = 4 * 4000000;
    ics_time step[2], exposed[2], compute = 0, total_ar = 0, last_ar = 0;
    for (int overlap = 0; overlap < 2; overlap++) {
        l.overlap_grad_reduce = overlap;
        ics_trace *tr = build(&m, &l, gpu_of(hw));
        step[overlap] = replay(tr, t, -1).step_ps;
        g_assert_cmpint(step[overlap], ==, dp_step_by_hand(tr, t, 8, &exposed[overlap]));
        compute = compute_ps(tr, 0, "");
        total_ar = last_ar = 0;
        for (int i = 0; i < ics_trace_nops(tr, 0); i++) {
            const ics_trace_op *op = ics_trace_get_op(tr, 0, i);
            if (op->kind == ICS_TOP_COLL)
                total_ar += last_ar = all_reduce_ps(t, 8, op->coll.size_bytes);
        }
        ics_trace_free(tr);
    }
    g_test_message("compute %.3f ms, all-reduces %.3f ms (last %.3f); exposed without overlap "
                   "%.3f ms, with %.3f ms",
                   compute / 1e9, total_ar / 1e9, last_ar / 1e9, exposed[0] / 1e9,
                   exposed[1] / 1e9);
    g_assert_cmpint(exposed[0], ==, total_ar);
    g_assert_cmpint(exposed[1], <, total_ar / 4);
    g_assert_cmpint(exposed[1], >=, last_ar);
    ics_topo_free(t);
    ics_hw_free(hw);
}

/* --tp-comm-overlap (Transformer Engine's userbuffers under Megatron-Core): per block the
 * sequence-parallel all-gather moves to the overlap stream beside its GEMM, the reduce-scatter is
 * split into all chunks but the last (beside the output GEMM) and the last one (after it). The
 * bytes stay the same; the GEMMs beside them run in chunks (tp for the ring exchange, 4 for the
 * pipelined reduce-scatter, whose GEMM loses 16 SMs), a launch each, so compute grows; the step
 * gets shorter and its exposed TP time falls. Without sequence parallelism the layout is refused,
 * as Megatron does. */
static void test_tp_comm_overlap(void)
{
    ics_hw *hw = load_hw("dgx-h100.json", 0);
    ics_topo *t = ics_topo_new(hw);
    ics_model m = small_gpt();
    ics_layout l = ics_layout_defaults();
    l.tp = 8;
    l.sp = true;
    l.gbs = 2;
    l.tp_sync_bwd = true; /* plain: every collective in series (userbuffers ignore it) */
    ics_trace *plain = build(&m, &l, gpu_of(hw));
    l.tp_comm_overlap = true;
    ics_trace *over = build(&m, &l, gpu_of(hw));
    int mb = 2, L = 8;
    g_assert_cmpint(count_named(over, 0, "tp.all_gather"), ==,
                    count_named(plain, 0, "tp.all_gather"));
    g_assert_cmpint(count_named(over, 0, "tp.reduce_scatter"), ==,
                    count_named(plain, 0, "tp.reduce_scatter") + 4 * mb * L);
    for (int op = 0; op < 2; op++) {
        ics_coll_op k = op ? ICS_COLL_REDUCE_SCATTER : ICS_COLL_ALL_GATHER;
        g_assert_cmpuint(sum_coll_bytes(over, 0, ICS_CAT_TP, k), ==,
                         sum_coll_bytes(plain, 0, ICS_CAT_TP, k));
    }
    int side = 0;
    for (int i = 0; i < ics_trace_nops(over, 0); i++)
        side += ics_trace_get_op(over, 0, i)->stream == ICS_WL_STREAM_TP_OVERLAP;
    g_assert_cmpint(side, ==, 2 * 4 * mb * L); /* an all-gather and a reduce-scatter a block */
    /* the compute grows by what the chunked GEMMs cost over whole ones, block by block; no
     * chunked GEMM is faster than the whole one (one that needs every SM is slower) */
    ics_wl_cost c[2][ICS_WL_BLOCK_COUNT];
    const ics_wl_block blocks[] = {ICS_WL_ATTN_FWD, ICS_WL_MLP_FWD, ICS_WL_ATTN_BWD,
                                   ICS_WL_MLP_BWD};
    for (int o = 0; o < 2; o++) {
        l.tp_comm_overlap = o;
        ics_wl__costs(&m, &l, gpu_of(hw), c[o]);
    }
    double want = 0;
    for (size_t i = 0; i < G_N_ELEMENTS(blocks); i++) {
        const ics_wl_cost *a = &c[0][blocks[i]], *b = &c[1][blocks[i]];
        g_assert_cmpint(b->gemm_in_ps, >=, a->gemm_in_ps);
        g_assert_cmpint(b->gemm_out_ps, >=, a->gemm_out_ps);
        g_assert_cmpfloat(b->flops, ==, a->flops);
        want += mb * L * (double)(b->dur_ps - a->dur_ps);
    }
    double grown = (double)compute_ps(over, 0, "") - (double)compute_ps(plain, 0, "");
    g_test_message("compute grows %.3f us, the chunked GEMMs' cost: %.3f us", grown / 1e6,
                   want / 1e6);
    g_assert_cmpfloat(want, >, 0);
    g_assert_cmpfloat(fabs(grown - want), <, 1e-3 * want + 64 * mb * L);
    /* on this small model (h 1024) the collectives are latency: the extra reduce-scatter call
     * and the lost SMs cost more than the overlap saves */
    ics_replay_result a = replay(plain, t, -1), b = replay(over, t, -1);
    g_test_message("h 1024: step %.3f ms -> %.3f ms", a.step_ps / 1e9, b.step_ps / 1e9);
    g_assert_cmpint(b.step_ps, >, a.step_ps);
    ics_trace_free(plain);
    ics_trace_free(over);
    /* on GPT-3's layers (h 12288, s 2048) they are bandwidth, and hiding them wins (the chunks
     * run on several streams and share their waves, as TE's CommOverlap runs them) */
    ics_model wide = ics_model_make("wide", 2, 12288, 96, 4 * 12288, 51200, 2048);
    l.tp_comm_overlap = false;
    plain = build(&wide, &l, gpu_of(hw));
    l.tp_comm_overlap = true;
    over = build(&wide, &l, gpu_of(hw));
    a = replay(plain, t, -1);
    b = replay(over, t, -1);
    g_test_message("h 12288: step %.3f ms -> %.3f ms", a.step_ps / 1e9, b.step_ps / 1e9);
    g_assert_cmpint(b.step_ps, <, a.step_ps * 0.95);
    ics_trace_free(plain);
    ics_trace_free(over);
    l.sp = false;
    GError *err = NULL;
    g_assert_false(ics_layout_check(&l, &m, &err));
    g_assert_nonnull(strstr(err->message, "expected sequence parallelism with tp_comm_overlap"));
    g_error_free(err);
    ics_topo_free(t);
    ics_hw_free(hw);
}

/* Megatron-LM's Linear backward (since September 2021): each backward block's column-parallel
 * linear (QKV, fc1) runs its data gradient, then its weight gradient beside the reduction of
 * that data gradient (an all-reduce, or with sequence parallelism a reduce-scatter, on the
 * overlap stream), and with sequence parallelism gathers its input again beside the data
 * gradient, the weight gradient waiting for it; the next compute op waits for the reduction.
 * On GPT-3's layers the step is shorter than with the reductions in series, by at most the
 * reductions' time. */
static void test_async_tp_backward(void)
{
    ics_hw *hw = load_hw("dgx-a100.json", 0);
    ics_topo *t = ics_topo_new(hw);
    ics_model m = ics_model_make("wide", 2, 12288, 96, 4 * 12288, 51200, 2048);
    for (int sp = 0; sp < 2; sp++) {
        ics_layout l = ics_layout_defaults();
        l.tp = 8;
        l.sp = sp;
        l.gbs = 2;
        ics_trace *tr = build(&m, &l, gpu_of(hw));
        int mb = 2, L = 2, checked = 0;
        g_assert_cmpint(count_named(tr, 0, "bwd.mlp.fc1_dgrad"), ==, mb * L);
        g_assert_cmpint(count_named(tr, 0, "bwd.attn.qkv_wgrad"), ==, mb * L);
        ics_coll_op red = sp ? ICS_COLL_REDUCE_SCATTER : ICS_COLL_ALL_REDUCE;
        for (int i = 0; i < ics_trace_nops(tr, 0); i++) {
            const ics_trace_op *op = ics_trace_get_op(tr, 0, i);
            if (!op->name || !g_str_has_suffix(op->name, "_wgrad"))
                continue;
            /* the reduction of the data gradient just before, beside this GEMM */
            const ics_trace_op *r = ics_trace_get_op(tr, 0, i - 1);
            const ics_trace_op *dx = ics_trace_get_op(tr, 0, i - 2);
            g_assert_true(r->kind == ICS_TOP_COLL && r->coll.op == red);
            g_assert_cmpint(r->stream, ==, ICS_WL_STREAM_TP_OVERLAP);
            g_assert_true(g_str_has_suffix(dx->name, "_dgrad"));
            int nd;
            const int *deps = ics_trace_op_deps(tr, 0, i - 1, &nd);
            g_assert_cmpint(nd, ==, 1);
            g_assert_cmpint(deps[0], ==, i - 2);
            /* with SP the weight gradient waits for the input's gather */
            deps = ics_trace_op_deps(tr, 0, i, &nd);
            if (sp) {
                g_assert_cmpint(nd, ==, 1);
                const ics_trace_op *ag = ics_trace_get_op(tr, 0, deps[0]);
                g_assert_true(ag->kind == ICS_TOP_COLL && ag->coll.op == ICS_COLL_ALL_GATHER);
                g_assert_cmpint(ag->stream, ==, ICS_WL_STREAM_TP_OVERLAP);
            }
            /* the next compute-stream op waits for the reduction */
            for (int j = i + 1; j < ics_trace_nops(tr, 0); j++) {
                if (ics_trace_get_op(tr, 0, j)->stream != ICS_WL_STREAM_COMPUTE)
                    continue;
                deps = ics_trace_op_deps(tr, 0, j, &nd);
                bool waits = false;
                for (int d = 0; d < nd; d++)
                    waits |= deps[d] == i - 1;
                g_assert_true(waits);
                checked++;
                break;
            }
        }
        g_assert_cmpint(checked, >=, 2 * mb * L - 1); /* the step's last block: the optimizer */
        ics_replay_result a = replay(tr, t, -1);
        l.tp_sync_bwd = true;
        ics_trace *sync = build(&m, &l, gpu_of(hw));
        ics_replay_result b = replay(sync, t, -1);
        ics_time reductions = 0;
        for (int i = 0; i < ics_trace_nops(tr, 0); i++) {
            const ics_trace_op *op = ics_trace_get_op(tr, 0, i);
            if (op->kind == ICS_TOP_COLL && op->stream == ICS_WL_STREAM_TP_OVERLAP &&
                op->coll.op == red)
                reductions += all_reduce_ps(t, 8, op->coll.size_bytes) / (sp ? 2 : 1);
        }
        g_test_message("sp %d: step %.3f ms in series, %.3f ms beside the GEMMs (reductions "
                       "~%.3f ms)",
                       sp, b.step_ps / 1e9, a.step_ps / 1e9, reductions / 1e9);
        g_assert_cmpint(a.step_ps, <, b.step_ps);
        g_assert_cmpint(a.step_ps, >, b.step_ps - reductions - reductions / 2);
        ics_trace_free(tr);
        ics_trace_free(sync);
    }
    /* frozen weights (LoRA): no weight gradient, so no re-gather of its input */
    ics_layout l = ics_layout_defaults();
    l.tp = 8;
    l.sp = true;
    l.gbs = 2;
    l.lora_rank = 16;
    ics_trace *tr = build(&m, &l, gpu_of(hw));
    int side_gathers = 0;
    for (int i = 0; i < ics_trace_nops(tr, 0); i++) {
        const ics_trace_op *op = ics_trace_get_op(tr, 0, i);
        side_gathers += op->kind == ICS_TOP_COLL && op->coll.op == ICS_COLL_ALL_GATHER &&
                        op->stream == ICS_WL_STREAM_TP_OVERLAP;
    }
    g_assert_cmpint(side_gathers, ==, 0);
    ics_trace_free(tr);
    ics_topo_free(t);
    ics_hw_free(hw);
}

/* --overlap-param-gather (Megatron-Core, with the distributed optimizer): the same parameter
 * all-gathers, bucket for bucket and byte for byte, but issued beside the first micro-batch's
 * forward (each gating the first block that uses its bucket) instead of after the optimizer; the
 * step is no longer for it. Interleaved, every model chunk's buckets are gathered too. */
static int first_named(const ics_trace *tr, int rank, const char *prefix)
{
    for (int i = 0; i < ics_trace_nops(tr, rank); i++)
        if (g_str_has_prefix(ics_trace_get_op(tr, rank, i)->name, prefix))
            return i;
    return -1;
}

static int last_named(const ics_trace *tr, int rank, const char *prefix)
{
    int last = -1;
    for (int i = 0; i < ics_trace_nops(tr, rank); i++)
        if (g_str_has_prefix(ics_trace_get_op(tr, rank, i)->name, prefix))
            last = i;
    return last;
}

static void test_overlap_param_gather(void)
{
    ics_hw *hw = load_hw("dgx-h100.json", 0);
    ics_topo *t = ics_topo_new(hw);
    ics_model m = small_gpt();
    ics_layout l = ics_layout_defaults();
    l.dp = 8;
    l.mbs = 4;
    l.gbs = 64;
    l.dist_opt = true;
    l.bucket_bytes = 4 * 4000000;
    for (int pp = 1; pp <= 4; pp *= 4) {
        l.pp = pp;
        l.dp = 8 / pp;
        l.gbs = 16 * l.dp;
        l.vp = pp > 1 ? 2 : 1;
        ics_trace *plain = build(&m, &l, gpu_of(hw));
        l.overlap_param_gather = true;
        ics_trace *over = build(&m, &l, gpu_of(hw));
        l.overlap_param_gather = false;
        g_assert_cmpint(count_named(over, 0, "dp.all_gather"), ==,
                        count_named(plain, 0, "dp.all_gather"));
        g_assert_cmpint(count_named(over, 0, "dp.all_gather"), >, 0);
        g_assert_cmpuint(sum_coll_bytes(over, 0, ICS_CAT_DP, ICS_COLL_ALL_GATHER), ==,
                         sum_coll_bytes(plain, 0, ICS_CAT_DP, ICS_COLL_ALL_GATHER));
        /* before the first backward, none after the optimizer (the other way round without) */
        g_assert_cmpint(last_named(over, 0, "dp.all_gather"), <, first_named(over, 0, "bwd."));
        g_assert_cmpint(first_named(plain, 0, "dp.all_gather"), >,
                        first_named(plain, 0, "optimizer"));
        ics_time a = replay(plain, t, -1).step_ps, b = replay(over, t, -1).step_ps;
        g_test_message("pp %d: step %.3f ms -> %.3f ms", pp, a / 1e9, b / 1e9);
        if (pp == 1)
            g_assert_cmpint(b, <, a);
        ics_trace_free(plain);
        ics_trace_free(over);
    }
    ics_topo_free(t);
    ics_hw_free(hw);
}

/* FP8 (Transformer Engine): each linear layer's input is cast to FP8 with its transpose in
 * forward, its output gradient likewise in backward (4 B moved per element: 2 read, 1 + 1
 * written), two kernels more per block; the GEMMs read 1-byte operands. On the forward attention
 * block of a multi-head model with tp 1 (QKV n = 3h, projection n = h), bytes change by the
 * casts 4 T (h + h) less the GEMMs' halved inputs (T h + 3 h^2) + (T h + h^2). */
static void test_fp8_casts(void)
{
    ics_hw *hw = load_hw("dgx-h100.json", 0);
    ics_model m = small_gpt();
    ics_layout l = ics_layout_defaults();
    l.mbs = 2;
    ics_wl_cost bf[ICS_WL_BLOCK_COUNT], f8[ICS_WL_BLOCK_COUNT];
    ics_wl__costs(&m, &l, gpu_of(hw), bf);
    l.dtype = ICS_DTYPE_FP8;
    ics_wl__costs(&m, &l, gpu_of(hw), f8);
    const ics_wl_block blocks[] = {ICS_WL_ATTN_FWD, ICS_WL_ATTN_BWD, ICS_WL_MLP_FWD,
                                   ICS_WL_MLP_BWD};
    for (size_t i = 0; i < G_N_ELEMENTS(blocks); i++)
        g_assert_cmpint(f8[blocks[i]].kernels, ==, bf[blocks[i]].kernels + 2);
    double T = 2.0 * m.seq, h = m.hidden;
    double want = 4 * T * (h + h) - ((T * h + 3 * h * h) + (T * h + h * h));
    g_assert_cmpfloat(fabs(f8[ICS_WL_ATTN_FWD].bytes - bf[ICS_WL_ATTN_FWD].bytes - want), <, 1);
    g_assert_cmpint(f8[ICS_WL_ATTN_FWD].dur_ps, >, 0);
    ics_hw_free(hw);
}

/* Fused attention under a causal mask runs only the 128 x 128 tiles on or below the diagonal,
 * (n + 1) / 2n of the s x s work for n = s / 128, at the attention efficiency: the selective
 * recomputation block (the attention core's forward alone) against that closed form, at two
 * sequence lengths. The FLOPs counted stay Megatron's full 4 T s h (so they match its formula);
 * the unfused path computes every score and counts the same. */
static void test_causal_attention(void)
{
    ics_hw *hw = load_hw("dgx-h100.json", 0);
    const ics_hw_gpu_type *g = gpu_of(hw);
    const int seqs[] = {1024, 8192};
    for (size_t i = 0; i < G_N_ELEMENTS(seqs); i++) {
        ics_model m = ics_model_make("a", 2, 4096, 32, 16384, 32000, seqs[i]);
        ics_layout l = ics_layout_defaults();
        ics_wl_cost c[ICS_WL_BLOCK_COUNT], u[ICS_WL_BLOCK_COUNT];
        ics_wl__costs(&m, &l, g, c);
        double T = m.seq, full = 4 * T * T * m.hidden, n = T / 128;
        double run = full * (n + 1) / (2 * n);
        double bytes = 4 * T * m.hidden * 2; /* Q, K, V read, O written */
        double t = fmax(run / (ics_compute_peak(g, ICS_DTYPE_BF16) * g->compute.sustained *
                               g->compute.attn_eff),
                        bytes / ((double)g->hbm_bw_bytes_per_s * g->compute.mem_eff)) +
                   ics_time_to_s(g->compute.launch_ps);
        g_assert_cmpfloat(c[ICS_WL_ATTN_RECOMP].flops, ==, full);
        g_assert_cmpfloat(fabs(ics_time_to_s(c[ICS_WL_ATTN_RECOMP].dur_ps) / t - 1), <, 1e-6);
        l.attention = ICS_ATTN_UNFUSED;
        ics_wl__costs(&m, &l, g, u);
        g_assert_cmpfloat(fabs(u[ICS_WL_ATTN_RECOMP].flops / full - 1), <, 1e-12);
    }
    ics_hw_free(hw);
}

/* The output layer is Megatron-Core's own ColumnParallelLinear, outside Transformer Engine: its
 * logits GEMM runs in bf16 with an FP8 layout too, so the head blocks cost the same in both. */
static void test_head_bf16(void)
{
    ics_hw *hw = load_hw("dgx-h100.json", 0);
    ics_model m = small_gpt();
    ics_layout l = ics_layout_defaults();
    ics_wl_cost bf[ICS_WL_BLOCK_COUNT], f8[ICS_WL_BLOCK_COUNT];
    ics_wl__costs(&m, &l, gpu_of(hw), bf);
    l.dtype = ICS_DTYPE_FP8;
    ics_wl__costs(&m, &l, gpu_of(hw), f8);
    for (int b = ICS_WL_HEAD_FWD; b <= ICS_WL_HEAD_BWD; b++) {
        g_assert_cmpint(f8[b].dur_ps, ==, bf[b].dur_ps);
        g_assert_cmpfloat(f8[b].bytes, ==, bf[b].bytes);
    }
    ics_hw_free(hw);
}

/* --fsdp (ZeRO-3, FSDP2 as torchtitan wraps a model): every micro-batch all-gathers each unit
 * (the embedding, each transformer block, the final norm and output layer) before its forward
 * and again before its backward, on the all-gather stream, and (one stage: FSDP2's default)
 * reduce-scatters each unit's gradients after its backward; no all-reduce, no optimizer
 * all-gather. Bytes: 2 x micro-batches x the parameters at 2 B gathered, micro-batches x the
 * parameters at the gradient's size reduce-scattered (each unit padded to a multiple of dp).
 * Memory: the shard plus the two largest consecutive units whole. */
static void test_fsdp(void)
{
    ics_hw *hw = load_hw("dgx-h100.json", 0);
    ics_topo *t = ics_topo_new(hw);
    ics_model m = small_gpt();
    ics_layout l = ics_layout_defaults();
    l.dp = 8;
    l.mbs = 2;
    l.gbs = 48; /* 3 micro-batches */
    l.fsdp = true;
    ics_trace *tr = build(&m, &l, gpu_of(hw));
    int nmb = 3, units = m.layers + 2;
    g_assert_cmpint(count_named(tr, 0, "dp.all_gather"), ==, 2 * nmb * units);
    g_assert_cmpint(count_named(tr, 0, "dp.reduce_scatter"), ==, nmb * units);
    g_assert_cmpint(count_named(tr, 0, "dp.all_reduce"), ==, 0);
    double attn, mlp, sh, rep, word, pos, fin, out;
    ics_wl__layer_rank_params(&m, 1, &attn, &mlp);
    ics_model_edge_params(&m, &word, &pos, &fin, &out);
    /* one stage with tied embeddings: the output layer is the embedding, gathered with it */
    double unit[3] = {word + pos, attn + mlp, fin}, padded = 0;
    for (int i = 0; i < 3; i++)
        padded += ceil(unit[i] / 8) * 8 * (i == 1 ? m.layers : 1);
    g_assert_cmpfloat(fabs((double)sum_coll_bytes(tr, 0, ICS_CAT_DP, ICS_COLL_ALL_GATHER) -
                           2.0 * nmb * padded * 2),
                      <, 1);
    g_assert_cmpfloat(
        fabs((double)sum_coll_bytes(tr, 0, ICS_CAT_DP, ICS_COLL_REDUCE_SCATTER) - nmb * padded * 4),
        <, 1);
    int gather_stream = 0;
    for (int i = 0; i < ics_trace_nops(tr, 0); i++)
        gather_stream += ics_trace_get_op(tr, 0, i)->stream == ICS_WL_STREAM_GATHER;
    g_assert_cmpint(gather_stream, ==, 2 * nmb * units);
    g_assert_cmpint(replay(tr, t, -1).step_ps, >, 0);
    ics_trace_free(tr);
    ics_memory mem;
    ics_memory_of_stage(&m, &l, 0, &mem);
    ics_model_layer_params(&m, &sh, &rep);
    /* stage 0 of one: the embedding (32000 x 1024) and the first block are the largest pair */
    g_assert_cmpfloat(fabs(mem.weights - 2 * (mem.params / 8 + word + pos + sh + rep)), <, 1);
    g_assert_cmpfloat(fabs(mem.optimizer - 12 * mem.params / 8), <, 1);
    /* HSDP (--fsdp-shard 4 of dp 8): the gathers and reduce-scatters over groups of 4 (units
     * padded to 4), then each shard all-reduced over the 2 replicas; memory sharded by 4 */
    l.fsdp_shard = 4;
    tr = build(&m, &l, gpu_of(hw));
    g_assert_cmpint(count_named(tr, 0, "dp.all_gather"), ==, 2 * nmb * units);
    g_assert_cmpint(count_named(tr, 0, "dp.replicate_all_reduce"), ==, nmb * units);
    double padded4 = 0;
    for (int i = 0; i < 3; i++)
        padded4 += ceil(unit[i] / 4) * 4 * (i == 1 ? m.layers : 1);
    g_assert_cmpfloat(fabs((double)sum_coll_bytes(tr, 0, ICS_CAT_DP, ICS_COLL_ALL_GATHER) -
                           2.0 * nmb * padded4 * 2),
                      <, 1);
    g_assert_cmpfloat(
        fabs((double)sum_coll_bytes(tr, 0, ICS_CAT_DP, ICS_COLL_ALL_REDUCE) - nmb * padded4), <, 1);
    for (int i = 0; i < ics_trace_nops(tr, 0); i++) {
        const ics_trace_op *op = ics_trace_get_op(tr, 0, i);
        int n;
        if (op->kind == ICS_TOP_COLL && op->cat == ICS_CAT_DP) {
            ics_trace_comm_ranks(tr, op->comm, &n);
            g_assert_cmpint(n, ==, op->coll.op == ICS_COLL_ALL_REDUCE ? 2 : 4);
        }
    }
    g_assert_cmpint(replay(tr, t, -1).step_ps, >, 0);
    ics_trace_free(tr);
    ics_memory_of_stage(&m, &l, 0, &mem);
    g_assert_cmpfloat(fabs(mem.optimizer - 12 * mem.params / 4), <, 1);
    /* with pp > 1 gradients sync in the last micro-batch only: whole until then */
    ics_layout l2 = l;
    l2.fsdp_shard = 0;
    l2.pp = 2;
    l2.dp = 4;
    l2.gbs = 24; /* 3 micro-batches */
    ics_memory_of_stage(&m, &l2, 0, &mem);
    g_assert_cmpfloat(fabs(mem.grads - 4 * mem.params), <, 1);
    l.fsdp_shard = 3; /* does not divide dp */
    GError *err = NULL;
    g_assert_false(ics_layout_check(&l, &m, &err));
    g_assert_nonnull(strstr(err->message, "expected a multiple of fsdp_shard (3)"));
    g_error_free(err);
    ics_topo_free(t);
    ics_hw_free(hw);
}

/* Megatron-Core's uneven stages (--decoder-first/last-pipeline-num-layers): 10 layers on 4
 * stages with the first holding 1 and the last 3 leaves 3 to each stage between; every rank's
 * forward blocks follow its stage's count, memory too, and folded and full traces agree. A split
 * that does not divide, or one with interleaving, is refused. */
static void test_uneven_stages(void)
{
    ics_hw *hw = load_hw("dgx-h100.json", 0);
    ics_topo *t = ics_topo_new(hw);
    ics_model m = ics_model_make("ten", 10, 1024, 16, 4096, 32000, 1024);
    ics_layout l = ics_layout_defaults();
    l.pp = 4;
    l.dp = 2;
    l.gbs = 8; /* 4 micro-batches */
    l.first_layers = 1;
    l.last_layers = 3;
    GError *err = NULL;
    g_assert_true(ics_layout_check(&l, &m, &err));
    const int want[4] = {1, 3, 3, 3};
    ics_trace *tr = build(&m, &l, gpu_of(hw));
    for (int s = 0; s < 4; s++) {
        g_assert_cmpint(ics_layout_stage_layers(&l, &m, s), ==, want[s]);
        int rank = ics_layout_rank(&l, 0, s, 0);
        g_assert_cmpint(count_named(tr, rank, "fwd.attn"), ==, 4 * want[s]);
        ics_memory mem;
        ics_memory_of_stage(&m, &l, s, &mem);
        double sh, rep;
        ics_model_layer_params(&m, &sh, &rep);
        g_assert_cmpfloat(mem.params, >=, want[s] * (sh + rep));
        g_assert_cmpfloat(mem.params, <, (want[s] + 1) * (sh + rep) + 2 * 32000.0 * 1024);
    }
    l.fold = true;
    ics_trace *fold = build(&m, &l, gpu_of(hw));
    g_assert_cmpint(replay(tr, t, -1).step_ps, ==, replay(fold, t, -1).step_ps);
    ics_trace_free(tr);
    ics_trace_free(fold);
    l.last_layers = 4; /* 5 left for 2 stages */
    g_assert_false(ics_layout_check(&l, &m, &err));
    g_assert_nonnull(strstr(err->message, "expected uneven edge stages"));
    g_clear_error(&err);
    l.last_layers = 3;
    l.vp = 2;
    g_assert_false(ics_layout_check(&l, &m, &err));
    g_clear_error(&err);
    ics_topo_free(t);
    ics_hw_free(hw);
}

/* Folded and full traces of a symmetric job replay to the same step (collectives memoized). */
static void test_fold_replay(void)
{
    ics_hw *hw = load_hw("dgx-h100.json", 0);
    ics_topo *t = ics_topo_new(hw);
    ics_model m = small_gpt();
    ics_layout l = ics_layout_defaults();
    l.tp = 2;
    l.pp = 2;
    l.dp = 2;
    l.gbs = 8;
    ics_trace *full = build(&m, &l, gpu_of(hw));
    l.fold = true;
    ics_trace *fold = build(&m, &l, gpu_of(hw));
    g_assert_cmpint(replay(full, t, -1).step_ps, ==, replay(fold, t, -1).step_ps);
    ics_trace_free(full);
    ics_trace_free(fold);
    ics_topo_free(t);
    ics_hw_free(hw);
}

/* ---- scale ----------------------------------------------------------------------------------- */

/* GPT-3 175B on 1024 GPUs (TP 8, PP 8, DP 16, gbs 1536, mbs 1, full recomputation): the full
 * trace has tp x dp times the ops of the folded one; both build in seconds. */
static void test_gpt3_1024(void)
{
    if (!g_test_slow()) {
        g_test_skip("slow: run with -m slow");
        return;
    }
    ics_model_catalog *c = catalog();
    ics_hw *hw = load_hw("dgx-a100.json", 0);
    ics_layout l = ics_layout_defaults();
    l.tp = 8;
    l.pp = 8;
    l.dp = 16;
    l.gbs = 1536;
    l.recompute = ICS_RECOMPUTE_FULL;
    long ops[2];
    for (int fold = 1; fold >= 0; fold--) {
        l.fold = fold;
        gint64 t0 = g_get_monotonic_time();
        GError *err = NULL;
        ics_trace *tr = ics_workload_build(ics_model_find(c, "gpt3-175b"), &l, gpu_of(hw), &err);
        g_assert_nonnull(tr);
        double secs = (g_get_monotonic_time() - t0) / 1e6;
        ops[fold] = 0;
        for (int r = 0; r < ics_trace_nranks(tr); r++)
            ops[fold] += ics_trace_nops(tr, r);
        g_test_message("gpt3-175b on 1024 GPUs, %s: %ld ops, built in %.2f s",
                       fold ? "folded" : "full", ops[fold], secs);
        ics_trace_free(tr);
    }
    g_assert_cmpint(ops[0], ==, ops[1] * 8 * 16);
    ics_hw_free(hw);
    ics_model_catalog_free(c);
}

/* The catalog's sustained shares are the published MSMF / MAMF ratios they cite
 * (validate/data/compute/mamf_msmf_public.json, the rows measured with the whole node busy), to
 * the third decimal; and the loader gives them to the GPU types. */
static void test_sustained_source(void)
{
    char *path = g_build_filename(ICS_SOURCE_DIR, "validate", "data", "compute",
                                  "mamf_msmf_public.json", NULL);
    char *cat_path = g_build_filename(ICS_SOURCE_DIR, "hwmodels", "catalog.json", NULL);
    char *text = NULL, *cat_text = NULL;
    g_assert_true(g_file_get_contents(path, &text, NULL, NULL));
    g_assert_true(g_file_get_contents(cat_path, &cat_text, NULL, NULL));
    cJSON *doc = cJSON_Parse(text), *cat = cJSON_Parse(cat_text), *row;
    const cJSON *gpus = cJSON_GetObjectItem(cat, "gpus");
    int checked = 0;
    cJSON_ArrayForEach(row, cJSON_GetObjectItem(doc, "rows"))
    {
        double ratio = cJSON_GetObjectItem(row, "msmf_tflops")->valuedouble /
                       cJSON_GetObjectItem(row, "mamf_tflops")->valuedouble;
        const cJSON *name;
        cJSON_ArrayForEach(name, cJSON_GetObjectItem(row, "catalog"))
        {
            const cJSON *c =
                cJSON_GetObjectItem(cJSON_GetObjectItem(gpus, name->valuestring), "compute");
            double f = cJSON_GetObjectItem(c, "sustained_fraction")->valuedouble;
            g_test_message("%s: sustained_fraction %.3f, MSMF / MAMF %.4f", name->valuestring, f,
                           ratio);
            g_assert_cmpfloat(fabs(f - ratio), <, 0.0005);
            checked++;
        }
    }
    g_assert_cmpint(checked, ==, 3);
    static const struct {
        const char *file;
        double f;
    } types[] = {{"dgx-h100.json", 0.848}, {"hgx-b200.json", 0.815}, {"dgx-a100.json", 1}};
    for (size_t i = 0; i < G_N_ELEMENTS(types); i++) {
        ics_hw *hw = load_hw(types[i].file, 0);
        g_assert_cmpfloat(gpu_of(hw)->compute.sustained, ==, types[i].f);
        ics_hw_free(hw);
    }
    cJSON_Delete(doc);
    cJSON_Delete(cat);
    g_free(text);
    g_free(cat_text);
    g_free(path);
    g_free(cat_path);
}

/* The MAMF (boost-clock best matmul) of a row of mamf_table_public.json, as a fraction of its
 * datasheet peak; the peak is checked against the catalog type's. */
static double mamf_eff(const cJSON *doc, const char *gpu, const char *dtype, double peak)
{
    const cJSON *row;
    cJSON_ArrayForEach(row, cJSON_GetObjectItem(doc, "rows"))
    {
        if (strcmp(cJSON_GetObjectItem(row, "gpu")->valuestring, gpu) != 0 ||
            strcmp(cJSON_GetObjectItem(row, "dtype")->valuestring, dtype) != 0)
            continue;
        g_assert_cmpfloat(cJSON_GetObjectItem(row, "theory_tflops")->valuedouble, ==, peak);
        return cJSON_GetObjectItem(row, "mamf_tflops")->valuedouble / peak;
    }
    g_assert_not_reached();
}

/* GB200 runs the B200's compute model (the same die) with its GEMM efficiencies scaled by the
 * two GPUs' measured MAMF efficiencies, and the B200's sustained clock (an estimate: no GB200
 * MSMF is published); the catalog's rounded figures are checked against the published table. */
static void test_sibling_efficiency(void)
{
    char *path = g_build_filename(ICS_SOURCE_DIR, "validate", "data", "compute",
                                  "mamf_table_public.json", NULL);
    char *text = NULL;
    g_assert_true(g_file_get_contents(path, &text, NULL, NULL));
    cJSON *doc = cJSON_Parse(text);
    ics_hw *b = load_hw("hgx-b200.json", 0), *gb = load_hw("gb200-nvl72.json", 0);
    const ics_hw_gpu_type *b200 = gpu_of(b), *gb200 = gpu_of(gb);
    static const struct {
        const char *dtype;
        ics_dtype d;
        bool fp8;
    } kinds[] = {{"bf16", ICS_DTYPE_BF16, false}, {"fp8", ICS_DTYPE_FP8, true}};
    for (size_t i = 0; i < G_N_ELEMENTS(kinds); i++) {
        double rb = mamf_eff(doc, "NVIDIA B200 SXM", kinds[i].dtype, b200->tflops[kinds[i].d]);
        double rg = mamf_eff(doc, "NVIDIA GB200 SXM", kinds[i].dtype, gb200->tflops[kinds[i].d]);
        double eb = kinds[i].fp8 ? b200->compute.gemm_eff_fp8 : b200->compute.gemm_eff;
        double eg = kinds[i].fp8 ? gb200->compute.gemm_eff_fp8 : gb200->compute.gemm_eff;
        g_test_message("%s: B200 MAMF %.4f of peak, GB200 %.4f; efficiency %.3f -> %.3f",
                       kinds[i].dtype, rb, rg, eb, eg);
        g_assert_cmpfloat(rg, <, rb); /* the premise: GB200 reaches less of its datasheet */
        g_assert_cmpfloat(fabs(eg - eb * rg / rb), <, 0.0005);
    }
    g_assert_cmpfloat(gb200->compute.sustained, ==, b200->compute.sustained);
    g_assert_cmpint(gb200->compute.gemm_wave_ps, ==, b200->compute.gemm_wave_ps);
    g_assert_cmpint(gb200->compute.gemm_tile_m, ==, b200->compute.gemm_tile_m);
    g_assert_cmpint(gb200->compute.gemm_tile_n, ==, b200->compute.gemm_tile_n);
    g_assert_cmpint(gb200->compute.launch_ps, ==, b200->compute.launch_ps);
    g_assert_cmpfloat(gb200->compute.attn_eff, ==, b200->compute.attn_eff);
    g_assert_cmpfloat(gb200->compute.mem_eff, ==, b200->compute.mem_eff);
    ics_hw_free(b);
    ics_hw_free(gb);
    cJSON_Delete(doc);
    g_free(text);
    g_free(path);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/workload/catalog", test_catalog);
    g_test_add_func("/workload/sustained-source", test_sustained_source);
    g_test_add_func("/workload/sibling-efficiency", test_sibling_efficiency);
    g_test_add_func("/workload/layer-params", test_layer_params);
    g_test_add_func("/workload/catalog-errors", test_catalog_errors);
    g_test_add_func("/workload/catalog-truncated", test_catalog_truncated);
    g_test_add_func("/workload/layout-errors", test_layout_errors);
    g_test_add_func("/workload/ranks", test_ranks);
    g_test_add_func("/workload/flops-formula", test_flops_formula);
    g_test_add_func("/workload/flops-6nt", test_flops_6nt);
    g_test_add_func("/workload/compute-model", test_compute_model);
    g_test_add_func("/workload/schedules", test_schedules);
    g_test_add_func("/workload/structure", test_structure);
    g_test_add_func("/workload/structure-sp", test_structure_sp);
    g_test_add_func("/workload/structure-recompute", test_structure_recompute);
    g_test_add_func("/workload/structure-dist-opt", test_structure_dist_opt);
    g_test_add_func("/workload/fold", test_fold);
    g_test_add_func("/workload/bubble-1f1b", test_bubble_1f1b);
    g_test_add_func("/workload/bubble-interleaved", test_bubble_interleaved);
    g_test_add_func("/workload/dp-overlap", test_dp_overlap);
    g_test_add_func("/workload/tp-comm-overlap", test_tp_comm_overlap);
    g_test_add_func("/workload/async-tp-backward", test_async_tp_backward);
    g_test_add_func("/workload/overlap-param-gather", test_overlap_param_gather);
    g_test_add_func("/workload/fp8-casts", test_fp8_casts);
    g_test_add_func("/workload/causal-attention", test_causal_attention);
    g_test_add_func("/workload/head-bf16", test_head_bf16);
    g_test_add_func("/workload/fsdp", test_fsdp);
    g_test_add_func("/workload/uneven-stages", test_uneven_stages);
    g_test_add_func("/workload/fold-replay", test_fold_replay);
    g_test_add_func("/workload/gpt3-1024", test_gpt3_1024);
    return g_test_run();
}
