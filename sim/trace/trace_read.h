/* Reading a trace in any format icsim knows, told apart by content: a file whose first
 * non-blank byte is '{' is our JSON trace (trace_json.h); anything else is a Chakra execution
 * trace (trace_chakra.h), given as one of its per-rank files or their common prefix. */
#ifndef ICS_TRACE_READ_H
#define ICS_TRACE_READ_H

#include "trace/trace.h"

/* comm_groups: ASTRA-sim's communicator-group JSON for Chakra traces (NULL: the one next to
 * the trace, if any). Returns NULL with *err (transfer full) on bad input. Transfer full. */
ics_trace *ics_trace_read(const char *path, const char *comm_groups, char **err);

#endif
