/* format.h: text as nccl-tests and p2pBandwidthLatencyTest print it, so that a person, a
 * script or `icsim calibrate` reads our runs like theirs. Everything appends to a GString the
 * caller owns; nothing here prints. */
#ifndef ICSV_FORMAT_H
#define ICSV_FORMAT_H

#include "args.h"
#include "icsv.h"

#include <glib.h>

/* nccl-tests' run header: "# nThread 1 nGpus N minBytes ... validation: 1 graph: 0", "#",
 * "# Using devices" and one "#  Rank  0 Group  0 Pid ... device  0 [0x18] NAME" line per GPU. */
void icsv_format_prologue(GString *out, const icsv_args *a, const icsv_hw *hw, const char *hostname,
                          int pid);

/* The three column-title lines (out-of-place / in-place, time algbw busbw #wrong), verbatim
 * from nccl-tests before 2.17, trailing blanks included, preceded by a "#" line. */
void icsv_format_columns(GString *out);

/* nccl-tests' time column: "%7.2f" below 100 us, "%7.1f" below 10 ms, "%7.0f" above. */
void icsv_format_time(double time_us, char buf[32]);

/* One table line without the newline, e.g.
 * "           8             2     float     sum      -1    13.67    0.00    0.00      0 ..."
 * (#wrong "%5g", or "N/A" for ICSV_WRONG_NA). Transfer full: g_free. */
char *icsv_format_row(const icsv_row *row);

/* "# Out of bounds values : 0 OK", "# Avg bus bandwidth    : X ", "#". */
void icsv_format_trailer(GString *out, const icsv_row *rows, size_t n);

/* "--kernel all": busbw of two kernels side by side and their ratio, every line a comment so
 * that the tables above still parse as nccl-tests output. */
void icsv_format_compare(GString *out, const char *name_a, const icsv_row *a, const char *name_b,
                         const icsv_row *b, size_t n);

/* One p2pBandwidthLatencyTest matrix: the title line, "   D\D" (or corner) and "%6d " column
 * numbers, then per row "%6d " and "%6.02f " per cell. m is n x n, row-major, m[i*n + j] =
 * from GPU i to GPU j. */
void icsv_format_matrix(GString *out, const char *title, const char *corner, int n,
                        const double *m);

/* The p2pBandwidthLatencyTest report: its device lines, connectivity matrix (access[i*n+j]
 * nonzero when i can reach j's memory), then "Unidirectional P2P=Enabled Bandwidth Matrix
 * (GB/s)", "Bidirectional P2P=Enabled Bandwidth Matrix (GB/s)" and "P2P=Enabled Latency
 * Matrix (us)" as the sample titled them before CUDA 10. */
void icsv_format_p2p(GString *out, const icsv_hw *hw, const int *access, const double *uni,
                     const double *bi, const double *lat_us);

/* ---- compute mode: one table, nccl-tests' conventions (every header line starts with '#') ---- */

/* The GPU and how it is timed: "# icsim-validate 0.1.0 compute on GPU 0: NAME, 132 SMs, cc 9.0,
 * ...", what a GEMM and a copy are, and "# time: ... warmup, iters ...". */
void icsv_format_compute_prologue(GString *out, const icsv_compute_hw *hw, int warmup, int iters,
                                  bool graph);

/* "#", then the column titles: kernel dtype m n k bytes time_us TFLOP/s GB/s. */
void icsv_format_compute_columns(GString *out);
/* compute --groups: the line that says each GEMM row is G GEMMs on S streams. */
void icsv_format_compute_groups(GString *out, int groups, int streams);

/* The time column, "%.2f" us: the JSON's time_us is this text's value. */
void icsv_format_compute_time(double time_us, char buf[32]);

/* One line without the newline; what does not apply to the kernel is "-", e.g.
 * "    gemm   bf16     8192     8192     8192             -     1378.20    797.79         -".
 * Transfer full: g_free. */
char *icsv_format_compute_row(const icsv_compute_row *r);

#endif /* ICSV_FORMAT_H */
