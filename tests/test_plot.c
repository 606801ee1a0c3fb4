/* Pictures (report.h, plot_svg.c): every chart is well-formed XML whatever its text holds
 * (markup characters, bytes that are not UTF-8, control characters), checked with xmllint
 * (libxml2-utils) where it is installed; points that cannot be drawn are left out; the same
 * input gives the same bytes. */
#include "report/report.h"

#include <glib.h>
#include <glib/gstdio.h>
#include <math.h>
#include <string.h>
#include <unistd.h>

/* xmllint --noout on the text; true if xmllint is not installed (the structural checks below
 * still run). */
static bool well_formed(const GString *svg)
{
    char *xmllint = g_find_program_in_path("xmllint");
    if (!xmllint) {
        g_test_message("xmllint not found: well-formedness not checked");
        return true;
    }
    char *path = NULL;
    int fd = g_file_open_tmp("icsim-plot-XXXXXX.svg", &path, NULL);
    g_assert_cmpint(fd, >=, 0);
    close(fd);
    g_assert_true(g_file_set_contents(path, svg->str, (gssize)svg->len, NULL));
    char *argv[] = {xmllint, "--noout", path, NULL};
    int status = -1;
    char *err = NULL;
    g_assert_true(g_spawn_sync(NULL, argv, NULL, G_SPAWN_STDOUT_TO_DEV_NULL, NULL, NULL, NULL, &err,
                               &status, NULL));
    if (status != 0)
        g_printerr("xmllint: %s\n", err);
    g_free(err);
    g_remove(path);
    g_free(path);
    g_free(xmllint);
    return status == 0;
}

static void test_lines(void)
{
    double x[] = {8, 1024, 1 << 20, 1 << 30, 0, NAN};
    double y1[] = {0.01, 3.5, 120, 370.8, 5, 5};
    double y2[] = {0.02, INFINITY, 110, 350, -1, 2};
    ics_plot_series s[] = {
        {.name = "simulated <NVLS & ring>", .n = 6, .x = x, .y = y1, .markers = true},
        {.name = "measured \"log\" \xff\xfe bad bytes \x01",
         .n = 6,
         .x = x,
         .y = y2,
         .dashed = true,
         .color = "#000000"},
    };
    ics_plot p = {.title = "all_reduce on <DGX H100> & friends",
                  .x_label = "size",
                  .y_label = "busbw (GB/s)",
                  .log_x = true,
                  .nseries = 2,
                  .series = s};
    GString *a = g_string_new(NULL), *b = g_string_new(NULL);
    ics_plot_svg_lines(&p, a);
    ics_plot_svg_lines(&p, b);
    g_assert_cmpstr(a->str, ==, b->str);
    g_assert_true(well_formed(a));
    g_assert_nonnull(strstr(a->str, "&lt;DGX H100&gt; &amp; friends"));
    g_assert_nonnull(strstr(a->str, "stroke-dasharray"));
    g_assert_nonnull(strstr(a->str, ">1 GiB</text>"));
    g_assert_nonnull(strstr(a->str, ">1 KiB</text>"));
    /* x = 0 and NaN are not drawn on a log axis, nor infinite or negative y: 4 + 3 markers */
    int circles = 0;
    for (const char *q = a->str; (q = strstr(q, "<circle")); q++)
        circles++;
    g_assert_cmpint(circles, ==, 4);
    g_string_free(a, TRUE);
    g_string_free(b, TRUE);
    /* nothing to draw: still a picture */
    GString *e = g_string_new(NULL);
    ics_plot empty = {.title = "empty", .x_label = "x", .y_label = "y"};
    ics_plot_svg_lines(&empty, e);
    g_assert_true(well_formed(e));
    g_string_free(e, TRUE);
}

static void test_bars(void)
{
    const char *bars[] = {"rank 0", "rank 8", "ranks 16-23 <&>"};
    const char *parts[] = {"compute", "TP", "bubble"};
    double v[] = {6.7, 1.4, 1.0, 6.7, 0.2, NAN, 5.0, -3, 2.0};
    ics_plot_bars b = {.title = "step",
                       .y_label = "seconds",
                       .nbars = 3,
                       .nparts = 3,
                       .bar_names = bars,
                       .part_names = parts,
                       .values = v};
    GString *out = g_string_new(NULL);
    ics_plot_svg_bars(&b, out);
    g_assert_true(well_formed(out));
    int rects = 0;
    for (const char *q = out->str; (q = strstr(q, "<rect x=")); q++)
        rects++;
    g_assert_cmpint(rects, ==, 7 + 3); /* 7 drawable parts, 3 legend boxes */
    g_assert_nonnull(strstr(out->str, "ranks 16-23 &lt;&amp;&gt;"));
    g_string_free(out, TRUE);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/plot/lines", test_lines);
    g_test_add_func("/plot/bars", test_bars);
    return g_test_run();
}
