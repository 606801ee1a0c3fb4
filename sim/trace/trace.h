/* A workload as every rank's operations: what trace readers (our JSON, Chakra) and the training
 * generator produce and the replayer (replay.h) plays.
 *
 * The model follows CUDA and NCCL semantics:
 *   - a rank is one GPU; it owns named streams, and ops on one stream run in order;
 *   - an op also waits for its explicit dependencies (earlier ops of the same rank, any stream),
 *     as cudaStreamWaitEvent does;
 *   - a collective runs on a communicator (a list of trace ranks); the k-th collective a
 *     communicator sees at each of its ranks is one call (NCCL's matching rule), which starts
 *     once every member has reached it;
 *   - a send to rank p and the recv posted at p for this rank match in order, per (src, dst).
 * Each op carries the category the step-time breakdown charges it to. */
#ifndef ICS_TRACE_H
#define ICS_TRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "collectives/coll.h"
#include "core/core.h"

typedef enum {
    ICS_TOP_COMPUTE, /* GPU kernel(s): a fixed duration, or FLOPs and bytes for the GPU model */
    ICS_TOP_COLL,    /* an NCCL collective on a communicator */
    ICS_TOP_SEND,    /* NCCL send to a peer rank */
    ICS_TOP_RECV,    /* NCCL recv from a peer rank */
    ICS_TOP_KIND_COUNT
} ics_top_kind;

/* What the breakdown charges an op's exposed time to. */
typedef enum {
    ICS_CAT_COMPUTE,
    ICS_CAT_TP, /* tensor (and sequence) parallel collectives */
    ICS_CAT_PP, /* pipeline sends and receives */
    ICS_CAT_DP, /* data-parallel gradient reduction, parameter gathers */
    ICS_CAT_EP, /* expert-parallel token dispatch and combine (all-to-all) */
    ICS_CAT_CP, /* context-parallel K and V exchange (ring sends and receives) */
    ICS_CAT_OTHER,
    ICS_CAT_COUNT
} ics_trace_cat;

/* How compute ops without a duration are costed (workload/compute.h). */
typedef enum {
    ICS_WORK_GEMM,        /* tensor-core matrix multiply: FLOP-bound, efficiency by shape */
    ICS_WORK_ATTENTION,   /* fused attention */
    ICS_WORK_ELEMENTWISE, /* memory-bound: layer norm, activations, optimizer */
    ICS_WORK_KIND_COUNT
} ics_work_kind;

typedef struct {
    ics_top_kind kind;
    int stream; /* index of the rank's stream (ics_trace_add_stream) */
    ics_trace_cat cat;
    const char *name; /* label for timelines; copied by ics_trace_add_op; may be NULL */
    /* compute */
    ics_time duration_ps; /* > 0: this duration; 0: from work below */
    ics_work_kind work;
    double flops;     /* floating-point operations */
    double mem_bytes; /* HBM traffic */
    ics_dtype dtype;  /* of the math */
    int m, n, k;      /* GEMM shape when known (efficiency by size); 0 otherwise */
    double batch;     /* products of a batched or grouped GEMM, where the generator knows them;
                         0: FLOPs / 2mnk (not in trace files) */
    /* collective */
    int comm;          /* communicator index */
    ics_coll_req coll; /* its splits are unused here: see the op's own splits */
    /* all-to-allv: the bytes this rank sends each rank of the communicator, in the
     * communicator's order (its own entry a local copy); coll.size_bytes is then their sum.
     * NULL: an even all-to-all. Copied by ics_trace_add_op. */
    const uint64_t *splits;
    /* send / recv */
    int peer;       /* trace rank at the other end */
    uint64_t bytes; /* payload */
    int tag;        /* channel, 0..ICS_TRACE_MAX_TAG: the k-th send from a to b on tag t
                       matches the k-th recv at b from a on tag t (MPI's tags, NCCL's order) */
    /* the host (the framework's CPU thread), replay.h. launches: kernels the host launches, one
     * after another, to run the op (a collective: 1; 0: the host is not modelled for the op);
     * host_sync: the host waits for the GPU to reach this op before it launches it (a
     * device-to-host copy the framework reads, e.g. the dropless MoE dispatcher's token
     * counts). The training generator sets them; trace files carry them as "launches" and
     * "host_sync" (docs/trace-format.md). */
    int launches;
    bool host_sync;
} ics_trace_op;

/* The most kernels one op may launch (a trace file's "launches"). */
#define ICS_TRACE_MAX_LAUNCHES 1000000

#define ICS_TRACE_MAX_TAG 7

/* The channel a message from src to dst on `tag` travels on, as one number: what every matcher
 * of sends and recvs keys by (the trace check, the JSON reader's located check, the replay),
 * so that they cannot disagree on which send a recv matches. */
static inline int64_t ics_trace_channel(int nranks, int src, int dst, int tag)
{
    return ((int64_t)src * nranks + dst) * (ICS_TRACE_MAX_TAG + 1) + tag;
}

typedef struct ics_trace ics_trace;

/* An empty trace of nranks ranks (>= 1). Transfer full. */
ics_trace *ics_trace_new(int nranks);
void ics_trace_free(ics_trace *t);

int ics_trace_nranks(const ics_trace *t);

/* A communicator over trace ranks (copied; distinct, each < nranks). Returns its index. */
int ics_trace_add_comm(ics_trace *t, const int *ranks, int n, const char *name);
int ics_trace_ncomms(const ics_trace *t);
/* Its ranks (transfer none) and size. */
const int *ics_trace_comm_ranks(const ics_trace *t, int comm, int *n);
const char *ics_trace_comm_name(const ics_trace *t, int comm);

/* A stream of `rank`, named (copied). Returns its index within the rank. */
int ics_trace_add_stream(ics_trace *t, int rank, const char *name);
int ics_trace_nstreams(const ics_trace *t, int rank);
const char *ics_trace_stream_name(const ics_trace *t, int rank, int stream);

/* Appends an op to `rank` (copied, name too). deps: indices of earlier ops of the same rank
 * (copied, and kept in ascending order: a set). Returns the op's index within the rank. The caller
 * guarantees the indices are in range (readers check user input before adding). */
int ics_trace_add_op(ics_trace *t, int rank, const ics_trace_op *op, const int *deps, int ndeps);
int ics_trace_nops(const ics_trace *t, int rank);
const ics_trace_op *ics_trace_get_op(const ics_trace *t, int rank, int i);
/* The op's dependencies (transfer none). */
const int *ics_trace_op_deps(const ics_trace *t, int rank, int i, int *ndeps);

/* A consistency check of what replay relies on; on failure false and sets *error (ICS_ERROR_INPUT)
 * naming the rank and op: every communicator's members issue the same sequence of collectives (op
 * and size), sends and recvs pair up. Members with no ops at all are skipped: a folded trace (one
 * representative of symmetric ranks, see replay.h) leaves the others empty. */
bool ics_trace_check(const ics_trace *t, GError **error);

const char *ics_trace_cat_name(ics_trace_cat c); /* "compute", "tp", "pp", "dp", "ep", "cp",
                                                     "other" */

/* Reading a trace in any format icsim knows, told apart by name, then content: a path ending in
 * ".et" is a Chakra rank file (its first byte, a length, may be '{'); else a file whose first
 * non-blank byte is '{' is our JSON trace (ics_trace_read_json, below); anything else is a
 * Chakra execution trace (ics_trace_read_chakra), given as one of its per-rank files or their
 * common prefix. */

/* comm_groups: ASTRA-sim's communicator-group JSON for Chakra traces (NULL: the one next to
 * the trace, if any). Returns NULL and sets *error on bad input or an unreadable file (as the
 * reader of the format does). Transfer full. */
ics_trace *ics_trace_read(const char *path, const char *comm_groups, GError **error);

/* icsim's own JSON trace format (docs/trace-format.md): communicators, and per rank its streams
 * and ordered ops. The reader is strict (unknown keys are errors; every error reads
 * "FILE:LINE:COL: $.ranks[3].ops[17].peer: expected ..., got ...") and checks everything the
 * replayer relies on; the writer produces the same format, deterministically. */

/* The largest trace file the reader takes. Reading costs 13 to 16 times the text in memory
 * (the cJSON tree), more for a bad file (read again to locate the error): before parsing, the
 * reader estimates it from the text's values and objects and refuses a file past the memory
 * budget (core/budget.h, docs/limits.md): 2 GiB of text needs some 30 GiB. */
#define ICS_TRACE_JSON_MAX_BYTES ((size_t)1 << 31)

/* Reads a trace file. NULL and sets *error (one line) on bad input: the JSON reader's domain
 * (core/json.h) for what it locates, ICS_ERROR_LIMIT for a file past ICS_TRACE_JSON_MAX_BYTES or
 * the memory budget, ICS_ERROR_IO for a regular file that cannot be read, ICS_ERROR_INPUT
 * otherwise. A returned trace passes ics_trace_check. Transfer full. Time and memory are linear
 * in the file's size. */
ics_trace *ics_trace_read_json(const char *path, GError **error);
/* The same from memory; `name` is the file name used in messages. */
ics_trace *ics_trace_read_json_text(const char *name, const char *text, size_t len, GError **error);

/* Writes t to path atomically (a temporary file in the same directory renamed into place;
 * nothing is left behind on failure). Same trace, same bytes. False and sets *error when the
 * file cannot be written (ICS_ERROR_IO) or t holds something the format cannot say
 * (ICS_ERROR_INPUT; see ics_trace_write_json_to). Streams: memory stays O(ops of one rank). */
bool ics_trace_write_json(const ics_trace *t, const char *path, GError **error);

/* Writes t to an open stream (transfer none; left open). Checks first and writes nothing when t
 * holds what the format cannot say: a collective whose element size is not 1, 2, 4 or 8 bytes
 * or whose size is not a whole number of elements, a size outside 1 .. 2^50 - 1, fractional
 * compute bytes. False and sets *error then (ICS_ERROR_INPUT), or on a write error
 * (ICS_ERROR_IO). */
bool ics_trace_write_json_to(const ics_trace *t, FILE *f, GError **error);

/* Chakra execution traces (MLCommons; the format ASTRA-sim replays), read into and written from
 * icsim's trace model (trace.h) through protobuf-c. docs/trace-format.md, "Chakra execution
 * traces", says how nodes map to ops and which attributes are read.
 *
 * Files: one per rank, `<prefix>.<rank>.et`, each a stream of messages framed by their length
 * as a varint: a GlobalMetadata, then Nodes. Communicator groups: ASTRA-sim's JSON file mapping
 * a group's name (the nodes' `pg_name`) to its ranks, `<prefix>.comm_groups.json` by default.
 * A collective without pg_name, or with "0" (ASTRA-sim's default group), runs on all ranks;
 * without a groups file, any other pg_name is the group of the ranks that use it. */

/* Reads the ranks `<prefix>.0.et`, `<prefix>.1.et`, ... up to the first missing one (path: the
 * prefix, or any one of the files). comm_groups: the groups file, or NULL for
 * `<prefix>.comm_groups.json` if it exists. O(nodes x streams) time and memory per rank, however
 * nodes chain. NULL and sets *error on bad input (one line: "FILE: node N (id I, "name"): what:
 * expected ..., got ..."; ICS_ERROR_INPUT, or the JSON reader's domain for the groups file), a
 * file that cannot be read (ICS_ERROR_IO), or one past ICS_TRACE_CHAKRA_MAX_BYTES or the memory
 * budget (ICS_ERROR_LIMIT, below). Transfer full. */
ics_trace *ics_trace_read_chakra(const char *path, const char *comm_groups, GError **error);

/* The largest rank file the Chakra reader takes (ICS_ERROR_LIMIT beyond). Each file is also
 * estimated against the memory budget before it is read and before its nodes are unpacked
 * (core/budget.h, docs/limits.md: about 9 bytes per byte of file and 576 per node). */
#define ICS_TRACE_CHAKRA_MAX_BYTES ((size_t)1 << 31)

/* The same from memory (tests, fuzzing): rank k's file is data[k] (len[k] bytes), no groups
 * file; `name` stands for every file in messages. */
ics_trace *ics_trace_read_chakra_mem(const char *name, int nranks, const uint8_t *const *data,
                                     const size_t *len, GError **error);

/* Writes t as `<prefix>.<rank>.et` plus `<prefix>.comm_groups.json` (communicator c is group
 * c + 1, its name in the nodes' pg_desc), with the attributes ASTRA-sim reads in the types it
 * reads them; attributes prefixed `icsim_` carry what makes the read-back trace identical
 * (streams, categories, durations to the picosecond, work kinds). Every file is encoded in
 * memory, written under a temporary name and then renamed; `<prefix>.<n>.et` files past the
 * last rank, left by a longer trace, are removed. Same trace, same bytes. False and sets *error
 * if an op has no Chakra form (a SENDRECV collective: ICS_ERROR_INPUT) or a file cannot be
 * written (ICS_ERROR_IO); then no file was changed, unless a rename failed midway. */
bool ics_trace_write_chakra(const ics_trace *t, const char *prefix, GError **error);

#endif
