/* Collective results in nccl-tests' layout, so that a simulated run diffs against a real log:
 * the same count, algbw and busbw definitions and the same column widths and number formats.
 * Invariant: a row printed from a real log's time reproduces that log's row. */
#include "report/report.h"

#include <stdio.h>

#include "report/report_internal.h"

bool ics_report_coll_reduces(ics_coll_op op)
{
    return op == ICS_COLL_ALL_REDUCE || op == ICS_COLL_REDUCE_SCATTER || op == ICS_COLL_REDUCE ||
           op == ICS_COLL_SENDRECV;
}

void ics_report_coll_request(const ics_coll_req *req, uint64_t count, ics_coll_row *row)
{
    row->size_bytes = req->size_bytes;
    row->count = count;
    row->root = (req->op == ICS_COLL_BROADCAST || req->op == ICS_COLL_REDUCE) ? req->root : -1;
}

void ics_report_coll_time(ics_coll_op op, int nranks, double time_us, ics_coll_row *row)
{
    row->time_us = time_us;
    row->algbw_gbps = time_us > 0 ? (double)row->size_bytes / 1.0e9 / (time_us * 1.0e-6) : 0.0;
    row->busbw_gbps = row->algbw_gbps * ics_coll_busbw_factor(op, nranks);
}

void ics_report_coll_time_str(ics_nccltests_style style, double time_us, char buf[32])
{
    /* nccl-tests formats the time into a string first, then prints it "%7s" */
    int decimals;
    if (style == ICS_NCCLTESTS_CLASSIC)
        decimals = time_us >= 10000.0 ? 0 : time_us >= 100.0 ? 1 : 2;
    else
        decimals = time_us >= 100000.0 ? 0 : time_us >= 10000.0 ? 1 : 2;
    snprintf(buf, 32, "%.*f", decimals, time_us);
}

void ics_report_coll_columns(ics_nccltests_style style, GString *out)
{
    /* verbatim from nccl-tests, trailing blanks included, so that `diff` matches */
    g_string_append(out, "#                                                              "
                         "out-of-place                       in-place          \n");
    if (style == ICS_NCCLTESTS_CLASSIC) {
        g_string_append(out, "#       size         count      type   redop    root     time   "
                             "algbw   busbw #wrong     time   algbw   busbw #wrong\n");
        g_string_append(out, "#        (B)    (elements)                               (us)  "
                             "(GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)       \n");
    } else {
        g_string_append(out, "#       size         count      type   redop    root     time   "
                             "algbw   busbw  #wrong     time   algbw   busbw  #wrong \n");
        g_string_append(out, "#        (B)    (elements)                               (us)  "
                             "(GB/s)  (GB/s)             (us)  (GB/s)  (GB/s)         \n");
    }
}

void ics_report_coll_row(ics_nccltests_style style, const ics_coll_row *row, GString *out)
{
    char t[32];
    ics_report_coll_time_str(style, row->time_us, t);
    int wrong_width = style == ICS_NCCLTESTS_CLASSIC ? 5 : 6;
    g_string_append_printf(out, "%12llu  %12llu  %8s  %6s  %6d",
                           (unsigned long long)row->size_bytes, (unsigned long long)row->count,
                           row->type, row->redop, row->root);
    for (int place = 0; place < 2; place++) /* out-of-place, in-place: the same figures */
        g_string_append_printf(out, "  %7s  %6.2f  %6.2f  %*s", t, row->algbw_gbps, row->busbw_gbps,
                               wrong_width, "N/A");
    g_string_append_c(out, '\n');
}

void ics_report_coll_trailer(double avg_busbw_gbps, GString *out)
{
    g_string_append(out, "# Out of bounds values : 0 OK\n");
    g_string_append_printf(out, "# Avg bus bandwidth    : %g \n", avg_busbw_gbps);
    g_string_append(out, "#\n");
}

struct ics_coll_json {
    cJSON *doc, *rows;
};

ics_coll_json *ics_report_coll_json_new(const char *system, ics_coll_op op, int nranks,
                                        const char *engine)
{
    ics_coll_json *j = g_new0(ics_coll_json, 1);
    j->doc = cJSON_CreateObject();
    cJSON_AddStringToObject(j->doc, "system", system);
    cJSON_AddStringToObject(j->doc, "op", ics_coll_op_name(op));
    cJSON_AddNumberToObject(j->doc, "ranks", nranks);
    cJSON_AddStringToObject(j->doc, "engine", engine);
    j->rows = cJSON_AddArrayToObject(j->doc, "rows");
    return j;
}

void ics_report_coll_json_add(ics_coll_json *j, const ics_coll_row *row, const ics_coll_result *res)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "size", (double)row->size_bytes);
    cJSON_AddNumberToObject(o, "count", (double)row->count);
    cJSON_AddNumberToObject(o, "time_us", row->time_us);
    cJSON_AddNumberToObject(o, "algbw", row->algbw_gbps);
    cJSON_AddNumberToObject(o, "busbw", row->busbw_gbps);
    /* one rank runs no algorithm: a copy on the GPU (comm.h) */
    cJSON_AddStringToObject(o, "algo", res->local ? "local" : ics_coll_algo_name(res->algo));
    cJSON_AddStringToObject(o, "proto", res->local ? "none" : ics_coll_proto_name(res->proto));
    cJSON_AddNumberToObject(o, "channels", res->nchannels);
    if (res->waves > 1)
        cJSON_AddNumberToObject(o, "waves", res->waves);
    cJSON_AddStringToObject(o, "plan", res->streams ? "streams" : "chunks");
    cJSON_AddItemToArray(j->rows, o);
}

void ics_report_coll_json_hotspots(ics_coll_json *j, const ics_hotspots *h)
{
    cJSON_AddItemToObject(j->doc, "hotspots", ics_report_hotspots_cjson(h));
}

char *ics_report_coll_json_text(ics_coll_json *j)
{
    char *text = cJSON_Print(j->doc);
    /* the system's name is the user's bytes; JSON is UTF-8 (report_topo.c does the same) */
    char *valid = g_utf8_validate(text, -1, NULL) ? NULL : g_utf8_make_valid(text, -1);
    char *with_nl = g_strconcat(valid ? valid : text, "\n", NULL);
    g_free(valid);
    cJSON_free(text);
    return with_nl;
}

void ics_report_coll_json_free(ics_coll_json *j)
{
    if (!j)
        return;
    cJSON_Delete(j->doc);
    g_free(j);
}

void ics_report_coll_algo(const ics_coll_result *res, GString *out)
{
    g_string_append_printf(out, "%s/%s/%d", ics_coll_algo_name(res->algo),
                           ics_coll_proto_name(res->proto), res->nchannels);
    if (res->waves > 1)
        g_string_append_printf(out, " x %d waves", res->waves);
}

void ics_report_coll_algo_column(const ics_coll_result *res, GString *out)
{
    if (out->len && out->str[out->len - 1] == '\n')
        g_string_truncate(out, out->len - 1);
    if (res->local)
        g_string_append(out, "  # local copy\n");
    else {
        g_string_append(out, "  # ");
        ics_report_coll_algo(res, out);
        g_string_append_c(out, '\n');
    }
}
