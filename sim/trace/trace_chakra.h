/* Chakra execution traces (MLCommons; the format ASTRA-sim replays), read into and written from
 * icsim's trace model (trace.h) through protobuf-c. docs/trace-format.md, "Chakra execution
 * traces", says how nodes map to ops and which attributes are read.
 *
 * Files: one per rank, `<prefix>.<rank>.et`, each a stream of messages framed by their length
 * as a varint: a GlobalMetadata, then Nodes. Communicator groups: ASTRA-sim's JSON file mapping
 * a group's name (the nodes' `pg_name`) to its ranks, `<prefix>.comm_groups.json` by default.
 * A collective without pg_name, or with "0" (ASTRA-sim's default group), runs on all ranks;
 * without a groups file, any other pg_name is the group of the ranks that use it. */
#ifndef ICS_TRACE_CHAKRA_H
#define ICS_TRACE_CHAKRA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "trace/trace.h"

/* Reads the ranks `<prefix>.0.et`, `<prefix>.1.et`, ... up to the first missing one (path: the
 * prefix, or any one of the files). comm_groups: the groups file, or NULL for
 * `<prefix>.comm_groups.json` if it exists. O(nodes x streams) time and memory per rank, however
 * nodes chain. NULL with *err (transfer full; one line: "FILE: node N (id I, "name"): what:
 * expected ..., got ...") on bad input. Transfer full. */
ics_trace *ics_trace_read_chakra(const char *path, const char *comm_groups, char **err);

/* The same from memory (tests, fuzzing): rank k's file is data[k] (len[k] bytes), no groups
 * file; `name` stands for every file in messages. */
ics_trace *ics_trace_read_chakra_mem(const char *name, int nranks, const uint8_t *const *data,
                                     const size_t *len, char **err);

/* Writes t as `<prefix>.<rank>.et` plus `<prefix>.comm_groups.json` (communicator c is group
 * c + 1, its name in the nodes' pg_desc), with the attributes ASTRA-sim reads in the types it
 * reads them; attributes prefixed `icsim_` carry what makes the read-back trace identical
 * (streams, categories, durations to the picosecond, work kinds). Every file is encoded in
 * memory, written under a temporary name and then renamed; `<prefix>.<n>.et` files past the
 * last rank, left by a longer trace, are removed. Same trace, same bytes. False with *err
 * (transfer full) if an op has no Chakra form (a SENDRECV collective) or a file cannot be
 * written; then no file was changed, unless a rename failed midway. */
bool ics_trace_write_chakra(const ics_trace *t, const char *prefix, char **err);

#endif
