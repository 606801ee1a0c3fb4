/* `icsim explain`: how each bandwidth is derived, for teaching.
 *   icsim explain nvlink4          one standard of the catalog
 *   icsim explain nvswitch3        one switch type of the catalog: ports x port rate
 *   icsim explain -s FILE          every link a GPU of the model uses, and the fabric */
#include "cli/cli.h"
#include "cli/cli_common.h"
#include "links/link.h"
#include "topo/topo.h"

#include <stdio.h>

#ifndef ICS_DEFAULT_CATALOG
#define ICS_DEFAULT_CATALOG "hwmodels/catalog.json"
#endif

/* The standard of the first outgoing channel of kind `kind`, and the summed width. */
static const ics_hw_standard *dev_standard(const ics_topo *t, int d, ics_chan_kind kind, int *width)
{
    ics_topo_dev_bw(t, d, kind, width);
    int n;
    const int *out = ics_topo_out(t, d, &n);
    for (int i = 0; i < n; i++)
        if (ics_topo_chan_get(t, out[i])->kind == kind)
            return ics_topo_chan_get(t, out[i])->standard;
    return NULL;
}

static void explain_model(const ics_topo *t, GString *out)
{
    const ics_hw_node *n = ics_hw_node_of(ics_topo_hw(t));
    int g0 = ics_topo_gpu(t, 0, 0), w;
    g_string_append_printf(out, "%s: how a GPU's bandwidth is derived\n\n",
                           ics_hw_name(ics_topo_hw(t)));
    const ics_hw_standard *s = dev_standard(t, g0, ICS_CHAN_NVLINK, &w);
    if (s) {
        g_string_append_printf(out, "NVLink of gpu0 (%d links in all, to GPUs or NVSwitches):\n",
                               w);
        ics_link_explain(s, w, out);
        g_string_append_c(out, '\n');
    }
    s = dev_standard(t, g0, ICS_CHAN_PCIE, &w);
    if (s) {
        g_string_append_printf(out, "host link of gpu0 (x%d):\n", w);
        ics_link_explain(s, w, out);
        g_string_append_c(out, '\n');
    }
    int nic = ics_route_nic_of_gpu(t, g0);
    s = nic >= 0 ? dev_standard(t, nic, ICS_CHAN_NETWORK, &w) : NULL;
    if (s) {
        g_string_append_printf(out, "network port of %s (the NIC nearest gpu0):\n",
                               ics_topo_dev_get(t, nic)->name);
        ics_link_explain(s, 1, out);
        g_string_append_printf(out, "  a node has %d compute NICs: %.1f GB/s per direction\n",
                               n->compute_nics, n->compute_nics * ics_hw_standard_bw(s, 1) / 1e9);
    }
}

/* A switch type: what one port carries (its standard, derived), the ports together, what an
 * in-network reduction (NVLS, SHARP) gets, and the latency a hop through it costs. */
static void explain_switch(const ics_hw_switch_type *st, GString *out)
{
    g_string_append_printf(out, "%s (%s, %s)\n", st->name, st->product,
                           ics_switch_kind_name(st->kind));
    bool pcie = st->kind == ICS_SWITCH_PCIE;
    double port = st->standard ? (double)ics_hw_standard_bw(st->standard, 1) : 0;
    if (st->standard) {
        g_string_append_printf(out, "one %s:\n", pcie ? "lane" : "port");
        ics_link_explain(st->standard, 1, out);
    }
    g_string_append_printf(out,
                           "%d %s x %.1f GB/s = %.1f GB/s per direction through the switch, "
                           "%.1f GB/s both ways\n",
                           st->ports, pcie ? "lanes" : "ports", port / 1e9, st->ports * port / 1e9,
                           2 * st->ports * port / 1e9);
    if (st->sharp) {
        double red =
            st->reduce_bw_bytes_per_s ? (double)st->reduce_bw_bytes_per_s : st->ports * port;
        g_string_append_printf(out, "in-network reduction (%s): %.1f GB/s of reduced data%s\n",
                               st->kind == ICS_SWITCH_NVSWITCH ? "NVLS" : "SHARP", red / 1e9,
                               st->reduce_bw_bytes_per_s ? ""
                                                         : " (the catalog gives no figure: line "
                                                           "rate on every port at once)");
    }
    g_string_append_printf(out, "a hop through it: %.0f ns port to port\n",
                           ics_time_to_us(st->latency_ps) * 1e3);
    if (st->source)
        g_string_append_printf(out, "source: %s\n", st->source);
}

int ics_cli_explain(int argc, char **argv)
{
    char *system = NULL, *catalog = NULL, *nodes_text = NULL;
    int nodes = 0, rc = ICS_EXIT_USAGE;
    const GOptionEntry entries[] = {
        {"system", 's', 0, G_OPTION_ARG_FILENAME, &system, "hardware model (node or cluster)",
         "FILE"},
        {"nodes", 0, 0, G_OPTION_ARG_STRING, &nodes_text, "node count of a cluster", "N"},
        {"catalog", 0, 0, G_OPTION_ARG_FILENAME, &catalog,
         "catalog for a standard's name (default: " ICS_DEFAULT_CATALOG ")", "FILE"},
        G_OPTION_ENTRY_NULL};
    GString *out = g_string_new(NULL);
    ics_hw *hw = NULL;
    ics_topo *t = NULL;
    if (!ics_cli_parse("explain", "[STANDARD]", "Derive each bandwidth, step by step.", entries,
                       &argc, &argv))
        goto done;
    if ((system != NULL) == (argc == 2) || argc > 2) {
        fprintf(stderr, "icsim explain: expected -s FILE or one standard or switch name (e.g. "
                        "nvlink4, nvswitch3)\n");
        goto done;
    }
    GError *nerr = NULL;
    if (!ics_cli_nodes(nodes_text, &nodes, &nerr)) {
        ics_cli_fail("explain", nerr);
        goto done;
    }
    if (system) {
        hw = ics_cli_load_hw(system, nodes);
        if (!hw)
            goto done;
        t = ics_topo_new(hw);
        explain_model(t, out);
    } else {
        GError *err = NULL;
        hw = ics_hw_load_catalog(catalog ? catalog : ICS_DEFAULT_CATALOG, &err);
        if (!hw) {
            fprintf(stderr, "%s\n", err->message);
            g_error_free(err);
            goto done;
        }
        const ics_hw_standard *s = ics_hw_standard_find(hw, argv[1]);
        const ics_hw_switch_type *st = ics_hw_switch_type_find(hw, argv[1]);
        if (!s && !st) {
            int n, m;
            const ics_hw_standard *const *all = ics_hw_standards(hw, &n);
            const ics_hw_switch_type *const *sws = ics_hw_switch_types(hw, &m);
            fprintf(stderr, "icsim explain: expected a standard or a switch of the catalog (");
            for (int i = 0; i < n; i++)
                fprintf(stderr, "%s%s", i ? ", " : "", all[i]->name);
            for (int i = 0; i < m; i++)
                fprintf(stderr, ", %s", sws[i]->name);
            fprintf(stderr, "), got \"%s\"\n", argv[1]);
            goto done;
        }
        if (s)
            ics_link_explain(s, 0, out);
        else
            explain_switch(st, out);
    }
    ics_cli_emit(out);
    rc = ICS_EXIT_OK;
done:
    g_string_free(out, TRUE);
    ics_topo_free(t);
    ics_hw_free(hw);
    g_free(system);
    g_free(catalog);
    g_free(nodes_text);
    return rc;
}
