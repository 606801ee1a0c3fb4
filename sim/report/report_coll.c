/* Collective results in nccl-tests' layout, so that a simulated run diffs against a real log:
 * the same count, algbw and busbw definitions and the same column widths and number formats.
 * Invariant: a row printed from a real log's time reproduces that log's row. */
#include "report/report.h"

#include <stdio.h>

bool ics_report_coll_reduces(ics_coll_op op)
{
    return op == ICS_COLL_ALL_REDUCE || op == ICS_COLL_REDUCE_SCATTER || op == ICS_COLL_REDUCE ||
           op == ICS_COLL_SENDRECV;
}

void ics_report_coll_sizes(ics_coll_op op, uint64_t requested_bytes, int dtype_bytes, int root,
                           int nranks, ics_coll_row *row)
{
    g_assert(dtype_bytes > 0 && nranks > 0);
    uint64_t count = requested_bytes / (uint64_t)dtype_bytes;
    switch (op) {
    case ICS_COLL_ALL_GATHER:
    case ICS_COLL_REDUCE_SCATTER:
    case ICS_COLL_ALLTOALL:
        /* nccl-tests' paramCount: each rank's share; the buffer is share x nranks */
        row->count = count / (uint64_t)nranks;
        row->size_bytes = row->count * (uint64_t)nranks * (uint64_t)dtype_bytes;
        break;
    default:
        row->count = count;
        row->size_bytes = count * (uint64_t)dtype_bytes;
        break;
    }
    row->root = (op == ICS_COLL_BROADCAST || op == ICS_COLL_REDUCE) ? root : -1;
}

void ics_report_coll_time(ics_coll_op op, int nranks, double time_us, ics_coll_row *row)
{
    row->time_us = time_us;
    row->algbw_gbps = time_us > 0 ? (double)row->size_bytes / 1.0e9 / (time_us * 1.0e-6) : 0.0;
    row->busbw_gbps = row->algbw_gbps * ics_coll_busbw_factor(op, nranks);
}

void ics_report_coll_time_str(ics_nccltests_style style, double time_us, char buf[32])
{
    /* nccl-tests formats the time into a string first, then prints it "%7s" */
    int decimals;
    if (style == ICS_NCCLTESTS_CLASSIC)
        decimals = time_us >= 10000.0 ? 0 : time_us >= 100.0 ? 1 : 2;
    else
        decimals = time_us >= 100000.0 ? 0 : time_us >= 10000.0 ? 1 : 2;
    snprintf(buf, 32, "%.*f", decimals, time_us);
}

void ics_report_coll_columns(ics_nccltests_style style, GString *out)
{
    /* verbatim from nccl-tests, trailing blanks included, so that `diff` matches */
    g_string_append(out, "#                                                              "
                         "out-of-place                       in-place          \n");
    if (style == ICS_NCCLTESTS_CLASSIC) {
        g_string_append(out, "#       size         count      type   redop    root     time   "
                             "algbw   busbw #wrong     time   algbw   busbw #wrong\n");
        g_string_append(out, "#        (B)    (elements)                               (us)  "
                             "(GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)       \n");
    } else {
        g_string_append(out, "#       size         count      type   redop    root     time   "
                             "algbw   busbw  #wrong     time   algbw   busbw  #wrong \n");
        g_string_append(out, "#        (B)    (elements)                               (us)  "
                             "(GB/s)  (GB/s)             (us)  (GB/s)  (GB/s)         \n");
    }
}

void ics_report_coll_row(ics_nccltests_style style, const ics_coll_row *row, GString *out)
{
    char t[32];
    ics_report_coll_time_str(style, row->time_us, t);
    int wrong_width = style == ICS_NCCLTESTS_CLASSIC ? 5 : 6;
    g_string_append_printf(out, "%12llu  %12llu  %8s  %6s  %6d",
                           (unsigned long long)row->size_bytes, (unsigned long long)row->count,
                           row->type, row->redop, row->root);
    for (int place = 0; place < 2; place++) /* out-of-place, in-place: the same figures */
        g_string_append_printf(out, "  %7s  %6.2f  %6.2f  %*s", t, row->algbw_gbps, row->busbw_gbps,
                               wrong_width, "N/A");
    g_string_append_c(out, '\n');
}

void ics_report_coll_trailer(double avg_busbw_gbps, GString *out)
{
    g_string_append(out, "# Out of bounds values : 0 OK\n");
    g_string_append_printf(out, "# Avg bus bandwidth    : %g \n", avg_busbw_gbps);
    g_string_append(out, "#\n");
}
