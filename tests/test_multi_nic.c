/* GPUs with several NICs (topo.h: ics_route_nics_of_gpu, ics_route_flow): an AWS p5 has 4 EFA
 * beside each GPU and NCCL gives each channel its own NIC, so a GPU's channels leave by all
 * four, the same one at both ends; NICs shared out between GPUs that are equally near them as
 * NCCL's graphs do (DGX A100: two GPUs, two NICs under a switch, one each; a PCIe box: two GPUs,
 * one NIC, both on it); and a 2-node ring all-reduce on p5s puts bytes on every EFA and runs
 * under the NICs' bound, well above what one EFA per GPU could carry. */
#include "collectives/comm.h"
#include "hw/hw.h"
#include "topo/topo.h"

#include <glib.h>

static ics_hw *load(const char *model, int nodes)
{
    char *path = g_build_filename(ICS_SOURCE_DIR, "hwmodels", model, NULL);
    GError *err = NULL;
    ics_hw *hw = ics_hw_load(path, nodes, &err);
    g_assert_no_error(err);
    g_free(path);
    return hw;
}

/* The NIC a route leaves its source node by, and the one it enters the destination by. */
static void route_nics(const ics_topo *t, int a, int b, uint64_t hash, int *out, int *in)
{
    ics_route r;
    g_assert_true(ics_route_find(t, a, b, hash, &r));
    *out = *in = -1;
    for (int h = 0; h < r.paths[0].n_hops; h++) {
        const ics_topo_chan *c = ics_topo_chan_get(t, r.paths[0].chans[h]);
        if (c->kind != ICS_CHAN_NETWORK)
            continue;
        if (*out < 0)
            *out = c->src;
        *in = c->dst;
    }
    ics_route_clear(&r);
}

static void test_p5_routes(void)
{
    ics_hw *hw = load("aws-p5.json", 2);
    ics_topo *t = ics_topo_new(hw);
    int a = ics_topo_gpu(t, 0, 3), b = ics_topo_gpu(t, 1, 3), nics[ICS_ROUTE_MAX_NICS];
    g_assert_cmpint(ics_route_nics_of_gpu(t, a, nics), ==, 4);
    bool seen[4] = {false};
    for (int slot = 0; slot < 4; slot++) {
        int out, in;
        route_nics(t, a, b, ics_route_flow(12345, slot), &out, &in);
        g_assert_cmpint(out, ==, nics[slot]);
        /* the same index at the other end: that GPU's slot-th NIC */
        int far[ICS_ROUTE_MAX_NICS];
        ics_route_nics_of_gpu(t, b, far);
        g_assert_cmpint(in, ==, far[slot]);
        seen[slot] = true;
    }
    g_assert_true(seen[0] && seen[1] && seen[2] && seen[3]);
    ics_topo_free(t);
    ics_hw_free(hw);
}

static void test_shared_nics(void)
{
    int nics[ICS_ROUTE_MAX_NICS];
    ics_hw *hw = load("dgx-a100.json", 0);
    ics_topo *t = ics_topo_new(hw);
    int n0 = ics_route_nics_of_gpu(t, ics_topo_gpu(t, 0, 0), nics), first = nics[0];
    int n1 = ics_route_nics_of_gpu(t, ics_topo_gpu(t, 0, 1), nics);
    g_assert_cmpint(n0, ==, 1);
    g_assert_cmpint(n1, ==, 1);
    g_assert_cmpint(first, !=, nics[0]);
    ics_topo_free(t);
    ics_hw_free(hw);
    hw = load("pcie-8gpu.json", 0);
    t = ics_topo_new(hw);
    ics_route_nics_of_gpu(t, ics_topo_gpu(t, 0, 0), nics);
    first = nics[0];
    g_assert_cmpint(ics_route_nics_of_gpu(t, ics_topo_gpu(t, 0, 1), nics), ==, 1);
    g_assert_cmpint(nics[0], ==, first);
    ics_topo_free(t);
    ics_hw_free(hw);
}

static void test_p5_ring(void)
{
    ics_hw *hw = load("aws-p5.json", 2);
    ics_topo *t = ics_topo_new(hw);
    int ranks[16];
    ics_topo_gpus_by_node(t, 8, 16, ranks);
    ics_comm *c = ics_comm_new(t, ics_net_backend("analytic"), ranks, 16, NULL);
    ics_coll_tuning tu = {.nvls_enable = true, .algos = ICS_COLL_SET(ICS_ALGO_RING)};
    uint64_t size = 1ull << 30;
    ics_coll_req req = ics_coll_req_nccltests(ICS_COLL_ALL_REDUCE, size, 4, 0, 16, NULL);
    uint64_t *bytes = g_new0(uint64_t, ics_topo_nchans(t));
    ics_coll_result res;
    g_assert_true(ics_comm_run_traffic(c, &req, &tu, &res, bytes));
    /* every EFA of node 0 sends */
    for (int i = 0; i < ics_topo_nics_per_node(t); i++) {
        int nic = ics_topo_nic(t, 0, i), n;
        const int *out = ics_topo_out(t, nic, &n);
        uint64_t sent = 0;
        for (int k = 0; k < n; k++)
            if (ics_topo_chan_get(t, out[k])->kind == ICS_CHAN_NETWORK)
                sent += bytes[out[k]];
        g_assert_cmpuint(sent, >, 0);
    }
    /* a ring's bus bandwidth is what each GPU sends across; 32 x 12.5 GB/s leave a node, at
     * most that less packet headers; one EFA per GPU would allow 8 x 12.5 = 100 */
    double busbw = (double)size / (res.time_ps * 1e-12) * ics_coll_busbw_factor(req.op, 16);
    const ics_hw_standard *eth = ics_hw_standard_find(hw, "eth100");
    double nic = (double)ics_hw_standard_bw(eth, 1), bound = 32 * nic;
    g_test_message("p5 x 2 ring busbw %.1f GB/s, NIC bound %.1f", busbw / 1e9, bound / 1e9);
    g_assert_cmpfloat(busbw, <=, bound);
    g_assert_cmpfloat(busbw, >, 2.5 * 8 * nic);
    g_free(bytes);
    ics_comm_free(c);
    ics_topo_free(t);
    ics_hw_free(hw);
}

/* A node's NICs' network bytes sent (out[i]); their count. */
static int nic_bytes_sent(const ics_topo *t, const uint64_t *bytes, uint64_t *out)
{
    int nics = ics_topo_nics_per_node(t);
    for (int i = 0; i < nics; i++) {
        int nic = ics_topo_nic(t, 0, i), n;
        const int *chans = ics_topo_out(t, nic, &n);
        out[i] = 0;
        for (int k = 0; k < n; k++)
            if (ics_topo_chan_get(t, chans[k])->kind == ICS_CHAN_NETWORK)
                out[i] += bytes[chans[k]];
    }
    return nics;
}

/* A 2-node tree all-reduce on GPUs with several NICs (OCI BM.GPU4.8: two 100 GbE ports a GPU;
 * AWS p5: four EFA) or GPUs sharing NICs (AWS p4de: two GPUs per EFA): NCCL gives every tree
 * channel a NIC of its own and runs both trees of it there, so every NIC carries the same
 * bytes. Before tree edges took their NIC slots as rings do, 10 of OCI's 16 ports carried the
 * tree, six of them twice as much as the others; before a chain started at a GPU of its own
 * NIC (tree.c, chain_start), a p4de's 4 channel pairs started at local ranks 0-3, which share
 * two EFA: 3 NICs of 4 carried the tree, unevenly (402, 537 and 134 MB of a 1 GiB call). */
static void test_tree_every_nic(void)
{
    const char *models[] = {"oci-bm-gpu4-8.json", "aws-p5.json", "aws-p4de.json"};
    for (size_t m = 0; m < G_N_ELEMENTS(models); m++) {
        ics_hw *hw = load(models[m], 2);
        ics_topo *t = ics_topo_new(hw);
        int ranks[16];
        ics_topo_gpus_by_node(t, 8, 16, ranks);
        ics_comm *c = ics_comm_new(t, ics_net_backend("analytic"), ranks, 16, NULL);
        ics_coll_tuning tu = {.nvls_enable = true, .algos = ICS_COLL_SET(ICS_ALGO_TREE)};
        ics_coll_req req = ics_coll_req_nccltests(ICS_COLL_ALL_REDUCE, 1ull << 30, 4, 0, 16, NULL);
        uint64_t *bytes = g_new0(uint64_t, ics_topo_nchans(t)), sent[64];
        ics_coll_result res;
        g_assert_true(ics_comm_run_traffic(c, &req, &tu, &res, bytes));
        g_assert_cmpint(res.algo, ==, ICS_ALGO_TREE);
        int nics = nic_bytes_sent(t, bytes, sent);
        g_assert_cmpint(nics, <=, 64);
        uint64_t lo = UINT64_MAX, hi = 0;
        for (int i = 0; i < nics; i++) {
            lo = MIN(lo, sent[i]);
            hi = MAX(hi, sent[i]);
        }
        g_test_message("%s: tree over %d NICs, %" G_GUINT64_FORMAT "..%" G_GUINT64_FORMAT
                       " bytes each",
                       models[m], nics, lo, hi);
        g_assert_cmpuint(lo, >, 0);
        g_assert_cmpfloat((double)hi, <=, 1.01 * (double)lo);
        g_free(bytes);
        ics_comm_free(c);
        ics_topo_free(t);
        ics_hw_free(hw);
    }
}

/* Two GB200 NVL72 racks: NVLS-Tree at 1 GiB (NVLS in each rack, trees over the NICs), every
 * GPU the head of its own NIC so all 72 NICs of a rack carry traffic, and the call no faster
 * than those NICs allow: a tree moves the whole buffer up and down through them. */
static void test_gb200_racks(void)
{
    ics_hw *hw = load("gb200-nvl72-su.json", 2);
    ics_topo *t = ics_topo_new(hw);
    int n = 144, *ranks = g_new(int, n);
    ics_topo_gpus_by_node(t, 72, n, ranks);
    ics_comm *c = ics_comm_new(t, ics_net_backend("analytic"), ranks, n, NULL);
    ics_coll_tuning tu = {.nvls_enable = true};
    uint64_t size = 1ull << 30;
    ics_coll_req req = ics_coll_req_nccltests(ICS_COLL_ALL_REDUCE, size, 4, 0, n, NULL);
    uint64_t *bytes = g_new0(uint64_t, ics_topo_nchans(t));
    ics_coll_result res;
    g_assert_true(ics_comm_run_traffic(c, &req, &tu, &res, bytes));
    g_assert_cmpint(res.algo, ==, ICS_ALGO_NVLS_TREE);
    int busy = 0;
    for (int i = 0; i < ics_topo_nics_per_node(t); i++) {
        int nic = ics_topo_nic(t, 0, i), m;
        const int *out = ics_topo_out(t, nic, &m);
        for (int k = 0; k < m; k++)
            if (ics_topo_chan_get(t, out[k])->kind == ICS_CHAN_NETWORK && bytes[out[k]] > 0) {
                busy++;
                break;
            }
    }
    g_test_message("2 GB200 NVL72 racks, 1 GiB all-reduce: %d NICs of a rack busy, %.1f ms", busy,
                   res.time_ps / 1e9);
    g_assert_cmpint(busy, ==, 72);
    const ics_hw_standard *ndr = ics_hw_standard_find(hw, "ndr");
    double floor_s = (double)size / ((double)busy * (double)ics_hw_standard_bw(ndr, 1));
    g_assert_cmpfloat(res.time_ps * 1e-12, >, floor_s);
    g_free(bytes);
    g_free(ranks);
    ics_comm_free(c);
    ics_topo_free(t);
    ics_hw_free(hw);
}

/* The compute NICs a DGX H100's GPUs leave by under NCCL_IB_HCA `list` (-1 where it is ignored),
 * as a bit per NIC index; every GPU has one. */
static unsigned nics_used(ics_topo *t, const char *list, bool *ignored)
{
    ics_topo_paths p = {-1, -1, -1, 0, 0, ""};
    g_strlcpy(p.ib_hca, list, sizeof p.ib_hca);
    ics_topo_set_paths(t, &p);
    *ignored = ics_topo_ib_hca_ignored(t);
    unsigned used = 0;
    for (int g = 0; g < 8; g++) {
        int nics[ICS_ROUTE_MAX_NICS], n = ics_route_nics_of_gpu(t, ics_topo_gpu(t, 1, g), nics);
        g_assert_cmpint(n, >=, 1);
        for (int k = 0; k < n; k++)
            for (int i = 0; i < ics_topo_nics_per_node(t); i++)
                if (ics_topo_nic(t, 1, i) == nics[k])
                    used |= 1u << i;
    }
    return used;
}

/* NCCL_IB_HCA as NCCL's net_ib.cc matches it (topo_hca.c), on a DGX H100 whose NICs are
 * mlx5_0..11 (index i is mlx5_i; 1, 2, 7, 8 storage): prefixes, '=' exact names, '^' exclusion,
 * ports; the GPUs share the NICs kept; a list keeping no compute NIC is not applied. */
static void test_ib_hca(void)
{
    ics_hw *hw = load("superpod-h100-ndr.json", 2);
    ics_topo *t = ics_topo_new(hw);
    const unsigned compute = 0xe79; /* mlx5_0, 3, 4, 5, 6, 9, 10, 11 */
    const struct {
        const char *list;
        unsigned want; /* 0: ignored */
    } cases[] = {
        {"", compute},
        {"mlx5", compute},
        {"mlx5_0", 1u << 0},
        {"mlx5_1", 1u << 10 | 1u << 11}, /* a prefix of mlx5_10, mlx5_11; mlx5_1 is storage */
        {"=mlx5_1", 0},                  /* storage alone: no IB device for the GPUs */
        {"^mlx5_1", compute & ~(1u << 10 | 1u << 11)},
        {"^=mlx5_1", compute},
        {"mlx5_0:1,mlx5_3", 1u << 0 | 1u << 3},
        {"mlx5_0:2", 0}, /* port 2: the NICs have one */
        {"mlx5_0,,mlx5_9:1,", 1u << 0 | 1u << 9},
        {"^mlx5", 0},
        {"foo", 0},
    };
    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        bool ignored;
        unsigned used = nics_used(t, cases[i].list, &ignored);
        g_test_message("NCCL_IB_HCA=%s: NICs 0x%x%s", cases[i].list, used,
                       ignored ? " (ignored)" : "");
        g_assert_cmpint(ignored, ==, cases[i].want == 0);
        g_assert_cmpuint(used, ==, cases[i].want ? cases[i].want : compute);
    }
    ics_topo_free(t);
    ics_hw_free(hw);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/multi-nic/p5-routes", test_p5_routes);
    g_test_add_func("/multi-nic/shared", test_shared_nics);
    g_test_add_func("/multi-nic/p5-ring", test_p5_ring);
    g_test_add_func("/multi-nic/tree-every-nic", test_tree_every_nic);
    g_test_add_func("/multi-nic/gb200-racks", test_gb200_racks);
    g_test_add_func("/multi-nic/ib-hca", test_ib_hca);
    return g_test_run();
}
