/* The expert GEMMs of the MoE training rows, measured on one H200 SXM (validate/data/runs/
 * 2026-11-30_h200, files in validate/data/compute/h200_moe/), against the compute model's
 * grouped GEMMs (workload/compute.h: ics_compute_grouped, the rounds the training generator
 * prices a rank's experts with). Each file holds one rank's six expert GEMMs of a layer (fc1
 * and fc2 forward, their data and weight gradients) for one MoE row's shapes, each timed as G
 * GEMMs at once: on Transformer Engine's 4 streams ("s4"), on 1 stream ("s1"), or alone
 * ("single"), replayed from a CUDA graph 20 times (the boost clock) or 200 (the power-bound
 * clock a training step runs at).
 * What they say: the model prices the experts' GEMMs within ~10% at the median, so these are
 * not what makes the MoE rows of `bench training` 40-70% optimistic (docs/workload.md). */
#include "calibrate/compute_calib.h"
#include "hw/hw.h"
#include "workload/compute.h"

#include <glib.h>
#include <math.h>
#include <string.h>

/* Each file name: the MoE row it stands for, m (token copies per expert); G the rank's experts */
static const struct {
    const char *name;
    int groups;
} configs[] = {
    {"qwen3_30b_m2048", 16},   {"qwen3_30b_m4096", 16},   {"qwen3_30b_m8192", 16},
    {"gptoss_120b_m1024", 16}, {"gptoss_120b_m4096", 16}, {"qwen3_235b_m4096", 4},
    {"deepseek_v3_m8192", 4},
};
static const char *const dtypes[] = {"bf16", "fp8"};

static char *model_path(void)
{
    return g_build_filename(ICS_SOURCE_DIR, "hwmodels", "dgx-h200.json", NULL);
}

/* validate/data/compute/h200_moe/<config>_<dtype>_<what>.json, what: "g16s4_graph", ... */
static char *moe_file(int c, int d, const char *what)
{
    char *tag = g_strcmp0(what, "single_graph") == 0
                    ? g_strdup(what)
                    : g_strdup_printf("g%d%s", configs[c].groups, what);
    char *name = g_strdup_printf("%s_%s_%s.json", configs[c].name, dtypes[d], tag);
    char *path =
        g_build_filename(ICS_SOURCE_DIR, "validate", "data", "compute", "h200_moe", name, NULL);
    g_free(tag);
    g_free(name);
    return path;
}

static int cmp_double(gconstpointer a, gconstpointer b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(GArray *v)
{
    g_assert_cmpuint(v->len, >, 0);
    g_array_sort(v, cmp_double);
    guint n = v->len;
    return n % 2 ? g_array_index(v, double, n / 2)
                 : 0.5 * (g_array_index(v, double, n / 2 - 1) + g_array_index(v, double, n / 2));
}

/* The fit's points of one file: the model as loaded, at the boost clock (before_us). */
static ics_ccal *load(char *file)
{
    char *m = model_path();
    GError *err = NULL;
    ics_ccal *c = ics_ccal_new(m, 1, &file, &err);
    g_assert_no_error(err);
    g_free(m);
    return c;
}

/* Appends each point's signed error (model / measured - 1), or |error| when `absolute`. */
static void errors_of(const char *what, bool absolute, GArray *out)
{
    for (size_t c = 0; c < G_N_ELEMENTS(configs); c++) {
        for (int d = 0; d < 2; d++) {
            char *f = moe_file((int)c, d, what);
            ics_ccal *cal = load(f);
            for (int i = 0; i < ics_ccal_n_points(cal); i++) {
                const ics_ccal_point *p = ics_ccal_point_at(cal, i);
                double e = p->before_us / p->measured_us - 1;
                e = absolute ? fabs(e) : e;
                g_array_append_val(out, e);
            }
            ics_ccal_free(cal);
            g_free(f);
        }
    }
}

/* The runner's --groups rows are read as groups (ics_compute_grouped's rounds on the row's
 * streams), not as one GEMM: a group of 16 is priced far above one GEMM of its shape. */
static void test_read_groups(void)
{
    char *f = moe_file(1, 1, "s4_graph"); /* Qwen3-30B-A3B, m 4096, fp8, 16 experts, 4 streams */
    ics_ccal *cal = load(f);
    char *m = model_path();
    ics_hw *hw = ics_hw_load(m, 0, NULL);
    ics_hw_gpu_type g = *ics_hw_node_of(hw)->gpu_type;
    g.compute.sustained = 1; /* what calibrate compares at: short bursts at the boost clock */
    g_assert_cmpint(ics_ccal_n_points(cal), ==, 6);
    for (int i = 0; i < ics_ccal_n_points(cal); i++) {
        const ics_ccal_point *p = ics_ccal_point_at(cal, i);
        g_assert_cmpint(p->groups, ==, 16);
        g_assert_cmpint(p->streams, ==, 4);
        double mm = p->m, n = p->n, k = p->k, bytes = (mm * k + k * n) + mm * n * 2;
        ics_time t = ics_compute_grouped(&g, ICS_DTYPE_FP8, 16, 4, mm, n, k, bytes);
        g_assert_cmpfloat_with_epsilon(p->before_us, (double)t / ICS_PS_PER_US, 1e-6);
        ics_time one =
            ics_compute_kernel(&g, ICS_WORK_GEMM, ICS_DTYPE_FP8, 2 * mm * n * k, bytes, mm, n, k);
        g_assert_cmpfloat((double)t, >, 8.0 * (double)one);
        g_assert_cmpfloat((double)t, <, 16.5 * (double)one);
    }
    ics_hw_free(hw);
    g_free(m);
    ics_ccal_free(cal);
    g_free(f);
}

/* 20 replays from a graph (the boost clock, which calibrate compares at). Measured: the groups
 * on 4 streams 9.3% median |error| (76 GEMM groups), on 1 stream 5.6%; one GEMM alone, repeated
 * on the same operands, runs 9.8% faster than the model at the median (-11.7 .. +30.5%): its
 * operands stay in the 50 MB L2 between calls and its short burst keeps the boost clock, where
 * each expert of a group brings its own. */
static void test_boost(void)
{
    const char *what[] = {"s4_graph", "s1_graph"};
    const double within[] = {0.10, 0.07};
    for (int w = 0; w < 2; w++) {
        GArray *e = g_array_new(FALSE, FALSE, sizeof(double));
        errors_of(what[w], true, e);
        double med = median(e);
        g_test_message("H200 expert GEMM groups (%s), %u points: median |error| %.1f%%", what[w],
                       e->len, 100 * med);
        g_assert_cmpuint(e->len, ==, 76);
        g_assert_cmpfloat(med, <, within[w]);
        g_array_free(e, TRUE);
    }
    GArray *e = g_array_new(FALSE, FALSE, sizeof(double));
    errors_of("single_graph", false, e);
    double med = median(e);
    g_test_message("one expert GEMM alone, repeated: median error %+.1f%% (model slower)",
                   100 * med);
    g_assert_cmpfloat(med, >, 0);
    g_assert_cmpfloat(med, <, 0.12);
    g_array_free(e, TRUE);
}

/* What 4 streams gain over 1: the model's rounds (up to 4 GEMMs sharing the SMs) against the
 * measured groups, shape by shape. Measured: 4 streams take 0.981 of 1 stream's time at the
 * median, the model 0.981; the shapes scatter (0.76 .. 1.10 measured) more than the model does. */
static void test_streams_gain(void)
{
    GArray *meas = g_array_new(FALSE, FALSE, sizeof(double)),
           *mod = g_array_new(FALSE, FALSE, sizeof(double));
    for (size_t c = 0; c < G_N_ELEMENTS(configs); c++) {
        for (int d = 0; d < 2; d++) {
            char *f4 = moe_file((int)c, d, "s4_graph"), *f1 = moe_file((int)c, d, "s1_graph");
            ics_ccal *a = load(f4), *b = load(f1);
            g_assert_cmpint(ics_ccal_n_points(a), ==, ics_ccal_n_points(b));
            for (int i = 0; i < ics_ccal_n_points(a); i++) {
                const ics_ccal_point *p = ics_ccal_point_at(a, i), *q = ics_ccal_point_at(b, i);
                g_assert_true(p->m == q->m && p->n == q->n && p->k == q->k);
                g_assert_cmpint(p->streams, ==, 4);
                g_assert_cmpint(q->streams, ==, 1);
                double x = p->measured_us / q->measured_us, y = p->before_us / q->before_us;
                g_array_append_val(meas, x);
                g_array_append_val(mod, y);
            }
            ics_ccal_free(a);
            ics_ccal_free(b);
            g_free(f4);
            g_free(f1);
        }
    }
    double mm = median(meas), md = median(mod);
    g_test_message("4 streams / 1 stream: measured median %.3f, model %.3f", mm, md);
    g_assert_cmpfloat(md, <, 1);
    g_assert_cmpfloat(fabs(mm - md), <, 0.03);
    g_array_free(meas, TRUE);
    g_array_free(mod, TRUE);
}

/* 200 replays: the power-bound clock (1290-1965 MHz at 500-700 W) a training step runs its GEMMs
 * at, against the model at the GPU type's sustained share (0.848): what a step is charged.
 * Measured (Qwen3-30B-A3B m 4096, gpt-oss-120b m 4096, DeepSeek-V3 m 8192): bf16 +1.1% at
 * the median, fp8 +5.5% (the model slower). The exception, found twice more (run 3): Qwen3-30B's
 * FP8 groups on 4 streams, whose three deepest-tiled shapes ran 1.5-2.8x their 20-replay times
 * (on 1 stream: 1.03-1.13x); over its six shapes the model is 22.0% fast there (bf16:
 * 4.4% slow). Nothing here is fitted: the disagreement stays in view. */
static void test_sustained(void)
{
    char *m = model_path();
    ics_hw *hw = ics_hw_load(m, 0, NULL);
    const ics_hw_gpu_type *g = ics_hw_node_of(hw)->gpu_type;
    g_assert_cmpfloat(g->compute.sustained, ==, 0.848);
    const int picked[] = {1, 4, 6};
    for (int d = 0; d < 2; d++) {
        GArray *e = g_array_new(FALSE, FALSE, sizeof(double));
        double q_model = 0, q_meas = 0;
        for (size_t c = 0; c < G_N_ELEMENTS(picked); c++) {
            char *f = moe_file(picked[c], d, "s4_graph_n200");
            ics_ccal *cal = load(f);
            for (int i = 0; i < ics_ccal_n_points(cal); i++) {
                const ics_ccal_point *p = ics_ccal_point_at(cal, i);
                double in = d ? 1 : 2, mm = p->m, n = p->n, k = p->k;
                double t = (double)ics_compute_grouped(g, p->dtype, p->groups, p->streams, mm, n, k,
                                                       (mm * k + k * n) * in + mm * n * 2) /
                           ICS_PS_PER_US;
                double x = t / p->measured_us - 1;
                g_array_append_val(e, x);
                if (picked[c] == 1) {
                    q_model += t;
                    q_meas += p->measured_us;
                }
            }
            ics_ccal_free(cal);
            g_free(f);
        }
        double med = median(e);
        g_test_message("sustained %s expert GEMM groups, %u points: median error %+.1f%%; "
                       "Qwen3-30B's six: %+.1f%%",
                       dtypes[d], e->len, 100 * med, 100 * (q_model / q_meas - 1));
        g_assert_cmpuint(e->len, ==, 17);
        g_assert_cmpfloat(fabs(med), <, 0.10);
        g_assert_cmpfloat(fabs(q_model / q_meas - 1), <, d ? 0.25 : 0.08);
        g_array_free(e, TRUE);
    }
    ics_hw_free(hw);
    g_free(m);
}

/* A row's "groups" and "streams" are checked like every key: file, line, JSON path. */
static void test_bad(void)
{
    const char *rows[][2] = {
        {"\"groups\": 0", "$.rows[0].groups: expected an integer in 1..4096, got 0"},
        {"\"groups\": 4097", "$.rows[0].groups: expected an integer in 1..4096, got 4097"},
        {"\"groups\": 4, \"streams\": 65", "$.rows[0].streams: expected an integer in 1..64"},
        {"\"groups\": \"4\"", "$.rows[0].groups: expected an integer"},
        {"\"groups\": 2.5", "$.rows[0].groups: expected an integer"},
        {"\"streams\": 4", "$.rows[0].streams: expected \"groups\" beside it"},
    };
    char *m = model_path();
    for (size_t i = 0; i < G_N_ELEMENTS(rows); i++) {
        char *text = g_strdup_printf("{\"kind\": \"icsim-compute-measurements\", \"version\": 1, "
                                     "\"rows\": [{\"kernel\": \"gemm\", \"dtype\": \"bf16\", "
                                     "\"m\": 64, \"n\": 64, \"k\": 64, %s, \"time_us\": 9}]}",
                                     rows[i][0]);
        GError *err = NULL;
        ics_ccal *c = ics_ccal_new_text(m, "bad.json", text, strlen(text), &err);
        g_assert_null(c);
        g_test_message("%s", err->message);
        if (!strstr(err->message, rows[i][1]) || !strstr(err->message, "bad.json:1:"))
            g_error("%s: message '%s' lacks '%s'", rows[i][0], err->message, rows[i][1]);
        g_error_free(err);
        g_free(text);
    }
    g_free(m);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/moe-gemms/read-groups", test_read_groups);
    g_test_add_func("/moe-gemms/boost", test_boost);
    g_test_add_func("/moe-gemms/streams-gain", test_streams_gain);
    g_test_add_func("/moe-gemms/sustained", test_sustained);
    g_test_add_func("/moe-gemms/bad", test_bad);
    return g_test_run();
}
