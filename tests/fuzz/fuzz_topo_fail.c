/* libFuzzer target for failure specs (topo.h, ics_topo_fail): the input's first line is a list of
 * specs, the rest a self-contained hardware model (as fuzz_hw.c reads one). Any bytes yield
 * either one error naming the spec, with the topology as it was, or a topology that still keeps
 * topo.h's promises: channels in reverse pairs, the outgoing index in step with them, two GPUs
 * of a node a route joined still joined, failures counted. Anything else (a crash, a leak, a
 * sanitizer report, a hang) is a bug. fuzz_hw_replay.c's driver runs it from files in every build
 * (fuzz_topo_fail_replay). */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <glib.h>

#include "hw/hw.h"
#include "topo/topo.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void broken(const char *what, const char *detail)
{
    fprintf(stderr, "fuzz_topo_fail: %s: %s\n", what, detail ? detail : "");
    abort();
}

/* Which pairs of node 0's GPUs a route joins (transfer full). */
static bool *joined(const ics_topo *t)
{
    int g = ics_topo_gpus_per_node(t);
    bool *j = g_new0(bool, (size_t)g *g + 1);
    for (int a = 0; a < g; a++)
        for (int b = 0; b < g; b++) {
            ics_route r;
            j[a * g + b] = ics_route_find(t, ics_topo_gpu(t, 0, a), ics_topo_gpu(t, 0, b), 0, &r);
            ics_route_clear(&r);
        }
    return j;
}

static void check(const ics_topo *t, const bool *before)
{
    int nc = ics_topo_nchans(t), listed = 0;
    for (int c = 0; c < nc; c++) {
        const ics_topo_chan *ch = ics_topo_chan_get(t, c);
        if (ch->reverse < 0 || ch->reverse >= nc || (ch->reverse ^ 1) != c)
            broken("channel pairs", NULL);
        const ics_topo_chan *back = ics_topo_chan_get(t, ch->reverse);
        if (back->src != ch->dst || back->dst != ch->src || back->width != ch->width)
            broken("reverse channel", NULL);
        if (ch->bw_bytes_per_s == 0)
            broken("a live channel without bandwidth", NULL);
    }
    for (int d = 0; d < ics_topo_ndevs(t); d++) {
        int n;
        const int *out = ics_topo_out(t, d, &n);
        for (int i = 0; i < n; i++)
            if (out[i] < 0 || out[i] >= nc || ics_topo_chan_get(t, out[i])->src != d)
                broken("outgoing index", NULL);
        listed += n;
        if (ics_topo_dev_get(t, d)->down && n > 0)
            broken("a device down with channels", ics_topo_dev_label(t, d));
    }
    if (listed != nc)
        broken("outgoing index size", NULL);
    /* what a route joined before, one still joins */
    int g = ics_topo_gpus_per_node(t);
    bool *after = joined(t);
    for (int k = 0; k < g * g; k++)
        if (before[k] && !after[k])
            broken("two GPUs of a node a route joined are apart", NULL);
    g_free(after);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *text = (const char *)data, *nl = memchr(data, '\n', size);
    if (!nl)
        return 0;
    char *specs = g_strndup(text, (gsize)(nl - text));
    GError *err = NULL;
    ics_hw *hw = ics_hw_load_text("fuzz.json", nl + 1, size - (size_t)(nl + 1 - text), &err);
    g_clear_error(&err);
    if (hw && ics_hw_nodes(hw) <= 4) {
        ics_topo *t = ics_topo_new(hw);
        int nc = ics_topo_nchans(t);
        bool *before = joined(t);
        if (ics_topo_fail(t, specs, &err)) {
            if (err)
                broken("success with an error", err->message);
            if (ics_topo_nfailures(t) < 1)
                broken("no failure counted", NULL);
        } else {
            if (!err || !g_str_has_prefix(err->message, "") || !*err->message)
                broken("refused without a message", NULL);
            if (ics_topo_nchans(t) != nc || ics_topo_nfailures(t) != 0)
                broken("refused but changed", err->message);
            g_clear_error(&err);
        }
        check(t, before);
        g_free(before);
        ics_topo_free(t);
    }
    ics_hw_free(hw);
    g_free(specs);
    return 0;
}
