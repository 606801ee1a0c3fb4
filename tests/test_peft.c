/* Fine-tuning shapes of a step against closed forms: LoRA (frozen base weights: backward GEMMs
 * without weight gradients, adapters' GEMMs beside the four linear layers, gradients, their
 * reduction and the optimizer on the adapters only, memory) and packed sequences (attention
 * inside each sample), with Megatron-Core's and NeMo's rules for what combines. */
#include "workload/memory.h"
#include "workload/workload_internal.h"
#include "workload_rig.h"

#include <math.h>

/* Llama-like: 4 layers, h 1024, 16 heads, 4 KV heads, ffn 2816, sequence 2048. */
static ics_model small_llama(void)
{
    return small_llama_like("small-llama", 4, 2816, 2048);
}

static ics_layout layout(int lora)
{
    ics_layout l = ics_layout_defaults();
    l.tp = 2;
    l.sp = true;
    l.dp = 4;
    l.mbs = 1;
    l.gbs = 8;
    l.lora_rank = lora;
    return l;
}

/* Per micro-batch on one rank: the base GEMMs' FLOPs F (forward), the adapters' A (forward:
 * T x r x (in + out) x 2 per adapter, 1/tp each); forward F + A, backward F (data gradients
 * only) + 2A, against 2F without LoRA. */
static void test_lora_flops(void)
{
    ics_model m = small_llama();
    ics_layout full = layout(0), lora = layout(16);
    ics_wl_cost cf[ICS_WL_BLOCK_COUNT], cl[ICS_WL_BLOCK_COUNT];
    ics_wl__costs(&m, &full, NULL, cf);
    ics_wl__costs(&m, &lora, NULL, cl);
    double T = 2048, r = 16, h = 1024, tp = 2, qkv = 1024 + 2 * 4 * 64;
    double a_attn = 2 * T * r * ((h + qkv) + (h + h)) / tp;
    double a_mlp = 2 * T * r * ((h + 2 * 2816) + (2816 + h)) / tp;
    const struct {
        ics_wl_block fwd, bwd;
        double adapters;
    } blocks[] = {{ICS_WL_ATTN_FWD, ICS_WL_ATTN_BWD, a_attn},
                  {ICS_WL_MLP_FWD, ICS_WL_MLP_BWD, a_mlp}};
    for (size_t i = 0; i < G_N_ELEMENTS(blocks); i++) {
        double fwd_full = cf[blocks[i].fwd].flops, bwd_full = cf[blocks[i].bwd].flops;
        double A = blocks[i].adapters, core = 0;
        if (blocks[i].fwd == ICS_WL_ATTN_FWD) /* attention's core: 4 T s heads dh, x2 backward */
            core = 4 * T * 2048 * (16 / tp) * 64;
        g_assert_cmpfloat(fabs(cl[blocks[i].fwd].flops - (fwd_full + A)), <, 1);
        double gemms_fwd = fwd_full - core;
        g_assert_cmpfloat(fabs(bwd_full - (2 * gemms_fwd + 2 * core)), <, 1);
        g_assert_cmpfloat(fabs(cl[blocks[i].bwd].flops - (gemms_fwd + 2 * core + 2 * A)), <, 1);
    }
    /* the frozen output layer: logits' data gradient only */
    g_assert_cmpfloat(fabs(cl[ICS_WL_HEAD_BWD].flops - cf[ICS_WL_HEAD_FWD].flops), <, 1);
}

/* Only the adapters' gradients are reduced (fp32), and the optimizer holds only them. */
static void test_lora_grads_memory(void)
{
    ics_hw *hw = load_hw("dgx-h100.json", 0);
    ics_model m = small_llama();
    ics_layout l = layout(16);
    ics_trace *tr = build(&m, &l, gpu_of(hw));
    double attn, mlp;
    ics_model_lora_params(&m, 16, &attn, &mlp);
    double adapters = 4 * (attn + mlp) / 2; /* layers x (per layer) / tp */
    double reduced = 0;
    for (int i = 0; i < ics_trace_nops(tr, 0); i++) {
        const ics_trace_op *op = ics_trace_get_op(tr, 0, i);
        if (op->kind == ICS_TOP_COLL && op->cat == ICS_CAT_DP)
            reduced += (double)op->coll.size_bytes;
    }
    g_assert_cmpfloat(fabs(reduced - 4 * adapters), <, 1);
    ics_trace_free(tr);
    ics_hw_free(hw);
    l.dist_opt = true;
    ics_memory mem;
    ics_memory_of_stage(&m, &l, 0, &mem);
    g_assert_cmpfloat(fabs(mem.weights - 2 * (mem.params + adapters)), <, 1);
    g_assert_cmpfloat(fabs(mem.grads - 4 * adapters), <, 1);
    g_assert_cmpfloat(fabs(mem.optimizer - 12 * adapters / 4), <, 1);
}

/* Packed samples of L tokens: each query attends to L keys, not s; nothing else changes. */
static void test_packed(void)
{
    ics_model m = small_llama();
    ics_layout whole = layout(0), packed = layout(0);
    packed.packed_len = 512;
    ics_wl_cost cw[ICS_WL_BLOCK_COUNT], cp[ICS_WL_BLOCK_COUNT];
    ics_wl__costs(&m, &whole, NULL, cw);
    ics_wl__costs(&m, &packed, NULL, cp);
    double per_key = 4 * 2048.0 * (16 / 2) * 64; /* 4 T heads dh */
    g_assert_cmpfloat(
        fabs(cw[ICS_WL_ATTN_FWD].flops - cp[ICS_WL_ATTN_FWD].flops - per_key * (2048 - 512)), <, 1);
    g_assert_cmpfloat(cw[ICS_WL_MLP_FWD].flops, ==, cp[ICS_WL_MLP_FWD].flops);
    g_assert_cmpfloat(ics_memory_layer_activations(&m, &whole), ==,
                      ics_memory_layer_activations(&m, &packed));
}

static void test_errors(void)
{
    ics_model m = small_llama();
    ics_layout l = layout(2048);
    expect_layout_refused(&m, &l, "lora_rank: expected 0 (off) or 1..hidden (1024), got 2048");
    l = layout(8);
    l.fsdp = true;
    expect_layout_refused(&m, &l, "lora_rank: expected 0 with fsdp");
    l = layout(0);
    l.packed_len = 512;
    l.attention = ICS_ATTN_UNFUSED;
    expect_layout_refused(&m, &l, "packed_len: expected flash attention");
    l.attention = ICS_ATTN_FLASH;
    l.packed_len = 4096;
    expect_layout_refused(&m, &l, "packed_len: expected 0 (unpacked) or 1..seq (2048), got 4096");
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/peft/lora-flops", test_lora_flops);
    g_test_add_func("/peft/lora-grads-memory", test_lora_grads_memory);
    g_test_add_func("/peft/packed", test_packed);
    g_test_add_func("/peft/errors", test_errors);
    return g_test_run();
}
