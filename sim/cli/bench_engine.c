/* `icsim bench engine`: the classic hold model. N events stay pending; each fired event schedules
 * one more at now + a uniform pseudo-random delay, so the queue size is constant at N.
 * Deterministic for a given seed (xorshift64*); only the wall-clock figures vary. */
#include "cli/cli.h"
#include "core/core.h"

#include <inttypes.h>
#include <stdio.h>

#include <glib.h>

typedef struct {
    uint64_t rng;
    uint64_t max_delay_ps;
    uint64_t fired;
    uint64_t target;
} hold_state;

static inline uint64_t xorshift64s(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *s = x;
    return x * UINT64_C(2685821657736338717);
}

/* Uniform in [1, max_delay_ps]; the modulo bias (< 1e-7) does not matter here. */
static inline ics_time hold_delay(hold_state *h)
{
    return 1 + (ics_time)(xorshift64s(&h->rng) % h->max_delay_ps);
}

static void hold_fire(ics_engine *eng, void *ctx, uint64_t arg)
{
    hold_state *h = ctx;
    ics_engine_after(eng, hold_delay(h), hold_fire, h, arg);
    if (++h->fired == h->target)
        ics_engine_stop(eng);
}

int ics_bench_engine(int argc, char **argv)
{
    gint64 pending = 1000000;
    gint64 events = 50000000;
    gint64 seed = 1;
    gint64 max_delay_ps = 2 * ICS_PS_PER_US;
    GOptionEntry entries[] = {
        {"pending", 0, 0, G_OPTION_ARG_INT64, &pending, "events kept pending (default 1000000)",
         "N"},
        {"events", 0, 0, G_OPTION_ARG_INT64, &events, "events to process (default 50000000)", "M"},
        {"seed", 0, 0, G_OPTION_ARG_INT64, &seed, "random seed (default 1)", "S"},
        {"max-delay-ps", 0, 0, G_OPTION_ARG_INT64, &max_delay_ps,
         "delays are uniform in [1, D] ps (default 2000000)", "D"},
        G_OPTION_ENTRY_NULL,
    };
    GOptionContext *octx = g_option_context_new("- event queue hold model");
    g_option_context_set_summary(
        octx, "Keeps N events pending; each fired event schedules one more at now + a uniform\n"
              "delay in [1, D] ps. Prints events/s of the run (excluding set-up) last.");
    g_option_context_add_main_entries(octx, entries, NULL);
    GError *err = NULL;
    bool ok = g_option_context_parse(octx, &argc, &argv, &err);
    g_option_context_free(octx);
    if (!ok) {
        fprintf(stderr, "icsim bench engine: %s\n", err->message);
        g_error_free(err);
        return ICS_EXIT_USAGE;
    }
    if (argc > 1) {
        fprintf(stderr, "icsim bench engine: unexpected argument '%s'\n", argv[1]);
        return ICS_EXIT_USAGE;
    }
    if (pending < 1 || pending > INT32_MAX || events < 1 || max_delay_ps < 1 ||
        max_delay_ps > ICS_PS_PER_S) {
        fprintf(stderr,
                "icsim bench engine: expected --pending in [1, %d], --events >= 1 and "
                "--max-delay-ps in [1, 1e12], got %" G_GINT64_FORMAT ", %" G_GINT64_FORMAT
                " and %" G_GINT64_FORMAT "\n",
                INT32_MAX, pending, events, max_delay_ps);
        return ICS_EXIT_USAGE;
    }
    char *what = g_strdup_printf("bench engine: %" G_GINT64_FORMAT " pending events x %d B",
                                 pending, ICS_EVQ_BYTES_PER_EVENT);
    ok = ics_budget_check((uint64_t)pending * ICS_EVQ_BYTES_PER_EVENT, what, &err);
    g_free(what);
    if (!ok) { /* estimated before the queue is sized: 2^31 events is 100 GB */
        fprintf(stderr, "icsim %s\n", err->message);
        g_error_free(err);
        return ICS_EXIT_USAGE;
    }

    /* xorshift must not start at 0; mix the seed so that nearby seeds diverge at once. */
    hold_state h = {.rng = ((uint64_t)seed ^ UINT64_C(0x9E3779B97F4A7C15)) | 1,
                    .max_delay_ps = (uint64_t)max_delay_ps,
                    .target = (uint64_t)events};
    ics_engine *eng = ics_engine_new((size_t)pending);
    gint64 t0 = g_get_monotonic_time();
    for (gint64 i = 0; i < pending; i++)
        ics_engine_at(eng, hold_delay(&h), hold_fire, &h, 0);
    gint64 t1 = g_get_monotonic_time();
    uint64_t fired = ics_engine_run(eng, ICS_TIME_MAX);
    gint64 t2 = g_get_monotonic_time();

    double setup_s = (double)(t1 - t0) / 1e6;
    double run_s = (double)(t2 - t1) / 1e6;
    printf("pending: %zu\n", ics_engine_pending(eng));
    printf("processed: %" PRIu64 "\n", fired);
    printf("simulated ps: %" PRId64 "\n", ics_engine_now(eng));
    printf("setup seconds: %.3f\n", setup_s);
    printf("wall seconds: %.3f\n", run_s);
    printf("events/s: %" PRIu64 "\n", run_s > 0 ? (uint64_t)((double)fired / run_s) : 0);
    ics_engine_free(eng);
    return ICS_EXIT_OK;
}
