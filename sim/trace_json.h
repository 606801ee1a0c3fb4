/* icsim's own JSON trace format (docs/trace-format.md): communicators, and per rank its streams
 * and ordered ops. The reader is strict (unknown keys are errors; every error reads
 * "FILE:LINE:COL: $.ranks[3].ops[17].peer: expected ..., got ...") and checks everything the
 * replayer relies on; the writer produces the same format, deterministically. */
#ifndef ICS_TRACE_JSON_H
#define ICS_TRACE_JSON_H

#include <stdbool.h>

#include "trace.h"

/* Reads a trace file. NULL with *err (transfer full) on bad input. Transfer full. */
ics_trace *ics_trace_read_json(const char *path, char **err);
/* The same from memory; `name` is the file name used in messages. */
ics_trace *ics_trace_read_json_text(const char *name, const char *text, size_t len, char **err);

/* Writes t to path atomically (a temporary file renamed into place; nothing is left behind on
 * failure). False with *err (transfer full). */
bool ics_trace_write_json(const ics_trace *t, const char *path, char **err);

#endif
