/* libicsim as an embedder sees it: one header (sim/icsim.h), one library. Loads a shipped
 * model and runs one all-reduce on every GPU, using nothing but what icsim.h declares. If a
 * module's face stops compiling on its own, this test stops building. */
#include "icsim.h"

#include <glib.h>

static ics_hw *load(const char *model)
{
    char *path = g_build_filename(ICS_SOURCE_DIR, "hwmodels", model, NULL);
    GError *err = NULL;
    ics_hw *hw = ics_hw_load(path, 0, &err);
    g_assert_no_error(err);
    g_free(path);
    return hw;
}

/* 1 GiB all-reduce on a DGX H100: NVLS at NCCL's plateau, busbw between 300 and 500 GB/s. */
static void test_embed_collective(void)
{
    ics_hw *hw = load("dgx-h100.json");
    ics_topo *t = ics_topo_new(hw);
    int n = ics_topo_gpus_per_node(t), ranks[64];
    for (int i = 0; i < n; i++)
        ranks[i] = ics_topo_gpu(t, 0, i);
    ics_comm *c = ics_comm_new(t, ics_net_backend("analytic"), ranks, n, NULL);
    ics_coll_req req = {.op = ICS_COLL_ALL_REDUCE, .size_bytes = 1u << 30, .dtype_bytes = 4};
    ics_coll_tuning tuning = {.nvls_enable = true};
    ics_coll_result r;
    g_assert_true(ics_comm_run(c, &req, &tuning, &r));
    double busbw =
        (double)req.size_bytes / ics_time_to_s(r.time_ps) / 1e9 * ics_coll_busbw_factor(req.op, n);
    g_test_message("%s %s: %.1f GB/s busbw", ics_coll_algo_name(r.algo),
                   ics_coll_proto_name(r.proto), busbw);
    g_assert_cmpfloat(busbw, >, 300);
    g_assert_cmpfloat(busbw, <, 500);
    ics_comm_free(c);
    ics_topo_free(t);
    ics_hw_free(hw);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/icsim-h/collective", test_embed_collective);
    return g_test_run();
}
