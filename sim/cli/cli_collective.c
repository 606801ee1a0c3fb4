/* `icsim collective OP -s SYSTEM -b MIN -e MAX -f FACTOR`: one nccl-tests sweep, simulated,
 * printed in nccl-tests' layout so that it diffs against a real log. Nothing is printed (and no
 * --json file written) unless every size ran. */
#include "calibrate/calibrate.h"
#include "cli/cli.h"
#include "cli/cli_coll_nccltests.h"
#include "cli/cli_common.h"
#include "cli/cli_progress.h"
#include "collectives/comm.h"
#include "report/report.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef ICS_VERSION
#define ICS_VERSION "0.1.0"
#endif

/* nccl-tests' -d names and sizes */
static const struct {
    const char *name;
    int bytes;
} dtypes[] = {
    {"int8", 1},     {"char", 1},     {"uint8", 1},  {"int32", 4},   {"int", 4},
    {"uint32", 4},   {"int64", 8},    {"uint64", 8}, {"half", 2},    {"float16", 2},
    {"float", 4},    {"float32", 4},  {"double", 8}, {"float64", 8}, {"bfloat16", 2},
    {"fp8_e4m3", 1}, {"fp8_e5m2", 1},
};

static const char *const redops[] = {"sum", "prod", "max", "min", "avg"};

bool ics_cli_coll_op(const char *name, ics_coll_op *op)
{
    for (int i = 0; i < ICS_COLL_OP_COUNT; i++)
        if (strcmp(name, ics_coll_op_name(i)) == 0) {
            *op = i;
            return true;
        }
    return false;
}

bool ics_cli_parse_size(const char *s, uint64_t *out)
{
    /* nccl-tests' parsesize: a number, then K, M or G (powers of 2) */
    if (!s || !*s || *s == '-')
        return false;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s)
        return false;
    unsigned shift = 0;
    switch (*end) {
    case 'K':
    case 'k':
        shift = 10;
        end++;
        break;
    case 'M':
    case 'm':
        shift = 20;
        end++;
        break;
    case 'G':
    case 'g':
        shift = 30;
        end++;
        break;
    default:
        break;
    }
    if (*end || (shift && v > (UINT64_MAX >> shift)))
        return false;
    *out = (uint64_t)v << shift;
    return true;
}

/* The options as given, then as read. Counts given as text: 0 is a value the user may type and
 * must be refused, not "not given" (cli_common.h). */
struct ics_cli_coll_job {
    ics_coll_op op;
    char *system, *min_s, *max_s, *dtype, *redop, *engine, *json, *format, *plan;
    char *gpus_text, *nodes_text, *gpn_text;
    int gpus, nodes, gpus_per_node; /* 0: not given */
    int factor, root;
    bool factor_given;
    uint64_t min_b, max_b;
    int dtype_bytes;
    const ics_net_ops *backend;
    ics_coll_plan plan_kind;
    ics_nccltests_style style;
    ics_cli_nccltests nt;        /* nccl-tests' own flags */
    char **fails;                /* --fail specs (topo.h), NULL-terminated */
    gboolean compare, show_algo; /* --compare: also the intact system; --show-algo */
    char *plot, *measured;       /* --plot FILE.svg, --measured LOG */
    char *hotspots_text;         /* --hotspots N: the busiest links of the largest size */
    int hotspots;                /* 0: not asked for */
};
typedef struct ics_cli_coll_job coll_args;

static int usage_error(const char *fmt, const char *what)
{
    char *esc = g_strescape(what, NULL);
    ics_cli_fail("collective", g_error_new(ICS_ERROR, ICS_ERROR_INPUT, fmt, esc));
    g_free(esc);
    return ICS_EXIT_USAGE;
}
static void header(const coll_args *a, const ics_topo *t, const int *gpus, int nranks,
                   uint64_t min_b, uint64_t max_b, const char *tuning_err, GString *out)
{
    const ics_hw *hw = ics_topo_hw(t);
    const char *product = ics_hw_node_of(hw)->gpu_type->product;
    g_string_append_printf(out, "# icsim %s: %s, %d ranks, engine %s\n", ICS_VERSION,
                           ics_hw_name(hw), nranks, a->engine);
    ics_report_failures(t, out);
    ics_cli_nccltests_header(&a->nt, min_b, max_b, a->factor, out);
    if (tuning_err)
        g_string_append_printf(out, "# warning: %s\n", tuning_err);
    ics_report_nccl_conf(hw, out);
    g_string_append(out, "#\n# Using devices\n");
    for (int r = 0; r < nranks; r++) {
        const ics_topo_dev *d = ics_topo_dev_get(t, gpus[r]);
        char host[32];
        snprintf(host, sizeof host, "node%d", d->node);
        g_string_append_printf(out, "#  Rank %2d Group  0 Pid %6d on %10s device %2d [0x%02x] %s\n",
                               r, 0, host, d->local, d->local, product);
    }
    g_string_append(out, "#\n# in-place figures repeat the out-of-place ones: the simulator "
                         "does not tell them apart\n");
}

/* The largest call size: a TiB is several times any GPU's memory (nccl-tests allocates the
 * buffers), and beyond it the packet engine's trains and the schedules grow without use. */
#define MAX_COLL_BYTES (1ULL << 40)

/* -b, -e and -f */
static int check_sizes(coll_args *a)
{
    if (!ics_cli_parse_size(a->min_s, &a->min_b) || a->min_b == 0)
        return usage_error("-b: expected a size >= 1 (N, NK, NM or NG), got \"%s\"", a->min_s);
    if (!ics_cli_parse_size(a->max_s, &a->max_b))
        return usage_error("-e: expected a size (N, NK, NM or NG), got \"%s\"", a->max_s);
    if (a->max_b > MAX_COLL_BYTES)
        return usage_error("-e: expected a size <= 1024G (1 TiB), got \"%s\"", a->max_s);
    if (a->min_b > a->max_b)
        return usage_error("expected -b <= -e, got -b %s", a->min_s);
    GError *err = NULL;
    if (!ics_check_int("-f", a->factor, 2, INT_MAX, &err) || !ics_cli_nccltests_check(&a->nt, &err))
        return ics_cli_fail("collective", err);
    if (a->nt.step_bytes && a->factor_given)
        return usage_error("expected -f FACTOR or -i BYTES, not both%s", "");
    return ICS_EXIT_OK;
}

/* -d, -o, --engine, --plan, --format */
static int check_words(coll_args *a)
{
    for (size_t i = 0; i < G_N_ELEMENTS(dtypes); i++)
        if (strcmp(a->dtype, dtypes[i].name) == 0)
            a->dtype_bytes = dtypes[i].bytes;
    if (!a->dtype_bytes)
        return usage_error("-d: expected float, half, bfloat16, double, int8, int32, ..., got "
                           "\"%s\"",
                           a->dtype);
    bool redop_ok = false;
    for (size_t i = 0; i < G_N_ELEMENTS(redops); i++)
        redop_ok |= strcmp(a->redop, redops[i]) == 0;
    if (!redop_ok)
        return usage_error("-o: expected sum, prod, max, min or avg, got \"%s\"", a->redop);
    a->backend = ics_net_backend(a->engine);
    if (!a->backend)
        return usage_error("--engine: expected analytic, packet or flow, got \"%s\"", a->engine);
    if (strcmp(a->plan, "chunks") == 0)
        a->plan_kind = ICS_PLAN_CHUNKS;
    else if (strcmp(a->plan, "streams") == 0)
        a->plan_kind = ICS_PLAN_STREAMS;
    else if (strcmp(a->plan, "auto") == 0)
        a->plan_kind = ICS_PLAN_AUTO;
    else
        return usage_error("--plan: expected auto, chunks or streams, got \"%s\"", a->plan);
    if (strcmp(a->format, "classic") == 0)
        a->style = ICS_NCCLTESTS_CLASSIC;
    else if (strcmp(a->format, "2.17") == 0)
        a->style = ICS_NCCLTESTS_2_17;
    else
        return usage_error("--format: expected classic or 2.17, got \"%s\"", a->format);
    return ICS_EXIT_OK;
}

/* --gpus, --nodes, --gpus-per-node (each >= 1 when given; the model bounds them further), -r */
static int check_ranks(coll_args *a)
{
    GError *err = NULL;
    if (!ics_cli_int_in("--gpus", a->gpus_text, 1, INT_MAX, &a->gpus, &err) ||
        !ics_cli_nodes(a->nodes_text, &a->nodes, &err) ||
        !ics_cli_int_in("--gpus-per-node", a->gpn_text, 1, INT_MAX, &a->gpus_per_node, &err) ||
        !ics_check_int("-r", a->root, 0, INT_MAX, &err) ||
        !ics_cli_int_in("--hotspots", a->hotspots_text, 1, ICS_CLI_HOTSPOTS_MAX, &a->hotspots,
                        &err))
        return ics_cli_fail("collective", err);
    if (a->gpus && a->gpus_per_node)
        return usage_error("expected --gpus N or --gpus-per-node G, not both%s", "");
    return ICS_EXIT_OK;
}

/* One sweep's rows and the tuner's choices, in size order. */
typedef struct {
    GArray *rows;         /* ics_coll_row */
    GArray *res;          /* ics_coll_result */
    uint64_t *chan_bytes; /* --hotspots: payload per channel of the largest size's call */
} sweep_rows;

/* The next size: times the factor, or plus -i's bytes; false past max. */
static bool next_size(const coll_args *a, uint64_t *size)
{
    uint64_t step = a->nt.step_bytes;
    if (step ? *size > a->max_b - step : *size > a->max_b / (uint64_t)a->factor)
        return false;
    *size = step ? *size + step : *size * (uint64_t)a->factor;
    return true;
}

/* Every size on s's communicator into *out; an exit status (the message printed) for a call
 * that cannot run or passes the horizon. A progress line on a terminal, size by size. */
static int run_sizes_with(const coll_args *a, const ics_cli_setup *s, const ics_coll_tuning *tuning,
                          sweep_rows *out, ics_cli_progress *p, int nsizes)
{
    int done = 0;
    out->rows = g_array_new(FALSE, TRUE, sizeof(ics_coll_row));
    out->res = g_array_new(FALSE, TRUE, sizeof(ics_coll_result));
    if (a->hotspots)
        out->chan_bytes = g_new0(uint64_t, MAX(ics_topo_nchans(s->t), 1));
    for (uint64_t size = a->min_b;;) {
        uint64_t next = size;
        bool last = !next_size(a, &next);
        ics_coll_row row = {.type = a->dtype,
                            .redop = ics_report_coll_reduces(a->op) ? a->redop : "none"};
        uint64_t count;
        ics_coll_req req =
            ics_coll_req_nccltests(a->op, size, a->dtype_bytes, a->root, s->nranks, &count);
        ics_report_coll_request(&req, count, &row);
        ics_cli_progress_say(p, (double)done / nsizes,
                             "%s of %" G_GUINT64_FORMAT " bytes, size %d of %d",
                             ics_coll_op_name(a->op), row.size_bytes, done + 1, nsizes);
        done++;
        /* in place the simulated call is the same call: one run gives both columns */
        ics_coll_result res;
        if (!ics_comm_run_traffic(s->comm, &req, tuning, &res, last ? out->chan_bytes : NULL)) {
            fprintf(stderr,
                    "icsim collective: %s of %llu bytes cannot run on %s%s with the tuning "
                    "asked for (NCCL_ALGO, NCCL_PROTO)\n",
                    ics_coll_op_name(a->op), (unsigned long long)row.size_bytes, a->system,
                    ics_topo_nfailures(s->t) ? " with the failures" : "");
            return ICS_EXIT_FAIL;
        }
        if (res.time_ps >= ICS_TIME_LIMIT) { /* saturated: the run stopped at the horizon */
            fprintf(stderr,
                    "icsim collective: %s of %llu bytes on %d ranks of %s: ends past the "
                    "simulator's horizon of %s (docs/limits.md)\n",
                    ics_coll_op_name(a->op), (unsigned long long)row.size_bytes, s->nranks,
                    a->system, ICS_TIME_LIMIT_TEXT);
            return ICS_EXIT_USAGE;
        }
        ics_report_coll_time(a->op, s->nranks, (double)res.time_ps / 1e6, &row);
        g_array_append_val(out->rows, row);
        g_array_append_val(out->res, res);
        if (last)
            break;
        size = next;
    }
    return ICS_EXIT_OK;
}

static int run_sizes(const coll_args *a, const ics_cli_setup *s, const ics_coll_tuning *tuning,
                     sweep_rows *out)
{
    int nsizes = 1;
    for (uint64_t size = a->min_b; next_size(a, &size);)
        nsizes++;
    ics_cli_progress progress;
    ics_cli_progress_init(&progress);
    int rc = run_sizes_with(a, s, tuning, out, &progress, nsizes);
    ics_cli_progress_end(&progress);
    return rc;
}

static void sweep_rows_clear(sweep_rows *r)
{
    if (r->rows)
        g_array_free(r->rows, TRUE);
    if (r->res)
        g_array_free(r->res, TRUE);
    g_free(r->chan_bytes);
}

/* A system's set-up with the failures applied (none: intact); false (message printed) if the
 * model does not load or refuses a failure. */
static bool open_system(const coll_args *a, char **fails, ics_cli_setup *s)
{
    if (!ics_cli_setup_open(s, a->system, a->nodes))
        return false;
    for (char **f = fails; f && *f; f++) {
        GError *err = NULL;
        if (!ics_topo_fail(s->t, *f, &err)) {
            fprintf(stderr, "icsim collective: --fail: %s\n", err->message);
            g_error_free(err);
            return false;
        }
    }
    return true;
}

/* --plot: the sweep (and, with --compare, the intact one; with --measured, a real log's
 * tables of the same operation) as a picture. */
static bool write_plot(const coll_args *a, const char *system, const sweep_rows *main_rows,
                       const sweep_rows *intact)
{
    GError *err = NULL;
    ics_meas *m = NULL;
    GArray *curves = g_array_new(FALSE, TRUE, sizeof(ics_coll_curve));
    GPtrArray *owned = g_ptr_array_new_with_free_func(g_free);
    if (intact) {
        ics_coll_curve c = {.name = "intact",
                            .rows = (const ics_coll_row *)intact->rows->data,
                            .n = (int)intact->rows->len};
        g_array_append_val(curves, c);
    }
    ics_coll_curve sim = {.name = intact ? "with failures" : "simulated",
                          .rows = (const ics_coll_row *)main_rows->rows->data,
                          .n = (int)main_rows->rows->len};
    g_array_append_val(curves, sim);
    bool ok = true;
    if (a->measured) {
        m = ics_meas_new();
        ok = ics_meas_read_file(m, a->measured, ics_coll_op_name(a->op), &err);
        for (guint t = 0; ok && t < ics_meas_n_tables(m); t++) {
            const ics_meas_table *tb = ics_meas_table_at(m, t);
            if (tb->op != a->op)
                continue;
            ics_coll_row *rows = g_new0(ics_coll_row, tb->n_rows);
            int n = 0;
            for (guint i = 0; i < tb->n_rows; i++) { /* busbw from the time where printed */
                double busbw = ics_meas_busbw(tb, &tb->rows[i], &tb->rows[i].oop);
                if (busbw >= 0) {
                    rows[n].size_bytes = tb->rows[i].size_bytes;
                    rows[n++].busbw_gbps = busbw;
                }
            }
            char *base = g_path_get_basename(tb->source);
            char *name = g_strdup_printf("measured: %s (%d ranks)", base, tb->nranks);
            g_free(base);
            g_ptr_array_add(owned, rows);
            g_ptr_array_add(owned, name);
            ics_coll_curve c = {.name = name, .rows = rows, .n = n, .measured = true};
            g_array_append_val(curves, c);
        }
    }
    if (ok) {
        GString *svg = g_string_new(NULL);
        char *title = g_strdup_printf("%s on %s", ics_coll_op_name(a->op), system);
        ics_report_coll_svg(title, a->op, (const ics_coll_curve *)curves->data, (int)curves->len,
                            svg);
        ok = g_file_set_contents(a->plot, svg->str, (gssize)svg->len, &err);
        g_free(title);
        g_string_free(svg, TRUE);
    }
    if (!ok) {
        fprintf(stderr, "icsim collective: %s: %s\n", a->measured && m ? "--measured" : "--plot",
                err->message);
        g_error_free(err);
    }
    ics_meas_free(m);
    g_ptr_array_free(owned, TRUE);
    g_array_free(curves, TRUE);
    return ok;
}

/* --hotspots: the busiest links of the sweep's last (largest) call, after the trailer. */
static void hotspots(const coll_args *a, const ics_cli_setup *s, const sweep_rows *rows,
                     GString *out, ics_coll_json *json)
{
    const ics_coll_row *row = &g_array_index(rows->rows, ics_coll_row, rows->rows->len - 1);
    const ics_coll_result *res = &g_array_index(rows->res, ics_coll_result, rows->res->len - 1);
    ics_hotspots h = {
        .t = s->t, .chan_bytes = rows->chan_bytes, .span_ps = res->time_ps, .top = a->hotspots};
    g_string_append_printf(out, "# %s of %" G_GUINT64_FORMAT " bytes, one call alone:\n",
                           ics_coll_op_name(a->op), row->size_bytes);
    ics_report_hotspots_text(&h, "# ", out);
    if (json)
        ics_report_coll_json_hotspots(json, &h);
}

/* An all-to-all on many ranks is refused before anything is built (ics_comm_call_fits),
 * instead of the machine running out of memory minutes later. */
static bool call_fits(const coll_args *a, int nranks)
{
    GError *err = NULL;
    if (ics_comm_call_fits(a->op, nranks, a->plan_kind, a->backend, &err))
        return true;
    fprintf(stderr, "icsim collective: %s\n", err->message);
    g_error_free(err);
    return false;
}

static int run(const coll_args *a)
{
    ics_cli_setup su = {0}, intact = {0};
    sweep_rows rows = {0}, intact_rows = {0};
    if (!open_system(a, a->fails, &su) || (a->compare && !open_system(a, NULL, &intact))) {
        ics_cli_setup_close(&su);
        ics_cli_setup_close(&intact);
        return ICS_EXIT_USAGE;
    }
    int nodes = ics_topo_nodes(su.t), per_node = ics_topo_gpus_per_node(su.t);
    int total = nodes * per_node, rc = ICS_EXIT_USAGE;
    GError *warning = NULL;
    GString *out = g_string_new(NULL);
    ics_coll_json *json = NULL;
    if (a->gpus > total || a->gpus_per_node > per_node) {
        fprintf(stderr, "icsim collective: %s: expected %s <= %d, got %d\n", a->system,
                a->gpus ? "--gpus" : "--gpus-per-node", a->gpus ? total : per_node,
                a->gpus ? a->gpus : a->gpus_per_node);
        goto done;
    }
    /* ranks: nodes in order, GPU index within a node; --gpus N: the first N of them */
    int g = a->gpus_per_node ? a->gpus_per_node : per_node;
    int nranks = a->gpus ? a->gpus : nodes * g;
    if ((a->op == ICS_COLL_BROADCAST || a->op == ICS_COLL_REDUCE) &&
        (a->root < 0 || a->root >= nranks)) {
        fprintf(stderr, "icsim collective: -r: expected a root in [0, %d), got %d\n", nranks,
                a->root);
        goto done;
    }
    if (!call_fits(a, nranks))
        goto done;
    ics_coll_tuning tuning;
    ics_coll_tuning_from_env(&tuning, su.hw, &warning);
    tuning.plan = a->plan_kind;
    tuning.gpus_per_thread = ics_cli_nccltests_gpus_per_thread(&a->nt);
    GError *why = NULL;
    if (!ics_net_backend_ready(a->backend, su.t, &why) ||
        (a->compare && !ics_net_backend_ready(a->backend, intact.t, &why))) {
        fprintf(stderr, "icsim collective: %s\n", why->message);
        g_error_free(why);
        goto done;
    }
    ics_cli_setup_comm(&su, g, nranks, a->backend, NULL);
    if (a->compare)
        ics_cli_setup_comm(&intact, g, nranks, a->backend, NULL);
    rc = run_sizes(a, &su, &tuning, &rows);
    if (rc == ICS_EXIT_OK && a->compare)
        rc = run_sizes(a, &intact, &tuning, &intact_rows);
    if (rc != ICS_EXIT_OK)
        goto done;
    header(a, su.t, su.gpus, nranks, a->min_b, a->max_b, warning ? warning->message : NULL, out);
    ics_report_coll_columns(a->style, out);
    if (a->json)
        json = ics_report_coll_json_new(ics_hw_name(su.hw), a->op, nranks, a->engine);
    double bw_sum = 0;
    int bw_count = 0;
    for (guint i = 0; i < rows.rows->len; i++) {
        const ics_coll_row *row = &g_array_index(rows.rows, ics_coll_row, i);
        const ics_coll_result *res = &g_array_index(rows.res, ics_coll_result, i);
        ics_report_coll_row(a->style, row, out);
        if (a->show_algo) /* a comment column after the row */
            ics_report_coll_algo_column(res, out);
        bw_sum += 2 * row->busbw_gbps; /* nccl-tests averages both columns */
        bw_count += 2;
        if (json)
            ics_report_coll_json_add(json, row, res);
    }
    ics_report_coll_trailer(bw_count ? bw_sum / bw_count : 0.0, out);
    if (a->hotspots)
        hotspots(a, &su, &rows, out, json);
    if (a->compare)
        ics_report_coll_compare((const ics_coll_row *)intact_rows.rows->data,
                                (const ics_coll_result *)intact_rows.res->data,
                                (const ics_coll_row *)rows.rows->data,
                                (const ics_coll_result *)rows.res->data, (int)rows.rows->len, out);
    if (json) {
        char *text = ics_report_coll_json_text(json);
        GError *err = NULL;
        if (!g_file_set_contents(a->json, text, -1, &err)) {
            fprintf(stderr, "icsim collective: --json: %s\n", err->message);
            g_error_free(err);
            rc = ICS_EXIT_FAIL;
        }
        g_free(text);
    }
    if (rc == ICS_EXIT_OK && a->plot &&
        !write_plot(a, ics_hw_name(su.hw), &rows, a->compare ? &intact_rows : NULL))
        rc = a->measured ? ICS_EXIT_USAGE : ICS_EXIT_FAIL;
    if (rc == ICS_EXIT_OK)
        ics_cli_emit(out);
done:
    ics_report_coll_json_free(json);
    g_string_free(out, TRUE);
    g_clear_error(&warning);
    sweep_rows_clear(&rows);
    sweep_rows_clear(&intact_rows);
    ics_cli_setup_close(&su);
    ics_cli_setup_close(&intact);
    return rc;
}

void ics_cli_coll_job_free(ics_cli_coll_job *a)
{
    if (!a)
        return;
    char *strs[] = {a->system, a->min_s,  a->max_s, a->dtype,     a->redop,      a->engine,
                    a->json,   a->format, a->plan,  a->gpus_text, a->nodes_text, a->gpn_text};
    for (size_t i = 0; i < G_N_ELEMENTS(strs); i++)
        g_free(strs[i]);
    ics_cli_nccltests_clear(&a->nt);
    g_strfreev(a->fails);
    g_free(a->plot);
    g_free(a->measured);
    g_free(a->hotspots_text);
    g_free(a);
}

/* What is not given: nccl-tests' defaults. */
static void defaults(coll_args *a)
{
    if (!a->dtype)
        a->dtype = g_strdup("float");
    if (!a->redop)
        a->redop = g_strdup("sum");
    if (!a->engine)
        a->engine = g_strdup("analytic");
    if (!a->format)
        a->format = g_strdup("classic");
    if (!a->plan)
        a->plan = g_strdup("auto");
    if (!a->min_s)
        a->min_s = g_strdup("32M");
    if (!a->max_s)
        a->max_s = g_strdup(a->min_s);
}

int ics_cli_collective_prepare(int argc, char **argv, bool help, ics_cli_coll_job **out)
{
    coll_args *a = g_new0(coll_args, 1);
    *out = a;
    a->factor = INT_MIN; /* not given: 2, unless -i */
    const GOptionEntry entries[] = {
        {"system", 's', 0, G_OPTION_ARG_FILENAME, &a->system, "hardware model (node or cluster)",
         "FILE"},
        {"gpus", 0, 0, G_OPTION_ARG_STRING, &a->gpus_text, "ranks: the first N GPUs (default: all)",
         "N"},
        {"nodes", 0, 0, G_OPTION_ARG_STRING, &a->nodes_text, "node count of a cluster", "N"},
        {"gpus-per-node", 0, 0, G_OPTION_ARG_STRING, &a->gpn_text,
         "ranks: the first G GPUs of every node", "G"},
        {"minbytes", 'b', 0, G_OPTION_ARG_STRING, &a->min_s, "smallest size (K, M, G suffixes)",
         "MIN"},
        {"maxbytes", 'e', 0, G_OPTION_ARG_STRING, &a->max_s, "largest size", "MAX"},
        {"stepfactor", 'f', 0, G_OPTION_ARG_INT, &a->factor, "size multiplier (default 2)",
         "FACTOR"},
        {"datatype", 'd', 0, G_OPTION_ARG_STRING, &a->dtype,
         "float (default), half, bfloat16, "
         "double, int8, int32, ...",
         "TYPE"},
        {"op", 'o', 0, G_OPTION_ARG_STRING, &a->redop, "sum (default), prod, max, min, avg", "OP"},
        {"root", 'r', 0, G_OPTION_ARG_INT, &a->root, "broadcast and reduce root (default 0)",
         "ROOT"},
        {"engine", 0, 0, G_OPTION_ARG_STRING, &a->engine,
         "analytic (default), packet or flow (SimGrid)", "ENGINE"},
        {"plan", 0, 0, G_OPTION_ARG_STRING, &a->plan,
         "auto (default: streams from 128 ranks or 65,536 Simple steps), chunks or streams",
         "PLAN"},
        {"json", 0, 0, G_OPTION_ARG_FILENAME, &a->json, "also write the rows as JSON", "FILE"},
        {"format", 0, 0, G_OPTION_ARG_STRING, &a->format,
         "nccl-tests layout: classic (default, up to 2.16) or 2.17", "STYLE"},
        {"show-algo", 0, 0, G_OPTION_ARG_NONE, &a->show_algo,
         "a comment column after each row: the algorithm, protocol and channels NCCL's tuner "
         "took",
         NULL},
        {"fail", 0, 0, G_OPTION_ARG_STRING_ARRAY, &a->fails,
         "take a part down or slow it (nvlink:gpu0-gpu1, nvswitch:nvsw2, nic:5:mlx5_3, "
         "switch:spine3, link:leaf2-spine0@0.5, lanes:gpu0-nvsw1=2; repeatable)",
         "SPEC"},
        {"compare", 0, 0, G_OPTION_ARG_NONE, &a->compare,
         "with --fail: also run the intact system and print what changed", NULL},
        {"plot", 0, 0, G_OPTION_ARG_FILENAME, &a->plot,
         "also draw bus bandwidth against size as SVG", "FILE.svg"},
        {"measured", 0, 0, G_OPTION_ARG_FILENAME, &a->measured,
         "with --plot: overlay a real nccl-tests log (its tables of this operation)", "LOG"},
        {"hotspots", 0, 0, G_OPTION_ARG_STRING, &a->hotspots_text,
         "after the table: the N busiest links of the largest size's call (utilization, bytes)",
         "N"},
        G_OPTION_ENTRY_NULL};
    GOptionEntry nccltests[ICS_CLI_NCCLTESTS_ENTRIES];
    ics_cli_nccltests_entries(&a->nt, nccltests);
    const GOptionEntry *const groups[] = {entries, nccltests, NULL};
    if (!ics_cli_parse_help("collective", "OP -s FILE -b MIN -e MAX",
                            "Simulate one nccl-tests sweep (OP: all_reduce all_gather "
                            "reduce_scatter alltoall broadcast reduce sendrecv).",
                            groups, help, &argc, &argv))
        return ICS_EXIT_USAGE;
    if (argc > 2)
        return usage_error("expected one OP, got another argument \"%s\"", argv[2]);
    if (argc != 2 || !ics_cli_coll_op(argv[1], &a->op))
        return usage_error("expected one OP (all_reduce, all_gather, reduce_scatter, alltoall, "
                           "broadcast, reduce, sendrecv), got \"%s\"",
                           argc == 2 ? argv[1] : "");
    if (!a->system)
        return usage_error("expected -s FILE%s", "");
    a->factor_given = a->factor != INT_MIN;
    if (!a->factor_given)
        a->factor = 2;
    if (a->compare && !a->fails)
        return usage_error("--compare needs --fail SPEC: what to compare with%s", "");
    if (a->measured && !a->plot)
        return usage_error("--measured overlays a log on --plot: expected --plot FILE.svg%s", "");
    defaults(a);
    int rc = check_sizes(a);
    if (rc == ICS_EXIT_OK)
        rc = check_words(a);
    if (rc == ICS_EXIT_OK)
        rc = check_ranks(a);
    if (rc == ICS_EXIT_OK && a->json && !ics_cli_output_ok("collective", "--json", a->json))
        rc = ICS_EXIT_USAGE;
    if (rc == ICS_EXIT_OK && a->plot && !ics_cli_output_ok("collective", "--plot", a->plot))
        rc = ICS_EXIT_USAGE;
    return rc;
}

int ics_cli_collective(int argc, char **argv)
{
    ics_cli_coll_job *a = NULL;
    int rc = ics_cli_collective_prepare(argc, argv, true, &a);
    if (rc == ICS_EXIT_OK)
        rc = run(a);
    ics_cli_coll_job_free(a);
    return rc;
}
