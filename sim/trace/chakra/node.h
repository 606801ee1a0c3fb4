/* One Chakra node as an op, for the Chakra reader (trace_chakra.c; internal: `ics_chakra__`).
 * Which node types do GPU work, and the typed reads of the attributes that describe the work
 * (docs/trace-format.md has the table). Messages are one line, "NAME: expected ..., got ...";
 * the reader prefixes the file and the node. */
#ifndef ICS_CHAKRA_NODE_H
#define ICS_CHAKRA_NODE_H

#include <stdbool.h>

#include <glib.h>

#include "et_def.pb-c.h"
#include "trace/trace.h"

typedef struct {
    ics_trace_op op;    /* all but stream and comm; op.name interned in the caller's chunk */
    const char *pg;     /* collectives: the group's key ("" for all ranks), interned */
    const char *desc;   /* collectives: the group's pg_desc, interned, or NULL */
    const char *stream; /* the stream's name, interned */
} ics_chakra_op;

/* 1: the node does GPU work (an op), 0: it does not (metadata, CPU ops: folded), -1: icsim
 * cannot replay it (sets *error, ICS_ERROR_INPUT). */
int ics_chakra__node_role(const ChakraProtoMsg__Node *n, GError **error);

/* The op of a node that does work (role 1) in the file of `rank` out of `nranks`; false and
 * sets *error (ICS_ERROR_INPUT) if an attribute is missing, of the wrong type or out of range. */
bool ics_chakra__node_op(const ChakraProtoMsg__Node *n, int rank, int nranks, GStringChunk *strs,
                         ics_chakra_op *out, GError **error);

/* s interned in strs, control characters written as \xNN: names from a file end up in one-line
 * messages and timelines. */
const char *ics_chakra__intern(GStringChunk *strs, const char *s);

bool ics_chakra__has_attr(const ChakraProtoMsg__Node *n, const char *name);

/* "NAME: expected WHAT, got <what a holds>". Transfer full. */
char *ics_chakra__wrong(const ChakraProtoMsg__AttributeProto *a, const char *what);

#endif
