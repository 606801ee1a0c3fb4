/* libFuzzer target past the readers: the input is a hardware model (a self-contained node) and
 * a JSON trace, "NODE\n===\nTRACE" (without the separator, all of it is the trace, on a small
 * built-in node), and what parses is replayed, on the engine and collective mode a hash of the
 * input picks. Overflows and budgets live there: values each in their reader's range that
 * together outlast the clock (ICS_TIME_LIMIT), slow lanes and GPUs, huge transfers. Every replay
 * must end in a report whose figures hold together (every rank's breakdown adds up to its end,
 * spans in order, all before the horizon) or in one error line of ICS_ERROR (bad input, or a
 * limit: exit 2); a crash, an assertion, a leak, a sanitizer report or a hang is a bug. Bounded
 * so a run stays well under a second: at most 16 GPUs, 16 ranks, 256 ops and 16 GiB moved (the
 * horizon is within reach all the same: links of 1-byte packets at 0.001 Gb/s move 125 B/s).
 * fuzz_hw_replay.c drives it from files in every build (fuzz_sim_replay). */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <glib.h>

#include "replay/replay.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define SEPARATOR "\n===\n"
#define MAX_GPUS  16
#define MAX_RANKS 16
#define MAX_OPS   256
#define MAX_BYTES (UINT64_C(1) << 34) /* moved by all ops: a TiB ring takes seconds */

/* Four GPUs on an NVSwitch, two on each of two PCIe switches under two host bridges. */
static const char default_node[] =
    "{\"kind\": \"node\", \"name\": \"fuzz node\", \"standards\": {"
    "\"nvl\": {\"family\": \"nvlink\", \"generation\": 4, \"lanes\": 2, \"lane_gbps\": 106.25,"
    " \"encoding\": \"none\", \"modulation\": \"PAM4\", \"max_payload_bytes\": 256,"
    " \"packet_overhead_bytes\": 16, \"latency_ns\": 50, \"source\": \"f\"},"
    "\"p5\": {\"family\": \"pcie\", \"generation\": 5, \"lanes\": 1, \"lane_gbps\": 32,"
    " \"encoding\": \"128b/130b\", \"max_payload_bytes\": 256, \"packet_overhead_bytes\": 26,"
    " \"latency_ns\": 100, \"source\": \"f\"}},"
    "\"cpu_types\": {\"c\": {\"name\": \"C\", \"socket_link_gbytes_per_s\": 60,"
    " \"socket_link_latency_ns\": 120, \"p2p_gbytes_per_s\": 20, \"source\": \"f\"}},"
    "\"switches\": {\"nvsw\": {\"kind\": \"nvswitch\", \"name\": \"NVS\", \"ports\": 16,"
    " \"standard\": \"nvl\", \"latency_ns\": 100, \"sharp\": true, \"source\": \"f\"},"
    " \"plx\": {\"kind\": \"pcie_switch\", \"name\": \"PLX\", \"ports\": 64, \"standard\": \"p5\","
    " \"latency_ns\": 150, \"source\": \"f\"}},"
    "\"gpu_types\": {\"g\": {\"name\": \"G\", \"arch\": \"sm90\", \"nvlink\": \"nvl\","
    " \"nvlinks\": 4, \"pcie\": \"p5\", \"pcie_lanes\": 16, \"tflops\": {\"bf16\": 1000},"
    " \"hbm_gbytes\": 80, \"hbm_tbytes_per_s\": 3.35, \"source\": \"f\"}},"
    "\"gpu\": \"g\", \"gpus\": 4,"
    "\"cpus\": [{\"name\": \"cpu0\", \"type\": \"c\", \"numa_nodes\": [0]},"
    " {\"name\": \"cpu1\", \"type\": \"c\", \"numa_nodes\": [1]}],"
    "\"pcie\": [{\"kind\": \"host_bridge\", \"name\": \"hb0\", \"numa\": 0},"
    " {\"kind\": \"host_bridge\", \"name\": \"hb1\", \"numa\": 1},"
    " {\"kind\": \"switch\", \"name\": \"sw0\", \"type\": \"plx\", \"parent\": \"hb0\"},"
    " {\"kind\": \"switch\", \"name\": \"sw1\", \"type\": \"plx\", \"parent\": \"hb1\"},"
    " {\"kind\": \"gpu\", \"index\": 0, \"parent\": \"sw0\"},"
    " {\"kind\": \"gpu\", \"index\": 1, \"parent\": \"sw0\"},"
    " {\"kind\": \"gpu\", \"index\": 2, \"parent\": \"sw1\"},"
    " {\"kind\": \"gpu\", \"index\": 3, \"parent\": \"sw1\"}],"
    "\"nvlink\": {\"switches\": [{\"name\": \"nvsw0\", \"type\": \"nvsw\"}],"
    " \"links\": [{\"a\": [\"gpu0\", \"gpu1\", \"gpu2\", \"gpu3\"], \"b\": \"nvsw0\","
    " \"count\": 4}]}}";

static void broken(const char *what, const char *detail)
{
    fprintf(stderr, "fuzz_sim: %s: %s\n", what, detail ? detail : "");
    abort();
}

/* The replayer's errors: ICS_ERROR, bad input or a limit, one line. */
static void check_error(const GError *e)
{
    if (!e)
        broken("failed without an error", NULL);
    if (e->domain != ICS_ERROR || (e->code != ICS_ERROR_INPUT && e->code != ICS_ERROR_LIMIT))
        broken("error of another domain or code", e->message);
    if (!*e->message || strchr(e->message, '\n'))
        broken("error message empty or on several lines", e->message);
    if (e->code == ICS_ERROR_LIMIT && !strstr(e->message, "docs/limits.md"))
        broken("a limit's message does not say where limits are documented", e->message);
}

/* What replay.h promises of a finished run. */
static void check_result(const ics_replay *r, const ics_replay_result *res, int nranks)
{
    if (res->step_ps < 0 || res->step_ps >= ICS_TIME_LIMIT)
        broken("step time outside [0, ICS_TIME_LIMIT)", NULL);
    ics_time last = 0;
    for (int k = 0; k < nranks; k++) {
        const ics_replay_rank *rk = ics_replay_rank_stats(r, k);
        ics_time sum = rk->bubble_ps + rk->host_ps;
        for (int c = 0; c < ICS_CAT_COUNT; c++) {
            if (rk->busy_ps[c] < 0 || rk->wait_ps[c] < 0)
                broken("negative time in a breakdown", NULL);
            sum += rk->busy_ps[c] + rk->wait_ps[c];
        }
        if (rk->bubble_ps < 0 || rk->host_ps < 0 || sum != rk->end_ps)
            broken("a rank's breakdown does not add up to its end", NULL);
        last = MAX(last, rk->end_ps);
    }
    if (last != res->step_ps)
        broken("the step is not the last rank's end", NULL);
    size_t n;
    const ics_replay_span *sp = ics_replay_spans(r, &n);
    for (size_t i = 0; i < n; i++)
        if (sp[i].ready < 0 || sp[i].ready > sp[i].start || sp[i].start > sp[i].end ||
            sp[i].end > res->step_ps)
            broken("a span out of order", NULL);
}

/* Within the bounds that keep a run short. */
static bool small(const ics_topo *t, const ics_trace *tr)
{
    if (ics_topo_nodes(t) * ics_topo_gpus_per_node(t) > MAX_GPUS ||
        ics_trace_nranks(tr) > MAX_RANKS)
        return false;
    int ops = 0;
    uint64_t bytes = 0;
    for (int k = 0; k < ics_trace_nranks(tr); k++) {
        ops += ics_trace_nops(tr, k);
        for (int i = 0; i < ics_trace_nops(tr, k) && ops <= MAX_OPS; i++) {
            const ics_trace_op *op = ics_trace_get_op(tr, k, i);
            bytes += op->kind == ICS_TOP_COLL ? op->coll.size_bytes : op->bytes;
        }
    }
    return ops <= MAX_OPS && bytes <= MAX_BYTES;
}

static void replay(const ics_trace *tr, const ics_topo *t, uint32_t pick)
{
    static const ics_replay_colls modes[] = {ICS_REPLAY_AUTO, ICS_REPLAY_FULL, ICS_REPLAY_MEMO};
    ics_replay_opts o = {.backend = ics_net_backend(pick & 1 ? "packet" : "analytic"),
                         .colls = modes[(pick >> 1) % 3],
                         .p2p_lat_ps = -1};
    if (pick & 1)
        o.net.packet_bytes = pick & 8 ? 0 : 256 * 1024; /* the links' own packets, or icsim's */
    if (pick & 16)
        o.sample_ps = ICS_PS_PER_US; /* link load sampling, as a timeline asks */
    /* the host (ops with "launches"): none, the default, or one slow enough to hold every op */
    static const ics_time hosts[] = {0, 10 * ICS_PS_PER_US, 1000000 * ICS_PS_PER_US};
    o.host_launch_ps = hosts[(pick >> 14) % 3];
    /* NCCL's choices as a user forces them: an algorithm (or the tuner's pick), a protocol */
    static const char *const algos[] = {NULL,       "Ring",          "Tree",         "NVLS",
                                        "NVLSTree", "CollNetDirect", "CollNetChain", "PAT"};
    static const char *const protos[] = {NULL, "Simple", "LL", "LL128"};
    const char *algo = algos[(pick >> 9) % 8], *proto = protos[(pick >> 12) % 4];
    if (algo)
        g_setenv("NCCL_ALGO", algo, TRUE);
    else
        g_unsetenv("NCCL_ALGO");
    if (proto)
        g_setenv("NCCL_PROTO", proto, TRUE);
    else
        g_unsetenv("NCCL_PROTO");
    g_setenv("NCCL_COLLNET_ENABLE", "1", TRUE);
    GError *warning = NULL, *err = NULL;
    ics_coll_tuning_from_env(&o.tuning, ics_topo_hw(t), &warning); /* over its nccl_conf */
    g_clear_error(&warning);
    /* how calls are planned: chunk by chunk, or each channel as one stream (the closed forms
     * SuperPOD-sized communicators take) */
    static const ics_coll_plan plans[] = {ICS_PLAN_AUTO, ICS_PLAN_CHUNKS, ICS_PLAN_STREAMS};
    o.tuning.plan = plans[(pick >> 7) % 3];
    ics_replay *r = ics_replay_new(tr, t, &o, &err);
    if (!r) {
        check_error(err);
        g_error_free(err);
        return;
    }
    ics_replay_result res;
    if (ics_replay_run(r, &res, &err))
        check_result(r, &res, ics_trace_nranks(tr));
    else
        check_error(err);
    g_clear_error(&err);
    ics_replay_free(r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *text = (const char *)data;
    const char *sep = g_strstr_len(text, (gssize)size, SEPARATOR);
    const char *node = sep ? text : default_node;
    size_t node_len = sep ? (size_t)(sep - text) : strlen(default_node);
    const char *trace = sep ? sep + strlen(SEPARATOR) : text;
    size_t trace_len = size - (size_t)(trace - text);
    GError *err = NULL;
    ics_hw *hw = ics_hw_load_text("node.json", node, node_len, &err);
    g_clear_error(&err);
    ics_trace *tr = hw ? ics_trace_read_json_text("trace.json", trace, trace_len, &err) : NULL;
    g_clear_error(&err);
    ics_topo *t = tr ? ics_topo_new(hw) : NULL;
    if (t && small(t, tr)) {
        /* FNV-1a of the input: the same input always takes the same engine and mode */
        uint32_t h = 2166136261u;
        for (size_t i = 0; i < size; i++)
            h = (h ^ data[i]) * 16777619u;
        replay(tr, t, h);
    }
    ics_topo_free(t);
    ics_trace_free(tr);
    ics_hw_free(hw);
    return 0;
}
