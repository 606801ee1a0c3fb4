/* format.c: nccl-tests tables and p2pBandwidthLatencyTest matrices, printf for printf.
 * Invariant: a row's text is a function of the row alone, so JSON "raw" equals the table. */
#include "format.h"

#include "plan.h"
#include "plan_compute.h"

#include <stdio.h>

void icsv_format_prologue(GString *out, const icsv_args *a, const icsv_hw *hw, const char *hostname,
                          int pid)
{
    bool factor = a->step_factor > 1;
    g_string_append_printf(
        out,
        "# nThread 1 nGpus %d minBytes %" G_GUINT64_FORMAT " maxBytes %" G_GUINT64_FORMAT
        " step: %" G_GUINT64_FORMAT "(%s) warmup iters: %d iters: %d agg iters: 1 validation: %d "
        "graph: 0\n#\n# Using devices\n",
        hw->ngpus, a->min_bytes, a->max_bytes, factor ? a->step_factor : a->step_bytes,
        factor ? "factor" : "bytes", a->warmup, a->iters, a->check ? 1 : 0);
    for (int i = 0; i < hw->ngpus; i++)
        g_string_append_printf(
            out, "#  Rank %2d Group %2d Pid %6d on %10s device %2d [0x%02x] %s\n", i, 0, pid,
            hostname, hw->dev[i].ordinal, hw->dev[i].pci_bus, hw->dev[i].name);
}

void icsv_format_columns(GString *out)
{
    g_string_append(out, "#\n");
    g_string_append_printf(out,
                           "# %10s  %12s  %8s  %6s  %6s           out-of-place                  "
                           "     in-place          \n",
                           "", "", "", "", "");
    g_string_append_printf(out,
                           "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s %6s  %7s  %6s  %6s %6s\n",
                           "size", "count", "type", "redop", "root", "time", "algbw", "busbw",
                           "#wrong", "time", "algbw", "busbw", "#wrong");
    g_string_append_printf(
        out, "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %5s  %7s  %6s  %6s  %5s\n", "(B)",
        "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "");
}

void icsv_format_time(double time_us, char buf[32])
{
    int decimals = time_us >= 10000.0 ? 0 : time_us >= 100.0 ? 1 : 2;
    snprintf(buf, 32, "%7.*f", decimals, time_us);
}

static void append_place(GString *s, const icsv_place *p)
{
    char t[32];
    icsv_format_time(p->time_us, t);
    if (p->wrong == ICSV_WRONG_NA)
        g_string_append_printf(s, "  %7s  %6.2f  %6.2f  %5s", t, p->algbw_gbps, p->busbw_gbps,
                               "N/A");
    else
        g_string_append_printf(s, "  %7s  %6.2f  %6.2f  %5g", t, p->algbw_gbps, p->busbw_gbps,
                               (double)p->wrong);
}

char *icsv_format_row(const icsv_row *row)
{
    GString *s = g_string_new(NULL);
    g_string_append_printf(s, "%12" G_GUINT64_FORMAT "  %12" G_GUINT64_FORMAT "  %8s  %6s  %6d",
                           row->counts.size_bytes, row->counts.count, icsv_dtype_name(row->dtype),
                           icsv_op_redop(row->op), row->root);
    append_place(s, &row->oop);
    append_place(s, &row->ip);
    return g_string_free(s, FALSE);
}

void icsv_format_trailer(GString *out, const icsv_row *rows, size_t n)
{
    int64_t wrong = icsv_total_wrong(rows, n);
    g_string_append_printf(out, "# Out of bounds values : %" G_GINT64_FORMAT " %s\n", wrong,
                           wrong ? "FAILED" : "OK");
    g_string_append_printf(out, "# Avg bus bandwidth    : %g \n", icsv_avg_busbw(rows, n));
    g_string_append(out, "#\n");
}

void icsv_format_compare(GString *out, const char *name_a, const icsv_row *a, const char *name_b,
                         const icsv_row *b, size_t n)
{
    g_string_append_printf(out,
                           "# busbw (GB/s): a = %s, b = %s; a/b = busbw a / busbw b "
                           "(= time b / time a)\n",
                           name_a, name_b);
    g_string_append_printf(out, "# %10s  %9s  %9s  %7s  %9s  %9s  %7s\n", "size", "oop a", "oop b",
                           "a/b", "ip a", "ip b", "a/b");
    for (size_t i = 0; i < n; i++) {
        const icsv_place *pa[2] = {&a[i].oop, &a[i].ip}, *pb[2] = {&b[i].oop, &b[i].ip};
        g_string_append_printf(out, "# %10" G_GUINT64_FORMAT, a[i].counts.size_bytes);
        for (int k = 0; k < 2; k++) {
            /* busbw is 0.00 at small sizes; the time ratio is the same figure inverted */
            double ta = pa[k]->time_us, tb = pb[k]->time_us;
            g_string_append_printf(out, "  %9.2f  %9.2f  %7.3f", pa[k]->busbw_gbps,
                                   pb[k]->busbw_gbps, ta > 0 ? tb / ta : 0.0);
        }
        g_string_append_c(out, '\n');
    }
    g_string_append(out, "#\n");
}

void icsv_format_matrix(GString *out, const char *title, const char *corner, int n, const double *m)
{
    g_string_append_printf(out, "%s\n   %s", title, corner);
    for (int j = 0; j < n; j++)
        g_string_append_printf(out, "%6d ", j);
    g_string_append_c(out, '\n');
    for (int i = 0; i < n; i++) {
        g_string_append_printf(out, "%6d ", i);
        for (int j = 0; j < n; j++)
            g_string_append_printf(out, "%6.02f ", m[i * n + j]);
        g_string_append_c(out, '\n');
    }
}

static void append_connectivity(GString *out, int n, const int *access)
{
    g_string_append(out, "P2P Connectivity Matrix\n     D\\D");
    for (int j = 0; j < n; j++)
        g_string_append_printf(out, "%6d", j);
    g_string_append_c(out, '\n');
    for (int i = 0; i < n; i++) {
        g_string_append_printf(out, "%6d\t", i);
        for (int j = 0; j < n; j++)
            g_string_append_printf(out, "%6d", i == j || access[i * n + j] ? 1 : 0);
        g_string_append_c(out, '\n');
    }
}

void icsv_format_p2p(GString *out, const icsv_hw *hw, const int *access, const double *uni,
                     const double *bi, const double *lat_us)
{
    int n = hw->ngpus;
    g_string_append(out, "[P2P (Peer-to-Peer) GPU Bandwidth Latency Test]\n");
    for (int i = 0; i < n; i++)
        g_string_append_printf(out,
                               "Device: %d, %s, pciBusID: %x, pciDeviceID: %x, pciDomainID:%x\n",
                               hw->dev[i].ordinal, hw->dev[i].name, hw->dev[i].pci_bus,
                               hw->dev[i].pci_device, hw->dev[i].pci_domain);
    append_connectivity(out, n, access);
    icsv_format_matrix(out, "Unidirectional P2P=Enabled Bandwidth Matrix (GB/s)", "D\\D", n, uni);
    icsv_format_matrix(out, "Bidirectional P2P=Enabled Bandwidth Matrix (GB/s)", "D\\D", n, bi);
    icsv_format_matrix(out, "P2P=Enabled Latency Matrix (us)", "GPU", n, lat_us);
}

void icsv_format_compute_prologue(GString *out, const icsv_compute_hw *hw, int warmup, int iters,
                                  bool graph)
{
    g_string_append_printf(out, "# icsim-validate %s compute on GPU 0: %s, %d SMs, cc %d.%d, ",
                           ICSV_VERSION, hw->gpu, hw->sms, hw->cc_major, hw->cc_minor);
    if (hw->clock_khz > 0)
        g_string_append_printf(out, "%d MHz, ", hw->clock_khz / 1000);
    g_string_append_printf(out, "%.2f GB (%.2f GB free)\n", (double)hw->memory_bytes / 1e9,
                           (double)hw->free_bytes / 1e9);
    g_string_append_printf(out,
                           "# gemm: C[m x n] = A[m x k] . B[k x n], fp32 accumulation, cuBLASLt "
                           "%zu, TN layout, its first heuristic algorithm, 32 MiB workspace; "
                           "fp8: E4M3 in, bf16 out\n",
                           hw->cublaslt_version);
    g_string_append(out, "# copy: cudaMemcpyAsync device to device; GB/s = 2 x bytes / time "
                         "(read and written)\n");
    if (graph)
        g_string_append_printf(out,
                               "# time: mean of one call over %d calls replayed from one CUDA "
                               "graph, after %d warmup calls and one warmup replay (CUDA "
                               "events)\n",
                               iters, warmup);
    else
        g_string_append_printf(out,
                               "# time: mean of one call over %d back-to-back calls after %d "
                               "warmup calls (CUDA events)\n",
                               iters, warmup);
}

void icsv_format_compute_columns(GString *out)
{
    g_string_append(out, "#\n");
    g_string_append_printf(out, "# %6s  %5s  %7s  %7s  %7s  %12s  %10s  %8s  %8s\n", "kernel",
                           "dtype", "m", "n", "k", "bytes", "time_us", "TFLOP/s", "GB/s");
}

void icsv_format_compute_groups(GString *out, int groups, int streams)
{
    g_string_append_printf(out,
                           "# groups: each gemm row is %d GEMMs of its shape, each with its own "
                           "operands, issued round-robin on %d stream%s forked from and joined "
                           "to the timed one (Transformer Engine's GroupedLinear); time_us is "
                           "the whole group's, TFLOP/s all %d GEMMs'\n",
                           groups, streams, streams == 1 ? "" : "s", groups);
}

void icsv_format_compute_time(double time_us, char buf[32])
{
    snprintf(buf, 32, "%.2f", time_us);
}

char *icsv_format_compute_row(const icsv_compute_row *r)
{
    char t[32];
    icsv_format_compute_time(r->time_us, t);
    if (r->kernel == ICSV_COMPUTE_GEMM)
        return g_strdup_printf("  %6s  %5s  %7" G_GINT64_FORMAT "  %7" G_GINT64_FORMAT
                               "  %7" G_GINT64_FORMAT "  %12s  %10s  %8.2f  %8s",
                               "gemm", icsv_gemm_dtype_name(r->dtype), (gint64)r->m, (gint64)r->n,
                               (gint64)r->k, "-", t, icsv_compute_tflops(r), "-");
    return g_strdup_printf("  %6s  %5s  %7s  %7s  %7s  %12" G_GUINT64_FORMAT "  %10s  %8s  %8.2f",
                           "copy", "-", "-", "-", "-", r->bytes, t, "-", icsv_compute_gbps(r));
}
