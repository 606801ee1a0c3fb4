/* plan_compute.c: the compute mode's GEMM shapes and copy sizes, and their rates.
 * Invariant: every GEMM row has k and one of m, n a multiple of ICSV_COMPUTE_LT_ALIGN, so every
 * row is a layout cuBLASLt's FP8 kernels take. */
#include "plan_compute.h"

#include <glib.h>

static const int64_t square_dims[] = {256, 512, 1024, 2048, 4096, 8192, 16384};
static const int64_t sweep_ks[] = {128, 256, 512, 1024, 2048, 4096, 8192, 16384};
static const int64_t skinny_ms[] = {1, 8, 64, 512};
static const int64_t wave_ns[] = {128 * 11, 128 * 11 + 1, 128 * 22, 128 * 22 + 1};
#define SWEEP_MN  8192
#define SKINNY_NK 8192
#define WAVE_M    (128 * 12)
#define WAVE_K    8192

/* O(rows) scan: the plan is at most 3 x ICSV_COMPUTE_SHAPES_MAX rows. */
static void add_gemm(GArray *rows, icsv_gemm_dtype t, int64_t m, int64_t n, int64_t k)
{
    for (guint i = 0; i < rows->len; i++) {
        const icsv_compute_row *r = &g_array_index(rows, icsv_compute_row, i);
        if (r->kernel == ICSV_COMPUTE_GEMM && r->dtype == t && r->m == m && r->n == n && r->k == k)
            return;
    }
    icsv_compute_row r = {.kernel = ICSV_COMPUTE_GEMM, .dtype = t, .m = m, .n = n, .k = k};
    g_array_append_val(rows, r);
}

static void add_gemms(GArray *rows, icsv_gemm_dtype t)
{
    for (size_t i = 0; i < G_N_ELEMENTS(square_dims); i++)
        add_gemm(rows, t, square_dims[i], square_dims[i], square_dims[i]);
    for (size_t i = 0; i < G_N_ELEMENTS(sweep_ks); i++)
        add_gemm(rows, t, SWEEP_MN, SWEEP_MN, sweep_ks[i]);
    for (size_t i = 0; i < G_N_ELEMENTS(skinny_ms); i++)
        add_gemm(rows, t, skinny_ms[i], SKINNY_NK, SKINNY_NK);
    for (size_t i = 0; i < G_N_ELEMENTS(wave_ns); i++)
        add_gemm(rows, t, WAVE_M, wave_ns[i], WAVE_K);
}

bool icsv_compute_copy_fits(uint64_t bytes, uint64_t free_bytes)
{
    return free_bytes >= ICSV_COMPUTE_HEADROOM && bytes <= (free_bytes - ICSV_COMPUTE_HEADROOM) / 2;
}

void icsv_compute_set_groups(icsv_compute_row *rows, size_t n, int groups, int streams)
{
    for (size_t i = 0; i < n && groups > 1; i++) {
        if (rows[i].kernel != ICSV_COMPUTE_GEMM)
            continue;
        rows[i].groups = groups;
        rows[i].streams = streams;
    }
}

int icsv_compute_row_gemms(const icsv_compute_row *r)
{
    return r->groups > 1 ? r->groups : 1;
}

uint64_t icsv_compute_gemm_bytes(const icsv_compute_row *r)
{
    uint64_t in = r->dtype == ICSV_GEMM_FP8 ? 1 : 2, m = (uint64_t)r->m, n = (uint64_t)r->n,
             k = (uint64_t)r->k;
    uint64_t g = (uint64_t)icsv_compute_row_gemms(r);
    uint64_t streams = g > 1 ? MIN(g, (uint64_t)MAX(r->streams, 1)) : 0;
    return g * (in * (m * k + n * k) + 2 * m * n) + streams * ICSV_COMPUTE_WORKSPACE_BYTES;
}

bool icsv_compute_gemm_fits(const icsv_compute_row *r, uint64_t free_bytes)
{
    return free_bytes >= ICSV_COMPUTE_HEADROOM &&
           icsv_compute_gemm_bytes(r) <= free_bytes - ICSV_COMPUTE_HEADROOM;
}

icsv_compute_row *icsv_plan_compute(unsigned dtypes, const icsv_gemm_shape *shapes, size_t n_shapes,
                                    uint64_t free_bytes, size_t *n)
{
    GArray *rows = g_array_new(FALSE, TRUE, sizeof(icsv_compute_row));
    for (int t = 0; t < ICSV_GEMM_DTYPE_COUNT; t++) {
        if (!(dtypes & (1u << t)))
            continue;
        if (n_shapes == 0)
            add_gemms(rows, (icsv_gemm_dtype)t);
        for (size_t i = 0; i < n_shapes; i++)
            add_gemm(rows, (icsv_gemm_dtype)t, shapes[i].m, shapes[i].n, shapes[i].k);
    }
    for (uint64_t b = ICSV_COMPUTE_COPY_MIN; n_shapes == 0 && b <= ICSV_COMPUTE_COPY_MAX; b *= 4) {
        if (!icsv_compute_copy_fits(b, free_bytes))
            break;
        icsv_compute_row r = {.kernel = ICSV_COMPUTE_COPY, .bytes = b};
        g_array_append_val(rows, r);
    }
    *n = rows->len;
    return (icsv_compute_row *)(void *)g_array_free(rows, FALSE);
}

int icsv_gemm_dtype_min_sm(icsv_gemm_dtype t)
{
    return t == ICSV_GEMM_FP8 ? 89 : t == ICSV_GEMM_BF16 ? 80 : 70;
}

void icsv_gemm_lt_dims(const icsv_compute_row *r, int64_t *lt_m, int64_t *lt_n)
{
    bool swap = r->m % ICSV_COMPUTE_LT_ALIGN != 0;
    *lt_m = swap ? r->n : r->m;
    *lt_n = swap ? r->m : r->n;
}

double icsv_compute_tflops(const icsv_compute_row *r)
{
    if (r->kernel != ICSV_COMPUTE_GEMM || r->time_us <= 0)
        return 0;
    return icsv_compute_row_gemms(r) * 2.0 * (double)r->m * (double)r->n * (double)r->k /
           (r->time_us * 1e6);
}

double icsv_compute_gbps(const icsv_compute_row *r)
{
    if (r->kernel != ICSV_COMPUTE_COPY || r->time_us <= 0)
        return 0;
    return 2.0 * (double)r->bytes / (r->time_us * 1e3);
}
