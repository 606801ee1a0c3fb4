/* `icsim calibrate -s MODEL.json compute.json...`: the compute model's parameters fitted to the
 * GEMMs and copies icsim-validate timed (cli_calibrate_compute.h). The same report as the
 * network's: per point measured / before / after, per parameter how it moved and how well the
 * data fix it, the medians, and the cross-validation. */
#include "cli/cli_calibrate_compute.h"
#include "calibrate/compute_calib.h"
#include "cli/cli.h"
#include "cli/cli_common.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static void print_points(const ics_ccal *c, GString *out)
{
    g_string_append_printf(out, "# %-28s %-5s %-22s %10s %10s %10s %8s %8s\n", "point", "dtype",
                           "shape (m x n x k)", "measured", "before", "after", "err bef",
                           "err aft");
    for (int i = 0; i < ics_ccal_n_points(c); i++) {
        const ics_ccal_point *p = ics_ccal_point_at(c, i);
        const char *base = strrchr(p->source, '/') ? strrchr(p->source, '/') + 1 : p->source;
        char where[256], shape[64];
        snprintf(where, sizeof where, "%s[%d]", base, p->index);
        if (p->gemm && p->groups > 1) /* G GEMMs at once on S streams */
            snprintf(shape, sizeof shape, "%dx%dx%d G%d S%d", p->m, p->n, p->k, p->groups,
                     p->streams);
        else if (p->gemm)
            snprintf(shape, sizeof shape, "%d x %d x %d", p->m, p->n, p->k);
        else
            snprintf(shape, sizeof shape, "copy %" G_GUINT64_FORMAT " B", p->bytes);
        g_string_append_printf(
            out, "  %-28.28s %-5s %-22s %10.2f %10.2f %10.2f %+7.1f%% %+7.1f%%\n", where,
            p->gemm ? ics_dtype_name(p->dtype) : "-", shape, p->measured_us, p->before_us,
            p->after_us, 100 * (p->before_us / p->measured_us - 1),
            100 * (p->after_us / p->measured_us - 1));
    }
}

static void print_params(const ics_ccal *c, GString *out)
{
    g_string_append_printf(out, "#\n# GPU type %s\n# %-20s %-5s %10s %10s %8s\n",
                           ics_ccal_gpu_type_name(c), "parameter", "unit", "before", "after", "+-");
    for (int p = 0; p < ICS_CCAL_COUNT; p++) {
        const ics_calib_param *r = ics_ccal_param_of(c, (ics_ccal_param)p);
        const ics_ccal_param_info *in = ics_ccal_param_info_of((ics_ccal_param)p);
        g_string_append_printf(out, "  %-20s %-5s %10.4g %10.4g ", in->key, in->unit, r->before,
                               r->after);
        if (r->determined)
            g_string_append_printf(out, "%7.1f%%  fitted\n", 100 * r->rel_sigma);
        else
            g_string_append_printf(out, "%8s  not determined: %s\n", "-", r->why ? r->why : "");
    }
}

/* The host floors, where stream-timed files show one: what the points at them measured. */
static void print_floors(const ics_ccal *c, GString *out)
{
    double g = ics_ccal_floor_us(c, true), k = ics_ccal_floor_us(c, false);
    if (g <= 0 && k <= 0)
        return;
    g_string_append(out, "#\n# host floor (timed back to back on a stream, no call ran faster):");
    if (g > 0)
        g_string_append_printf(out, " GEMMs %.2f us", g);
    if (k > 0)
        g_string_append_printf(out, "%s copies %.2f us", g > 0 ? "," : "", k);
    g_string_append(out, "\n# a call at it times the host issuing calls, not the GPU: compared as "
                         "max(model, floor),\n# so it does not set launch_us (icsim-validate "
                         "compute --graph times the GPU alone)\n");
}

static void print_summary(const ics_ccal *c, const GArray *folds, bool no_cv, GString *out)
{
    g_string_append_printf(out, "#\n# median |time error| %13s %13s\n", "GEMMs", "copies");
    for (int after = 0; after < 2; after++) {
        g_string_append_printf(out, "  %-20s", after ? "after" : "before");
        ics_cli__calib_pct(out, ics_ccal_median_error(c, true, after));
        ics_cli__calib_pct(out, ics_ccal_median_error(c, false, after));
        g_string_append_c(out, '\n');
    }
    if (!no_cv)
        ics_cli__calib_folds(folds, out);
}

int ics_cli__calibrate_compute(const char *system, const char *out_path, bool no_cv, bool quiet,
                               int nfiles, char **files)
{
    GError *err = NULL;
    ics_ccal *c = ics_ccal_new(system, nfiles, files, &err);
    GArray *folds = g_array_new(FALSE, FALSE, sizeof(ics_calib_fold));
    bool ok = c && ics_ccal_fit(c, &err) && (no_cv || ics_ccal_cross_validate(c, folds, &err));
    ok = ok && (!out_path || ics_ccal_write_overlay(c, out_path, &err));
    int rc = ICS_EXIT_OK;
    if (ok) {
        GString *out = g_string_new(NULL);
        g_string_append_printf(out, "# icsim calibrate (compute): %s (%s), %d points\n",
                               ics_ccal_model_name(c), system, ics_ccal_n_points(c));
        if (!quiet)
            print_points(c, out);
        print_params(c, out);
        print_floors(c, out);
        print_summary(c, folds, no_cv, out);
        if (out_path)
            g_string_append_printf(out, "# wrote %s\n", out_path);
        ics_cli_emit(out);
        g_string_free(out, TRUE);
    } else {
        fprintf(stderr, "%s\n", err->message);
        rc = ics_error_exit_status(err);
        g_error_free(err);
    }
    g_array_free(folds, TRUE);
    ics_ccal_free(c);
    return rc;
}
