/* A shipped hardware model's topology and trace-op builders, for the replay tests
 * (test_replay.c, test_hotspots.c). */
#ifndef ICS_TEST_REPLAY_RIG_H
#define ICS_TEST_REPLAY_RIG_H

#include "hw/hw.h"
#include "replay/replay.h"

#include <glib.h>

typedef struct {
    ics_hw *hw;
    ics_topo *t;
} rig;

/* nodes 0: a node file as it is. */
static inline void rig_open(rig *g, const char *model, int nodes)
{
    char *path = g_build_filename(ICS_SOURCE_DIR, "hwmodels", model, NULL);
    GError *err = NULL;
    g->hw = ics_hw_load(path, nodes, &err);
    g_assert_no_error(err);
    g->t = ics_topo_new(g->hw);
    g_free(path);
}

static inline void rig_close(rig *g)
{
    ics_topo_free(g->t);
    ics_hw_free(g->hw);
}

/* A collective of `bytes` in bf16 on communicator comm. */
static inline ics_trace_op coll(int comm, ics_coll_op op, uint64_t bytes, ics_trace_cat cat)
{
    return (ics_trace_op){.kind = ICS_TOP_COLL,
                          .cat = cat,
                          .comm = comm,
                          .coll = {.op = op, .size_bytes = bytes, .dtype_bytes = 2}};
}

#endif
