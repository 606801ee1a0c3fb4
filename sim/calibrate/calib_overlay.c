/* The calibrated model, written as an overlay: a file of kind "calibration" that names its base
 * model and holds only the fitted values, with the provenance a reader needs to trust them
 * (which measurements, how each parameter moved and how well the data fix it, the residuals).
 * Every command takes it with -s (hw_load.c reads it). Same fit, same bytes: no dates. */
#include "calibrate/calib_internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

/* Five significant digits: what a fit can claim, and stable text. */
double ics_calib__round5(double x)
{
    char buf[32];
    snprintf(buf, sizeof buf, "%.5g", x);
    return g_ascii_strtod(buf, NULL);
}

/* `target` relative to the directory of `from` (both made absolute; transfer full). */
char *ics_calib__relative_path(const char *from, const char *target)
{
    char *dir = g_path_get_dirname(from);
    char *a = g_canonicalize_filename(dir, NULL), *b = g_canonicalize_filename(target, NULL);
    char **pa = g_strsplit(a, "/", -1), **pb = g_strsplit(b, "/", -1);
    int k = 0;
    while (pa[k] && pb[k] && strcmp(pa[k], pb[k]) == 0)
        k++;
    GString *out = g_string_new(NULL);
    for (int i = k; pa[i]; i++)
        if (*pa[i])
            g_string_append(out, "../");
    for (int i = k; pb[i]; i++)
        g_string_append_printf(out, "%s%s", pb[i], pb[i + 1] ? "/" : "");
    g_strfreev(pa);
    g_strfreev(pb);
    g_free(a);
    g_free(b);
    g_free(dir);
    return g_string_free(out, FALSE);
}

static cJSON *measurements(const ics_calib *c)
{
    cJSON *arr = cJSON_CreateArray();
    for (guint t = 0; t < c->tables->len; t++) {
        const ics_meas_table *tab = g_array_index(c->tables, calib_table, t).tab;
        int n = 0;
        for (guint i = 0; i < c->points->len; i++)
            n += g_array_index(c->points, ics_calib_point, i).table == (int)t;
        cJSON *m = cJSON_CreateObject();
        cJSON_AddStringToObject(m, "file", tab->source);
        cJSON_AddStringToObject(m, "op", ics_coll_op_name(tab->op));
        cJSON_AddNumberToObject(m, "ranks", tab->nranks);
        cJSON_AddNumberToObject(m, "points", n);
        cJSON_AddItemToArray(arr, m);
    }
    return arr;
}

static cJSON *parameters(const ics_calib *c)
{
    cJSON *o = cJSON_CreateObject();
    for (int p = 0; p < ICS_CAL_COUNT; p++) {
        const ics_calib_param *cp = &c->params[p];
        if (!cp->candidate)
            continue;
        cJSON *e = cJSON_CreateObject();
        cJSON_AddNumberToObject(e, "before", ics_calib__round5(cp->before));
        cJSON_AddNumberToObject(e, "after", ics_calib__round5(cp->after));
        cJSON_AddBoolToObject(e, "determined", cp->determined);
        if (isfinite(cp->rel_sigma))
            cJSON_AddNumberToObject(e, "rel_sigma", ics_calib__round5(cp->rel_sigma));
        if (cp->why)
            cJSON_AddStringToObject(e, "why", cp->why);
        cJSON_AddItemToObject(o, ics_hw_cal_param((ics_cal_param)p)->key, e);
    }
    return o;
}

static cJSON *errors(const ics_calib *c, bool after)
{
    cJSON *o = cJSON_CreateObject();
    double small = ics_calib_median_error(c, 0, 1 << 20, after);
    double large = ics_calib_median_error(c, 1 << 20, UINT64_MAX, after);
    if (isfinite(small))
        cJSON_AddNumberToObject(o, "below_1MiB", ics_calib__round5(small));
    if (isfinite(large))
        cJSON_AddNumberToObject(o, "from_1MiB", ics_calib__round5(large));
    return o;
}

cJSON *ics_calib__overlay_new(const ics_hw *hw, const char *path, const char *what)
{
    cJSON *doc = cJSON_CreateObject();
    char *base = ics_calib__relative_path(path, ics_hw_base_path(hw));
    char *name = g_strdup_printf("%s (%s)", ics_hw_name(hw), what);
    cJSON_AddStringToObject(doc, "kind", "calibration");
    cJSON_AddStringToObject(doc, "name", name);
    cJSON_AddStringToObject(doc, "base", base);
    g_free(base);
    g_free(name);
    return doc;
}

void ics_calib__overlay_provenance(cJSON *doc, const char *engine, cJSON *measurements,
                                   cJSON *parameters, cJSON *before, cJSON *after)
{
    cJSON *prov = cJSON_CreateObject(), *err = cJSON_CreateObject();
    cJSON_AddStringToObject(prov, "tool", "icsim calibrate");
    if (engine)
        cJSON_AddStringToObject(prov, "engine", engine);
    cJSON_AddItemToObject(prov, "measurements", measurements);
    cJSON_AddItemToObject(prov, "parameters", parameters);
    cJSON_AddItemToObject(err, "before", before);
    cJSON_AddItemToObject(err, "after", after);
    cJSON_AddItemToObject(prov, "median_abs_time_error", err);
    cJSON_AddItemToObject(doc, "provenance", prov);
}

static cJSON *overlay(const ics_calib *c, const char *path)
{
    const ics_hw *hw = ((calib_system *)g_ptr_array_index(c->systems, 0))->hw;
    cJSON *doc = ics_calib__overlay_new(hw, path, "calibrated"), *cal = cJSON_CreateObject();
    /* the fitted values, and what a model calibrated before had where this fit left it */
    for (int p = 0; p < ICS_CAL_COUNT; p++)
        if (c->params[p].determined || isfinite(c->loaded[p]))
            cJSON_AddNumberToObject(
                cal, ics_hw_cal_param((ics_cal_param)p)->key,
                ics_calib__round5(c->params[p].determined ? c->params[p].after : c->loaded[p]));
    cJSON_AddStringToObject(cal, "source", "icsim calibrate (see provenance)");
    cJSON_AddItemToObject(doc, "calibration", cal);
    /* a compute calibration the model had stays (calibrate/compute_calib.h) */
    cJSON *types = ics_calib__compute_overrides(hw, &ics_hw_node_of(hw)->gpu_type->compute, NULL);
    if (types)
        cJSON_AddItemToObject(doc, "gpu_types", types);
    ics_calib__overlay_provenance(doc, c->backend->name, measurements(c), parameters(c),
                                  errors(c, false), errors(c, true));
    return doc;
}

bool ics_calib_write_overlay(const ics_calib *c, const char *path, GError **error)
{
    return ics_calib__write_doc(overlay(c, path), path, error);
}

bool ics_calib__write_doc(cJSON *doc, const char *path, GError **error)
{
    char *text = cJSON_Print(doc);
    char *with_nl = g_strconcat(text, "\n", NULL);
    GError *e = NULL;
    bool ok = g_file_set_contents(path, with_nl, -1, &e);
    if (!ok) {
        g_set_error(error, ICS_ERROR, ICS_ERROR_IO, "%s", e->message);
        g_error_free(e);
    }
    g_free(with_nl);
    cJSON_free(text);
    cJSON_Delete(doc);
    return ok;
}
