/* Calibrating the compute model (calibrate/compute_calib.h): kernels timed on a GPU whose
 * parameters are known (made by the model itself with other values) give those values back;
 * the overlay carries them to every command; the published H100 GEMM figures fit; bad files are
 * refused with their place. */
#include "calibrate/compute_calib.h"
#include "hw/hw.h"
#include "workload/workload.h"

#include <glib.h>
#include <glib/gstdio.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

static char *model(const char *file)
{
    return g_build_filename(ICS_SOURCE_DIR, "hwmodels", file, NULL);
}

/* "The GPU": H100 SXM's peaks and SMs, compute parameters unlike the defaults (the structure,
 * Hopper's stream-K waves, is the model's: calibration fits constants, not the structure). */
static ics_hw_compute truth(void)
{
    ics_hw_compute t;
    ics_hw_compute_defaults_for(&t, "sm90");
    t.gemm_eff = 0.72;
    t.gemm_eff_fp8 = 0.64;
    t.gemm_wave_ps = 3100 * ICS_PS_PER_NS;
    t.mem_eff = 0.78;
    t.launch_ps = 2500 * ICS_PS_PER_NS;
    return t;
}

static void row_gemm(GString *s, const ics_hw_gpu_type *g, const char *dt, ics_dtype d, int m,
                     int n, int k)
{
    double in = d == ICS_DTYPE_FP8 ? 1 : 2,
           bytes = ((double)m * k + (double)k * n) * in + (double)m * n * 2;
    ics_time t = ics_compute_kernel(g, ICS_WORK_GEMM, d, 2.0 * m * n * k, bytes, m, n, k);
    g_string_append_printf(s,
                           "%s{\"kernel\": \"gemm\", \"dtype\": \"%s\", \"m\": %d, \"n\": %d, "
                           "\"k\": %d, \"time_us\": %.6f}",
                           s->str[s->len - 1] == '[' ? "" : ",\n", dt, m, n, k,
                           (double)t / ICS_PS_PER_US);
}

/* What icsim-validate compute's plan measures, timed by the model with truth(). */
static char *synthetic(const char *dir)
{
    char *path = model("dgx-h100.json");
    ics_hw *hw = ics_hw_load(path, 0, NULL);
    g_free(path);
    ics_hw_gpu_type g = *ics_hw_node_of(hw)->gpu_type;
    g.compute = truth();
    GString *s = g_string_new("{\"kind\": \"icsim-compute-measurements\", \"version\": 1,\n"
                              "\"hardware\": {\"gpu\": \"synthetic\", \"sms\": 132}, "
                              "\"timing\": \"graph\", \"rows\": [");
    const char *names[] = {"bf16", "fp8"};
    const ics_dtype dts[] = {ICS_DTYPE_BF16, ICS_DTYPE_FP8};
    for (int d = 0; d < 2; d++) {
        for (int x = 256; x <= 16384; x *= 2)
            row_gemm(s, &g, names[d], dts[d], x, x, x);
        for (int k = 128; k <= 16384; k *= 2)
            row_gemm(s, &g, names[d], dts[d], 8192, 8192, k);
        for (int m = 1; m <= 512; m *= 8)
            row_gemm(s, &g, names[d], dts[d], m, 8192, 8192);
    }
    for (uint64_t b = 4096; b <= (4ull << 30); b *= 4) {
        ics_time t =
            ics_compute_kernel(&g, ICS_WORK_ELEMENTWISE, ICS_DTYPE_BF16, 0, 2.0 * b, 0, 0, 0);
        g_string_append_printf(
            s, ",\n{\"kernel\": \"copy\", \"bytes\": %" G_GUINT64_FORMAT ", \"time_us\": %.6f}", b,
            (double)t / ICS_PS_PER_US);
    }
    g_string_append(s, "]}\n");
    char *out = g_build_filename(dir, "synthetic.json", NULL);
    g_assert_true(g_file_set_contents(out, s->str, -1, NULL));
    g_string_free(s, TRUE);
    ics_hw_free(hw);
    return out;
}

static void test_recovers(void)
{
    char *dir = g_dir_make_tmp("icsim-ccal-XXXXXX", NULL), *file = synthetic(dir);
    char *m = model("dgx-h100.json");
    GError *err = NULL;
    ics_ccal *c = ics_ccal_new(m, 1, &file, &err);
    g_assert_no_error(err);
    g_assert_true(ics_ccal_fit(c, &err));
    ics_hw_compute t = truth();
    for (int p = 0; p < ICS_CCAL_COUNT; p++) {
        const ics_calib_param *r = ics_ccal_param_of(c, (ics_ccal_param)p);
        double want = ics_ccal_value(&t, (ics_ccal_param)p);
        g_test_message("%s: %.4g -> %.4g (true %.4g, +-%.2f%%)",
                       ics_ccal_param_info_of((ics_ccal_param)p)->key, r->before, r->after, want,
                       100 * r->rel_sigma);
        g_assert_true(r->determined);
        g_assert_cmpfloat(fabs(r->after / want - 1), <, 0.01);
    }
    double before = ics_ccal_median_error(c, true, false),
           after = ics_ccal_median_error(c, true, true);
    g_test_message("GEMMs: median error %.1f%% -> %.2f%%", 100 * before, 100 * after);
    g_assert_cmpfloat(before, >, 0.05);
    g_assert_cmpfloat(after, <, 0.002);
    /* each fold fitted without its points predicts them */
    GArray *folds = g_array_new(FALSE, FALSE, sizeof(ics_calib_fold));
    g_assert_true(ics_ccal_cross_validate(c, folds, &err));
    g_assert_cmpuint(folds->len, >=, 3);
    bool copies = false;
    for (guint i = 0; i < folds->len; i++) {
        const ics_calib_fold *f = &g_array_index(folds, ics_calib_fold, i);
        g_test_message("fold %s: %d points, %.1f%% -> %.1f%%", f->what, f->n,
                       100 * f->median_before, 100 * f->median_after);
        copies |= strcmp(f->what, "kernel copies") == 0;
        /* leaving all the copies out leaves memory_efficiency to its default: no better */
        if (strcmp(f->what, "kernel copies") != 0)
            g_assert_cmpfloat(f->median_after, <, f->median_before);
    }
    g_assert_true(copies);
    g_array_free(folds, TRUE);
    /* the overlay carries the values to every command (-s), and names its base */
    char *ov = g_build_filename(dir, "calibrated.json", NULL);
    g_assert_true(ics_ccal_write_overlay(c, ov, &err));
    ics_hw *hw = ics_hw_load(ov, 0, &err);
    g_assert_no_error(err);
    const ics_hw_compute *got = &ics_hw_node_of(hw)->gpu_type->compute;
    for (int p = 0; p < ICS_CCAL_COUNT; p++) {
        double a = ics_ccal_value(got, (ics_ccal_param)p);
        double b = ics_ccal_param_of(c, (ics_ccal_param)p)->after;
        g_assert_cmpfloat(fabs(a / b - 1), <, 1e-4);
    }
    ics_hw_free(hw);
    ics_ccal_free(c);
    g_remove(ov);
    g_remove(file);
    g_rmdir(dir);
    g_free(ov);
    g_free(file);
    g_free(dir);
    g_free(m);
}

/* The published H100 GEMM figures (validate/data/compute/), which the defaults were read from:
 * the fit stays where they are; copies are absent, so memory_efficiency is not determined. */
static void test_public(void)
{
    char *m = model("dgx-h100.json"),
         *file = g_build_filename(ICS_SOURCE_DIR, "validate", "data", "compute",
                                  "h100_sxm_public_gemm.json", NULL);
    GError *err = NULL;
    ics_ccal *c = ics_ccal_new(m, 1, &file, &err);
    g_assert_no_error(err);
    g_assert_true(ics_ccal_fit(c, &err));
    double before = ics_ccal_median_error(c, true, false),
           after = ics_ccal_median_error(c, true, true);
    g_test_message("public H100 GEMMs: median error %.1f%% -> %.1f%%", 100 * before, 100 * after);
    g_assert_cmpfloat(before, <, 0.03);
    g_assert_cmpfloat(after, <, 0.03);
    /* the fit minimizes the squared log errors: their sum cannot grow */
    double sb = 0, sa = 0;
    for (int i = 0; i < ics_ccal_n_points(c); i++) {
        const ics_ccal_point *p = ics_ccal_point_at(c, i);
        sb += pow(p->weight * log(p->before_us / p->measured_us), 2);
        sa += pow(p->weight * log(p->after_us / p->measured_us), 2);
    }
    g_assert_cmpfloat(sa, <=, sb);
    g_assert_false(ics_ccal_param_of(c, ICS_CCAL_MEM_EFF)->determined);
    g_assert_true(ics_ccal_param_of(c, ICS_CCAL_GEMM_EFF)->determined);
    ics_ccal_free(c);
    g_free(file);
    g_free(m);
}

static int cmp_double(gconstpointer a, gconstpointer b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Our own runs on one H200 SXM (validate/data/runs/2026-11-29_h200): one file's path. */
static char *h200(const char *what)
{
    char *name = g_strdup_printf("h200_icsim_validate_%s.json", what);
    char *path = g_build_filename(ICS_SOURCE_DIR, "validate", "data", "compute", name, NULL);
    g_free(name);
    return path;
}

/* Median |error| of the model at model_path on the files, as loaded (no fit). */
static double loaded_error(const char *model_path, int n, char **files, bool gemm)
{
    GError *err = NULL;
    ics_ccal *c = ics_ccal_new(model_path, n, files, &err);
    g_assert_no_error(err);
    double e = ics_ccal_median_error(c, gemm, false);
    ics_ccal_free(c);
    return e;
}

/* The n sweep across tile and wave boundaries (m 1536, k 8192, n 64 .. 4225, bf16 and fp8):
 * Hopper's stream-K waves (the sm90 defaults) against whole waves with the constants read
 * through them (an overlay turning gemm_stream_k off). Measured: 6.0% (bf16) and 5.9% (fp8)
 * median error with stream-K, 10.6% and 21.2% with whole waves. */
static void test_h200_waves(void)
{
    char *m = model("dgx-h200.json"), *files[] = {h200("wave_bf16"), h200("wave_fp8")};
    char *dir = g_dir_make_tmp("icsim-ccal-XXXXXX", NULL);
    char *ov = g_build_filename(dir, "whole-waves.json", NULL);
    char *text =
        g_strdup_printf("{\"kind\": \"calibration\", \"name\": \"whole waves\", \"base\": \"%s\", "
                        "\"gpu_types\": {\"h200-sxm\": {\"compute\": {\"gemm_stream_k\": false, "
                        "\"gemm_efficiency\": 0.877, \"gemm_efficiency_fp8\": 0.767}}}}",
                        m);
    g_assert_true(g_file_set_contents(ov, text, -1, NULL));
    double sk = loaded_error(m, 2, files, true), whole = loaded_error(ov, 2, files, true);
    g_test_message("H200 n sweep, 198 GEMMs: median error stream-K %.1f%%, whole waves %.1f%%",
                   100 * sk, 100 * whole);
    g_assert_cmpfloat(sk, <, 0.065);
    g_assert_cmpfloat(whole, >, 1.5 * sk);
    g_remove(ov);
    g_rmdir(dir);
    g_free(text);
    g_free(ov);
    g_free(dir);
    for (int i = 0; i < 2; i++)
        g_free(files[i]);
    g_free(m);
}

/* Calibrated on the first run's default plan (stream-timed), the model predicts the second
 * run's Llama 3 GEMMs (other shapes, another machine of the kind, held out) better than the
 * defaults: 10.8% -> 4.4% median error, part of it because both runs' long shapes ran at the
 * power-bound clock, which the fitted efficiencies absorb (docs/validate.md). The stream-timed
 * file's smallest calls sit at the host's floor (GEMMs 6.65 us, copies 3.77 us): compared as
 * max(model, floor), they leave launch_us undetermined instead of fitting it to the host, and
 * the graph-timed run's copies (1.03 us at 4 KiB) are predicted within 10%, not 165% off. */
static void test_h200_calibrated(void)
{
    char *m = model("dgx-h200.json"), *a = h200("compute"), *train = h200("train_shapes"),
         *graph = h200("compute_graph");
    char *dir = g_dir_make_tmp("icsim-ccal-XXXXXX", NULL);
    char *ov = g_build_filename(dir, "h200.json", NULL);
    GError *err = NULL;
    ics_ccal *c = ics_ccal_new(m, 1, &a, &err);
    g_assert_no_error(err);
    g_assert_cmpfloat(fabs(ics_ccal_floor_us(c, true) - 6.65), <, 0.005);
    g_assert_cmpfloat(fabs(ics_ccal_floor_us(c, false) - 3.77), <, 0.005);
    g_assert_true(ics_ccal_fit(c, &err));
    g_assert_false(ics_ccal_param_of(c, ICS_CCAL_LAUNCH_US)->determined);
    g_assert_true(ics_ccal_write_overlay(c, ov, &err));
    g_assert_no_error(err);
    double before = loaded_error(m, 1, &train, true), after = loaded_error(ov, 1, &train, true);
    g_test_message("H200 Llama GEMMs (run 2), calibrated on run 1: median error %.1f%% -> %.1f%%",
                   100 * before, 100 * after);
    g_assert_cmpfloat(after, <, 0.6 * before);
    ics_ccal *gc = ics_ccal_new(ov, 1, &graph, &err);
    g_assert_no_error(err);
    g_assert_cmpfloat(ics_ccal_floor_us(gc, true), ==, 0); /* timed from a graph: no floor */
    g_assert_cmpfloat(ics_ccal_floor_us(gc, false), ==, 0);
    double copies = ics_ccal_median_error(gc, false, false);
    g_test_message("H200 graph-timed copies, calibrated on run 1: median error %.1f%%",
                   100 * copies);
    g_assert_cmpfloat(copies, <, 0.10);
    ics_ccal_free(gc);
    ics_ccal_free(c);
    g_remove(ov);
    g_rmdir(dir);
    g_free(ov);
    g_free(dir);
    g_free(a);
    g_free(train);
    g_free(graph);
    g_free(m);
}

/* What a training step charges for Llama 3's GEMMs (8B at TP 1, 70B and 405B at TP 8, 8192
 * tokens: forward, data and weight gradients) against the same GEMMs timed on the H200 in the
 * power-bound regime a step runs in (200 graph replays each, 1290-1515 MHz at 690 W): the
 * model's boost-clock efficiencies at the catalog's sustained_fraction 0.848 (ml-engineering's
 * H200 MSMF / MAMF, not these runs). Measured (model time against measured): median +0.4%
 * (bf16, -2.8 .. +21.3%), -4.6% (fp16, which runs ~4% slower than bf16 there and shares its
 * constants), +6.6% (fp8, +0.6 .. +27.7%); the widest misses are the shallow shapes (K 1024
 * to 2304), where the 2.2 us wave cost is too high (docs/workload.md). So a step's GEMMs are
 * priced within 7% at the median, FP8's on the slow side: what makes the H100 FP8 training
 * rows optimistic is outside its GEMMs. */
static void test_h200_sustained(void)
{
    char *m = model("dgx-h200.json"), *f = h200("train_sustained");
    GError *err = NULL;
    ics_ccal *c = ics_ccal_new(m, 1, &f, &err);
    g_assert_no_error(err);
    ics_hw *hw = ics_hw_load(m, 0, &err);
    g_assert_no_error(err);
    const ics_hw_gpu_type *g = ics_hw_node_of(hw)->gpu_type;
    g_assert_cmpfloat(g->compute.sustained, ==, 0.848);
    const ics_dtype dts[] = {ICS_DTYPE_BF16, ICS_DTYPE_FP16, ICS_DTYPE_FP8};
    for (size_t d = 0; d < G_N_ELEMENTS(dts); d++) {
        GArray *e = g_array_new(FALSE, FALSE, sizeof(double));
        for (int i = 0; i < ics_ccal_n_points(c); i++) {
            const ics_ccal_point *p = ics_ccal_point_at(c, i);
            if (!p->gemm || p->dtype != dts[d])
                continue;
            double in = p->dtype == ICS_DTYPE_FP8 ? 1 : 2, mm = p->m, n = p->n, k = p->k;
            ics_time t = ics_compute_kernel(g, ICS_WORK_GEMM, p->dtype, 2 * mm * n * k,
                                            (mm * k + k * n) * in + mm * n * 2, p->m, p->n, p->k);
            double err_d = (double)t / ICS_PS_PER_US / p->measured_us - 1;
            g_array_append_val(e, err_d);
        }
        g_assert_cmpuint(e->len, ==, 33);
        g_array_sort(e, cmp_double);
        double med = g_array_index(e, double, e->len / 2);
        g_test_message("H200 sustained Llama GEMMs, %s: median error %+.1f%% (%+.1f .. %+.1f%%)",
                       ics_dtype_name(dts[d]), 100 * med, 100 * g_array_index(e, double, 0),
                       100 * g_array_index(e, double, e->len - 1));
        g_assert_cmpfloat(fabs(med), <, 0.07);
        g_array_free(e, TRUE);
    }
    ics_hw_free(hw);
    ics_ccal_free(c);
    g_free(f);
    g_free(m);
}

/* A file of bf16 squares 256^3 .. 8192^3 timed by the loaded model, each call at least
 * `floor` us (0: none), with `timing` ("stream", "graph", or NULL: no key), `n` squares. */
static char *squares_text(const ics_hw_gpu_type *g, const char *timing, double floor, int n)
{
    GString *s = g_string_new("{\"kind\": \"icsim-compute-measurements\", \"version\": 1, ");
    if (timing)
        g_string_append_printf(s, "\"timing\": \"%s\", ", timing);
    g_string_append(s, "\"rows\": [");
    for (int i = 0, x = 256; i < n; i++, x *= 2) {
        double f = 2.0 * x * x * x, bytes = 3.0 * x * x * 2;
        double t = (double)ics_compute_kernel(g, ICS_WORK_GEMM, ICS_DTYPE_BF16, f, bytes, x, x, x) /
                   ICS_PS_PER_US;
        g_string_append_printf(
            s,
            "%s{\"kernel\": \"gemm\", \"dtype\": \"bf16\", \"m\": %d, \"n\": %d, "
            "\"k\": %d, \"time_us\": %.6f}",
            i ? ", " : "", x, x, x, fmax(t, floor));
    }
    g_string_append(s, "]}");
    return g_string_free(s, FALSE);
}

static double floor_in(const char *m, const char *text)
{
    GError *err = NULL;
    ics_ccal *c = ics_ccal_new_text(m, "floor.json", text, strlen(text), &err);
    g_assert_no_error(err);
    double f = ics_ccal_floor_us(c, true);
    ics_ccal_free(c);
    return f;
}

/* The host floor is found where a stream-timed file's shortest calls are flat and slower than
 * the GPU would be; not in a graph-timed file, not from one point, not where the GPU's own
 * times are flat (the model's launch and single wave: it expects those). */
static void test_host_floor(void)
{
    char *m = model("dgx-h100.json");
    ics_hw *hw = ics_hw_load(m, 0, NULL);
    const ics_hw_gpu_type *g = ics_hw_node_of(hw)->gpu_type;
    const struct {
        const char *timing;
        double floor;
        int n;
        double want;
    } cases[] = {
        {"stream", 8, 6, 8}, /* 256^3 .. 1024^3 at the host's 8 us */
        {NULL, 8, 6, 8},     /* no "timing": a stream, as every runner before --graph */
        {"graph", 8, 6, 0},  /* the GPU alone: whatever is flat is the GPU's */
        {"stream", 8, 1, 0}, /* one call: nothing to compare */
        {"stream", 0, 6, 0}, /* the GPU's own times */
    };
    double t256 = (double)ics_compute_kernel(g, ICS_WORK_GEMM, ICS_DTYPE_BF16, 2.0 * (1 << 24),
                                             6.0 * (1 << 16), 256, 256, 256) /
                  ICS_PS_PER_US;
    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        double floor = cases[i].floor;
        char *text = squares_text(g, cases[i].timing, floor, cases[i].n);
        double got = floor_in(m, text);
        g_test_message("%s, %g us, %d calls: floor %g us", cases[i].timing ? cases[i].timing : "-",
                       floor, cases[i].n, got);
        g_assert_cmpfloat(fabs(got - cases[i].want), <, 1e-6);
        g_free(text);
    }
    /* flat (512^3 in 1.2 x 256^3's time) but 256^3 as fast as the model says: the GPU's own
     * launch-bound bottom, faster than the model makes 512^3, not a host */
    char *flat = g_strdup_printf(
        "{\"kind\": \"icsim-compute-measurements\", \"version\": 1, \"rows\": ["
        "{\"kernel\": \"gemm\", \"dtype\": \"bf16\", \"m\": 256, \"n\": 256, \"k\": 256, "
        "\"time_us\": %.6f}, {\"kernel\": \"gemm\", \"dtype\": \"bf16\", \"m\": 512, "
        "\"n\": 512, \"k\": 512, \"time_us\": %.6f}]}",
        t256, 1.2 * t256);
    g_assert_cmpfloat(floor_in(m, flat), ==, 0);
    g_free(flat);
    /* our H200 runs: the stream-timed default plans show the host (GEMMs and copies); the
     * sweeps of larger calls, the graph-timed files and the n sweep's odd 64-column call (an
     * fp8 kernel 34% slower than at 128 columns: a poor choice, not the host) do not */
    const struct {
        const char *file;
        double gemm, copy;
    } ours[] = {
        {"compute", 6.65, 3.77}, {"compute_repeat", 6.46, 3.62}, {"compute_bf16_n200", 7.12, 4.92},
        {"wave_fp8", 0, 0},      {"ksweep_bf16", 0, 0},          {"train_shapes", 0, 0},
        {"compute_graph", 0, 0}, {"cold_squares", 0, 0}};
    char *m200 = model("dgx-h200.json");
    for (size_t i = 0; i < G_N_ELEMENTS(ours); i++) {
        char *f = h200(ours[i].file);
        GError *e = NULL;
        ics_ccal *c = ics_ccal_new(m200, 1, &f, &e);
        g_assert_no_error(e);
        g_assert_cmpfloat(fabs(ics_ccal_floor_us(c, true) - ours[i].gemm), <, 0.005);
        g_assert_cmpfloat(fabs(ics_ccal_floor_us(c, false) - ours[i].copy), <, 0.005);
        ics_ccal_free(c);
        g_free(f);
    }
    g_free(m200);
    /* the published figures (large GEMMs only) have none */
    char *pub = g_build_filename(ICS_SOURCE_DIR, "validate", "data", "compute",
                                 "h100_sxm_public_gemm.json", NULL);
    GError *err = NULL;
    ics_ccal *c = ics_ccal_new(m, 1, &pub, &err);
    g_assert_no_error(err);
    g_assert_cmpfloat(ics_ccal_floor_us(c, true), ==, 0);
    ics_ccal_free(c);
    g_free(pub);
    ics_hw_free(hw);
    g_free(m);
}

/* The sustained share itself, from our own runs: Llama 3 8B's first three GEMMs timed from an
 * idle GPU (run 4, the first ~1.5 ms of its sweep, at the boost clock) against the same GEMMs
 * after seconds of load (run 3, 200 graph replays each). Measured: bf16 0.842-0.844, fp16
 * 0.840-0.849, fp8 0.818-0.821, where the catalog's 0.848 is ml-engineering's H200 MSMF / MAMF
 * (bf16, a best shape): FP8, drawing more power, throttles a little further (3%). */
static void test_h200_sustained_share(void)
{
    char *m = model("dgx-h200.json"), *hot = h200("train_sustained");
    GError *err = NULL;
    ics_ccal *h = ics_ccal_new(m, 1, &hot, &err);
    g_assert_no_error(err);
    const char *cold[] = {"train_cold_bf16", "train_cold_fp16", "train_cold_fp8"};
    for (size_t d = 0; d < G_N_ELEMENTS(cold); d++) {
        char *f = h200(cold[d]);
        ics_ccal *c = ics_ccal_new(m, 1, &f, &err);
        g_assert_no_error(err);
        for (int i = 0; i < 3; i++) {
            const ics_ccal_point *p = ics_ccal_point_at(c, i), *q = NULL;
            for (int j = 0; j < ics_ccal_n_points(h) && !q; j++) {
                const ics_ccal_point *x = ics_ccal_point_at(h, j);
                if (x->dtype == p->dtype && x->m == p->m && x->n == p->n && x->k == p->k)
                    q = x;
            }
            g_assert_nonnull(q);
            double share = p->measured_us / q->measured_us;
            g_test_message("%s %dx%dx%d: boost / sustained time %.3f (catalog 0.848)",
                           ics_dtype_name(p->dtype), p->m, p->n, p->k, share);
            g_assert_cmpfloat(fabs(share - 0.848), <, 0.035);
        }
        ics_ccal_free(c);
        g_free(f);
    }
    ics_ccal_free(h);
    g_free(hot);
    g_free(m);
}

/* Bad files: refused with file:line:col and the JSON path. */
static void bad(const char *model_file, const char *text, const char *want)
{
    char *dir = g_dir_make_tmp("icsim-ccal-XXXXXX", NULL);
    char *file = g_build_filename(dir, "bad.json", NULL), *m = model(model_file);
    g_assert_true(g_file_set_contents(file, text, -1, NULL));
    GError *err = NULL;
    ics_ccal *c = ics_ccal_new(m, 1, &file, &err);
    g_assert_null(c);
    g_assert_nonnull(err);
    g_test_message("%s", err->message);
    g_assert_nonnull(strstr(err->message, want));
    g_assert_nonnull(strstr(err->message, "bad.json:"));
    g_error_free(err);
    g_remove(file);
    g_rmdir(dir);
    g_free(file);
    g_free(dir);
    g_free(m);
}

#define HEAD "{\"kind\": \"icsim-compute-measurements\", \"version\": 1, "

static void test_bad(void)
{
    bad("dgx-h100.json", "{\"kind\": \"icsim-trace\", \"version\": 1, \"rows\": []}",
        "$.kind: expected \"icsim-compute-measurements\", got \"icsim-trace\"");
    bad("dgx-h100.json", HEAD "\"rows\": []}", "$.rows: expected at least one row");
    bad("dgx-h100.json",
        HEAD "\"rows\": [{\"kernel\": \"gemm\", \"dtype\": \"bf16\", \"m\": 0, \"n\": 8, "
             "\"k\": 8, \"time_us\": 1}]}",
        "$.rows[0].m: expected an integer in 1..2147483647, got 0");
    bad("dgx-h100.json", HEAD "\"rows\": [{\"kernel\": \"copy\", \"bytes\": 4096}]}",
        "$.rows[0].time_us: expected");
    bad("dgx-h100.json", HEAD "\"rows\": [{\"kernel\": \"attention\", \"time_us\": 1}]}",
        "$.rows[0].kernel: expected");
    bad("dgx-a100.json",
        HEAD "\"rows\": [{\"kernel\": \"gemm\", \"dtype\": \"fp8\", \"m\": 8, \"n\": 8, "
             "\"k\": 8, \"time_us\": 1}]}",
        "$.rows[0].dtype: expected a dtype GPU type a100-sxm has a peak for, got \"fp8\"");
    bad("dgx-h100.json",
        HEAD "\"hardware\": {\"sms\": 114}, \"rows\": [{\"kernel\": \"copy\", \"bytes\": 8, "
             "\"time_us\": 1}]}",
        "$.hardware.sms: expected 132 (GPU type h100-sxm of the model), got 114");
    bad("dgx-h100.json", HEAD "\"rows\": [{\"kernel\": \"copy\", \"bytes\": 8, \"time_us\": 1,",
        "bad.json:1:");
    bad("dgx-h100.json",
        HEAD "\"timing\": \"events\", \"rows\": [{\"kernel\": \"copy\", \"bytes\": 8, "
             "\"time_us\": 1}]}",
        "$.timing: expected");
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/compute-calib/recovers", test_recovers);
    g_test_add_func("/compute-calib/public", test_public);
    g_test_add_func("/compute-calib/h200-waves", test_h200_waves);
    g_test_add_func("/compute-calib/h200-calibrated", test_h200_calibrated);
    g_test_add_func("/compute-calib/h200-sustained", test_h200_sustained);
    g_test_add_func("/compute-calib/h200-sustained-share", test_h200_sustained_share);
    g_test_add_func("/compute-calib/host-floor", test_host_floor);
    g_test_add_func("/compute-calib/bad", test_bad);
    return g_test_run();
}
