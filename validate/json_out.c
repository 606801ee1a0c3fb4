/* json_out.c: collective and p2p results as JSON, through cJSON so that nothing is escaped by
 * hand. Invariant: every number equals what the printed table shows for it. */
#include "json_out.h"

#include "format.h"
#include "plan.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

char *icsv_source_desc(const char *hostname)
{
    return g_strdup_printf("icsim-validate %s on %s", ICSV_VERSION, hostname);
}

static double round_to(double v, int decimals)
{
    double scale = pow(10.0, decimals);
    return round(v * scale) / scale;
}

/* The time as the table prints it ("%7.2f", "%7.1f" or "%7.0f"). */
static double printed_time(double time_us)
{
    char buf[32];
    icsv_format_time(time_us, buf);
    return g_ascii_strtod(buf, NULL);
}

static void add_place(cJSON *row, const char *prefix, const icsv_place *p)
{
    char key[32], wrong[32];
    snprintf(key, sizeof key, "%s_time_us", prefix);
    cJSON_AddNumberToObject(row, key, printed_time(p->time_us));
    snprintf(key, sizeof key, "%s_algbw", prefix);
    cJSON_AddNumberToObject(row, key, round_to(p->algbw_gbps, 2));
    snprintf(key, sizeof key, "%s_busbw", prefix);
    cJSON_AddNumberToObject(row, key, round_to(p->busbw_gbps, 2));
    /* a string, as in the data files: "0", "N/A", or nccl-tests' "%g" of the count */
    if (p->wrong == ICSV_WRONG_NA)
        snprintf(wrong, sizeof wrong, "N/A");
    else
        snprintf(wrong, sizeof wrong, "%g", (double)p->wrong);
    snprintf(key, sizeof key, "%s_wrong", prefix);
    cJSON_AddStringToObject(row, key, wrong);
}

static cJSON *row_json(const icsv_row *r)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "size", (double)r->counts.size_bytes);
    cJSON_AddNumberToObject(o, "count", (double)r->counts.count);
    cJSON_AddStringToObject(o, "type", icsv_dtype_name(r->dtype));
    cJSON_AddStringToObject(o, "redop", icsv_op_redop(r->op));
    cJSON_AddNumberToObject(o, "root", r->root);
    add_place(o, "oop", &r->oop);
    add_place(o, "ip", &r->ip);
    char *raw = icsv_format_row(r);
    cJSON_AddStringToObject(o, "raw", raw);
    g_free(raw);
    return o;
}

static cJSON *hardware_json(const icsv_hw *hw)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "system", hw->system);
    cJSON_AddStringToObject(o, "gpu", hw->ngpus > 0 ? hw->dev[0].name : "none");
    cJSON_AddNumberToObject(o, "gpus_per_node", hw->ngpus);
    cJSON_AddNumberToObject(o, "nodes", 1);
    cJSON_AddNumberToObject(o, "total_gpus", hw->ngpus);
    cJSON_AddStringToObject(o, "intra_node", hw->intra_node);
    cJSON_AddNumberToObject(o, "sm_count", hw->sm_count);
    cJSON_AddStringToObject(o, "cuda_arch", hw->cuda_arch);
    return o;
}

static void add_int_or_null(cJSON *o, const char *key, double v)
{
    if (v > 0)
        cJSON_AddNumberToObject(o, key, v);
    else
        cJSON_AddNullToObject(o, key);
}

static cJSON *params_json(const icsv_kernel_params *p)
{
    cJSON *o = cJSON_CreateObject();
    add_int_or_null(o, "ctas", p->ctas);
    add_int_or_null(o, "unroll", p->unroll);
    add_int_or_null(o, "chunk_bytes", (double)p->chunk_bytes);
    add_int_or_null(o, "slices", p->slices);
    return o;
}

char *icsv_json_coll_id(const icsv_coll_report *r)
{
    char day[9] = "00000000";
    for (int i = 0, k = 0; r->date_iso[i] && k < 8; i++)
        if (g_ascii_isdigit(r->date_iso[i]))
            day[k++] = r->date_iso[i];
    char *id = g_strdup_printf("%s_%dgpu_%s_%s_%s", r->hostname, r->hw->ngpus, icsv_op_name(r->op),
                               r->kernel, day);
    for (char *c = id; *c; c++)
        *c = g_ascii_isalnum(*c) ? g_ascii_tolower(*c) : '_';
    return id;
}

static char *print_and_free(cJSON *doc)
{
    char *text = cJSON_Print(doc);
    cJSON_Delete(doc);
    g_assert(text); /* cJSON fails only when out of memory */
    char *out = g_strconcat(text, "\n", NULL);
    cJSON_free(text);
    return out;
}

char *icsv_json_coll_text(const icsv_coll_report *r)
{
    cJSON *doc = cJSON_CreateObject();
    char *id = icsv_json_coll_id(r), *desc = icsv_source_desc(r->hostname);
    cJSON_AddStringToObject(doc, "id", id);
    cJSON_AddStringToObject(doc, "source_desc", desc);
    g_free(id);
    g_free(desc);
    cJSON_AddStringToObject(doc, "date", r->date_iso);
    cJSON_AddItemToObject(doc, "hardware", hardware_json(r->hw));
    if (r->nccl_version)
        cJSON_AddStringToObject(doc, "nccl_version", r->nccl_version);
    else
        cJSON_AddNullToObject(doc, "nccl_version");
    cJSON_AddItemToObject(doc, "env", cJSON_CreateObject());
    cJSON_AddStringToObject(doc, "command", r->command);
    cJSON_AddStringToObject(doc, "collective", icsv_op_name(r->op));
    cJSON_AddStringToObject(doc, "kernel", r->kernel);
    cJSON_AddItemToObject(doc, "kernel_params", params_json(&r->params));
    cJSON_AddNumberToObject(doc, "n_rows", (double)r->n_rows);
    cJSON *rows = cJSON_AddArrayToObject(doc, "rows");
    for (size_t i = 0; i < r->n_rows; i++)
        cJSON_AddItemToArray(rows, row_json(&r->rows[i]));
    return print_and_free(doc);
}

static cJSON *matrix_json(int n, const double *m)
{
    cJSON *rows = cJSON_CreateArray();
    for (int i = 0; i < n; i++) {
        cJSON *row = cJSON_CreateArray();
        for (int j = 0; j < n; j++)
            cJSON_AddItemToArray(row, cJSON_CreateNumber(round_to(m[i * n + j], 2)));
        cJSON_AddItemToArray(rows, row);
    }
    return rows;
}

char *icsv_json_p2p_text(const icsv_p2p_report *r)
{
    int n = r->hw->ngpus;
    cJSON *doc = cJSON_CreateObject();
    cJSON_AddStringToObject(doc, "kind", "p2p_matrix");
    cJSON *gpus = cJSON_AddArrayToObject(doc, "gpus");
    for (int i = 0; i < n; i++)
        cJSON_AddItemToArray(gpus, cJSON_CreateString(r->hw->dev[i].name));
    cJSON_AddItemToObject(doc, "unidirectional_gbps", matrix_json(n, r->uni_gbps));
    cJSON_AddItemToObject(doc, "bidirectional_gbps", matrix_json(n, r->bi_gbps));
    cJSON_AddItemToObject(doc, "latency_us", matrix_json(n, r->lat_us));
    cJSON_AddStringToObject(doc, "copy", r->copy);
    cJSON_AddNumberToObject(doc, "bytes", (double)r->bytes);
    return print_and_free(doc);
}

static cJSON *compute_hw_json(const icsv_compute_hw *hw)
{
    cJSON *o = cJSON_CreateObject();
    char cc[32];
    snprintf(cc, sizeof cc, "%d.%d", hw->cc_major, hw->cc_minor);
    cJSON_AddStringToObject(o, "gpu", hw->gpu);
    cJSON_AddNumberToObject(o, "sms", hw->sms);
    cJSON_AddStringToObject(o, "cc", cc);
    if (hw->clock_khz > 0)
        cJSON_AddNumberToObject(o, "clock_mhz", hw->clock_khz / 1000.0);
    else
        cJSON_AddNullToObject(o, "clock_mhz");
    cJSON_AddNumberToObject(o, "memory_gbytes", round_to((double)hw->memory_bytes / 1e9, 2));
    return o;
}

/* The time as the table prints it; the calibrate reader wants > 0, which a real call always is
 * at this resolution (a launch alone is microseconds). */
static double compute_time(double time_us)
{
    char buf[32];
    icsv_format_compute_time(time_us, buf);
    return g_ascii_strtod(buf, NULL);
}

static cJSON *compute_row_json(const icsv_compute_row *r)
{
    cJSON *o = cJSON_CreateObject();
    if (r->kernel == ICSV_COMPUTE_GEMM) {
        cJSON_AddStringToObject(o, "kernel", "gemm");
        cJSON_AddStringToObject(o, "dtype", icsv_gemm_dtype_name(r->dtype));
        cJSON_AddNumberToObject(o, "m", (double)r->m);
        cJSON_AddNumberToObject(o, "n", (double)r->n);
        cJSON_AddNumberToObject(o, "k", (double)r->k);
        if (r->groups > 1) { /* absent: one GEMM, as every file before --groups */
            cJSON_AddNumberToObject(o, "groups", r->groups);
            cJSON_AddNumberToObject(o, "streams", r->streams);
        }
    } else {
        cJSON_AddStringToObject(o, "kernel", "copy");
        cJSON_AddNumberToObject(o, "bytes", (double)r->bytes);
    }
    cJSON_AddNumberToObject(o, "time_us", compute_time(r->time_us));
    return o;
}

char *icsv_json_compute_text(const icsv_compute_report *r)
{
    cJSON *doc = cJSON_CreateObject();
    cJSON_AddStringToObject(doc, "kind", ICSV_COMPUTE_KIND); /* first: the reader looks for it */
    cJSON_AddNumberToObject(doc, "version", ICSV_COMPUTE_JSON_VERSION);
    cJSON_AddStringToObject(doc, "command", r->command);
    cJSON_AddItemToObject(doc, "hardware", compute_hw_json(r->hw));
    cJSON_AddStringToObject(doc, "timing", r->graph ? "graph" : "stream");
    cJSON *rows = cJSON_AddArrayToObject(doc, "rows");
    for (size_t i = 0; i < r->n_rows; i++)
        cJSON_AddItemToArray(rows, compute_row_json(&r->rows[i]));
    return print_and_free(doc);
}

bool icsv_json_save(const char *path, const char *text, GError **err)
{
    GError *e = NULL;
    if (g_file_set_contents(path, text, (gssize)strlen(text), &e))
        return true;
    g_set_error(err, ICSV_ERROR, ICSV_ERROR_INPUT, "--json %s: %s", path, e->message);
    g_error_free(e);
    return false;
}

bool icsv_json_emit(const char *path, char *text)
{
    GError *err = NULL;
    bool ok = icsv_json_save(path, text, &err);
    if (ok) {
        printf("# wrote %s\n", path);
    } else {
        fprintf(stderr, "icsim-validate: %s\n", err->message);
        g_error_free(err);
    }
    g_free(text);
    return ok;
}
