/* libFuzzer target for the study reader (sweep.h, ics_sweep_load): the input is written as
 * `scen/study.json` in a private directory laid out like the repository (`hwmodels/` and
 * `scen/traces/` link to the shipped ones, `scen/` holds links to the shipped scenarios), so the
 * shipped studies are seeds whose relative paths resolve. Any bytes yield either one error of
 * the house form ("...study.json:L:C: $.path: expected ..., got ...", one line), or a study
 * whose configurations are 1..1e6, each axis naming a label per configuration, and whose CSV
 * header is one line with a column per axis. Nothing is simulated: a configuration's model is
 * built only when it runs. Anything else (a crash, a leak, a sanitizer report, a hang) is a bug.
 * fuzz_hw_replay.c's driver runs it from files in every build (fuzz_study_replay). */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <glib.h>
#include <glib/gstdio.h>

#include "core/json.h"
#include "sweep/sweep.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void broken(const char *what, const char *detail)
{
    fprintf(stderr, "fuzz_study: %s: %s\n", what, detail ? detail : "");
    abort();
}

static void link_into(const char *dir, const char *name, const char *target)
{
    char *path = g_build_filename(dir, name, NULL);
    if (symlink(target, path) != 0 && !g_file_test(path, G_FILE_TEST_EXISTS))
        broken("symlink", path);
    g_free(path);
}

/* The directory, made once per process (the fuzzer's inputs all go to one file in it). */
static const char *study_path(void)
{
    static char *path;
    if (path)
        return path;
    GError *err = NULL;
    char *dir = g_dir_make_tmp("icsim-fuzz-study-XXXXXX", &err);
    if (!dir)
        broken("temporary directory", err->message);
    char *scen = g_build_filename(dir, "scen", NULL);
    g_mkdir(scen, 0700);
    char *hw = g_build_filename(ICS_SOURCE_DIR, "hwmodels", NULL);
    char *traces = g_build_filename(ICS_SOURCE_DIR, "scenarios", "traces", NULL);
    link_into(dir, "hwmodels", hw);
    link_into(scen, "traces", traces);
    GDir *d = g_dir_open(ICS_SOURCE_DIR "/scenarios", 0, NULL);
    for (const char *f; d && (f = g_dir_read_name(d));)
        if (g_str_has_suffix(f, ".json")) {
            char *target = g_build_filename(ICS_SOURCE_DIR, "scenarios", f, NULL);
            link_into(scen, f, target);
            g_free(target);
        }
    if (d)
        g_dir_close(d);
    path = g_build_filename(scen, "study.json", NULL);
    g_free(hw);
    g_free(traces);
    g_free(scen);
    g_free(dir); /* left behind on exit: a few links in the temporary directory */
    return path;
}

static void check_error(const GError *err)
{
    if (!err || (err->domain != ICS_JSON_ERROR && err->domain != ICS_ERROR))
        broken("no error", err ? g_quark_to_string(err->domain) : NULL);
    if (strchr(err->message, '\n'))
        broken("message of several lines", err->message);
    if (!strstr(err->message, "study.json"))
        broken("message without the file", err->message);
}

static void check_study(const ics_sweep *s)
{
    int nc = ics_sweep_nconfigs(s), na = ics_sweep_naxes(s);
    if (nc < 1 || nc > 1000000)
        broken("configurations", NULL);
    if (ics_sweep_nsizes(s) < 1 || !ics_sweep_name(s))
        broken("sizes or name", NULL);
    for (int c = 0; c < nc; c += 1 + nc / 64)
        for (int a = 0; a < na; a++)
            if (!ics_sweep_label(s, c, a) || !ics_sweep_axis_name(s, a))
                broken("label", NULL);
    char *header = ics_sweep_csv_header(s);
    char *nl = strchr(header, '\n');
    if (!nl || nl[1])
        broken("CSV header not one line", header);
    g_free(header);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = study_path();
    if (!g_file_set_contents(path, (const char *)data, (gssize)size, NULL))
        broken("write", path);
    GError *err = NULL;
    ics_sweep *s = ics_sweep_load(path, &err);
    if (s) {
        if (err)
            broken("study and error", err->message);
        check_study(s);
    } else {
        check_error(err);
    }
    g_clear_error(&err);
    ics_sweep_free(s);
    return 0;
}
