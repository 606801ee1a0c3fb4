/* The compute-calibrated model as an overlay (compute_calib.h): kind "calibration", its base
 * model, the GPU type's fitted compute keys under "gpu_types" (the override section node files
 * use, docs/hwmodel-format.md), and the provenance. A model that was already calibrated keeps
 * its network calibration: its values are carried into the overlay, which names the same base.
 * Same fit, same bytes: no dates. */
#include "calibrate/calib_internal.h"
#include "calibrate/compute_internal.h"

#include <math.h>

#include <cjson/cJSON.h>

static cJSON *files(const ics_ccal *c)
{
    cJSON *arr = cJSON_CreateArray();
    for (guint i = 0; i < c->files->len; i++) {
        const char *f = g_ptr_array_index(c->files, i);
        int n = 0;
        for (guint k = 0; k < c->points->len; k++)
            n += g_array_index(c->points, ics_ccal_point, k).source == f;
        cJSON *m = cJSON_CreateObject();
        cJSON_AddStringToObject(m, "file", f);
        cJSON_AddNumberToObject(m, "points", n);
        cJSON_AddItemToArray(arr, m);
    }
    return arr;
}

static cJSON *parameters(const ics_ccal *c)
{
    cJSON *o = cJSON_CreateObject();
    for (int p = 0; p < ICS_CCAL_COUNT; p++) {
        const ics_calib_param *r = &c->res[p];
        cJSON *e = cJSON_CreateObject();
        cJSON_AddNumberToObject(e, "before", ics_calib__round5(r->before));
        cJSON_AddNumberToObject(e, "after", ics_calib__round5(r->after));
        cJSON_AddBoolToObject(e, "determined", r->determined);
        if (r->determined && isfinite(r->rel_sigma))
            cJSON_AddNumberToObject(e, "rel_sigma", ics_calib__round5(r->rel_sigma));
        if (r->why)
            cJSON_AddStringToObject(e, "why", r->why);
        cJSON_AddItemToObject(o, ics_ccal_param_info_of((ics_ccal_param)p)->key, e);
    }
    return o;
}

static cJSON *errors(const ics_ccal *c, bool after)
{
    cJSON *o = cJSON_CreateObject();
    double g = ics_ccal_median_error(c, true, after), m = ics_ccal_median_error(c, false, after);
    if (isfinite(g))
        cJSON_AddNumberToObject(o, "gemm", ics_calib__round5(g));
    if (isfinite(m))
        cJSON_AddNumberToObject(o, "copy", ics_calib__round5(m));
    return o;
}

/* The network calibration the model had (so that calibrating compute does not drop it). */
static void carry_network(const ics_ccal *c, cJSON *doc)
{
    cJSON *cal = cJSON_CreateObject();
    for (int p = 0; p < ICS_CAL_COUNT; p++) {
        double v = ics_hw_cal(c->hw, (ics_cal_param)p);
        if (isfinite(v))
            cJSON_AddNumberToObject(cal, ics_hw_cal_param((ics_cal_param)p)->key, v);
    }
    if (!cal->child) {
        cJSON_Delete(cal);
        return;
    }
    const char *src = ics_hw_calibration_of(c->hw)->source;
    cJSON_AddStringToObject(cal, "source", src ? src : "the calibrated model");
    cJSON_AddItemToObject(doc, "calibration", cal);
}

/* What `now` (hw's GPU type's compute parameters) changes of the base model's, as a
 * "gpu_types" object: every parameter that differs from the base, and those forced (the
 * determined ones); NULL when none. A model that was calibrated before keeps what that did. */
cJSON *ics_calib__compute_overrides(const ics_hw *hw, const ics_hw_compute *now, const bool *force)
{
    const ics_hw_gpu_type *g = ics_hw_node_of(hw)->gpu_type;
    ics_hw *base = ics_hw_load(ics_hw_base_path(hw), 0, NULL);
    const ics_hw_compute *was = base ? &ics_hw_node_of(base)->gpu_type->compute : NULL;
    cJSON *compute = cJSON_CreateObject();
    for (int p = 0; p < ICS_CCAL_COUNT; p++) {
        double v = ics_ccal_value(now, (ics_ccal_param)p);
        double b = was ? ics_ccal_value(was, (ics_ccal_param)p) : NAN;
        if ((force && force[p]) || !(fabs(v - b) <= 1e-9 * fabs(b)))
            cJSON_AddNumberToObject(compute, ics_ccal_param_info_of((ics_ccal_param)p)->key,
                                    ics_calib__round5(v));
    }
    ics_hw_free(base);
    if (!compute->child) {
        cJSON_Delete(compute);
        return NULL;
    }
    cJSON_AddStringToObject(compute, "source", "icsim calibrate (compute; see provenance)");
    cJSON *types = cJSON_CreateObject(), *gpu = cJSON_CreateObject();
    cJSON_AddItemToObject(gpu, "compute", compute);
    cJSON_AddItemToObject(types, g->name, gpu);
    return types;
}

static cJSON *overlay(const ics_ccal *c, const char *path)
{
    cJSON *doc = ics_calib__overlay_new(c->hw, path, "compute calibrated");
    carry_network(c, doc);
    ics_hw_compute final = c->loaded;
    bool force[ICS_CCAL_COUNT];
    for (int p = 0; p < ICS_CCAL_COUNT; p++) {
        force[p] = c->res[p].determined;
        ics_ccal__set(&final, (ics_ccal_param)p, c->res[p].after);
    }
    cJSON *types = ics_calib__compute_overrides(c->hw, &final, force);
    if (types)
        cJSON_AddItemToObject(doc, "gpu_types", types);
    ics_calib__overlay_provenance(doc, NULL, files(c), parameters(c), errors(c, false),
                                  errors(c, true));
    return doc;
}

bool ics_ccal_write_overlay(const ics_ccal *c, const char *path, GError **error)
{
    return ics_calib__write_doc(overlay(c, path), path, error);
}
