/* The replayer's host model (docs/replay.md, "The host") against what one H200 machine measured
 * (validate/data/runs/2026-11-30_h200): the default cost of a launch, --host-launch-us, is what
 * one eager PyTorch op costs its CPU there (host_probe.py); Megatron-Core's MoE layer costs its
 * host more per kernel (megatron_probe.py), which the test prints and docs/workload.md discusses.
 */
#include "replay/replay.h"

#include <cjson/cJSON.h>
#include <glib.h>
#include <math.h>

static cJSON *load(const char *name)
{
    char *path =
        g_build_filename(ICS_SOURCE_DIR, "validate", "data", "runs", "2026-11-30_h200", name, NULL);
    char *text = NULL;
    g_assert_true(g_file_get_contents(path, &text, NULL, NULL));
    cJSON *doc = cJSON_Parse(text);
    g_assert_nonnull(doc);
    g_free(text);
    g_free(path);
    return doc;
}

static double num(const cJSON *o, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    g_assert_true(cJSON_IsNumber(v));
    return v->valuedouble;
}

/* Four eager ops, 5,000 back to back each: 6.1 .. 10.8 us of CPU an op (their GPU time from a
 * CUDA graph 0.9 .. 5.0 us): the default lies inside. */
static void test_eager_ops(void)
{
    cJSON *doc = load("host_probe.json");
    const cJSON *ops = cJSON_GetObjectItemCaseSensitive(doc, "small_ops");
    double lo = INFINITY, hi = 0;
    int n = 0;
    for (const cJSON *op = ops ? ops->child : NULL; op; op = op->next, n++) {
        double host = num(op, "host_issue_us"), gpu = num(op, "graph_us");
        g_test_message("%s: host %.2f us, GPU %.2f us", op->string, host, gpu);
        lo = fmin(lo, host);
        hi = fmax(hi, host);
    }
    g_assert_cmpint(n, ==, 4);
    g_test_message("eager op on the CPU: %.1f .. %.1f us; --host-launch-us default %.1f", lo, hi,
                   ICS_REPLAY_HOST_LAUNCH_US);
    g_assert_cmpfloat(ICS_REPLAY_HOST_LAUNCH_US, >=, lo);
    g_assert_cmpfloat(ICS_REPLAY_HOST_LAUNCH_US, <=, hi);
    cJSON_Delete(doc);
}

/* Megatron-Core's MoE layer (local spec, 4 to 32 experts): its wall time is the host's (6.0 to
 * 21.9 ms against 1.8 to 4.9 ms of kernels), at more than twice the default a kernel. Its dense
 * MLP keeps the GPU busy (printed). */
static void test_megatron_layer(void)
{
    cJSON *doc = load("run5c_megatron_probe.json");
    const char *moe[] = {"moe_E4_top4_T4096", "moe_E8_top8_T4096", "moe_E16_top8_T4096",
                         "moe_E32_top8_T4096", "moe_E16_top8_T1024"};
    for (size_t i = 0; i < G_N_ELEMENTS(moe); i++) {
        const cJSON *r = cJSON_GetObjectItemCaseSensitive(doc, moe[i]);
        double wall = num(r, "wall_us_per_fwd_bwd"), gpu = num(r, "kernel_us"),
               k = num(r, "kernels");
        g_test_message("%s: %.0f kernels, GPU %.2f ms, wall %.2f ms: %.1f us a kernel", moe[i], k,
                       gpu / 1e3, wall / 1e3, wall / k);
        /* what the default misses there: docs/workload.md, "The host" */
        g_assert_cmpfloat(wall / k, >, 2 * ICS_REPLAY_HOST_LAUNCH_US);
    }
    const cJSON *d = cJSON_GetObjectItemCaseSensitive(doc, "dense_T4096");
    g_test_message("dense MLP: %.0f kernels, GPU %.2f ms, wall %.2f ms", num(d, "kernels"),
                   num(d, "kernel_us") / 1e3, num(d, "wall_us_per_fwd_bwd") / 1e3);
    cJSON_Delete(doc);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/host-measured/eager-ops", test_eager_ops);
    g_test_add_func("/host-measured/megatron-layer", test_megatron_layer);
    return g_test_run();
}
