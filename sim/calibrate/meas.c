/* The measurement set: files read one at a time into tables, format chosen by content (the
 * readers: meas_nccl_tests.c, meas_json.c). Invariant: a file adds all its tables or none. */
#include "calibrate/meas_internal.h"

#include <math.h>
#include <string.h>
#include <sys/stat.h>

#include <glib/gstdio.h>

struct ics_meas {
    GPtrArray *tables; /* of ics_meas_table*, owned */
    guint n_rows;      /* over every table */
};

static void table_free_cb(gpointer p)
{
    ics_meas__table_free(p);
}

ics_meas *ics_meas_new(void)
{
    ics_meas *m = g_new0(ics_meas, 1);
    m->tables = g_ptr_array_new_with_free_func(table_free_cb);
    return m;
}

void ics_meas_free(ics_meas *m)
{
    if (!m)
        return;
    g_ptr_array_free(m->tables, TRUE);
    g_free(m);
}

guint ics_meas_n_tables(const ics_meas *m)
{
    return m->tables->len;
}

const ics_meas_table *ics_meas_table_at(const ics_meas *m, guint i)
{
    g_assert(i < m->tables->len);
    return g_ptr_array_index(m->tables, i);
}

/* ---- reading --------------------------------------------------------------------------------- */

static bool is_json(const char *text, size_t len)
{
    size_t i = 0;
    if (len >= 3 && memcmp(text, "\xEF\xBB\xBF", 3) == 0)
        i = 3; /* a UTF-8 byte-order mark */
    while (i < len && g_ascii_isspace(text[i]))
        i++;
    return i < len && text[i] == '{';
}

bool ics_meas_read_text(ics_meas *m, const char *name, const char *text, size_t len, const char *op,
                        GError **error)
{
    g_return_val_if_fail(m && name && (text || len == 0), false);
    ics_coll_op given;
    if (op && ics_meas__op_parse(op, &given) != 1) {
        char *esc = g_strescape(op, NULL);
        g_set_error(error, ICS_MEAS_ERROR, ICS_MEAS_ERROR_INPUT,
                    "%s: the operation: expected one of %s, got \"%s\"", name, ics_meas__op_list(),
                    esc);
        g_free(esc);
        return false;
    }
    if (len > ICS_MEAS_MAX_FILE_BYTES) {
        g_set_error(error, ICS_MEAS_ERROR, ICS_MEAS_ERROR_INPUT,
                    "%s: expected a file of at most %u MiB, got %zu bytes", name,
                    ICS_MEAS_MAX_FILE_BYTES >> 20, len);
        return false;
    }
    GPtrArray *got = g_ptr_array_new_with_free_func(table_free_cb);
    guint rows_left = ICS_MEAS_MAX_ROWS - m->n_rows;
    bool ok = is_json(text, len) ? ics_meas__read_json(name, text, len, rows_left, got, error)
                                 : ics_meas__read_nccl_tests(name, text, len, op ? &given : NULL,
                                                             rows_left, got, error);
    if (ok) {
        for (guint i = 0; i < got->len; i++) {
            ics_meas_table *t = g_ptr_array_index(got, i);
            g_assert(t->n_rows >= 1 && t->nranks >= 1 && t->dtype);
            m->n_rows += t->n_rows;
            g_ptr_array_add(m->tables, t);
        }
        g_ptr_array_set_free_func(got, NULL); /* moved */
    }
    g_ptr_array_free(got, TRUE);
    return ok;
}

bool ics_meas_read_file(ics_meas *m, const char *path, const char *op, GError **error)
{
    g_return_val_if_fail(m && path, false);
    /* Kind and size first: a FIFO or /dev/zero would otherwise be read forever. */
    GStatBuf st;
    if (g_stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
        g_set_error(error, ICS_MEAS_ERROR, ICS_MEAS_ERROR_INPUT,
                    "%s: expected a regular file, got %s", path,
                    S_ISDIR(st.st_mode) ? "a directory" : "a special file");
        return false;
    }
    if (g_stat(path, &st) == 0 && (guint64)st.st_size > ICS_MEAS_MAX_FILE_BYTES) {
        g_set_error(error, ICS_MEAS_ERROR, ICS_MEAS_ERROR_INPUT,
                    "%s: expected a file of at most %u MiB, got %lld bytes", path,
                    ICS_MEAS_MAX_FILE_BYTES >> 20, (long long)st.st_size);
        return false;
    }
    char *text = NULL;
    gsize len = 0;
    GError *io = NULL;
    if (!g_file_get_contents(path, &text, &len, &io)) {
        g_set_error(error, ICS_MEAS_ERROR, ICS_MEAS_ERROR_INPUT,
                    "%s: expected a readable file, got %s", path, io->message);
        g_error_free(io);
        return false;
    }
    bool ok = ics_meas_read_text(m, path, text, len, op, error);
    g_free(text);
    return ok;
}
