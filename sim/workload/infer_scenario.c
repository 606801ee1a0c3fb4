/* The inference-scenario reader (infer.h): the same fields `icsim infer` takes as options, in a
 * file a user keeps (docs/scenario-format.md, "Inference scenarios"), each checked against the
 * options' ranges and located when wrong. */
#include "workload/infer.h"
#include "core/json.h"
#include "workload/workload_internal.h"

static const char *const dtype_names[] = {"bf16", "fp16", "fp8", NULL};
static const ics_dtype dtype_values[] = {ICS_DTYPE_BF16, ICS_DTYPE_FP16, ICS_DTYPE_FP8};

void ics_infer_scenario_clear(ics_infer_scenario *s)
{
    g_free(s->system);
    g_free(s->model);
    g_free(s->engine);
    *s = (ics_infer_scenario){0};
}

/* "instance": {"tp", "batch", "input", "output", "pp", "ep", "dtype"}, the options' ranges. */
static void read_instance(ics_jr *r, const cJSON *root, ics_infer_scenario *s)
{
    static const char *const keys[] = {"tp", "batch", "input", "output", "pp", "ep", "dtype", NULL};
    const cJSON *o = ics_jr_obj(r, root, "instance", true);
    if (!o)
        return;
    size_t mark = ics_jr_push_key(r, "instance");
    if (ics_jr_keys(r, o, keys)) {
        int *dst[] = {&s->layout.tp,     &s->layout.batch, &s->layout.input,
                      &s->layout.output, &s->layout.pp,    &s->layout.ep};
        const int64_t hi[] = {1 << 16, 1 << 20, 1 << 24, 1 << 24, 1 << 16, 1 << 16};
        for (int i = 0; i < 6; i++) {
            int64_t v;
            if (ics_jr_int(r, o, keys[i], false, 1, hi[i], &v)) {
                *dst[i] = (int)v;
                s->given[i] = true;
            }
        }
        int e;
        if (ics_jr_enum(r, o, "dtype", false, dtype_names, &e)) {
            s->layout.dtype = dtype_values[e];
            s->given[6] = true;
        }
    }
    ics_jr_pop(r, mark);
}

bool ics_infer_scenario_load(const char *path, ics_infer_scenario *s, GError **err)
{
    static const char *const keys[] = {"kind",   "comment",  "system", "model",
                                       "engine", "instance", NULL};
    static const char *const kinds[] = {"inference", NULL};
    static const char *const engines[] = {"analytic", "packet", NULL};
    ics_jr *r = ics_jr_new();
    const cJSON *root = ics_jr_load(r, path);
    if (root && ics_jr_keys(r, root, keys)) {
        int e;
        ics_jr_enum(r, root, "kind", true, kinds, &e);
        const char *str = NULL;
        s->system = ics_wl__scenario_system(r, root, path);
        if (ics_jr_str(r, root, "model", true, &str))
            s->model = g_strdup(str);
        if (ics_jr_enum(r, root, "engine", false, engines, &e))
            s->engine = g_strdup(engines[e]);
        read_instance(r, root, s);
    }
    GError *e = ics_jr_take_error(r);
    ics_jr_free(r);
    if (e) {
        g_propagate_error(err, e);
        return false;
    }
    return true;
}
