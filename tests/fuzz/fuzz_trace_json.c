/* libFuzzer target for the JSON trace reader: any bytes yield either one located error in the
 * house form or a trace the replayer may trust (ics_trace_check passes, every index in range)
 * that the writer writes and the reader reads back to the same bytes. Anything else (a crash, a
 * leak, a sanitizer report, a hang) is a bug. fuzz_hw_replay.c's driver runs it from files in
 * every build (fuzz_trace_json_replay). */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <glib.h>

#include "core/json.h"
#include "trace/trace.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define NAME "fuzz.json"

static void broken(const char *what, const char *detail)
{
    fprintf(stderr, "fuzz_trace_json: %s: %s\n", what, detail ? detail : "");
    abort();
}

/* What trace.h promises of a trace the reader returns. */
static void check(const ics_trace *t)
{
    int nr = ics_trace_nranks(t);
    GError *err = NULL;
    if (!ics_trace_check(t, &err))
        broken("ics_trace_check", err->message);
    for (int c = 0; c < ics_trace_ncomms(t); c++) {
        int n;
        const int *ranks = ics_trace_comm_ranks(t, c, &n);
        for (int i = 0; i < n; i++)
            if (ranks[i] < 0 || ranks[i] >= nr)
                broken("communicator rank out of range", NULL);
    }
    for (int k = 0; k < nr; k++)
        for (int i = 0; i < ics_trace_nops(t, k); i++) {
            const ics_trace_op *op = ics_trace_get_op(t, k, i);
            int nd;
            const int *deps = ics_trace_op_deps(t, k, i, &nd);
            for (int d = 0; d < nd; d++)
                if (deps[d] < 0 || deps[d] >= i)
                    broken("dependency not on an earlier op", NULL);
            if (op->stream < 0 || op->stream >= ics_trace_nstreams(t, k))
                broken("stream out of range", NULL);
            if ((op->kind == ICS_TOP_SEND || op->kind == ICS_TOP_RECV) &&
                (op->peer < 0 || op->peer >= nr || op->peer == k))
                broken("peer out of range", NULL);
            if (op->kind == ICS_TOP_COLL && (op->comm < 0 || op->comm >= ics_trace_ncomms(t)))
                broken("communicator out of range", NULL);
        }
}

/* The JSON reader's error, "fuzz.json:LINE:COL: $...: expected ..., got ..." on one line. */
static void check_error(const GError *e)
{
    if (!e)
        broken("no trace and no error", NULL);
    const char *m = e->message;
    if (e->domain != ICS_JSON_ERROR)
        broken("error of another domain than the JSON reader's", m);
    if (strncmp(m, NAME ":", strlen(NAME ":")) != 0 || strchr(m, '\n') || !strstr(m, ": $") ||
        !strstr(m, "expected ") || !strstr(m, ", got "))
        broken("error message has the wrong shape", m);
}

/* The trace as the writer writes it (transfer full). */
static char *write_text(const ics_trace *t, size_t *len)
{
    char *buf = NULL;
    GError *err = NULL;
    FILE *f = open_memstream(&buf, len);
    if (!f)
        abort();
    if (!ics_trace_write_json_to(t, f, &err))
        broken("the writer refused a trace the reader returned", err->message);
    fclose(f);
    return buf;
}

/* Written, read back and written again: the same text. */
static void check_roundtrip(const ics_trace *t)
{
    size_t len1, len2;
    char *text1 = write_text(t, &len1);
    GError *err = NULL;
    ics_trace *back = ics_trace_read_json_text(NAME, text1, len1, &err);
    if (!back)
        broken("the reader refused what the writer wrote", err->message);
    char *text2 = write_text(back, &len2);
    if (len1 != len2 || memcmp(text1, text2, len1) != 0)
        broken("written, read and written again: other text", NULL);
    ics_trace_free(back);
    free(text1);
    free(text2);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    GError *err = NULL;
    ics_trace *t = ics_trace_read_json_text(NAME, (const char *)data, size, &err);
    if (t && err)
        broken("a trace and an error", err->message);
    if (t) {
        check(t);
        check_roundtrip(t);
    } else {
        check_error(err);
    }
    ics_trace_free(t);
    g_clear_error(&err);
    return 0;
}
