/* Format detection for trace files; see trace.h (ics_trace_read). */
#include "trace/trace.h"

#include <stdio.h>

#include <glib.h>

/* True if the file's first non-blank byte is '{'. */
static bool looks_json(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return false;
    int c;
    do
        c = fgetc(f);
    while (c == ' ' || c == '\t' || c == '\n' || c == '\r');
    fclose(f);
    return c == '{';
}

ics_trace *ics_trace_read(const char *path, const char *comm_groups, GError **error)
{
    /* A Chakra rank file (PREFIX.RANK.et) is protobuf, whose first byte is a length and may be
     * '{' (123): the name says what content cannot. */
    if (!g_str_has_suffix(path, ".et") && g_file_test(path, G_FILE_TEST_IS_REGULAR) &&
        looks_json(path))
        return ics_trace_read_json(path, error);
    return ics_trace_read_chakra(path, comm_groups, error);
}
