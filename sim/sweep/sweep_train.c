/* One configuration of a training study: the base scenario's model and layout with the
 * configuration's sizes (tp, pp, dp, vp, mbs, gbs), its system (overrides, nodes fitted to the
 * job as `icsim train` fits them, NICs, failures), the step generated, replayed, and reported
 * as one row: step time, throughput, MFU, and where the critical rank's step went. */
#include "replay/replay.h"
#include "sweep/sweep_internal.h"

#include <string.h>

static const char *const part_keys[ICS_REPORT_STEP_NPARTS] = {
    "compute_s", "tp_s", "pp_s", "dp_s", "ep_s", "cp_s", "other_s", "bubble_s", "host_s"};

/* The layout of configuration `set` over the base scenario's; dp not given anywhere: every GPU
 * of the system (gpus, once known). */
static ics_layout layout_of(const ics_sweep *s, const ics_sweep_set *set, int gpus)
{
    ics_layout l = s->scenario.layout;
    int *fields[] = {&l.tp, &l.pp, &l.dp, &l.vp, &l.mbs, &l.gbs};
    const int given[] = {set->tp, set->pp, set->dp, set->vp, set->mbs, set->gbs};
    for (size_t i = 0; i < G_N_ELEMENTS(fields); i++)
        if (given[i])
            *fields[i] = given[i];
    if (!set->dp && !s->scenario.layout_dp && gpus > 0)
        l.dp = MAX(1, gpus / MAX(1, l.tp * l.cp * l.pp));
    return l;
}

/* Loads the system, fitting a cluster's node count to the job when neither the study nor the
 * scenario gives one (as `icsim train` does). */
static ics_hw *load(const ics_sweep *s, const ics_sweep_set *set, ics_layout *l, ics_topo **t,
                    GError **error)
{
    int nodes = set->nodes ? set->nodes : s->scenario.nodes;
    ics_hw *hw = ics_sweep_build_system(set, nodes, t, error);
    if (!hw)
        return NULL;
    int per = ics_topo_gpus_per_node(*t), have = per * ics_topo_nodes(*t);
    *l = layout_of(s, set, have);
    int64_t need = (int64_t)ics_layout_world(l);
    if (!nodes && ics_topo_nodes(*t) > 1 && need != have &&
        need <= (int64_t)ICS_SCENARIO_NODES_MAX * per) {
        ics_topo_free(*t);
        ics_hw_free(hw);
        hw = ics_sweep_build_system(set, (int)((need + per - 1) / per), t, error);
        if (!hw)
            return NULL;
        have = per * ics_topo_nodes(*t);
        *l = layout_of(s, set, have);
    }
    if (need > have) {
        g_set_error(error, ICS_ERROR, ICS_ERROR_INPUT,
                    "the layout needs %lld GPUs (tp %d x pp %d x dp %d), the system has %d",
                    (long long)need, l->tp, l->pp, l->dp, have);
        ics_topo_free(*t);
        *t = NULL;
        ics_hw_free(hw);
        return NULL;
    }
    return hw;
}

ics_hw *ics_sweep_train_system(const ics_sweep *s, const ics_sweep_set *set, ics_topo **t,
                               GError **error)
{
    ics_layout l;
    return load(s, set, &l, t, error);
}

/* As `icsim train` refuses them, a layout over the GPU's memory is an error row with the
 * figures (workload/memory.h): which layouts fit is half of what a layout study asks. */
static bool fits(const ics_model *m, const ics_layout *l, const ics_hw_gpu_type *g,
                 ics_sweep_step *p, GError **error)
{
    ics_memory mem;
    ics_memory_peak(m, l, &mem);
    p->memory_gb = mem.total / 1e9;
    if (mem.total <= (double)g->hbm_bytes)
        return true;
    g_set_error(error, ICS_ERROR, ICS_ERROR_INPUT,
                "does not fit: pipeline stage %d needs %.1f GB per GPU, the GPU has %.1f GB "
                "(weights %.1f, gradients %.1f, optimizer %.1f, activations %.1f)",
                mem.stage, mem.total / 1e9, (double)g->hbm_bytes / 1e9, mem.weights / 1e9,
                mem.grads / 1e9, mem.optimizer / 1e9, mem.activations / 1e9);
    return false;
}

static bool run_point(const ics_sweep *s, const ics_sweep_set *set, ics_sweep_step *p,
                      GError **error)
{
    ics_topo *t = NULL;
    ics_hw *hw = load(s, set, &p->layout, &t, error);
    if (!hw)
        return false;
    bool ok = false;
    ics_trace *tr = NULL;
    const ics_hw_gpu_type *g = ics_hw_node_of(hw)->gpu_type;
    p->nodes = ics_topo_nodes(t);
    p->gpus = ics_layout_world(&p->layout);
    p->layout.node_gpus = ics_hw_node_of(hw)->gpus; /* the node-aware MoE dispatch's nodes */
    ics_coll_tuning tu; /* NCCL_BUFFSIZE as the system sets it, for the buffers' memory */
    ics_sweep_tuning(set, hw, &tu);
    p->layout.nccl_buffsize = tu.buffsize;
    if (!ics_layout_check(&p->layout, &s->scenario.model, error) ||
        !fits(&s->scenario.model, &p->layout, g, p, error) ||
        !(tr = ics_workload_build(&s->scenario.model, &p->layout, g, error)))
        goto done;
    if (!ics_sweep_step_replay(s, set, tr, t, p, error))
        goto done;
    p->layout_known = true;
    ics_step_flops fl;
    ics_workload_flops(&s->scenario.model, &p->layout, &fl);
    double peak = g->tflops[p->layout.dtype];
    if (p->layout.dtype == ICS_DTYPE_FP8 && peak > 0)
        peak = MAX(peak, g->tflops[ICS_DTYPE_BF16]);
    p->tokens_per_s = p->step_s > 0 ? fl.tokens / p->step_s : 0;
    p->tflops = p->step_s > 0 ? fl.hardware_flops / p->step_s / p->gpus / 1e12 : 0;
    p->mfu = p->step_s > 0 && peak > 0 ? fl.model_flops / p->step_s / p->gpus / (peak * 1e12) : 0;
    ok = true;
done:
    ics_trace_free(tr);
    ics_topo_free(t);
    ics_hw_free(hw);
    return ok;
}

bool ics_sweep_step_replay(const ics_sweep *s, const ics_sweep_set *set, const ics_trace *tr,
                           const ics_topo *t, ics_sweep_step *p, GError **error)
{
    /* as `icsim train` replays: the analytic engine memoizes every collective, the packet
     * engine plays the calls that share links on the shared network, in 256 KiB units */
    const char *engine = set->engine ? set->engine : "analytic";
    bool packet = strcmp(engine, "packet") == 0;
    ics_replay_opts o = {.backend = ics_net_backend(engine),
                         .colls = packet ? ICS_REPLAY_AUTO : ICS_REPLAY_MEMO,
                         .p2p_lat_ps = -1,
                         .host_launch_ps = ics_time_from_s((s->scenario.have_host_launch
                                                                ? s->scenario.host_launch_us
                                                                : ICS_REPLAY_HOST_LAUNCH_US) *
                                                           1e-6)};
    if (packet)
        o.net.packet_bytes = 256 * 1024;
    ics_sweep_tuning(set, ics_topo_hw(t), &o.tuning);
    ics_replay *r = ics_replay_new(tr, t, &o, error);
    bool ok = r && ics_replay_run(r, &p->res, error);
    if (ok) {
        p->step_s = ics_time_to_s(p->res.step_ps);
        const ics_replay_rank *rs = ics_replay_rank_stats(r, p->res.critical_rank);
        for (int c = 0; c < ICS_CAT_COUNT; c++)
            p->parts[c] = ics_time_to_s(rs->busy_ps[c] + rs->wait_ps[c]);
        p->parts[ICS_CAT_COUNT] = ics_time_to_s(rs->bubble_ps);
        p->parts[ICS_CAT_COUNT + 1] = ics_time_to_s(rs->host_ps);
    }
    ics_replay_free(r);
    return ok;
}

/* "name": value, or an empty CSV field and no JSON key when the figure is unknown (a trace
 * study knows no layout, tokens or FLOPs). */
static void field(GString *csv, GString *json, const char *key, bool known, double v,
                  const char *format)
{
    if (known) {
        ics_sweep_num(csv, v, format);
        g_string_append_printf(json, ", \"%s\": ", key);
        ics_sweep_num(json, v, format);
    }
    g_string_append_c(csv, ',');
}

void ics_sweep_step_row(const ics_sweep *s, int c, const ics_sweep_step *p, const char *error,
                        char **csv_out, char **json_out)
{
    GString *csv = g_string_new(NULL), *json = g_string_new(NULL);
    ics_sweep_row_keys(s, c, csv, json);
    g_string_append_c(csv, ',');
    ics_sweep_csv_field(csv, p->what);
    g_string_append(json, ", \"model\": ");
    ics_sweep_json_string(json, p->what);
    g_string_append_c(csv, ',');
    if (!error) {
        const ics_layout *l = &p->layout;
        const double sizes[] = {p->nodes, p->gpus, l->tp, l->pp, l->dp, l->vp, l->mbs, l->gbs};
        static const char *const size_keys[] = {"nodes", "gpus", "tp",  "pp",
                                                "dp",    "vp",   "mbs", "gbs"};
        for (int k = 0; k < 8; k++)
            field(csv, json, size_keys[k], k < 2 || p->layout_known, sizes[k], "%.0f");
        const double figs[] = {p->step_s, p->tokens_per_s, p->tflops, p->mfu, p->memory_gb};
        static const char *const keys[] = {"step_time_s", "tokens_per_s", "tflops_per_gpu", "mfu",
                                           "memory_gb"};
        static const char *const fmt[] = {"%.6f", "%.1f", "%.2f", "%.4f", "%.2f"};
        for (int k = 0; k < 5; k++)
            field(csv, json, keys[k], k == 0 || p->layout_known, figs[k], fmt[k]);
        for (int k = 0; k < ICS_REPORT_STEP_NPARTS; k++)
            field(csv, json, part_keys[k], true, p->parts[k], "%.6f");
        g_string_append_printf(json, ", \"critical_rank\": %d", p->res.critical_rank);
    } else {
        /* the sizes, the figures and the parts empty, then the error */
        for (int k = 0; k < 8 + 5 + ICS_REPORT_STEP_NPARTS; k++)
            g_string_append_c(csv, ',');
        ics_sweep_csv_field(csv, error);
        g_string_append(json, ", \"error\": ");
        ics_sweep_json_string(json, error);
    }
    g_string_append_c(csv, '\n');
    g_string_append(json, "}\n");
    *csv_out = g_string_free(csv, FALSE);
    *json_out = g_string_free(json, FALSE);
}

void ics_sweep_run_train(const ics_sweep *s, int c, char **csv_out, char **json_out)
{
    ics_sweep_set set;
    ics_sweep_config(s, c, &set);
    ics_sweep_step p = {.what = s->scenario.model.name};
    GError *err = NULL;
    bool ok = run_point(s, &set, &p, &err);
    ics_sweep_step_row(s, c, &p, ok ? NULL : err->message, csv_out, json_out);
    g_clear_error(&err);
    ics_sweep_set_clear(&set);
}
