/* `icsim topo -s FILE`: what a hardware model builds. Text summary by default; --matrix adds
 * the nvidia-smi matrix, --json and --dot replace the text, --route A,B shows one route;
 * --fail takes parts down first (docs/whatif.md), so each of these shows what is left. */
#include "cli/cli.h"
#include "cli/cli_common.h"
#include "report/report.h"

#include <stdio.h>
#include <string.h>

static int route_arg(const ics_topo *t, const char *arg, GString *out)
{
    char **ends = g_strsplit(arg, ",", 3);
    int rc = ICS_EXIT_OK;
    int a = -1, b = -1;
    if (g_strv_length(ends) == 2) {
        a = ics_topo_find(t, ends[0]);
        b = ics_topo_find(t, ends[1]);
    }
    if (a < 0 || b < 0) {
        fprintf(stderr,
                "icsim topo: --route: expected SRC,DST as device names (gpu0, 1:gpu3, "
                "mlx5_0, leaf2), got \"%s\"\n",
                arg);
        rc = ICS_EXIT_USAGE;
    } else {
        ics_report_route(t, a, b, out);
    }
    g_strfreev(ends);
    return rc;
}

int ics_cli_topo(int argc, char **argv)
{
    char *system = NULL, *route = NULL, *nodes_text = NULL, *dot_level = NULL;
    char **fails = NULL;
    int nodes = 0;
    gboolean matrix = FALSE, json = FALSE, dot = FALSE;
    const GOptionEntry entries[] = {
        {"system", 's', 0, G_OPTION_ARG_FILENAME, &system, "hardware model (node or cluster)",
         "FILE"},
        {"nodes", 0, 0, G_OPTION_ARG_STRING, &nodes_text, "node count of a cluster", "N"},
        {"matrix", 0, 0, G_OPTION_ARG_NONE, &matrix, "add the nvidia-smi topo -m matrix", NULL},
        {"json", 0, 0, G_OPTION_ARG_NONE, &json, "print the facts as JSON", NULL},
        {"dot", 0, 0, G_OPTION_ARG_NONE, &dot, "print the graph as Graphviz DOT", NULL},
        {"dot-level", 0, 0, G_OPTION_ARG_STRING, &dot_level,
         "DOT: node (every device, default) or cluster (a vertex per set of nodes on the same "
         "leaves); implies --dot",
         "LEVEL"},
        {"fail", 0, 0, G_OPTION_ARG_STRING_ARRAY, &fails,
         "take a part down or slow it first (nvlink:gpu0-gpu1, nvswitch:nvsw2, nic:5:mlx5_3, "
         "switch:spine3, link:leaf2-spine0@0.5, lanes:gpu0-nvsw1=2; repeatable)",
         "SPEC"},
        {"route", 0, 0, G_OPTION_ARG_STRING, &route, "print the route between two devices",
         "SRC,DST"},
        G_OPTION_ENTRY_NULL};
    int rc = ICS_EXIT_USAGE;
    ics_hw *hw = NULL;
    ics_topo *t = NULL;
    GString *out = g_string_new(NULL);
    if (!ics_cli_parse("topo", "-s FILE", "Summarize a hardware model and its paths.", entries,
                       &argc, &argv))
        goto done;
    GError *err = NULL;
    if (!system || argc > 1) {
        fprintf(stderr, "icsim topo: expected -s FILE and no other arguments%s%s%s\n",
                argc > 1 ? ", got \"" : "", argc > 1 ? argv[1] : "", argc > 1 ? "\"" : "");
        goto done;
    }
    if (!ics_cli_nodes(nodes_text, &nodes, &err)) {
        ics_cli_fail("topo", err);
        goto done;
    }
    ics_dot_level level = ICS_DOT_NODE;
    if (dot_level && strcmp(dot_level, "cluster") == 0)
        level = ICS_DOT_CLUSTER;
    else if (dot_level && strcmp(dot_level, "node") != 0) {
        char *esc = g_strescape(dot_level, NULL);
        ics_cli_fail("topo", g_error_new(ICS_ERROR, ICS_ERROR_INPUT,
                                         "--dot-level: expected node or cluster, got \"%s\"", esc));
        g_free(esc);
        goto done;
    }
    hw = ics_cli_load_hw(system, nodes);
    if (!hw)
        goto done;
    t = ics_topo_new(hw);
    ics_cli_nccl_paths("topo", t);
    for (char **f = fails; f && *f; f++)
        if (!ics_topo_fail(t, *f, &err)) {
            ics_cli_fail("topo",
                         g_error_new(ICS_ERROR, ICS_ERROR_INPUT, "--fail: %s", err->message));
            g_error_free(err);
            goto done;
        }
    rc = ICS_EXIT_OK;
    if (route)
        rc = route_arg(t, route, out);
    else if (json)
        ics_report_topo_json(t, out);
    else if (dot || dot_level)
        ics_report_topo_dot_level(t, level, out);
    else
        ics_report_topo_text(t, out);
    if (matrix && !json && !dot && !dot_level && !route) {
        g_string_append_c(out, '\n');
        ics_report_topo_matrix(t, out);
    }
    if (rc == ICS_EXIT_OK)
        ics_cli_emit(out);
done:
    g_string_free(out, TRUE);
    ics_topo_free(t);
    ics_hw_free(hw);
    g_free(system);
    g_free(route);
    g_free(nodes_text);
    g_free(dot_level);
    g_strfreev(fails);
    return rc;
}
