/* Step-time reports (report.h): the figures a capacity planner asks for and where the time
 * went. The breakdown folds each category's busy and exposed-wait time (replay.h) into one
 * figure per kind of work, plus the bubble and the host's launches. */
#include "report/report.h"
#include "workload/workload.h"

#include <math.h>

#include "report/report_internal.h"

typedef struct {
    double s[ICS_CAT_COUNT];
    double bubble;
    double host; /* waiting for the host to launch kernels */
} parts;

static parts rank_parts(const ics_replay_rank *rs)
{
    parts p = {.bubble = ics_time_to_s(rs->bubble_ps), .host = ics_time_to_s(rs->host_ps)};
    for (int c = 0; c < ICS_CAT_COUNT; c++)
        p.s[c] = ics_time_to_s(rs->busy_ps[c] + rs->wait_ps[c]);
    return p;
}

/* The mean over the ranks that ran ops (a folded trace leaves mirrored ranks empty). */
static parts mean_parts(const ics_replay *r, int nranks, int *active)
{
    parts m = {0};
    *active = 0;
    for (int k = 0; k < nranks; k++)
        *active += ics_replay_rank_stats(r, k)->end_ps > 0;
    for (int k = 0; k < nranks; k++) {
        const ics_replay_rank *rs = ics_replay_rank_stats(r, k);
        if (rs->end_ps == 0)
            continue;
        parts p = rank_parts(rs);
        for (int c = 0; c < ICS_CAT_COUNT; c++)
            m.s[c] += p.s[c] / *active;
        m.bubble += p.bubble / *active;
        m.host += p.host / *active;
    }
    return m;
}

static const char *const labels[ICS_CAT_COUNT] = {"compute",
                                                  "TP communication (exposed)",
                                                  "PP communication (exposed)",
                                                  "DP communication (exposed)",
                                                  "EP communication (exposed)",
                                                  "CP communication (exposed)",
                                                  "other"};

static void text_parts(const parts *p, double step, GString *out)
{
    for (int c = 0; c < ICS_CAT_COUNT; c++)
        g_string_append_printf(out, "  %-28s %12.6f s %6.1f %%\n", labels[c], p->s[c],
                               step > 0 ? 100 * p->s[c] / step : 0);
    g_string_append_printf(out, "  %-28s %12.6f s %6.1f %%\n", "pipeline bubble and waits",
                           p->bubble, step > 0 ? 100 * p->bubble / step : 0);
    g_string_append_printf(out, "  %-28s %12.6f s %6.1f %%\n", "host (launching kernels)", p->host,
                           step > 0 ? 100 * p->host / step : 0);
}

/* Model FLOPs utilization as a fraction of `whole` (1, or 100 for a percentage). The compute
 * model charges every op at least its FLOPs at the peak of its type (workload/compute.c), so
 * above the whole it is a bug upstream (an overflowed duration, a step shorter than its compute),
 * never a figure to print. The slack covers rounding each op to the picosecond. */
static double mfu_checked(double mfu, double whole)
{
    if (!(mfu <= whole * 1.001))
        g_error("MFU %g%s over the GPUs' peak: the simulated step is shorter than its compute", mfu,
                whole == 100 ? "%" : "");
    return mfu;
}

/* The peak stage's memory per GPU (workload/memory.h), in GB, against the GPU's. */
static void text_memory(const ics_step_info *info, GString *out)
{
    const ics_memory *m = info ? info->memory : NULL;
    if (!m)
        return;
    g_string_append_printf(out, "memory per GPU               %12.1f GB of %.1f (stage %d)\n",
                           m->total / 1e9, info->hbm_bytes / 1e9, m->stage);
    g_string_append_printf(out,
                           "  weights %.1f, gradients %.1f, optimizer %.1f, activations %.1f "
                           "(micro-batches in flight: %.3g), NCCL buffers %.1f\n",
                           m->weights / 1e9, m->grads / 1e9, m->optimizer / 1e9,
                           m->activations / 1e9, m->in_flight, m->nccl / 1e9);
}

static cJSON *json_memory(const ics_step_info *info)
{
    const ics_memory *m = info->memory;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "stage", m->stage);
    cJSON_AddNumberToObject(o, "total_gb", m->total / 1e9);
    cJSON_AddNumberToObject(o, "gpu_gb", info->hbm_bytes / 1e9);
    cJSON_AddNumberToObject(o, "weights_gb", m->weights / 1e9);
    cJSON_AddNumberToObject(o, "gradients_gb", m->grads / 1e9);
    cJSON_AddNumberToObject(o, "optimizer_gb", m->optimizer / 1e9);
    cJSON_AddNumberToObject(o, "activations_gb", m->activations / 1e9);
    cJSON_AddNumberToObject(o, "microbatches_in_flight", m->in_flight);
    cJSON_AddNumberToObject(o, "nccl_gb", m->nccl / 1e9);
    return o;
}

void ics_report_step_text(const ics_replay *r, const ics_replay_result *res, int nranks,
                          const ics_step_info *info, GString *out)
{
    double step = ics_time_to_s(res->step_ps);
    g_string_append_printf(out, "step time                    %12.6f s\n", step);
    if (info && info->tokens > 0)
        g_string_append_printf(out, "tokens/s                     %12.0f\n", info->tokens / step);
    if (info && info->hw_flops > 0)
        g_string_append_printf(out,
                               "TFLOP/s per GPU              %12.1f   (Megatron's count: "
                               "with recomputation)\n",
                               info->hw_flops / step / nranks / 1e12);
    if (info && info->model_flops > 0 && info->peak_tflops > 0)
        g_string_append_printf(
            out,
            "MFU                          %12.1f %% (model FLOPs over "
            "%.1f TFLOP/s peak)\n",
            mfu_checked(100 * info->model_flops / step / nranks / (info->peak_tflops * 1e12), 100),
            info->peak_tflops);
    text_memory(info, out);
    g_string_append_printf(out,
                           "\nwhere the critical rank (%d) spends the step, on its compute "
                           "stream:\n",
                           res->critical_rank);
    parts crit = rank_parts(ics_replay_rank_stats(r, res->critical_rank));
    text_parts(&crit, step, out);
    int active;
    parts mean = mean_parts(r, nranks, &active);
    if (active < nranks)
        g_string_append_printf(out,
                               "mean over the %d simulated ranks (the trace is folded: the "
                               "other %d mirror them):\n",
                               active, nranks - active);
    else
        g_string_append_printf(out, "mean over the %d ranks:\n", nranks);
    text_parts(&mean, step, out);
    g_string_append_printf(out,
                           "\nsimulated: %" G_GUINT64_FORMAT " events, %" G_GUINT64_FORMAT
                           " collectives on the shared network, %" G_GUINT64_FORMAT
                           " memoized, %" G_GUINT64_FORMAT " transfers\n",
                           res->events, res->colls_full, res->colls_memo, res->net.transfers);
}

static cJSON *json_parts(const parts *p)
{
    static const char *const keys[ICS_CAT_COUNT] = {"compute_s", "tp_s", "pp_s",   "dp_s",
                                                    "ep_s",      "cp_s", "other_s"};
    cJSON *o = cJSON_CreateObject();
    for (int c = 0; c < ICS_CAT_COUNT; c++)
        cJSON_AddNumberToObject(o, keys[c], p->s[c]);
    cJSON_AddNumberToObject(o, "bubble_s", p->bubble);
    cJSON_AddNumberToObject(o, "host_s", p->host);
    return o;
}

void ics_report_step_json(const ics_replay *r, const ics_replay_result *res, int nranks,
                          const ics_step_info *info, GString *out)
{
    ics_report_step_json_hot(r, res, nranks, info, NULL, out);
}

void ics_report_step_json_hot(const ics_replay *r, const ics_replay_result *res, int nranks,
                              const ics_step_info *info, const ics_hotspots *h, GString *out)
{
    double step = ics_time_to_s(res->step_ps);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "step_time_s", step);
    bool known = info && info->tokens > 0;
    cJSON_AddItemToObject(o, "tokens_per_s",
                          known ? cJSON_CreateNumber(info->tokens / step) : cJSON_CreateNull());
    known = info && info->hw_flops > 0;
    cJSON_AddItemToObject(o, "tflops_per_gpu",
                          known ? cJSON_CreateNumber(info->hw_flops / step / nranks / 1e12)
                                : cJSON_CreateNull());
    known = info && info->model_flops > 0 && info->peak_tflops > 0;
    cJSON_AddItemToObject(
        o, "mfu",
        known ? cJSON_CreateNumber(
                    mfu_checked(info->model_flops / step / nranks / (info->peak_tflops * 1e12), 1))
              : cJSON_CreateNull());
    if (info && info->memory)
        cJSON_AddItemToObject(o, "memory", json_memory(info));
    cJSON_AddNumberToObject(o, "critical_rank", res->critical_rank);
    parts crit = rank_parts(ics_replay_rank_stats(r, res->critical_rank));
    int active;
    parts mean = mean_parts(r, nranks, &active);
    cJSON_AddItemToObject(o, "breakdown", json_parts(&crit));
    cJSON_AddItemToObject(o, "breakdown_mean", json_parts(&mean));
    cJSON *sim = cJSON_AddObjectToObject(o, "simulation");
    cJSON_AddNumberToObject(sim, "events", (double)res->events);
    cJSON_AddNumberToObject(sim, "collectives_simulated", (double)res->colls_full);
    cJSON_AddNumberToObject(sim, "collectives_memoized", (double)res->colls_memo);
    cJSON_AddNumberToObject(sim, "transfers", (double)res->net.transfers);
    cJSON_AddNumberToObject(sim, "ranks", nranks);
    cJSON_AddNumberToObject(sim, "ranks_simulated", active);
    if (h)
        cJSON_AddItemToObject(o, "hotspots", ics_report_hotspots_cjson(h));
    cJSON *ranks = cJSON_AddArrayToObject(o, "ranks");
    for (int k = 0; k < nranks; k++) {
        const ics_replay_rank *rs = ics_replay_rank_stats(r, k);
        if (rs->end_ps == 0)
            continue;
        parts p = rank_parts(rs);
        cJSON *ro = json_parts(&p);
        cJSON_AddNumberToObject(ro, "rank", k);
        cJSON_AddNumberToObject(ro, "end_s", ics_time_to_s(rs->end_ps));
        cJSON_AddItemToArray(ranks, ro);
    }
    char *text = cJSON_Print(o);
    g_string_append(out, text);
    g_string_append_c(out, '\n');
    cJSON_free(text);
    cJSON_Delete(o);
}
