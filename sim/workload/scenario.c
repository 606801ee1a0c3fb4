/* The training-scenario reader (scenario.h), on the located JSON reader (json.h). */
#include "workload/scenario.h"
#include "core/json.h"

#include <string.h>

void ics_train_scenario_init(ics_train_scenario *s)
{
    *s = (ics_train_scenario){.layout = ics_layout_defaults()};
    s->layout.fold = true; /* training jobs are symmetric: simulate one rank per set */
}

void ics_train_scenario_clear(ics_train_scenario *s)
{
    g_free(s->system);
    g_free(s->engine);
    ics_train_scenario_init(s);
}

static const char *const recompute_names[] = {"none", "selective", "full", NULL};
static const char *const placement_names[] = {"tp-pp-dp", "tp-dp-pp", NULL};
static const char *const attention_names[] = {"flash", "unfused", NULL};
static const char *const dtype_names[] = {"bf16", "fp16", "fp8", NULL};
static const ics_dtype dtype_values[] = {ICS_DTYPE_BF16, ICS_DTYPE_FP16, ICS_DTYPE_FP8};
static const char *const grad_names[] = {"fp32", "bf16", "fp16", NULL};
static const ics_dtype grad_values[] = {ICS_DTYPE_FP32, ICS_DTYPE_BF16, ICS_DTYPE_FP16};

static void read_model(ics_jr *r, const cJSON *root, const ics_model_catalog *cat,
                       ics_train_scenario *s)
{
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(root, "model");
    if (!m) {
        ics_jr_fail(r, root, NULL, "expected a \"model\" (a catalog name or an object)");
        return;
    }
    if (cJSON_IsString(m)) {
        const ics_model *found = ics_model_find(cat, m->valuestring);
        if (!found) {
            ics_jr_fail(r, m, "model",
                        "expected a model of the catalog (gpt3-175b, llama3-70b, "
                        "...), got \"%s\"",
                        m->valuestring);
            return;
        }
        s->model = *found;
        s->have_model = true;
        return;
    }
    size_t mark = ics_jr_push_key(r, "model");
    static const char *const keys[] = {"name", "layers", "hidden", "heads",
                                       "ffn",  "vocab",  "seq",    NULL};
    int64_t layers = 0, hidden = 0, heads = 0, ffn = 0, vocab = 0, seq = 0;
    const char *name = "custom";
    if (!cJSON_IsObject(m)) {
        char *got = ics_json_describe(m);
        ics_jr_fail(r, m, NULL, "expected a catalog name or an object, got %s", got);
        g_free(got);
    } else if (ics_jr_keys(r, m, keys)) {
        ics_jr_str(r, m, "name", false, &name);
        ics_jr_int(r, m, "layers", true, 1, 100000, &layers);
        ics_jr_int(r, m, "hidden", true, 1, 1 << 22, &hidden);
        ics_jr_int(r, m, "heads", true, 1, 1 << 16, &heads);
        ics_jr_int(r, m, "vocab", true, 1, 1 << 24, &vocab);
        ics_jr_int(r, m, "seq", true, 1, 1 << 24, &seq);
        ffn = 4 * hidden;
        ics_jr_int(r, m, "ffn", false, 1, 1 << 24, &ffn);
    }
    if (ics_jr_ok(r)) {
        s->model = ics_model_make(name, (int)layers, (int)hidden, (int)heads, (int)ffn, (int)vocab,
                                  (int)seq);
        s->have_model = true;
        GError *err = NULL;
        if (!ics_model_check(&s->model, &err)) {
            ics_jr_fail(r, m, NULL, "%s", err->message);
            g_error_free(err);
        }
    }
    ics_jr_pop(r, mark);
}

static void read_int(ics_jr *r, const cJSON *o, const char *key, int lo, int hi, int *out)
{
    int64_t v;
    if (ics_jr_int(r, o, key, false, lo, hi, &v))
        *out = (int)v;
}

static void read_layout(ics_jr *r, const cJSON *root, ics_train_scenario *s)
{
    const cJSON *o = ics_jr_obj(r, root, "layout", true);
    if (!o)
        return;
    size_t mark = ics_jr_push_key(r, "layout");
    static const char *const keys[] = {"tp",
                                       "pp",
                                       "vp",
                                       "dp",
                                       "mbs",
                                       "gbs",
                                       "sp",
                                       "recompute",
                                       "dist_opt",
                                       "dtype",
                                       "grad_dtype",
                                       "bucket_mb",
                                       "overlap_grad_reduce",
                                       "placement",
                                       "fold",
                                       "attention",
                                       NULL};
    ics_layout *l = &s->layout;
    if (ics_jr_keys(r, o, keys)) {
        read_int(r, o, "tp", 1, 1 << 16, &l->tp);
        read_int(r, o, "pp", 1, 1 << 16, &l->pp);
        read_int(r, o, "vp", 1, 1 << 10, &l->vp);
        s->layout_dp = cJSON_HasObjectItem(o, "dp");
        read_int(r, o, "dp", 1, 1 << 20, &l->dp);
        read_int(r, o, "mbs", 1, 1 << 16, &l->mbs);
        read_int(r, o, "gbs", 1, 1 << 30, &l->gbs);
        ics_jr_bool(r, o, "sp", false, &l->sp);
        ics_jr_bool(r, o, "dist_opt", false, &l->dist_opt);
        ics_jr_bool(r, o, "overlap_grad_reduce", false, &l->overlap_grad_reduce);
        ics_jr_bool(r, o, "fold", false, &l->fold);
        int e;
        if (ics_jr_enum(r, o, "recompute", false, recompute_names, &e))
            l->recompute = (ics_recompute)e;
        if (ics_jr_enum(r, o, "attention", false, attention_names, &e))
            l->attention = (ics_attention)e;
        if (ics_jr_enum(r, o, "placement", false, placement_names, &e))
            l->placement = (ics_placement)e;
        if (ics_jr_enum(r, o, "dtype", false, dtype_names, &e))
            l->dtype = dtype_values[e];
        if (ics_jr_enum(r, o, "grad_dtype", false, grad_names, &e))
            l->grad_dtype = grad_values[e];
        double mb;
        if (ics_jr_num(r, o, "bucket_mb", false, 1e-3, 1e6, &mb))
            l->bucket_bytes = (uint64_t)(mb * 1024 * 1024);
    }
    ics_jr_pop(r, mark);
}

bool ics_train_scenario_load(const char *path, const ics_model_catalog *catalog,
                             ics_train_scenario *s, GError **err)
{
    ics_jr *r = ics_jr_new();
    const cJSON *root = ics_jr_load(r, path);
    static const char *const keys[] = {"kind",   "system", "nodes",   "model",
                                       "layout", "engine", "comment", NULL};
    static const char *const kinds[] = {"training", NULL};
    static const char *const engines[] = {"analytic", "packet", NULL};
    if (root && ics_jr_keys(r, root, keys)) {
        int e;
        ics_jr_enum(r, root, "kind", true, kinds, &e);
        const char *sys = NULL;
        if (ics_jr_str(r, root, "system", true, &sys)) {
            char *dir = g_path_get_dirname(path);
            s->system = g_path_is_absolute(sys) ? g_strdup(sys) : g_build_filename(dir, sys, NULL);
            g_free(dir);
        }
        read_int(r, root, "nodes", 1, 1 << 20, &s->nodes);
        if (ics_jr_enum(r, root, "engine", false, engines, &e))
            s->engine = g_strdup(engines[e]);
        read_model(r, root, catalog, s);
        read_layout(r, root, s);
    }
    GError *e = ics_jr_take_error(r);
    ics_jr_free(r);
    if (e) {
        g_propagate_error(err, e);
        return false;
    }
    return true;
}
