/* Which paths NCCL takes (topo.h, "which paths NCCL uses"; sim/topo/topo_paths.c), against its
 * rules in src/graph/paths.cc: GeForce GPUs without P2P go through host memory (SHM) and their
 * all-reduce is bound by the PCIe switch uplinks two GPUs share, which the same box with P2P is
 * not; NCCL_P2P_LEVEL / NCCL_P2P_DISABLE divert pairs beyond the level; Intel hosts stop P2P at
 * PXB; GPUDirect RDMA stops at NCCL_NET_GDR_LEVEL (default PXB) and sends without it before
 * Ampere on PCIe-only nodes; the environment is read as ncclGetLevel reads it. */
#include "collectives/comm.h"
#include "hw/hw.h"
#include "topo/topo.h"

#include <glib.h>
#include <glib/gstdio.h>
#include <math.h>

static ics_hw *load(const char *model, int nodes)
{
    char *path = g_build_filename(ICS_SOURCE_DIR, "hwmodels", model, NULL);
    GError *err = NULL;
    ics_hw *hw = ics_hw_load(path, nodes, &err);
    g_assert_no_error(err);
    g_free(path);
    return hw;
}

/* Channels of a given kind on the route a -> b. */
static int kind_hops(const ics_topo *t, int a, int b, ics_chan_kind kind)
{
    ics_route r;
    g_assert_true(ics_route_find(t, a, b, 0, &r));
    int n = 0;
    for (int p = 0; p < r.n_paths; p++)
        for (int h = 0; h < r.paths[p].n_hops; h++)
            n += ics_topo_chan_get(t, r.paths[p].chans[h])->kind == kind;
    ics_route_clear(&r);
    return n;
}

static const ics_topo_paths defaults = {-1, -1, -1, 0, 0, ""};

static void test_geforce_shm(void)
{
    ics_hw *stock = load("rtx4090-8gpu.json", 0), *p2p = load("rtx4090-8gpu-p2p.json", 0);
    ics_topo *ts = ics_topo_new(stock), *tp = ics_topo_new(p2p);
    int g0 = ics_topo_gpu(ts, 0, 0), g1 = ics_topo_gpu(ts, 0, 1), g2 = ics_topo_gpu(ts, 0, 2);
    /* same switch: the stock driver goes up to host memory and back, P2P turns at the switch */
    g_assert_false(ics_topo_uses_p2p(ts, g0, g1));
    g_assert_cmpint(kind_hops(ts, g0, g1, ICS_CHAN_MEMORY), ==, 2);
    g_assert_true(ics_topo_uses_p2p(tp, g0, g1));
    g_assert_cmpint(kind_hops(tp, g0, g1, ICS_CHAN_MEMORY), ==, 0);
    g_assert_cmpint(kind_hops(tp, g0, g1, ICS_CHAN_CPU), ==, 0);
    /* across root ports on an AMD host: P2P through the root complex (default level SYS) */
    g_assert_true(ics_topo_uses_p2p(tp, g0, g2));
    g_assert_cmpint(kind_hops(tp, g0, g2, ICS_CHAN_CPU), ==, 2);
    g_assert_cmpint(ics_topo_path_type(tp, g0, g2), ==, ICS_PATH_PHB);
    ics_topo_free(ts);
    ics_topo_free(tp);
    ics_hw_free(stock);
    ics_hw_free(p2p);
}

/* A 128 MiB all-reduce on all 8 GPUs: its bus bandwidth, and bytes over memory channels. */
static double allreduce_busbw(const ics_topo *t, uint64_t *memory_bytes)
{
    int n = 8, ranks[8];
    ics_topo_gpus_by_node(t, 8, n, ranks);
    ics_comm *c = ics_comm_new(t, ics_net_backend("analytic"), ranks, n, NULL);
    ics_coll_tuning tu = {.nvls_enable = true, .algos = ICS_COLL_SET(ICS_ALGO_RING)};
    ics_coll_req req = ics_coll_req_nccltests(ICS_COLL_ALL_REDUCE, 128u << 20, 4, 0, n, NULL);
    uint64_t *bytes = g_new0(uint64_t, ics_topo_nchans(t));
    ics_coll_result res;
    g_assert_true(ics_comm_run_traffic(c, &req, &tu, &res, bytes));
    *memory_bytes = 0;
    for (int ch = 0; ch < ics_topo_nchans(t); ch++)
        if (ics_topo_chan_get(t, ch)->kind == ICS_CHAN_MEMORY)
            *memory_bytes += bytes[ch];
    g_free(bytes);
    ics_comm_free(c);
    return (double)(128u << 20) / (res.time_ps * 1e-12) * ics_coll_busbw_factor(req.op, n);
}

static void test_shm_bound_by_uplinks(void)
{
    ics_hw *stock = load("rtx4090-8gpu.json", 0), *p2p = load("rtx4090-8gpu-p2p.json", 0);
    ics_topo *ts = ics_topo_new(stock), *tp = ics_topo_new(p2p);
    uint64_t mem_s, mem_p;
    double bs = allreduce_busbw(ts, &mem_s), bp = allreduce_busbw(tp, &mem_p);
    g_assert_cmpuint(mem_s, >, 0);
    g_assert_cmpuint(mem_p, ==, 0);
    /* SHM: each switch's x16 uplink carries both its GPUs' writes up and reads down, so the
     * ring's per-GPU rate is at most half an uplink (PCIe 4.0 x16 payload after TLP headers);
     * a closed-form bound the simulation must meet and nearly reach */
    const ics_hw_standard *pcie4 = ics_hw_standard_find(stock, "pcie4");
    double half_uplink = ics_hw_standard_bw(pcie4, 16) / 2.0;
    g_assert_cmpfloat(bs, <=, half_uplink);
    g_assert_cmpfloat(bs, >, 0.8 * half_uplink);
    /* P2P: the cross-switch hops go through the root complex at the CPU's P2P rate instead */
    g_assert_cmpfloat(bp, >, 1.2 * bs);
    g_test_message("busbw SHM %.2f GB/s, P2P %.2f GB/s (logs: 14.45, 20.64)", bs / 1e9, bp / 1e9);
    ics_topo_free(ts);
    ics_topo_free(tp);
    ics_hw_free(stock);
    ics_hw_free(p2p);
}

static void test_p2p_level(void)
{
    ics_hw *hw = load("pcie-8gpu.json", 0);
    ics_topo *t = ics_topo_new(hw);
    int g0 = ics_topo_gpu(t, 0, 0), g1 = ics_topo_gpu(t, 0, 1), g2 = ics_topo_gpu(t, 0, 2),
        g4 = ics_topo_gpu(t, 0, 4);
    g_assert_true(ics_topo_uses_p2p(t, g0, g4)); /* AMD: up to SYS */
    ics_topo_set_paths(t, &(ics_topo_paths){ICS_PATH_PIX, -1, -1, 0, 0, ""});
    g_assert_true(ics_topo_uses_p2p(t, g0, g1));
    g_assert_false(ics_topo_uses_p2p(t, g0, g2));
    g_assert_cmpint(kind_hops(t, g0, g2, ICS_CHAN_MEMORY), ==, 2);
    g_assert_cmpint(kind_hops(t, g0, g2, ICS_CHAN_CPU), ==, 0);
    /* across sockets the buffer is the receiver's: writer crosses the socket link */
    g_assert_cmpint(kind_hops(t, g0, g4, ICS_CHAN_SOCKET), ==, 1);
    ics_topo_set_paths(t, &defaults);
    g_assert_cmpint(kind_hops(t, g0, g2, ICS_CHAN_MEMORY), ==, 0);
    ics_topo_free(t);
    ics_hw_free(hw);

    /* NCCL_P2P_DISABLE (level LOC) diverts even NVLink pairs; Intel hosts keep NVLink */
    hw = load("dgx-h100.json", 0);
    t = ics_topo_new(hw);
    g0 = ics_topo_gpu(t, 0, 0);
    g1 = ics_topo_gpu(t, 0, 1);
    g_assert_true(ics_topo_uses_p2p(t, g0, g1));
    g_assert_cmpint(kind_hops(t, g0, g1, ICS_CHAN_NVLINK), >, 0);
    ics_topo_set_paths(t, &(ics_topo_paths){ICS_PATH_LOC, -1, -1, 0, 0, ""});
    g_assert_cmpint(kind_hops(t, g0, g1, ICS_CHAN_NVLINK), ==, 0);
    g_assert_cmpint(kind_hops(t, g0, g1, ICS_CHAN_MEMORY), ==, 2);
    ics_topo_free(t);
    ics_hw_free(hw);
}

/* GPU `gpu` of node 0 of a 2-node `model` reaches its NIC by a PHB path, GPUDirect RDMA both
 * ways as `by_default` says, and with NCCL_NET_GDR_LEVEL=PHB in any case. */
static void phb_gdr(const char *model, int gpu, bool by_default)
{
    ics_hw *hw = load(model, 2);
    ics_topo *t = ics_topo_new(hw);
    int a = ics_topo_gpu(t, 0, gpu), nic = ics_route_nic_of_gpu(t, a);
    g_assert_cmpint(ics_topo_path_type(t, a, nic), ==, ICS_PATH_PHB);
    g_assert_true(ics_topo_uses_gdr(t, a, nic, true) == by_default);
    g_assert_true(ics_topo_uses_gdr(t, a, nic, false) == by_default);
    ics_topo_set_paths(t, &(ics_topo_paths){-1, ICS_PATH_PHB, -1, 0, 0, ""});
    g_assert_true(ics_topo_uses_gdr(t, a, nic, true));
    ics_topo_free(t);
    ics_hw_free(hw);
}

static void test_gdr(void)
{
    /* DGX H100: GPU and NIC under one switch (PXB): GPUDirect RDMA both ways */
    ics_hw *hw = load("superpod-h100-ndr.json", 2);
    ics_topo *t = ics_topo_new(hw);
    int a = ics_topo_gpu(t, 0, 0), b = ics_topo_gpu(t, 1, 0), nic = ics_route_nic_of_gpu(t, a);
    g_assert_cmpint(ics_topo_path_type(t, a, nic), ==, ICS_PATH_PXB);
    g_assert_true(ics_topo_uses_gdr(t, a, nic, true));
    g_assert_cmpint(kind_hops(t, a, b, ICS_CHAN_MEMORY), ==, 0);
    /* NCCL_NET_GDR_LEVEL=PIX: both ends through host memory; NCCL_NET_GDR_READ=0: sends only */
    ics_topo_set_paths(t, &(ics_topo_paths){-1, ICS_PATH_PIX, -1, 0, 0, ""});
    g_assert_cmpint(kind_hops(t, a, b, ICS_CHAN_MEMORY), ==, 4);
    ics_topo_set_paths(t, &(ics_topo_paths){-1, -1, 0, 0, 0, ""});
    g_assert_false(ics_topo_uses_gdr(t, a, nic, true));
    g_assert_true(ics_topo_uses_gdr(t, a, nic, false));
    g_assert_cmpint(kind_hops(t, a, b, ICS_CHAN_MEMORY), ==, 2);
    ics_topo_free(t);
    ics_hw_free(hw);

    /* GH200 (Alps): the GPU on its Grace by NVLink-C2C, the NIC on the Grace's PCIe: PHB, which
     * NCCL's C2C rule (NCCL_NET_GDR_C2C, on by default) lets GPUDirect RDMA cross */
    phb_gdr("alps-gh200.json", 3, true);
    /* a GPU and its NIC on their own root ports of one socket (Polaris; nvidia-smi's NODE is
     * NCCL's PHB): beyond the default level, as Polaris' logs show by setting
     * NCCL_NET_GDR_LEVEL=PHB */
    phb_gdr("polaris.json", 0, false);
    /* Snellius: its log's connections are all '/GDRDMA' at NCCL's default level, so each GPU
     * shares a PCIe switch with a NIC (PIX) */
    hw = load("snellius-h100.json", 2);
    t = ics_topo_new(hw);
    a = ics_topo_gpu(t, 0, 0);
    nic = ics_route_nic_of_gpu(t, a);
    g_assert_cmpint(ics_topo_path_type(t, a, nic), ==, ICS_PATH_PIX);
    g_assert_true(ics_topo_uses_gdr(t, a, nic, true));
    g_assert_cmpstr(ics_topo_dev_get(t, nic)->name, ==, "mlx5_3");
    ics_topo_free(t);
    ics_hw_free(hw);

    /* a PCIe-only node (GPU and NIC on one switch, PIX): GDR both ways on Ampere; before
     * Ampere, sends (NIC reads) without an NVLink peer stay in host memory */
    hw = load("pcie-8gpu.json", 0);
    t = ics_topo_new(hw);
    a = ics_topo_gpu(t, 0, 0);
    nic = ics_route_nic_of_gpu(t, a);
    g_assert_true(ics_topo_uses_gdr(t, a, nic, true)); /* A100 PCIe is sm80 */
    ics_topo_free(t);
    ics_hw_free(hw);
    char *dir = g_dir_make_tmp("icsim-paths-XXXXXX", NULL);
    char *file = g_build_filename(dir, "volta-pcie.json", NULL);
    /* pcie-8gpu.json with its GPU type made a Volta part */
    char *model = g_build_filename(ICS_SOURCE_DIR, "hwmodels", "pcie-8gpu.json", NULL);
    char *catalog = g_build_filename(ICS_SOURCE_DIR, "hwmodels", "catalog.json", NULL);
    char *text = NULL;
    g_assert_true(g_file_get_contents(model, &text, NULL, NULL));
    char *repl = g_strdup_printf("\"catalog\": \"%s\", \"gpu_types\": {\"a100-pcie\": "
                                 "{\"arch\": \"sm70\"}},",
                                 catalog);
    char **parts = g_strsplit(text, "\"catalog\": \"catalog.json\",", 2);
    g_assert_nonnull(parts[1]);
    char *volta = g_strconcat(parts[0], repl, parts[1], NULL);
    g_assert_true(g_file_set_contents(file, volta, -1, NULL));
    g_strfreev(parts);
    g_free(repl);
    g_free(volta);
    g_free(model);
    GError *err = NULL;
    hw = ics_hw_load(file, 0, &err);
    g_assert_no_error(err);
    t = ics_topo_new(hw);
    g_assert_false(ics_topo_uses_gdr(t, a, nic, true));
    g_assert_true(ics_topo_uses_gdr(t, a, nic, false));
    ics_topo_set_paths(t, &(ics_topo_paths){-1, -1, 1, 0, 0, ""}); /* NCCL_NET_GDR_READ=1 */
    g_assert_true(ics_topo_uses_gdr(t, a, nic, true));
    ics_topo_free(t);
    ics_hw_free(hw);
    g_remove(file);
    g_rmdir(dir);
    g_free(text);
    g_free(catalog);
    g_free(file);
    g_free(dir);
}

static void expect_env(const char *var, const char *value, ics_topo_paths want, bool warns)
{
    g_unsetenv("NCCL_P2P_DISABLE");
    g_unsetenv("NCCL_P2P_LEVEL");
    g_unsetenv("NCCL_NET_GDR_LEVEL");
    g_unsetenv("NCCL_NET_GDR_READ");
    if (var)
        g_setenv(var, value, TRUE);
    ics_topo_paths p;
    GError *w = NULL;
    ics_coll_paths_from_env(&p, NULL, &w);
    g_assert_cmpint(w != NULL, ==, warns);
    g_clear_error(&w);
    g_assert_cmpint(p.p2p_level, ==, want.p2p_level);
    g_assert_cmpint(p.gdr_level, ==, want.gdr_level);
    g_assert_cmpint(p.gdr_read, ==, want.gdr_read);
    g_assert_cmpint(p.pxn_disable, ==, want.pxn_disable);
    g_assert_cmpstr(p.ib_hca, ==, want.ib_hca);
    if (var)
        g_unsetenv(var);
}

static void test_env(void)
{
    expect_env(NULL, NULL, defaults, false);
    expect_env("NCCL_P2P_DISABLE", "1", (ics_topo_paths){ICS_PATH_LOC, -1, -1, 0, 0, ""}, false);
    expect_env("NCCL_P2P_DISABLE", "0", defaults, false);
    expect_env("NCCL_P2P_LEVEL", "pxb", (ics_topo_paths){ICS_PATH_PXB, -1, -1, 0, 0, ""}, false);
    expect_env("NCCL_P2P_LEVEL", "NVL", (ics_topo_paths){ICS_PATH_NVL, -1, -1, 0, 0, ""}, false);
    expect_env("NCCL_P2P_LEVEL", "2", (ics_topo_paths){ICS_PATH_PXB, -1, -1, 0, 0, ""},
               false); /* old */
    expect_env("NCCL_P2P_LEVEL", "9", (ics_topo_paths){ICS_PATH_SYS, -1, -1, 0, 0, ""}, false);
    expect_env("NCCL_P2P_LEVEL", "PXN", (ics_topo_paths){ICS_PATH_PXB, -1, -1, 0, 0, ""}, false);
    expect_env("NCCL_P2P_LEVEL", "near", defaults, true);
    expect_env("NCCL_NET_GDR_LEVEL", "PHB", (ics_topo_paths){-1, ICS_PATH_PHB, -1, 0, 0, ""},
               false);
    expect_env("NCCL_NET_GDR_READ", "0", (ics_topo_paths){-1, -1, 0, 0, 0, ""}, false);
    expect_env("NCCL_NET_GDR_READ", "yes", defaults, true);
    expect_env("NCCL_PXN_DISABLE", "1", (ics_topo_paths){-1, -1, -1, 0, 1, ""}, false);
    expect_env("NCCL_PXN_DISABLE", "off", defaults, true);
    expect_env("NCCL_IB_HCA", "^=mlx5_1:1", (ics_topo_paths){-1, -1, -1, 0, 0, "^=mlx5_1:1"},
               false);
    char *longest = g_strnfill(ICS_TOPO_IB_HCA_MAX - 1, 'm'),
         *more = g_strnfill(ICS_TOPO_IB_HCA_MAX, 'm');
    ics_topo_paths want = defaults;
    g_strlcpy(want.ib_hca, longest, sizeof want.ib_hca);
    expect_env("NCCL_IB_HCA", longest, want, false);
    expect_env("NCCL_IB_HCA", more, defaults, true);
    g_free(longest);
    g_free(more);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/paths/geforce-shm", test_geforce_shm);
    g_test_add_func("/paths/shm-bound-by-uplinks", test_shm_bound_by_uplinks);
    g_test_add_func("/paths/p2p-level", test_p2p_level);
    g_test_add_func("/paths/gdr", test_gdr);
    g_test_add_func("/paths/env", test_env);
    return g_test_run();
}
