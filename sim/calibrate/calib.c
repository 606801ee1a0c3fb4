/* A calibration's set-up: the model loaded once per node count the measurements need, a
 * communicator per measured table, and every measured time as a point the fit can re-simulate
 * (calib_fit.c) with the model's parameters changed in place. */
#include "calibrate/calib_internal.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>

/* GPU families a log's device name and a model's GPU product are compared by. */
static const char *const families[] = {"GB300", "GB200", "GH200", "B300", "B200", "H200", "H100",
                                       "H800",  "A100",  "A800",  "V100", "P100", "L40",  NULL};

static const char *family_of(const char *name)
{
    for (int i = 0; name && families[i]; i++)
        if (strstr(name, families[i]))
            return families[i];
    return NULL;
}

static void table_fail(GError **error, const ics_meas_table *tab, const char *fmt, ...)
    G_GNUC_PRINTF(3, 4);

/* "FILE:LINE: message" (LINE: the table's header) or "FILE: message" for JSON tables. */
static void table_fail(GError **error, const ics_meas_table *tab, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *msg = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    if (tab->header_line > 0)
        g_set_error(error, ICS_ERROR, ICS_ERROR_INPUT, "%s:%d: %s", tab->source, tab->header_line,
                    msg);
    else
        g_set_error(error, ICS_ERROR, ICS_ERROR_INPUT, "%s: %s", tab->source, msg);
    g_free(msg);
}

/* The path rules a table's environment asks for, over the system's own settings (the model's
 * nccl_conf), as NCCL stacks them. */
static void paths_for(const ics_hw *hw, const ics_meas_table *tab, ics_topo_paths *paths)
{
    ics_coll_env_stack env = {ics_meas_env_lookup, (void *)tab, hw};
    ics_coll_paths_from(paths, ics_coll_env_stacked, &env, NULL);
}

/* The system a table of `nodes` nodes runs on, with the path rules of its environment (tab
 * NULL: the model's own): loaded once per node count and rules. The first one loaded tells the
 * model's nccl_conf, which no node count changes. */
static int system_for(ics_calib *c, int nodes, const ics_meas_table *tab, GError **error)
{
    ics_topo_paths paths;
    const calib_system *first = c->systems->len ? g_ptr_array_index(c->systems, 0) : NULL;
    if (first)
        paths_for(first->hw, tab, &paths);
    for (guint i = 0; first && i < c->systems->len; i++) {
        const calib_system *s = g_ptr_array_index(c->systems, i);
        if (s->nodes == nodes && memcmp(&s->paths, &paths, sizeof paths) == 0)
            return (int)i;
    }
    calib_system *s = g_new0(calib_system, 1);
    s->nodes = nodes;
    s->hw = ics_hw_load(c->model_path, c->is_cluster ? nodes : 0, error);
    if (!s->hw) {
        g_free(s);
        return -1;
    }
    if (!first)
        paths_for(s->hw, tab, &paths);
    s->paths = paths;
    s->t = ics_topo_new(s->hw);
    ics_topo_set_paths(s->t, &paths);
    if (c->backend && !ics_net_backend_ready(c->backend, s->t, error)) {
        ics_topo_free(s->t);
        ics_hw_free(s->hw);
        g_free(s);
        return -1;
    }
    g_ptr_array_add(c->systems, s);
    return (int)c->systems->len - 1;
}

/* Ranks per node of a table: as the log says, else every GPU of a node up to the rank count. */
static int ranks_per_node(const ics_calib *c, const ics_meas_table *tab)
{
    if (tab->ranks_per_node > 0)
        return tab->ranks_per_node;
    return MIN(tab->nranks, c->gpus_per_node);
}

static bool check_table(const ics_calib *c, const ics_meas_table *tab, int *nodes, int *gpn,
                        GError **error)
{
    *gpn = ranks_per_node(c, tab);
    *nodes = tab->nranks / *gpn;
    const char *log_gpu = family_of(tab->gpu_name), *model_gpu = family_of(c->gpu_product);
    if (log_gpu && model_gpu && strcmp(log_gpu, model_gpu) != 0) {
        table_fail(error, tab, "expected a log of %s GPUs (the model's %s), got %s", model_gpu,
                   c->gpu_product, tab->gpu_name);
        return false;
    }
    if (*gpn > c->gpus_per_node || *nodes * *gpn != tab->nranks) {
        table_fail(error, tab,
                   "expected at most %d ranks per node in whole nodes (the model's %d GPUs per "
                   "node), got %d ranks%s",
                   c->gpus_per_node, c->gpus_per_node, tab->nranks,
                   tab->ranks_per_node > 0 ? " as the log places them" : "");
        return false;
    }
    if (*nodes > 1 && !c->is_cluster) {
        table_fail(error, tab,
                   "expected at most %d ranks (%s is one node), got %d; give a cluster model",
                   c->gpus_per_node, c->model_path, tab->nranks);
        return false;
    }
    if (tab->dtype_bytes <= 0) {
        table_fail(error, tab, "expected a datatype nccl-tests prints, got \"%s\"",
                   tab->dtype ? tab->dtype : "");
        return false;
    }
    return true;
}

/* The table's communicator: node k's first gpn GPUs, nodes in order (nccl-tests' rank order
 * under a block-placing launcher). */
static bool add_table(ics_calib *c, const ics_meas_table *tab, GError **error)
{
    int nodes, gpn;
    if (!check_table(c, tab, &nodes, &gpn, error))
        return false;
    int sys = system_for(c, nodes, tab, error);
    if (sys < 0)
        return false;
    calib_system *s = g_ptr_array_index(c->systems, sys);
    int *gpus = g_new(int, tab->nranks);
    for (int r = 0; r < tab->nranks; r++)
        gpus[r] = ics_topo_gpu(s->t, r / gpn, r % gpn);
    /* NCCL's choices as the log's environment set them (NCCL_PROTO, NCCL_ALGO, ...), over the
     * model's nccl_conf */
    calib_table ct = {.sys = sys, .tab = tab, .tuning = c->tuning};
    ics_coll_env_stack env = {ics_meas_env_lookup, (void *)tab, s->hw};
    ics_coll_tuning_from(&ct.tuning, ics_coll_env_stacked, &env, NULL);
    ct.tuning.gpus_per_thread = tab->gpus_per_thread;
    ct.tuning.nccl_version = tab->nccl_version; /* the defaults of the NCCL the log ran */
    ct.comm = ics_comm_new(s->t, c->backend, gpus, tab->nranks, NULL);
    g_free(gpus);
    g_array_append_val(c->tables, ct);
    return true;
}

/* Every usable sample of the table as a point: the out-of-place time, else the in-place one. */
static void add_points(ics_calib *c, int ti, const ics_meas_table *tab)
{
    for (guint i = 0; i < tab->n_rows; i++) {
        const ics_meas_row *row = &tab->rows[i];
        const ics_meas_sample *s = ics_meas_sample_ok(&row->oop) ? &row->oop : &row->ip;
        if (!ics_meas_sample_ok(s) || s->time_us <= 0 || row->size_bytes == 0)
            continue;
        ics_calib_point p = {.table = ti,
                             .source = tab->source,
                             .line = row->line,
                             .op = tab->op,
                             .nranks = tab->nranks,
                             .size_bytes = row->size_bytes,
                             .measured_us = s->time_us};
        calib_req q = {.req = {.op = tab->op,
                               .size_bytes = row->size_bytes,
                               .dtype_bytes = tab->dtype_bytes,
                               .root = MAX(0, row->root)}};
        g_array_append_val(c->points, p);
        g_array_append_val(c->reqs, q);
    }
}

/* The latency regime (below 1 MiB) and the bandwidth regime (from 1 MiB) of each table weigh
 * alike, each size decade within a regime alike, and each table alike: w = 1 / sqrt(regimes x
 * decades of the regime x points in the decade), so a table's squared weights sum to 1. Per
 * decade alone, a sweep from 8 B gave its latency seven decades to the bandwidth's three, and
 * where the model's latency is wrong in kind (ALCF Polaris' all-gather over Slingshot) the fit
 * bought a few points below 1 MiB with 33 above (cta_gbps 12 -> 1.5 GB/s). */
static void weigh(ics_calib *c)
{
    for (guint t = 0; t < c->tables->len; t++) {
        /* by regime and decade: the decade of 1 MB .. 10 MB straddles the regimes' edge */
        int count[2][21] = {{0}}, decades[2] = {0};
        for (guint i = 0; i < c->points->len; i++) {
            ics_calib_point *p = &g_array_index(c->points, ics_calib_point, i);
            int r = p->size_bytes >= REGIME_BYTES;
            if (p->table == (int)t && count[r][ics_calib__decade(p->size_bytes)]++ == 0)
                decades[r]++;
        }
        int regimes = (decades[0] > 0) + (decades[1] > 0);
        for (guint i = 0; i < c->points->len; i++) {
            ics_calib_point *p = &g_array_index(c->points, ics_calib_point, i);
            int r = p->size_bytes >= REGIME_BYTES;
            if (p->table == (int)t)
                p->weight = 1.0 / sqrt((double)regimes * decades[r] *
                                       count[r][ics_calib__decade(p->size_bytes)]);
        }
    }
}

int ics_calib__decade(uint64_t size_bytes)
{
    int d = 0;
    for (uint64_t s = size_bytes; s >= 10 && d < 20; s /= 10)
        d++;
    return d;
}

static void model_facts(ics_calib *c)
{
    calib_system *s = g_ptr_array_index(c->systems, 0);
    const ics_hw_node *node = ics_hw_node_of(s->hw);
    c->gpus_per_node = node->gpus;
    c->gpu_product = node->gpu_type->product;
    c->is_cluster = ics_hw_fabric_of(s->hw) != NULL;
}

/* Fills params[] with the values in effect before any fit. */
static void params_init(ics_calib *c)
{
    const calib_table *t0 = &g_array_index(c->tables, calib_table, 0);
    const ics_hw *hw = ((calib_system *)g_ptr_array_index(c->systems, 0))->hw;
    for (int p = 0; p < ICS_CAL_COUNT; p++) {
        c->loaded[p] = c->now[p] = ics_hw_cal(hw, (ics_cal_param)p);
        double v = ics_comm_cal_value(t0->comm, (ics_cal_param)p);
        c->params[p] = (ics_calib_param){.before = v, .after = v, .rel_sigma = NAN};
        c->start_at[p] = NAN;
    }
}

/* ---- the memo ------------------------------------------------------------------------------
 * A point's simulated time depends on nothing but the parameters' values: the models and
 * communicators are rebuilt from the same files and only these values change, and a simulation
 * is deterministic. The fit comes back to the same values again and again: each probe of
 * find_candidates restores the model as loaded and simulates it again, every fold of the
 * cross-validation starts from the loaded values and probes the same ones, and the last full fit
 * repeats the first. So each set of values is simulated once and its times kept (per point: a
 * set may have been met with different points run). Exact: the same times, fewer runs. */
#define MEMO_MAX 4096 /* sets kept; past that the memo starts again (its memory stays bounded) */

typedef struct {
    double v[ICS_CAL_COUNT];
} calib_key;

typedef struct {
    double sim_us;
    bool ok, known;
} calib_memo_point;

static guint key_hash(gconstpointer k)
{
    const unsigned char *b = k;
    guint h = 2166136261u; /* FNV-1a over the values' bytes */
    for (size_t i = 0; i < sizeof(calib_key); i++)
        h = (h ^ b[i]) * 16777619u;
    return h;
}

static gboolean key_equal(gconstpointer a, gconstpointer b)
{
    return memcmp(a, b, sizeof(calib_key)) == 0;
}

/* The times met at the current values (one row per point), created empty if none yet. */
static calib_memo_point *memo_now(ics_calib *c)
{
    calib_key k;
    memset(&k, 0, sizeof k);
    for (int p = 0; p < ICS_CAL_COUNT; p++)
        k.v[p] = isnan(c->now[p]) ? NAN : c->now[p] + 0.0; /* one NaN, one zero */
    calib_memo_point *row = g_hash_table_lookup(c->memo, &k);
    if (row)
        return row;
    if (g_hash_table_size(c->memo) >= MEMO_MAX)
        g_hash_table_remove_all(c->memo);
    row = g_new0(calib_memo_point, c->points->len);
    g_hash_table_insert(c->memo, g_memdup2(&k, sizeof k), row);
    return row;
}

ics_calib *ics_calib_new(const char *model_path, const ics_meas *m, const ics_calib_opts *o,
                         GError **error)
{
    ics_calib *c = g_new0(ics_calib, 1);
    c->model_path = g_strdup(model_path);
    c->systems = g_ptr_array_new();
    c->tables = g_array_new(FALSE, FALSE, sizeof(calib_table));
    c->points = g_array_new(FALSE, FALSE, sizeof(ics_calib_point));
    c->reqs = g_array_new(FALSE, FALSE, sizeof(calib_req));
    c->backend = ics_net_backend(o && o->engine ? o->engine : "analytic");
    c->mask = o && o->params ? o->params : (1u << ICS_CAL_COUNT) - 1;
    c->max_iter = o && o->max_iter > 0 ? o->max_iter : 100;
    c->progress = o ? o->progress : NULL;
    c->progress_ctx = o ? o->progress_ctx : NULL;
    c->threads = (int)MAX(1, MIN(g_get_num_processors(), 64));
    c->memo = g_hash_table_new_full(key_hash, key_equal, g_free, g_free);
    c->tuning = (ics_coll_tuning){.nvls_enable = true};
    bool ok = c->backend != NULL;
    if (!ok)
        g_set_error(error, ICS_ERROR, ICS_ERROR_INPUT, "expected an engine: %s",
                    "analytic, packet or flow");
    /* the model as the user gave it, loaded once to learn its shape */
    ok = ok && system_for(c, 1, NULL, error) == 0;
    if (ok)
        model_facts(c);
    for (guint i = 0; ok && i < ics_meas_n_tables(m); i++) {
        const ics_meas_table *tab = ics_meas_table_at(m, i);
        ok = add_table(c, tab, error);
        if (ok)
            add_points(c, (int)i, tab);
    }
    if (ok && c->points->len == 0) {
        g_set_error(error, ICS_ERROR, ICS_ERROR_INPUT,
                    "%s: expected measured times to fit, got none (every row N/A or wrong)",
                    ics_meas_n_tables(m) ? ics_meas_table_at(m, 0)->source : "measurements");
        ok = false;
    }
    if (ok) {
        weigh(c);
        params_init(c);
        ok = ics_calib__simulate(c, true, error);
    }
    if (!ok) {
        ics_calib_free(c);
        return NULL;
    }
    return c;
}

void ics_calib_free(ics_calib *c)
{
    if (!c)
        return;
    for (guint i = 0; i < c->tables->len; i++)
        ics_comm_free(g_array_index(c->tables, calib_table, i).comm);
    for (guint i = 0; i < c->systems->len; i++) {
        calib_system *s = g_ptr_array_index(c->systems, i);
        ics_topo_free(s->t);
        ics_hw_free(s->hw);
        g_free(s);
    }
    g_ptr_array_free(c->systems, TRUE);
    g_array_free(c->tables, TRUE);
    g_array_free(c->points, TRUE);
    g_array_free(c->reqs, TRUE);
    g_hash_table_destroy(c->memo);
    g_free(c->model_path);
    g_free(c);
}

void ics_calib__set(ics_calib *c, ics_cal_param p, double value)
{
    c->now[p] = value;
    for (guint i = 0; i < c->systems->len; i++)
        ics_hw_cal_set(((calib_system *)g_ptr_array_index(c->systems, i))->hw, p, value);
}

/* One point, in a pool thread: each run builds its own engine and network, and the
 * communicators and models are only read, so points simulate in parallel. */
static void simulate_point(gpointer data, gpointer user)
{
    ics_calib *c = user;
    guint i = GPOINTER_TO_UINT(data) - 1;
    const ics_calib_point *p = &g_array_index(c->points, ics_calib_point, i);
    calib_req *q = &g_array_index(c->reqs, calib_req, i);
    const calib_table *t = &g_array_index(c->tables, calib_table, p->table);
    ics_coll_result r;
    q->ok = ics_comm_run(t->comm, &q->req, &t->tuning, &r);
    q->sim_us = q->ok ? ics_time_to_us(r.time_ps) : 0;
}

/* Largest first, so that no thread is left with the longest run at the end. */
static gint by_size_desc(gconstpointer a, gconstpointer b, gpointer user)
{
    const ics_calib *c = user;
    uint64_t x = g_array_index(c->points, ics_calib_point, GPOINTER_TO_UINT(a) - 1).size_bytes;
    uint64_t y = g_array_index(c->points, ics_calib_point, GPOINTER_TO_UINT(b) - 1).size_bytes;
    return (x < y) - (x > y);
}

/* Runs the points the memo does not know at the current values (a fit's passes skip the points
 * held out: nothing in the fit reads them) and files their times in it. */
static void run_points(ics_calib *c, calib_memo_point *row, bool held_out_too)
{
    GArray *run = g_array_new(FALSE, FALSE, sizeof(guint));
    for (guint i = 0; i < c->points->len; i++)
        if (!row[i].known &&
            (held_out_too || !g_array_index(c->points, ics_calib_point, i).held_out))
            g_array_append_val(run, i);
    /* no pool for a pass the memo answers whole; SimGrid runs in one thread only */
    bool flow = strcmp(c->backend->name, "flow") == 0;
    GThreadPool *pool = flow || run->len == 0
                            ? NULL
                            : g_thread_pool_new(simulate_point, c, c->threads, FALSE, NULL);
    if (pool)
        g_thread_pool_set_sort_function(pool, by_size_desc, c);
    for (guint k = 0; k < run->len; k++) {
        gpointer data = GUINT_TO_POINTER(g_array_index(run, guint, k) + 1);
        if (pool)
            g_thread_pool_push(pool, data, NULL);
        else
            simulate_point(data, c);
    }
    if (pool)
        g_thread_pool_free(pool, FALSE, TRUE); /* waits for every point */
    for (guint k = 0; k < run->len; k++) {
        guint i = g_array_index(run, guint, k);
        const calib_req *q = &g_array_index(c->reqs, calib_req, i);
        row[i] = (calib_memo_point){.sim_us = q->sim_us, .ok = q->ok, .known = true};
    }
    c->runs += (int)run->len;
    g_array_free(run, TRUE);
}

/* Point i's time at the current values into its after_us (and before_us); false if the model
 * could not run it. */
static bool take_point(ics_calib *c, const calib_memo_point *m, guint i, bool before,
                       GError **error)
{
    ics_calib_point *p = &g_array_index(c->points, ics_calib_point, i);
    if (!m->ok) {
        g_set_error(error, ICS_ERROR, ICS_ERROR_INPUT, "%s: the model cannot run %s on %d ranks",
                    p->source, ics_coll_op_name(p->op), p->nranks);
        return false;
    }
    if (m->sim_us >= ics_time_to_us(ICS_TIME_LIMIT)) { /* saturated: see comm.h */
        g_set_error(error, ICS_ERROR, ICS_ERROR_LIMIT,
                    "%s: the model's %s of %" PRIu64 " bytes on %d ranks ends past the "
                    "simulator's horizon of %s (docs/limits.md)",
                    p->source, ics_coll_op_name(p->op), p->size_bytes, p->nranks,
                    ICS_TIME_LIMIT_TEXT);
        return false;
    }
    if (before)
        p->before_us = m->sim_us;
    p->after_us = m->sim_us;
    return true;
}

static bool simulate(ics_calib *c, bool before, bool held_out_too, GError **error)
{
    c->sims++;
    calib_memo_point *row = memo_now(c);
    run_points(c, row, held_out_too);
    for (guint i = 0; i < c->points->len; i++)
        if (row[i].known && !take_point(c, &row[i], i, before, error))
            return false;
    if (c->progress)
        c->progress(c->progress_ctx, c->sims, (int)c->points->len);
    return true;
}

bool ics_calib__simulate(ics_calib *c, bool before, GError **error)
{
    return simulate(c, before, false, error);
}

bool ics_calib__simulate_held_out(ics_calib *c, GError **error)
{
    return simulate(c, false, true, error);
}

bool ics_calib_predict_with(ics_calib *c, const ics_calib *fitted, GError **error)
{
    for (int p = 0; p < ICS_CAL_COUNT; p++) {
        const ics_calib_param *fp = &fitted->params[p];
        ics_calib__set(c, (ics_cal_param)p, fp->determined ? fp->after : c->loaded[p]);
    }
    return ics_calib__simulate(c, false, error);
}

int ics_calib_n_points(const ics_calib *c)
{
    return (int)c->points->len;
}

const ics_calib_point *ics_calib_point_at(const ics_calib *c, int i)
{
    return &g_array_index(c->points, ics_calib_point, i);
}

const ics_calib_param *ics_calib_param_of(const ics_calib *c, ics_cal_param p)
{
    return &c->params[p];
}

const char *ics_calib_model_name(const ics_calib *c)
{
    return ics_hw_name(((calib_system *)g_ptr_array_index(c->systems, 0))->hw);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double ics_calib__median(GArray *v)
{
    if (v->len == 0)
        return NAN;
    qsort(v->data, v->len, sizeof(double), cmp_double);
    const double *d = (const double *)v->data;
    return v->len % 2 ? d[v->len / 2] : (d[v->len / 2 - 1] + d[v->len / 2]) / 2;
}

double ics_calib_median_error(const ics_calib *c, uint64_t lo, uint64_t hi, bool after)
{
    GArray *e = g_array_new(FALSE, FALSE, sizeof(double));
    for (guint i = 0; i < c->points->len; i++) {
        const ics_calib_point *p = &g_array_index(c->points, ics_calib_point, i);
        if (p->held_out || p->size_bytes < lo || p->size_bytes >= hi)
            continue;
        double x = fabs((after ? p->after_us : p->before_us) / p->measured_us - 1);
        g_array_append_val(e, x);
    }
    double m = ics_calib__median(e);
    g_array_free(e, TRUE);
    return m;
}
