/* Context parallelism in the training generator (workload.c's cp_ring) against closed forms:
 * the ranks' order, the K/V ring's steps, sizes and peers in forward and backward, activations
 * and tensor-parallel collectives on the rank's share of the sequence, gradients reduced over
 * dp x cp, model FLOPs unchanged and attention's split evenly, memory, Megatron-Core's rules,
 * and a folded replay equal to the unfolded one. */
#include "workload/memory.h"
#include "workload/workload_internal.h"
#include "workload_rig.h"

#include <math.h>

/* Llama-like: 4 layers, h 1024, 16 heads, 4 KV heads, sequence 4096. */
static ics_model small_llama(void)
{
    return small_llama_like("small-llama", 4, 4096, 4096);
}

/* tp 2 with sp, cp 4, pp 2, dp 2: 32 GPUs; 2 micro-batches. */
static ics_layout cp_layout(void)
{
    ics_layout l = ics_layout_defaults();
    l.tp = 2;
    l.sp = true;
    l.cp = 4;
    l.pp = 2;
    l.dp = 2;
    l.mbs = 1;
    l.gbs = 4;
    return l;
}

/* Every (tp, cp, pp, dp) has its own rank, cp varying right after tp. */
static void test_ranks(void)
{
    ics_layout l = cp_layout();
    int world = ics_layout_world(&l);
    g_assert_cmpint(world, ==, 32);
    bool *seen = g_new0(bool, world);
    for (int d = 0; d < l.dp; d++)
        for (int p = 0; p < l.pp; p++)
            for (int c = 0; c < l.cp; c++)
                for (int t = 0; t < l.tp; t++) {
                    int r = ics_layout_rank_cp(&l, t, c, p, d);
                    g_assert_true(r >= 0 && r < world && !seen[r]);
                    seen[r] = true;
                }
    g_assert_cmpint(ics_layout_rank_cp(&l, 1, 2, 0, 0), ==, 2 * 2 + 1);
    g_free(seen);
}

/* Rank 0 (stage 0 of 2: 2 layers): per layer and micro-batch cp - 1 K/V sends to the next
 * context rank and recvs from the previous, each b s/cp x 2 x (kv/tp) x dh x 2 B, twice that
 * in backward; its tensor-parallel collectives on s/cp tokens; its gradients over dp x cp. */
static void test_structure(void)
{
    ics_hw *hw = load_hw("dgx-h100.json", 0);
    ics_model m = small_llama();
    ics_layout l = cp_layout();
    ics_trace *tr = build(&m, &l, gpu_of(hw));
    int nmb = 2, layers = 2, steps = 3;
    g_assert_cmpint(count_named(tr, 0, "cp.send.kv"), ==, nmb * layers * steps);
    g_assert_cmpint(count_named(tr, 0, "cp.recv.kv"), ==, nmb * layers * steps);
    g_assert_cmpint(count_named(tr, 0, "cp.send.kv_grad"), ==, nmb * layers * steps);
    uint64_t kv = (uint64_t)4096 / 4 * 2 * (4 / 2) * 64 * 2;
    int next = ics_layout_rank_cp(&l, 0, 1, 0, 0), prev = ics_layout_rank_cp(&l, 0, 3, 0, 0);
    for (int i = 0; i < ics_trace_nops(tr, 0); i++) {
        const ics_trace_op *op = ics_trace_get_op(tr, 0, i);
        int n;
        if (op->cat == ICS_CAT_CP) {
            g_assert_cmpuint(op->bytes, ==, strstr(op->name, "grad") ? 2 * kv : kv);
            g_assert_cmpint(op->peer, ==, op->kind == ICS_TOP_SEND ? next : prev);
        } else if (op->kind == ICS_TOP_COLL && op->cat == ICS_CAT_TP) {
            g_assert_cmpuint(op->coll.size_bytes, ==, (uint64_t)4096 / 4 * 1024 * 2);
        } else if (op->kind == ICS_TOP_COLL && op->cat == ICS_CAT_DP) {
            const int *ranks = ics_trace_comm_ranks(tr, op->comm, &n);
            g_assert_cmpint(n, ==, 8);
            g_assert_cmpint(ranks[1], ==, next);
        }
    }
    /* the rank's sends and recvs match its peers' (the trace checks pairs) */
    g_assert_cmpint(count_named(tr, next, "cp.recv.kv"), ==, nmb * layers * steps);
    ics_trace_free(tr);
    ics_hw_free(hw);
}

/* The model's FLOPs do not depend on cp; each rank's attention core is 1/cp of the sequence's
 * (Megatron's load-balanced chunks), its GEMMs 1/cp of the tokens; activations 1/cp. */
static void test_flops_memory(void)
{
    ics_model m = small_llama();
    ics_layout l1 = cp_layout(), l4 = cp_layout();
    l1.cp = 1;
    ics_step_flops f1, f4;
    ics_workload_flops(&m, &l1, &f1);
    ics_workload_flops(&m, &l4, &f4);
    g_assert_cmpfloat(f1.model_flops, ==, f4.model_flops);
    ics_wl_cost c1[ICS_WL_BLOCK_COUNT], c4[ICS_WL_BLOCK_COUNT];
    ics_wl__costs(&m, &l1, NULL, c1);
    ics_wl__costs(&m, &l4, NULL, c4);
    g_assert_cmpfloat(fabs(c4[ICS_WL_ATTN_FWD].flops * 4 - c1[ICS_WL_ATTN_FWD].flops), <, 1);
    g_assert_cmpfloat(fabs(c4[ICS_WL_MLP_BWD].flops * 4 - c1[ICS_WL_MLP_BWD].flops), <, 1);
    g_assert_cmpfloat(
        fabs(ics_memory_layer_activations(&m, &l4) * 4 - ics_memory_layer_activations(&m, &l1)), <,
        1);
    l4.dist_opt = true;
    ics_memory mem;
    ics_memory_of_stage(&m, &l4, 0, &mem);
    g_assert_cmpfloat(fabs(mem.optimizer - 12 * mem.params / 8), <, 1); /* over dp x cp */
}

static void test_layout_errors(void)
{
    ics_model m = small_llama();
    ics_layout l = cp_layout();
    l.cp = 3;
    expect_layout_refused(&m, &l, "cp: expected the sequence (4096) divisible by 2 x cp (6)");
    l = cp_layout();
    l.attention = ICS_ATTN_UNFUSED;
    expect_layout_refused(&m, &l, "cp: expected 1 with unfused attention");
    ics_model moe = small_llama();
    moe.moe = (ics_moe){.experts = 4, .topk = 1, .ffn = 1024};
    l = cp_layout();
    expect_layout_refused(&moe, &l, "cp: expected 1 with a mixture-of-experts model");
}

/* Folded (one representative per tp and dp, every context rank written) replays to the
 * unfolded step. */
static void test_fold(void)
{
    ics_model m = small_llama();
    expect_fold_equal("superpod-h100-ndr.json", 4, &m, cp_layout());
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/context/ranks", test_ranks);
    g_test_add_func("/context/structure", test_structure);
    g_test_add_func("/context/flops-memory", test_flops_memory);
    g_test_add_func("/context/layout-errors", test_layout_errors);
    g_test_add_func("/context/fold", test_fold);
    return g_test_run();
}
