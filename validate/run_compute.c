/* run_compute.c: the compute mode: GEMMs and HBM copies on GPU 0, printed row by row and written
 * as the JSON `icsim calibrate` fits the GPU type's compute model to (docs/validate.md).
 * Invariant: a GEMM type the GPU cannot run is refused (--dtype T) or left out (all) before
 * anything is timed. */
#include "format.h"
#include "gpu.h"
#include "json_out.h"
#include "plan_compute.h"
#include "run.h"

#include <inttypes.h>
#include <stdio.h>

static void emit(GString *s)
{
    fputs(s->str, stdout);
    fflush(stdout); /* the large shapes take seconds: show each row as it comes */
    g_string_truncate(s, 0);
}

/* The types asked for that the GPU has tensor cores for, into *mask. False, having said why, when
 * one asked for by name is not among them; with "all" the missing ones become notes. */
static bool pick_dtypes(const icsv_args *a, const icsv_compute_hw *hw, unsigned *mask,
                        GString *notes)
{
    int sm = 10 * hw->cc_major + hw->cc_minor;
    *mask = 0;
    for (int t = 0; t < ICSV_GEMM_DTYPE_COUNT; t++) {
        int need = icsv_gemm_dtype_min_sm((icsv_gemm_dtype)t);
        const char *name = icsv_gemm_dtype_name((icsv_gemm_dtype)t);
        if (!(a->gemm_dtypes & (1u << t)))
            continue;
        if (sm >= need) {
            *mask |= 1u << t;
        } else if (a->gemm_dtypes_all) {
            g_string_append_printf(notes,
                                   "# %s: left out: sm_%d has no %s tensor cores (sm_%d or "
                                   "newer)\n",
                                   name, sm, name, need);
        } else {
            fprintf(stderr,
                    "icsim-validate: compute: --dtype %s: GPU 0 (%s, sm_%d) has no %s tensor "
                    "cores; %s needs sm_%d or newer\n",
                    name, hw->gpu, sm, name, name, need);
            return false;
        }
    }
    return true;
}

/* Says which copy sizes the free memory left out, if any. */
static void note_copies(GString *notes, const icsv_compute_hw *hw, const icsv_args *a)
{
    if (a->n_shapes > 0) {
        g_string_append(notes, "# --shapes: these GEMMs only, no copies\n");
        return;
    }
    if (icsv_compute_copy_fits(ICSV_COMPUTE_COPY_MAX, hw->free_bytes))
        return;
    g_string_append_printf(notes,
                           "# copy: sizes whose two buffers do not fit in %.2f GB free are left "
                           "out\n",
                           (double)hw->free_bytes / 1e9);
}

static bool write_json(const icsv_args *a, const icsv_compute_hw *hw, const icsv_compute_row *rows,
                       size_t n)
{
    icsv_compute_report rep = {
        .command = a->command, .hw = hw, .rows = rows, .n_rows = n, .graph = a->graph};
    return icsv_json_emit(a->json_path, icsv_json_compute_text(&rep));
}

/* False, having said which, when a --shapes GEMM's operands do not fit in the free memory (less
 * the headroom): a bad shape for this GPU, found before anything is timed. */
static bool shapes_fit(const icsv_compute_row *rows, size_t n, const icsv_compute_hw *hw)
{
    for (size_t i = 0; i < n; i++) {
        uint64_t need = icsv_compute_gemm_bytes(&rows[i]);
        if (rows[i].kernel != ICSV_COMPUTE_GEMM || icsv_compute_gemm_fits(&rows[i], hw->free_bytes))
            continue;
        fprintf(stderr,
                "icsim-validate: compute: --shapes %" PRId64 "x%" PRId64 "x%" PRId64
                " (%s, %d GEMMs): their A, B and C need %.2f GB, GPU 0 has %.2f GB free\n",
                rows[i].m, rows[i].n, rows[i].k, icsv_gemm_dtype_name(rows[i].dtype),
                icsv_compute_row_gemms(&rows[i]), (double)need / 1e9, (double)hw->free_bytes / 1e9);
        return false;
    }
    return true;
}

static int measure(const icsv_args *a, icsv_compute *c, const icsv_compute_hw *hw, unsigned mask,
                   GString *s)
{
    size_t n = 0;
    icsv_compute_row *rows = icsv_plan_compute(mask, a->shapes, a->n_shapes, hw->free_bytes, &n);
    icsv_compute_set_groups(rows, n, a->groups, a->streams);
    if (!shapes_fit(rows, n, hw)) {
        g_free(rows);
        return ICSV_EXIT_INPUT;
    }
    icsv_format_compute_columns(s);
    emit(s);
    for (size_t i = 0; i < n; i++) {
        rows[i].time_us = icsv_compute_time_us(c, &rows[i], a->warmup, a->iters, a->graph);
        char *line = icsv_format_compute_row(&rows[i]);
        g_string_append_printf(s, "%s\n", line);
        g_free(line);
        emit(s);
    }
    int rc = a->json_path && !write_json(a, hw, rows, n) ? 1 : 0;
    g_free(rows);
    return rc;
}

int icsv_run_compute(const icsv_args *a)
{
    icsv_gpus *g = icsv_gpus_open(1);
    if (!g)
        return ICSV_EXIT_INPUT;
    icsv_compute *c = icsv_compute_new(g);
    icsv_compute_hw hw;
    icsv_compute_describe(c, &hw);
    GString *notes = g_string_new(NULL);
    unsigned mask = 0;
    int rc = ICSV_EXIT_INPUT;
    if (pick_dtypes(a, &hw, &mask, notes)) {
        GString *s = g_string_new(NULL);
        icsv_format_compute_prologue(s, &hw, a->warmup, a->iters, a->graph);
        g_string_append(s, notes->str);
        note_copies(s, &hw, a);
        if (a->groups > 1)
            icsv_format_compute_groups(s, a->groups, a->streams);
        rc = measure(a, c, &hw, mask, s);
        g_string_free(s, TRUE);
    }
    g_string_free(notes, TRUE);
    icsv_compute_free(c);
    icsv_gpus_free(g);
    return rc;
}
