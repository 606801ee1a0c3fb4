/* `icsim sweep STUDY.json [-o PREFIX | --csv FILE --json FILE] [-j N] [--restart]`: runs a
 * what-if study (sweep/sweep.h, docs/whatif.md) on a thread pool, and under `mpirun` across
 * processes (cli_sweep_mpi.c), into a CSV and a JSON-lines file that an interrupted run resumes;
 * without output files, the CSV goes to stdout once every configuration ran. */
#include "cli/cli.h"
#include "cli/cli_common.h"
#include "cli/cli_sweep.h"
#include "sweep/sweep.h"

#include <glib/gstdio.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

typedef struct {
    char *prefix, *csv, *json, *threads_text, *plot;
    gboolean restart, quiet;
} sweep_args;

static void args_clear(sweep_args *a)
{
    g_free(a->prefix);
    g_free(a->csv);
    g_free(a->json);
    g_free(a->threads_text);
    g_free(a->plot);
}

/* --plot: the rows the run left in `csv_path` as a picture (sweep_plot.c), written whole. */
static bool plot(const ics_sweep *s, const char *csv_path, const char *svg_path)
{
    char *text = NULL;
    GError *err = NULL;
    GString *svg = g_string_new(NULL);
    bool ok = g_file_get_contents(csv_path, &text, NULL, &err) &&
              ics_sweep_svg(s, text, svg, &err) &&
              g_file_set_contents(svg_path, svg->str, (gssize)svg->len, &err);
    if (!ok) {
        fprintf(stderr, "icsim sweep: --plot: %s\n", err->message);
        g_error_free(err);
    }
    g_free(text);
    g_string_free(svg, TRUE);
    return ok;
}

static int usage_error(const char *fmt, const char *what)
{
    return ics_cli_fail("sweep", g_error_new(ICS_ERROR, ICS_ERROR_INPUT, fmt, what));
}

/* The CSV of a run without output files: through a private temporary file, printed whole
 * once the study ran (nothing on stdout if it did not). */
static int to_stdout(const ics_sweep *s, ics_sweep_opts *o, const char *svg)
{
    char *tmp = NULL;
    GError *err = NULL;
    int fd = g_file_open_tmp("icsim-sweep-XXXXXX.csv", &tmp, &err);
    if (fd < 0)
        return ics_cli_fail("sweep", err);
    close(fd);
    o->csv_path = tmp;
    o->restart = true;
    int rc = ICS_EXIT_OK;
    if (!ics_sweep_run(s, o, NULL, NULL, &err)) {
        fprintf(stderr, "icsim sweep: %s\n", err->message);
        rc = ics_error_exit_status(err);
        g_error_free(err);
    } else if (o->split == NULL || o->split->writer) {
        char *text = NULL;
        gsize len = 0;
        if (svg && !plot(s, tmp, svg))
            rc = ICS_EXIT_FAIL;
        else if (g_file_get_contents(tmp, &text, &len, NULL))
            fwrite(text, 1, len, stdout);
        g_free(text);
    }
    g_remove(tmp);
    g_free(tmp);
    return rc;
}

int ics_cli_sweep(int argc, char **argv)
{
    sweep_args a = {0};
    const GOptionEntry entries[] = {
        {"output", 'o', 0, G_OPTION_ARG_FILENAME, &a.prefix,
         "write PREFIX.csv and PREFIX.jsonl (resumed if they hold this study's first rows)",
         "PREFIX"},
        {"csv", 0, 0, G_OPTION_ARG_FILENAME, &a.csv, "the rows as CSV", "FILE"},
        {"json", 0, 0, G_OPTION_ARG_FILENAME, &a.json, "the rows as JSON, one object a line",
         "FILE"},
        {"threads", 'j', 0, G_OPTION_ARG_STRING, &a.threads_text,
         "configurations run at once (default: one per core)", "N"},
        {"restart", 0, 0, G_OPTION_ARG_NONE, &a.restart,
         "start over: ignore rows already in the files", NULL},
        {"quiet", 'q', 0, G_OPTION_ARG_NONE, &a.quiet, "no progress line on stderr", NULL},
        {"plot", 0, 0, G_OPTION_ARG_FILENAME, &a.plot,
         "also draw bus bandwidth against size, a line per configuration, as SVG", "FILE.svg"},
        G_OPTION_ENTRY_NULL};
    const GOptionEntry *const groups[] = {entries, NULL};
    int rc = ICS_EXIT_USAGE;
    ics_sweep *s = NULL;
    char *csv = NULL, *json = NULL;
    if (!ics_cli_parse_groups("sweep", "STUDY.json",
                              "Run a what-if study: the product of its axes, one CSV and one "
                              "JSON row per point (docs/whatif.md).",
                              groups, &argc, &argv))
        goto done;
    if (argc != 2) {
        rc = usage_error("expected one STUDY.json, got %s", argc < 2 ? "none" : "another argument");
        goto done;
    }
    int threads = (int)MIN(g_get_num_processors(), 1024);
    GError *err = NULL;
    if (!ics_cli_int_in("--threads", a.threads_text, 1, 1024, &threads, &err)) {
        rc = ics_cli_fail("sweep", err);
        goto done;
    }
    if (a.prefix && (a.csv || a.json)) {
        rc = usage_error("expected -o PREFIX or --csv/--json, not both%s", "");
        goto done;
    }
    csv = a.prefix ? g_strconcat(a.prefix, ".csv", NULL) : g_strdup(a.csv);
    json = a.prefix ? g_strconcat(a.prefix, ".jsonl", NULL) : g_strdup(a.json);
    if ((csv && !ics_cli_output_ok("sweep", a.prefix ? "-o" : "--csv", csv)) ||
        (json && !ics_cli_output_ok("sweep", a.prefix ? "-o" : "--json", json)) ||
        (a.plot && !ics_cli_output_ok("sweep", "--plot", a.plot)))
        goto done;
    if (a.plot && json && !csv) {
        rc = usage_error("--plot draws the CSV's rows: expected -o PREFIX or --csv FILE with "
                         "it%s",
                         "");
        goto done;
    }
    s = ics_sweep_load(argv[1], &err);
    if (!s) {
        rc = ics_cli_fail("sweep", err);
        goto done;
    }
    ics_sweep_split split;
    bool mpi = ics_cli_sweep_mpi_split(&split);
    ics_sweep_opts o = {.threads = threads,
                        .csv_path = csv,
                        .json_path = json,
                        .restart = a.restart,
                        .progress = !a.quiet,
                        .split = mpi ? &split : NULL};
    if (!csv && !json) {
        rc = to_stdout(s, &o, a.plot);
    } else {
        int ran = 0, skipped = 0;
        if (ics_sweep_run(s, &o, &ran, &skipped, &err)) {
            rc = ICS_EXIT_OK;
            if (a.plot && csv && (!mpi || split.writer) && !plot(s, csv, a.plot))
                rc = ICS_EXIT_FAIL;
            if (!a.quiet && (!mpi || split.writer))
                fprintf(stderr, "icsim sweep: %d configurations run, %d found done%s%s%s%s\n", ran,
                        skipped, csv ? ", " : "", csv ? csv : "", json ? ", " : "",
                        json ? json : "");
        } else {
            fprintf(stderr, "icsim sweep: %s\n", err->message);
            rc = ics_error_exit_status(err);
            g_error_free(err);
        }
    }
    if (mpi)
        ics_cli_sweep_mpi_end(&split, rc == ICS_EXIT_OK);
done:
    ics_sweep_free(s);
    g_free(csv);
    g_free(json);
    args_clear(&a);
    return rc;
}
