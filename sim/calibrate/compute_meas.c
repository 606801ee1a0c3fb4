/* Reading `icsim-validate compute --json` files (compute_calib.h) into points. The top level is
 * an open schema (command, hardware and notes are for people, except hardware.sms, which must
 * be the model's); each row is checked key by key, and every error names file:line:col and the
 * JSON path (core/json.h). */
#include "calibrate/compute_internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/json.h"
#include "workload/workload.h"

#define MAX_DIM   ((int64_t)INT32_MAX)
#define MAX_BYTES ((int64_t)1 << 53)

bool ics_ccal_is_compute_file(const char *path)
{
    char buf[65536];
    FILE *f = fopen(path, "rb");
    if (!f)
        return false;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    /* the writer puts "kind" first; a quick look is enough to route the file to this reader,
     * which then checks it all */
    return strstr(buf, "\"" ICS_CCAL_KIND "\"") != NULL;
}

static const char *const kernels[] = {"gemm", "copy", NULL};
static const char *const dtypes[] = {"bf16", "fp16", "fp8", NULL};
static const ics_dtype dtype_of[] = {ICS_DTYPE_BF16, ICS_DTYPE_FP16, ICS_DTYPE_FP8};

static void read_gemm(ics_jr *r, const ics_ccal *c, const cJSON *row, ics_ccal_point *p)
{
    static const char *const keys[] = {"kernel",  "dtype",   "m",      "n",    "k", "groups",
                                       "streams", "time_us", "source", "note", NULL};
    int d = 0;
    int64_t m = 0, n = 0, k = 0, groups = 1, streams = ICS_TE_COMPUTE_STREAMS;
    if (!ics_jr_keys(r, row, keys) || !ics_jr_enum(r, row, "dtype", true, dtypes, &d))
        return;
    ics_jr_int(r, row, "m", true, 1, MAX_DIM, &m);
    ics_jr_int(r, row, "n", true, 1, MAX_DIM, &n);
    ics_jr_int(r, row, "k", true, 1, MAX_DIM, &k);
    ics_jr_int(r, row, "groups", false, 1, ICS_CCAL_GROUPS_MAX, &groups);
    ics_jr_int(r, row, "streams", false, 1, ICS_CCAL_STREAMS_MAX, &streams);
    const cJSON *st = cJSON_GetObjectItemCaseSensitive(row, "streams");
    if (ics_jr_ok(r) && st && !cJSON_GetObjectItemCaseSensitive(row, "groups"))
        ics_jr_fail(r, st, "streams",
                    "expected \"groups\" beside it (the streams a group of GEMMs goes to), got "
                    "streams alone");
    p->gemm = true;
    p->dtype = dtype_of[d];
    p->m = (int)m;
    p->n = (int)n;
    p->k = (int)k;
    p->groups = (int)groups;
    p->streams = (int)streams;
    if (ics_jr_ok(r) && c->gpu->tflops[p->dtype] <= 0)
        ics_jr_fail(r, cJSON_GetObjectItemCaseSensitive(row, "dtype"), "dtype",
                    "expected a dtype GPU type %s has a peak for, got \"%s\"", c->gpu->name,
                    dtypes[d]);
}

static void read_copy(ics_jr *r, const cJSON *row, ics_ccal_point *p)
{
    static const char *const keys[] = {"kernel", "bytes", "time_us", "source", "note", NULL};
    int64_t b = 0;
    if (ics_jr_keys(r, row, keys) && ics_jr_int(r, row, "bytes", true, 1, MAX_BYTES, &b))
        p->bytes = (uint64_t)b;
}

static void read_row(ics_jr *r, ics_ccal *c, const cJSON *row, const char *file, int index)
{
    ics_ccal_point p = {.source = file, .index = index};
    int kind = 0;
    if (!cJSON_IsObject(row)) {
        char *got = ics_json_describe(row);
        ics_jr_fail(r, row, NULL, "expected a row object, got %s", got);
        g_free(got);
        return;
    }
    if (!ics_jr_enum(r, row, "kernel", true, kernels, &kind))
        return;
    if (kind == 0)
        read_gemm(r, c, row, &p);
    else
        read_copy(r, row, &p);
    if (ics_jr_num(r, row, "time_us", true, 1e-6, 1e12, &p.measured_us) && ics_jr_ok(r))
        g_array_append_val(c->points, p);
}

/* "timing": "stream" (the default: what every runner before --graph did) or "graph". */
static bool stream_timed(ics_jr *r, const cJSON *root)
{
    static const char *const timings[] = {"stream", "graph", NULL};
    int t = 0; /* absent: left at 0 */
    ics_jr_enum(r, root, "timing", false, timings, &t);
    return t == 0;
}

/* The GPU measured must have the model's SM count, when both say (waves depend on it). */
static void check_hardware(ics_jr *r, const ics_ccal *c, const cJSON *root)
{
    const cJSON *hw = ics_jr_obj(r, root, "hardware", false);
    int64_t sms = 0;
    if (!hw || c->gpu->sms <= 0)
        return;
    size_t mark = ics_jr_push_key(r, "hardware");
    if (ics_jr_int(r, hw, "sms", false, 1, 100000, &sms) && sms != c->gpu->sms)
        ics_jr_fail(r, cJSON_GetObjectItemCaseSensitive(hw, "sms"), "sms",
                    "expected %d (GPU type %s of the model), got %" G_GINT64_FORMAT, c->gpu->sms,
                    c->gpu->name, sms);
    ics_jr_pop(r, mark);
}

bool ics_ccal__read(ics_ccal *c, const char *path, const char *text, size_t len, GError **error)
{
    ics_jr *r = ics_jr_new();
    const cJSON *root = text ? ics_jr_load_text(r, path, text, len) : ics_jr_load(r, path);
    const char *kind = NULL;
    if (root && ics_jr_str(r, root, "kind", true, &kind) && strcmp(kind, ICS_CCAL_KIND) != 0)
        ics_jr_fail(r, cJSON_GetObjectItemCaseSensitive(root, "kind"), "kind",
                    "expected \"%s\", got \"%s\"", ICS_CCAL_KIND, kind);
    int64_t version = 0;
    if (root && ics_jr_int(r, root, "version", true, 1, 1 << 20, &version) && version != 1)
        ics_jr_fail(r, cJSON_GetObjectItemCaseSensitive(root, "version"), "version",
                    "expected 1, got %" G_GINT64_FORMAT, version);
    if (root)
        check_hardware(r, c, root);
    bool stream = root && stream_timed(r, root);
    guint first = c->points->len;
    const cJSON *rows = root ? ics_jr_arr(r, root, "rows", true) : NULL;
    if (rows && cJSON_GetArraySize(rows) == 0)
        ics_jr_fail(r, rows, "rows", "expected at least one row, got an empty array");
    int i = 0;
    size_t mark = ics_jr_push_key(r, "rows");
    for (const cJSON *row = rows ? rows->child : NULL; row && ics_jr_ok(r); row = row->next) {
        size_t m2 = ics_jr_push_index(r, i);
        read_row(r, c, row, path, i++);
        ics_jr_pop(r, m2);
    }
    ics_jr_pop(r, mark);
    for (guint j = first; j < c->points->len; j++)
        g_array_index(c->points, ics_ccal_point, j).stream = stream;
    bool ok = ics_jr_ok(r);
    if (!ok)
        g_propagate_error(error, ics_jr_take_error(r));
    ics_jr_free(r);
    return ok;
}
