/* `icsim bench calibrate`'s compute part: does a compute calibration carry? Our own runs on one
 * H200 (validate/data/compute/h200_icsim_validate_*.json, validate/data/runs/2026-11-29_h200):
 * calibrate on the first run's default plan, as a user would, and predict the other runs' files
 * (other shapes, other timing, other machines of the kind): their median |time error| with the
 * model as shipped and with the calibration. Each column reads the predicted file as calibrate
 * would with that model, host floor included (compute_floor.c): a stream-timed file's floor is
 * its own shortest calls, so those are matched, not predicted, in both columns alike. */
#include "calibrate/compute_calib.h"
#include "cli/cli_common.h"

#include <glib/gstdio.h>

#ifndef ICS_HWMODELS_DIR
#define ICS_HWMODELS_DIR "hwmodels"
#endif
#define COMPUTE_DIR ICS_HWMODELS_DIR "/../validate/data/compute/"
#define PREFIX      "h200_icsim_validate_"

/* The files predicted, and what sets each apart from the one fitted. */
static const struct {
    const char *file, *what;
} held[] = {
    {"compute_repeat", "the same plan again, right after"},
    {"compute_graph", "the same plan timed from CUDA graphs (run 2)"},
    {"cold_squares", "squares one at a time from idle (run 3)"},
    {"ksweep_bf16", "K sweep from idle, bf16 (run 2)"},
    {"ksweep_fp8", "K sweep from idle, fp8 (run 2)"},
    {"wave_bf16", "n across wave boundaries, bf16 (run 2)"},
    {"wave_fp8", "n across wave boundaries, fp8 (run 2)"},
    {"train_shapes", "Llama 3 GEMMs (run 2)"},
    {"train_sustained", "the same, 200 replays: power-bound clock (run 3)"},
};

static char *data_file(const char *name)
{
    return g_strconcat(COMPUTE_DIR PREFIX, name, ".json", NULL);
}

/* The median |time error| of the GEMMs and of the copies in `file` with the model `model`. */
static bool errors_of(const char *model, const char *file, double e[2], GError **err)
{
    char *f = data_file(file);
    ics_ccal *c = ics_ccal_new(model, 1, &f, err);
    g_free(f);
    if (!c)
        return false;
    e[0] = ics_ccal_median_error(c, true, false);
    e[1] = ics_ccal_median_error(c, false, false);
    ics_ccal_free(c);
    return true;
}

static bool predict_all(const char *model, const char *calibrated, GString *out, GError **err)
{
    for (size_t i = 0; i < G_N_ELEMENTS(held); i++) {
        double shipped[2], cal[2];
        if (!errors_of(model, held[i].file, shipped, err) ||
            !errors_of(calibrated, held[i].file, cal, err))
            return false;
        g_string_append_printf(out, "  %-50s", held[i].what);
        ics_bench__calib_pct(out, shipped[0]);
        ics_bench__calib_pct(out, cal[0]);
        ics_bench__calib_pct(out, shipped[1]);
        ics_bench__calib_pct(out, cal[1]);
        g_string_append_c(out, '\n');
    }
    return true;
}

bool ics_bench__calibrate_compute(GString *out, GError **err)
{
    char *model = g_strdup(ICS_HWMODELS_DIR "/dgx-h200.json"), *fit = data_file("compute");
    char *dir = g_dir_make_tmp("icsim-bench-ccal-XXXXXX", err);
    char *cal = dir ? g_build_filename(dir, "h200.json", NULL) : NULL;
    ics_ccal *c = dir ? ics_ccal_new(model, 1, &fit, err) : NULL;
    bool ok = c && ics_ccal_fit(c, err) && ics_ccal_write_overlay(c, cal, err);
    if (ok) {
        g_string_append_printf(out,
                               "# compute: calibrated on H200 run 1's default plan (%s), the "
                               "other runs predicted:\n#   %-50s %8s %8s %8s %8s\n",
                               PREFIX "compute.json", "median |time error|", "GEMMs", "cal",
                               "copies", "cal");
        ok = predict_all(model, cal, out, err);
    }
    ics_ccal_free(c);
    if (cal)
        g_remove(cal);
    if (dir)
        g_rmdir(dir);
    g_free(cal);
    g_free(dir);
    g_free(fit);
    g_free(model);
    return ok;
}
