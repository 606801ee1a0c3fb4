/* args.c: icsim-validate's command line through GOption, then every value range-checked.
 * Invariant: a struct that icsv_args_parse accepted is safe to run; nothing later re-checks. */
#include "args.h"
#include "plan_compute.h"

#include <string.h>

static const char usage_text[] =
    "usage: icsim-validate MODE [OP] [options]\n"
    "modes:\n"
    "  p2p                 GPU-pair bandwidth and latency matrices (p2pBandwidthLatencyTest)\n"
    "  collective OP       a size sweep of OP, printed as nccl-tests prints it;\n"
    "                      OP: all_reduce all_gather reduce_scatter alltoall sendrecv\n"
    "  nvls                all_reduce through NVLink SHARP (multimem), sm_90 or newer\n"
    "  compute             GEMMs (cuBLASLt) and HBM copies on GPU 0, for icsim calibrate;\n"
    "                      takes --dtype, --shapes, --groups, --streams, --graph, -n, -w,\n"
    "                      --json\n"
    "options (nccl-tests' spelling):\n"
    "  -b, --minbytes N    first size (8, 64K, 128M, 8G; binary units) [32M; p2p: 256M]\n"
    "  -e, --maxbytes N    last size [32M]\n"
    "  -f, --stepfactor F  multiply the size by F (> 1) ...         [1]\n"
    "  -i, --stepbytes N   ... or add N bytes                       [1M]\n"
    "  -n, --iters N       timed iterations per size                [20]\n"
    "  -w, --warmup_iters N  untimed iterations per size             [1; compute: 3]\n"
    "  -c, --check 0|1     count wrong elements (#wrong)            [1]\n"
    "  -d, --datatype T    float or bfloat16                        [float]\n"
    "  -o, --redop sum     the reduction (sum only)\n"
    "  -g, --gpus N        GPUs to use                              [all visible]\n"
    "ours:\n"
    "  --op OP             the collective, instead of the positional OP\n"
    "  --kernel K          collective: icsim, nccl, all (both, and their ratio), nvls;\n"
    "                      p2p: icsim (SM copies) or ce (copy engines)  [icsim]\n"
    "  --ctas N            CTAs = channels                  [16; p2p: one per SM]\n"
    "  --unroll N          16-byte loads in flight per thread: 1 2 4 8  [4]\n"
    "  --chunk N           bytes per channel per ring step          [2M]\n"
    "  --slices N          slices (flag handshakes) per chunk       [2]\n"
    "  --dtype T           compute: bf16, fp16, fp8 (sm_89 or newer) or all  [all]\n"
    "  --shapes LIST       compute: only these GEMMs, MxNxK,MxNxK,... (K and M or N\n"
    "                      multiples of 16), no copies          [the default plan]\n"
    "  --groups G          compute: time each --shapes GEMM as G GEMMs at once, one per\n"
    "                      expert, as Transformer Engine's GroupedLinear runs them  [1]\n"
    "  --streams S         compute: ... issued round-robin on S streams (with --groups)  [4]\n"
    "  --graph             compute: replay the -n calls from one CUDA graph, so that the\n"
    "                      host's launch cost is not timed      [off]\n"
    "  --json FILE         also write the results as JSON\n"
    "  -h, --help          this text;  -V, --version  the version\n"
    "exit status: 0 ok, 1 CUDA error or wrong results, 2 bad input, 77 unsupported here\n";

const char *icsv_usage(void)
{
    return usage_text;
}

#define UNSET_WARMUP G_MININT /* -w not given: the mode's default */

/* What GOption fills: strings for everything with units or names, checked afterwards. */
typedef struct raw_opts {
    char *b, *e, *i, *chunk, *dtype, *redop, *op, *kernel, *json, *gemm_dtype, *shapes, *groups,
        *streams;
    gint64 f;
    int n, w, c, g, ctas, unroll, slices;
    gboolean graph, help, version;
} raw_opts;

static void raw_defaults(raw_opts *r)
{
    memset(r, 0, sizeof *r);
    r->f = 1;
    r->n = ICSV_DEFAULT_ITERS;
    r->w = UNSET_WARMUP;
    r->c = 1;
    r->ctas = -1; /* unset: ICSV_DEFAULT_CTAS, or one per SM for p2p */
    r->unroll = ICSV_DEFAULT_UNROLL;
    r->slices = ICSV_DEFAULT_SLICES;
}

static void raw_free(raw_opts *r)
{
    char **strs[] = {&r->b,      &r->e,      &r->i,      &r->chunk, &r->dtype,
                     &r->redop,  &r->op,     &r->kernel, &r->json,  &r->gemm_dtype,
                     &r->shapes, &r->groups, &r->streams};
    for (size_t k = 0; k < G_N_ELEMENTS(strs); k++)
        g_clear_pointer(strs[k], g_free);
}

static bool run_goption(int *argc, char ***argv, raw_opts *r, GError **err)
{
    const GOptionEntry entries[] = {
        {"minbytes", 'b', 0, G_OPTION_ARG_STRING, &r->b, "first size", "N"},
        {"maxbytes", 'e', 0, G_OPTION_ARG_STRING, &r->e, "last size", "N"},
        {"stepbytes", 'i', 0, G_OPTION_ARG_STRING, &r->i, "size increment", "N"},
        {"stepfactor", 'f', 0, G_OPTION_ARG_INT64, &r->f, "size factor", "F"},
        {"iters", 'n', 0, G_OPTION_ARG_INT, &r->n, "timed iterations", "N"},
        {"warmup_iters", 'w', 0, G_OPTION_ARG_INT, &r->w, "warmup iterations", "N"},
        {"check", 'c', 0, G_OPTION_ARG_INT, &r->c, "check results", "0|1"},
        {"datatype", 'd', 0, G_OPTION_ARG_STRING, &r->dtype, "data type", "T"},
        {"redop", 'o', 0, G_OPTION_ARG_STRING, &r->redop, "reduction", "sum"},
        {"gpus", 'g', 0, G_OPTION_ARG_INT, &r->g, "GPUs", "N"},
        {"op", 0, 0, G_OPTION_ARG_STRING, &r->op, "collective", "OP"},
        {"kernel", 0, 0, G_OPTION_ARG_STRING, &r->kernel, "kernel", "K"},
        {"ctas", 0, 0, G_OPTION_ARG_INT, &r->ctas, "CTAs", "N"},
        {"unroll", 0, 0, G_OPTION_ARG_INT, &r->unroll, "unroll", "N"},
        {"chunk", 0, 0, G_OPTION_ARG_STRING, &r->chunk, "chunk bytes", "N"},
        {"slices", 0, 0, G_OPTION_ARG_INT, &r->slices, "slices per chunk", "N"},
        {"dtype", 0, 0, G_OPTION_ARG_STRING, &r->gemm_dtype, "GEMM types", "T"},
        {"shapes", 0, 0, G_OPTION_ARG_STRING, &r->shapes, "GEMM shapes", "LIST"},
        {"graph", 0, 0, G_OPTION_ARG_NONE, &r->graph, "time a CUDA graph", NULL},
        {"groups", 0, 0, G_OPTION_ARG_STRING, &r->groups, "GEMMs per shape", "G"},
        {"streams", 0, 0, G_OPTION_ARG_STRING, &r->streams, "streams of a group", "S"},
        {"json", 0, 0, G_OPTION_ARG_FILENAME, &r->json, "JSON output", "FILE"},
        {"help", 'h', 0, G_OPTION_ARG_NONE, &r->help, "help", NULL},
        {"version", 'V', 0, G_OPTION_ARG_NONE, &r->version, "version", NULL},
        {NULL, 0, 0, 0, NULL, NULL, NULL},
    };
    GOptionContext *ctx = g_option_context_new("MODE [OP]");
    g_option_context_set_help_enabled(ctx, FALSE);
    g_option_context_add_main_entries(ctx, entries, NULL);
    GError *gerr = NULL;
    bool ok = g_option_context_parse(ctx, argc, argv, &gerr);
    g_option_context_free(ctx);
    if (!ok) { /* GOption's own errors carry its domain; ours are all ICSV_ERROR_INPUT */
        g_set_error_literal(err, ICSV_ERROR, ICSV_ERROR_INPUT, gerr->message);
        g_error_free(gerr);
    }
    return ok;
}

static bool fail(GError **err, const char *fmt, ...) G_GNUC_PRINTF(2, 3);

static bool fail(GError **err, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *msg = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    g_set_error_literal(err, ICSV_ERROR, ICSV_ERROR_INPUT, msg);
    g_free(msg);
    return false;
}

/* MODE and OP from the positionals left after GOption. */
static bool parse_positionals(int argc, char **argv, const raw_opts *r, icsv_args *a, GError **err)
{
    if (argc < 2)
        return fail(err, "expected a mode: p2p, collective, nvls or compute (see --help)");
    const char *mode = argv[1], *op = argc > 2 ? argv[2] : NULL;
    if (argc > 3)
        return fail(err, "unexpected argument '%s'", argv[3]);
    if (strcmp(mode, "p2p") == 0 || strcmp(mode, "nvls") == 0 || strcmp(mode, "compute") == 0) {
        a->mode = mode[0] == 'p'   ? ICSV_MODE_P2P
                  : mode[0] == 'n' ? ICSV_MODE_NVLS
                                   : ICSV_MODE_COMPUTE;
        if (op || r->op)
            return fail(err, "%s: takes no collective, got '%s'", mode, op ? op : r->op);
        a->op = ICSV_OP_ALL_REDUCE;
        return true;
    }
    if (strcmp(mode, "collective") != 0)
        return fail(err, "unknown mode '%s': expected p2p, collective, nvls or compute", mode);
    a->mode = ICSV_MODE_COLLECTIVE;
    if (op && r->op && strcmp(op, r->op) != 0)
        return fail(err, "collective: '%s' and --op %s disagree", op, r->op);
    const char *name = op ? op : r->op;
    if (!name)
        return fail(err, "collective: expected OP (all_reduce, all_gather, reduce_scatter, "
                         "alltoall, sendrecv)");
    if (!icsv_op_parse(name, &a->op))
        return fail(err,
                    "collective: unknown collective '%s' (expected all_reduce, all_gather, "
                    "reduce_scatter, alltoall, sendrecv; the reduction is -o/--redop)",
                    name);
    if (a->op == ICSV_OP_BROADCAST || a->op == ICSV_OP_REDUCE)
        return fail(err,
                    "collective %s: not implemented (implemented: all_reduce, all_gather, "
                    "reduce_scatter, alltoall, sendrecv)",
                    icsv_op_name(a->op));
    return true;
}

static bool parse_sizes(const raw_opts *r, icsv_args *a, GError **err)
{
    uint64_t def = a->mode == ICSV_MODE_P2P ? ICSV_DEFAULT_P2P_BYTES : ICSV_DEFAULT_BYTES;
    a->min_bytes = a->max_bytes = def;
    a->step_bytes = ICSV_DEFAULT_STEP;
    a->params.chunk_bytes = ICSV_DEFAULT_CHUNK;
    if ((r->b && !icsv_parse_size("-b", r->b, &a->min_bytes, err)) ||
        (r->e && !icsv_parse_size("-e", r->e, &a->max_bytes, err)) ||
        (r->i && !icsv_parse_size("-i", r->i, &a->step_bytes, err)) ||
        (r->chunk && !icsv_parse_size("--chunk", r->chunk, &a->params.chunk_bytes, err)))
        return false;
    if (r->b && !r->e && a->min_bytes > def) /* nccl-tests would refuse; we time that size */
        a->max_bytes = a->min_bytes;
    if (a->mode == ICSV_MODE_P2P)
        a->max_bytes = a->min_bytes;
    if (r->f < 0)
        return fail(err, "-f: expected a factor >= 0, got %" G_GINT64_FORMAT, r->f);
    a->step_factor = (uint64_t)r->f;
    size_t n;
    g_autofree uint64_t *sizes =
        icsv_plan_sizes(a->min_bytes, a->max_bytes, a->step_factor, a->step_bytes, &n, err);
    if (!sizes)
        return false;
    if (a->mode == ICSV_MODE_P2P && a->min_bytes < 16)
        return fail(err, "p2p: -b: expected at least 16 bytes, got %" G_GUINT64_FORMAT,
                    a->min_bytes);
    return true;
}

static bool is_pow2_le8(int v)
{
    return v == 1 || v == 2 || v == 4 || v == 8;
}

/* -n and -w, for every mode; -w's default is the mode's. */
static bool check_iters(const raw_opts *r, icsv_args *a, GError **err)
{
    if (r->n < 1)
        return fail(err, "-n: expected iterations >= 1, got %d", r->n);
    if (r->w != UNSET_WARMUP && r->w < 0)
        return fail(err, "-w: expected warmup iterations >= 0, got %d", r->w);
    a->iters = r->n;
    a->warmup = r->w != UNSET_WARMUP           ? r->w
                : a->mode == ICSV_MODE_COMPUTE ? ICSV_DEFAULT_COMPUTE_WARMUP
                                               : ICSV_DEFAULT_WARMUP;
    return true;
}

static bool check_ranges(const raw_opts *r, icsv_args *a, GError **err)
{
    if (!check_iters(r, a, err))
        return false;
    if (r->c != 0 && r->c != 1)
        return fail(err, "-c: expected 0 or 1, got %d", r->c);
    if (r->g < 0 || r->g > ICSV_MAX_GPUS)
        return fail(err, "-g: expected 1 to %d GPUs, got %d", ICSV_MAX_GPUS, r->g);
    if (r->ctas != -1 && (r->ctas < 1 || r->ctas > ICSV_MAX_CTAS))
        return fail(err, "--ctas: expected 1 to %d, got %d", ICSV_MAX_CTAS, r->ctas);
    if (!is_pow2_le8(r->unroll))
        return fail(err, "--unroll: expected 1, 2, 4 or 8, got %d", r->unroll);
    if (r->slices < 1 || r->slices > ICSV_MAX_SLICES)
        return fail(err, "--slices: expected 1 to %d, got %d", ICSV_MAX_SLICES, r->slices);
    uint64_t chunk = a->params.chunk_bytes, quantum = 16u * (uint64_t)r->slices;
    if (chunk == 0 || chunk % quantum != 0 || chunk > ICSV_MAX_CHUNK)
        return fail(err,
                    "--chunk: expected a multiple of 16 x slices = %" G_GUINT64_FORMAT
                    " bytes, at most 64M, got %" G_GUINT64_FORMAT,
                    quantum, chunk);
    a->check = r->c == 1;
    a->ngpus = r->g;
    a->params.ctas = r->ctas != -1 ? r->ctas : a->mode == ICSV_MODE_P2P ? 0 : ICSV_DEFAULT_CTAS;
    a->params.unroll = r->unroll;
    a->params.slices = r->slices;
    return true;
}

/* Which kernels each mode can run, and the data types they reduce. */
static bool check_kernel(const raw_opts *r, icsv_args *a, GError **err)
{
    a->kernel = a->mode == ICSV_MODE_NVLS ? ICSV_KERNEL_NVLS : ICSV_KERNEL_ICSIM;
    if (r->kernel && !icsv_kernel_parse(r->kernel, &a->kernel))
        return fail(err, "--kernel: expected icsim, nccl, all, ce or nvls, got '%s'", r->kernel);
    icsv_kernel k = a->kernel;
    if (a->mode == ICSV_MODE_P2P && k != ICSV_KERNEL_ICSIM && k != ICSV_KERNEL_CE)
        return fail(err,
                    "p2p: --kernel: expected icsim (SM copies) or ce (copy engines), "
                    "got '%s'",
                    icsv_kernel_name(k));
    if (a->mode != ICSV_MODE_P2P && k == ICSV_KERNEL_CE)
        return fail(err, "--kernel ce: copy engines only run p2p");
    if (a->mode == ICSV_MODE_NVLS && k == ICSV_KERNEL_ICSIM)
        return fail(err, "nvls: --kernel: expected nvls, nccl or all, got 'icsim'");
    if (k == ICSV_KERNEL_NVLS && a->op != ICSV_OP_ALL_REDUCE)
        return fail(err, "--kernel nvls: only all_reduce, got %s", icsv_op_name(a->op));
    if (k == ICSV_KERNEL_NVLS)
        a->mode = ICSV_MODE_NVLS;
    a->dtype = ICSV_FLOAT;
    if (r->dtype && !icsv_dtype_parse(r->dtype, &a->dtype))
        return fail(err, "-d: expected float or bfloat16, got '%s'", r->dtype);
    if (a->mode == ICSV_MODE_NVLS && a->dtype != ICSV_FLOAT)
        return fail(err, "nvls: -d: only float is implemented, got %s", r->dtype);
    if (r->redop && strcmp(r->redop, "sum") != 0)
        return fail(err, "-o: only sum is implemented, got '%s'", r->redop);
    if (r->gemm_dtype)
        return fail(err, "--dtype: only compute takes it (a collective's type is -d), got '%s'",
                    r->gemm_dtype);
    if (r->shapes || r->graph || r->groups || r->streams)
        return fail(err, "%s: only compute takes it",
                    r->shapes   ? "--shapes"
                    : r->graph  ? "--graph"
                    : r->groups ? "--groups"
                                : "--streams");
    return true;
}

/* compute's flags: --dtype, -n, -w, -g 1, --json. The other modes' are refused, not ignored,
 * so that nobody reads a table as measured with a flag that did nothing. An int flag given at
 * its default value cannot be told from an absent one, and passes. */
static bool refuse_other_flags(const raw_opts *r, GError **err)
{
    const struct {
        bool given;
        const char *flag;
    } other[] = {
        {r->b != NULL, "-b"},
        {r->e != NULL, "-e"},
        {r->i != NULL, "-i"},
        {r->f != 1, "-f"},
        {r->c != 1, "-c"},
        {r->dtype != NULL, "-d"},
        {r->redop != NULL, "-o"},
        {r->kernel != NULL, "--kernel"},
        {r->ctas != -1, "--ctas"},
        {r->unroll != ICSV_DEFAULT_UNROLL, "--unroll"},
        {r->chunk != NULL, "--chunk"},
        {r->slices != ICSV_DEFAULT_SLICES, "--slices"},
    };
    for (size_t k = 0; k < G_N_ELEMENTS(other); k++)
        if (other[k].given)
            return fail(err,
                        "compute: %s does not apply (compute takes --dtype, --shapes, --groups, "
                        "--streams, --graph, -n, -w, --json)",
                        other[k].flag);
    return true;
}

/* One dimension of a --shapes entry: digits only, 1 .. ICSV_COMPUTE_DIM_MAX. */
static bool parse_dim(const char *entry, const char *s, int64_t *out, GError **err)
{
    guint64 v = 0;
    if (!*s || !g_ascii_string_to_unsigned(s, 10, 1, ICSV_COMPUTE_DIM_MAX, &v, NULL))
        return fail(err, "--shapes: '%s': expected MxNxK, each 1 to %d, got '%s'", entry,
                    ICSV_COMPUTE_DIM_MAX, s);
    *out = (int64_t)v;
    return true;
}

/* One MxNxK. K and one of M, N must be multiples of ICSV_COMPUTE_LT_ALIGN: the layouts
 * cuBLASLt's FP8 kernels take (icsv_gemm_lt_dims), for every type alike. */
static bool parse_shape(const char *entry, icsv_gemm_shape *out, GError **err)
{
    g_auto(GStrv) d = g_strsplit(entry, "x", 0);
    if (g_strv_length(d) != 3)
        return fail(err, "--shapes: '%s': expected MxNxK, e.g. 8192x8192x4096", entry);
    if (!parse_dim(entry, d[0], &out->m, err) || !parse_dim(entry, d[1], &out->n, err) ||
        !parse_dim(entry, d[2], &out->k, err))
        return false;
    if (out->k % ICSV_COMPUTE_LT_ALIGN != 0 ||
        (out->m % ICSV_COMPUTE_LT_ALIGN != 0 && out->n % ICSV_COMPUTE_LT_ALIGN != 0))
        return fail(err,
                    "--shapes: '%s': K and one of M, N must be multiples of %d (cuBLASLt's FP8 "
                    "layouts)",
                    entry, ICSV_COMPUTE_LT_ALIGN);
    return true;
}

static bool parse_shapes(const char *list, icsv_args *a, GError **err)
{
    g_auto(GStrv) e = g_strsplit(list, ",", 0);
    guint n = g_strv_length(e);
    if (n == 0 || n > ICSV_COMPUTE_SHAPES_MAX)
        return fail(err, "--shapes: expected 1 to %d shapes MxNxK,MxNxK,..., got %u",
                    ICSV_COMPUTE_SHAPES_MAX, n);
    a->shapes = g_new0(icsv_gemm_shape, n);
    a->n_shapes = n;
    for (guint i = 0; i < n; i++)
        if (!parse_shape(e[i], &a->shapes[i], err))
            return false;
    return true;
}

/* An integer flag's value in lo .. hi, or false having said so. */
static bool parse_count(const char *flag, const char *text, int lo, int hi, const char *what,
                        int *out, GError **err)
{
    gint64 v = 0;
    if (!g_ascii_string_to_signed(text, 10, lo, hi, &v, NULL))
        return fail(err, "%s: expected %d to %d %s, got '%s'", flag, lo, hi, what, text);
    *out = (int)v;
    return true;
}

/* --groups and --streams: a grouped GEMM is a user's sweep of one effect, so --groups needs
 * --shapes; --streams means something only for a group of 2 or more. A graph holds at most
 * ICSV_COMPUTE_GRAPH_GEMMS_MAX GEMMs (-n x G). */
static bool parse_groups(const raw_opts *r, icsv_args *a, GError **err)
{
    a->groups = 1;
    a->streams = 1;
    if (!r->groups && !r->streams)
        return true;
    if (!r->groups)
        return fail(err, "--streams: only with --groups (the streams a group's GEMMs go to)");
    int g = 0, st = ICSV_COMPUTE_STREAMS_DEFAULT;
    if (!parse_count("--groups", r->groups, 1, ICSV_COMPUTE_GROUPS_MAX, "GEMMs", &g, err))
        return false;
    if (!r->shapes)
        return fail(err, "--groups: only with --shapes (the shape each of the G GEMMs has)");
    if (r->streams && g == 1)
        return fail(err, "--streams: only with --groups 2 or more (one GEMM runs on one stream)");
    if (r->streams &&
        !parse_count("--streams", r->streams, 1, ICSV_COMPUTE_STREAMS_MAX, "streams", &st, err))
        return false;
    if (r->graph && (int64_t)r->n * g > ICSV_COMPUTE_GRAPH_GEMMS_MAX)
        return fail(err,
                    "--graph: -n x --groups: expected at most %d GEMMs in one graph, got %d x %d",
                    ICSV_COMPUTE_GRAPH_GEMMS_MAX, r->n, g);
    a->groups = g;
    a->streams = g > 1 ? st : 1;
    return true;
}

static bool parse_compute(const raw_opts *r, icsv_args *a, GError **err)
{
    if (!refuse_other_flags(r, err) || !check_iters(r, a, err))
        return false;
    if (r->shapes && !parse_shapes(r->shapes, a, err))
        return false;
    if (!parse_groups(r, a, err))
        return false;
    a->graph = r->graph;
    if (a->graph && a->iters > ICSV_COMPUTE_GRAPH_ITERS_MAX)
        return fail(err, "--graph: -n: expected at most %d calls in one graph, got %d",
                    ICSV_COMPUTE_GRAPH_ITERS_MAX, a->iters);
    if (r->g != 0 && r->g != 1)
        return fail(err,
                    "compute: -g: measures one GPU, the first visible (pick it with "
                    "CUDA_VISIBLE_DEVICES), got %d",
                    r->g);
    a->ngpus = 1;
    a->gemm_dtypes = ICSV_GEMM_ALL;
    a->gemm_dtypes_all = !r->gemm_dtype || strcmp(r->gemm_dtype, "all") == 0;
    if (a->gemm_dtypes_all)
        return true;
    icsv_gemm_dtype t;
    if (!icsv_gemm_dtype_parse(r->gemm_dtype, &t))
        return fail(err, "--dtype: expected bf16, fp16, fp8 or all, got '%s'", r->gemm_dtype);
    a->gemm_dtypes = 1u << t;
    return true;
}

bool icsv_args_parse(int argc, char **argv, icsv_args *out, GError **err)
{
    memset(out, 0, sizeof *out);
    raw_opts r;
    raw_defaults(&r);
    char **copy = g_new0(char *, argc + 1); /* GOption edits the vector it parses */
    for (int i = 0; i < argc; i++)
        copy[i] = argv[i];
    int n = argc;
    char **v = copy;
    bool ok = run_goption(&n, &v, &r, err);
    out->help = r.help;
    out->version = r.version;
    if (ok && !out->help && !out->version) {
        ok = parse_positionals(n, v, &r, out, err);
        if (ok && out->mode == ICSV_MODE_COMPUTE)
            ok = parse_compute(&r, out, err);
        else if (ok)
            ok = parse_sizes(&r, out, err) && check_ranges(&r, out, err) &&
                 check_kernel(&r, out, err);
    }
    if (ok) {
        out->json_path = g_steal_pointer(&r.json);
        out->command = icsv_join_argv(argc, argv);
    }
    raw_free(&r);
    g_free(v);
    if (!ok)
        icsv_args_clear(out);
    return ok;
}

void icsv_args_clear(icsv_args *a)
{
    g_clear_pointer(&a->json_path, g_free);
    g_clear_pointer(&a->command, g_free);
    g_clear_pointer(&a->shapes, g_free);
    a->n_shapes = 0;
}

char *icsv_join_argv(int argc, char *const *argv)
{
    GString *s = g_string_new(NULL);
    for (int i = 0; i < argc; i++) {
        if (i)
            g_string_append_c(s, ' ');
        bool plain = argv[i][0] && !strpbrk(argv[i], " \t\n'\"\\$`*?;&|<>()");
        if (plain) {
            g_string_append(s, argv[i]);
        } else {
            char *q = g_shell_quote(argv[i]);
            g_string_append(s, q);
            g_free(q);
        }
    }
    return g_string_free(s, FALSE);
}
