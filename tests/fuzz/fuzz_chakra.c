/* libFuzzer target for the Chakra reader: any bytes yield either a trace the replayer may trust
 * (ics_trace_check passes, every dependency is on an earlier op, every op's stream, peer and
 * communicator exist) or one error line naming the input. A crash, a leak, a sanitizer report
 * or a hang is a bug in the reader. fuzz_hw_replay.c's driver runs it from files in every build
 * (fuzz_chakra_replay).
 * Input: byte 0 picks the number of ranks (1 + its low two bits); each rank but the last is a
 * 16-bit little-endian length and that many bytes (cut short at the end of the input); the last
 * rank gets the rest. The seeds in corpus-chakra/ are real files packed so. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <glib.h>

#include "trace/trace.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define NAME "fuzz.et"

static void broken(const char *what)
{
    fprintf(stderr, "fuzz_chakra: %s\n", what);
    abort();
}

static void check_trace(const ics_trace *t)
{
    GError *why = NULL;
    if (!ics_trace_check(t, &why))
        broken(why->message);
    int nr = ics_trace_nranks(t);
    for (int k = 0; k < nr; k++) {
        if (ics_trace_nstreams(t, k) < 1)
            broken("a rank without a stream");
        for (int i = 0; i < ics_trace_nops(t, k); i++) {
            const ics_trace_op *op = ics_trace_get_op(t, k, i);
            if (op->stream < 0 || op->stream >= ics_trace_nstreams(t, k))
                broken("stream out of range");
            if (op->kind == ICS_TOP_COLL && (op->comm < 0 || op->comm >= ics_trace_ncomms(t)))
                broken("communicator out of range");
            if ((op->kind == ICS_TOP_SEND || op->kind == ICS_TOP_RECV) &&
                (op->peer < 0 || op->peer >= nr || op->peer == k))
                broken("peer out of range");
            if (op->kind == ICS_TOP_COMPUTE &&
                (op->duration_ps < 0 || !(op->flops >= 0) || !(op->mem_bytes >= 0)))
                broken("negative or NaN time or work");
            int nd;
            const int *deps = ics_trace_op_deps(t, k, i, &nd);
            for (int d = 0; d < nd; d++)
                if (deps[d] < 0 || deps[d] >= i || (d > 0 && deps[d] <= deps[d - 1]))
                    broken("dependency not on an earlier op, or not sorted and unique");
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    int nranks = 1 + (data[0] & 3);
    const uint8_t *parts[4];
    size_t lens[4], at = 1;
    for (int k = 0; k < nranks; k++) {
        size_t n = size - at;
        if (k < nranks - 1) {
            n = at + 2 <= size ? (size_t)(data[at] | data[at + 1] << 8) : 0;
            at = MIN(at + 2, size);
            n = MIN(n, size - at);
        }
        parts[k] = data + at;
        lens[k] = n;
        at += n;
    }
    GError *err = NULL;
    ics_trace *t = ics_trace_read_chakra_mem(NAME, nranks, parts, lens, &err);
    if (t && err)
        broken("a trace and an error");
    if (!t &&
        (!err || strncmp(err->message, NAME, strlen(NAME)) != 0 || strchr(err->message, '\n')))
        broken(err ? err->message : "no trace and no error");
    if (t)
        check_trace(t);
    ics_trace_free(t);
    g_clear_error(&err);
    return 0;
}
