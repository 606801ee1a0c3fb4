/* A communicator over the GPUs of a shipped hardware model, for the collective tests: every
 * GPU of every node (gpn 0) or the first gpn of each, on a named backend. */
#ifndef ICS_TEST_COLL_RIG_H
#define ICS_TEST_COLL_RIG_H

#include "collectives/comm.h"
#include "hw/hw.h"

#include <glib.h>
#include <glib/gstdio.h>

typedef struct {
    ics_hw *hw;
    ics_topo *t;
    ics_comm *c;
    int *ranks, n;
} rig;

/* A model file at `path`; nodes 0: a node file as it is; gpn 0: every GPU of every node; the
 * network's parameters p (NULL: the defaults). */
static inline void rig_open_file_with(rig *g, const char *path, int nodes, int gpn,
                                      const char *backend, const ics_net_params *p)
{
    GError *err = NULL;
    g->hw = ics_hw_load(path, nodes, &err);
    g_assert_no_error(err);
    g->t = ics_topo_new(g->hw);
    int per = gpn > 0 ? gpn : ics_topo_gpus_per_node(g->t);
    g->n = per * ics_topo_nodes(g->t);
    g->ranks = g_new(int, g->n);
    for (int i = 0; i < g->n; i++)
        g->ranks[i] = ics_topo_gpu(g->t, i / per, i % per);
    g->c = ics_comm_new(g->t, ics_net_backend(backend), g->ranks, g->n, p);
}

static inline void rig_open_file(rig *g, const char *path, int nodes, int gpn, const char *backend)
{
    rig_open_file_with(g, path, nodes, gpn, backend, NULL);
}

/* A model written from `text` as `name` in a directory of its own under the system's temporary
 * one; its path (free it with rig_remove_model, which deletes both). */
static inline char *rig_write_model(const char *name, const char *text)
{
    char *dir = g_dir_make_tmp("icsim-model-XXXXXX", NULL);
    g_assert_nonnull(dir);
    char *path = g_build_filename(dir, name, NULL);
    g_assert_true(g_file_set_contents(path, text, -1, NULL));
    g_free(dir);
    return path;
}

static inline void rig_remove_model(char *path)
{
    char *dir = g_path_get_dirname(path);
    g_remove(path);
    g_rmdir(dir);
    g_free(dir);
    g_free(path);
}

/* A shipped model (hwmodels/), as rig_open_file. */
static inline void rig_open(rig *g, const char *model, int nodes, int gpn, const char *backend)
{
    char *path = g_build_filename(ICS_SOURCE_DIR, "hwmodels", model, NULL);
    rig_open_file(g, path, nodes, gpn, backend);
    g_free(path);
}

/* One call of `size` bytes (float) with the given tuning; it must be runnable. */
static inline ics_coll_result rig_run(rig *g, ics_coll_op op, uint64_t size,
                                      const ics_coll_tuning *tu)
{
    ics_coll_req req = {.op = op, .size_bytes = size, .dtype_bytes = 4};
    ics_coll_result r;
    g_assert_true(ics_comm_run(g->c, &req, tu, &r));
    return r;
}

static inline void rig_close(rig *g)
{
    ics_comm_free(g->c);
    g_free(g->ranks);
    ics_topo_free(g->t);
    ics_hw_free(g->hw);
}

#endif
