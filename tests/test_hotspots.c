/* The hot-spot report: memoized collectives count their bytes on their own links (the same
 * bytes, channel by channel, as the calls played on the shared network), on whichever node the
 * communicator sits; a node with a failure is not memoized from an intact one; the report ranks
 * links by utilization, computed as payload / (bandwidth x span). */
#include "replay/replay.h"
#include "replay_rig.h"
#include "report/report.h"
#include "hw/hw.h"

#include <cjson/cJSON.h>
#include <glib.h>
#include <string.h>

/* Two nodes: a tensor-parallel all-reduce inside each node, then a data-parallel all-reduce
 * of each GPU index across the nodes. */
static ics_trace *two_node_trace(const ics_topo *t)
{
    int gpn = ics_topo_gpus_per_node(t), n = 2 * gpn;
    ics_trace *tr = ics_trace_new(n);
    for (int k = 0; k < n; k++)
        ics_trace_add_stream(tr, k, "compute");
    int tp[2], dp[8];
    for (int node = 0; node < 2; node++) {
        int ranks[8];
        for (int i = 0; i < gpn; i++)
            ranks[i] = node * gpn + i;
        tp[node] = ics_trace_add_comm(tr, ranks, gpn, node ? "tp1" : "tp0");
    }
    for (int i = 0; i < gpn; i++) {
        int ranks[2] = {i, gpn + i};
        char *name = g_strdup_printf("dp%d", i);
        dp[i] = ics_trace_add_comm(tr, ranks, 2, name);
        g_free(name);
    }
    for (int k = 0; k < n; k++) {
        ics_trace_op a = coll(tp[k / gpn], ICS_COLL_ALL_REDUCE, 48 << 20, ICS_CAT_TP),
                     b = coll(dp[k % gpn], ICS_COLL_ALL_REDUCE, 16 << 20, ICS_CAT_DP);
        ics_trace_add_op(tr, k, &a, NULL, 0);
        ics_trace_add_op(tr, k, &b, NULL, 0);
    }
    return tr;
}

static ics_replay *run(const rig *g, const ics_trace *tr, ics_replay_colls colls,
                       ics_replay_result *res)
{
    ics_replay_opts o = {.backend = ics_net_backend("analytic"),
                         .tuning = {.nvls_enable = true},
                         .colls = colls,
                         .p2p_lat_ps = -1};
    GError *err = NULL;
    ics_replay *r = ics_replay_new(tr, g->t, &o, &err);
    g_assert_no_error(err);
    g_assert_true(ics_replay_run(r, res, &err));
    g_assert_no_error(err);
    return r;
}

/* Every channel's bytes, memoized and played, agree; node 1's links carry node 1's calls. */
static void test_memo_bytes(void)
{
    rig g;
    rig_open(&g, "superpod-h100-ndr.json", 2);
    ics_trace *tr = two_node_trace(g.t);
    ics_replay_result rm, rf;
    ics_replay *memo = run(&g, tr, ICS_REPLAY_MEMO, &rm), *full = run(&g, tr, ICS_REPLAY_FULL, &rf);
    g_assert_cmpuint(rm.colls_memo, >, 0);
    g_assert_cmpuint(rf.colls_memo, ==, 0);
    uint64_t per_node[2] = {0, 0};
    for (int c = 0; c < ics_topo_nchans(g.t); c++) {
        g_assert_cmpuint(ics_replay_chan_bytes(memo, c), ==, ics_replay_chan_bytes(full, c));
        const ics_topo_chan *ch = ics_topo_chan_get(g.t, c);
        int node = ics_topo_dev_get(g.t, ch->src)->node;
        if (ch->kind == ICS_CHAN_NVLINK && node >= 0)
            per_node[node] += ics_replay_chan_bytes(memo, c);
    }
    g_assert_cmpuint(per_node[1], >, 0);
    g_assert_cmpuint(per_node[0], ==, per_node[1]);
    ics_replay_free(memo);
    ics_replay_free(full);
    ics_trace_free(tr);
    rig_close(&g);
}

/* An NVSwitch down on node 1 slows node 1's tensor-parallel call; memoizing must not lend it
 * node 0's time (the memo's shape is the devices once the topology has failures). */
static void test_memo_failure(void)
{
    rig g;
    rig_open(&g, "superpod-h100-ndr.json", 2);
    GError *err = NULL;
    g_assert_true(ics_topo_fail(g.t, "nvswitch:1:nvsw0", &err));
    g_assert_no_error(err);
    ics_trace *tr = ics_trace_new(16);
    for (int k = 0; k < 16; k++)
        ics_trace_add_stream(tr, k, "compute");
    for (int node = 0; node < 2; node++) {
        int ranks[8];
        for (int i = 0; i < 8; i++)
            ranks[i] = node * 8 + i;
        int c = ics_trace_add_comm(tr, ranks, 8, node ? "tp1" : "tp0");
        for (int i = 0; i < 8; i++) {
            ics_trace_op a = coll(c, ICS_COLL_ALL_REDUCE, 256 << 20, ICS_CAT_TP);
            ics_trace_add_op(tr, ranks[i], &a, NULL, 0);
        }
    }
    ics_replay_result rm, rf;
    ics_replay *memo = run(&g, tr, ICS_REPLAY_MEMO, &rm), *full = run(&g, tr, ICS_REPLAY_FULL, &rf);
    ics_time m0 = ics_replay_rank_stats(memo, 0)->end_ps,
             m1 = ics_replay_rank_stats(memo, 8)->end_ps;
    g_assert_cmpint(m1, >, m0);
    g_assert_cmpint(m0, ==, ics_replay_rank_stats(full, 0)->end_ps);
    g_assert_cmpint(m1, ==, ics_replay_rank_stats(full, 8)->end_ps);
    ics_replay_free(memo);
    ics_replay_free(full);
    ics_trace_free(tr);
    rig_close(&g);
}

/* Two loaded channels of different rates: the slower one, carrying fewer bytes, is the busier;
 * utilization is bytes / (bandwidth x span); JSON and text say the same. */
static void test_report(void)
{
    rig g;
    rig_open(&g, "superpod-h100-ndr.json", 1);
    int nch = ics_topo_nchans(g.t), fast = -1, slow = -1;
    for (int c = 0; c < nch && (fast < 0 || slow < 0); c++) {
        const ics_topo_chan *ch = ics_topo_chan_get(g.t, c);
        if (ch->kind == ICS_CHAN_NVLINK && fast < 0)
            fast = c;
        if (ch->kind == ICS_CHAN_NETWORK && slow < 0)
            slow = c;
    }
    g_assert_cmpint(fast, >=, 0);
    g_assert_cmpint(slow, >=, 0);
    uint64_t *bytes = g_new0(uint64_t, nch);
    double span_s = 1e-3, bw_fast = (double)ics_topo_chan_get(g.t, fast)->bw_bytes_per_s,
           bw_slow = (double)ics_topo_chan_get(g.t, slow)->bw_bytes_per_s;
    g_assert_cmpfloat(bw_slow, <, bw_fast);
    bytes[fast] = (uint64_t)(0.5 * bw_fast * span_s);
    bytes[slow] = (uint64_t)(0.75 * bw_slow * span_s);
    g_assert_cmpuint(bytes[slow], <, bytes[fast]);
    ics_hotspots h = {.t = g.t, .chan_bytes = bytes, .span_ps = ICS_PS_PER_US * 1000, .top = 1};
    GString *text = g_string_new(NULL);
    ics_report_hotspots_text(&h, "# ", text);
    g_assert_nonnull(strstr(text->str, "(2 of "));
    g_assert_nonnull(strstr(text->str, " 75.0%\n"));
    const char *arrow = strstr(text->str, " -> ");
    g_assert_nonnull(arrow);
    g_assert_null(strstr(arrow + 1, " -> "));               /* top 1: one link listed */
    g_assert_nonnull(strstr(text->str, "busiest 50.0%\n")); /* the NVLink kind's line */
    g_assert_nonnull(strstr(text->str, "# "));
    ics_coll_json *j = ics_report_coll_json_new("x", ICS_COLL_ALL_REDUCE, 8, "analytic");
    h.top = 5;
    ics_report_coll_json_hotspots(j, &h);
    char *doc = ics_report_coll_json_text(j);
    cJSON *o = cJSON_Parse(doc), *hs = cJSON_GetObjectItem(o, "hotspots");
    g_assert_nonnull(hs);
    g_assert_cmpint(cJSON_GetObjectItem(hs, "channels_used")->valueint, ==, 2);
    cJSON *busiest = cJSON_GetObjectItem(hs, "busiest");
    g_assert_cmpint(cJSON_GetArraySize(busiest), ==, 2);
    cJSON *first = cJSON_GetArrayItem(busiest, 0), *second = cJSON_GetArrayItem(busiest, 1);
    g_assert_cmpstr(cJSON_GetObjectItem(first, "kind")->valuestring, ==, "network");
    g_assert_cmpfloat_with_epsilon(cJSON_GetObjectItem(first, "utilization")->valuedouble, 0.75,
                                   1e-6);
    g_assert_cmpfloat_with_epsilon(cJSON_GetObjectItem(second, "utilization")->valuedouble, 0.5,
                                   1e-6);
    cJSON *kinds = cJSON_GetObjectItem(hs, "by_kind");
    g_assert_cmpint(
        cJSON_GetObjectItem(cJSON_GetObjectItem(kinds, "nvlink"), "channels_used")->valueint, ==,
        1);
    cJSON_Delete(o);
    g_free(doc);
    ics_report_coll_json_free(j);
    g_string_free(text, TRUE);
    g_free(bytes);
    rig_close(&g);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/hotspots/memo_bytes", test_memo_bytes);
    g_test_add_func("/hotspots/memo_failure", test_memo_failure);
    g_test_add_func("/hotspots/report", test_report);
    return g_test_run();
}
