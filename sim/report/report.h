/* Reports: what the simulator prints, built into GStrings so that the CLI decides where they
 * go and nothing is written before a run has succeeded (no half-written output). */
#ifndef ICS_REPORT_H
#define ICS_REPORT_H

#include <glib.h>

#include "collectives/comm.h"
#include "replay/replay.h"
#include "topo/topo.h"
#include <stdbool.h>

/* `icsim topo` text summary: devices by kind, per-GPU links and bandwidth, the fabric. */
void ics_report_topo_text(const ics_topo *t, GString *out);
/* The GPU and NIC matrix of node 0 in `nvidia-smi topo -m` form, with its legend. */
void ics_report_topo_matrix(const ics_topo *t, GString *out);
/* The same facts as JSON (one object, 2-space indented, trailing newline). */
void ics_report_topo_json(const ics_topo *t, GString *out);
/* Graphviz DOT (report_dot.c), drawn to be read: at the node level one vertex per device,
 * grouped in a cluster per node and one per fabric tier, one edge per physical link (channel
 * pair) coloured by link family (a legend says which) with its width and bandwidth in a label
 * smaller than the names, failed devices dashed in grey; at the cluster level (clusters only)
 * one vertex per set of nodes cabled to the same leaves, the fabric's switches, and the links
 * between two vertices added up into one edge. */
typedef enum { ICS_DOT_NODE, ICS_DOT_CLUSTER } ics_dot_level;
void ics_report_topo_dot_level(const ics_topo *t, ics_dot_level level, GString *out);
/* The node level. */
void ics_report_topo_dot(const ics_topo *t, GString *out);
/* A route between two devices, hop by hop, with latency and bottleneck bandwidth. */
void ics_report_route(const ics_topo *t, int src, int dst, GString *out);

/* ---- a sweep's large sizes (report_tail.c) ---- */

/* T(S) = a + S / B fitted to n calls of bytes[i] taking time_us[i], each residual relative to its
 * time (weighted least squares, GSL's gsl_fit_wlinear): a the fixed time every call pays, B its
 * algorithm bandwidth (nccl-tests' algbw: bytes over time, GB = 1e9 B) once the size hides a.
 * False, with NaNs, for fewer than 2 rows, a non-positive size or time, or no positive B (the
 * times not growing with the size). a is what the line says at size 0 and may come out
 * negative where the rows are few and the times noisy (a 3-row tail). */
typedef struct {
    double a_us, algbw_gbps;
    int rows;
    double from_bytes; /* the smallest size fitted */
} ics_report_tail;
bool ics_report_tail_fit(const double *bytes, const double *time_us, int n, ics_report_tail *out);
/* The same over a sweep's tail: its calls from ICS_REPORT_TAIL_FROM_BYTES within
 * ICS_REPORT_TAIL_SPAN of the largest (the last six doublings), at least 3 of them (false
 * otherwise, rows saying how many there were). */
#define ICS_REPORT_TAIL_FROM_BYTES 1048576.0
#define ICS_REPORT_TAIL_SPAN       64.0
bool ics_report_tail_fit_top(const double *bytes, const double *time_us, int n,
                             ics_report_tail *out);

/* ---- collectives, as nccl-tests prints them (report_coll.c) ---- */

/* Which nccl-tests release's layout: up to 2.16 (time "%7.2f" below 100 us, "%7.1f" below
 * 10^4, "%7.0f" above; #wrong 5 wide) or 2.17 and later (2 decimals below 10^4 us, 1 below
 * 10^5, none above; #wrong 6 wide). */
typedef enum { ICS_NCCLTESTS_CLASSIC, ICS_NCCLTESTS_2_17 } ics_nccltests_style;

/* One printed row: the call's figures, nccl-tests' definitions. */
typedef struct {
    uint64_t size_bytes; /* as printed: count x dtype (x nranks for gather/scatter/all-to-all),
                            so a size that does not divide is rounded down, as nccl-tests does */
    uint64_t count;      /* elements per rank's parameter: size / dtype (/ nranks) */
    const char *type;    /* "float" (transfer none) */
    const char *redop;   /* "sum", or "none" for operations that do not reduce */
    int root;            /* -1 except broadcast and reduce */
    double time_us;
    double algbw_gbps; /* size / time, GB = 1e9 B */
    double busbw_gbps; /* algbw x ics_coll_busbw_factor(op, nranks) */
} ics_coll_row;

/* Fills size_bytes, count and root (-1 unless broadcast/reduce) of the row a request prints
 * (ics_coll_req_nccltests gives both); type and redop are left alone. */
void ics_report_coll_request(const ics_coll_req *req, uint64_t count, ics_coll_row *row);
/* Fills time_us, algbw and busbw from a time in microseconds (0 time: 0 bandwidth). */
void ics_report_coll_time(ics_coll_op op, int nranks, double time_us, ics_coll_row *row);
/* nccl-tests' "redop" column: the reduction for all-reduce, reduce-scatter, reduce and
 * send/recv (nccl-tests loops send/recv over the reductions too), "none" for the others. */
bool ics_report_coll_reduces(ics_coll_op op);

/* `collective --json`: a document of the sweep's rows with the tuner's choices, built row by
 * row. ics_report_coll_json_text ends it (transfer full: the text, newline-terminated). */
typedef struct ics_coll_json ics_coll_json;
ics_coll_json *ics_report_coll_json_new(const char *system, ics_coll_op op, int nranks,
                                        const char *engine);
void ics_report_coll_json_add(ics_coll_json *j, const ics_coll_row *row,
                              const ics_coll_result *res);
char *ics_report_coll_json_text(ics_coll_json *j);
void ics_report_coll_json_free(ics_coll_json *j); /* NULL: no-op */

/* The column header (three lines: out-of-place/in-place, names, units). */
void ics_report_coll_columns(ics_nccltests_style style, GString *out);
/* One row: out-of-place then in-place with the same figures, #wrong N/A, newline. */
void ics_report_coll_row(ics_nccltests_style style, const ics_coll_row *row, GString *out);
/* `collective --show-algo`: turns the row just appended to out into one ending in a comment
 * column, "  # Ring/Simple/24" (algorithm/protocol/channels), "  # local copy" on one rank. */
void ics_report_coll_algo_column(const ics_coll_result *res, GString *out);
/* Appends "Ring/Simple/24": algorithm/protocol/channels, and " x 3 waves" where NCCL's
 * point-to-point batches split an all-to-all into more than one (collectives.md). */
void ics_report_coll_algo(const ics_coll_result *res, GString *out);
/* The time column's text, without its padding ("13.67", "1112.5", "15749"). */
void ics_report_coll_time_str(ics_nccltests_style style, double time_us, char buf[32]);
/* "# Out of bounds values : 0 OK" and "# Avg bus bandwidth    : X " (X the mean busbw of
 * every printed out-of-place and in-place column, "%g" as nccl-tests prints it) and "#". */
void ics_report_coll_trailer(double avg_busbw_gbps, GString *out);

/* ---- what-ifs (report_whatif.c) ---- */

/* "# failure: DESC" for each failure applied to t (topo.h, ics_topo_fail). */
void ics_report_failures(const ics_topo *t, GString *out);
/* "# nccl_conf: NCCL_ALGO=Ring,Tree ..." when the model carries its own NCCL settings (hw's
 * nccl_conf), in name order; nothing otherwise. */
void ics_report_nccl_conf(const ics_hw *hw, GString *out);
/* The same sweep on the intact and the failed system, n rows each in the same order: per size
 * the algorithm/protocol/channels of each, bus bandwidth and its change, time; then the mean
 * and worst change. Comment lines ("# "), so the output still reads as an nccl-tests log. */
void ics_report_coll_compare(const ics_coll_row *intact, const ics_coll_result *ri,
                             const ics_coll_row *failed, const ics_coll_result *rf, int n,
                             GString *out);
/* A sweep's rows as one line of a chart (transfer none). */
typedef struct {
    const char *name;
    const ics_coll_row *rows;
    int n;
    bool measured; /* drawn dashed: a real log beside the simulation */
} ics_coll_curve;
/* Bus bandwidth against size (log axis), a line per curve, as SVG (plot_svg.c). */
void ics_report_coll_svg(const char *title, ics_coll_op op, const ics_coll_curve *curves, int n,
                         GString *out);

/* ---- the busiest links of a run (report_hotspot.c) ---- */

typedef struct {
    const ics_topo *t;
    const uint64_t *chan_bytes; /* payload bytes per channel of t (transfer none) */
    ics_time span_ps;           /* the time they were carried in (a call, a step) */
    int top;                    /* how many links to list */
    const char *note;           /* a caveat printed with the report (folded traces), or NULL */
} ics_hotspots;

/* The `top` channels that worked hardest (utilization: payload / (bandwidth x span)), then a
 * line per channel kind (channels used, bytes, the busiest one's utilization); every line
 * starts with prefix ("# " inside nccl-tests-shaped output). */
void ics_report_hotspots_text(const ics_hotspots *h, const char *prefix, GString *out);
/* `collective --json`: the same as a "hotspots" object of the document. */
void ics_report_coll_json_hotspots(ics_coll_json *j, const ics_hotspots *h);

/* ---- step time of a replay (report_step.c) ---- */

/* What a training job adds to a replay's figures; zeros where unknown (a bare trace). */
typedef struct {
    double tokens;      /* per step */
    double model_flops; /* per step, all GPUs, without recomputation (MFU) */
    double hw_flops;    /* per step, all GPUs, with recomputation (Megatron's TFLOP/s) */
    double peak_tflops; /* per GPU, dense, of the training data type */
    const struct ics_memory *memory; /* per GPU at the peak stage (workload/memory.h); NULL */
    double hbm_bytes;                /* the GPU's memory, bytes */
} ics_step_info;

/* The step time, throughput, the critical rank's breakdown and the mean over ranks. */
void ics_report_step_text(const ics_replay *r, const ics_replay_result *res, int nranks,
                          const ics_step_info *info, GString *out);
/* The same as one JSON object: step_time_s, tokens_per_s, tflops_per_gpu, mfu, breakdown
 * (critical rank), breakdown_mean, critical_rank, simulation counters, and per rank its end
 * and breakdown. */
void ics_report_step_json(const ics_replay *r, const ics_replay_result *res, int nranks,
                          const ics_step_info *info, GString *out);
/* The same with a "hotspots" object (the busiest links over the step) when h is not NULL. */
void ics_report_step_json_hot(const ics_replay *r, const ics_replay_result *res, int nranks,
                              const ics_step_info *info, const ics_hotspots *h, GString *out);

/* One stacked bar per simulated rank (past 16, per group of consecutive ranks: their mean) of
 * where its step went (compute, TP/PP/DP communication exposed, other, bubble, host), as SVG
 * (report_step_svg.c, through ics_plot_svg_bars). */
/* A step's parts: one per trace category, then the bubble, then the host's launches
 * (replay.h); their names as pictures label them. */
#define ICS_REPORT_STEP_NPARTS (ICS_CAT_COUNT + 2)
extern const char *const ics_report_step_parts[ICS_REPORT_STEP_NPARTS];

void ics_report_step_svg(const ics_replay *r, const ics_replay_result *res, int nranks,
                         const char *title, GString *out);

/* Timelines of a replay in the Chrome trace event format (JSON), which ui.perfetto.dev and
 * chrome://tracing open: one process per rank with one thread per stream, each op a complete
 * event ("X") from its start to its end (the time it waited for peers in its args), and a
 * "links" process with one counter track per channel that carried bytes (GB/s over each
 * sampling interval). Times are in microseconds with nanosecond decimals. */

/* Writes the timeline of a finished run of r (over trace tr and topology t) to path, at most
 * max_ranks ranks (<= 0: all), atomically: a temporary file renamed into place, nothing left
 * on failure. False and sets *error (ICS_ERROR_IO) when the file cannot be written. */
bool ics_timeline_write(const ics_replay *r, const ics_trace *tr, const ics_topo *t,
                        const char *path, int max_ranks, GError **error);

/* ---- pictures (plot_svg.c): SVG written as text, no library ---- */

/* One line of a chart: n points (x[i], y[i]), transfer none. Points with a non-finite or
 * negative value (or x <= 0 on a log axis) are left out. */
typedef struct {
    const char *name; /* legend and tooltip */
    int n;
    const double *x, *y;
    const char *color; /* "#rrggbb"; NULL: the palette's by position (ics_plot_color) */
    bool dashed;       /* measured data beside simulated, say */
    bool markers;      /* a dot at every point */
} ics_plot_series;

typedef struct {
    const char *title, *x_label, *y_label;
    bool log_x; /* x on a log2 axis with byte-size ticks (8 B .. 1 GiB): nccl-tests sweeps */
    int nseries;
    const ics_plot_series *series;
} ics_plot;

/* A line chart, y from 0, legend beside the plot (as many entries as fit; every line keeps
 * its name as a tooltip). Always well-formed XML: text escaped and made valid UTF-8. */
void ics_plot_svg_lines(const ics_plot *p, GString *out);

/* A stacked bar chart: nbars bars of nparts parts each, values[bar x nparts + part] stacked
 * from the bottom (non-finite or negative parts are left out). */
typedef struct {
    const char *title, *y_label;
    int nbars, nparts;
    const char *const *bar_names;
    const char *const *part_names;
    const double *values;
} ics_plot_bars;
void ics_plot_svg_bars(const ics_plot_bars *b, GString *out);

/* The i-th colour of the palette (Tableau 10, cycling). */
const char *ics_plot_color(int i);

#endif
