/* Shared by the JSON trace reader's files (trace_json.c, trace_json_match.c, trace_json_write.c);
 * no other module includes it. */
#ifndef ICS_TRACE_JSON_INTERNAL_H
#define ICS_TRACE_JSON_INTERNAL_H

#include "core/json.h"
#include "trace/trace.h"

/* Sizes (collectives, sends, compute bytes) lie in 1 .. ICS_TRACE_JSON_SIZE_LIMIT - 1 (0 too for
 * compute bytes): a petabyte is far past any real buffer, and every such size is exact in a double.
 */
#define ICS_TRACE_JSON_SIZE_LIMIT (INT64_C(1) << 50)

/* An all-to-all's "sms" (a dispatcher's own kernel) lie in 0 .. this: more SMs than any GPU has. */
#define ICS_TRACE_JSON_MAX_SMS 1024

/* Names the format gives to the trace model's enums, indexed by them (NULL-terminated). */
extern const char *const ics_trace_json__math_dtypes[]; /* ics_dtype */
extern const char *const ics_trace_json__works[];       /* ics_work_kind */
extern const char *const ics_trace_json__cats[];        /* ics_trace_cat */
/* Collective element types and their sizes in bytes, in the same order. */
extern const char *const ics_trace_json__coll_dtypes[];
extern const int ics_trace_json__coll_dtype_bytes[];

/* The name the writer gives an element size (1, 2, 4 or 8 bytes), or NULL for any other. */
const char *ics_trace_json__coll_dtype_for(int bytes);

/* Matches what ranks issue to each other in the trace t read from `ranks` (the "ranks" array):
 * every member of a communicator issues the same collectives (operation, size, element type,
 * root) in the same order, skipping members with no ops at all as ics_trace_check does; the
 * k-th send from a to b and the k-th recv at b from a exist together, with the same size.
 * On a mismatch sets jr's error, located at the op, and returns false. O(ops + comm members). */
bool ics_trace_json__match(ics_jr *jr, const cJSON *ranks, const ics_trace *t);

#endif
