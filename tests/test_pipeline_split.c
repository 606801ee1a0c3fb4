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

/* One unit a virtual stage (14 layers + the embedding + the loss over 4 x 4, as Megatron-Bridge
 * runs Llama 3.1 405B on 16 x 8): the first virtual stage holds the embedding alone, the last
 * the loss alone, and the step replays folded as unfolded. */
static void test_edge_alone(void)
{
    ics_model m = ics_model_make("fourteen", 14, 1024, 16, 4096, 32000, 1024);
    ics_layout l = ics_layout_defaults();
    l.pp = 4;
    l.vp = 4;
    l.dp = 2;
    l.gbs = 8;
    l.split_embedding = l.split_loss = true;
    GError *err = NULL;
    g_assert_true(ics_layout_check(&l, &m, &err));
    g_assert_cmpint(ics_layout_chunk_layers(&l, &m, 0), ==, 0);
    g_assert_cmpint(ics_layout_chunk_layers(&l, &m, 1), ==, 1);
    g_assert_cmpint(ics_layout_chunk_first_layer(&l, &m, 1), ==, 0);
    g_assert_cmpint(ics_layout_chunk_layers(&l, &m, 15), ==, 0);
    g_assert_cmpint(ics_layout_stage_layers(&l, &m, 0), ==, 3);
    g_assert_cmpint(ics_layout_stage_layers(&l, &m, 3), ==, 3);
    g_assert_cmpint(ics_layout_stage_layers(&l, &m, 1), ==, 4);
    expect_fold_equal("superpod-h100-ndr.json", 1, &m, l);
}

/* Megatron-Core's layout strings (pp_layout.h): DeepSeek-V3's H100 recipe "Et|(tt|)*30mL" is 32
 * virtual stages, 1 layer, 30 of 2, then the MTP layer and the loss; nested groups, commas and
 * repeats expand as Megatron's regular expressions do; m's stand only right before L. */
static void test_layout_parse(void)
{
    GError *err = NULL;
    int n = 0, *first = ics_pp_layout_parse("Et|(tt|)*30L", "x", &n, &err);
    g_assert_no_error(err);
    g_assert_cmpint(n, ==, 32);
    g_assert_cmpint(first[0], ==, 0);
    g_assert_cmpint(first[1], ==, 1);
    g_assert_cmpint(first[2], ==, 3);
    g_assert_cmpint(first[31], ==, 61);
    g_assert_cmpint(first[32], ==, 61); /* the last stage: the loss alone */
    g_assert_cmpint(first[33], ==, 0);  /* no MTP layers */
    g_free(first);
    first = ics_pp_layout_parse("Et|(tt|)*30mL", "x", &n, &err);
    g_assert_no_error(err);
    g_assert_cmpint(n, ==, 32);
    g_assert_cmpint(first[32], ==, 61); /* m is no decoder layer */
    g_assert_cmpint(first[33], ==, 1);  /* the MTP layer */
    g_free(first);
    first = ics_pp_layout_parse("Et|t(m)*2L", "x", &n, &err);
    g_assert_no_error(err);
    g_assert_cmpint(first[3], ==, 2);
    g_free(first);
    /* at most ICS_PP_LAYOUT_MAX_MTP of them: a limit */
    g_assert_null(ics_pp_layout_parse("Et|tm*17L", "x", &n, &err));
    g_assert_error(err, ICS_ERROR, ICS_ERROR_LIMIT);
    g_assert_nonnull(strstr(err->message, "at most 16 multi-token-prediction layers"));
    g_clear_error(&err);
    /* "E, t*2 | ((t|)*2)*3 L": 1 + 6 stages of 1 layer, the last stage the loss alone */
    first = ics_pp_layout_parse("E,t*2|((t|)*2)*3L", "x", &n, &err);
    g_assert_no_error(err);
    g_assert_cmpint(n, ==, 8);
    g_assert_cmpint(first[1], ==, 2);
    g_assert_cmpint(first[7], ==, 8);
    g_assert_cmpint(first[8], ==, 8);
    g_free(first);
    /* refused, each with what was expected and where */
    static const struct {
        const char *text, *msg;
    } bad[] = {
        {"Et|(tt|*30L", "expected ')', got the end at character 12"},
        {"Et|(tt|)L", "expected '*' and a count after a group, got 'L' at character 9"},
        {"Et|t*0L", "a count of 1 or more"},
        {"Et|tx|L", "got 'x' at character 5"},
        {"tE|tL", "the embedding (E) once, first in the first stage, got E in stage 1 (of 2), "
                  "symbol 2"},
        {"Et|tL|", "last in the last stage (icsim places it on the last virtual stage), got L in "
                   "stage 2 (of 3), symbol 2"},
        {"Et|tLt", "the output layer and loss (L) once, last in the last stage"},
        {"EEt|tL", "got a second E"},
        {"E*2t|L", "got a second E"},
        {"*2Et|L", "a symbol or a group before '*N', got '*' at character 1"},
        {"Et|t)L", "a '(' before ')', got ')' at character 5"},
        {"Et|t", "the output layer and loss (L) last in the last stage, got none"},
        {"t|tL", "the embedding (E) first in the first stage, got none"},
        {"Et|mtL", "multi-token-prediction layers (m) only right before L, in the last stage, "
                   "got m in stage 2 (of 2), symbol 1"},
        {"Etm|tL", "multi-token-prediction layers (m) only right before L, in the last stage, "
                   "got m in stage 1 (of 2), symbol 3"},
        {"Et|t*", "a count after '*'"},
    };
    for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
        g_assert_null(ics_pp_layout_parse(bad[i].text, "--layout", &n, &err));
        g_assert_error(err, ICS_ERROR, ICS_ERROR_INPUT);
        if (!strstr(err->message, bad[i].msg) || !g_str_has_prefix(err->message, "--layout: "))
            g_error("%s: %s", bad[i].text, err->message);
        g_clear_error(&err);
    }
    /* past the expansion's bound, by a group's count or a symbol's: a limit, not a crash or a
     * 4 GB string */
    g_assert_null(ics_pp_layout_parse("E(t*2097152)*3L", NULL, &n, &err));
    g_assert_error(err, ICS_ERROR, ICS_ERROR_LIMIT);
    g_assert_nonnull(strstr(err->message, "at most 4194304 symbols expanded"));
    g_clear_error(&err);
    g_assert_null(ics_pp_layout_parse("Et*4194305L", NULL, &n, &err));
    g_assert_error(err, ICS_ERROR, ICS_ERROR_LIMIT);
    g_clear_error(&err);
    /* groups nest 64 deep, not 65 */
    for (int depth = 64; depth <= 65; depth++) {
        GString *t = g_string_new("E");
        for (int d = 0; d < depth; d++)
            g_string_append_c(t, '(');
        g_string_append_c(t, 't');
        for (int d = 0; d < depth; d++)
            g_string_append(t, ")*1");
        g_string_append_c(t, 'L');
        first = ics_pp_layout_parse(t->str, NULL, &n, &err);
        if (depth == 64) {
            g_assert_no_error(err);
            g_assert_cmpint(n, ==, 1);
            g_assert_cmpint(first[1], ==, 1);
        } else {
            g_assert_null(first);
            g_assert_nonnull(strstr(err->message, "nested at most 64 deep"));
            g_clear_error(&err);
        }
        g_free(first);
        g_string_free(t, TRUE);
    }
}

/* A layout given explicitly: 14 layers as 2, 3, 4, 5 over 4 stages, then interleaved with an
 * empty virtual stage (stage 1's second chunk holds only the loss): the layer arithmetic, the
 * rules, and a step that replays folded as unfolded. */
static void test_layout_explicit(void)
{
    ics_model m = ics_model_make("fourteen", 14, 1024, 16, 4096, 32000, 1024);
    ics_layout l = ics_layout_defaults();
    l.pp = 4;
    l.dp = 2;
    l.gbs = 8;
    GError *err = NULL;
    int *first = ics_pp_layout_parse("Et*2|t*3|t*4|t*5L", NULL, &l.chunk_layout_n, &err);
    l.chunk_layout = first;
    g_assert_true(ics_layout_check(&l, &m, &err));
    for (int s = 0; s < 4; s++)
        g_assert_cmpint(ics_layout_stage_layers(&l, &m, s), ==, s + 2);
    g_assert_cmpint(ics_layout_stage_layer(&l, &m, 3, 0), ==, 9);
    /* the rules: pp x vp stages, the model's layers, no other split beside it */
    l.pp = 2;
    g_assert_false(ics_layout_check(&l, &m, &err));
    g_assert_nonnull(strstr(err->message, "expected pp x vp (2 x 1 = 2) stages holding the "
                                          "model's 14 layers, got 4 stages holding 14"));
    g_clear_error(&err);
    l.pp = 4;
    l.split_loss = true;
    g_assert_false(ics_layout_check(&l, &m, &err));
    g_clear_error(&err);
    l.split_loss = false;
    g_free(first);
    first = ics_pp_layout_parse("Et*3|t*4|t*7||", NULL, &l.chunk_layout_n, &err);
    g_assert_null(first); /* no loss */
    g_clear_error(&err);
    /* 2 stages x 2 virtual: stage 0 holds chunks 0 (4 layers) and 2 (3), stage 1 chunks 1 (7)
     * and 3 (none: the loss) */
    l.pp = 2;
    l.vp = 2;
    first = ics_pp_layout_parse("Et*4|t*7|t*3|L", NULL, &l.chunk_layout_n, &err);
    l.chunk_layout = first;
    g_assert_true(ics_layout_check(&l, &m, &err));
    g_assert_cmpint(ics_layout_stage_layers(&l, &m, 0), ==, 7);
    g_assert_cmpint(ics_layout_stage_layers(&l, &m, 1), ==, 7);
    g_assert_cmpint(ics_layout_stage_layer(&l, &m, 0, 4), ==, 11);
    ics_hw *hw = load_hw("superpod-h100-ndr.json", 1);
    ics_trace *tr = build(&m, &l, gpu_of(hw));
    int nmb = 4;
    g_assert_cmpint(count_prefix(tr, ics_layout_rank(&l, 0, 0, 0), "fwd.attn"), ==, nmb * 7);
    g_assert_cmpint(count_prefix(tr, ics_layout_rank(&l, 0, 1, 0), "fwd.attn"), ==, nmb * 7);
    g_assert_cmpint(count_prefix(tr, ics_layout_rank(&l, 0, 1, 0), "fwd.head"), ==, nmb);
    ics_trace_free(tr);
    ics_hw_free(hw);
    expect_fold_equal("superpod-h100-ndr.json", 1, &m, l);
    g_free(first);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/pipeline-split/chunks", test_chunks);
    g_test_add_func("/pipeline-split/trace", test_trace);
    g_test_add_func("/pipeline-split/two-stages", test_two_stages);
    g_test_add_func("/pipeline-split/edge-alone", test_edge_alone);
    g_test_add_func("/pipeline-split/layout-parse", test_layout_parse);
    g_test_add_func("/pipeline-split/layout-explicit", test_layout_explicit);
    return g_test_run();
}
