/* libFuzzer target for the compute measurement reader of `icsim calibrate`
 * (calibrate/compute_calib.h): any bytes, read as an `icsim-validate compute --json` file
 * against the DGX H100 model, yield either points that keep the header's promises (a GEMM with
 * positive dimensions, groups and streams in range and a dtype the GPU has a peak for, or a copy of
 * at least one byte; a positive finite time; finite model times) or one located error in the house
 * form. Anything else (a crash, a leak, a sanitizer report, a hang) is a bug. Seeds: the JSON files
 * of validate/data/compute. fuzz_hw_replay.c's driver can run it from files in any build. */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <glib.h>

#include "calibrate/compute_calib.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define NAME  "fuzz.json"
#define MODEL ICS_SOURCE_DIR "/hwmodels/dgx-h100.json"

static void broken(const char *what, const char *detail)
{
    fprintf(stderr, "fuzz_ccal_meas: %s: %s\n", what, detail ? detail : "");
    abort();
}

static void check_point(const ics_ccal_point *p)
{
    if (!(p->measured_us > 0) || !isfinite(p->measured_us) || !isfinite(p->before_us) ||
        !(p->before_us >= 0) || !(p->weight > 0) || !p->source)
        broken("point", "a time or weight out of range");
    if (p->gemm ? p->m < 1 || p->n < 1 || p->k < 1 || (unsigned)p->dtype >= ICS_DTYPE_COUNT ||
                      p->groups < 1 || p->groups > ICS_CCAL_GROUPS_MAX || p->streams < 1 ||
                      p->streams > ICS_CCAL_STREAMS_MAX
                : p->bytes < 1)
        broken("point", "a shape out of range");
}

static void check_error(const GError *err)
{
    if (!err || !err->message)
        broken("error", "missing");
    const char *m = err->message;
    if (strncmp(m, NAME ":", strlen(NAME) + 1) != 0 || strchr(m, '\n') || !strstr(m, "expected "))
        broken("error message has the wrong shape", m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    GError *err = NULL;
    ics_ccal *c = ics_ccal_new_text(MODEL, NAME, (const char *)data, size, &err);
    if (c) {
        if (err || ics_ccal_n_points(c) < 1)
            broken("result", "success with an error, or without a point");
        for (int i = 0; i < ics_ccal_n_points(c); i++)
            check_point(ics_ccal_point_at(c, i));
        ics_ccal_free(c);
    } else {
        check_error(err);
        g_error_free(err);
    }
    return 0;
}
