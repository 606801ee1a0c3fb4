/* Charts as SVG text, written here rather than through a library: a line chart and a stacked
 * bar chart are a few hundred elements of well-known XML, and Debian's plotting libraries
 * (PLplot, cairo) would add a dependency and a renderer for what a GString does
 * (docs/whatif.md, "Pictures"). Invariant: the output is well-formed XML for any input (text
 * is escaped and made valid UTF-8, numbers are finite or left out), and the same input gives
 * the same bytes. */
#include "report/report.h"

#include <math.h>
#include <string.h>

#define W            880.0 /* the picture */
#define H            520.0
#define LEFT         78.0 /* the plot area inside it */
#define RIGHT        250.0
#define TOP          44.0
#define BOTTOM       62.0
#define LEGEND_X     (W - RIGHT + 18)
#define LEGEND_CHARS 34 /* at 12 px, what the 250 px beside the plot hold */

/* Tableau 10: distinct on screen and in grey-scale print, the usual choice for categories. */
static const char *const palette[] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
                                      "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"};

const char *ics_plot_color(int i)
{
    return palette[(unsigned)i % G_N_ELEMENTS(palette)];
}

static void text_escaped(GString *out, const char *s)
{
    char *valid = g_utf8_make_valid(s ? s : "", -1);
    for (const char *p = valid; *p; p++) {
        switch (*p) {
        case '&':
            g_string_append(out, "&amp;");
            break;
        case '<':
            g_string_append(out, "&lt;");
            break;
        case '>':
            g_string_append(out, "&gt;");
            break;
        case '"':
            g_string_append(out, "&quot;");
            break;
        default:
            /* XML 1.0 allows no control characters but tab, newline and carriage return */
            if ((unsigned char)*p >= 0x20 || *p == '\t' || *p == '\n' || *p == '\r')
                g_string_append_c(out, *p);
        }
    }
    g_free(valid);
}

static void num(GString *out, double v)
{
    char buf[G_ASCII_DTOSTR_BUF_SIZE];
    g_string_append(out, g_ascii_formatd(buf, sizeof buf, "%.1f", v));
}

static void text_at(GString *out, double x, double y, const char *anchor, const char *extra,
                    const char *s)
{
    g_string_append(out, "<text x=\"");
    num(out, x);
    g_string_append(out, "\" y=\"");
    num(out, y);
    g_string_append_printf(out, "\" text-anchor=\"%s\"%s%s>", anchor, extra ? " " : "",
                           extra ? extra : "");
    text_escaped(out, s);
    g_string_append(out, "</text>\n");
}

static void line(GString *out, double x1, double y1, double x2, double y2, const char *style)
{
    g_string_append(out, "<line x1=\"");
    num(out, x1);
    g_string_append(out, "\" y1=\"");
    num(out, y1);
    g_string_append(out, "\" x2=\"");
    num(out, x2);
    g_string_append(out, "\" y2=\"");
    num(out, y2);
    g_string_append_printf(out, "\" %s/>\n", style);
}

/* The picture's opening; height: H, or more below the plot for long bar labels. */
static void header(GString *out, const char *title, double height)
{
    g_string_append_printf(out,
                           "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                           "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
                           "viewBox=\"0 0 %d %d\" font-family=\"DejaVu Sans, Helvetica, Arial, "
                           "sans-serif\" font-size=\"12\">\n"
                           "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
                           (int)W, (int)height, (int)W, (int)height);
    text_at(out, W / 2, 24, "middle", "font-size=\"15\" font-weight=\"bold\"", title);
}

/* "Nice" linear ticks covering [0, hi]: steps of 1, 2 or 5 x 10^k, about six of them. */
static double nice_step(double hi)
{
    double raw = hi / 6, mag = pow(10, floor(log10(raw))), f = raw / mag;
    return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * mag;
}

/* A size in bytes as nccl-tests users read it: 8 B, 64 KiB, 1 GiB. */
static void size_label(double bytes, char *buf, size_t n)
{
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int u = 0;
    while (bytes >= 1024 && u < 4) {
        bytes /= 1024;
        u++;
    }
    g_snprintf(buf, n, "%g %s", bytes, units[u]);
}

typedef struct {
    double x0, x1, y1; /* data range: x in log2 or linear, y from 0 */
    bool log_x;
} frame;

static double px(const frame *f, double x)
{
    double v = f->log_x ? log2(x) : x;
    double span = f->x1 > f->x0 ? f->x1 - f->x0 : 1;
    return LEFT + (v - f->x0) / span * (W - LEFT - RIGHT);
}

static double py(const frame *f, double y)
{
    return H - BOTTOM - (f->y1 > 0 ? y / f->y1 : 0) * (H - TOP - BOTTOM);
}

static bool usable(const ics_plot *p, double x, double y)
{
    return isfinite(x) && isfinite(y) && y >= 0 && (!p->log_x || x > 0);
}

static void axes(const ics_plot *p, const frame *f, GString *out)
{
    double step = nice_step(f->y1);
    for (double y = 0; y <= f->y1 + step * 1e-9; y += step) {
        line(out, LEFT, py(f, y), W - RIGHT, py(f, y), "stroke=\"#e4e4e4\"");
        char buf[32];
        g_snprintf(buf, sizeof buf, "%g", y);
        text_at(out, LEFT - 6, py(f, y) + 4, "end", NULL, buf);
    }
    /* x: every power of 2 on a log axis would crowd: a tick every 1, 2, 5, 10 or 20
     * doublings, at most about ten, so that KiB, MiB and GiB fall on ticks */
    if (p->log_x) {
        static const int steps[] = {1, 2, 5, 10, 20};
        int lo = (int)ceil(f->x0), hi = (int)floor(f->x1), every = 1;
        for (size_t i = 0; i < G_N_ELEMENTS(steps) && (hi - lo) / every > 10; i++)
            every = steps[i];
        for (int e = lo; e <= hi; e++) {
            if (e % every)
                continue;
            double x = px(f, ldexp(1, e));
            line(out, x, TOP, x, H - BOTTOM, "stroke=\"#f0f0f0\"");
            line(out, x, H - BOTTOM, x, H - BOTTOM + 5, "stroke=\"#444\"");
            char buf[32];
            size_label(ldexp(1, e), buf, sizeof buf);
            text_at(out, x, H - BOTTOM + 18, "middle", NULL, buf);
        }
    } else {
        double xs = nice_step(f->x1 - f->x0);
        for (double x = ceil(f->x0 / xs) * xs; x <= f->x1 + xs * 1e-9; x += xs) {
            line(out, px(f, x), H - BOTTOM, px(f, x), H - BOTTOM + 5, "stroke=\"#444\"");
            char buf[32];
            g_snprintf(buf, sizeof buf, "%g", x);
            text_at(out, px(f, x), H - BOTTOM + 18, "middle", NULL, buf);
        }
    }
    line(out, LEFT, H - BOTTOM, W - RIGHT, H - BOTTOM, "stroke=\"#444\"");
    line(out, LEFT, TOP, LEFT, H - BOTTOM, "stroke=\"#444\"");
    text_at(out, (LEFT + W - RIGHT) / 2, H - 18, "middle", NULL, p->x_label);
    char rot[64];
    g_snprintf(rot, sizeof rot, "transform=\"rotate(-90 18 %.1f)\"", (TOP + H - BOTTOM) / 2);
    text_at(out, 18, (TOP + H - BOTTOM) / 2, "middle", rot, p->y_label);
}

static void legend_entry(GString *out, int k, const char *color, const char *dash, const char *name)
{
    double y = TOP + 8 + 18 * k;
    char style[128];
    g_snprintf(style, sizeof style, "stroke=\"%s\" stroke-width=\"2.5\"%s%s%s", color,
               dash ? " stroke-dasharray=\"" : "", dash ? dash : "", dash ? "\"" : "");
    line(out, LEGEND_X, y, LEGEND_X + 22, y, style);
    /* what fits beside the plot; the whole name stays the line's tooltip */
    char *valid = g_utf8_make_valid(name ? name : "", -1);
    if (g_utf8_strlen(valid, -1) > LEGEND_CHARS) {
        char *cut = g_utf8_substring(valid, 0, LEGEND_CHARS - 1);
        g_free(valid);
        valid = g_strconcat(cut, "\u2026", NULL);
        g_free(cut);
    }
    text_at(out, LEGEND_X + 28, y + 4, "start", NULL, valid);
    g_free(valid);
}

void ics_plot_svg_lines(const ics_plot *p, GString *out)
{
    frame f = {.x0 = INFINITY, .x1 = -INFINITY, .y1 = 0, .log_x = p->log_x};
    for (int s = 0; s < p->nseries; s++)
        for (int i = 0; i < p->series[s].n; i++) {
            double x = p->series[s].x[i], y = p->series[s].y[i];
            if (!usable(p, x, y))
                continue;
            double v = p->log_x ? log2(x) : x;
            f.x0 = MIN(f.x0, v);
            f.x1 = MAX(f.x1, v);
            f.y1 = MAX(f.y1, y);
        }
    if (!isfinite(f.x0)) /* nothing to draw: an empty frame */
        f.x0 = 0, f.x1 = 1;
    f.y1 = f.y1 > 0 ? ceil(f.y1 * 1.05 / nice_step(f.y1 * 1.05)) * nice_step(f.y1 * 1.05) : 1;
    header(out, p->title, H);
    axes(p, &f, out);
    int shown = 0;
    for (int s = 0; s < p->nseries; s++) {
        const ics_plot_series *se = &p->series[s];
        const char *color = se->color ? se->color : ics_plot_color(s);
        const char *dash = se->dashed ? "6 4" : NULL;
        g_string_append_printf(out, "<g><title>");
        text_escaped(out, se->name);
        g_string_append_printf(out,
                               "</title>\n<polyline fill=\"none\" stroke=\"%s\" "
                               "stroke-width=\"2\"%s%s%s points=\"",
                               color, dash ? " stroke-dasharray=\"" : "", dash ? dash : "",
                               dash ? "\"" : "");
        for (int i = 0, k = 0; i < se->n; i++) {
            if (!usable(p, se->x[i], se->y[i]))
                continue;
            if (k++)
                g_string_append_c(out, ' ');
            num(out, px(&f, se->x[i]));
            g_string_append_c(out, ',');
            num(out, py(&f, se->y[i]));
        }
        g_string_append(out, "\"/>\n");
        for (int i = 0; se->markers && i < se->n; i++) {
            if (!usable(p, se->x[i], se->y[i]))
                continue;
            g_string_append(out, "<circle cx=\"");
            num(out, px(&f, se->x[i]));
            g_string_append(out, "\" cy=\"");
            num(out, py(&f, se->y[i]));
            g_string_append_printf(out, "\" r=\"3\" fill=\"%s\"/>\n", color);
        }
        g_string_append(out, "</g>\n");
        /* the legend holds what fits beside the plot; the rest keep their tooltips */
        if (TOP + 8 + 18 * shown < H - BOTTOM)
            legend_entry(out, shown++, color, dash, se->name);
    }
    g_string_append(out, "</svg>\n");
}

void ics_plot_svg_bars(const ics_plot_bars *b, GString *out)
{
    double top = 0;
    for (int i = 0; i < b->nbars; i++) {
        double sum = 0;
        for (int k = 0; k < b->nparts; k++)
            if (isfinite(b->values[i * b->nparts + k]) && b->values[i * b->nparts + k] > 0)
                sum += b->values[i * b->nparts + k];
        top = MAX(top, sum);
    }
    double step = nice_step(top > 0 ? top * 1.05 : 1);
    frame f = {.x0 = 0, .x1 = 1, .y1 = top > 0 ? ceil(top * 1.05 / step) * step : 1};
    /* many bars: names stand vertical under them, the picture grows to hold the longest */
    bool vertical = b->nbars > 8;
    int longest = 0;
    for (int i = 0; vertical && i < b->nbars; i++)
        longest = MAX(longest, (int)g_utf8_strlen(b->bar_names[i] ? b->bar_names[i] : "", -1));
    header(out, b->title, H + (vertical ? MIN(300.0, 5.6 * longest + 10) : 0));
    for (double y = 0; y <= f.y1 + step * 1e-9; y += step) {
        line(out, LEFT, py(&f, y), W - RIGHT, py(&f, y), "stroke=\"#e4e4e4\"");
        char buf[32];
        g_snprintf(buf, sizeof buf, "%g", y);
        text_at(out, LEFT - 6, py(&f, y) + 4, "end", NULL, buf);
    }
    double slot = (W - LEFT - RIGHT) / MAX(1, b->nbars), bw = MIN(70.0, slot * 0.7);
    for (int i = 0; i < b->nbars; i++) {
        double x = LEFT + slot * (i + 0.5) - bw / 2, acc = 0;
        for (int k = 0; k < b->nparts; k++) {
            double v = b->values[i * b->nparts + k];
            if (!isfinite(v) || v <= 0)
                continue;
            double y0 = py(&f, acc), y1 = py(&f, acc + v);
            g_string_append(out, "<rect x=\"");
            num(out, x);
            g_string_append(out, "\" y=\"");
            num(out, y1);
            g_string_append(out, "\" width=\"");
            num(out, bw);
            g_string_append(out, "\" height=\"");
            num(out, y0 - y1);
            g_string_append_printf(out, "\" fill=\"%s\"><title>", ics_plot_color(k));
            text_escaped(out, b->part_names[k]);
            g_string_append(out, ": ");
            char buf[32];
            g_snprintf(buf, sizeof buf, "%.4g", v);
            text_escaped(out, buf);
            g_string_append(out, "</title></rect>\n");
            acc += v;
        }
        char rot[128];
        double lx = LEFT + slot * (i + 0.5), ly = H - BOTTOM + 14;
        if (vertical)
            g_snprintf(rot, sizeof rot, "transform=\"rotate(-90 %.1f %.1f)\" font-size=\"10\"",
                       lx + 4, ly - 6);
        text_at(out, vertical ? lx + 4 : lx, vertical ? ly - 6 : ly, vertical ? "end" : "middle",
                vertical ? rot : NULL, b->bar_names[i]);
    }
    line(out, LEFT, H - BOTTOM, W - RIGHT, H - BOTTOM, "stroke=\"#444\"");
    line(out, LEFT, TOP, LEFT, H - BOTTOM, "stroke=\"#444\"");
    char rot[64];
    g_snprintf(rot, sizeof rot, "transform=\"rotate(-90 18 %.1f)\"", (TOP + H - BOTTOM) / 2);
    text_at(out, 18, (TOP + H - BOTTOM) / 2, "middle", rot, b->y_label);
    for (int k = 0; k < b->nparts; k++) {
        double y = TOP + 8 + 18 * k;
        g_string_append(out, "<rect x=\"");
        num(out, LEGEND_X);
        g_string_append(out, "\" y=\"");
        num(out, y - 6);
        g_string_append_printf(out, "\" width=\"14\" height=\"12\" fill=\"%s\"/>\n",
                               ics_plot_color(k));
        text_at(out, LEGEND_X + 20, y + 4, "start", NULL, b->part_names[k]);
    }
    g_string_append(out, "</svg>\n");
}
