/* A sweep's large sizes as two numbers (report.h, ics_report_tail_fit): a call of S bytes takes
 * about T(S) = a + S / B once S is large, B the rate the links and kernels settle at and a what
 * every call pays on top (launch, the pipeline's fill and drain, synchronization). Two sweeps
 * with the same total at one size can differ in both: a model right at 1 GiB by a too-high B
 * and a too-high a is right for the wrong reason, and the fit tells the two apart. */
#include "report/report.h"

#include <math.h>

#include <gsl/gsl_fit.h>

bool ics_report_tail_fit(const double *bytes, const double *time_us, int n, ics_report_tail *out)
{
    *out = (ics_report_tail){.a_us = NAN, .algbw_gbps = NAN, .rows = n, .from_bytes = NAN};
    if (n < 2)
        return false;
    double *w = g_new(double, n);
    for (int i = 0; i < n; i++) {
        if (!(time_us[i] > 0) || !(bytes[i] > 0)) {
            g_free(w);
            return false;
        }
        out->from_bytes = i == 0 ? bytes[i] : MIN(out->from_bytes, bytes[i]);
        /* relative residuals: the small rows of the tail count as much as the largest */
        w[i] = 1.0 / (time_us[i] * time_us[i]);
    }
    double a, k, c00, c01, c11, chisq;
    int rc =
        gsl_fit_wlinear(bytes, 1, w, 1, time_us, 1, (size_t)n, &a, &k, &c00, &c01, &c11, &chisq);
    g_free(w);
    /* every size equal leaves the slope undetermined: GSL returns NaNs (and success), which the
     * test below refuses with a slope that is not positive */
    if (rc != 0 || !(k > 0) || !isfinite(a))
        return false;
    out->a_us = a;
    out->algbw_gbps = 1.0 / (k * 1e3); /* bytes per us -> GB/s */
    return true;
}

bool ics_report_tail_fit_top(const double *bytes, const double *time_us, int n,
                             ics_report_tail *out)
{
    double top = 0;
    for (int i = 0; i < n; i++)
        top = MAX(top, bytes[i]);
    double *b = g_new(double, n + 1), *t = g_new(double, n + 1);
    int k = 0;
    for (int i = 0; i < n; i++) {
        if (bytes[i] < ICS_REPORT_TAIL_FROM_BYTES || bytes[i] * ICS_REPORT_TAIL_SPAN < top)
            continue;
        b[k] = bytes[i];
        t[k++] = time_us[i];
    }
    bool ok = false;
    if (k < 3)
        *out = (ics_report_tail){.a_us = NAN, .algbw_gbps = NAN, .rows = k, .from_bytes = NAN};
    else
        ok = ics_report_tail_fit(b, t, k, out);
    g_free(b);
    g_free(t);
    return ok;
}
