/* The pipeline split that counts the embedding and the loss as layers (Megatron-Core's
 * account_for_embedding_in_pipeline_split and account_for_loss_in_pipeline_split) against
 * closed forms: Llama 3.1 405B's 126 layers over 8 stages x 8 virtual stages (the first and
 * last virtual stage 1 layer, every other 2), the layer indices each stage holds, the rules, a
 * generated trace's layer ops per chunk, and a folded replay equal to the unfolded one. */
#include "workload/memory.h"
#include "workload_rig.h"

static void test_chunks(void)
{
    ics_model_catalog *c = catalog();
    const ics_model *m = ics_model_find(c, "llama3-405b");
    ics_layout l = ics_layout_defaults();
    l.tp = 8;
    l.pp = 8;
    l.vp = 8;
    l.dp = 2;
    l.gbs = 16;
    l.split_embedding = l.split_loss = true;
    GError *err = NULL;
    g_assert_true(ics_layout_check(&l, m, &err));
    int total = 0;
    for (int v = 0; v < 64; v++) {
        int n = ics_layout_chunk_layers(&l, m, v);
        g_assert_cmpint(n, ==, v == 0 || v == 63 ? 1 : 2);
        g_assert_cmpint(ics_layout_chunk_first_layer(&l, m, v), ==, total);
        total += n;
    }
    g_assert_cmpint(total, ==, 126);
    /* stage 0 holds virtual stages 0, 8, ..., 56: 1 + 7 x 2 layers, from 0, 15, 31, ... */
    g_assert_cmpint(ics_layout_stage_layers(&l, m, 0), ==, 15);
    g_assert_cmpint(ics_layout_stage_layers(&l, m, 7), ==, 15);
    g_assert_cmpint(ics_layout_stage_layers(&l, m, 3), ==, 16);
    g_assert_cmpint(ics_layout_stage_layer(&l, m, 0, 0), ==, 0);
    g_assert_cmpint(ics_layout_stage_layer(&l, m, 0, 1), ==, 8 * 2 - 1);
    g_assert_cmpint(ics_layout_stage_layer(&l, m, 7, 14), ==, 125);
    /* the rules: 126 + 1 does not divide over 64; nor with explicit edge stages */
    l.split_loss = false;
    g_assert_false(ics_layout_check(&l, m, &err));
    g_assert_nonnull(strstr(err->message, "the layers with the embedding and loss counted (127)"));
    g_clear_error(&err);
    l.split_loss = true;
    l.first_layers = 3;
    g_assert_false(ics_layout_check(&l, m, &err));
    g_clear_error(&err);
    ics_model_catalog_free(c);
}

static int count_prefix(const ics_trace *tr, int rank, const char *prefix)
{
    int n = 0;
    for (int i = 0; i < ics_trace_nops(tr, rank); i++) {
        const ics_trace_op *op = ics_trace_get_op(tr, rank, i);
        n += op->name && g_str_has_prefix(op->name, prefix);
    }
    return n;
}

/* A 14-layer model on 4 stages x 2 virtual stages with both counted: (14 + 2) / 8 = 2 a virtual
 * stage, so chunks hold 1, 2, 2, 2, 2, 2, 2, 1 layers: stages 0 and 3 run 3 layers a
 * micro-batch, stages 1 and 2 run 4. */
static void test_trace(void)
{
    ics_hw *hw = load_hw("superpod-h100-ndr.json", 1);
    ics_model m = ics_model_make("fourteen", 14, 1024, 16, 4096, 32000, 1024);
    ics_layout l = ics_layout_defaults();
    l.pp = 4;
    l.vp = 2;
    l.dp = 2;
    l.gbs = 8;
    l.split_embedding = l.split_loss = true;
    ics_trace *tr = build(&m, &l, gpu_of(hw));
    int nmb = 4;
    g_assert_cmpint(count_prefix(tr, ics_layout_rank(&l, 0, 0, 0), "fwd.attn"), ==, nmb * 3);
    g_assert_cmpint(count_prefix(tr, ics_layout_rank(&l, 0, 1, 0), "fwd.attn"), ==, nmb * 4);
    g_assert_cmpint(count_prefix(tr, ics_layout_rank(&l, 0, 3, 0), "fwd.attn"), ==, nmb * 3);
    ics_memory mem;
    ics_memory_of_stage(&m, &l, 0, &mem);
    g_assert_cmpfloat(mem.total, >, 0);
    ics_trace_free(tr);
    ics_hw_free(hw);
    expect_fold_equal("superpod-h100-ndr.json", 1, &m, l);
}

/* Two stages interleaved (Megatron-Core's, as Megatron-Bridge's Qwen3 30B recipe runs PP 2,
 * VP 24): the activations and the gradients join the same two ranks both ways, on their own
 * channels; the step replays, folded as unfolded. */
static void test_two_stages(void)
{
    ics_model m = ics_model_make("eight", 8, 1024, 16, 4096, 32000, 1024);
    ics_layout l = ics_layout_defaults();
    l.pp = 2;
    l.vp = 4;
    l.dp = 2;
    l.gbs = 8;
    ics_hw *hw = load_hw("superpod-h100-ndr.json", 1);
    ics_trace *tr = build(&m, &l, gpu_of(hw));
    int tags[ICS_TRACE_MAX_TAG + 1] = {0};
    for (int i = 0; i < ics_trace_nops(tr, 0); i++) {
        const ics_trace_op *op = ics_trace_get_op(tr, 0, i);
        if (op->kind == ICS_TOP_SEND || op->kind == ICS_TOP_RECV)
            tags[op->tag]++;
    }
    /* stage 0, 4 micro-batches, 4 chunks: activations sent by every chunk and received by all
     * but the first; gradients the other way */
    g_assert_cmpint(tags[0], ==, 4 * (4 + 3));
    g_assert_cmpint(tags[1], ==, 4 * (3 + 4));
    ics_trace_free(tr);
    ics_hw_free(hw);
    expect_fold_equal("superpod-h100-ndr.json", 1, &m, l);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/pipeline-split/chunks", test_chunks);
    g_test_add_func("/pipeline-split/trace", test_trace);
    g_test_add_func("/pipeline-split/two-stages", test_two_stages);
    return g_test_run();
}
