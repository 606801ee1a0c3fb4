/* libFuzzer target for the Chakra reader: the input is two ranks' files, split at its middle;
 * any bytes yield either a trace the replayer may trust (ics_trace_check passes) or one error
 * naming the input. A crash, a leak, a sanitizer report or a hang is a bug in the reader.
 * fuzz_hw_replay.c's driver runs it from files in every build (fuzz_chakra_replay). */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <glib.h>

#include "sim/trace_chakra.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void broken(const char *what)
{
    fprintf(stderr, "fuzz_chakra: %s\n", what);
    abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *parts[2] = {data, data + size / 2};
    size_t lens[2] = {size / 2, size - size / 2};
    char *err = NULL;
    ics_trace *t = ics_trace_read_chakra_mem("fuzz.et", 2, parts, lens, &err);
    if (t && err)
        broken("a trace and an error");
    if (!t && (!err || strncmp(err, "fuzz.et", 7) != 0))
        broken(err ? err : "no trace and no error");
    if (t) {
        char *why = NULL;
        if (!ics_trace_check(t, &why))
            broken(why);
        for (int k = 0; k < 2; k++)
            for (int i = 0; i < ics_trace_nops(t, k); i++) {
                int nd;
                const int *deps = ics_trace_op_deps(t, k, i, &nd);
                for (int d = 0; d < nd; d++)
                    if (deps[d] < 0 || deps[d] >= i)
                        broken("dependency not on an earlier op");
            }
    }
    ics_trace_free(t);
    g_free(err);
    return 0;
}
