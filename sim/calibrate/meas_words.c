/* The nccl-tests vocabulary the measurement readers share (meas_internal.h): operation and
 * datatype names, the check's tolerance, the error domain, and tables. */
#include "calibrate/meas_internal.h"

#include <math.h>
#include <string.h>

/* By hand, not G_DEFINE_QUARK: clang-format would put spaces into the quark's name. */
GQuark ics_meas_error_quark(void)
{
    return g_quark_from_static_string("ics-meas-error-quark");
}

/* ---- vocabulary ------------------------------------------------------------------------------ */

/* nccl-tests' names, in ics_coll_op order. */
static const char *const op_names[ICS_COLL_OP_COUNT] = {
    [ICS_COLL_ALL_REDUCE] = "all_reduce",
    [ICS_COLL_ALL_GATHER] = "all_gather",
    [ICS_COLL_REDUCE_SCATTER] = "reduce_scatter",
    [ICS_COLL_ALLTOALL] = "alltoall",
    [ICS_COLL_BROADCAST] = "broadcast",
    [ICS_COLL_REDUCE] = "reduce",
    [ICS_COLL_SENDRECV] = "sendrecv",
};

/* Names compared without '_' and case: "allreduce", "AllReduce", "all_to_all". */
static const struct {
    const char *squashed;
    ics_coll_op op;
} op_aliases[] = {
    {"allreduce", ICS_COLL_ALL_REDUCE},
    {"allgather", ICS_COLL_ALL_GATHER},
    {"reducescatter", ICS_COLL_REDUCE_SCATTER},
    {"alltoall", ICS_COLL_ALLTOALL},
    {"broadcast", ICS_COLL_BROADCAST},
    {"bcast", ICS_COLL_BROADCAST},
    {"reduce", ICS_COLL_REDUCE},
    {"sendrecv", ICS_COLL_SENDRECV},
};

/* nccl-tests' other tests: named, but not something this module reads. */
static const char *const other_tests[] = {"gather", "scatter", "hypercube", "alltoallv"};

const char *ics_meas__op_name(ics_coll_op op)
{
    return (unsigned)op < ICS_COLL_OP_COUNT ? op_names[op] : "?";
}

const char *ics_meas__op_list(void)
{
    return "all_reduce, all_gather, reduce_scatter, alltoall, sendrecv, broadcast, reduce";
}

int ics_meas__op_parse(const char *word, ics_coll_op *op)
{
    if (!word)
        return 0;
    const char *base = strrchr(word, '/');
    base = base ? base + 1 : word;
    size_t n = strlen(base);
    if (n > 64)
        return 0;
    char sq[72];
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (base[i] != '_')
            sq[k++] = g_ascii_tolower(base[i]);
    sq[k] = '\0';
    /* binaries: all_reduce_perf, all_reduce_perf_mpi */
    if (k > 7 && strcmp(sq + k - 7, "perfmpi") == 0)
        sq[k -= 7] = '\0';
    else if (k > 4 && strcmp(sq + k - 4, "perf") == 0)
        sq[k -= 4] = '\0';
    for (size_t i = 0; i < G_N_ELEMENTS(op_aliases); i++)
        if (strcmp(sq, op_aliases[i].squashed) == 0) {
            *op = op_aliases[i].op;
            return 1;
        }
    for (size_t i = 0; i < G_N_ELEMENTS(other_tests); i++)
        if (strcmp(sq, other_tests[i]) == 0)
            return -1;
    return 0;
}

static const struct {
    const char *name;
    int bytes;
    double tolerance; /* nccl-tests' DeltaMaxValue: the deviation its check allowed per rank */
} dtypes[] = {
    {"int8", 1, 0},    {"uint8", 1, 0},    {"char", 1, 0},       {"int32", 4, 0},
    {"uint32", 4, 0},  {"int", 4, 0},      {"int64", 8, 0},      {"uint64", 8, 0},
    {"half", 2, 1e-2}, {"float", 4, 1e-5}, {"double", 8, 1e-12}, {"bfloat16", 2, 1e-2},
    {"f8e4m3", 1, 0},  {"f8e5m2", 1, 0},
};

int ics_meas__dtype_bytes(const char *dtype)
{
    for (size_t i = 0; dtype && i < G_N_ELEMENTS(dtypes); i++)
        if (strcmp(dtype, dtypes[i].name) == 0)
            return dtypes[i].bytes;
    return 0;
}

bool ics_meas__wrong(double value, bool deviation, const char *dtype, int nranks)
{
    if (value < 0)
        return false; /* N/A: not checked */
    if (!deviation)
        return value > 0;
    double tol = 0;
    for (size_t i = 0; dtype && i < G_N_ELEMENTS(dtypes); i++)
        if (strcmp(dtype, dtypes[i].name) == 0)
            tol = dtypes[i].tolerance;
    return value > tol * (nranks > 1 ? nranks - 1 : 1);
}

bool ics_meas_sample_ok(const ics_meas_sample *s)
{
    return s && s->time_us >= 0 && !s->wrong;
}

double ics_meas_busbw(const ics_meas_table *t, const ics_meas_row *row, const ics_meas_sample *s)
{
    if (s->time_us <= 0)
        return s->busbw_gbps;
    double algbw = (double)row->size_bytes / 1.0e9 / (s->time_us * 1.0e-6);
    return algbw * ics_coll_busbw_factor(t->op, t->nranks);
}

const char *ics_meas_env_lookup(const char *name, void *table)
{
    const ics_meas_table *tab = table;
    if (!tab || !tab->env || strcmp(name, "NCCL_COLLNET_ENABLE") == 0)
        return NULL;
    return g_environ_getenv(tab->env, name);
}

/* ---- tables ---------------------------------------------------------------------------------- */

ics_meas_table *ics_meas__table_new(const char *source)
{
    ics_meas_table *t = g_new0(ics_meas_table, 1);
    t->source = g_strdup(source);
    return t;
}

void ics_meas__table_free(ics_meas_table *t)
{
    if (!t)
        return;
    g_free(t->dtype);
    g_free(t->redop);
    g_free(t->gpu_name);
    g_strfreev(t->env);
    g_free(t->source);
    g_free(t->rows);
    g_free(t);
}

int ics_meas__nccl_version(const char *s)
{
    if (!s)
        return 0;
    if (*s == 'v' || *s == 'V')
        s++;
    int v[3] = {0, 0, 0}, n = 0;
    while (n < 3 && g_ascii_isdigit(*s)) {
        long x = 0;
        while (g_ascii_isdigit(*s) && x < 1000000)
            x = x * 10 + (*s++ - '0');
        v[n++] = (int)x;
        if (*s != '.')
            break;
        s++;
    }
    if (n == 1 && v[0] >= 20900 && v[0] < 30000) /* a code: 22606 */
        return v[0];
    if (n < 2 || v[0] != 2 || v[1] < 9 || v[1] > 99 || v[2] > 99)
        return 0;
    return v[0] * 10000 + v[1] * 100 + v[2];
}
