/* run_coll.c: a collective sweep, printed row by row as nccl-tests prints it, for our kernel,
 * NCCL, or both (then their busbw ratio), each kernel's rows also written as JSON.
 * Invariant: both kernels of --kernel all time the same sizes on the same GPUs. */
#include "format.h"
#include "gpu.h"
#include "json_out.h"
#include "plan.h"
#include "run.h"
#include "sysinfo.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

typedef struct run_ctx {
    const icsv_args *a;
    icsv_gpus *g;
    icsv_hw hw;
    char *host, *date;
    uint64_t *sizes;
    size_t n_sizes;
    uint64_t max_bytes; /* the largest size column: every buffer's size */
} run_ctx;

static void emit(GString *s)
{
    fputs(s->str, stdout);
    fflush(stdout); /* a sweep takes minutes: show each row as it comes */
    g_string_truncate(s, 0);
}

static void measure_row(const run_ctx *r, icsv_coll *c, uint64_t size, icsv_row *row)
{
    const icsv_args *a = r->a;
    *row = (icsv_row){.op = a->op, .dtype = a->dtype, .root = -1};
    icsv_plan_counts(a->op, a->dtype, r->hw.ngpus, size, &row->counts);
    for (int ip = 0; ip < 2; ip++) {
        icsv_place *p = ip ? &row->ip : &row->oop;
        double t = icsv_coll_time_us(c, &row->counts, ip, a->warmup, a->iters);
        icsv_place_set_time(p, t, row->counts.size_bytes, a->op, r->hw.ngpus);
        p->wrong = a->check ? icsv_coll_check(c, &row->counts, ip) : ICSV_WRONG_NA;
    }
}

/* "out.json" -> "out.nccl.json": the second kernel of --kernel all gets its own file, so that
 * each file keeps the one-kernel schema of validate/data/nccl/. */
static char *json_path(const char *path, bool second, const char *kernel)
{
    if (!second)
        return g_strdup(path);
    if (g_str_has_suffix(path, ".json"))
        return g_strdup_printf("%.*s.%s.json", (int)strlen(path) - 5, path, kernel);
    return g_strdup_printf("%s.%s", path, kernel);
}

static bool write_json(const run_ctx *r, icsv_coll *c, const icsv_row *rows, bool second)
{
    icsv_coll_report rep = {
        .hostname = r->host,
        .date_iso = r->date,
        .hw = &r->hw,
        .nccl_version = strcmp(icsv_coll_kernel_name(c), "nccl") == 0 ? icsv_nccl_version() : NULL,
        .command = r->a->command,
        .op = r->a->op,
        .kernel = icsv_coll_kernel_name(c),
        .params = icsv_coll_params(c),
        .rows = rows,
        .n_rows = r->n_sizes,
    };
    char *path = json_path(r->a->json_path, second, rep.kernel);
    bool ok = icsv_json_emit(path, icsv_json_coll_text(&rep));
    g_free(path);
    return ok;
}

static void kernel_header(GString *s, icsv_coll *c)
{
    icsv_kernel_params p = icsv_coll_params(c);
    g_string_append_printf(s, "#\n# kernel: %s", icsv_coll_kernel_name(c));
    if (p.ctas)
        g_string_append_printf(s, "  ctas %d x %d threads", p.ctas, 512);
    if (p.unroll)
        g_string_append_printf(s, "  unroll %d", p.unroll);
    if (p.chunk_bytes)
        g_string_append_printf(s, "  chunk %" G_GUINT64_FORMAT " B in %d slices", p.chunk_bytes,
                               p.slices);
    g_string_append_c(s, '\n');
    icsv_format_columns(s);
}

/* One kernel over every size. Returns an exit status; *rows_out (g_free) gets the rows. */
static int sweep(const run_ctx *r, icsv_kernel k, bool second, icsv_row **rows_out)
{
    icsv_coll *c = icsv_coll_new(r->g, r->a->op, r->a->dtype, k, &r->a->params, r->max_bytes);
    if (!c)
        return ICSV_EXIT_SKIP;
    icsv_row *rows = g_new0(icsv_row, r->n_sizes);
    GString *s = g_string_new(NULL);
    kernel_header(s, c);
    emit(s);
    for (size_t i = 0; i < r->n_sizes; i++) {
        measure_row(r, c, r->sizes[i], &rows[i]);
        char *line = icsv_format_row(&rows[i]);
        g_string_append_printf(s, "%s\n", line);
        g_free(line);
        emit(s);
    }
    icsv_format_trailer(s, rows, r->n_sizes);
    emit(s);
    int rc = icsv_total_wrong(rows, r->n_sizes) ? 1 : 0;
    if (r->a->json_path && !write_json(r, c, rows, second))
        rc = 1;
    g_string_free(s, TRUE);
    *rows_out = rows;
    icsv_coll_free(c);
    return rc;
}

/* Every CTA of our kernels waits on its peers' CTAs: all must be resident at once. */
static bool ctas_fit(const run_ctx *r)
{
    if (r->a->kernel == ICSV_KERNEL_NCCL || r->a->params.ctas <= r->hw.sm_count)
        return true;
    fprintf(stderr,
            "icsim-validate: --ctas %d: GPU 0 has %d SMs, and every CTA must be resident at once "
            "(channels wait on each other)\n",
            r->a->params.ctas, r->hw.sm_count);
    return false;
}

static int run_kernels(run_ctx *r)
{
    const icsv_args *a = r->a;
    icsv_kernel ours = a->mode == ICSV_MODE_NVLS ? ICSV_KERNEL_NVLS : ICSV_KERNEL_ICSIM;
    icsv_row *rows_a = NULL, *rows_b = NULL;
    int rc = 0;
    if (a->kernel != ICSV_KERNEL_NCCL)
        rc = sweep(r, ours, false, &rows_a);
    if (a->kernel == ICSV_KERNEL_NCCL || a->kernel == ICSV_KERNEL_ALL) { /* even if ours skipped */
        int rc_b = sweep(r, ICSV_KERNEL_NCCL, a->kernel == ICSV_KERNEL_ALL, &rows_b);
        rc = rc ? rc : rc_b;
    }
    if (rows_a && rows_b) {
        GString *s = g_string_new(NULL);
        icsv_format_compare(s, ours == ICSV_KERNEL_NVLS ? "icsim-nvls" : "icsim", rows_a, "nccl",
                            rows_b, r->n_sizes);
        emit(s);
        g_string_free(s, TRUE);
    }
    g_free(rows_a);
    g_free(rows_b);
    return rc;
}

int icsv_run_collective(const icsv_args *a)
{
    run_ctx r = {.a = a};
    r.sizes = icsv_plan_sizes(a->min_bytes, a->max_bytes, a->step_factor, a->step_bytes, &r.n_sizes,
                              NULL); /* args checked it */
    r.g = icsv_gpus_open(a->ngpus);
    if (!r.g) {
        g_free(r.sizes);
        return ICSV_EXIT_INPUT;
    }
    icsv_gpus_describe(r.g, &r.hw);
    icsv_system_name(r.hw.system, sizeof r.hw.system);
    for (size_t i = 0; i < r.n_sizes; i++) {
        icsv_counts cnt;
        icsv_plan_counts(a->op, a->dtype, r.hw.ngpus, r.sizes[i], &cnt);
        r.max_bytes = cnt.size_bytes > r.max_bytes ? cnt.size_bytes : r.max_bytes;
    }
    r.host = icsv_host_name();
    r.date = icsv_date_iso(g_get_real_time() / G_USEC_PER_SEC);
    int rc = ICSV_EXIT_INPUT;
    if (ctas_fit(&r)) {
        GString *s = g_string_new(NULL);
        icsv_format_prologue(s, a, &r.hw, r.host, (int)getpid());
        emit(s);
        g_string_free(s, TRUE);
        rc = run_kernels(&r);
    }
    icsv_gpus_free(r.g);
    g_free(r.sizes);
    g_free(r.host);
    g_free(r.date);
    return rc;
}
