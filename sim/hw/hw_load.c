/* Loading a hardware model: which files, in which order, and who overrides whom. The readers of
 * each part (hw_catalog.c, hw_node.c, hw_fabric.c) fill the object (hw.c).
 * Precedence, lowest first: the catalog, the node file's sections, the cluster file's sections.
 * A cluster's "node" object may replace the node file's top-level keys. */
#include "hw/hw_internal.h"

#include <string.h>

static const char *const kind_names[] = {"catalog", "node", "cluster", "calibration", NULL};
enum { KIND_CATALOG, KIND_NODE, KIND_CLUSTER, KIND_CALIBRATION };

/* Path of `ref` relative to the directory of `from` (transfer full). */
static char *relative_to(const char *from, const char *ref)
{
    if (g_path_is_absolute(ref))
        return g_strdup(ref);
    char *dir = g_path_get_dirname(from);
    char *p = strcmp(dir, ".") == 0 ? g_strdup(ref) : g_build_filename(dir, ref, NULL);
    g_free(dir);
    return p;
}

/* Where a file was named: obj[key], obj being the root of its file or the root's `parent`. */
typedef struct {
    const cJSON *obj;
    const char *parent, *key;
} file_ref;

/* An error at a reference (the reader's path is at the root of a file when files load). */
static void fail_at_ref(ics_hw__ld *ld, const file_ref *ref, const char *msg)
{
    size_t mark = ref->parent ? ics_jr_push_key(ld->r, ref->parent) : 0;
    ics_jr_fail(ld->r, cJSON_GetObjectItemCaseSensitive(ref->obj, ref->key), ref->key, "%s", msg);
    if (ref->parent)
        ics_jr_pop(ld->r, mark);
}

/* Loads a file that must be a JSON object of the given kind (want < 0: any). When the file
 * was named by another (ref non-NULL), a missing file or a file of the wrong kind is reported
 * at the reference. */
static const cJSON *load_kind(ics_hw__ld *ld, const char *path, int want, const file_ref *ref)
{
    if (ref && ics_jr_ok(ld->r) && !g_file_test(path, G_FILE_TEST_IS_REGULAR)) {
        char *got = ics_json_describe(cJSON_GetObjectItemCaseSensitive(ref->obj, ref->key));
        char *msg = g_strdup_printf(
            "expected the path of a %s file, relative to this file, got %s (%s: %s)",
            kind_names[want], got, path,
            g_file_test(path, G_FILE_TEST_EXISTS) ? "not a regular file" : "no such file");
        fail_at_ref(ld, ref, msg);
        g_free(msg);
        g_free(got);
        return NULL;
    }
    const cJSON *root = ics_jr_load(ld->r, path);
    if (!root)
        return NULL;
    if (!cJSON_IsObject(root)) {
        char *got = ics_json_describe(root);
        ics_jr_fail(ld->r, root, NULL, "expected an object, got %s", got);
        g_free(got);
        return NULL;
    }
    int kind;
    if (!ics_jr_enum(ld->r, root, "kind", true, kind_names, &kind))
        return NULL;
    if (want >= 0 && kind != want && ref) {
        char *got = ics_json_describe(cJSON_GetObjectItemCaseSensitive(ref->obj, ref->key));
        char *msg = g_strdup_printf("expected a %s file, got %s (a %s file)", kind_names[want], got,
                                    kind_names[kind]);
        fail_at_ref(ld, ref, msg);
        g_free(msg);
        g_free(got);
    } else if (want >= 0 && kind != want) {
        ics_jr_fail(ld->r, cJSON_GetObjectItemCaseSensitive(root, "kind"), "kind",
                    "expected \"%s\", got \"%s\"", kind_names[want], kind_names[kind]);
    }
    return ics_jr_ok(ld->r) ? root : NULL;
}

static bool read_catalog_file(ics_hw__ld *ld, const char *path, const file_ref *ref)
{
    static const char *const keys[] = {"kind", "name", "source", ICS_HW__CATALOG_KEYS, NULL};
    const cJSON *root = load_kind(ld, path, KIND_CATALOG, ref);
    return root && ics_jr_keys(ld->r, root, keys) && ics_hw__read_catalog_sections(ld, root, true);
}

/* Reads the catalog a node or cluster file names, if it names one. */
static bool read_catalog_of(ics_hw__ld *ld, const char *file, const cJSON *root)
{
    const char *cat = NULL;
    if (!ics_jr_str(ld->r, root, "catalog", false, &cat))
        return ics_jr_ok(ld->r);
    char *path = relative_to(file, cat);
    file_ref ref = {.obj = root, .key = "catalog"};
    bool ok = read_catalog_file(ld, path, &ref);
    g_free(path);
    return ok;
}

/* A cluster's "node" as one object: the node file's keys, replaced by those the cluster gives.
 * The merged object holds references, so every value still reports its own file and line. */
static const cJSON *merged_node(ics_hw__ld *ld, const cJSON *node_root, const cJSON *repl)
{
    if (!repl)
        return node_root;
    cJSON *m = cJSON_CreateObject();
    ics_jr_adopt(ld->r, m);
    for (const cJSON *c = node_root->child; c; c = c->next)
        if (!cJSON_GetObjectItemCaseSensitive(repl, c->string)) {
            cJSON_AddItemReferenceToObject(m, c->string, (cJSON *)c);
            ics_jr_alias(ld->r, cJSON_GetObjectItemCaseSensitive(m, c->string), c);
        }
    for (const cJSON *c = repl->child; c; c = c->next)
        if (strcmp(c->string, "file") != 0) {
            cJSON_AddItemReferenceToObject(m, c->string, (cJSON *)c);
            ics_jr_alias(ld->r, cJSON_GetObjectItemCaseSensitive(m, c->string), c);
        }
    ics_jr_alias(ld->r, m, node_root);
    return m;
}

/* A model's optional "calibration" object (hw_calibration.c has the table): values replace
 * what the model had; absent keys keep it. */
static bool read_calibration(ics_hw__ld *ld, const cJSON *obj)
{
    const cJSON *o = ics_jr_obj(ld->r, obj, "calibration", false);
    if (!o)
        return ics_jr_ok(ld->r);
    const char *keys[ICS_CAL_COUNT + 2];
    for (int p = 0; p < ICS_CAL_COUNT; p++)
        keys[p] = ics_hw_cal_param((ics_cal_param)p)->key;
    keys[ICS_CAL_COUNT] = "source";
    keys[ICS_CAL_COUNT + 1] = NULL;
    size_t mark = ics_jr_push_key(ld->r, "calibration");
    ics_hw_calibration *c = &ld->hw->calibration;
    if (ics_jr_keys(ld->r, o, keys)) {
        for (int p = 0; p < ICS_CAL_COUNT; p++) {
            const ics_cal_param_info *in = ics_hw_cal_param((ics_cal_param)p);
            ics_jr_num(ld->r, o, in->key, false, in->lo, in->hi, &c->value[p]);
        }
        const char *src = NULL;
        if (ics_jr_str(ld->r, o, "source", false, &src))
            c->source = ics_hw__str(ld->hw, src);
    }
    ics_jr_pop(ld->r, mark);
    return ics_jr_ok(ld->r);
}

#define NODE_KEYS                                                                                  \
    "kind", "name", "catalog", "source", "gpu", "gpus", "cpus", "pcie", "nvlink", "calibration",   \
        "nccl_conf"

static bool load_node_file(ics_hw__ld *ld, const char *path, const cJSON *root)
{
    static const char *const keys[] = {NODE_KEYS, ICS_HW__OVERRIDE_KEYS, NULL};
    if (!ics_jr_keys(ld->r, root, keys))
        return false;
    return read_catalog_of(ld, path, root) && ics_hw__read_catalog_sections(ld, root, false) &&
           ics_hw__read_node(ld, root) && read_calibration(ld, root) &&
           ics_hw__read_nccl_conf(ld, root);
}

/* Opens the node a cluster names: its file, and the object of replacement keys (or NULL). */
static const cJSON *cluster_node(ics_hw__ld *ld, const char *path, const cJSON *root,
                                 const cJSON **repl)
{
    /* "kind" and "catalog" would be read from the node file all the same */
    static const char *const repl_keys[] = {"file", "name", "source", "gpu", "gpus",
                                            "cpus", "pcie", "nvlink", NULL};
    const cJSON *n = cJSON_GetObjectItemCaseSensitive(root, "node");
    const char *file = NULL;
    *repl = NULL;
    size_t mark = ics_jr_push_key(ld->r, "node");
    if (n && cJSON_IsObject(n)) {
        if (ics_jr_keys(ld->r, n, repl_keys))
            ics_jr_str(ld->r, n, "file", true, &file);
        *repl = n;
    }
    ics_jr_pop(ld->r, mark);
    if (!*repl)
        ics_jr_str(ld->r, root, "node", true, &file);
    if (!ics_jr_ok(ld->r))
        return NULL;
    char *node_path = relative_to(path, file);
    file_ref ref = *repl ? (file_ref){.obj = n, .parent = "node", .key = "file"}
                         : (file_ref){.obj = root, .key = "node"};
    const cJSON *node_root = load_kind(ld, node_path, KIND_NODE, &ref);
    g_free(node_path);
    return node_root;
}

static bool load_cluster_file(ics_hw__ld *ld, const char *path, const cJSON *root,
                              int nodes_override)
{
    static const char *const keys[] = {
        "kind",  "name",   "catalog",     "source",    "node",
        "nodes", "fabric", "calibration", "nccl_conf", ICS_HW__OVERRIDE_KEYS,
        NULL};
    static const char *const node_keys[] = {NODE_KEYS, ICS_HW__OVERRIDE_KEYS, NULL};
    if (!ics_jr_keys(ld->r, root, keys))
        return false;
    const cJSON *repl = NULL;
    const cJSON *node_root = cluster_node(ld, path, root, &repl);
    if (!node_root || !ics_jr_keys(ld->r, node_root, node_keys))
        return false;
    /* One catalog: the cluster's, else the node's. */
    bool ok = cJSON_GetObjectItemCaseSensitive(root, "catalog")
                  ? read_catalog_of(ld, path, root)
                  : read_catalog_of(ld, ics_jr_file_of(ld->r, node_root), node_root);
    ok = ok && ics_hw__read_catalog_sections(ld, node_root, false) &&
         ics_hw__read_catalog_sections(ld, root, false);
    if (!ok)
        return false;
    const cJSON *node = merged_node(ld, node_root, repl);
    size_t mark = repl ? ics_jr_push_key(ld->r, "node") : 0;
    if (repl) /* values from the node file sit at "$..." there, not at "$.node..." */
        ics_jr_elide(ld->r, node_root, mark, strlen(ics_jr_path(ld->r)));
    ok = ics_hw__read_node(ld, node);
    if (repl) {
        ics_jr_elide(ld->r, NULL, 0, 0);
        ics_jr_pop(ld->r, mark);
    }
    if (!ok)
        return false;
    int64_t nodes = 1;
    ics_jr_int(ld->r, root, "nodes", true, 1, 1 << 20, &nodes);
    if (ics_jr_ok(ld->r) && nodes_override > 1 << 20)
        ics_jr_fail(ld->r, cJSON_GetObjectItemCaseSensitive(root, "nodes"), "nodes",
                    "expected --nodes in 1..%d, got %d", 1 << 20, nodes_override);
    ld->hw->nodes = nodes_override > 0 ? nodes_override : (int)nodes;
    ld->hw->is_cluster = true;
    const cJSON *fabric = ics_jr_obj(ld->r, root, "fabric", true);
    return fabric && ics_hw__read_fabric(ld, fabric) && read_calibration(ld, node_root) &&
           read_calibration(ld, root) && ics_hw__read_nccl_conf(ld, node_root) &&
           ics_hw__read_nccl_conf(ld, root);
}

static ics_hw *finish(ics_hw__ld *ld, GError **err)
{
    if (ics_jr_ok(ld->r)) {
        ics_jr_free(ld->r);
        return ld->hw;
    }
    g_propagate_error(err, ics_jr_take_error(ld->r));
    ics_jr_free(ld->r);
    ics_hw_free(ld->hw);
    return NULL;
}

static void read_top(ics_hw__ld *ld, const char *path, const cJSON *root, int nodes_override);

/* A calibration overlay: its base model (a node or cluster file, read as if named directly),
 * then the overlay's calibration over whatever the base had, and its GPU types' overrides
 * (what `icsim calibrate` fits of the compute model). Its provenance is for people. */
static void load_calibration_file(ics_hw__ld *ld, const char *path, const cJSON *root,
                                  int nodes_override)
{
    static const char *const keys[] = {"kind",        "name",       "base",      "source",
                                       "calibration", "provenance", "gpu_types", NULL};
    const char *base = NULL;
    if (!ics_jr_keys(ld->r, root, keys) || !ics_jr_str(ld->r, root, "base", true, &base))
        return;
    char *base_path = relative_to(path, base);
    file_ref ref = {.obj = root, .key = "base"};
    const cJSON *base_root = load_kind(ld, base_path, -1, &ref);
    int kind = -1;
    if (base_root)
        ics_jr_enum(ld->r, base_root, "kind", true, kind_names, &kind);
    if (base_root && kind != KIND_NODE && kind != KIND_CLUSTER) {
        char *msg = g_strdup_printf("expected a node or cluster file, got a %s file",
                                    kind >= 0 ? kind_names[kind] : "?");
        fail_at_ref(ld, &ref, msg);
        g_free(msg);
    }
    if (ics_jr_ok(ld->r)) {
        const char *name = ld->hw->name;
        read_top(ld, base_path, base_root, nodes_override);
        ld->hw->name = name; /* the overlay's */
        ld->hw->base_path = g_strdup(base_path);
    }
    g_free(base_path);
    if (ics_jr_ok(ld->r) && read_calibration(ld, root))
        ics_hw__read_gpu_overlay(ld, root);
}

static void read_top(ics_hw__ld *ld, const char *path, const cJSON *root, int nodes_override)
{
    const char *name = NULL;
    ics_jr_str(ld->r, root, "name", true, &name);
    ld->hw->name = ics_hw__str(ld->hw, name);
    int kind = KIND_NODE;
    ics_jr_enum(ld->r, root, "kind", true, kind_names, &kind);
    if (!ics_jr_ok(ld->r))
        return;
    if (kind == KIND_CATALOG) {
        ics_jr_fail(ld->r, cJSON_GetObjectItemCaseSensitive(root, "kind"), "kind",
                    "expected \"node\" or \"cluster\" (a catalog alone has no GPUs), got "
                    "\"catalog\"");
    } else if (kind == KIND_CALIBRATION) {
        load_calibration_file(ld, path, root, nodes_override);
    } else if (kind == KIND_NODE) {
        if (nodes_override > 0)
            ics_jr_fail(ld->r, root, NULL, "expected a cluster file for --nodes, got a node file");
        else
            load_node_file(ld, path, root);
    } else {
        load_cluster_file(ld, path, root, nodes_override);
    }
}

ics_hw *ics_hw_load(const char *path, int nodes_override, GError **err)
{
    ics_hw__ld ld = {.hw = ics_hw__new(path), .r = ics_jr_new()};
    const cJSON *root = load_kind(&ld, path, -1, NULL);
    if (root)
        read_top(&ld, path, root, nodes_override);
    return finish(&ld, err);
}

ics_hw *ics_hw_load_text(const char *name, const char *text, size_t len, GError **err)
{
    static const char *const node_keys[] = {NODE_KEYS, ICS_HW__OVERRIDE_KEYS, NULL};
    ics_hw__ld ld = {.hw = ics_hw__new(name), .r = ics_jr_new()};
    const cJSON *root = ics_jr_load_text(ld.r, name, text, len);
    if (root && !cJSON_IsObject(root)) {
        char *got = ics_json_describe(root);
        ics_jr_fail(ld.r, root, NULL, "expected an object, got %s", got);
        g_free(got);
    }
    int kind;
    if (root && ics_jr_enum(ld.r, root, "kind", true, kind_names, &kind) && kind != KIND_NODE)
        ics_jr_fail(ld.r, root, "kind", "expected \"node\" (self-contained text), got \"%s\"",
                    kind_names[kind]);
    if (root && ics_jr_keys(ld.r, root, node_keys)) {
        const char *n = NULL;
        ics_jr_str(ld.r, root, "name", true, &n);
        ld.hw->name = ics_hw__str(ld.hw, n);
        if (ics_jr_ok(ld.r) && cJSON_GetObjectItemCaseSensitive(root, "catalog"))
            ics_jr_fail(ld.r, cJSON_GetObjectItemCaseSensitive(root, "catalog"), "catalog",
                        "expected no catalog reference in a self-contained text, got one");
        if (ics_hw__read_catalog_sections(&ld, root, false) && ics_hw__read_node(&ld, root))
            ics_hw__read_nccl_conf(&ld, root);
    }
    return finish(&ld, err);
}

ics_hw *ics_hw_load_catalog(const char *path, GError **err)
{
    ics_hw__ld ld = {.hw = ics_hw__new(path), .r = ics_jr_new()};
    read_catalog_file(&ld, path, NULL);
    ld.hw->name = ics_hw__str(ld.hw, "catalog");
    return finish(&ld, err);
}
