/* Mixture of experts in the training generator (workload_moe.c) against closed forms: the
 * shipped MoE models' parameter counts against their publishers', the all-to-alls per layer and
 * their sizes, the expert-parallel and expert-data-parallel groups, the gradient bytes each
 * group reduces, the expert FLOPs and the capacity factor's padding, memory per GPU with the
 * experts' optimizer state sharded over expert data parallelism, Megatron-Core's layout rules,
 * and a folded replay equal to the unfolded one. */
#include "workload/memory.h"
#include "workload/pp_layout.h"
#include "workload/workload_internal.h"
#include "workload_rig.h"

#include <glib/gstdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <unistd.h>

/* A small MoE: 6 layers (the first 2 dense), h 1024, 16 heads, SwiGLU; 8 experts of width
 * 2048, top-2, a shared expert of width 1024. */
static ics_model small_moe(void)
{
    ics_model m = ics_model_make("small-moe", 6, 1024, 16, 4096, 32000, 1024);
    m.act = ICS_ACT_SWIGLU;
    m.norm = ICS_NORM_RMSNORM;
    m.bias = false;
    m.pos = ICS_POS_ROPE;
    m.tied_embeddings = false;
    m.moe = (ics_moe){.experts = 8, .topk = 2, .ffn = 2048, .shared_ffn = 1024, .dense_layers = 2};
    return m;
}

/* tp 2 with sequence parallelism, dp 8 as 2 groups of ep 4, 2 micro-batches. */
static ics_layout moe_layout(void)
{
    ics_layout l = ics_layout_defaults();
    l.tp = 2;
    l.sp = true;
    l.dp = 8;
    l.ep = 4;
    l.mbs = 1;
    l.gbs = 16;
    return l;
}

/* The catalog's MoE models against their publishers' totals and active counts. Mixtral is
 * exact (46.7B, 12.9B active); DeepSeek-V3's attention is multi-head in place of MLA
 * (models.json), so its counts less that difference meet the report's 671B within 0.5% and
 * 37B active within 2% (the report rounds; 37.6B here). */
static void test_catalog(void)
{
    ics_model_catalog *c = catalog();
    const ics_model *mx = ics_model_find(c, "mixtral-8x7b"), *ds = ics_model_find(c, "deepseek-v3");
    g_assert_nonnull(mx);
    g_assert_nonnull(ds);
    g_assert_cmpfloat(fabs(ics_model_params(mx) / 1e9 - 46.7), <, 0.05);
    g_assert_cmpfloat(fabs(ics_model_active_params(mx) / 1e9 - 12.9), <, 0.05);
    g_assert_cmpint(ics_model_moe_layers(mx), ==, 32);
    /* DeepSeek-V3's MLA per layer (released config: q_lora_rank 1536, kv_lora_rank 512,
     * qk_nope 128 + qk_rope 64 head dims, v_head 128, 128 heads) against the 4 h^2 of the
     * multi-head attention that stands in for it: 18.4M a layer more here, 1.12B in all */
    double h = 7168, mla = h * 1536 + 1536 + 1536 * 128 * 192 + h * (512 + 64) + 512 +
                           512 * 128 * (128 + 128) + 128 * 128 * h;
    double excess = 61 * (4 * h * h - mla);
    g_test_message("deepseek-v3: %.1fB, %.2fB active; %.2fB of attention over MLA's",
                   ics_model_params(ds) / 1e9, ics_model_active_params(ds) / 1e9, excess / 1e9);
    g_assert_cmpfloat(fabs((ics_model_params(ds) - excess) / 671e9 - 1), <, 0.005);
    g_assert_cmpfloat(fabs((ics_model_active_params(ds) - excess) / 37e9 - 1), <, 0.02);
    /* Qwen3-30B-A3B, whose heads are wider than hidden / heads (32 x 128 against 2048): 30.5B
     * (the report's rounding), and 3.35B active here against the report's 3.3B (within 2%;
     * the per-head QK norms are left out) */
    const ics_model *qw = ics_model_find(c, "qwen3-30b-a3b");
    g_assert_nonnull(qw);
    g_assert_cmpfloat(ics_model_head_dim(qw), ==, 128);
    g_assert_cmpfloat(fabs(ics_model_params(qw) / 1e9 - 30.5), <=, 0.05);
    g_assert_cmpfloat(fabs(ics_model_active_params(qw) / 3.3e9 - 1), <, 0.02);
    /* Qwen3-235B-A22B: 235B and 22B active in the report (both rounded) */
    const ics_model *big = ics_model_find(c, "qwen3-235b-a22b");
    g_assert_nonnull(big);
    g_test_message("qwen3-235b-a22b: %.2fB, %.2fB active", ics_model_params(big) / 1e9,
                   ics_model_active_params(big) / 1e9);
    g_assert_cmpfloat(fabs(ics_model_params(big) / 235e9 - 1), <, 0.005);
    g_assert_cmpfloat(fabs(ics_model_active_params(big) / 22e9 - 1), <, 0.03);
    /* gpt-oss-120b: 116.83B in the model card, and 5.13B active, which counts the output layer
     * but not the embedding (201088 x 2880 = 0.58B) */
    const ics_model *oss = ics_model_find(c, "gpt-oss-120b");
    g_assert_nonnull(oss);
    g_test_message("gpt-oss-120b: %.2fB, %.2fB active", ics_model_params(oss) / 1e9,
                   ics_model_active_params(oss) / 1e9);
    g_assert_cmpfloat(fabs(ics_model_params(oss) / 116.8e9 - 1), <, 0.01);
    g_assert_cmpfloat(fabs((ics_model_active_params(oss) - 201088.0 * 2880) / 5.13e9 - 1), <, 0.01);
    g_assert_false(ics_model_is_moe_layer(ds, 2));
    g_assert_true(ics_model_is_moe_layer(ds, 3));
    double rep, shared, expert;
    ics_model_moe_params(ds, &rep, &shared, &expert);
    g_assert_cmpfloat(expert, ==, 3.0 * 7168 * 2048); /* gate, up, down */
    g_assert_cmpfloat(shared, ==, 3.0 * 7168 * 2048);
    g_assert_cmpfloat(rep, ==, 256.0 * 7168 + 7168); /* router, RMSNorm */
    ics_model_catalog_free(c);
}

static const int *comm_of(const ics_trace *tr, const ics_trace_op *op, int *n)
{
    return ics_trace_comm_ranks(tr, op->comm, n);
}

/* Rank 0's ops: four all-to-alls per MoE layer and micro-batch over its ep group (dp ranks
 * 0..3 of its tp rank), each its sequence shard's token copies; the experts' gradients
 * all-reduced over the 2 ranks holding the same experts, the rest over dp. */
static void test_structure(void)
{
    ics_hw *hw = load_hw("dgx-h100.json", 0);
    ics_model m = small_moe();
    ics_layout l = moe_layout();
    ics_trace *tr = build(&m, &l, gpu_of(hw));
    int nmb = 2, moe_layers = 4;
    const char *a2a[] = {"ep.dispatch", "ep.combine", "ep.combine.grad", "ep.dispatch.grad"};
    for (size_t i = 0; i < G_N_ELEMENTS(a2a); i++)
        g_assert_cmpint(count_named(tr, 0, a2a[i]), ==, nmb * moe_layers);
    uint64_t copies = (uint64_t)1024 / 2 * 2 * 1024 * 2; /* s / tp x topk x h x 2 B */
    double expert_grads = 0, dense_grads = 0;
    for (int i = 0; i < ics_trace_nops(tr, 0); i++) {
        const ics_trace_op *op = ics_trace_get_op(tr, 0, i);
        int n;
        if (op->kind != ICS_TOP_COLL)
            continue;
        const int *ranks = comm_of(tr, op, &n);
        if (op->cat == ICS_CAT_EP) {
            g_assert_cmpint(op->coll.op, ==, ICS_COLL_ALLTOALL);
            g_assert_cmpuint(op->coll.size_bytes, ==, copies);
            g_assert_cmpint(n, ==, 4);
            for (int k = 0; k < n; k++)
                g_assert_cmpint(ranks[k], ==, ics_layout_rank(&l, 0, 0, k));
        } else if (op->cat == ICS_CAT_DP && g_str_has_prefix(op->name, "ep.dp.")) {
            g_assert_cmpint(n, ==, 2);
            g_assert_cmpint(ranks[1], ==, ics_layout_rank(&l, 0, 0, 4));
            expert_grads += (double)op->coll.size_bytes;
        } else if (op->cat == ICS_CAT_DP) {
            g_assert_cmpint(n, ==, 8);
            dense_grads += (double)op->coll.size_bytes;
        } else if (op->cat == ICS_CAT_TP && op->coll.size_bytes == copies * 2) {
            g_assert_cmpint(n, ==, 2); /* the experts' gather and reduce-scatter over tp */
        }
    }
    double rep, shared, expert, attn, mlp, word, pos, fin, out;
    ics_model_moe_params(&m, &rep, &shared, &expert);
    ics_wl__layer_rank_params(&m, 2, &attn, &mlp);
    ics_model_edge_params(&m, &word, &pos, &fin, &out);
    g_assert_cmpfloat(fabs(expert_grads - 4.0 * moe_layers * (8 / 4) * expert / 2), <, 1);
    double dense = 6 * attn + 2 * mlp + moe_layers * (rep + shared / 2) + word / 2 + fin + out / 2;
    g_assert_cmpfloat(fabs(dense_grads - 4 * dense), <, 1);
    ics_trace_free(tr);
    ics_hw_free(hw);
}

/* What the host does (replay.h, "the host"): dropless routing syncs the host once per MoE layer
 * forward, at the dispatch (its split sizes), never in the backward; a capacity factor, which
 * drops and pads, never syncs. Every compute-stream op launches at least one kernel, the
 * experts one GEMM per local expert: 2 experts a rank here, so 2 GEMMs a linear. */
static void test_host(void)
{
    ics_hw *hw = load_hw("dgx-h100.json", 0);
    ics_model m = small_moe();
    ics_layout l = moe_layout();
    for (int dropless = 1; dropless >= 0; dropless--) {
        l.moe_capacity = dropless ? 0 : 1.25;
        ics_trace *tr = build(&m, &l, gpu_of(hw));
        int syncs = 0;
        for (int i = 0; i < ics_trace_nops(tr, 0); i++) {
            const ics_trace_op *op = ics_trace_get_op(tr, 0, i);
            if (op->stream == 0)
                g_assert_cmpint(op->launches, >=, 1);
            if (op->host_sync) {
                g_assert_cmpstr(op->name, ==, "ep.dispatch");
                syncs++;
            }
            if (op->kind == ICS_TOP_COMPUTE && g_strcmp0(op->name, "fwd.moe.experts") == 0)
                g_assert_cmpint(op->launches, >=, 2 + 2);
        }
        g_assert_cmpint(syncs, ==, dropless ? 2 * 4 : 0); /* micro-batches x MoE layers */
        ics_trace_free(tr);
    }
    ics_wl_cost c[ICS_WL_BLOCK_COUNT];
    ics_wl__costs(&m, &l, NULL, c);
    g_assert_cmpint(c[ICS_WL_EXPERTS_FWD].launches, ==, c[ICS_WL_EXPERTS_FWD].kernels + 2);
    ics_hw_free(hw);
}

/* A MoE layer's launches, forward and backward, less the norm and the residual add (which the
 * layer around it launches), against what Megatron-Core and Transformer Engine launch for it
 * with the recipes' fused router and permutation (read from their source; docs/workload.md):
 * about 42 + 6 E outside the collectives in bf16, 48 + 22 E with FP8 current scaling (four
 * kernels quantize each expert's share, four times a layer), 48..60 + 10 E with MXFP8 (one),
 * for E local experts. */
static int moe_launches(const ics_model *m, const ics_layout *l)
{
    ics_wl_cost c[ICS_WL_BLOCK_COUNT];
    ics_wl__costs(m, l, NULL, c);
    int n = 0;
    const ics_wl_block b[] = {ICS_WL_ROUTER_FWD,  ICS_WL_ROUTER_BWD,    ICS_WL_EXPERTS_FWD,
                              ICS_WL_EXPERTS_BWD, ICS_WL_UNPERMUTE_FWD, ICS_WL_UNPERMUTE_BWD};
    for (size_t i = 0; i < G_N_ELEMENTS(b); i++)
        n += c[b[i]].launches;
    return n - 2 - 2; /* the norm forward and backward, the residual add forward and backward */
}

static void test_launches(void)
{
    ics_model m = small_moe();
    m.moe.shared_ffn = 0;
    for (int e = 4; e <= 16; e *= 4) { /* local experts: 64 experts over ep 16 or 4 */
        m.moe.experts = 64;
        ics_layout l = moe_layout();
        l.tp = 1;
        l.sp = false;
        l.dp = 64 / e;
        l.ep = 64 / e;
        int bf16 = moe_launches(&m, &l);
        l.dtype = ICS_DTYPE_FP8;
        l.fp8_recipe = ICS_FP8_CURRENT;
        int cs = moe_launches(&m, &l);
        l.fp8_recipe = ICS_FP8_MX;
        int mx = moe_launches(&m, &l);
        l.fp8_recipe = ICS_FP8_DELAYED;
        int ds = moe_launches(&m, &l);
        g_test_message("E %d: bf16 %d (source 42 + 6E = %d), FP8-CS %d (48 + 22E = %d), MXFP8 %d "
                       "(48..60 + 10E), delayed %d",
                       e, bf16, 42 + 6 * e, cs, 48 + 22 * e, mx, ds);
        g_assert_cmpint(abs(bf16 - (42 + 6 * e)), <=, 2);
        g_assert_cmpint(abs(cs - (48 + 22 * e)), <=, 2);
        g_assert_cmpint(mx - 10 * e, >=, 46);
        g_assert_cmpint(mx - 10 * e, <=, 60);
        g_assert_cmpint(ds, <, mx); /* one fused cast for all the experts' shares */
        l.moe_capacity = 1;         /* no padding for FP8 alignment at a capacity */
        g_assert_cmpint(moe_launches(&m, &l), ==, ds - 2 * 3);
    }
}

/* CUDA graphs: a captured region is one launch (the whole layer's blocks, or the router's
 * with the permutation's kernels after it); whole layers need a capacity factor with experts
 * and the router's scope a MoE model. */
static void test_graphs(void)
{
    ics_hw *hw = load_hw("dgx-h100.json", 0);
    ics_model m = small_moe();
    ics_layout l = moe_layout();
    l.moe_capacity = 1;
    ics_wl_cost none[ICS_WL_BLOCK_COUNT], full[ICS_WL_BLOCK_COUNT], router[ICS_WL_BLOCK_COUNT];
    ics_wl__costs(&m, &l, gpu_of(hw), none);
    l.cuda_graph = ICS_GRAPH_FULL;
    ics_wl__costs(&m, &l, gpu_of(hw), full);
    l.cuda_graph = ICS_GRAPH_MOE_ROUTER;
    ics_wl__costs(&m, &l, gpu_of(hw), router);
    g_assert_cmpint(none[ICS_WL_EXPERTS_FWD].dur_ps, >, 0);
    for (int b = 0; b < ICS_WL_BLOCK_COUNT; b++) {
        /* the GPU's work is the same; only the host's launches change */
        g_assert_cmpint(full[b].dur_ps, ==, none[b].dur_ps);
        g_assert_cmpint(router[b].dur_ps, ==, none[b].dur_ps);
        bool layer = b != ICS_WL_EMBED_FWD && b != ICS_WL_EMBED_BWD && b != ICS_WL_HEAD_FWD &&
                     b != ICS_WL_HEAD_BWD && b != ICS_WL_MTP_FWD && b != ICS_WL_MTP_BWD;
        g_assert_cmpint(full[b].launches, ==, layer ? MIN(none[b].launches, 1) : none[b].launches);
    }
    g_assert_cmpint(none[ICS_WL_ROUTER_FWD].launches, >, 20);
    g_assert_cmpint(router[ICS_WL_ROUTER_FWD].launches, ==, 1 + 3 + 1);
    g_assert_cmpint(router[ICS_WL_ROUTER_BWD].launches, ==, 2);
    g_assert_cmpint(router[ICS_WL_EXPERTS_FWD].launches, ==, none[ICS_WL_EXPERTS_FWD].launches);
    GError *err = NULL;
    l.cuda_graph = ICS_GRAPH_FULL;
    l.moe_capacity = 0;
    g_assert_false(ics_layout_check(&l, &m, &err));
    g_assert_nonnull(strstr(err->message, "cuda_graph_scope: full with a mixture-of-experts"));
    g_clear_error(&err);
    ics_model dense = small_moe();
    dense.moe = (ics_moe){0};
    ics_layout d = ics_layout_defaults();
    d.cuda_graph = ICS_GRAPH_MOE_ROUTER;
    g_assert_false(ics_layout_check(&d, &dense, &err));
    g_assert_nonnull(strstr(err->message, "cuda_graph_scope moe_router: expected a mixture"));
    g_clear_error(&err);
    ics_hw_free(hw);
}

/* The experts' FLOPs are 2 x 3 x h x ffn per token copy (SwiGLU's three matrices), per rank
 * its share over tp; a capacity factor pads every expert to capacity x its share: the
 * all-to-alls and the experts' hardware FLOPs grow by the factor, the model FLOPs do not. */
static void test_flops_capacity(void)
{
    ics_model m = small_moe();
    ics_layout l = moe_layout();
    ics_wl_cost c[ICS_WL_BLOCK_COUNT];
    ics_wl__costs(&m, &l, NULL, c);
    double copies = 1024.0 * 2; /* mbs x seq x topk, gathered over tp */
    g_assert_cmpfloat(fabs(c[ICS_WL_EXPERTS_FWD].flops - 2 * copies * 3 * 1024 * 2048 / 2), <, 1);
    g_assert_cmpfloat(fabs(c[ICS_WL_EXPERTS_BWD].flops - 2 * c[ICS_WL_EXPERTS_FWD].flops), <, 1);
    ics_step_flops f1, f2;
    ics_workload_flops(&m, &l, &f1);
    l.moe_capacity = 1.25;
    ics_workload_flops(&m, &l, &f2);
    g_assert_cmpfloat(f2.model_flops, ==, f1.model_flops);
    double expert_step = 16 * 4 * 3 * (2 * 1024.0 * 2 * 3 * 1024 * 2048); /* fwd + bwd */
    g_assert_cmpfloat(fabs(f2.hardware_flops - f1.hardware_flops - 0.25 * expert_step), <,
                      1e-9 * f1.hardware_flops);
    ics_hw *hw = load_hw("dgx-h100.json", 0);
    ics_trace *tr = build(&m, &l, gpu_of(hw));
    for (int i = 0; i < ics_trace_nops(tr, 0); i++) {
        const ics_trace_op *op = ics_trace_get_op(tr, 0, i);
        if (op->kind == ICS_TOP_COLL && op->cat == ICS_CAT_EP)
            g_assert_cmpuint(op->coll.size_bytes, ==, (uint64_t)(1024 / 2 * 2 * 1.25 * 1024 * 2));
    }
    ics_trace_free(tr);
    ics_hw_free(hw);
}

/* Weights and gradients count the rank's experts; the distributed optimizer shards the dense
 * state over dp and the experts' over dp / ep. */
static void test_memory(void)
{
    ics_model m = small_moe();
    ics_layout l = moe_layout();
    l.dist_opt = true;
    double rep, shared, expert;
    ics_model_moe_params(&m, &rep, &shared, &expert);
    double experts = 4 * (8 / 4) * expert / 2; /* MoE layers x experts per ep rank / tp */
    ics_memory mem;
    ics_memory_of_stage(&m, &l, 0, &mem);
    g_assert_cmpfloat(fabs(mem.weights - 2 * (mem.params + experts)), <, 1);
    g_assert_cmpfloat(fabs(mem.grads - 4 * (mem.params + experts)), <, 1);
    g_assert_cmpfloat(fabs(mem.optimizer - 12 * (mem.params / 8 + experts / 2)), <, 1);
    /* the MoE layers keep more activations than dense ones at top-2 */
    ics_model dense = m;
    dense.moe.experts = 0;
    ics_layout ld = l;
    ld.ep = 1;
    ics_memory md;
    ics_memory_of_stage(&dense, &ld, 0, &md);
    g_assert_cmpfloat(mem.activations, >, md.activations);
}

/* The peak is the largest stage, which with dense first layers on a short first stage is a
 * middle one: DeepSeek-V3 on pp 8 with 5 layers (3 dense) first. */
static void test_memory_peak(void)
{
    ics_model_catalog *c = catalog();
    const ics_model *m = ics_model_find(c, "deepseek-v3");
    ics_layout l = ics_layout_defaults();
    l.pp = 8;
    l.first_layers = 5;
    l.dp = l.ep = 64;
    l.gbs = 512;
    l.dist_opt = true;
    l.recompute = ICS_RECOMPUTE_SELECTIVE;
    GError *err = NULL;
    g_assert_true(ics_layout_check(&l, m, &err));
    ics_memory peak, st;
    ics_memory_peak(m, &l, &peak);
    for (int s = 0; s < l.pp; s++) {
        ics_memory_of_stage(m, &l, s, &st);
        g_assert_cmpfloat(st.total, <=, peak.total);
    }
    g_assert_cmpint(peak.stage, >, 0);
    g_assert_cmpint(peak.stage, <, l.pp - 1);
    ics_model_catalog_free(c);
}

/* Megatron-Core's rules, and what is not modelled with experts refused. */
static void test_layout_errors(void)
{
    ics_model m = small_moe();
    ics_layout l = moe_layout();
    l.ep = 3;
    expect_layout_refused(&m, &l, "ep: expected a divisor of the experts (8) and of dp (8), got 3");
    l = moe_layout();
    l.dp = 4;
    l.gbs = 8;
    l.ep = 8; /* fits tp x dp, not dp alone: only with etp 1 */
    expect_layout_refused(&m, &l, "ep: expected a divisor of the experts (8) and of dp (4), got 8");
    l.etp = 1;
    GError *err = NULL;
    g_assert_true(ics_layout_check(&l, &m, &err));
    l.ep = 16;
    expect_layout_refused(&m, &l, "ep: expected a divisor of the experts (8) and of tp x dp");
    l = moe_layout();
    l.tp = 4;
    l.etp = 2;
    expect_layout_refused(&m, &l, "etp: expected 1 or tp (4)");
    l = moe_layout();
    l.etp = 1;
    l.cp = 2;
    expect_layout_refused(&m, &l, "cp: expected 1 with a mixture-of-experts model");
    l = moe_layout();
    l.sp = false;
    expect_layout_refused(&m, &l, "expected sequence parallelism with tp > 1 and experts");
    l = moe_layout();
    l.fsdp = true;
    expect_layout_refused(&m, &l, "fsdp: expected off with a mixture-of-experts model");
    ics_model plain = small_moe();
    plain.moe = (ics_moe){0};
    l = ics_layout_defaults();
    l.moe_deepep = true;
    expect_layout_refused(&plain, &l, "moe_enable_deepep: expected a mixture-of-experts model");
    l.moe_deepep = false;
    l.node_gpus = -1;
    expect_layout_refused(&plain, &l, "node_gpus: expected 0 (unknown) or 1..");
    l = moe_layout();
    l.moe_capacity = 0.5;
    expect_layout_refused(&m, &l, "moe_capacity_factor: expected 0 (dropless) or 1..64, got 0.5");
    ics_model dense = ics_model_make("d", 4, 1024, 16, 4096, 32000, 1024);
    l = moe_layout();
    expect_layout_refused(&dense, &l, "ep: expected a mixture-of-experts model with it");
    ics_model longer = small_moe();
    longer.seq = 1 << 24; /* 2^24 tokens x top-2 x capacity 64 x 1024 x 2 B = 4 x 2^40 */
    l = moe_layout();
    l.moe_capacity = 64;
    expect_layout_refused(&longer, &l, "the token dispatch of one MoE layer");
    ics_model bad = small_moe();
    bad.moe.topk = 9;
    g_assert_false(ics_model_check(&bad, &err));
    g_assert_nonnull(strstr(err->message, "moe.topk: expected an integer in 1..8, got 9"));
    g_error_free(err);
}

/* Expert tensor parallelism 1 (Megatron-Core's MoE parallel folding): ep 8 over tp 2 x dp 4,
 * so each expert-parallel group takes both tp ranks of 4 dp ranks, in the expert rank order
 * (tp innermost); no tensor-parallel gather around the experts, each rank dispatching its own
 * sequence shard; experts whole on a rank, their gradients reduced over the 2 ranks (of the
 * stage's 8 x 2) holding the same ones; memory counts whole experts sharded over that edp. */
static void test_folded_experts(void)
{
    ics_hw *hw = load_hw("dgx-h100.json", 0);
    ics_model m = small_moe();
    ics_layout l = moe_layout();
    l.ep = 8;
    l.etp = 1;
    GError *err = NULL;
    g_assert_true(ics_layout_check(&l, &m, &err));
    g_assert_cmpint(ics_layout_edp(&l), ==, 2);
    /* the parallelism moves the math, it does not change it: a step's FLOPs are the same with
     * etp 1, etp tp named, or the default */
    ics_step_flops f1, f2, f0;
    ics_workload_flops(&m, &l, &f1);
    ics_layout named = l, dflt = l;
    named.etp = named.tp;
    dflt.etp = 0;
    ics_workload_flops(&m, &named, &f2);
    ics_workload_flops(&m, &dflt, &f0);
    g_assert_cmpfloat(f1.model_flops, ==, f0.model_flops);
    g_assert_cmpfloat(f2.model_flops, ==, f0.model_flops);
    g_assert_cmpfloat(f2.hardware_flops, ==, f0.hardware_flops);
    ics_trace *tr = build(&m, &l, gpu_of(hw));
    uint64_t copies = (uint64_t)1024 / 2 * 2 * 1024 * 2; /* s / tp x topk x h x 2 B */
    double expert_grads = 0;
    int a2a = 0;
    for (int i = 0; i < ics_trace_nops(tr, 0); i++) {
        const ics_trace_op *op = ics_trace_get_op(tr, 0, i);
        int n;
        if (op->kind != ICS_TOP_COLL)
            continue;
        const int *ranks = comm_of(tr, op, &n);
        if (op->cat == ICS_CAT_EP) {
            a2a++;
            g_assert_cmpuint(op->coll.size_bytes, ==, copies);
            g_assert_cmpint(n, ==, 8);
            for (int k = 0; k < n; k++) /* expert rank k: tp rank k % 2 of dp rank k / 2 */
                g_assert_cmpint(ranks[k], ==, ics_layout_rank(&l, k % 2, 0, k / 2));
        } else if (op->cat == ICS_CAT_DP && g_str_has_prefix(op->name, "ep.dp.")) {
            g_assert_cmpint(n, ==, 2);
            g_assert_cmpint(ranks[1], ==, ics_layout_rank(&l, 0, 0, 4)); /* q = 8 */
            expert_grads += (double)op->coll.size_bytes;
        } else if (op->cat == ICS_CAT_TP) {
            g_assert_cmpuint(op->coll.size_bytes, !=, copies * 2); /* no experts' gather */
        }
    }
    g_assert_cmpint(a2a, ==, 4 * 2 * 4); /* per MoE layer and micro-batch */
    double rep, shared, expert;
    ics_model_moe_params(&m, &rep, &shared, &expert);
    /* 4 MoE layers x 1 expert per rank, whole, in fp32 gradients */
    g_assert_cmpfloat(fabs(expert_grads - 4.0 * 4 * 1 * expert), <, 1);
    l.dist_opt = true;
    ics_memory mem;
    ics_memory_of_stage(&m, &l, 0, &mem);
    g_assert_cmpfloat(fabs(mem.optimizer - 12 * (mem.params / 8 + 4 * expert / 2)), <, 1);
    ics_trace_free(tr);
    ics_hw_free(hw);
}

/* A folded trace (one rank per symmetric set) replays to the unfolded step time, with either
 * expert tensor parallelism. */
static void test_fold(void)
{
    ics_model m = small_moe();
    expect_fold_equal("superpod-h100-ndr.json", 2, &m, moe_layout());
    ics_layout l = moe_layout();
    l.ep = 8;
    l.etp = 1;
    expect_fold_equal("superpod-h100-ndr.json", 2, &m, l);
}

/* C(a - b, k) / C(a, k), written out: k of a experts drawn, none of b given ones. */
static double miss_all(double a, double b, int k)
{
    double p = 1;
    for (int i = 0; i < k; i++)
        p *= (a - b - i) / (a - i);
    return p;
}

/* The nodes a token's experts sit on, against the closed forms: uniform over all experts
 * (hypergeometric), DeepSeek-V3's 4 of 8 groups with one group a node (its own group chosen
 * half the time), groups spanning two nodes each, and groups that do not nest with the nodes
 * (taken as ungrouped). Groups that do not divide the experts, or whose chosen ones cannot
 * hold topk experts, are refused. */
static void test_nodes_hit(void)
{
    ics_model m = small_moe();
    m.moe.experts = 128;
    m.moe.topk = 8;
    g_assert_cmpfloat(ics_model_moe_nodes_hit(&m, 1), ==, 1);
    g_assert_cmpfloat(fabs(ics_model_moe_nodes_hit(&m, 4) - 4 * (1 - miss_all(128, 32, 8))), <,
                      1e-12);
    ics_model_catalog *c = catalog();
    const ics_model *ds = ics_model_find(c, "deepseek-v3");
    g_assert_cmpint(ds->moe.groups, ==, 8);
    g_assert_cmpint(ds->moe.group_topk, ==, 4);
    double want = 8 * (1 - (0.5 + 0.5 * miss_all(128, 32, 8)));
    g_test_message("deepseek-v3 over 8 nodes: %.4f nodes a token (all-to-all: 8 copies)",
                   ics_model_moe_nodes_hit(ds, 8));
    g_assert_cmpfloat(fabs(ics_model_moe_nodes_hit(ds, 8) - want), <, 1e-12);
    ics_model_catalog_free(c);
    m.moe.experts = 256;
    m.moe.groups = 4;
    m.moe.group_topk = 2;
    g_assert_cmpfloat(fabs(ics_model_moe_nodes_hit(&m, 8) - 8 * 0.5 * (1 - miss_all(128, 32, 8))),
                      <, 1e-12);
    m.moe.experts = 96;
    m.moe.groups = 3;
    g_assert_cmpfloat(fabs(ics_model_moe_nodes_hit(&m, 2) - 2 * (1 - miss_all(96, 48, 8))), <,
                      1e-12);
    GError *err = NULL;
    g_assert_true(ics_model_check(&m, &err));
    m.moe.groups = 5; /* 96 experts in 5 groups */
    g_assert_false(ics_model_check(&m, &err));
    g_assert_nonnull(strstr(err->message, "moe.groups"));
    g_clear_error(&err);
    m.moe.groups = 48; /* 2 experts a group, 2 groups: 4 < topk 8 */
    m.moe.group_topk = 2;
    g_assert_false(ics_model_check(&m, &err));
    g_assert_nonnull(strstr(err->message, "group_topk"));
    g_clear_error(&err);
}

/* The rank's dispatch with DeepEP (--moe-enable-deepep) over 16 expert-parallel ranks on two
 * 8-GPU nodes: to itself and to the one GPU of its local index on the other node, each its
 * tokens x the chance a node holds one of a token's experts x h x 2 B; nothing to the other 14.
 * Inside one node, or without DeepEP, NCCL's all-to-all as before. Across the nodes of a
 * SuperPOD the step is faster with it: each token crosses the network once per node. */
static void test_deepep(void)
{
    ics_hw *hw = load_hw("superpod-h100-ndr.json", 2);
    ics_model m = small_moe();
    m.moe.experts = 16;
    ics_layout l = moe_layout();
    l.tp = 1;
    l.sp = false;
    l.dp = 16;
    l.ep = 16;
    l.gbs = 32;
    l.node_gpus = 8;
    ics_trace *nccl = build(&m, &l, gpu_of(hw));
    l.moe_deepep = true;
    ics_trace *deep = build(&m, &l, gpu_of(hw));
    double hits = 2 * (1 - miss_all(16, 8, 2)); /* 16 experts, 8 a node, top-2 */
    uint64_t per_node = (uint64_t)ceil(1024 * hits / 2 * 1024) * 2; /* whole bf16 elements */
    int found = 0;
    for (int i = 0; i < ics_trace_nops(deep, 3); i++) {
        const ics_trace_op *op = ics_trace_get_op(deep, 3, i);
        if (op->kind != ICS_TOP_COLL || op->cat != ICS_CAT_EP)
            continue;
        g_assert_nonnull(op->splits);
        g_assert_cmpint(op->coll.sms, ==, 20); /* DeepEP's kernels, not NCCL's channels */
        for (int k = 0; k < 16; k++)
            g_assert_cmpuint(op->splits[k], ==, k == 3 || k == 11 ? per_node : 0);
        g_assert_cmpuint(op->coll.size_bytes, ==, 2 * per_node);
        found++;
    }
    g_assert_cmpint(found, ==, 4 * 4 * 2); /* 4 a layer (dispatch, combine; their gradients) */
    ics_topo *t = ics_topo_new(hw);
    ics_replay_result a = replay(nccl, t, -1), b = replay(deep, t, -1);
    g_test_message("step: all-to-all %.3f ms, DeepEP %.3f ms", a.step_ps / 1e9, b.step_ps / 1e9);
    g_assert_cmpuint(b.step_ps, <, a.step_ps);
    /* the JSON trace carries the dispatch as it is: the same step read back */
    char *path = g_build_filename(g_get_tmp_dir(), "icsim-test-deepep-XXXXXX.json", NULL);
    int fd = g_mkstemp(path);
    g_assert_cmpint(fd, >=, 0);
    close(fd);
    GError *err = NULL;
    if (!ics_trace_write_json(deep, path, &err))
        g_error("write: %s", err->message);
    ics_trace *back = ics_trace_read_json(path, &err);
    g_assert_no_error(err);
    g_assert_cmpuint(replay(back, t, -1).step_ps, ==, b.step_ps);
    ics_trace_free(back);
    g_unlink(path);
    g_free(path);
    l.node_gpus = 16; /* one node: nothing changes */
    ics_trace *one = build(&m, &l, gpu_of(hw));
    for (int i = 0; i < ics_trace_nops(one, 3); i++)
        g_assert_null(ics_trace_get_op(one, 3, i)->splits);
    ics_trace_free(one);
    ics_topo_free(t);
    ics_trace_free(nccl);
    ics_trace_free(deep);
    ics_hw_free(hw);
}

/* Multi-token prediction (the pipeline layout's m): on the last stage, after its decoder layers,
 * the MTP block, one more MoE layer (the model's last layer's kind: its four all-to-alls a
 * micro-batch) and a second output head, forward and backward; the step grows; refused with
 * FSDP or the overlapped parameter gather. */
static void test_mtp(void)
{
    ics_hw *hw = load_hw("superpod-h100-ndr.json", 2);
    ics_model m = small_moe(); /* 6 layers, the first 2 dense */
    ics_layout l = moe_layout();
    l.pp = 2;
    l.dp = 4;
    l.gbs = 8;
    GError *err = NULL;
    int *plain = ics_pp_layout_parse("Et*3|t*3L", NULL, &l.chunk_layout_n, &err);
    int *mtp = ics_pp_layout_parse("Et*3|t*3mL", NULL, &l.chunk_layout_n, &err);
    g_assert_no_error(err);
    l.chunk_layout = plain;
    ics_trace *a = build(&m, &l, gpu_of(hw));
    l.chunk_layout = mtp;
    g_assert_cmpint(ics_layout_mtp(&l), ==, 1);
    ics_trace *b = build(&m, &l, gpu_of(hw));
    int last = ics_layout_rank(&l, 0, 1, 0), nmb = 2;
    const char *once[] = {"fwd.mtp", "bwd.mtp", "fwd.mtp.head", "bwd.mtp.head"};
    for (size_t i = 0; i < G_N_ELEMENTS(once); i++) {
        g_assert_cmpint(count_named(a, last, once[i]), ==, 0);
        g_assert_cmpint(count_named(b, last, once[i]), ==, nmb);
    }
    /* stage 1 holds MoE layers 3..5, and the MTP layer one more */
    g_assert_cmpint(count_named(a, last, "ep.dispatch"), ==, 3 * nmb);
    g_assert_cmpint(count_named(b, last, "ep.dispatch"), ==, 4 * nmb);
    g_assert_cmpint(count_named(b, 0, "fwd.mtp"), ==, 0); /* the first stage: none */
    ics_topo *t = ics_topo_new(hw);
    ics_replay_result ra = replay(a, t, -1), rb = replay(b, t, -1);
    g_test_message("step: %.3f ms, with MTP %.3f ms", ra.step_ps / 1e9, rb.step_ps / 1e9);
    g_assert_cmpuint(rb.step_ps, >, ra.step_ps);
    l.dist_opt = true;
    l.overlap_param_gather = true;
    expect_layout_refused(&m, &l,
                          "expected no multi-token-prediction layers (m) with "
                          "overlap_param_gather");
    ics_topo_free(t);
    ics_trace_free(a);
    ics_trace_free(b);
    g_free(plain);
    g_free(mtp);
    ics_hw_free(hw);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/moe/catalog", test_catalog);
    g_test_add_func("/moe/structure", test_structure);
    g_test_add_func("/moe/host", test_host);
    g_test_add_func("/moe/launches", test_launches);
    g_test_add_func("/moe/graphs", test_graphs);
    g_test_add_func("/moe/flops-capacity", test_flops_capacity);
    g_test_add_func("/moe/memory", test_memory);
    g_test_add_func("/moe/memory-peak", test_memory_peak);
    g_test_add_func("/moe/layout-errors", test_layout_errors);
    g_test_add_func("/moe/folded-experts", test_folded_experts);
    g_test_add_func("/moe/fold", test_fold);
    g_test_add_func("/moe/nodes-hit", test_nodes_hit);
    g_test_add_func("/moe/deepep", test_deepep);
    g_test_add_func("/moe/mtp", test_mtp);
    return g_test_run();
}
