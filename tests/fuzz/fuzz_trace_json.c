/* libFuzzer target for the JSON trace reader: any bytes yield either a trace the replayer may
 * trust (ics_trace_check passes, every index in range) or one located error. Anything else (a
 * crash, a leak, a sanitizer report, a hang) is a bug in the reader. fuzz_hw_replay.c's driver
 * runs it from files in every build (fuzz_trace_json_replay). */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <glib.h>

#include "sim/trace_json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void broken(const char *what)
{
    fprintf(stderr, "fuzz_trace_json: %s\n", what);
    abort();
}

static void check(const ics_trace *t)
{
    int nr = ics_trace_nranks(t);
    char *err = NULL;
    if (!ics_trace_check(t, &err))
        broken(err);
    for (int c = 0; c < ics_trace_ncomms(t); c++) {
        int n;
        const int *ranks = ics_trace_comm_ranks(t, c, &n);
        for (int i = 0; i < n; i++)
            if (ranks[i] < 0 || ranks[i] >= nr)
                broken("communicator rank out of range");
    }
    for (int k = 0; k < nr; k++)
        for (int i = 0; i < ics_trace_nops(t, k); i++) {
            const ics_trace_op *op = ics_trace_get_op(t, k, i);
            int nd;
            const int *deps = ics_trace_op_deps(t, k, i, &nd);
            for (int d = 0; d < nd; d++)
                if (deps[d] < 0 || deps[d] >= i)
                    broken("dependency not on an earlier op");
            if (op->stream < 0 || op->stream >= ics_trace_nstreams(t, k))
                broken("stream out of range");
            if ((op->kind == ICS_TOP_SEND || op->kind == ICS_TOP_RECV) &&
                (op->peer < 0 || op->peer >= nr || op->peer == k))
                broken("peer out of range");
            if (op->kind == ICS_TOP_COLL && (op->comm < 0 || op->comm >= ics_trace_ncomms(t)))
                broken("communicator out of range");
        }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *err = NULL;
    ics_trace *t = ics_trace_read_json_text("fuzz.json", (const char *)data, size, &err);
    if (t && err)
        broken("a trace and an error");
    if (!t && (!err || strncmp(err, "fuzz.json", 9) != 0))
        broken(err ? err : "no trace and no error");
    if (t)
        check(t);
    ics_trace_free(t);
    g_free(err);
    return 0;
}
