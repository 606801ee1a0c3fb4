/* Shared CLI plumbing; see cli_common.h. */
#include "cli/cli_common.h"

#include "cli/cli.h"
#include "workload/workload.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

bool ics_cli_parse(const char *cmd, const char *params, const char *summary,
                   const GOptionEntry *entries, int *argc, char ***argv)
{
    const GOptionEntry *const groups[] = {entries, NULL};
    return ics_cli_parse_groups(cmd, params, summary, groups, argc, argv);
}

bool ics_cli_parse_groups(const char *cmd, const char *params, const char *summary,
                          const GOptionEntry *const *groups, int *argc, char ***argv)
{
    return ics_cli_parse_help(cmd, params, summary, groups, true, argc, argv);
}

bool ics_cli_parse_help(const char *cmd, const char *params, const char *summary,
                        const GOptionEntry *const *groups, bool help, int *argc, char ***argv)
{
    GOptionContext *ctx = g_option_context_new(params);
    g_option_context_set_help_enabled(ctx, help);
    g_option_context_set_summary(ctx, summary);
    for (int i = 0; groups[i]; i++) /* each adds to the main group, in order */
        g_option_context_add_main_entries(ctx, groups[i], NULL);
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

int ics_cli_fail(const char *cmd, GError *err)
{
    fprintf(stderr, "icsim %s: %s\nRun `icsim %s --help` for its options.\n", cmd, err->message,
            cmd);
    g_error_free(err);
    return ICS_EXIT_USAGE;
}

/* "OPTION: expected WHAT, got \"TEXT\"", the text escaped (it may be any bytes). */
static bool bad_text(const char *option, const char *what, const char *text, GError **error)
{
    char *esc = g_strescape(text, NULL);
    g_set_error(error, ICS_ERROR, ICS_ERROR_INPUT, "%s: expected %s, got \"%s\"", option, what,
                esc);
    g_free(esc);
    return false;
}

bool ics_cli_int(const char *option, const char *text, int64_t *out, GError **error)
{
    if (!text)
        return true;
    const char *p = text + (*text == '-' || *text == '+');
    bool digits = *p != '\0';
    for (; *p && digits; p++)
        digits = g_ascii_isdigit(*p);
    char *end = NULL;
    errno = 0;
    long long v = digits ? strtoll(text, &end, 10) : 0;
    if (!digits || errno || *end)
        return bad_text(option, "an integer", text, error);
    *out = v;
    return true;
}

bool ics_cli_int_in(const char *option, const char *text, int64_t lo, int64_t hi, int *out,
                    GError **error)
{
    int64_t v = 0;
    if (!text)
        return true;
    if (!ics_cli_int(option, text, &v, error) || !ics_check_int(option, v, lo, hi, error))
        return false;
    *out = (int)v;
    return true;
}

bool ics_cli_num(const char *option, const char *text, double *out, GError **error)
{
    if (!text)
        return true;
    char *end = NULL;
    double v = *text && !g_ascii_isspace(*text) ? g_ascii_strtod(text, &end) : 0;
    if (!end || end == text || *end)
        return bad_text(option, "a number", text, error);
    *out = v;
    return true;
}

bool ics_cli_nodes(const char *text, int *nodes, GError **error)
{
    return ics_cli_int_in("--nodes", text, 1, ICS_SCENARIO_NODES_MAX, nodes, error);
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

void ics_cli_nccl_paths(const char *cmd, ics_topo *t)
{
    ics_topo_paths p;
    GError *warning = NULL;
    ics_coll_paths_from_env(&p, ics_topo_hw(t), &warning);
    if (warning)
        fprintf(stderr, "icsim%s%s: warning: %s\n", *cmd ? " " : "", cmd, warning->message);
    g_clear_error(&warning);
    ics_topo_set_paths(t, &p);
    if (ics_topo_ib_hca_ignored(t)) {
        char *shown = g_strescape(p.ib_hca, NULL);
        fprintf(stderr,
                "icsim%s%s: warning: NCCL_IB_HCA=%s keeps none of the node's compute NICs: NCCL "
                "would find no IB device and fall back to its socket transport, which is not "
                "modelled; ignored\n",
                *cmd ? " " : "", cmd, shown);
        g_free(shown);
    }
}

bool ics_cli_setup_open(ics_cli_setup *s, const char *path, int nodes_override)
{
    *s = (ics_cli_setup){.hw = ics_cli_load_hw(path, nodes_override)};
    if (s->hw) {
        s->t = ics_topo_new(s->hw);
        ics_cli_nccl_paths("", s->t);
    }
    return s->hw != NULL;
}

void ics_cli_setup_comm(ics_cli_setup *s, int gpn, int n, const ics_net_ops *backend,
                        const ics_net_params *params)
{
    s->nranks = n;
    s->gpus = g_new(int, n);
    ics_topo_gpus_by_node(s->t, gpn, n, s->gpus);
    s->comm = ics_comm_new(s->t, backend, s->gpus, n, params);
}

void ics_cli_setup_close(ics_cli_setup *s)
{
    ics_comm_free(s->comm);
    g_free(s->gpus);
    ics_topo_free(s->t);
    ics_hw_free(s->hw);
    *s = (ics_cli_setup){0};
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
