/* Shared CLI plumbing; see cli_common.h. */
#include "cli/cli_common.h"

#include <stdio.h>

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

void ics_cli_emit(GString *out)
{
    fwrite(out->str, 1, out->len, stdout);
    fflush(stdout);
}
