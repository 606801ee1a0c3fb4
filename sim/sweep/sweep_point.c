/* One configuration, run: its model (with overrides), topology (with failures and fewer NICs),
 * ranks, communicator and tuning, then every size as `icsim collective` runs it. Whatever goes
 * wrong becomes the rows' `error`: in a study an impossible point is a result. */
#include "report/report.h"
#include "sweep/sweep_internal.h"

#include <string.h>

typedef struct {
    ics_hw *hw;
    ics_topo *t;
    ics_comm *comm;
    int *ranks;
    int nodes, nranks;
    ics_coll_tuning tuning;
} built;

/* NICs beyond the first `keep` compute NICs of every node go down (unplugged). */
static bool keep_nics(ics_topo *t, int keep, GError **error)
{
    GString *specs = g_string_new(NULL);
    int compute = 0;
    for (int i = 0; i < ics_topo_nics_per_node(t); i++) {
        const ics_topo_dev *d = ics_topo_dev_get(t, ics_topo_nic(t, 0, i));
        if (d->rail < 0)
            continue;
        if (compute++ >= keep)
            g_string_append_printf(specs, "%snic:*:%s", specs->len ? "," : "", d->name);
    }
    bool ok = true;
    if (keep > compute) {
        g_set_error(error, ICS_ERROR, ICS_ERROR_INPUT,
                    "nics: expected at most the %d compute NICs a node has, got %d", compute, keep);
        ok = false;
    } else if (specs->len) {
        ok = ics_topo_fail(t, specs->str, error);
    }
    g_string_free(specs, TRUE);
    return ok;
}

void ics_sweep_tuning(const ics_sweep_set *set, const ics_hw *hw, ics_coll_tuning *tu)
{
    /* the system's own settings (its nccl_conf), then the study's over them */
    ics_coll_tuning_from(tu, ics_coll_env_conf, (void *)hw, NULL);
    char *bad = NULL;
    if (set->nccl_algo)
        tu->algos = ics_coll_algos_parse(set->nccl_algo, &bad); /* checked by the reader */
    g_free(bad);
    bad = NULL;
    if (set->nccl_proto)
        tu->protos = ics_coll_protos_parse(set->nccl_proto, &bad);
    g_free(bad);
    if (set->nvls >= 0)
        tu->nvls_enable = set->nvls;
    if (set->collnet >= 0)
        tu->collnet_enable = set->collnet;
    if (set->min_channels >= 0) /* -1: unset, the model's or NCCL's own count stays */
        tu->min_channels = set->min_channels;
    if (set->max_channels >= 0)
        tu->max_channels = set->max_channels;
}

ics_hw *ics_sweep_build_system(const ics_sweep_set *set, int nodes, ics_topo **t, GError **error)
{
    *t = NULL;
    ics_hw *hw = ics_sweep_model_load(set->system, set->patch, nodes, error);
    if (!hw)
        return NULL;
    *t = ics_topo_new(hw);
    ics_topo_paths paths; /* the path rules of the system's own settings (its nccl_conf) */
    ics_coll_paths_from(&paths, ics_coll_env_conf, hw, NULL);
    ics_topo_set_paths(*t, &paths);
    if ((set->nics && !keep_nics(*t, set->nics, error)) ||
        (set->fail && *set->fail && !ics_topo_fail(*t, set->fail, error))) {
        ics_topo_free(*t);
        *t = NULL;
        ics_hw_free(hw);
        return NULL;
    }
    return hw;
}

ics_hw *ics_sweep_config_system(const ics_sweep *s, const ics_sweep_set *set, ics_topo **t,
                                GError **error)
{
    if (s->train)
        return ics_sweep_train_system(s, set, t, error);
    if (s->trace)
        return ics_sweep_trace_system(s, set, t, error);
    return ics_sweep_build_system(set, set->nodes, t, error);
}

static bool build(const ics_sweep *s, const ics_sweep_set *set, built *b, GError **error)
{
    b->hw = ics_sweep_build_system(set, set->nodes, &b->t, error);
    if (!b->hw)
        return false;
    const ics_net_ops *backend = ics_net_backend(set->engine ? set->engine : "analytic");
    if (!ics_net_backend_ready(backend, b->t, error))
        return false;
    b->nodes = ics_topo_nodes(b->t);
    int per = ics_topo_gpus_per_node(b->t), gpn = set->gpus_per_node ? set->gpus_per_node : per;
    if (gpn > per) {
        g_set_error(error, ICS_ERROR, ICS_ERROR_INPUT,
                    "gpus_per_node: expected at most the %d GPUs a node has, got %d", per, gpn);
        return false;
    }
    b->nranks = gpn * b->nodes;
    if ((s->op == ICS_COLL_BROADCAST || s->op == ICS_COLL_REDUCE) && s->root >= b->nranks) {
        g_set_error(error, ICS_ERROR, ICS_ERROR_INPUT, "root: expected a rank below %d, got %d",
                    b->nranks, s->root);
        return false;
    }
    if (!ics_comm_call_fits(s->op, b->nranks, s->plan, backend, error))
        return false;
    b->ranks = g_new(int, b->nranks);
    ics_topo_gpus_by_node(b->t, gpn, b->nranks, b->ranks);
    b->comm = ics_comm_new(b->t, backend, b->ranks, b->nranks, NULL);
    ics_sweep_tuning(set, b->hw, &b->tuning);
    b->tuning.plan = s->plan;
    return true;
}

static void unbuild(built *b)
{
    ics_comm_free(b->comm);
    g_free(b->ranks);
    ics_topo_free(b->t);
    ics_hw_free(b->hw);
}

void ics_sweep_row_keys(const ics_sweep *s, int c, GString *csv, GString *json)
{
    if (csv)
        g_string_append_printf(csv, "%d,%s", c, s->fingerprint);
    if (json)
        g_string_append_printf(json, "{\"config\": %d, \"study\": \"%s\", \"axes\": {", c,
                               s->fingerprint);
    for (int a = 0; a < s->naxes; a++) {
        if (csv) {
            g_string_append_c(csv, ',');
            ics_sweep_csv_field(csv, ics_sweep_label(s, c, a));
        }
        if (json) {
            if (a)
                g_string_append(json, ", ");
            ics_sweep_json_string(json, s->axes[a].name);
            g_string_append(json, ": ");
            ics_sweep_json_string(json, ics_sweep_label(s, c, a));
        }
    }
    if (json)
        g_string_append(json, "}");
}

void ics_sweep_num(GString *out, double v, const char *format)
{
    char buf[G_ASCII_DTOSTR_BUF_SIZE];
    g_string_append(out, g_ascii_formatd(buf, sizeof buf, format, v));
}

/* One size's row; err: why it has no figures (NULL: res holds them). */
static void row(const ics_sweep *s, int c, const built *b, int i, const ics_coll_result *res,
                const char *err, GString *csv, GString *json)
{
    uint64_t count = 0;
    int nranks = b && b->comm ? b->nranks : 0;
    ics_coll_req req =
        ics_coll_req_nccltests(s->op, s->sizes[i], s->dtype_bytes, s->root, MAX(1, nranks), &count);
    ics_sweep_row_keys(s, c, csv, json);
    const char *system = b && b->hw ? ics_hw_name(b->hw) : "";
    g_string_append_c(csv, ',');
    ics_sweep_csv_field(csv, system);
    g_string_append(json, ", \"system\": ");
    ics_sweep_json_string(json, system);
    if (nranks) {
        g_string_append_printf(csv, ",%d,%d", b->nodes, nranks);
        g_string_append_printf(json, ", \"nodes\": %d, \"ranks\": %d", b->nodes, nranks);
    } else {
        g_string_append(csv, ",,");
    }
    const char *op = ics_coll_op_name(s->op);
    g_string_append_printf(csv, ",%s,%llu,%llu", op, (unsigned long long)req.size_bytes,
                           (unsigned long long)count);
    g_string_append_printf(json, ", \"op\": \"%s\", \"size_bytes\": %llu, \"count\": %llu", op,
                           (unsigned long long)req.size_bytes, (unsigned long long)count);
    if (err) {
        g_string_append(csv, ",,,,,,,");
        ics_sweep_csv_field(csv, err);
        g_string_append(json, ", \"error\": ");
        ics_sweep_json_string(json, err);
    } else {
        ics_coll_row r = {0};
        double us = (double)res->time_ps / 1e6;
        ics_report_coll_request(&req, count, &r);
        ics_report_coll_time(s->op, nranks, us, &r);
        const char *algo = res->local ? "local" : ics_coll_algo_name(res->algo);
        const char *proto = res->local ? "none" : ics_coll_proto_name(res->proto);
        double figs[3] = {us, r.algbw_gbps, r.busbw_gbps};
        static const char *const names[3] = {"time_us", "algbw_gbps", "busbw_gbps"};
        for (int k = 0; k < 3; k++) {
            g_string_append_c(csv, ',');
            ics_sweep_num(csv, figs[k], "%.3f");
            g_string_append_printf(json, ", \"%s\": ", names[k]);
            ics_sweep_num(json, figs[k], "%.3f");
        }
        g_string_append_printf(csv, ",%s,%s,%d,", algo, proto, res->nchannels);
        g_string_append_printf(json, ", \"algo\": \"%s\", \"proto\": \"%s\", \"channels\": %d",
                               algo, proto, res->nchannels);
    }
    g_string_append_c(csv, '\n');
    g_string_append(json, "}\n");
}

void ics_sweep_run_config(const ics_sweep *s, int c, char **csv_out, char **json_out)
{
    if (s->train) {
        ics_sweep_run_train(s, c, csv_out, json_out);
        return;
    }
    if (s->trace) {
        ics_sweep_run_trace(s, c, csv_out, json_out);
        return;
    }
    ics_sweep_set set;
    ics_sweep_config(s, c, &set);
    built b = {0};
    GError *err = NULL;
    GString *csv = g_string_new(NULL), *json = g_string_new(NULL);
    bool ok = build(s, &set, &b, &err);
    for (int i = 0; i < s->nsizes; i++) {
        ics_coll_result res = {0};
        char *why = NULL;
        if (ok) {
            ics_coll_req req =
                ics_coll_req_nccltests(s->op, s->sizes[i], s->dtype_bytes, s->root, b.nranks, NULL);
            if (!ics_comm_run(b.comm, &req, &b.tuning, &res))
                why = g_strdup("no algorithm the NCCL variables allow can run this call here");
        }
        row(s, c, ok ? &b : NULL, i, &res, ok ? why : err->message, csv, json);
        g_free(why);
    }
    g_clear_error(&err);
    unbuild(&b);
    ics_sweep_set_clear(&set);
    *csv_out = g_string_free(csv, FALSE);
    *json_out = g_string_free(json, FALSE);
}
