/* One configuration of a trace study: the study's trace (read once, when the study is loaded,
 * and shared read-only by every configuration and thread) replayed on the configuration's
 * system, as `icsim replay` replays it. A cluster without a node count of its own gets as many
 * nodes as the trace has ranks (rank r on GPU r % G of node r / G, as replay places them). The
 * row is a training row without what a trace does not know: the layout, tokens and FLOPs. */
#include "sweep/sweep_internal.h"

/* The system, its node count fitted to the trace's ranks when neither the study nor an axis
 * gives one. */
ics_hw *ics_sweep_trace_system(const ics_sweep *s, const ics_sweep_set *set, ics_topo **t,
                               GError **error)
{
    ics_hw *hw = ics_sweep_build_system(set, set->nodes, t, error);
    if (!hw || set->nodes || ics_topo_nodes(*t) <= 1)
        return hw;
    int per = ics_topo_gpus_per_node(*t), need = ics_trace_nranks(s->trace);
    int nodes = (need + per - 1) / per;
    if (nodes == ics_topo_nodes(*t))
        return hw;
    ics_topo_free(*t);
    ics_hw_free(hw);
    return ics_sweep_build_system(set, nodes, t, error);
}

void ics_sweep_run_trace(const ics_sweep *s, int c, char **csv_out, char **json_out)
{
    ics_sweep_set set;
    ics_sweep_config(s, c, &set);
    ics_sweep_step p = {.what = s->trace_name};
    GError *err = NULL;
    ics_topo *t = NULL;
    ics_hw *hw = ics_sweep_trace_system(s, &set, &t, &err);
    if (hw) {
        p.nodes = ics_topo_nodes(t);
        p.gpus = ics_trace_nranks(s->trace);
        ics_sweep_step_replay(s, &set, s->trace, t, &p, &err); /* the replay checks the fit */
    }
    ics_sweep_step_row(s, c, &p, err ? err->message : NULL, csv_out, json_out);
    g_clear_error(&err);
    ics_topo_free(t);
    ics_hw_free(hw);
    ics_sweep_set_clear(&set);
}
