/* libFuzzer target for the measurement reader of `icsim calibrate` (sim/calibrate/meas.h): any
 * bytes, read as an nccl-tests log or a JSON measurement file, yield either tables that keep
 * meas.h's promises or one located error in the house form. Anything else (a crash, a leak, a
 * sanitizer report, a hang) is a bug. Seeds: the logs in tests/data/calib and
 * validate/data/nccl/<id>.json. fuzz_hw_replay.c's driver can run it from files in any build. */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <glib.h>

#include "calibrate/meas.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define NAME "fuzz.log"

static void broken(const char *what, const char *detail)
{
    fprintf(stderr, "fuzz_calib_meas: %s: %s\n", what, detail ? detail : "");
    abort();
}

static void check_sample(const ics_meas_sample *s)
{
    const double v[] = {s->time_us, s->algbw_gbps, s->busbw_gbps, s->wrong_value};
    for (size_t i = 0; i < G_N_ELEMENTS(v); i++)
        if (!isfinite(v[i]) || (v[i] < 0 && v[i] != -1))
            broken("sample", "a figure neither >= 0 nor -1 (absent)");
    if (ics_meas_sample_ok(s) && (s->time_us < 0 || s->wrong))
        broken("sample", "usable without a time, or wrong");
}

/* What meas.h promises of a table. */
static void check_table(const ics_meas_table *t, int lines)
{
    if ((unsigned)t->op >= ICS_COLL_OP_COUNT || t->nranks < 1 || t->nranks > ICS_MEAS_MAX_RANKS)
        broken("table", "operation or rank count out of range");
    if (t->ranks_per_node < 0 || t->nodes < 0 || !t->dtype || !t->source || !t->op_from ||
        !t->nranks_from || t->n_rows < 1 || !t->rows || t->header_line < 0 ||
        t->header_line > lines)
        broken("table", "a field out of range");
    if (t->ranks_per_node > 0 && t->nodes > 0 && (int64_t)t->ranks_per_node * t->nodes != t->nranks)
        broken("table", "ranks per node x nodes is not the rank count");
    for (guint i = 0; i < t->n_rows; i++) {
        const ics_meas_row *r = &t->rows[i];
        if (r->line < 0 || r->line > lines || (t->header_line > 0 && r->line <= t->header_line) ||
            r->index < 0 || r->root < -1 || r->root >= ICS_MEAS_MAX_RANKS)
            broken("row", "line, index or root out of range");
        check_sample(&r->oop);
        check_sample(&r->ip);
    }
}

/* "fuzz.log[:line[:col]]: ... expected ..., got ..." on one line. */
static void check_error(const GError *err)
{
    if (!err || err->domain != ICS_MEAS_ERROR || !err->message)
        broken("error", "missing or of the wrong domain");
    const char *m = err->message;
    if (strncmp(m, NAME ":", strlen(NAME) + 1) != 0 || strchr(m, '\n') || !strstr(m, "expected ") ||
        !strstr(m, ", got "))
        broken("error message has the wrong shape", m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* a third of the inputs with the caller naming the operation, to reach that path too */
    const char *op = size % 3 == 0 ? "all_gather" : NULL;
    int lines = 1;
    for (size_t i = 0; i < size; i++)
        lines += data[i] == '\n';
    ics_meas *m = ics_meas_new();
    GError *err = NULL;
    if (ics_meas_read_text(m, NAME, (const char *)data, size, op, &err)) {
        if (err || ics_meas_n_tables(m) == 0)
            broken("result", "success with an error, or without a table");
        for (guint i = 0; i < ics_meas_n_tables(m); i++)
            check_table(ics_meas_table_at(m, i), lines);
    } else {
        check_error(err);
        if (ics_meas_n_tables(m) != 0)
            broken("result", "a failed read left tables");
        g_error_free(err);
    }
    ics_meas_free(m);
    return 0;
}
