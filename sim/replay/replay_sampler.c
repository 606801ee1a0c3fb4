/* Link load over time, for the timeline's link tracks. Every `interval` the sampler reads how
 * many bytes each channel has carried and keeps (round, channel, cumulative bytes) for the
 * channels that moved since the last round. Memory stays bounded: when the rounds reach
 * MAX_ROUNDS the interval doubles and odd rounds fold into the next even one (a channel's
 * cumulative count at an odd round is its count at the next round unless that round has its
 * own entry). The result is deterministic: it depends only on simulated time. */
#include "replay/replay_internal.h"

#define MAX_ROUNDS 1024

typedef ics_replay_link_sample sample;

struct ics_replay_sampler {
    ics_time interval_ps;
    int64_t round;  /* the last round taken */
    uint64_t *last; /* per channel: cumulative bytes at its last entry */
    GArray *samples;
    bool stopped;
};

static void take(ics_engine *e, void *ctx, uint64_t arg);

void ics_replay_sampler_start(ics_replay *r)
{
    if (r->sample_ps <= 0)
        return;
    struct ics_replay_sampler *s = g_new0(struct ics_replay_sampler, 1);
    s->interval_ps = r->sample_ps;
    s->last = g_new0(uint64_t, ics_topo_nchans(r->t) + 1);
    s->samples = g_array_new(FALSE, FALSE, sizeof(sample));
    r->sampler = s;
    ics_engine_after(r->e, s->interval_ps, take, r, 0);
}

/* Halves the number of rounds kept: round R becomes ceil(R / 2) at twice the interval. */
static void fold(struct ics_replay_sampler *s, int nch)
{
    int *at = g_new(int, nch + 1); /* per channel: its entry in the output, if this round */
    for (int c = 0; c < nch; c++)
        at[c] = -1;
    GArray *out = g_array_new(FALSE, FALSE, sizeof(sample));
    for (guint i = 0; i < s->samples->len; i++) {
        sample x = g_array_index(s->samples, sample, i);
        x.round = (x.round + 1) / 2;
        int j = at[x.chan];
        if (j >= 0 && g_array_index(out, sample, j).round == x.round) {
            g_array_index(out, sample, j).cum = x.cum; /* the later count wins */
            continue;
        }
        at[x.chan] = (int)out->len;
        g_array_append_val(out, x);
    }
    g_array_free(s->samples, TRUE);
    s->samples = out;
    s->round = (s->round + 1) / 2;
    s->interval_ps *= 2;
    g_free(at);
}

static void take(ics_engine *e, void *ctx, uint64_t arg)
{
    (void)arg;
    ics_replay *r = ctx;
    struct ics_replay_sampler *s = r->sampler;
    int nch = ics_topo_nchans(r->t);
    s->round++;
    for (int c = 0; c < nch; c++) {
        uint64_t cum = ics_net_chan_bytes(r->net, c);
        if (cum != s->last[c]) {
            sample x = {.round = s->round, .chan = c, .cum = cum};
            g_array_append_val(s->samples, x);
            s->last[c] = cum;
        }
    }
    if (s->round >= MAX_ROUNDS)
        fold(s, nch);
    /* stop once the replay is over, or when nothing else is left to happen (a stuck replay) */
    if (r->remaining > 0 && ics_engine_pending(e) > 0 && !s->stopped)
        ics_engine_at(e, (s->round + 1) * s->interval_ps, take, r, 0);
}

void ics_replay_sampler_last(ics_replay *r)
{
    if (!r->sampler)
        return;
    /* one last round after the end, so the final bytes are counted */
    r->sampler->stopped = true;
}

void ics_replay_sampler_free(ics_replay *r)
{
    if (!r->sampler)
        return;
    g_free(r->sampler->last);
    g_array_free(r->sampler->samples, TRUE);
    g_free(r->sampler);
    r->sampler = NULL;
}

const ics_replay_link_sample *ics_replay_link_samples(const ics_replay *r, size_t *n,
                                                      ics_time *interval_ps)
{
    if (!r->sampler) {
        *n = 0;
        *interval_ps = 0;
        return NULL;
    }
    *n = r->sampler->samples->len;
    *interval_ps = r->sampler->interval_ps;
    return (const ics_replay_link_sample *)(void *)r->sampler->samples->data;
}
