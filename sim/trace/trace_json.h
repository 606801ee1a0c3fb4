/* icsim's own JSON trace format (docs/trace-format.md): communicators, and per rank its streams
 * and ordered ops. The reader is strict (unknown keys are errors; every error reads
 * "FILE:LINE:COL: $.ranks[3].ops[17].peer: expected ..., got ...") and checks everything the
 * replayer relies on; the writer produces the same format, deterministically. */
#ifndef ICS_TRACE_JSON_H
#define ICS_TRACE_JSON_H

#include <stdbool.h>
#include <stdio.h>

#include "trace/trace.h"

/* The largest trace file the reader takes. Reading costs about 9 times the text in memory (the
 * cJSON tree), 12 for a bad file (read again to locate the error): 2 GiB of text, some 17M
 * ops, needs 20 GB or more. */
#define ICS_TRACE_JSON_MAX_BYTES ((size_t)1 << 31)

/* Reads a trace file. NULL with *err (transfer full, one line) on bad input; a returned trace
 * passes ics_trace_check. Transfer full. Time and memory are linear in the file's size. */
ics_trace *ics_trace_read_json(const char *path, char **err);
/* The same from memory; `name` is the file name used in messages. */
ics_trace *ics_trace_read_json_text(const char *name, const char *text, size_t len, char **err);

/* Writes t to path atomically (a temporary file in the same directory renamed into place;
 * nothing is left behind on failure). Same trace, same bytes. False with *err (transfer full)
 * when the file cannot be written or t holds something the format cannot say (see
 * ics_trace_write_json_to). Streams: memory stays O(ops of one rank). */
bool ics_trace_write_json(const ics_trace *t, const char *path, char **err);

/* Writes t to an open stream (transfer none; left open). Checks first and writes nothing when t
 * holds what the format cannot say: a collective whose element size is not 1, 2, 4 or 8 bytes
 * or whose size is not a whole number of elements, a size outside 1 .. 2^50 - 1, fractional
 * compute bytes. False with *err (transfer full) then, or on a write error. */
bool ics_trace_write_json_to(const ics_trace *t, FILE *f, char **err);

#endif
