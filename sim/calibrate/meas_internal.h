/* What the measurement readers share (meas.c, meas_nccl_tests.c, meas_json.c): the vocabulary
 * of nccl-tests (operations, datatypes, the check's tolerance) and table building. Not part of
 * the module's interface. Invariant: a reader either hands back complete tables (op, nranks,
 * dtype and at least one row set) or none and an error. */
#ifndef ICS_CALIB_MEAS_INTERNAL_H
#define ICS_CALIB_MEAS_INTERNAL_H

#include "calibrate/meas.h"

/* The operation named by `word`: an nccl-tests name ("all_reduce"), a binary name
 * ("all_reduce_perf", "all_reduce_perf_mpi", with or without a directory) or a common spelling
 * ("allreduce", "AllReduce"). Returns 1 and *op for one of the seven operations, -1 for an
 * nccl-tests test this module does not read (gather, scatter, hypercube, alltoallv), 0 for
 * anything else. */
int ics_meas__op_parse(const char *word, ics_coll_op *op);
const char *ics_meas__op_name(ics_coll_op op);
/* "all_reduce, all_gather, ..., reduce": for messages. */
const char *ics_meas__op_list(void);

/* Bytes of one element of an nccl-tests datatype ("float": 4), 0 if unknown. */
int ics_meas__dtype_bytes(const char *dtype);

/* Whether a check column's value means the check failed. `deviation`: the value is the maximum
 * deviation printed by nccl-tests before "#wrong", judged as nccl-tests judged it (its datatype's
 * tolerance times nranks - 1); otherwise it counts wrong elements. */
bool ics_meas__wrong(double value, bool deviation, const char *dtype, int nranks);
/* NCCL_VERSION_CODE of a version string's start ("2.26.6", "2.18.3+cuda12.2", "v2.21.5-1"), or of
 * a code itself ("22606"); 0 if it is neither (a 2.x version at or after 2.9, as NCCL codes
 * them: major x 10000 + minor x 100 + patch). */
int ics_meas__nccl_version(const char *s);

/* A new empty table (transfer full) and its release (NULL: no-op). */
ics_meas_table *ics_meas__table_new(const char *source);
void ics_meas__table_free(ics_meas_table *t);

/* The readers: append complete tables (ics_meas_table*, transfer full) to `out`, or return
 * false with *error. `rows_left`: how many rows the ics_meas may still take. `op`: the
 * caller's operation for tables whose log names none (text only), or NULL. */
bool ics_meas__read_nccl_tests(const char *name, const char *text, size_t len,
                               const ics_coll_op *op, guint rows_left, GPtrArray *out,
                               GError **error);
bool ics_meas__read_json(const char *name, const char *text, size_t len, guint rows_left,
                         GPtrArray *out, GError **error);

#endif
