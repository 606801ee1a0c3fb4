/* All-to-all with uneven splits (coll.h: ics_coll_req.splits; trace.h: ics_trace_op.splits):
 * an even matrix is the even all-to-all to the picosecond; doubling every split doubles a large
 * call's time; a hot receiver's time is set by its incoming links, within a closed-form bound;
 * ranks with nothing to send post nothing; a trace's rows become the call's matrix in the
 * replay (same time as the communicator run directly), survive a JSON round trip, and are
 * refused by the Chakra writer, which cannot hold them. */
#include "collectives/comm.h"
#include "trace/trace.h"
#include "replay_rig.h"

#include <glib/gstdio.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#define N 8

/* One all-to-all on the 8 GPUs of a DGX H100, analytic; splits NULL: even. */
static ics_time run(const rig *g, uint64_t size, const uint64_t *splits)
{
    int ranks[N];
    ics_topo_gpus_by_node(g->t, N, N, ranks);
    ics_comm *c = ics_comm_new(g->t, ics_net_backend("analytic"), ranks, N, NULL);
    ics_coll_tuning tu = {.nvls_enable = true};
    ics_coll_req req = {
        .op = ICS_COLL_ALLTOALL, .size_bytes = size, .dtype_bytes = 2, .splits = splits};
    ics_coll_result res;
    g_assert_true(ics_comm_run(c, &req, &tu, &res));
    ics_comm_free(c);
    return res.time_ps;
}

static void fill(uint64_t *m, uint64_t each)
{
    for (int i = 0; i < N * N; i++)
        m[i] = each;
}

static void test_collective(void)
{
    rig g;
    rig_open(&g, "dgx-h100.json", 0);
    uint64_t m[N * N];
    const uint64_t size = 256u << 20, each = size / N;
    fill(m, each);
    ics_time even = run(&g, size, NULL);
    g_assert_cmpint(run(&g, size, m), ==, even);

    fill(m, 2 * each);
    ics_time twice = run(&g, 2 * size, m);
    g_assert_cmpfloat(fabs((double)twice / (double)even - 2.0), <, 0.05);

    /* a hot receiver: everyone sends rank 0 four times its share. Rank 0 takes in
     * 7 x 4 x each over its NVLinks, so the call lasts at least that at 18 links' payload rate
     * and, the rest being light, not much longer than that plus the even call */
    fill(m, each);
    for (int i = 1; i < N; i++)
        m[i * N] = 4 * each;
    uint64_t largest = 5 * each + (N - 2) * each + each; /* row of a sender, own copy included */
    ics_time hot = run(&g, largest, m);
    const ics_hw_standard *nv4 = ics_hw_standard_find(g.hw, "nvlink4");
    double into0 = 7.0 * 4.0 * (double)each / (double)ics_hw_standard_bw(nv4, 18);
    g_assert_cmpfloat((double)hot * 1e-12, >, into0);
    g_assert_cmpfloat((double)hot, >, 2.0 * (double)even);
    g_assert_cmpfloat((double)hot, <, 4.0 * (double)even + into0 * 1e12);
    g_test_message("even %.1f us, hot receiver %.1f us (bound %.1f us)", even / 1e6, hot / 1e6,
                   into0 * 1e6);

    /* a rank with nothing to send posts nothing: the others' time is what remains */
    fill(m, each);
    for (int j = 0; j < N; j++)
        m[j] = 0;
    ics_time quiet = run(&g, size, m);
    g_assert_cmpint(quiet, <=, even);
    rig_close(&g);
}

/* A dispatcher's own kernel (req.sms, DeepEP's 20 SMs): GPU 0 of each of two SuperPOD nodes
 * sends its peer 64 MiB. NCCL 2.29 runs it on 4 p2p channels (one per 14 GB/s of the 400 Gb/s
 * NIC, channels.c), close to the NIC; held to 2 (NCCL_MAX_NCHANNELS=2, or NCCL before 2.29) it
 * is CTA-bound well under it; on 20 SMs the same bytes go at the NIC's payload rate, within 10%
 * of the closed form (bytes / the NDR link's payload rate). */
static void test_sms(void)
{
    rig g;
    rig_open(&g, "superpod-h100-ndr.json", 2);
    int ranks[2];
    ics_topo_gpus_by_node(g.t, 1, 2, ranks);
    const uint64_t each = 64u << 20, m[4] = {0, each, each, 0};
    ics_time t[3]; /* NCCL, NCCL on 2 channels, 20 SMs */
    for (int k = 0; k < 3; k++) {
        ics_coll_tuning tu = {.nvls_enable = true, .max_channels = k == 1 ? 2 : 0};
        ics_comm *c = ics_comm_new(g.t, ics_net_backend("analytic"), ranks, 2, NULL);
        ics_coll_req req = {.op = ICS_COLL_ALLTOALL,
                            .size_bytes = each,
                            .dtype_bytes = 2,
                            .splits = m,
                            .sms = k == 2 ? 20 : 0};
        ics_coll_result res;
        g_assert_true(ics_comm_run(c, &req, &tu, &res));
        ics_comm_free(c);
        t[k] = res.time_ps;
    }
    const ics_hw_standard *ndr = ics_hw_standard_find(g.hw, "ndr");
    g_assert_nonnull(ndr);
    double line = (double)each / (double)ics_hw_standard_bw(ndr, 1) * 1e12;
    g_test_message("64 MiB to the other node: NCCL %.1f us, on 2 channels %.1f us, 20 SMs %.1f us, "
                   "wire %.1f us",
                   t[0] / 1e6, t[1] / 1e6, t[2] / 1e6, line / 1e6);
    g_assert_cmpfloat((double)t[2], <, 0.8 * (double)t[1]);
    g_assert_cmpfloat((double)t[2], <, (double)t[0]);
    g_assert_cmpfloat((double)t[0], <, 0.8 * (double)t[1]);
    g_assert_cmpfloat((double)t[0], <, 1.25 * line);
    g_assert_cmpfloat((double)t[2], >, line);
    g_assert_cmpfloat((double)t[2], <, 1.1 * line);
    rig_close(&g);
}

/* Four ranks of a DGX H100 exchange uneven rows on one communicator. */
static ics_trace *uneven_trace(uint64_t rows[4][4])
{
    ics_trace *tr = ics_trace_new(4);
    int ranks[4] = {0, 1, 2, 3};
    int c = ics_trace_add_comm(tr, ranks, 4, "ep");
    for (int k = 0; k < 4; k++) {
        ics_trace_add_stream(tr, k, "main");
        ics_trace_op op = coll(c, ICS_COLL_ALLTOALL, 0, ICS_CAT_EP);
        for (int j = 0; j < 4; j++)
            op.coll.size_bytes += rows[k][j];
        op.splits = rows[k];
        ics_trace_add_op(tr, k, &op, NULL, 0);
    }
    return tr;
}

static ics_time replay_time(const rig *g, const ics_trace *tr, ics_replay_colls mode)
{
    ics_replay_opts o = {.tuning = {.nvls_enable = true}, .colls = mode, .p2p_lat_ps = -1};
    GError *err = NULL;
    ics_replay *r = ics_replay_new(tr, g->t, &o, &err);
    g_assert_no_error(err);
    ics_replay_result res;
    g_assert_true(ics_replay_run(r, &res, &err));
    g_assert_no_error(err);
    ics_replay_free(r);
    return res.step_ps;
}

static void test_trace(void)
{
    rig g;
    rig_open(&g, "dgx-h100.json", 0);
    uint64_t rows[4][4] = {{0, 8 << 20, 2 << 20, 2 << 20},
                           {1 << 20, 0, 1 << 20, 1 << 20},
                           {4 << 20, 4 << 20, 0, 16 << 20},
                           {2 << 20, 2 << 20, 2 << 20, 2 << 20}};
    ics_trace *tr = uneven_trace(rows);
    GError *err = NULL;
    g_assert_true(ics_trace_check(tr, &err));
    g_assert_no_error(err);

    /* the replay's call is the communicator's call on the rows as a matrix */
    int ranks[4];
    ics_topo_gpus_by_node(g.t, 4, 4, ranks);
    ics_comm *c = ics_comm_new(g.t, ics_net_backend("analytic"), ranks, 4, NULL);
    ics_coll_tuning tu = {.nvls_enable = true};
    ics_coll_req req = {
        .op = ICS_COLL_ALLTOALL, .size_bytes = 24 << 20, .dtype_bytes = 2, .splits = &rows[0][0]};
    ics_coll_result res;
    g_assert_true(ics_comm_run(c, &req, &tu, &res));
    ics_comm_free(c);
    g_assert_cmpint(replay_time(&g, tr, ICS_REPLAY_FULL), ==, res.time_ps);
    g_assert_cmpint(replay_time(&g, tr, ICS_REPLAY_MEMO), ==, res.time_ps);

    /* JSON keeps the rows; Chakra refuses them */
    char *dir = g_dir_make_tmp("icsim-a2av-XXXXXX", NULL);
    char *path = g_build_filename(dir, "t.json", NULL);
    g_assert_true(ics_trace_write_json(tr, path, &err));
    g_assert_no_error(err);
    ics_trace *back = ics_trace_read(path, NULL, &err);
    g_assert_no_error(err);
    for (int k = 0; k < 4; k++) {
        const ics_trace_op *op = ics_trace_get_op(back, k, 0);
        g_assert_nonnull(op->splits);
        for (int j = 0; j < 4; j++)
            g_assert_cmpuint(op->splits[j], ==, rows[k][j]);
    }
    g_assert_cmpint(replay_time(&g, back, ICS_REPLAY_FULL), ==, res.time_ps);
    char *prefix = g_build_filename(dir, "chakra", NULL);
    g_assert_false(ics_trace_write_chakra(tr, prefix, &err));
    g_assert_error(err, ICS_ERROR, ICS_ERROR_INPUT);
    g_assert_nonnull(strstr(err->message, "all-to-allv"));
    g_clear_error(&err);
    g_remove(path);
    g_rmdir(dir);
    g_free(prefix);
    g_free(path);
    g_free(dir);
    ics_trace_free(back);
    ics_trace_free(tr);
    rig_close(&g);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/alltoallv/collective", test_collective);
    g_test_add_func("/alltoallv/trace", test_trace);
    g_test_add_func("/alltoallv/sms", test_sms);
    return g_test_run();
}
