/* Shared CLI plumbing; see cli_common.h. */
#include "cli/cli_common.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

bool ics_cli_parse(const char *cmd, const char *params, const char *summary,
                   const GOptionEntry *entries, int *argc, char ***argv)
{
    GOptionContext *ctx = g_option_context_new(params);
    g_option_context_set_summary(ctx, summary);
    g_option_context_add_main_entries(ctx, entries, NULL);
    GError *err = NULL;
    bool ok = g_option_context_parse(ctx, argc, argv, &err);
    if (!ok) {
        fprintf(stderr, "icsim %s: %s\nRun `icsim %s --help` for its options.\n", cmd, err->message,
                cmd);
        g_error_free(err);
    }
    g_option_context_free(ctx);
    return ok;
}

ics_hw *ics_cli_load_hw(const char *path, int nodes_override)
{
    GError *err = NULL;
    ics_hw *hw = ics_hw_load(path, nodes_override, &err);
    if (!hw) {
        fprintf(stderr, "%s\n", err->message);
        g_error_free(err);
    }
    return hw;
}

bool ics_cli_output_ok(const char *cmd, const char *option, const char *path)
{
    const char *why = NULL;
    char *dir = g_path_get_dirname(path);
    if (!*path)
        why = "expected a file name, got an empty one";
    else if (g_file_test(path, G_FILE_TEST_IS_DIR))
        why = "expected a file, got a directory";
    else if (!g_file_test(dir, G_FILE_TEST_IS_DIR))
        why = "expected an existing directory to write into, got none";
    else if (access(dir, W_OK) != 0)
        why = strerror(errno);
    if (why)
        fprintf(stderr, "icsim %s: %s: %s: %s\n", cmd, option, path, why);
    g_free(dir);
    return why == NULL;
}

void ics_cli_emit(GString *out)
{
    fwrite(out->str, 1, out->len, stdout);
    fflush(stdout);
}
