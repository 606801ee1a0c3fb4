/* A configuration's hardware model: the system file with the configuration's overrides merged
 * in (RFC 7386 merge patch: objects merge key by key, null deletes, anything else replaces),
 * written beside nothing (a private temporary file whose file references are made absolute)
 * and read by the hardware loader like any model, so overrides are checked exactly as files
 * are. */
#include "core/json.h"
#include "sweep/sweep_internal.h"

#include <glib/gstdio.h>
#include <string.h>
#include <unistd.h>

static cJSON *merge(cJSON *target, const cJSON *patch)
{
    if (!cJSON_IsObject(patch)) {
        cJSON_Delete(target);
        return cJSON_Duplicate(patch, true);
    }
    if (!cJSON_IsObject(target)) {
        cJSON_Delete(target);
        target = cJSON_CreateObject();
    }
    for (const cJSON *p = patch->child; p; p = p->next) {
        if (cJSON_IsNull(p)) {
            cJSON_DeleteItemFromObjectCaseSensitive(target, p->string);
            continue;
        }
        cJSON *old = cJSON_DetachItemFromObjectCaseSensitive(target, p->string);
        cJSON_AddItemToObject(target, p->string, merge(old, p));
    }
    return target;
}

char *ics_sweep_merge_patch(const char *base, const char *patch)
{
    cJSON *b = cJSON_Parse(base), *p = cJSON_Parse(patch);
    char *out = NULL;
    if (b && p) {
        b = merge(b, p);
        char *text = cJSON_PrintUnformatted(b);
        out = g_strdup(text);
        cJSON_free(text);
    }
    cJSON_Delete(b);
    cJSON_Delete(p);
    return out;
}

/* A file reference of the model (catalog, node, an overlay's base) made absolute: the merged
 * model is read from elsewhere. */
static void absolute(cJSON *obj, const char *key, const char *dir)
{
    cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!cJSON_IsString(v) || g_path_is_absolute(v->valuestring))
        return;
    char *abs = g_build_filename(dir, v->valuestring, NULL);
    cJSON_ReplaceItemInObjectCaseSensitive(obj, key, cJSON_CreateString(abs));
    g_free(abs);
}

/* The message of a load error with the temporary file's name replaced by what it stands for. */
static void rename_in_error(GError *err, const char *tmp, const char *system, const char *patch)
{
    if (!err || !strstr(err->message, tmp))
        return;
    char *what = g_strdup_printf("%s with %s", system, patch);
    char **parts = g_strsplit(err->message, tmp, -1);
    char *msg = g_strjoinv(what, parts);
    g_strfreev(parts);
    g_free(what);
    g_free(err->message);
    err->message = msg;
}

ics_hw *ics_sweep_model_load(const char *system, const char *patch, int nodes, GError **error)
{
    if (!patch)
        return ics_hw_load(system, nodes, error);
    char *text = NULL;
    cJSON *root = NULL, *p = cJSON_Parse(patch);
    if (!g_file_get_contents(system, &text, NULL, NULL) || !(root = cJSON_Parse(text))) {
        /* the loader says what is wrong with the file, where */
        g_free(text);
        cJSON_Delete(p);
        return ics_hw_load(system, nodes, error);
    }
    g_free(text);
    root = merge(root, p);
    cJSON_Delete(p);
    char *abs = g_canonicalize_filename(system, NULL), *dir = g_path_get_dirname(abs);
    g_free(abs);
    absolute(root, "catalog", dir);
    absolute(root, "base", dir);
    absolute(root, "node", dir);
    cJSON *node = cJSON_GetObjectItemCaseSensitive(root, "node");
    if (cJSON_IsObject(node))
        absolute(node, "file", dir);
    g_free(dir);
    char *merged = cJSON_Print(root);
    cJSON_Delete(root);
    char *tmp = NULL;
    ics_hw *hw = NULL;
    int fd = g_file_open_tmp("icsim-sweep-XXXXXX.json", &tmp, error);
    if (fd >= 0) {
        close(fd);
        if (g_file_set_contents(tmp, merged, -1, error)) {
            GError *err = NULL;
            hw = ics_hw_load(tmp, nodes, &err);
            rename_in_error(err, tmp, system, patch);
            if (err)
                g_propagate_error(error, err);
        }
        g_remove(tmp);
    }
    g_free(tmp);
    cJSON_free(merged);
    return hw;
}
