/* Pipeline schedules (workload.h): the order in which one stage runs the forward and backward
 * passes of its micro-batches, as Megatron-LM's schedules.py orders them. Every stage runs
 * each (micro-batch, chunk) forward once and backward once; a backward follows its forward. */
#include "workload/workload_internal.h"

/* Plain 1F1B: warm-up forwards fill the pipeline below this stage, then one forward and one
 * backward alternate, then the remaining backwards drain it. */
static void one_f_one_b(int p, int s, int m, ics_wl_step *out)
{
    int warmup = p - s - 1 < m ? p - s - 1 : m, n = 0, f = 0, b = 0;
    for (; f < warmup; f++)
        out[n++] = (ics_wl_step){.fwd = true, .mb = f};
    for (; f < m; f++, b++) {
        out[n++] = (ics_wl_step){.fwd = true, .mb = f};
        out[n++] = (ics_wl_step){.fwd = false, .mb = b};
    }
    for (; b < m; b++)
        out[n++] = (ics_wl_step){.fwd = false, .mb = b};
}

/* The k-th forward (or backward) of the interleaved schedule: micro-batches go in groups of p
 * through chunk 0, then the same group through chunk 1, ...; backwards visit chunks from the
 * last. */
static ics_wl_step virtual_step(int p, int vp, int k, bool fwd)
{
    int in_group = k % (p * vp), chunk = in_group / p;
    return (ics_wl_step){
        .fwd = fwd, .mb = (k / (p * vp)) * p + k % p, .chunk = fwd ? chunk : vp - 1 - chunk};
}

/* Interleaved 1F1B (Megatron's forward_backward_pipelining_with_interleaving): more warm-up,
 * (p - s - 1) x 2 + (vp - 1) x p forwards, all of them when there are only p micro-batches. */
static void interleaved(int p, int s, int m, int vp, ics_wl_step *out)
{
    int total = m * vp, warmup = (p - s - 1) * 2 + (vp - 1) * p;
    if (m == p || warmup > total)
        warmup = total;
    int n = 0, f = 0, b = 0;
    for (; f < warmup; f++)
        out[n++] = virtual_step(p, vp, f, true);
    for (; f < total; f++, b++) {
        out[n++] = virtual_step(p, vp, f, true);
        out[n++] = virtual_step(p, vp, b, false);
    }
    for (; b < total; b++)
        out[n++] = virtual_step(p, vp, b, false);
}

ics_wl_step *ics_workload_schedule(const ics_layout *l, int stage, int *n)
{
    int m = ics_layout_microbatches(l);
    *n = 2 * m * l->vp;
    ics_wl_step *out = g_new0(ics_wl_step, *n);
    if (l->vp > 1)
        interleaved(l->pp, stage, m, l->vp, out);
    else
        one_f_one_b(l->pp, stage, m, out);
    return out;
}
