/* The repository's JSON measurement files (validate/data/nccl/<id>.json, and what icsim-validate
 * writes: the same with "kernel" and "kernel_params") into tables. An open schema: keys this
 * reader does not use (source_url, notes, derived, raw, ...) are ignored; the ones it uses are
 * checked, and every error names file:line:col and the JSON path (core/json.h). */
#include "calibrate/meas_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/json.h"

#define MAX_SIZE ((int64_t)1 << 53) /* sizes and counts: exact in a JSON number */

typedef struct {
    ics_jr *jr;
    const char *name;
    guint rows_left;
    GPtrArray *out;
    ics_coll_op op;
    int nranks, ranks_per_node, nodes;
    int gpus_per_thread; /* -g of the "command", 0 if none */
    char *gpu;
    char **env;       /* the "env" object's NCCL_* strings, "NAME=VALUE" */
    int nccl_version; /* of "nccl_version" (ics_meas_table), 0 if none or not a version */
    /* the series being filled */
    ics_meas_table *cur;
    GArray *rows;
} jreader;

/* The NCCL_* members of an "env" object, as "NAME=VALUE": a string, or a whole number as
 * NCCL would read it from its text (other members are notes: a plugin, FI_* variables); NULL
 * when there are none. Any other value of an NCCL_* member is an error. */
static char **env_of(jreader *j, const cJSON *env)
{
    if (!cJSON_IsObject(env))
        return NULL;
    size_t mark = ics_jr_push_key(j->jr, "env");
    GPtrArray *kv = g_ptr_array_new_with_free_func(g_free);
    const cJSON *v;
    cJSON_ArrayForEach(v, env)
    {
        if (!v->string || !g_str_has_prefix(v->string, "NCCL_"))
            continue;
        if (cJSON_IsString(v))
            g_ptr_array_add(kv, g_strdup_printf("%s=%s", v->string, v->valuestring));
        else if (cJSON_IsNumber(v) && v->valuedouble == floor(v->valuedouble) &&
                 fabs(v->valuedouble) < 9e15)
            g_ptr_array_add(kv, g_strdup_printf("%s=%.0f", v->string, v->valuedouble));
        else
            ics_jr_fail(j->jr, v, v->string,
                        "expected a string or a whole number (an NCCL variable's value)");
    }
    ics_jr_pop(j->jr, mark);
    g_ptr_array_set_free_func(kv, NULL);
    if (kv->len == 0) {
        g_ptr_array_free(kv, TRUE);
        return NULL;
    }
    g_ptr_array_add(kv, NULL);
    return (char **)g_ptr_array_free(kv, FALSE);
}

/* A time or bandwidth: a number >= 0, or "N/A" / null for none (-1). */
static bool num_or_na(jreader *j, const cJSON *obj, const char *key, bool required, double *out)
{
    static const char expected[] = "a number >= 0 or \"N/A\"";
    *out = -1;
    if (!ics_jr_ok(j->jr))
        return false;
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!v) {
        if (required)
            ics_jr_fail(j->jr, obj, key, "expected %s, got nothing (the key is missing)", expected);
        return !required;
    }
    if (cJSON_IsNull(v) || (cJSON_IsString(v) && strcmp(v->valuestring, "N/A") == 0))
        return true;
    if (cJSON_IsNumber(v) && isfinite(v->valuedouble) && v->valuedouble >= 0) {
        *out = v->valuedouble + 0.0;
        return true;
    }
    char *got = ics_json_describe(v);
    ics_jr_fail(j->jr, v, key, "expected %s, got %s", expected, got);
    g_free(got);
    return false;
}

/* The check column: a number, or a string holding one ("0", "1e-07"), or "N/A" / null (-1). */
static bool wrong_value(jreader *j, const cJSON *obj, const char *key, double *out)
{
    static const char expected[] = "a count of wrong elements (a number >= 0) or \"N/A\"";
    *out = -1;
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!v || cJSON_IsNull(v))
        return true;
    if (cJSON_IsString(v)) {
        const char *s = v->valuestring;
        if (strcmp(s, "N/A") == 0)
            return true;
        char *end = NULL;
        double d = g_ascii_isdigit(s[0]) && s[strspn(s, "0123456789.eE+-")] == '\0'
                       ? g_ascii_strtod(s, &end)
                       : -1;
        if (end && *end == '\0' && isfinite(d) && d >= 0) {
            *out = d;
            return true;
        }
    } else if (cJSON_IsNumber(v) && isfinite(v->valuedouble) && v->valuedouble >= 0) {
        *out = v->valuedouble;
        return true;
    }
    char *got = ics_json_describe(v);
    ics_jr_fail(j->jr, v, key, "expected %s, got %s", expected, got);
    g_free(got);
    return false;
}

static void finish_series(jreader *j)
{
    ics_meas_table *t = j->cur;
    if (!t)
        return;
    t->op = j->op;
    t->op_from = "JSON";
    t->nranks = j->nranks;
    t->nranks_from = "JSON";
    t->ranks_per_node = j->ranks_per_node;
    t->nodes = j->nodes;
    t->gpus_per_thread = j->gpus_per_thread;
    t->gpu_name = g_strdup(j->gpu);
    t->env = g_strdupv(j->env);
    t->nccl_version = j->nccl_version;
    t->n_rows = j->rows->len;
    t->rows = (ics_meas_row *)(void *)g_array_free(j->rows, FALSE);
    j->rows = NULL;
    j->cur = NULL;
    g_ptr_array_add(j->out, t);
}

static void read_sample(jreader *j, const cJSON *row, const char *half, bool required,
                        const char *dtype, ics_meas_sample *s)
{
    char key[32];
    snprintf(key, sizeof key, "%s_time_us", half);
    num_or_na(j, row, key, required, &s->time_us);
    snprintf(key, sizeof key, "%s_algbw", half);
    num_or_na(j, row, key, false, &s->algbw_gbps);
    snprintf(key, sizeof key, "%s_busbw", half);
    num_or_na(j, row, key, false, &s->busbw_gbps);
    snprintf(key, sizeof key, "%s_wrong", half);
    if (ics_jr_ok(j->jr) && wrong_value(j, row, key, &s->wrong_value))
        /* a count is a whole number; nccl-tests before "#wrong" printed a deviation (1e-07) */
        s->wrong = ics_meas__wrong(s->wrong_value, s->wrong_value != floor(s->wrong_value), dtype,
                                   j->nranks);
}

static void read_row(jreader *j, const cJSON *row, int index)
{
    ics_jr *jr = j->jr;
    if (!cJSON_IsObject(row)) {
        char *got = ics_json_describe(row);
        ics_jr_fail(jr, row, NULL, "expected a row (an object), got %s", got);
        g_free(got);
        return;
    }
    if (j->rows_left == 0) {
        ics_jr_fail(jr, row, NULL, "expected at most %d rows in all, got more", ICS_MEAS_MAX_ROWS);
        return;
    }
    ics_jr_unique_keys(jr, row);
    int64_t size = 0, count = 0, root = -1;
    const char *dtype = NULL, *redop = NULL;
    ics_jr_int(jr, row, "size", true, 0, MAX_SIZE, &size);
    ics_jr_int(jr, row, "count", true, 0, MAX_SIZE, &count);
    ics_jr_str(jr, row, "type", true, &dtype);
    ics_jr_str(jr, row, "redop", false, &redop);
    ics_jr_int(jr, row, "root", false, -1, ICS_MEAS_MAX_RANKS - 1, &root);
    ics_meas_row r = {
        .size_bytes = (uint64_t)size, .count = (uint64_t)count, .root = (int)root, .index = index};
    r.oop = r.ip =
        (ics_meas_sample){.time_us = -1, .algbw_gbps = -1, .busbw_gbps = -1, .wrong_value = -1};
    if (!ics_jr_ok(jr))
        return;
    read_sample(j, row, "oop", true, dtype, &r.oop);
    read_sample(j, row, "ip", false, dtype, &r.ip);
    if (!ics_jr_ok(jr))
        return;
    if (j->cur && (strcmp(j->cur->dtype, dtype) != 0 || g_strcmp0(j->cur->redop, redop) != 0))
        finish_series(j);
    if (!j->cur) {
        j->cur = ics_meas__table_new(j->name);
        j->cur->dtype = g_strdup(dtype);
        j->cur->dtype_bytes = ics_meas__dtype_bytes(dtype);
        j->cur->redop = g_strdup(redop);
        j->rows = g_array_new(FALSE, TRUE, sizeof(ics_meas_row));
    }
    g_array_append_val(j->rows, r);
    j->rows_left--;
}

/* hardware{total_gpus, nodes, gpus_per_node_used, gpus_per_node, gpu} */
static void read_hardware(jreader *j, const cJSON *hw)
{
    ics_jr *jr = j->jr;
    int64_t total = 0, nodes = 0, used = 0, per = 0;
    const char *gpu = NULL;
    ics_jr_int(jr, hw, "nodes", false, 1, ICS_MEAS_MAX_RANKS, &nodes);
    ics_jr_int(jr, hw, "gpus_per_node_used", false, 1, ICS_MEAS_MAX_RANKS, &used);
    ics_jr_int(jr, hw, "gpus_per_node", false, 1, ICS_MEAS_MAX_RANKS, &per);
    ics_jr_str(jr, hw, "gpu", false, &gpu);
    int64_t per_node = used ? used : per;
    bool have_total = ics_jr_int(jr, hw, "total_gpus", false, 1, ICS_MEAS_MAX_RANKS, &total);
    if (!have_total && nodes && per_node && nodes * per_node <= ICS_MEAS_MAX_RANKS)
        total = nodes * per_node;
    else if (!have_total) /* the message for a missing total */
        ics_jr_int(jr, hw, "total_gpus", true, 1, ICS_MEAS_MAX_RANKS, &total);
    if (!ics_jr_ok(jr))
        return;
    j->nranks = (int)total;
    if (nodes && total % nodes == 0) {
        j->nodes = (int)nodes;
        j->ranks_per_node = (int)(total / nodes);
    } else if (per_node && per_node <= total && total % per_node == 0) {
        j->ranks_per_node = (int)per_node;
        j->nodes = (int)(total / per_node);
    }
    j->gpu = g_strdup(gpu);
}

int ics_meas_command_gpus_per_thread(const char *command)
{
    char **w = g_strsplit_set(command, " \t", -1);
    int g = 0;
    for (int i = 0; w[i] && w[i + 1]; i++)
        if (strcmp(w[i], "-g") == 0) {
            char *end;
            long v = strtol(w[i + 1], &end, 10);
            g = *end == '\0' && v >= 1 && v <= 1024 ? (int)v : 0;
        }
    g_strfreev(w);
    return g;
}

bool ics_meas__read_json(const char *name, const char *text, size_t len, guint rows_left,
                         GPtrArray *out, GError **error)
{
    jreader j = {.jr = ics_jr_new(), .name = name, .rows_left = rows_left, .out = out};
    ics_jr *jr = j.jr;
    guint first_out = out->len;
    const cJSON *root = ics_jr_load_text(jr, name, text, len);
    if (root && !cJSON_IsObject(root)) {
        char *got = ics_json_describe(root);
        ics_jr_fail(jr, root, NULL, "expected a measurement (an object), got %s", got);
        g_free(got);
    }
    if (ics_jr_ok(jr)) {
        ics_jr_unique_keys(jr, root);
        const char *coll = NULL;
        if (ics_jr_str(jr, root, "collective", true, &coll) &&
            ics_meas__op_parse(coll, &j.op) != 1) {
            char *got = ics_json_describe(cJSON_GetObjectItemCaseSensitive(root, "collective"));
            ics_jr_fail(jr, cJSON_GetObjectItemCaseSensitive(root, "collective"), "collective",
                        "expected one of %s, got %s", ics_meas__op_list(), got);
            g_free(got);
        }
        const cJSON *cmd = cJSON_GetObjectItemCaseSensitive(root, "command");
        if (cJSON_IsString(cmd))
            j.gpus_per_thread = ics_meas_command_gpus_per_thread(cmd->valuestring);
        j.env = env_of(&j, cJSON_GetObjectItemCaseSensitive(root, "env"));
        /* free text in the repository's files ("2.26.6 (container image ...)"): its leading
         * version if it has one; anything else says nothing, so it is no error */
        const cJSON *version = cJSON_GetObjectItemCaseSensitive(root, "nccl_version");
        if (cJSON_IsString(version))
            j.nccl_version = ics_meas__nccl_version(version->valuestring);
        const cJSON *hw = ics_jr_obj(jr, root, "hardware", true);
        if (hw) {
            size_t mark = ics_jr_push_key(jr, "hardware");
            read_hardware(&j, hw);
            ics_jr_pop(jr, mark);
        }
        const cJSON *rows = ics_jr_arr(jr, root, "rows", true);
        if (rows && cJSON_GetArraySize(rows) == 0)
            ics_jr_fail(jr, rows, "rows", "expected at least one row, got an empty array");
        size_t mark = ics_jr_push_key(jr, "rows");
        int i = 0;
        const cJSON *row;
        cJSON_ArrayForEach(row, rows)
        {
            if (!ics_jr_ok(jr))
                break;
            size_t m = ics_jr_push_index(jr, i);
            read_row(&j, row, i);
            ics_jr_pop(jr, m);
            i++;
        }
        ics_jr_pop(jr, mark);
        if (ics_jr_ok(jr))
            finish_series(&j);
    }
    bool ok = ics_jr_ok(jr);
    if (!ok) {
        GError *e = ics_jr_take_error(jr);
        g_set_error_literal(error, ICS_MEAS_ERROR, ICS_MEAS_ERROR_INPUT, e->message);
        g_error_free(e);
        g_ptr_array_set_size(out, first_out);
    }
    ics_meas__table_free(j.cur);
    if (j.rows)
        g_array_free(j.rows, TRUE);
    g_free(j.gpu);
    g_strfreev(j.env);
    ics_jr_free(jr);
    return ok;
}
