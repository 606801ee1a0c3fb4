/* The study reader (docs/whatif.md, "Study files"), on the located JSON reader: the base, the
 * collective sweep, the axes and the points, into plain C (sweep_internal.h). Everything that
 * can be checked without building a model is checked here, before anything runs. */
#include "core/json.h"
#include "net/net.h"
#include "sweep/sweep_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define MAX_CONFIGS 1000000 /* configurations of one study: far beyond a day of simulation */
#define MAX_SIZES   64
#define MAX_BYTES   (1ULL << 40) /* as `icsim collective -e`: a TiB */

/* nccl-tests' -d names and sizes (the types a study's collective may name). */
static const struct {
    const char *name;
    int bytes;
} dtypes[] = {
    {"int8", 1},     {"char", 1},     {"uint8", 1},  {"int32", 4},   {"int", 4},
    {"uint32", 4},   {"int64", 8},    {"uint64", 8}, {"half", 2},    {"float16", 2},
    {"float", 4},    {"float32", 4},  {"double", 8}, {"float64", 8}, {"bfloat16", 2},
    {"fp8_e4m3", 1}, {"fp8_e5m2", 1},
};

/* The axis kinds: the key that names an axis's values. */
typedef enum {
    AX_SYSTEM,
    AX_SET,
    AX_NODES,
    AX_GPN,
    AX_FAIL,
    AX_NICS,
    AX_ENGINE,
    AX_NCCL,
    AX_OVERSUB,
    AX_RAIL,
    AX_SHARP,
    AX_NVLS,
    AX_LAYOUT,
    AX_TP,
    AX_PP,
    AX_DP,
    AX_VP,
    AX_MBS,
    AX_COUNT
} axis_kind;
static const char *const axis_keys[AX_COUNT] = {"system",
                                                "set",
                                                "nodes",
                                                "gpus_per_node",
                                                "fail",
                                                "nics",
                                                "engine",
                                                "nccl",
                                                "oversubscription",
                                                "rail_optimized",
                                                "sharp",
                                                "nvls",
                                                "layout",
                                                "tp",
                                                "pp",
                                                "dp",
                                                "vp",
                                                "mbs"};

static char *relative_to(const char *study, const char *path)
{
    if (g_path_is_absolute(path))
        return g_strdup(path);
    char *dir = g_path_get_dirname(study);
    char *p = g_build_filename(dir, path, NULL);
    g_free(dir);
    return p;
}

/* "1M", "8G", "4096" or a JSON integer: bytes. */
static bool read_size(ics_jr *r, const cJSON *o, const char *key, bool required, uint64_t *out)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!v) {
        if (required)
            ics_jr_fail(r, o, key, "expected a size (N, NK, NM or NG)");
        return false;
    }
    uint64_t bytes = 0;
    bool ok = false;
    if (cJSON_IsNumber(v) && v->valuedouble >= 1 && v->valuedouble <= (double)MAX_BYTES &&
        v->valuedouble == (double)(uint64_t)v->valuedouble) {
        bytes = (uint64_t)v->valuedouble;
        ok = true;
    } else if (cJSON_IsString(v) && g_ascii_isdigit(v->valuestring[0])) {
        char *end;
        errno = 0;
        unsigned long long n = strtoull(v->valuestring, &end, 10);
        int shift = *end == 'K' || *end == 'k'   ? 10
                    : *end == 'M' || *end == 'm' ? 20
                    : *end == 'G' || *end == 'g' ? 30
                                                 : 0;
        if (shift)
            end++;
        ok = !errno && !*end && n >= 1 && n <= (MAX_BYTES >> shift);
        bytes = (uint64_t)n << shift;
    }
    if (!ok) {
        char *got = ics_json_describe(v);
        ics_jr_fail(r, v, key, "expected a size in 1..1024G (N, NK, NM or NG), got %s", got);
        g_free(got);
        return false;
    }
    *out = bytes;
    return true;
}

static void read_collective(ics_jr *r, const cJSON *root, ics_sweep *s)
{
    const cJSON *o = ics_jr_obj(r, root, "collective", true);
    if (!o)
        return;
    size_t mark = ics_jr_push_key(r, "collective");
    static const char *const keys[] = {"op",    "min_bytes", "max_bytes", "factor",
                                       "dtype", "root",      "plan",      NULL};
    static const char *const plans[] = {"auto", "chunks", "streams", NULL};
    static const ics_coll_plan plan_of[] = {ICS_PLAN_AUTO, ICS_PLAN_CHUNKS, ICS_PLAN_STREAMS};
    int plan = 0;
    const char *ops[ICS_COLL_OP_COUNT + 1] = {NULL};
    for (int i = 0; i < ICS_COLL_OP_COUNT; i++)
        ops[i] = ics_coll_op_name(i);
    int op = 0;
    uint64_t min_b = 32u << 20, max_b = 0;
    int64_t factor = 2, root_rank = 0;
    const char *dtype = "float";
    if (ics_jr_keys(r, o, keys)) {
        ics_jr_enum(r, o, "op", true, ops, &op);
        read_size(r, o, "min_bytes", false, &min_b);
        max_b = min_b;
        read_size(r, o, "max_bytes", false, &max_b);
        ics_jr_int(r, o, "factor", false, 2, 1 << 20, &factor);
        ics_jr_int(r, o, "root", false, 0, 1 << 20, &root_rank);
        ics_jr_enum(r, o, "plan", false, plans, &plan);
        if (ics_jr_str(r, o, "dtype", false, &dtype)) {
            s->dtype_bytes = 0;
            for (size_t i = 0; i < G_N_ELEMENTS(dtypes); i++)
                if (strcmp(dtype, dtypes[i].name) == 0)
                    s->dtype_bytes = dtypes[i].bytes;
            if (!s->dtype_bytes)
                ics_jr_fail(r, cJSON_GetObjectItemCaseSensitive(o, "dtype"), "dtype",
                            "expected float, half, bfloat16, double, int8, int32, ..., got "
                            "\"%s\"",
                            dtype);
        } else {
            s->dtype_bytes = 4;
        }
        if (ics_jr_ok(r) && min_b > max_b)
            ics_jr_fail(r, cJSON_GetObjectItemCaseSensitive(o, "max_bytes"), "max_bytes",
                        "expected max_bytes >= min_bytes (%llu), got %llu",
                        (unsigned long long)min_b, (unsigned long long)max_b);
    }
    if (ics_jr_ok(r)) {
        s->op = (ics_coll_op)op;
        s->root = (int)root_rank;
        s->plan = plan_of[plan];
        s->dtype = g_strdup(dtype);
        s->sizes = g_new(uint64_t, MAX_SIZES);
        for (uint64_t b = min_b; b <= max_b && s->nsizes < MAX_SIZES;) {
            s->sizes[s->nsizes++] = b;
            if (b > max_b / (uint64_t)factor)
                break;
            b *= (uint64_t)factor;
        }
    }
    ics_jr_pop(r, mark);
}

/* NCCL_* settings of an object ({"NCCL_ALGO": "Ring,Tree", "NCCL_NVLS_ENABLE": 0}): what NCCL
 * reads, strictly (a value not understood is an error here, not a warning: a study is a file
 * its author can fix). */
static void read_nccl(ics_jr *r, const cJSON *o, ics_sweep_set *set)
{
    static const char *const keys[] = {"NCCL_ALGO",
                                       "NCCL_PROTO",
                                       "NCCL_NVLS_ENABLE",
                                       "NCCL_COLLNET_ENABLE",
                                       "NCCL_MIN_NCHANNELS",
                                       "NCCL_MAX_NCHANNELS",
                                       NULL};
    if (!ics_jr_keys(r, o, keys))
        return;
    const char *list;
    for (int k = 0; k < 2; k++)
        if (ics_jr_str(r, o, keys[k], false, &list)) {
            char *bad = NULL;
            unsigned got = k ? ics_coll_protos_parse(list, &bad) : ics_coll_algos_parse(list, &bad);
            if (!got || bad)
                ics_jr_fail(r, cJSON_GetObjectItemCaseSensitive(o, keys[k]), keys[k],
                            "expected a list of %s NCCL knows (%s), got \"%s\"",
                            k ? "protocols" : "algorithms",
                            k ? "LL, LL128, Simple"
                              : "Ring, Tree, NVLS, NVLSTree, CollNetDirect, "
                                "CollNetChain, PAT",
                            list);
            else if (k)
                set->nccl_proto = g_strdup(list);
            else
                set->nccl_algo = g_strdup(list);
            g_free(bad);
        }
    int64_t v;
    if (ics_jr_int(r, o, "NCCL_NVLS_ENABLE", false, 0, 1, &v))
        set->nvls = (int)v;
    if (ics_jr_int(r, o, "NCCL_COLLNET_ENABLE", false, 0, 1, &v))
        set->collnet = (int)v;
    if (ics_jr_int(r, o, "NCCL_MIN_NCHANNELS", false, 0, 64, &v))
        set->min_channels = (int)v;
    if (ics_jr_int(r, o, "NCCL_MAX_NCHANNELS", false, 0, 64, &v))
        set->max_channels = (int)v;
}

static void set_init(ics_sweep_set *set)
{
    *set = (ics_sweep_set){.nvls = -1, .collnet = -1, .min_channels = -1, .max_channels = -1};
}

static char *patch_of(const char *section, const char *key, const char *value)
{
    return g_strdup_printf("{\"%s\": {\"%s\": %s}}", section, key, value);
}

/* A layout axis's value: {"tp": 8, "pp": 4, ...}; its label "tp8 pp4 ...". The layout's own
 * checks (against the model) run with the configuration, where a refusal is the row's error. */
static void read_layout(ics_jr *r, const cJSON *v, ics_sweep_set *set, char **label)
{
    static const char *const keys[] = {"tp", "pp", "dp", "vp", "mbs", "gbs", NULL};
    int *field[] = {&set->tp, &set->pp, &set->dp, &set->vp, &set->mbs, &set->gbs};
    if (!ics_jr_keys(r, v, keys))
        return;
    GString *l = g_string_new(NULL);
    for (int i = 0; keys[i]; i++) {
        int64_t n;
        if (ics_jr_int(r, v, keys[i], false, 1, i == 5 ? 1 << 30 : 1 << 20, &n)) {
            *field[i] = (int)n;
            g_string_append_printf(l, "%s%s%d", l->len ? " " : "", keys[i], (int)n);
        }
    }
    if (l->len == 0)
        g_string_append(l, "base");
    *label = g_string_free(l, FALSE);
}

/* One value of an axis of kind k, at v (its index pushed on the path), into *set and *label
 * (transfer full). */
static void read_value(ics_jr *r, const ics_sweep *s, axis_kind k, const cJSON *v,
                       ics_sweep_set *set, char **label)
{
    char *got = ics_json_describe(v);
    set_init(set);
    switch (k) {
    case AX_SYSTEM:
    case AX_FAIL:
    case AX_ENGINE:
        if (!cJSON_IsString(v)) {
            ics_jr_fail(r, v, NULL, "expected a string, got %s", got);
        } else if (k == AX_SYSTEM) {
            if (!*v->valuestring)
                ics_jr_fail(r, v, NULL, "expected a model file, got \"\"");
            set->system = relative_to(s->path, v->valuestring);
            char *base = g_path_get_basename(v->valuestring);
            if (g_str_has_suffix(base, ".json"))
                base[strlen(base) - 5] = '\0';
            *label = base;
        } else if (k == AX_FAIL) {
            set->fail = g_strdup(v->valuestring);
            *label = g_strdup(*v->valuestring ? v->valuestring : "none");
        } else if (!ics_net_backend(v->valuestring)) {
            ics_jr_fail(r, v, NULL, "expected analytic, packet or flow, got %s", got);
        } else {
            set->engine = g_strdup(v->valuestring);
            *label = g_strdup(v->valuestring);
        }
        break;
    case AX_NODES:
    case AX_GPN:
    case AX_NICS:
        if (!cJSON_IsNumber(v) || v->valuedouble < 1 || v->valuedouble > (1 << 20) ||
            v->valuedouble != (double)(int)v->valuedouble) {
            ics_jr_fail(r, v, NULL, "expected an integer in 1..%d, got %s", 1 << 20, got);
        } else {
            int n = (int)v->valuedouble;
            *(k == AX_NODES ? &set->nodes : k == AX_GPN ? &set->gpus_per_node : &set->nics) = n;
            *label = g_strdup_printf("%d", n);
        }
        break;
    case AX_SET:
        if (!cJSON_IsObject(v)) {
            ics_jr_fail(r, v, NULL, "expected an object of model keys to override, got %s", got);
        } else {
            set->patch = cJSON_PrintUnformatted(v);
            *label = g_strdup(set->patch);
        }
        break;
    case AX_NCCL:
        if (!cJSON_IsObject(v)) {
            ics_jr_fail(r, v, NULL, "expected an object of NCCL variables, got %s", got);
        } else {
            read_nccl(r, v, set);
            GString *l = g_string_new(NULL);
            for (const cJSON *x = v->child; x; x = x->next) {
                char *val =
                    cJSON_IsString(x) ? g_strdup(x->valuestring) : cJSON_PrintUnformatted(x);
                g_string_append_printf(l, "%s%s=%s", l->len ? " " : "", x->string, val);
                g_free(val);
            }
            if (l->len == 0)
                g_string_append(l, "default");
            *label = g_string_free(l, FALSE);
        }
        break;
    case AX_OVERSUB:
        if (!cJSON_IsNumber(v) || !(v->valuedouble >= 1 && v->valuedouble <= 64)) {
            ics_jr_fail(r, v, NULL, "expected a number in 1..64, got %s", got);
        } else {
            char num[32];
            g_ascii_formatd(num, sizeof num, "%g", v->valuedouble);
            set->patch = patch_of("fabric", "oversubscription", num);
            *label = g_strdup_printf("%s:1", num);
        }
        break;
    case AX_RAIL:
    case AX_SHARP:
    case AX_NVLS:
        if (!cJSON_IsBool(v)) {
            ics_jr_fail(r, v, NULL, "expected true or false, got %s", got);
        } else {
            bool on = cJSON_IsTrue(v);
            if (k == AX_NVLS)
                set->nvls = on;
            else if (k == AX_RAIL && !on) /* scalable units exist only with rails */
                set->patch =
                    g_strdup("{\"fabric\": {\"rail_optimized\": false, \"nodes_per_unit\": null}}");
            else
                set->patch = patch_of("fabric", k == AX_RAIL ? "rail_optimized" : "sharp",
                                      on ? "true" : "false");
            *label = g_strdup(k == AX_RAIL ? (on ? "rail" : "no-rail") : (on ? "on" : "off"));
        }
        break;
    case AX_LAYOUT:
        if (!s->train) {
            ics_jr_fail(r, v, NULL, "expected a training study (\"train\") for layouts");
        } else if (!cJSON_IsObject(v)) {
            ics_jr_fail(r, v, NULL,
                        "expected an object of layout sizes (tp, pp, dp, vp, mbs, "
                        "gbs), got %s",
                        got);
        } else {
            read_layout(r, v, set, label);
        }
        break;
    case AX_TP:
    case AX_PP:
    case AX_DP:
    case AX_VP:
    case AX_MBS: {
        int64_t n;
        int *field[] = {&set->tp, &set->pp, &set->dp, &set->vp, &set->mbs};
        if (!s->train) {
            ics_jr_fail(r, v, NULL, "expected a training study (\"train\") for %s", axis_keys[k]);
        } else if (!cJSON_IsNumber(v) || v->valuedouble < 1 || v->valuedouble > (1 << 20) ||
                   v->valuedouble != (double)(int)v->valuedouble) {
            ics_jr_fail(r, v, NULL, "expected an integer in 1..%d, got %s", 1 << 20, got);
        } else {
            n = (int64_t)v->valuedouble;
            *field[k - AX_TP] = (int)n;
            *label = g_strdup_printf("%s%d", axis_keys[k], (int)n);
        }
        break;
    }
    case AX_COUNT:
        g_assert_not_reached();
    }
    g_free(got);
}

/* Whether a name or label stays on one line: no control characters (a "\n" in JSON text is a
 * newline in the string, which would split a CSV header or a progress line). */
static bool one_line(const char *text)
{
    for (const unsigned char *c = (const unsigned char *)text; c && *c; c++)
        if (*c < 0x20 || *c == 0x7f)
            return false;
    return true;
}

static void read_axis(ics_jr *r, ics_sweep *s, const cJSON *o, ics_sweep_axis *ax)
{
    /* an axis object's keys: its name and labels, and one of the kinds */
    const char *keys[AX_COUNT + 3] = {"name", "labels"};
    memcpy(keys + 2, axis_keys, sizeof axis_keys);
    if (!cJSON_IsObject(o)) {
        char *got = ics_json_describe(o);
        ics_jr_fail(r, o, NULL, "expected an axis object, got %s", got);
        g_free(got);
        return;
    }
    if (!ics_jr_keys(r, o, keys))
        return;
    int kind = -1;
    for (int k = 0; k < AX_COUNT; k++)
        if (cJSON_HasObjectItem(o, axis_keys[k])) {
            if (kind >= 0) {
                ics_jr_fail(r, o, NULL,
                            "expected one of system, set, nodes, gpus_per_node, "
                            "fail, nics, engine, nccl, oversubscription, "
                            "rail_optimized, sharp, nvls, layout, tp, pp, dp, vp, mbs, got "
                            "both %s and %s",
                            axis_keys[kind], axis_keys[k]);
                return;
            }
            kind = k;
        }
    if (kind < 0) {
        ics_jr_fail(r, o, NULL,
                    "expected the values of one of system, set, nodes, "
                    "gpus_per_node, fail, nics, engine, nccl, oversubscription, "
                    "rail_optimized, sharp, nvls, layout, tp, pp, dp, vp, mbs");
        return;
    }
    const char *name = axis_keys[kind];
    ics_jr_str(r, o, "name", false, &name);
    const cJSON *vals = ics_jr_arr(r, o, axis_keys[kind], true);
    int n = vals ? cJSON_GetArraySize(vals) : 0;
    if (vals && n == 0)
        ics_jr_fail(r, vals, axis_keys[kind], "expected at least one value, got []");
    const cJSON *labels = ics_jr_arr(r, o, "labels", false);
    if (labels && cJSON_GetArraySize(labels) != n)
        ics_jr_fail(r, labels, "labels", "expected %d labels (one per value), got %d", n,
                    cJSON_GetArraySize(labels));
    if (!ics_jr_ok(r))
        return;
    ax->name = g_strdup(name);
    ax->n = n;
    ax->labels = g_new0(char *, n + 1);
    ax->values = g_new0(ics_sweep_set, n);
    size_t mark = ics_jr_push_key(r, axis_keys[kind]);
    for (int i = 0; i < n && ics_jr_ok(r); i++) {
        size_t m = ics_jr_push_index(r, i);
        read_value(r, s, (axis_kind)kind, cJSON_GetArrayItem(vals, i), &ax->values[i],
                   &ax->labels[i]);
        ics_jr_pop(r, m);
    }
    ics_jr_pop(r, mark);
    for (int i = 0; labels && i < n && ics_jr_ok(r); i++) {
        const cJSON *l = cJSON_GetArrayItem(labels, i);
        if (!cJSON_IsString(l) || !*l->valuestring) {
            size_t m = ics_jr_push_key(r, "labels");
            char *got = ics_json_describe(l);
            ics_jr_fail(r, l, NULL, "expected a non-empty string, got %s", got);
            g_free(got);
            ics_jr_pop(r, m);
        } else {
            g_free(ax->labels[i]);
            ax->labels[i] = g_strdup(l->valuestring);
        }
    }
    /* names and labels head CSV columns and fill cells, legends and progress lines: one line */
    if (ics_jr_ok(r) && !one_line(ax->name)) {
        const cJSON *at = cJSON_GetObjectItemCaseSensitive(o, "name");
        char *got = ics_json_describe(at);
        ics_jr_fail(r, at, "name", "expected a name without control characters, got %s", got);
        g_free(got);
    }
    for (int i = 0; i < n && ics_jr_ok(r); i++)
        if (!one_line(ax->labels[i])) {
            const cJSON *at = cJSON_GetArrayItem(labels ? labels : vals, i);
            size_t m = ics_jr_push_key(r, labels ? "labels" : axis_keys[kind]);
            ics_jr_push_index(r, i);
            char *got = ics_json_describe(at);
            ics_jr_fail(r, at, NULL, "expected a label without control characters, got %s", got);
            g_free(got);
            ics_jr_pop(r, m);
        }
    /* labels name values in points and outputs: one value per label */
    for (int i = 0; i < n && ics_jr_ok(r); i++)
        for (int j = 0; j < i; j++)
            if (ax->labels[i] && ax->labels[j] && strcmp(ax->labels[i], ax->labels[j]) == 0)
                ics_jr_fail(r, labels ? labels : vals, labels ? "labels" : axis_keys[kind],
                            "expected distinct labels, got \"%s\" twice", ax->labels[i]);
}

static void read_axes(ics_jr *r, const cJSON *root, ics_sweep *s)
{
    const cJSON *axes = ics_jr_arr(r, root, "axes", false);
    s->naxes = axes ? cJSON_GetArraySize(axes) : 0;
    s->axes = g_new0(ics_sweep_axis, s->naxes + 1);
    size_t mark = ics_jr_push_key(r, "axes");
    for (int a = 0; a < s->naxes && ics_jr_ok(r); a++) {
        size_t m = ics_jr_push_index(r, a);
        const cJSON *o = cJSON_GetArrayItem(axes, a);
        read_axis(r, s, o, &s->axes[a]);
        for (int b = 0; b < a && ics_jr_ok(r); b++)
            if (strcmp(s->axes[a].name, s->axes[b].name) == 0)
                ics_jr_fail(r, o, NULL, "expected distinct axis names, got \"%s\" twice",
                            s->axes[a].name);
        ics_jr_pop(r, m);
    }
    ics_jr_pop(r, mark);
}

/* The product of the axes, first axis slowest. */
static void product(ics_jr *r, const cJSON *root, ics_sweep *s)
{
    int64_t n = 1;
    for (int a = 0; a < s->naxes; a++)
        n = MIN(n * s->axes[a].n, (int64_t)MAX_CONFIGS + 1);
    if (n > MAX_CONFIGS) {
        ics_jr_fail(r, cJSON_GetObjectItemCaseSensitive(root, "axes"), "axes",
                    "expected at most %d configurations, got more", MAX_CONFIGS);
        return;
    }
    s->nconfigs = (int)n;
    s->choice = g_new0(int, (size_t)n *(size_t)MAX(1, s->naxes));
    for (int c = 0; c < s->nconfigs; c++)
        for (int a = s->naxes - 1, rest = c; a >= 0; a--) {
            s->choice[c * s->naxes + a] = rest % s->axes[a].n;
            rest /= s->axes[a].n;
        }
}

/* "points": [{"axis": "label", ...}, ...]: a listed subset, in its order. */
static void read_points(ics_jr *r, const cJSON *root, ics_sweep *s)
{
    const cJSON *pts = ics_jr_arr(r, root, "points", false);
    if (!pts) {
        product(r, root, s);
        return;
    }
    int n = cJSON_GetArraySize(pts);
    if (n == 0 || n > MAX_CONFIGS) {
        ics_jr_fail(r, pts, "points", "expected 1..%d points, got %d", MAX_CONFIGS, n);
        return;
    }
    s->nconfigs = n;
    s->choice = g_new0(int, (size_t)n *(size_t)MAX(1, s->naxes));
    size_t mark = ics_jr_push_key(r, "points");
    for (int c = 0; c < n && ics_jr_ok(r); c++) {
        size_t m = ics_jr_push_index(r, c);
        const cJSON *p = cJSON_GetArrayItem(pts, c);
        if (!cJSON_IsObject(p)) {
            char *got = ics_json_describe(p);
            ics_jr_fail(r, p, NULL, "expected an object {\"axis\": \"label\", ...}, got %s", got);
            g_free(got);
        }
        for (const cJSON *x = p ? p->child : NULL; x && ics_jr_ok(r); x = x->next) {
            int a = 0;
            while (a < s->naxes && strcmp(s->axes[a].name, x->string) != 0)
                a++;
            if (a == s->naxes)
                ics_jr_fail(r, x, x->string, "expected an axis of the study, got \"%s\"",
                            x->string);
        }
        for (int a = 0; a < s->naxes && ics_jr_ok(r); a++) {
            const char *label;
            if (!ics_jr_str(r, p, s->axes[a].name, true, &label))
                break;
            int v = 0;
            while (v < s->axes[a].n && strcmp(s->axes[a].labels[v], label) != 0)
                v++;
            if (v == s->axes[a].n)
                ics_jr_fail(r, cJSON_GetObjectItemCaseSensitive(p, s->axes[a].name),
                            s->axes[a].name, "expected a label of axis %s (%s, ...), got \"%s\"",
                            s->axes[a].name, s->axes[a].labels[0], label);
            s->choice[c * s->naxes + a] = v;
        }
        ics_jr_pop(r, m);
    }
    ics_jr_pop(r, mark);
}

/* The base: the system and what a value of each axis kind may also set for every point. */
static void read_base(ics_jr *r, const cJSON *root, ics_sweep *s)
{
    set_init(&s->base);
    const char *system;
    if (ics_jr_str(r, root, "system", !s->train, &system))
        s->base.system = relative_to(s->path, system);
    else if (s->train && s->scenario.system)
        s->base.system = g_strdup(s->scenario.system); /* the scenario's, resolved by it */
    int64_t v;
    if (ics_jr_int(r, root, "nodes", false, 1, 1 << 20, &v))
        s->base.nodes = (int)v;
    if (ics_jr_int(r, root, "gpus_per_node", false, 1, 1 << 20, &v))
        s->base.gpus_per_node = (int)v;
    const char *str;
    if (ics_jr_str(r, root, "engine", false, &str)) {
        if (!ics_net_backend(str))
            ics_jr_fail(r, cJSON_GetObjectItemCaseSensitive(root, "engine"), "engine",
                        "expected analytic, packet or flow, got \"%s\"", str);
        s->base.engine = g_strdup(str);
    }
    const cJSON *fail = cJSON_GetObjectItemCaseSensitive(root, "fail");
    if (fail && !cJSON_IsString(fail))
        ics_jr_str(r, root, "fail", false, &str); /* the reader's own "expected a string" */
    else if (fail && *fail->valuestring)
        s->base.fail = g_strdup(fail->valuestring);
    const cJSON *set = ics_jr_obj(r, root, "set", false);
    if (set)
        s->base.patch = cJSON_PrintUnformatted(set);
    const cJSON *nccl = ics_jr_obj(r, root, "nccl", false);
    if (nccl) {
        size_t mark = ics_jr_push_key(r, "nccl");
        read_nccl(r, nccl, &s->base);
        ics_jr_pop(r, mark);
    }
}

/* "train": a scenario file (relative to the study), read with the shipped model catalog: its
 * system, model and layout are the base every configuration starts from. One row per
 * configuration (nsizes 1). */
static void read_train(ics_jr *r, const cJSON *root, ics_sweep *s)
{
    const char *file;
    ics_train_scenario_init(&s->scenario);
    if (!ics_jr_ok(r) || !ics_jr_str(r, root, "train", true, &file))
        return;
    char *path = relative_to(s->path, file);
    GError *err = NULL;
    ics_model_catalog *cat = ics_model_catalog_load_default(&err);
    if (!cat || !ics_train_scenario_load(path, cat, &s->scenario, &err)) {
        ics_jr_fail(r, cJSON_GetObjectItemCaseSensitive(root, "train"), "train",
                    "expected a training scenario: %s", err ? err->message : "?");
    } else if (!s->scenario.have_model) {
        ics_jr_fail(r, cJSON_GetObjectItemCaseSensitive(root, "train"), "train",
                    "expected a scenario that names its model, got %s without one", path);
    }
    g_clear_error(&err);
    ics_model_catalog_free(cat);
    g_free(path);
    s->nsizes = 1;
    s->sizes = g_new0(uint64_t, 1);
}

/* "trace": a trace file (relative to the study; our JSON or Chakra, as `icsim replay` reads
 * them), with "comm_groups" for Chakra, read once here: every configuration replays it. One
 * row per configuration (nsizes 1). */
static void read_trace(ics_jr *r, const cJSON *root, ics_sweep *s)
{
    const char *file, *groups = NULL;
    if (!ics_jr_ok(r) || !ics_jr_str(r, root, "trace", true, &file))
        return;
    ics_jr_str(r, root, "comm_groups", false, &groups);
    if (!ics_jr_ok(r))
        return;
    char *path = relative_to(s->path, file);
    char *gpath = groups ? relative_to(s->path, groups) : NULL;
    GError *err = NULL;
    s->trace = ics_trace_read(path, gpath, &err);
    if (!s->trace)
        ics_jr_fail(r, cJSON_GetObjectItemCaseSensitive(root, "trace"), "trace",
                    "expected a trace: %s", err->message);
    g_clear_error(&err);
    s->trace_name = g_path_get_basename(path);
    g_free(path);
    g_free(gpath);
    s->nsizes = 1;
    s->sizes = g_new0(uint64_t, 1);
}

ics_sweep *ics_sweep_load(const char *path, GError **error)
{
    ics_jr *r = ics_jr_new();
    ics_sweep *s = g_new0(ics_sweep, 1);
    s->path = g_strdup(path);
    const cJSON *root = ics_jr_load(r, path);
    static const char *const keys[] = {"kind",          "name",   "source", "system",      "nodes",
                                       "gpus_per_node", "engine", "fail",   "set",         "nccl",
                                       "collective",    "train",  "trace",  "comm_groups", "axes",
                                       "points",        NULL};
    static const char *const kinds[] = {"study", NULL};
    int kind;
    if (root && ics_jr_keys(r, root, keys) && ics_jr_enum(r, root, "kind", true, kinds, &kind)) {
        /* what the study says, not how it is laid out: its JSON without blanks */
        char *text = cJSON_PrintUnformatted(root);
        char *sum = g_compute_checksum_for_string(G_CHECKSUM_SHA256, text, -1);
        g_strlcpy(s->fingerprint, sum, sizeof s->fingerprint);
        g_free(sum);
        cJSON_free(text);
        const char *name = NULL;
        if (ics_jr_str(r, root, "name", false, &name) && !one_line(name)) {
            const cJSON *at = cJSON_GetObjectItemCaseSensitive(root, "name");
            char *got = ics_json_describe(at);
            ics_jr_fail(r, at, "name", "expected a name without control characters, got %s", got);
            g_free(got);
        }
        if (name) {
            s->name = g_strdup(name);
        } else {
            /* the file's name stands in, kept on one line as a given name must be */
            s->name = g_path_get_basename(path);
            for (char *c = s->name; *c; c++)
                if ((unsigned char)*c < 0x20 || *c == 0x7f)
                    *c = '_';
        }
        bool coll = cJSON_HasObjectItem(root, "collective"),
             trace = cJSON_HasObjectItem(root, "trace");
        s->train = cJSON_HasObjectItem(root, "train");
        s->step = s->train || trace;
        int bases = coll + s->train + trace;
        if (bases != 1)
            ics_jr_fail(r, root, NULL,
                        "expected one of \"collective\" (a sweep of sizes), \"train\" (a "
                        "training scenario) or \"trace\" (a trace to replay), got %s",
                        bases ? "several" : "none");
        if (s->train)
            read_train(r, root, s);
        if (trace)
            read_trace(r, root, s);
        else if (cJSON_HasObjectItem(root, "comm_groups"))
            ics_jr_fail(r, cJSON_GetObjectItemCaseSensitive(root, "comm_groups"), "comm_groups",
                        "expected \"comm_groups\" only with a \"trace\"");
        read_base(r, root, s);
        if (!s->step)
            read_collective(r, root, s);
        read_axes(r, root, s);
        if (ics_jr_ok(r))
            read_points(r, root, s);
    }
    GError *err = ics_jr_take_error(r);
    ics_jr_free(r);
    if (err) {
        g_propagate_error(error, err);
        ics_sweep_free(s);
        return NULL;
    }
    return s;
}

void ics_sweep_set_clear(ics_sweep_set *set)
{
    g_free(set->system);
    g_free(set->patch);
    g_free(set->fail);
    g_free(set->engine);
    g_free(set->nccl_algo);
    g_free(set->nccl_proto);
    set_init(set);
}

void ics_sweep_free(ics_sweep *s)
{
    if (!s)
        return;
    for (int a = 0; a < s->naxes; a++) {
        for (int i = 0; i < s->axes[a].n; i++)
            ics_sweep_set_clear(&s->axes[a].values[i]);
        g_strfreev(s->axes[a].labels);
        g_free(s->axes[a].values);
        g_free(s->axes[a].name);
    }
    g_free(s->axes);
    ics_sweep_set_clear(&s->base);
    g_free(s->choice);
    g_free(s->sizes);
    ics_train_scenario_clear(&s->scenario);
    ics_trace_free(s->trace);
    g_free(s->trace_name);
    g_free(s->dtype);
    g_free(s->name);
    g_free(s->path);
    g_free(s);
}
