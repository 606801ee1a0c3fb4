/* Chakra execution traces (MLCommons; the format ASTRA-sim replays), read into and written from
 * icsim's trace model (trace.h) through protobuf-c. docs/trace-format.md, "Chakra", says how
 * nodes map to ops.
 *
 * Files: one per rank, `<prefix>.<rank>.et`, each a stream of messages framed by their length
 * as a varint: a GlobalMetadata, then Nodes. Communicator groups: a JSON object mapping a
 * group's name (the nodes' `pg_name` attribute) to its ranks, `<prefix>.comm_groups.json` by
 * default, as ASTRA-sim's communicator-group file does. */
#ifndef ICS_TRACE_CHAKRA_H
#define ICS_TRACE_CHAKRA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "trace.h"

/* Reads the ranks `<prefix>.0.et`, `<prefix>.1.et`, ... (path: the prefix, or any one of the
 * files). comm_groups: the groups file, or NULL for `<prefix>.comm_groups.json` if it exists
 * (without one, every collective runs on all ranks). NULL with *err (transfer full) on bad
 * input. Transfer full. */
ics_trace *ics_trace_read_chakra(const char *path, const char *comm_groups, char **err);

/* The same from memory (tests, fuzzing): rank k's file is data[k] (len[k] bytes), no
 * communicator groups; `name` is used in messages. */
ics_trace *ics_trace_read_chakra_mem(const char *name, int nranks, const uint8_t *const *data,
                                     const size_t *len, char **err);

/* Writes t as `<prefix>.<rank>.et` plus `<prefix>.comm_groups.json`, each atomically. The
 * standard attributes carry what ASTRA-sim needs; attributes prefixed `icsim_` carry what
 * makes the read-back trace identical (streams, categories, durations to the picosecond).
 * False with *err (transfer full). */
bool ics_trace_write_chakra(const ics_trace *t, const char *prefix, char **err);

#endif
