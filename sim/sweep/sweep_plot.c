/* A study's rows as a picture: bus bandwidth against size (log axis), one line per
 * configuration, named by its axes' labels. Read back from the CSV the run wrote, so a resumed
 * run's picture shows every row, old and new. */
#include "report/report.h"
#include "sweep/sweep_internal.h"

#include <stdlib.h>
#include <string.h>

/* One CSV line into its fields (RFC 4180 quoting: "" inside quotes is a quote). */
static GPtrArray *split_csv(const char *line)
{
    GPtrArray *f = g_ptr_array_new_with_free_func(g_free);
    GString *cur = g_string_new(NULL);
    bool quoted = false;
    for (const char *p = line;; p++) {
        if (quoted) {
            if (*p == '"' && p[1] == '"') {
                g_string_append_c(cur, '"');
                p++;
            } else if (*p == '"') {
                quoted = false;
            } else if (*p) {
                g_string_append_c(cur, *p);
            } else {
                break;
            }
        } else if (*p == '"') {
            quoted = true;
        } else if (*p == ',' || !*p) {
            g_ptr_array_add(f, g_strdup(cur->str));
            g_string_truncate(cur, 0);
            if (!*p)
                break;
        } else {
            g_string_append_c(cur, *p);
        }
    }
    g_string_free(cur, TRUE);
    return f;
}

/* A training study: a stacked bar per configuration of where the critical rank's step went. */
static bool train_svg(const ics_sweep *s, char **lines, GString *out, GError **error)
{
    /* config, study, the axes, then model ... mfu, memory_gb (14 columns), then the parts */
    const int np = ICS_REPORT_STEP_NPARTS, first = 2 + s->naxes + 14, error_col = first + np;
    int nc = s->nconfigs, nbars = 0;
    double *values = g_new0(double, (size_t)nc *np + 1);
    char **names = g_new0(char *, nc + 1);
    bool ok = true;
    for (int i = 1; ok && lines[i]; i++) {
        if (!*lines[i])
            continue;
        GPtrArray *f = split_csv(lines[i]);
        int c = f->len > (guint)error_col ? atoi(g_ptr_array_index(f, 0)) : -1;
        if (c < 0 || c >= nc || nbars >= nc) {
            g_set_error(error, ICS_ERROR, ICS_ERROR_INPUT,
                        "the rows to plot are not this study's (line %d)", i + 1);
            ok = false;
        } else if (!*(const char *)g_ptr_array_index(f, error_col)) {
            for (int k = 0; k < np; k++)
                values[nbars * np + k] = g_ascii_strtod(g_ptr_array_index(f, first + k), NULL);
            GString *name = g_string_new(NULL);
            for (int a = 0; a < s->naxes; a++)
                g_string_append_printf(name, "%s%s", a ? " / " : "", ics_sweep_label(s, c, a));
            names[nbars++] = g_string_free(name, FALSE);
        }
        g_ptr_array_free(f, TRUE);
    }
    if (ok) {
        char *title = g_strdup_printf("%s: the critical rank's step", s->name);
        ics_plot_bars b = {.title = title,
                           .y_label = "seconds",
                           .nbars = nbars,
                           .nparts = np,
                           .bar_names = (const char *const *)names,
                           .part_names = ics_report_step_parts,
                           .values = values};
        ics_plot_svg_bars(&b, out);
        g_free(title);
    }
    g_strfreev(names);
    g_free(values);
    return ok;
}

bool ics_sweep_svg(const ics_sweep *s, const char *csv, GString *out, GError **error)
{
    if (s->step) {
        char **lines = g_strsplit(csv, "\n", -1);
        bool ok = train_svg(s, lines, out, error);
        g_strfreev(lines);
        return ok;
    }
    int nc = s->nconfigs, ns = s->nsizes;
    double *x = g_new(double, (size_t)nc *ns + 1), *y = g_new(double, (size_t)nc *ns + 1);
    int *count = g_new0(int, nc + 1);
    int size_col = 2 + s->naxes + 4, busbw_col = 2 + s->naxes + 8, error_col = busbw_col + 4;
    char **lines = g_strsplit(csv, "\n", -1);
    bool ok = lines[0] != NULL;
    for (int i = 1; ok && lines[i]; i++) {
        if (!*lines[i])
            continue;
        GPtrArray *f = split_csv(lines[i]);
        int c = f->len > (guint)error_col ? atoi(g_ptr_array_index(f, 0)) : -1;
        if (c < 0 || c >= nc || count[c] >= ns) {
            g_set_error(error, ICS_ERROR, ICS_ERROR_INPUT,
                        "the rows to plot are not this study's (line %d)", i + 1);
            ok = false;
        } else if (!*(const char *)g_ptr_array_index(f, error_col)) {
            x[c * ns + count[c]] = g_ascii_strtod(g_ptr_array_index(f, size_col), NULL);
            y[c * ns + count[c]] = g_ascii_strtod(g_ptr_array_index(f, busbw_col), NULL);
            count[c]++;
        }
        g_ptr_array_free(f, TRUE);
    }
    g_strfreev(lines);
    ics_plot_series *series = g_new0(ics_plot_series, nc + 1);
    char **names = g_new0(char *, nc + 1);
    for (int c = 0; c < nc; c++) {
        GString *name = g_string_new(NULL);
        for (int a = 0; a < s->naxes; a++)
            g_string_append_printf(name, "%s%s", a ? " / " : "", ics_sweep_label(s, c, a));
        names[c] = g_string_free(name, FALSE);
        series[c] = (ics_plot_series){.name = *names[c] ? names[c] : s->name,
                                      .n = count[c],
                                      .x = x + c * ns,
                                      .y = y + c * ns,
                                      .dashed = c >= 10, /* past the palette: dashes apart */
                                      .markers = true};
    }
    if (ok) {
        char *ylabel = g_strdup_printf("%s bus bandwidth (GB/s)", ics_coll_op_name(s->op));
        ics_plot p = {.title = s->name,
                      .x_label = "size",
                      .y_label = ylabel,
                      .log_x = true,
                      .nseries = nc,
                      .series = series};
        ics_plot_svg_lines(&p, out);
        g_free(ylabel);
    }
    g_strfreev(names);
    g_free(series);
    g_free(count);
    g_free(x);
    g_free(y);
    return ok;
}
