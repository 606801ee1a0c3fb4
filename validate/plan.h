/* plan.h: which sizes a sweep visits and how each becomes element counts and bandwidths,
 * exactly as nccl-tests computes them (src/common.cu, src/<collective>.cu).
 * Pure functions: no GPU, no I/O. */
#ifndef ICSV_PLAN_H
#define ICSV_PLAN_H

#include "icsv.h"

#include <glib.h>

#define ICSV_ERROR (icsv_error_quark())
GQuark icsv_error_quark(void);
typedef enum { ICSV_ERROR_INPUT } icsv_error_code;

#define ICSV_PLAN_MAX_SIZES 100000 /* a sweep longer than this is a typo (-i 1 -e 8G) */

/* Parses a byte count as nccl-tests does: a number, optionally fractional, optionally followed
 * by K, M or G (binary: 1K = 1024), case-insensitive: "8", "64K", "1.5G". Fails with
 * ICSV_ERROR_INPUT naming `what` ("-b") on anything else, including negative numbers and
 * values past 2^62. */
bool icsv_parse_size(const char *what, const char *s, uint64_t *out, GError **err);

/* The sizes of a sweep: from min_bytes while <= max_bytes, multiplying by step_factor when it
 * is > 1, else adding step_bytes. Returns a new array of *n sizes (transfer full: g_free), or
 * NULL with ICSV_ERROR_INPUT when the sweep is empty, endless (factor <= 1 and step 0; or
 * min_bytes 0 with a factor) or longer than ICSV_PLAN_MAX_SIZES. */
uint64_t *icsv_plan_sizes(uint64_t min_bytes, uint64_t max_bytes, uint64_t step_factor,
                          uint64_t step_bytes, size_t *n, GError **err);

/* nccl-tests' byte counts for one sweep size over nranks ranks: count = bytes / typesize;
 * all_gather, reduce_scatter and alltoall use count / nranks elements per rank (so the size
 * column is rounded down to a multiple of nranks elements); the others use count whole. */
void icsv_plan_counts(icsv_op op, icsv_dtype t, int nranks, uint64_t bytes, icsv_counts *out);

/* busbw / algbw: all_reduce 2(n-1)/n; all_gather, reduce_scatter, alltoall (n-1)/n;
 * sendrecv, broadcast, reduce 1. */
double icsv_busbw_factor(icsv_op op, int nranks);

/* Fills time, algbw = size / time and busbw = algbw * factor (GB = 1e9 bytes); wrong is left
 * alone. A time <= 0 gives zero bandwidths. */
void icsv_place_set_time(icsv_place *p, double time_us, uint64_t size_bytes, icsv_op op,
                         int nranks);

/* nccl-tests' "# Avg bus bandwidth": the mean busbw over every out-of-place and in-place
 * figure of the rows (0 when there are none). */
double icsv_avg_busbw(const icsv_row *rows, size_t n);

/* nccl-tests' "# Out of bounds values": the wrong elements summed over the rows ("N/A" sides
 * count 0). */
int64_t icsv_total_wrong(const icsv_row *rows, size_t n);

#endif /* ICSV_PLAN_H */
