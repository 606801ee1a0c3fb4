/* Fitting a GPU type's compute parameters to timed kernels (compute_calib.h). The model is the
 * simulator's own (workload/compute.h: ics_compute_kernel), so what is fitted is exactly what
 * `icsim train` and `icsim infer` will charge. The fit: GSL's trust-region nonlinear least
 * squares (Levenberg-Marquardt) on r_i = w_i ln(model_i / measured_i), each parameter searched
 * through a logistic map onto its bounds (log scale for the efficiencies), the Jacobian by
 * differences of 0.1% in the search variable (the model's times are integer picoseconds). */
#include "calibrate/calib_internal.h"
#include "calibrate/compute_internal.h"
#include "workload/workload.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <gsl/gsl_blas.h>
#include <gsl/gsl_errno.h>
#include <gsl/gsl_matrix.h>
#include <gsl/gsl_multifit_nlinear.h>
#include <gsl/gsl_vector.h>

#define MOVES_MIN     1e-3 /* a parameter moving no time by 0.1% for a 20% change is idle */
#define REL_SIGMA_MAX 0.25 /* a value known no better than +-25% is not determined */
#define DIFF_STEP     1e-3
#define MAX_ITER      200
#define BOUND_U       7.0  /* a search variable past this sits within 0.1% of a bound */
#define MISS          20.0 /* the residual of a point the model cannot time (0 or not finite) */

static const ics_ccal_param_info params[ICS_CCAL_COUNT] = {
    {"gemm_efficiency", "", 0.05, 1}, {"gemm_efficiency_fp8", "", 0.05, 1},
    {"gemm_wave_us", "us", 0, 50},    {"memory_efficiency", "", 0.05, 1},
    {"launch_us", "us", 0, 50},
};

const ics_ccal_param_info *ics_ccal_param_info_of(ics_ccal_param p)
{
    return (unsigned)p < ICS_CCAL_COUNT ? &params[p] : NULL;
}

double ics_ccal_value(const ics_hw_compute *cp, ics_ccal_param p)
{
    switch (p) {
    case ICS_CCAL_GEMM_EFF:
        return cp->gemm_eff;
    case ICS_CCAL_GEMM_EFF_FP8:
        return cp->gemm_eff_fp8;
    case ICS_CCAL_WAVE_US:
        return (double)cp->gemm_wave_ps / ICS_PS_PER_US;
    case ICS_CCAL_MEM_EFF:
        return cp->mem_eff;
    case ICS_CCAL_LAUNCH_US:
        return (double)cp->launch_ps / ICS_PS_PER_US;
    default:
        return NAN;
    }
}

void ics_ccal__set(ics_hw_compute *cp, ics_ccal_param p, double v)
{
    switch (p) {
    case ICS_CCAL_GEMM_EFF:
        cp->gemm_eff = v;
        break;
    case ICS_CCAL_GEMM_EFF_FP8:
        cp->gemm_eff_fp8 = v;
        break;
    case ICS_CCAL_WAVE_US:
        cp->gemm_wave_ps = (ics_time)llround(v * ICS_PS_PER_US);
        break;
    case ICS_CCAL_MEM_EFF:
        cp->mem_eff = v;
        break;
    case ICS_CCAL_LAUNCH_US:
        cp->launch_ps = (ics_time)llround(v * ICS_PS_PER_US);
        break;
    default:
        break;
    }
}

double ics_ccal__model_us(const ics_ccal *c, const ics_hw_compute *cp, const ics_ccal_point *p)
{
    ics_hw_gpu_type g = *c->gpu;
    g.compute = *cp;
    /* the runner times short bursts, at the boost clock: the efficiencies are fitted there, and a
     * training step then runs them at the type's sustained share */
    g.compute.sustained = 1;
    ics_time t;
    if (p->gemm) {
        double m = p->m, n = p->n, k = p->k, in = p->dtype == ICS_DTYPE_FP8 ? 1 : 2;
        /* FP8 GEMMs write bf16, as Transformer Engine's do and the runner's */
        double bytes = (m * k + k * n) * in + m * n * 2;
        t = p->groups > 1
                ? ics_compute_grouped(&g, p->dtype, p->groups, p->streams, m, n, k, bytes)
                : ics_compute_kernel(&g, ICS_WORK_GEMM, p->dtype, 2 * m * n * k, bytes, m, n, k);
    } else { /* a copy reads and writes its bytes */
        t = ics_compute_kernel(&g, ICS_WORK_ELEMENTWISE, ICS_DTYPE_BF16, 0, 2.0 * p->bytes, 0, 0,
                               0);
    }
    /* a stream-timed call at its file's host floor says how fast the host issues calls, not
     * how fast the GPU runs them (compute_calib.h) */
    return fmax((double)t / ICS_PS_PER_US, p->floor_us);
}

/* ---- set-up ---- */

/* Each kind of kernel (a GEMM dtype, copies) and each decade of measured time weighs alike. */
static int kind_of(const ics_ccal_point *p)
{
    return p->gemm ? (int)p->dtype : ICS_DTYPE_COUNT;
}

static int decade_of(const ics_ccal_point *p)
{
    return (int)floor(log10(p->measured_us));
}

static void set_weights(ics_ccal *c)
{
    GHashTable *count = g_hash_table_new(g_direct_hash, g_direct_equal);
    for (int pass = 0; pass < 2; pass++)
        for (guint i = 0; i < c->points->len; i++) {
            ics_ccal_point *p = &g_array_index(c->points, ics_ccal_point, i);
            gpointer key = GINT_TO_POINTER(kind_of(p) * 1000 + decade_of(p) + 500);
            int n = GPOINTER_TO_INT(g_hash_table_lookup(count, key));
            if (pass == 0)
                g_hash_table_insert(count, key, GINT_TO_POINTER(n + 1));
            else
                p->weight = 1 / sqrt(n);
        }
    g_hash_table_destroy(count);
}

static void model_all(ics_ccal *c, const ics_hw_compute *cp, bool before)
{
    for (guint i = 0; i < c->points->len; i++) {
        ics_ccal_point *p = &g_array_index(c->points, ics_ccal_point, i);
        double t = ics_ccal__model_us(c, cp, p);
        p->after_us = t;
        if (before)
            p->before_us = t;
    }
}

/* The calibration of model_path with no points yet. */
static ics_ccal *ccal_open(const char *model_path, GError **error)
{
    ics_hw *hw = ics_hw_load(model_path, 0, error);
    if (!hw)
        return NULL;
    ics_ccal *c = g_new0(ics_ccal, 1);
    c->hw = hw;
    c->model_path = g_strdup(model_path);
    c->gpu = ics_hw_node_of(hw)->gpu_type;
    c->loaded = c->gpu->compute;
    c->points = g_array_new(FALSE, FALSE, sizeof(ics_ccal_point));
    c->files = g_ptr_array_new_with_free_func(g_free);
    return c;
}

/* The points read: weights, and the model's times as loaded. */
static ics_ccal *ccal_ready(ics_ccal *c)
{
    ics_ccal__set_floors(c);
    set_weights(c);
    model_all(c, &c->loaded, true);
    for (int p = 0; p < ICS_CCAL_COUNT; p++)
        c->res[p] = (ics_calib_param){.before = ics_ccal_value(&c->loaded, (ics_ccal_param)p)};
    for (int p = 0; p < ICS_CCAL_COUNT; p++)
        c->res[p].after = c->res[p].before;
    return c;
}

ics_ccal *ics_ccal_new(const char *model_path, int nfiles, char *const *files, GError **error)
{
    ics_ccal *c = ccal_open(model_path, error);
    for (int i = 0; c && i < nfiles; i++) {
        char *f = g_strdup(files[i]);
        g_ptr_array_add(c->files, f);
        if (!ics_ccal__read(c, f, NULL, 0, error)) {
            ics_ccal_free(c);
            return NULL;
        }
    }
    return c ? ccal_ready(c) : NULL;
}

ics_ccal *ics_ccal_new_text(const char *model_path, const char *name, const char *text, size_t len,
                            GError **error)
{
    ics_ccal *c = ccal_open(model_path, error);
    if (!c)
        return NULL;
    char *f = g_strdup(name);
    g_ptr_array_add(c->files, f);
    if (!ics_ccal__read(c, f, text, len, error)) {
        ics_ccal_free(c);
        return NULL;
    }
    return ccal_ready(c);
}

void ics_ccal_free(ics_ccal *c)
{
    if (!c)
        return;
    ics_hw_free(c->hw);
    g_free(c->model_path);
    g_array_free(c->points, TRUE);
    g_ptr_array_free(c->files, TRUE);
    g_free(c);
}

/* ---- the fit ---- */

typedef struct {
    ics_ccal *c;
    ics_hw_compute base; /* the values of the parameters not fitted */
    int n;
    ics_ccal_param idx[ICS_CCAL_COUNT];
} fit_ctx;

static bool log_scale(ics_ccal_param p)
{
    return params[p].lo > 0;
}

static double value_of(ics_ccal_param p, double u)
{
    double s = 1 / (1 + exp(-u)), lo = params[p].lo, hi = params[p].hi;
    return log_scale(p) ? exp(log(lo) + (log(hi) - log(lo)) * s) : lo + (hi - lo) * s;
}

static double search_of(ics_ccal_param p, double v)
{
    double lo = params[p].lo, hi = params[p].hi;
    double s = log_scale(p) ? (log(v) - log(lo)) / (log(hi) - log(lo)) : (v - lo) / (hi - lo);
    s = CLAMP(s, 1e-4, 1 - 1e-4);
    return log(s / (1 - s));
}

static ics_hw_compute values(const fit_ctx *f, const gsl_vector *u)
{
    ics_hw_compute cp = f->base;
    for (int j = 0; j < f->n; j++)
        ics_ccal__set(&cp, f->idx[j], value_of(f->idx[j], gsl_vector_get(u, j)));
    return cp;
}

static int fn_f(const gsl_vector *u, void *data, gsl_vector *r)
{
    fit_ctx *f = data;
    ics_hw_compute cp = values(f, u);
    for (guint i = 0; i < f->c->points->len; i++) {
        const ics_ccal_point *p = &g_array_index(f->c->points, ics_ccal_point, i);
        double e =
            p->held_out ? 0 : p->weight * log(ics_ccal__model_us(f->c, &cp, p) / p->measured_us);
        gsl_vector_set(r, i, isfinite(e) ? e : MISS); /* never a perfect fit */
    }
    return GSL_SUCCESS;
}

/* Does p move any point's time by MOVES_MIN for a 20% change (or +0.2 us from zero)? */
static bool moves(const ics_ccal *c, const ics_hw_compute *cp, ics_ccal_param p)
{
    double v = ics_ccal_value(cp, p);
    /* up, and down (a value at its upper bound cannot go up) */
    const double tries[2] = {MIN(params[p].hi, v > 0 ? v * 1.2 : 0.2), MAX(params[p].lo, v * 0.8)};
    for (int t = 0; t < 2; t++) {
        ics_hw_compute q = *cp;
        ics_ccal__set(&q, p, tries[t]);
        for (guint i = 0; i < c->points->len; i++) {
            const ics_ccal_point *pt = &g_array_index(c->points, ics_ccal_point, i);
            if (pt->held_out)
                continue;
            double a = ics_ccal__model_us(c, cp, pt), b = ics_ccal__model_us(c, &q, pt);
            if (fabs(b / a - 1) >= MOVES_MIN)
                return true;
        }
    }
    return false;
}

/* Relative standard errors of the fitted values, from the Jacobian at the solution. */
static void sigmas(const fit_ctx *f, gsl_multifit_nlinear_workspace *w, double *rel)
{
    gsl_matrix *J = gsl_multifit_nlinear_jac(w), *cov = gsl_matrix_alloc(f->n, f->n);
    gsl_vector *r = gsl_multifit_nlinear_residual(w), *u = gsl_multifit_nlinear_position(w);
    bool known = gsl_multifit_nlinear_covar(J, 1e-12, cov) == GSL_SUCCESS;
    double ssr;
    gsl_blas_ddot(r, r, &ssr);
    int dof = -f->n;
    for (guint i = 0; i < f->c->points->len; i++)
        dof += !g_array_index(f->c->points, ics_ccal_point, i).held_out;
    for (int j = 0; j < f->n; j++) {
        /* as many parameters as points: any values fit, none is known; no covariance (a
         * Jacobian of zeros): likewise */
        if (dof < 1 || !known) {
            rel[j] = INFINITY;
            continue;
        }
        ics_ccal_param p = f->idx[j];
        double uj = gsl_vector_get(u, j), v = value_of(p, uj);
        double dv = (value_of(p, uj + DIFF_STEP) - value_of(p, uj - DIFF_STEP)) / (2 * DIFF_STEP);
        double su = sqrt(fmax(gsl_matrix_get(cov, j, j), 0) * ssr / dof);
        rel[j] = v > 0 ? fabs(dv) * su / v : INFINITY;
        /* pinned at a bound the map is flat and the error looks 0: nothing is known */
        if (fabs(uj) > BOUND_U)
            rel[j] = INFINITY;
    }
    gsl_matrix_free(cov);
}

/* Fits the parameters in f->idx from their values in f->base; leaves the result in *out and
 * their relative errors in rel. */
static void solve(fit_ctx *f, ics_hw_compute *out, double *rel)
{
    int m = (int)f->c->points->len;
    if (f->n == 0 || m < f->n) {
        *out = f->base;
        for (int j = 0; j < f->n; j++)
            rel[j] = INFINITY;
        return;
    }
    gsl_multifit_nlinear_parameters fp = gsl_multifit_nlinear_default_parameters();
    fp.h_df = DIFF_STEP;
    gsl_multifit_nlinear_workspace *w =
        gsl_multifit_nlinear_alloc(gsl_multifit_nlinear_trust, &fp, (size_t)m, (size_t)f->n);
    gsl_multifit_nlinear_fdf fdf = {
        .f = fn_f, .df = NULL, .n = (size_t)m, .p = (size_t)f->n, .params = f};
    gsl_vector *u0 = gsl_vector_alloc((size_t)f->n);
    for (int j = 0; j < f->n; j++)
        gsl_vector_set(u0, j, search_of(f->idx[j], ics_ccal_value(&f->base, f->idx[j])));
    gsl_multifit_nlinear_init(u0, &fdf, w);
    int info;
    /* GSL's default handler aborts the process where its QR meets a Jacobian of rank 0 (every
     * parameter on a flat stretch of the roofline): the solver and the covariance return
     * instead, as the network fit's do (calib_fit.c) */
    gsl_error_handler_t *handler = gsl_set_error_handler_off();
    gsl_multifit_nlinear_driver(MAX_ITER, 1e-8, 1e-8, 1e-10, NULL, NULL, &info, w);
    *out = values(f, gsl_multifit_nlinear_position(w));
    sigmas(f, w, rel);
    gsl_set_error_handler(handler);
    gsl_vector_free(u0);
    gsl_multifit_nlinear_free(w);
}

/* The fit of the parameters the points move, those left not pinned down put back and the rest
 * fitted again; the result in c->res and the points' after_us. */
static void fit_now(ics_ccal *c)
{
    fit_ctx f = {.c = c, .base = c->loaded};
    for (int p = 0; p < ICS_CCAL_COUNT; p++) {
        ics_calib_param *r = &c->res[p];
        *r = (ics_calib_param){.before = ics_ccal_value(&c->loaded, (ics_ccal_param)p)};
        r->candidate = moves(c, &c->loaded, (ics_ccal_param)p);
        r->why = r->candidate ? NULL : "no measured time moves with it";
        if (r->candidate)
            f.idx[f.n++] = (ics_ccal_param)p;
    }
    ics_hw_compute fitted;
    double rel[ICS_CCAL_COUNT];
    /* fit, put back what is not pinned down, fit the rest again until every one kept holds */
    for (int round = 0; round <= ICS_CCAL_COUNT; round++) {
        solve(&f, &fitted, rel);
        int kept = 0;
        for (int j = 0; j < f.n; j++) {
            if (rel[j] <= REL_SIGMA_MAX) {
                f.idx[kept] = f.idx[j];
                rel[kept++] = rel[j];
            } else {
                c->res[f.idx[j]].why = "the data do not pin it down (worse than +-25%)";
            }
        }
        if (kept == f.n)
            break;
        f.n = kept;
    }
    for (int j = 0; j < f.n; j++) {
        ics_calib_param *r = &c->res[f.idx[j]];
        r->determined = rel[j] <= REL_SIGMA_MAX;
        r->rel_sigma = rel[j];
        if (!r->determined)
            r->why = "the data do not pin it down (worse than +-25%)";
    }
    ics_hw_compute final = c->loaded;
    for (int p = 0; p < ICS_CCAL_COUNT; p++) {
        ics_calib_param *r = &c->res[p];
        r->after = r->determined ? ics_ccal_value(&fitted, (ics_ccal_param)p) : r->before;
        ics_ccal__set(&final, (ics_ccal_param)p, r->after);
    }
    model_all(c, &final, false);
}

bool ics_ccal_fit(ics_ccal *c, GError **error)
{
    (void)error;
    fit_now(c);
    return true;
}

/* ---- results ---- */

int ics_ccal_n_points(const ics_ccal *c)
{
    return (int)c->points->len;
}

const ics_ccal_point *ics_ccal_point_at(const ics_ccal *c, int i)
{
    return &g_array_index(c->points, ics_ccal_point, i);
}

const ics_calib_param *ics_ccal_param_of(const ics_ccal *c, ics_ccal_param p)
{
    return &c->res[p];
}

const char *ics_ccal_model_name(const ics_ccal *c)
{
    return ics_hw_name(c->hw);
}

const char *ics_ccal_gpu_type_name(const ics_ccal *c)
{
    return c->gpu->name;
}

/* Median |error| of the points `pick` selects (want: their held_out state). */
static double median_of(const ics_ccal *c, bool (*pick)(const ics_ccal_point *, int), int arg,
                        bool want_held, bool after)
{
    GArray *v = g_array_new(FALSE, FALSE, sizeof(double));
    for (guint i = 0; i < c->points->len; i++) {
        const ics_ccal_point *p = &g_array_index(c->points, ics_ccal_point, i);
        if (p->held_out != want_held || !pick(p, arg))
            continue;
        double e = fabs((after ? p->after_us : p->before_us) / p->measured_us - 1);
        g_array_append_val(v, e);
    }
    double m = ics_calib__median(v);
    g_array_free(v, TRUE);
    return m;
}

static bool pick_gemm(const ics_ccal_point *p, int gemm)
{
    return p->gemm == (gemm != 0);
}

double ics_ccal_floor_us(const ics_ccal *c, bool gemm)
{
    double most = 0;
    for (guint i = 0; i < c->points->len; i++) {
        const ics_ccal_point *p = &g_array_index(c->points, ics_ccal_point, i);
        if (p->gemm == gemm)
            most = fmax(most, p->floor_us);
    }
    return most;
}

double ics_ccal_median_error(const ics_ccal *c, bool gemm, bool after)
{
    return median_of(c, pick_gemm, gemm, false, after);
}

/* ---- cross-validation ---- */

static bool pick_kind(const ics_ccal_point *p, int kind)
{
    return kind_of(p) == kind;
}

static bool pick_decade(const ics_ccal_point *p, int decade)
{
    return decade_of(p) == decade;
}

static const char *kind_name(int kind)
{
    return kind == ICS_DTYPE_COUNT ? "copies" : ics_dtype_name((ics_dtype)kind);
}

/* Fits without the points `pick` selects and records how well that predicts them. */
static void fold(ics_ccal *c, bool (*pick)(const ics_ccal_point *, int), int arg, const char *what,
                 GArray *folds)
{
    int n = 0;
    for (guint i = 0; i < c->points->len; i++) {
        ics_ccal_point *p = &g_array_index(c->points, ics_ccal_point, i);
        p->held_out = pick(p, arg);
        n += p->held_out;
    }
    if (n == 0 || n == (int)c->points->len)
        return;
    /* floors from the points the fold fits, not the ones it predicts; "loaded" under them too */
    ics_ccal__set_floors(c);
    model_all(c, &c->loaded, true);
    fit_now(c);
    ics_calib_fold f = {.n = n,
                        .median_before = median_of(c, pick, arg, true, false),
                        .median_after = median_of(c, pick, arg, true, true)};
    g_strlcpy(f.what, what, sizeof f.what);
    g_array_append_val(folds, f);
}

bool ics_ccal_cross_validate(ics_ccal *c, GArray *folds, GError **error)
{
    bool kinds[ICS_DTYPE_COUNT + 1] = {false};
    int lo = INT_MAX, hi = INT_MIN, nkinds = 0;
    for (guint i = 0; i < c->points->len; i++) {
        const ics_ccal_point *p = &g_array_index(c->points, ics_ccal_point, i);
        nkinds += !kinds[kind_of(p)];
        kinds[kind_of(p)] = true;
        lo = MIN(lo, decade_of(p));
        hi = MAX(hi, decade_of(p));
    }
    char what[64];
    for (int k = 0; k <= ICS_DTYPE_COUNT && nkinds > 1; k++)
        if (kinds[k]) {
            snprintf(what, sizeof what, "kernel %s", kind_name(k));
            fold(c, pick_kind, k, what, folds);
        }
    for (int d = lo; d <= hi && hi > lo; d++) {
        snprintf(what, sizeof what, "times %g..%g us", pow(10, d), pow(10, d + 1));
        fold(c, pick_decade, d, what, folds);
    }
    for (guint i = 0; i < c->points->len; i++)
        g_array_index(c->points, ics_ccal_point, i).held_out = false;
    ics_ccal__set_floors(c);
    model_all(c, &c->loaded, true);
    return ics_ccal_fit(c, error);
}
