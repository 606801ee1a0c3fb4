/* Timelines of a replay in the Chrome trace event format (JSON), which ui.perfetto.dev and
 * chrome://tracing open: one process per rank with one thread per stream, each op a complete
 * event ("X") from its start to its end (the time it waited for peers in its args), and a
 * "links" process with one counter track per channel that carried bytes (GB/s over each
 * sampling interval). Times are in microseconds with nanosecond decimals. */
#ifndef ICS_TIMELINE_H
#define ICS_TIMELINE_H

#include <stdbool.h>

#include "replay/replay.h"

/* Writes the timeline of a finished run of r (over trace tr and topology t) to path, at most
 * max_ranks ranks (<= 0: all), atomically: a temporary file renamed into place, nothing left
 * on failure. False with *err (transfer full). */
bool ics_timeline_write(const ics_replay *r, const ics_trace *tr, const ics_topo *t,
                        const char *path, int max_ranks, char **err);

#endif
