/* The command line: defaults, every flag, and the bad-input rule (a message naming the flag,
 * never a crash). */
#include "args.h"
#include "plan_compute.h"

#include <string.h>

static bool parse(const char *line, icsv_args *a, GError **err)
{
    char **argv = g_strsplit(line, " ", -1);
    bool ok = icsv_args_parse((int)g_strv_length(argv), argv, a, err);
    g_strfreev(argv);
    return ok;
}

static void test_collective(void)
{
    icsv_args a;
    g_assert_true(parse("icsim-validate collective all_reduce -b 8 -e 8G -f 2 --kernel all "
                        "--json out.json -g 4 -n 50 -w 5 -c 0 --ctas 32 --unroll 8 --chunk 1M "
                        "--slices 4 -d bfloat16 -o sum",
                        &a, NULL));
    g_assert_cmpint(a.mode, ==, ICSV_MODE_COLLECTIVE);
    g_assert_cmpint(a.op, ==, ICSV_OP_ALL_REDUCE);
    g_assert_cmpint(a.kernel, ==, ICSV_KERNEL_ALL);
    g_assert_cmpint(a.dtype, ==, ICSV_BF16);
    g_assert_cmpuint(a.min_bytes, ==, 8);
    g_assert_cmpuint(a.max_bytes, ==, 8ull << 30);
    g_assert_cmpuint(a.step_factor, ==, 2);
    g_assert_cmpint(a.ngpus, ==, 4);
    g_assert_cmpint(a.iters, ==, 50);
    g_assert_cmpint(a.warmup, ==, 5);
    g_assert_false(a.check);
    g_assert_cmpint(a.params.ctas, ==, 32);
    g_assert_cmpint(a.params.unroll, ==, 8);
    g_assert_cmpuint(a.params.chunk_bytes, ==, 1 << 20);
    g_assert_cmpint(a.params.slices, ==, 4);
    g_assert_cmpstr(a.json_path, ==, "out.json");
    g_assert_true(g_str_has_prefix(a.command, "icsim-validate collective all_reduce -b 8"));
    icsv_args_clear(&a);
    icsv_args_clear(&a); /* twice is harmless */
}

static void test_defaults(void)
{
    icsv_args a;
    g_assert_true(parse("icsim-validate collective --op alltoall", &a, NULL));
    g_assert_cmpint(a.op, ==, ICSV_OP_ALLTOALL);
    g_assert_cmpint(a.kernel, ==, ICSV_KERNEL_ICSIM);
    g_assert_cmpint(a.dtype, ==, ICSV_FLOAT);
    g_assert_cmpuint(a.min_bytes, ==, 32 << 20); /* nccl-tests' defaults */
    g_assert_cmpuint(a.max_bytes, ==, 32 << 20);
    g_assert_cmpuint(a.step_bytes, ==, 1 << 20);
    g_assert_cmpint(a.iters, ==, 20);
    g_assert_cmpint(a.warmup, ==, 1);
    g_assert_true(a.check);
    g_assert_cmpint(a.ngpus, ==, 0);
    g_assert_cmpint(a.params.ctas, ==, ICSV_DEFAULT_CTAS);
    g_assert_cmpuint(a.params.chunk_bytes, ==, ICSV_DEFAULT_CHUNK);
    g_assert_null(a.json_path);
    icsv_args_clear(&a);

    g_assert_true(parse("icsim-validate p2p --kernel ce", &a, NULL));
    g_assert_cmpint(a.mode, ==, ICSV_MODE_P2P);
    g_assert_cmpint(a.kernel, ==, ICSV_KERNEL_CE);
    g_assert_cmpuint(a.min_bytes, ==, ICSV_DEFAULT_P2P_BYTES);
    g_assert_cmpint(a.params.ctas, ==, 0); /* one CTA per SM, resolved on the GPU */
    icsv_args_clear(&a);

    g_assert_true(parse("icsim-validate nvls -b 1M -e 1G -f 4", &a, NULL));
    g_assert_cmpint(a.mode, ==, ICSV_MODE_NVLS);
    g_assert_cmpint(a.kernel, ==, ICSV_KERNEL_NVLS);
    g_assert_cmpint(a.op, ==, ICSV_OP_ALL_REDUCE);
    icsv_args_clear(&a);

    g_assert_true(parse("icsim-validate collective all_reduce --kernel nvls", &a, NULL));
    g_assert_cmpint(a.mode, ==, ICSV_MODE_NVLS); /* --kernel nvls is the nvls mode */
    icsv_args_clear(&a);

    g_assert_true(parse("icsim-validate collective all_reduce -b 1G", &a, NULL));
    g_assert_cmpuint(a.max_bytes, ==, 1 << 30); /* -b past the default -e: that one size */
    icsv_args_clear(&a);
}

static void test_compute(void)
{
    icsv_args a;
    g_assert_true(parse("icsim-validate compute", &a, NULL));
    g_assert_cmpint(a.mode, ==, ICSV_MODE_COMPUTE);
    g_assert_cmpuint(a.gemm_dtypes, ==, ICSV_GEMM_ALL);
    g_assert_true(a.gemm_dtypes_all);
    g_assert_cmpint(a.iters, ==, ICSV_DEFAULT_ITERS);
    g_assert_cmpint(a.warmup, ==, ICSV_DEFAULT_COMPUTE_WARMUP);
    g_assert_cmpint(a.ngpus, ==, 1);
    g_assert_null(a.json_path);
    icsv_args_clear(&a);

    g_assert_true(
        parse("icsim-validate compute --dtype fp8 -n 50 -w 0 -g 1 --json c.json", &a, NULL));
    g_assert_cmpuint(a.gemm_dtypes, ==, 1u << ICSV_GEMM_FP8);
    g_assert_false(a.gemm_dtypes_all);
    g_assert_cmpint(a.iters, ==, 50);
    g_assert_cmpint(a.warmup, ==, 0);
    g_assert_cmpstr(a.json_path, ==, "c.json");
    g_assert_cmpstr(a.command, ==,
                    "icsim-validate compute --dtype fp8 -n 50 -w 0 -g 1 --json c.json");
    icsv_args_clear(&a);

    g_assert_true(parse("icsim-validate compute --dtype all", &a, NULL));
    g_assert_true(a.gemm_dtypes_all);
    icsv_args_clear(&a);
    g_assert_true(parse("icsim-validate compute --dtype bf16", &a, NULL));
    g_assert_cmpuint(a.gemm_dtypes, ==, 1u << ICSV_GEMM_BF16);
    icsv_args_clear(&a);

    g_assert_true(parse("icsim-validate collective all_reduce", &a, NULL));
    g_assert_cmpint(a.warmup, ==, ICSV_DEFAULT_WARMUP); /* compute's default is compute's only */
    g_assert_false(a.graph);
    g_assert_cmpuint(a.n_shapes, ==, 0);
    icsv_args_clear(&a);
}

/* --shapes: a list of MxNxK in the order given; --graph: a flag. Both compute's only. */
static void test_compute_shapes(void)
{
    icsv_args a;
    g_assert_true(
        parse("icsim-validate compute --graph --shapes 1536x1409x8192,1x8192x8192", &a, NULL));
    g_assert_true(a.graph);
    g_assert_cmpuint(a.n_shapes, ==, 2);
    g_assert_cmpint(a.shapes[0].m, ==, 1536);
    g_assert_cmpint(a.shapes[0].n, ==, 1409);
    g_assert_cmpint(a.shapes[0].k, ==, 8192);
    g_assert_cmpint(a.shapes[1].m, ==, 1); /* m odd is fine when n is a multiple of 16 */
    icsv_args_clear(&a);
    g_assert_null(a.shapes);
    g_assert_cmpuint(a.n_shapes, ==, 0);
    g_assert_true(parse("icsim-validate compute --shapes 32768x16x16", &a, NULL)); /* the limits */
    g_assert_cmpint(a.groups, ==, 1); /* no --groups: one GEMM a row */
    g_assert_cmpint(a.streams, ==, 1);
    icsv_args_clear(&a);
}

/* --groups G: each --shapes GEMM as G at once, on --streams S (default Transformer Engine's 4). */
static void test_compute_groups(void)
{
    icsv_args a;
    g_assert_true(
        parse("icsim-validate compute --graph --shapes 4096x1536x2048 --groups 16", &a, NULL));
    g_assert_cmpint(a.groups, ==, 16);
    g_assert_cmpint(a.streams, ==, ICSV_COMPUTE_STREAMS_DEFAULT);
    g_assert_cmpint(ICSV_COMPUTE_STREAMS_DEFAULT, ==, 4);
    icsv_args_clear(&a);
    g_assert_true(
        parse("icsim-validate compute --shapes 16x16x16 --groups 256 --streams 1", &a, NULL));
    g_assert_cmpint(a.groups, ==, 256);
    g_assert_cmpint(a.streams, ==, 1);
    icsv_args_clear(&a);
    g_assert_true(parse("icsim-validate compute --shapes 16x16x16 --groups 1", &a, NULL));
    g_assert_cmpint(a.groups, ==, 1);
    g_assert_cmpint(a.streams, ==, 1);
    icsv_args_clear(&a);
}

static void test_help(void)
{
    icsv_args a;
    g_assert_true(parse("icsim-validate --help", &a, NULL));
    g_assert_true(a.help);
    icsv_args_clear(&a);
    g_assert_true(parse("icsim-validate -V", &a, NULL));
    g_assert_true(a.version);
    icsv_args_clear(&a);
    g_assert_nonnull(strstr(icsv_usage(), "collective OP"));
    g_assert_nonnull(strstr(icsv_usage(), "--dtype T"));
}

static void test_bad(void)
{
    const struct {
        const char *line, *msg;
    } bad[] = {
        {"icsim-validate", "expected a mode"},
        {"icsim-validate bench", "unknown mode 'bench'"},
        {"icsim-validate collective", "collective: expected OP"},
        {"icsim-validate collective allsum", "unknown collective 'allsum'"},
        {"icsim-validate collective --op sum", "the reduction is -o/--redop"},
        {"icsim-validate collective all_reduce --op all_gather", "disagree"},
        {"icsim-validate collective broadcast", "collective broadcast: not implemented"},
        {"icsim-validate collective all_reduce extra", "unexpected argument 'extra'"},
        {"icsim-validate p2p all_reduce", "p2p: takes no collective"},
        {"icsim-validate collective all_reduce -b 8X", "-b: expected a size in bytes"},
        {"icsim-validate collective all_reduce -b 1G -e 1M", "is larger than -e"},
        {"icsim-validate collective all_reduce -b 8 -e 8G -f 1 -i 0", "never reaches -e"},
        {"icsim-validate collective all_reduce -n 0", "-n: expected iterations >= 1"},
        {"icsim-validate collective all_reduce -n x", "-n"},
        {"icsim-validate collective all_reduce -w -1", "-w: expected warmup"},
        {"icsim-validate collective all_reduce -c 2", "-c: expected 0 or 1"},
        {"icsim-validate collective all_reduce -g 99", "-g: expected 1 to 32 GPUs"},
        {"icsim-validate collective all_reduce --ctas 0", "--ctas: expected 1 to 128"},
        {"icsim-validate collective all_reduce --unroll 3", "--unroll: expected 1, 2, 4 or 8"},
        {"icsim-validate collective all_reduce --slices 17", "--slices: expected 1 to 16"},
        {"icsim-validate collective all_reduce --chunk 1000", "--chunk: expected a multiple"},
        {"icsim-validate collective all_reduce --chunk 128M", "at most 64M"},
        {"icsim-validate collective all_reduce -d double", "-d: expected float or bfloat16"},
        {"icsim-validate collective all_reduce -o prod", "-o: only sum"},
        {"icsim-validate collective all_reduce --kernel gpu", "--kernel: expected icsim"},
        {"icsim-validate collective all_reduce --kernel ce", "copy engines only run p2p"},
        {"icsim-validate collective all_gather --kernel nvls", "--kernel nvls: only all_reduce"},
        {"icsim-validate p2p --kernel nccl", "p2p: --kernel: expected icsim"},
        {"icsim-validate p2p -b 8", "at least 16 bytes"},
        {"icsim-validate nvls -d bfloat16", "nvls: -d: only float"},
        {"icsim-validate nvls --kernel icsim", "nvls: --kernel: expected nvls"},
        {"icsim-validate collective all_reduce --bogus", "--bogus"},
        {"icsim-validate compute --dtype fp4", "--dtype: expected bf16, fp16, fp8 or all"},
        {"icsim-validate compute --dtype bfloat16", "--dtype: expected bf16"},
        {"icsim-validate compute all_reduce", "compute: takes no collective"},
        {"icsim-validate compute -b 8", "compute: -b does not apply"},
        {"icsim-validate compute -d bfloat16", "compute: -d does not apply"},
        {"icsim-validate compute --kernel nccl", "compute: --kernel does not apply"},
        {"icsim-validate compute --ctas 4", "compute: --ctas does not apply"},
        {"icsim-validate compute -c 0", "compute: -c does not apply"},
        {"icsim-validate compute -g 2", "compute: -g: measures one GPU"},
        {"icsim-validate compute -n 0", "-n: expected iterations >= 1"},
        {"icsim-validate compute -w -1", "-w: expected warmup"},
        {"icsim-validate collective all_reduce --dtype bf16", "--dtype: only compute takes it"},
        {"icsim-validate p2p --dtype fp8", "--dtype: only compute takes it"},
        {"icsim-validate compute --shapes 8192x8192", "--shapes: '8192x8192': expected MxNxK"},
        {"icsim-validate compute --shapes 8192x8192x8192x1", "expected MxNxK, e.g."},
        {"icsim-validate compute --shapes 16x16x0", "'16x16x0': expected MxNxK, each 1 to 32768"},
        {"icsim-validate compute --shapes 16x16x32769", "each 1 to 32768, got '32769'"},
        {"icsim-validate compute --shapes 16x-16x16", "got '-16'"},
        {"icsim-validate compute --shapes 16x16x16,", "expected MxNxK"},
        {"icsim-validate compute --shapes 16xx16", "expected MxNxK"},
        {"icsim-validate compute --shapes 17x17x16", "'17x17x16': K and one of M, N"},
        {"icsim-validate compute --shapes 16x16x17", "K and one of M, N must be multiples of 16"},
        {"icsim-validate collective all_reduce --graph", "--graph: only compute takes it"},
        {"icsim-validate compute --graph -n 10001", "--graph: -n: expected at most 10000 calls"},
        {"icsim-validate p2p --shapes 16x16x16", "--shapes: only compute takes it"},
        {"icsim-validate compute --groups 4", "--groups: only with --shapes"},
        {"icsim-validate compute --shapes 16x16x16 --streams 2", "--streams: only with --groups"},
        {"icsim-validate compute --shapes 16x16x16 --groups 0", "--groups: expected 1 to 256"},
        {"icsim-validate compute --shapes 16x16x16 --groups 257", "1 to 256 GEMMs, got '257'"},
        {"icsim-validate compute --shapes 16x16x16 --groups -2147483648", "got '-2147483648'"},
        {"icsim-validate compute --shapes 16x16x16 --groups 4 --streams 0",
         "--streams: expected 1 to 16 streams, got '0'"},
        {"icsim-validate compute --shapes 16x16x16 --groups 4 --streams 17", "got '17'"},
        {"icsim-validate compute --shapes 16x16x16 --groups x", "--groups: expected 1 to 256"},
        {"icsim-validate compute --shapes 16x16x16 --groups 1 --streams 9",
         "--streams: only with --groups 2 or more"},
        {"icsim-validate compute --graph -n 10000 --shapes 16x16x16 --groups 11",
         "-n x --groups: expected at most 100000 GEMMs in one graph, got 10000 x 11"},
        {"icsim-validate p2p --groups 2", "--groups: only compute takes it"},
        {"icsim-validate collective all_reduce --streams 2", "--streams: only compute takes it"},
    };
    for (size_t i = 0; i < G_N_ELEMENTS(bad); i++) {
        icsv_args a;
        GError *err = NULL;
        if (parse(bad[i].line, &a, &err))
            g_error("accepted: %s", bad[i].line);
        g_assert_error(err, ICSV_ERROR, ICSV_ERROR_INPUT);
        if (!strstr(err->message, bad[i].msg))
            g_error("%s: message '%s' lacks '%s'", bad[i].line, err->message, bad[i].msg);
        g_assert_null(a.json_path);
        g_assert_null(a.command);
        g_error_free(err);
    }
}

static void test_join(void)
{
    char *argv[] = {"icsim-validate", "--json", "my results.json", "-b", "8"};
    char *s = icsv_join_argv(5, argv);
    g_assert_cmpstr(s, ==, "icsim-validate --json 'my results.json' -b 8");
    g_free(s);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/validate/args/collective", test_collective);
    g_test_add_func("/validate/args/defaults", test_defaults);
    g_test_add_func("/validate/args/compute", test_compute);
    g_test_add_func("/validate/args/compute-shapes", test_compute_shapes);
    g_test_add_func("/validate/args/compute-groups", test_compute_groups);
    g_test_add_func("/validate/args/help", test_help);
    g_test_add_func("/validate/args/bad", test_bad);
    g_test_add_func("/validate/args/join", test_join);
    return g_test_run();
}
