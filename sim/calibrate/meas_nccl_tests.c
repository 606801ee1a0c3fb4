/* nccl-tests stdout into tables: one pass over the lines with two pieces of state, what the log
 * says about the current run (command line, "# nThread" header, rank lines, NCCL INFO) and the
 * table being read (its header's columns). Everything else is noise and skipped. Invariant: a
 * table leaves only with its operation and rank count settled and every row checked token by
 * token; the first error stops the read. */
#include "calibrate/meas_internal.h"

#include <math.h>
#include <stdarg.h>
#include <string.h>

#define MAX_COLS   64  /* columns of a header; nccl-tests prints at most 22 */
#define MAX_TOKENS 128 /* tokens looked at on a line; more are only counted */

typedef enum {
    COL_OTHER, /* printed, not read: i_min, i_p99, columns of forks */
    COL_SIZE,
    COL_COUNT,
    COL_TYPE,
    COL_REDOP,
    COL_ROOT,
    COL_TIME,
    COL_ALGBW,
    COL_BUSBW,
    COL_WRONG,
    COL_REST /* "timestamp": the rest of the line */
} col_kind;

typedef struct {
    char *name; /* as the header prints it */
    col_kind kind;
    int half; /* 0: out-of-place, 1: in-place (time, algbw, busbw, #wrong) */
} column;

typedef struct {
    char *s; /* NUL-terminated, inside the work copy */
    int col; /* 1-based byte column in the line as read */
} token;

/* What the log says about one nccl-tests run. Reset at the next run's first line once a table
 * was read under it. */
typedef struct {
    bool used;
    int op_kind; /* 0: not named; 1: op; -1: a test this module does not read */
    ics_coll_op op;
    char *op_word; /* as the log named it */
    int op_line;
    const char *op_from;
    bool cmd;                                     /* a command line was seen */
    bool launcher;                                /* ... with mpirun, srun, aprun, ... */
    int launch_np, launch_per_node, launch_nodes; /* 0: not given */
    int arg_g, arg_t;                             /* -g, -t; 0: not given */
    int hdr_threads, hdr_gpus;                    /* "# nThread 1 nGpus 8"; 0: none */
    GHashTable *rank_host;                        /* rank -> host index + 1 */
    GHashTable *host_ids;                         /* host name -> index + 1 */
    int n_hosts;
    int max_rank;
    bool ranks_cut; /* a process's rank lines ended in "..." (nccl-tests' 2 KiB limit) */
    char *gpu_name;
    int nccl_nranks;  /* "NCCL INFO comm 0x.. rank 0 nranks 16 ..."; 0: none */
    int nccl_version; /* "NCCL INFO NCCL version 2.18.3+cuda12.2", "nccl-library=21803"; 0 */
    GPtrArray *env;   /* "NAME=VALUE" of NCCL's "NAME set by environment to VALUE" lines */
} run_info;

typedef struct {
    const char *name;
    const ics_coll_op *given;
    guint rows_left;
    GPtrArray *out;
    GError *error;
    int line;        /* 1-based number of the line being read */
    int prefix_cols; /* bytes of an "[1,0]<stdout>:" or srun "0: " tag stripped off */
    const char *raw; /* the line (tag stripped), NUL-terminated */
    run_info run;
    /* the open table */
    bool open;
    int hdr_line;
    column cols[MAX_COLS];
    int ncols;
    bool rest;
    bool has_redop, has_root, deviation;
    double time_scale;
    int table_rows;
    char *hdr_desc; /* "size count type ..." for messages */
    /* the series being filled: one datatype and reduction of the open table */
    ics_meas_table *cur;
    GArray *rows;
    bool cur_has_root_set; /* a row printed a root >= 0 */
    int next_index;
    int orphan_line; /* the first row-like line outside any table; 0: none */
    int n_lines;
    bool at_eof;
} reader;

/* ---- errors ---------------------------------------------------------------------------------- */

static bool failed(const reader *r)
{
    return r->error != NULL;
}

static void fail(reader *r, int line, int col, const char *fmt, ...) G_GNUC_PRINTF(4, 5);
static void fail(reader *r, int line, int col, const char *fmt, ...)
{
    if (r->error)
        return;
    va_list ap;
    va_start(ap, fmt);
    char *what = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    if (line > 0 && col > 0)
        r->error = g_error_new(ICS_MEAS_ERROR, ICS_MEAS_ERROR_INPUT, "%s:%d:%d: %s", r->name, line,
                               col, what);
    else if (line > 0)
        r->error =
            g_error_new(ICS_MEAS_ERROR, ICS_MEAS_ERROR_INPUT, "%s:%d: %s", r->name, line, what);
    else
        r->error = g_error_new(ICS_MEAS_ERROR, ICS_MEAS_ERROR_INPUT, "%s: %s", r->name, what);
    g_free(what);
}

/* A token for "got ...": quoted, escaped, cut at 40 bytes (transfer full). */
static char *describe(const char *s)
{
    char *cut = g_strndup(s, 40);
    char *esc = g_strescape(cut, NULL);
    char *out = g_strdup_printf("\"%s%s\"", esc, strlen(s) > 40 ? "..." : "");
    g_free(esc);
    g_free(cut);
    return out;
}

/* ---- numbers --------------------------------------------------------------------------------- */

static bool parse_u64(const char *s, uint64_t *out)
{
    guint64 v;
    if (!g_ascii_isdigit(s[0]) || !g_ascii_string_to_unsigned(s, 10, 0, G_MAXUINT64, &v, NULL))
        return false;
    *out = v;
    return true;
}

/* A positive int up to ICS_MEAS_MAX_RANKS, as launch flags and headers give them. */
static int parse_count(const char *s)
{
    guint64 v;
    if (!s || !g_ascii_isdigit(s[0]) ||
        !g_ascii_string_to_unsigned(s, 10, 1, ICS_MEAS_MAX_RANKS, &v, NULL))
        return 0;
    return (int)v;
}

/* A finite number >= 0 printed by nccl-tests ("13.67", "1.2e+07", "0e+00"); "N/A" gives -1
 * where allowed. */
static bool parse_num(const char *s, bool na_ok, double *out)
{
    if (na_ok && strcmp(s, "N/A") == 0) {
        *out = -1;
        return true;
    }
    if (!(g_ascii_isdigit(s[0]) || (s[0] == '.' && g_ascii_isdigit(s[1])) ||
          (s[0] == '-' && (g_ascii_isdigit(s[1]) || s[1] == '.'))))
        return false; /* no "nan", "inf", "0x1p3", "+1" */
    if (s[strspn(s, "0123456789.eE+-")] != '\0')
        return false; /* "0x10" */
    char *end = NULL;
    double v = g_ascii_strtod(s, &end);
    if (!end || *end != '\0' || !isfinite(v) || v < 0)
        return false;
    *out = v + 0.0; /* -0.00 reads as 0 */
    return true;
}

/* ---- tokens ---------------------------------------------------------------------------------- */

/* Splits `work` (a copy of the line) at spaces and tabs; returns how many tokens the line has,
 * storing the first MAX_TOKENS. */
static int tokenize(char *work, int col0, token *tok)
{
    int n = 0;
    char *p = work;
    for (;;) {
        while (*p == ' ' || *p == '\t' || *p == '\v' || *p == '\f')
            p++;
        if (!*p)
            break;
        char *start = p;
        while (*p && *p != ' ' && *p != '\t' && *p != '\v' && *p != '\f')
            p++;
        if (n < MAX_TOKENS)
            tok[n] = (token){.s = start, .col = col0 + (int)(start - work) + 1};
        n++;
        if (*p)
            *p++ = '\0';
    }
    return n;
}

static bool tok_is(const token *tok, int ntok, int i, const char *word)
{
    return i < ntok && i < MAX_TOKENS && strcmp(tok[i].s, word) == 0;
}

/* Open MPI's --tag-output "[1,0]<stdout>:" and srun -l's "  3: ": the bytes to skip. */
static size_t tag_length(const char *s)
{
    const char *p = s;
    if (*p == '[') {
        p++;
        if (!g_ascii_isdigit(*p))
            return 0;
        while (g_ascii_isdigit(*p))
            p++;
        if (*p++ != ',' || !g_ascii_isdigit(*p))
            return 0;
        while (g_ascii_isdigit(*p))
            p++;
        if (strncmp(p, "]<stdout>:", 10) != 0 && strncmp(p, "]<stderr>:", 10) != 0)
            return 0;
        return (size_t)(p + 10 - s);
    }
    while (*p == ' ')
        p++;
    if (!g_ascii_isdigit(*p))
        return 0;
    while (g_ascii_isdigit(*p))
        p++;
    return p[0] == ':' && p[1] == ' ' ? (size_t)(p + 2 - s) : 0;
}

/* ---- the run --------------------------------------------------------------------------------- */

static void run_clear(run_info *run)
{
    g_free(run->op_word);
    g_free(run->gpu_name);
    if (run->rank_host)
        g_hash_table_destroy(run->rank_host);
    if (run->host_ids)
        g_hash_table_destroy(run->host_ids);
    if (run->env)
        g_ptr_array_free(run->env, TRUE);
    memset(run, 0, sizeof *run);
    run->max_rank = -1;
}

static void name_op(reader *r, const char *word, const char *from)
{
    ics_coll_op op = ICS_COLL_ALL_REDUCE;
    int kind = ics_meas__op_parse(word, &op);
    if (kind == 1 && r->run.op_kind == 1 && r->run.op == op)
        return; /* named again ("Collective test starting" after the command): keep the first */
    g_free(r->run.op_word);
    r->run.op_word = g_strdup(word);
    r->run.op_kind = kind == 1 ? 1 : -1;
    r->run.op = op;
    r->run.op_line = r->line;
    r->run.op_from = from;
}

static void close_table(reader *r);

/* A line that starts a run (command line, "# nccl-tests version", "# nThread", rank lines):
 * the table before ends, and a run that gave a table gives way to a new one. */
static void run_start(reader *r)
{
    close_table(r);
    if (r->run.used)
        run_clear(&r->run);
}

/* "# nThread 1 nGpus 8 minBytes 8 maxBytes ..." */
static void header_counts(reader *r, const token *w, int nw)
{
    for (int i = 0; i + 1 < nw && i + 1 < MAX_TOKENS; i++) {
        if (strcmp(w[i].s, "nThread") == 0)
            r->run.hdr_threads = parse_count(w[i + 1].s);
        else if (strcmp(w[i].s, "nGpus") == 0)
            r->run.hdr_gpus = parse_count(w[i + 1].s);
    }
}

/* "#  Rank  3 Group  0 Pid  4242 on   node-a device  3 [0000:3b:00] NVIDIA H100 80GB HBM3",
 * also the forms before Group ("#   Rank  3 Pid ...") and before Pid ("#   Rank  3 on ..."). */
static void rank_line(reader *r, const token *w, int nw)
{
    run_start(r);
    int64_t rank;
    if (nw < 2 || !g_ascii_string_to_signed(w[1].s, 10, 0, G_MAXINT64, &rank, NULL))
        return; /* not a rank line after all */
    if (rank >= ICS_MEAS_MAX_RANKS) {
        char *got = describe(w[1].s);
        fail(r, r->line, w[1].col, "rank: expected a rank below %d, got %s", ICS_MEAS_MAX_RANKS,
             got);
        g_free(got);
        return;
    }
    const char *host = "?";
    int dev = -1;
    for (int i = 2; i + 1 < nw && i + 1 < MAX_TOKENS; i++) {
        if (strcmp(w[i].s, "on") == 0)
            host = w[i + 1].s;
        if (strcmp(w[i].s, "device") == 0) {
            dev = i + 1;
            break;
        }
    }
    run_info *run = &r->run;
    if (!run->rank_host) {
        run->rank_host = g_hash_table_new(g_direct_hash, g_direct_equal);
        run->host_ids = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    }
    int hid = GPOINTER_TO_INT(g_hash_table_lookup(run->host_ids, host));
    if (hid == 0) {
        hid = ++run->n_hosts;
        g_hash_table_insert(run->host_ids, g_strdup(host), GINT_TO_POINTER(hid));
    }
    g_hash_table_insert(run->rank_host, GINT_TO_POINTER((int)rank), GINT_TO_POINTER(hid));
    if (rank > run->max_rank)
        run->max_rank = (int)rank;
    size_t rl = strlen(r->raw);
    if (rl >= 3 && strcmp(r->raw + rl - 3, "...") == 0)
        run->ranks_cut = true;
    /* The device's name: the rest of the line after "device N [bus]". */
    if (!run->gpu_name && dev > 0 && dev < nw && dev < MAX_TOKENS) {
        int name_tok = dev + 1;
        if (name_tok < nw && name_tok < MAX_TOKENS && w[name_tok].s[0] == '[')
            name_tok++;
        if (name_tok < nw && name_tok < MAX_TOKENS) {
            char *name = g_strstrip(g_strdup(r->raw + (w[name_tok].col - 1 - r->prefix_cols)));
            size_t nl = strlen(name);
            if (nl >= 3 && strcmp(name + nl - 3, "...") == 0)
                name[nl - 3] = '\0';
            g_strstrip(name);
            if (name[0])
                run->gpu_name = name;
            else
                g_free(name);
        }
    }
}

static bool is_launcher(const char *tok)
{
    static const char *const names[] = {"mpirun",  "mpiexec", "mpiexec.hydra", "orterun",
                                        "prterun", "srun",    "aprun",         "jsrun"};
    const char *base = strrchr(tok, '/');
    base = base ? base + 1 : tok;
    for (size_t i = 0; i < G_N_ELEMENTS(names); i++)
        if (strcmp(base, names[i]) == 0)
            return true;
    return false;
}

/* The value of a flag among toks[i]: "-n 16", "--ntasks=16", "-n16" (short flags only). */
static const char *flag_value(const token *t, int n, int *i, const char *flag)
{
    const char *s = t[*i].s;
    size_t fl = strlen(flag);
    if (strcmp(s, flag) == 0)
        return *i + 1 < n ? t[++*i].s : NULL;
    if (strncmp(s, flag, fl) == 0 && s[fl] == '=')
        return s + fl + 1;
    if (flag[1] != '-' && fl == 2 && strncmp(s, flag, 2) == 0 && g_ascii_isdigit(s[2]))
        return s + 2;
    return NULL;
}

static void launch_flags(run_info *run, const token *t, int from, int to)
{
    const char *base = strrchr(t[from].s, '/');
    base = base ? base + 1 : t[from].s;
    bool slurm = strcmp(base, "srun") == 0, aprun = strcmp(base, "aprun") == 0;
    if (strcmp(base, "jsrun") == 0)
        return; /* -n counts resource sets, not processes: the count stays unknown */
    for (int i = from + 1; i < to; i++) {
        const char *v;
        if ((v = flag_value(t, to, &i, "-np")) || (v = flag_value(t, to, &i, "--np")) ||
            (v = flag_value(t, to, &i, "-n")) || (v = flag_value(t, to, &i, "--n")) ||
            (v = flag_value(t, to, &i, "--ntasks")))
            run->launch_np = parse_count(v);
        else if ((v = flag_value(t, to, &i, "-N")))
            *(slurm ? &run->launch_nodes : &run->launch_per_node) = parse_count(v);
        else if ((v = flag_value(t, to, &i, "--nodes")))
            run->launch_nodes = parse_count(v);
        else if ((v = flag_value(t, to, &i, "--ntasks-per-node")) ||
                 (v = flag_value(t, to, &i, "-npernode")) ||
                 (v = flag_value(t, to, &i, "--npernode")) || (v = flag_value(t, to, &i, "-ppn")) ||
                 (v = flag_value(t, to, &i, "--ppn")) || (v = flag_value(t, to, &i, "-perhost")))
            run->launch_per_node = parse_count(v);
        else if (!slurm && !aprun && (v = flag_value(t, to, &i, "--map-by"))) {
            /* ppr:4:node[:...] */
            if (strncmp(v, "ppr:", 4) == 0) {
                char **parts = g_strsplit(v + 4, ":", 3);
                if (parts[0] && parts[1] && strcmp(parts[1], "node") == 0)
                    run->launch_per_node = parse_count(parts[0]);
                g_strfreev(parts);
            }
        }
    }
}

/* Whether the token names an nccl-tests binary: ".../all_reduce_perf", "reduce_perf_mpi". */
static bool is_binary(const char *tok)
{
    size_t n = strlen(tok);
    bool perf = (n > 5 && strcmp(tok + n - 5, "_perf") == 0) ||
                (n > 9 && strcmp(tok + n - 9, "_perf_mpi") == 0);
    ics_coll_op op;
    return perf && ics_meas__op_parse(tok, &op) != 0;
}

/* A line naming an nccl-tests binary: a command line ("$ mpirun -np 16 ./all_reduce_perf -g 1")
 * or a mention of it. True if it was one. */
static bool command_line(reader *r, const token *t, int nt)
{
    int n = nt < MAX_TOKENS ? nt : MAX_TOKENS, b = -1;
    for (int i = 0; i < n && b < 0; i++)
        if (is_binary(t[i].s))
            b = i;
    if (b < 0)
        return false;
    run_start(r);
    run_info *run = &r->run;
    bool args = b + 1 < n && t[b + 1].s[0] == '-';
    int launcher = -1;
    for (int i = 0; i < b && launcher < 0; i++)
        if (is_launcher(t[i].s))
            launcher = i;
    name_op(r, t[b].s, args || launcher >= 0 ? "command line" : "binary name");
    run->cmd = true;
    run->launcher = launcher >= 0;
    if (launcher >= 0)
        launch_flags(run, t, launcher, b);
    for (int i = b + 1; i < n; i++) {
        const char *v;
        if ((v = flag_value(t, n, &i, "-g")) || (v = flag_value(t, n, &i, "--ngpus")))
            run->arg_g = parse_count(v);
        else if ((v = flag_value(t, n, &i, "-t")) || (v = flag_value(t, n, &i, "--nthreads")))
            run->arg_t = parse_count(v);
    }
    return true;
}

/* NCCL reads a few hundred variables: more distinct names than this in one run are not NCCL's
 * (and would make each line's search long on a hostile log). */
#define MAX_ENV 512

/* "NCCL INFO NCCL_NET_GDR_LEVEL set by environment to PHB" (NCCL's ncclGetEnv and its paths
 * code print strings as they are; ncclLoadParam prints integers as "to 4."): the run's value of
 * the variable, the last one printed, an integer's closing period dropped. */
static void env_line(reader *r, const token *t, int n)
{
    if (n < 6 || !g_str_has_prefix(t[0].s, "NCCL_") || strcmp(t[1].s, "set") != 0 ||
        strcmp(t[2].s, "by") != 0 || strcmp(t[3].s, "environment") != 0 ||
        strcmp(t[4].s, "to") != 0)
        return;
    if (!r->run.env)
        r->run.env = g_ptr_array_new_with_free_func(g_free);
    size_t len = strlen(t[0].s);
    for (guint i = 0; i < r->run.env->len; i++) {
        const char *kv = g_ptr_array_index(r->run.env, i);
        if (strncmp(kv, t[0].s, len) == 0 && kv[len] == '=') {
            g_ptr_array_remove_index(r->run.env, i);
            break;
        }
    }
    if (r->run.env->len >= MAX_ENV)
        return;
    char *value = g_strdup(t[5].s);
    size_t vl = strlen(value);
    char *end = NULL;
    if (vl > 1 && value[vl - 1] == '.') {
        (void)g_ascii_strtoll(value, &end, 10);
        if (end == value + vl - 1) /* all of it an integer but the period */
            value[vl - 1] = 0;
    }
    g_ptr_array_add(r->run.env, g_strdup_printf("%s=%s", t[0].s, value));
    g_free(value);
}

/* "host:1234:1234 [0] NCCL INFO comm 0x5f1 rank 0 nranks 16 cudaDev 0 ... - Init COMPLETE" */
static bool nccl_line(reader *r, const token *t, int nt)
{
    int n = nt < MAX_TOKENS ? nt : MAX_TOKENS, at = -1;
    for (int i = 0; i + 1 < n && i < 4 && at < 0; i++)
        if (strcmp(t[i].s, "NCCL") == 0 &&
            (strcmp(t[i + 1].s, "INFO") == 0 || strcmp(t[i + 1].s, "WARN") == 0 ||
             strcmp(t[i + 1].s, "TRACE") == 0))
            at = i;
    if (at < 0)
        return false;
    env_line(r, t + at + 2, n - at - 2);
    if (at + 4 < n && strcmp(t[at + 2].s, "NCCL") == 0 && strcmp(t[at + 3].s, "version") == 0)
        r->run.nccl_version = ics_meas__nccl_version(t[at + 4].s);
    for (int i = at + 2; i + 1 < n; i++)
        if (strcmp(t[i].s, "nranks") == 0) {
            int v = parse_count(t[i + 1].s);
            if (v > r->run.nccl_nranks)
                r->run.nccl_nranks = v;
        }
    return true;
}

/* ---- operation and rank count ---------------------------------------------------------------- */

#define BIT(op) (1u << (op))
#define GATHER_LIKE                                                                                \
    (BIT(ICS_COLL_ALL_GATHER) | BIT(ICS_COLL_REDUCE_SCATTER) | BIT(ICS_COLL_ALLTOALL))
#define ROOTED  (BIT(ICS_COLL_BROADCAST) | BIT(ICS_COLL_REDUCE))
#define ALL_OPS ((1u << ICS_COLL_OP_COUNT) - 1)

static double busbw_factor(ics_coll_op op, int n)
{
    switch (op) {
    case ICS_COLL_ALL_REDUCE:
        return 2.0 * (n - 1) / n;
    case ICS_COLL_ALL_GATHER:
    case ICS_COLL_REDUCE_SCATTER:
    case ICS_COLL_ALLTOALL:
        return (double)(n - 1) / n;
    default:
        return 1.0;
    }
}

/* What a value printed by nccl-tests' 6-wide format can be off by: half its last digit. */
static double half_ulp(double v)
{
    return v < 999.995 ? 0.005 : v < 9999.95 ? 0.05 : 0.5;
}

/* The row whose bandwidths say most about busbw / algbw (the largest algbw), or NULL. */
static const ics_meas_row *ratio_row(const GArray *rows)
{
    const ics_meas_row *best = NULL;
    for (guint i = 0; i < rows->len; i++) {
        const ics_meas_row *row = &g_array_index(rows, ics_meas_row, i);
        if (row->oop.algbw_gbps >= 0.995 && row->oop.busbw_gbps >= 0 &&
            (!best || row->oop.algbw_gbps > best->oop.algbw_gbps))
            best = row;
    }
    return best;
}

/* Rank counts that make the row's busbw / algbw the operation's factor, up to the rounding of
 * the printed figures: the count if exactly one fits (n_fixed > 0: whether that one fits), 0 if
 * none, -1 if several. */
static int ratio_ranks(ics_coll_op op, const ics_meas_row *row, int n_fixed)
{
    double alg = row->oop.algbw_gbps, bus = row->oop.busbw_gbps, q = bus / alg;
    double tol = (half_ulp(bus) + q * half_ulp(alg)) / alg + 1e-9;
    if (n_fixed > 0)
        return fabs(busbw_factor(op, n_fixed) - q) <= tol ? n_fixed : 0;
    double guess;
    if (op == ICS_COLL_ALL_REDUCE)
        guess = q < 2 ? 2 / (2 - q) : ICS_MEAS_MAX_RANKS;
    else if (GATHER_LIKE & BIT(op))
        guess = q < 1 ? 1 / (1 - q) : ICS_MEAS_MAX_RANKS;
    else
        return fabs(1 - q) <= tol ? -1 : 0; /* any count fits */
    int found = 0, fits = 0;
    long g = lround(fmin(guess, ICS_MEAS_MAX_RANKS));
    for (long n = g - 2; n <= g + 2; n++)
        if (n >= 1 && n <= ICS_MEAS_MAX_RANKS && fabs(busbw_factor(op, (int)n) - q) <= tol) {
            found = (int)n;
            fits++;
        }
    return fits == 1 ? found : fits == 0 ? 0 : -1;
}

/* size / (count x dtype bytes), the same in every row with a count: nranks for all_gather,
 * reduce_scatter and alltoall, 1 for the others. 0 if the rows do not say. */
static uint64_t size_ratio(const GArray *rows, int dtype_bytes)
{
    uint64_t k = 0;
    for (guint i = 0; dtype_bytes > 0 && i < rows->len; i++) {
        const ics_meas_row *row = &g_array_index(rows, ics_meas_row, i);
        if (row->count == 0)
            continue;
        uint64_t elems = row->size_bytes / (uint64_t)dtype_bytes;
        if (row->size_bytes % (uint64_t)dtype_bytes != 0 || elems % row->count != 0)
            return 0;
        uint64_t ki = elems / row->count;
        if (k && ki != k)
            return 0;
        k = ki;
    }
    return k;
}

static void op_names_of(unsigned set, GString *out)
{
    for (int op = 0; op < ICS_COLL_OP_COUNT; op++)
        if (set & BIT(op))
            g_string_append_printf(out, "%s%s", out->len ? " and " : "",
                                   ics_meas__op_name((ics_coll_op)op));
}

/* The operation of a series whose log names none, from its columns and figures. */
static bool infer_op(reader *r, const ics_meas_table *t, int n_known, ics_coll_op *op)
{
    unsigned c = ALL_OPS;
    if (!r->has_redop) /* before 2022: broadcast printed root only, all_gather neither */
        c &= r->has_root ? BIT(ICS_COLL_BROADCAST) : BIT(ICS_COLL_ALL_GATHER);
    else if (strcmp(t->redop, "none") == 0)
        c &= BIT(ICS_COLL_ALL_GATHER) | BIT(ICS_COLL_ALLTOALL) | BIT(ICS_COLL_BROADCAST);
    else /* alltoall printed the reduction before it printed root */
        c &= BIT(ICS_COLL_ALL_REDUCE) | BIT(ICS_COLL_REDUCE_SCATTER) | BIT(ICS_COLL_REDUCE) |
             BIT(ICS_COLL_SENDRECV) | (r->has_root ? 0 : BIT(ICS_COLL_ALLTOALL));
    if (r->has_root)
        c &= r->cur_has_root_set ? ROOTED : ~ROOTED;
    uint64_t k = size_ratio(r->rows, t->dtype_bytes);
    if (k == 1 && n_known != 1)
        c &= ~GATHER_LIKE;
    else if (k > 1)
        c &= GATHER_LIKE;
    int n_fixed = k > 1 && k <= ICS_MEAS_MAX_RANKS ? (int)k : n_known;
    const ics_meas_row *row = ratio_row(r->rows);
    for (int o = 0; row && o < ICS_COLL_OP_COUNT; o++)
        if ((c & BIT(o)) && ratio_ranks((ics_coll_op)o, row, n_fixed) == 0)
            c &= ~BIT(o);
    for (int o = 0; o < ICS_COLL_OP_COUNT; o++)
        if (c == BIT(o)) {
            *op = (ics_coll_op)o;
            return true;
        }
    GString *which = g_string_new(NULL);
    op_names_of(c, which);
    if (c == 0)
        fail(r, r->hdr_line, 0,
             "expected the columns of an nccl-tests operation (%s), got a table that fits none "
             "(redop %s, busbw/algbw %s): name the operation",
             ics_meas__op_list(), t->redop ? t->redop : "not printed",
             row ? "as printed" : "not printed");
    else
        fail(r, r->hdr_line, 0,
             "expected the log to name the operation (a command line with its *_perf binary, or "
             "a \"# Collective test starting:\" line), got a table that fits both %s: name the "
             "operation",
             which->str);
    g_string_free(which, TRUE);
    return false;
}

/* Ranks one process drives: nThread x nGpus from the header, else -t x -g; 0 if out of range. */
static int ranks_per_process(const run_info *run)
{
    int64_t per = run->hdr_threads
                      ? (int64_t)run->hdr_threads * run->hdr_gpus
                      : (int64_t)(run->arg_t ? run->arg_t : 1) * (run->arg_g ? run->arg_g : 1);
    return per >= 1 && per <= ICS_MEAS_MAX_RANKS ? (int)per : 0;
}

/* The rank count from what the log says, before the operation is known; 0 if it says nothing. */
static int ranks_from_log(reader *r, const char **from)
{
    const run_info *run = &r->run;
    int lines = 0;
    if (run->rank_host) {
        int distinct = (int)g_hash_table_size(run->rank_host);
        lines = distinct > run->max_rank + 1 ? distinct : run->max_rank + 1;
    }
    int np = !run->cmd ? 0 : !run->launcher ? 1 : run->launch_np;
    if (!np && run->launch_nodes && run->launch_per_node)
        np = run->launch_nodes * run->launch_per_node;
    int per = ranks_per_process(run);
    if (np > 1 && lines > 0 && !run->ranks_cut && lines == per) {
        fail(r, r->hdr_line, 0,
             "expected the ranks of %d processes in the rank lines (the launch command starts "
             "%d), got those of one: nccl-tests was built without MPI (make MPI=1), so each "
             "process ran alone",
             np, np);
        return 0;
    }
    if (lines > 0 && !run->ranks_cut) {
        *from = "rank lines";
        return lines;
    }
    if (run->nccl_nranks > 0) {
        *from = "NCCL INFO";
        return run->nccl_nranks;
    }
    if (np > 0 && per > 0 && (int64_t)per * np <= ICS_MEAS_MAX_RANKS) {
        *from = run->hdr_threads ? "header and launch command" : "launch command";
        return per * np;
    }
    return 0;
}

/* Ranks per node and nodes, from the rank lines' hosts or the launch command. */
static void placement(reader *r, ics_meas_table *t)
{
    const run_info *run = &r->run;
    if (run->rank_host && !run->ranks_cut && (int)g_hash_table_size(run->rank_host) == t->nranks) {
        int *per_host = g_new0(int, run->n_hosts + 1);
        GHashTableIter it;
        gpointer k, v;
        g_hash_table_iter_init(&it, run->rank_host);
        while (g_hash_table_iter_next(&it, &k, &v))
            per_host[GPOINTER_TO_INT(v)]++;
        bool even = true;
        for (int h = 2; h <= run->n_hosts; h++)
            even = even && per_host[h] == per_host[1];
        t->nodes = run->n_hosts;
        t->ranks_per_node = even ? per_host[1] : 0;
        g_free(per_host);
        return;
    }
    int64_t per_proc = ranks_per_process(run);
    if (run->cmd && !run->launcher) {
        t->ranks_per_node = t->nranks;
        t->nodes = 1;
    } else if (run->launch_per_node && per_proc > 0 &&
               run->launch_per_node * per_proc <= t->nranks &&
               t->nranks % (run->launch_per_node * per_proc) == 0) {
        t->ranks_per_node = (int)(run->launch_per_node * per_proc);
        t->nodes = t->nranks / t->ranks_per_node;
    } else if (run->launch_nodes && t->nranks % run->launch_nodes == 0) {
        t->nodes = run->launch_nodes;
        t->ranks_per_node = t->nranks / run->launch_nodes;
    }
}

/* Settles the series' operation and rank count and hands it out. */
static void finish_series(reader *r)
{
    ics_meas_table *t = r->cur;
    if (!t)
        return;
    r->cur = NULL;
    const run_info *run = &r->run;
    const char *n_from = NULL;
    int n = ranks_from_log(r, &n_from);
    if (run->op_kind == -1) {
        char *got = describe(run->op_word);
        fail(r, run->op_line, 0, "expected one of the operations %s, got %s", ics_meas__op_list(),
             got);
        g_free(got);
    } else if (run->op_kind == 1) {
        t->op = run->op;
        t->op_from = run->op_from;
    } else if (r->given) {
        t->op = *r->given;
        t->op_from = "caller";
    } else if (!failed(r) && infer_op(r, t, n, &t->op)) {
        t->op_from = "columns";
    }
    if (!failed(r) && n == 0) {
        uint64_t k = size_ratio(r->rows, t->dtype_bytes);
        const ics_meas_row *row = ratio_row(r->rows);
        int q = row ? ratio_ranks(t->op, row, 0) : 0;
        if ((GATHER_LIKE & BIT(t->op)) && k >= 1 && k <= ICS_MEAS_MAX_RANKS) {
            n = (int)k;
            n_from = "size/count";
        } else if (q > 0) {
            n = q;
            n_from = "busbw/algbw";
        } else if (run->hdr_threads && ranks_per_process(run) > 0) {
            n = ranks_per_process(run);
            n_from = "header";
        } else {
            fail(r, r->hdr_line, 0,
                 "expected the rank count in the log (\"#  Rank  0 ...\" lines, or a \"# nThread "
                 "1 nGpus 8\" header and the launch command), got none, and the bandwidths do not "
                 "tell it");
        }
    }
    if (failed(r)) {
        g_array_free(r->rows, TRUE);
        r->rows = NULL;
        ics_meas__table_free(t);
        return;
    }
    t->nranks = n;
    t->nranks_from = n_from;
    t->gpus_per_thread = run->hdr_gpus ? run->hdr_gpus : run->arg_g;
    t->gpu_name = g_strdup(run->gpu_name);
    t->nccl_version = run->nccl_version;
    if (run->env) {
        t->env = g_new0(char *, run->env->len + 1);
        for (guint i = 0; i < run->env->len; i++)
            t->env[i] = g_strdup(g_ptr_array_index(run->env, i));
    }
    placement(r, t);
    for (guint i = 0; i < r->rows->len; i++) {
        ics_meas_row *row = &g_array_index(r->rows, ics_meas_row, i);
        row->oop.wrong = ics_meas__wrong(row->oop.wrong_value, r->deviation, t->dtype, n);
        row->ip.wrong = ics_meas__wrong(row->ip.wrong_value, r->deviation, t->dtype, n);
    }
    t->n_rows = r->rows->len;
    t->rows = (ics_meas_row *)(void *)g_array_free(r->rows, FALSE);
    r->rows = NULL;
    g_ptr_array_add(r->out, t);
    r->run.used = true;
}

/* ---- tables ---------------------------------------------------------------------------------- */

static void close_table(reader *r)
{
    if (!r->open)
        return;
    finish_series(r);
    if (!failed(r) && r->table_rows == 0)
        fail(r, r->hdr_line, 0,
             "expected rows under this table header, got %s (the run printed no results)",
             r->at_eof ? "the end of the file" : "none");
    r->open = false;
    for (int i = 0; i < r->ncols; i++)
        g_free(r->cols[i].name);
    r->ncols = 0;
    g_free(r->hdr_desc);
    r->hdr_desc = NULL;
}

static col_kind column_kind(const char *name, bool *deviation)
{
    static const struct {
        const char *name;
        col_kind kind;
    } names[] = {
        {"size", COL_SIZE},      {"bytes", COL_SIZE},   {"count", COL_COUNT}, {"N", COL_COUNT},
        {"type", COL_TYPE},      {"redop", COL_REDOP},  {"op", COL_REDOP},    {"root", COL_ROOT},
        {"time", COL_TIME},      {"cputime", COL_TIME}, {"algbw", COL_ALGBW}, {"busbw", COL_BUSBW},
        {"#wrong", COL_WRONG},   {"error", COL_WRONG},  {"res", COL_WRONG},   {"delta", COL_WRONG},
        {"timestamp", COL_REST},
    };
    for (size_t i = 0; i < G_N_ELEMENTS(names); i++)
        if (strcmp(name, names[i].name) == 0) {
            if (names[i].kind == COL_WRONG)
                *deviation = strcmp(name, "#wrong") != 0;
            return names[i].kind;
        }
    return COL_OTHER;
}

/* "#  size  count  type  redop  root  time  algbw  busbw  #wrong  time  algbw  busbw  #wrong" */
static void open_table(reader *r, const token *w, int nw, int nw_all)
{
    run_start(r); /* a bare header after a table: nothing said before it applies */
    if (nw_all > MAX_COLS) {
        fail(r, r->line, 0, "expected a table header of at most %d columns, got %d", MAX_COLS,
             nw_all);
        return;
    }
    r->open = true;
    r->hdr_line = r->line;
    r->table_rows = 0;
    r->rest = r->has_redop = r->has_root = r->deviation = false;
    r->time_scale = strcmp(w[0].s, "bytes") == 0 ? 1000 : 1; /* 2017: "bytes N ... time" in ms */
    GString *desc = g_string_new(NULL);
    int times = 0;
    bool seen[COL_REST + 1] = {false};
    for (int i = 0; i < nw && !r->rest; i++) {
        column *c = &r->cols[r->ncols++];
        c->name = g_strdup(w[i].s);
        c->kind = column_kind(w[i].s, &r->deviation);
        g_string_append_printf(desc, "%s%s", desc->len ? " " : "", w[i].s);
        if (c->kind == COL_TIME)
            times++;
        c->half = times > 0 ? times - 1 : 0;
        if ((c->kind >= COL_TIME && c->kind <= COL_WRONG) && (times == 0 || times > 2))
            c->kind = COL_OTHER; /* bandwidths before any time, a third group */
        if (c->kind == COL_REST)
            r->rest = true;
        bool once = c->kind != COL_OTHER && c->kind != COL_TIME && c->kind != COL_ALGBW &&
                    c->kind != COL_BUSBW && c->kind != COL_WRONG;
        if (once && seen[c->kind]) {
            char *got = describe(w[i].s);
            fail(r, r->line, w[i].col,
                 "expected each column once in the table header, got %s twice", got);
            g_free(got);
        }
        seen[c->kind] = true;
    }
    if (desc->len > 200) { /* for messages */
        g_string_truncate(desc, 200);
        g_string_append(desc, "...");
    }
    r->hdr_desc = g_string_free(desc, FALSE);
    r->has_redop = seen[COL_REDOP];
    r->has_root = seen[COL_ROOT];
    if (!failed(r) && !(seen[COL_COUNT] && seen[COL_TYPE]))
        fail(r, r->line, 0,
             "expected a table header naming size, count, type and time columns, got \"%s\"",
             r->hdr_desc);
}

static void start_series(reader *r, const char *dtype, const char *redop)
{
    ics_meas_table *t = ics_meas__table_new(r->name);
    t->dtype = g_strdup(dtype);
    t->dtype_bytes = ics_meas__dtype_bytes(dtype);
    t->redop = g_strdup(redop);
    t->header_line = r->hdr_line;
    t->ranks_per_node = 0;
    r->cur = t;
    r->rows = g_array_new(FALSE, TRUE, sizeof(ics_meas_row));
    r->cur_has_root_set = false;
}

static void bad_token(reader *r, const column *c, const token *t, const char *expected)
{
    char *got = describe(t->s);
    fail(r, r->line, t->col, "%s%s: expected %s, got %s", c->name,
         c->half && c->kind >= COL_TIME && c->kind <= COL_WRONG ? " (in-place)" : "", expected,
         got);
    g_free(got);
}

static void read_row(reader *r, const token *t, int nt)
{
    bool count_ok = r->rest ? nt >= r->ncols - 1 : nt == r->ncols;
    if (!count_ok || nt > MAX_TOKENS) {
        fail(r, r->line, 0, "expected %s%d columns (%s), got %d", r->rest ? "at least " : "",
             r->rest ? r->ncols - 1 : r->ncols, r->hdr_desc, nt);
        return;
    }
    if (r->rows_left == 0) {
        fail(r, r->line, 0, "expected at most %d rows in all, got more", ICS_MEAS_MAX_ROWS);
        return;
    }
    ics_meas_row row = {.root = -1, .line = r->line};
    row.oop = row.ip =
        (ics_meas_sample){.time_us = -1, .algbw_gbps = -1, .busbw_gbps = -1, .wrong_value = -1};
    const char *dtype = NULL, *redop = NULL;
    for (int i = 0; i < r->ncols && !failed(r); i++) {
        const column *c = &r->cols[i];
        if (c->kind == COL_REST)
            break;
        const token *k = &t[i];
        ics_meas_sample *s = c->half ? &row.ip : &row.oop;
        double v = 0;
        int64_t root;
        switch (c->kind) {
        case COL_SIZE:
            if (!parse_u64(k->s, &row.size_bytes))
                bad_token(r, c, k, "a size in bytes (an integer >= 0)");
            break;
        case COL_COUNT:
            if (!parse_u64(k->s, &row.count))
                bad_token(r, c, k, "an element count (an integer >= 0)");
            break;
        case COL_TYPE:
            dtype = k->s;
            break;
        case COL_REDOP:
            redop = k->s;
            break;
        case COL_ROOT:
            if (!g_ascii_string_to_signed(k->s, 10, -1, ICS_MEAS_MAX_RANKS - 1, &root, NULL))
                bad_token(r, c, k, "a root rank (an integer >= -1)");
            row.root = (int)root;
            break;
        case COL_TIME:
            if (!parse_num(k->s, true, &v))
                bad_token(r, c, k, "a time in us (a number >= 0) or N/A");
            s->time_us = v < 0 ? -1 : v * r->time_scale;
            break;
        case COL_ALGBW:
        case COL_BUSBW:
            if (!parse_num(k->s, true, &v))
                bad_token(r, c, k, "a bandwidth in GB/s (a number >= 0) or N/A");
            *(c->kind == COL_ALGBW ? &s->algbw_gbps : &s->busbw_gbps) = v;
            break;
        case COL_WRONG:
            if (!parse_num(k->s, true, &v))
                bad_token(r, c, k, "a count of wrong elements (a number >= 0) or N/A");
            s->wrong_value = v;
            break;
        default:
            break;
        }
    }
    if (failed(r))
        return;
    if (r->cur && (strcmp(r->cur->dtype, dtype) != 0 ||
                   g_strcmp0(r->cur->redop, redop) != 0)) /* -d all, -o all */
        finish_series(r);
    if (failed(r))
        return;
    if (!r->cur)
        start_series(r, dtype, redop);
    row.index = r->next_index++;
    g_array_append_val(r->rows, row);
    r->cur_has_root_set |= row.root >= 0;
    r->table_rows++;
    r->rows_left--;
}

/* ---- lines ----------------------------------------------------------------------------------- */

/* A '#' line: nccl-tests' header, rank lines, footer; a command after a root prompt. */
static void hash_line(reader *r, token *t, int nt)
{
    token *w = t;
    int nw = nt < MAX_TOKENS ? nt : MAX_TOKENS; /* the tokens stored */
    if (strcmp(t[0].s, "#") == 0) {
        w++;
        nw--;
        nt--;
    } else {
        t[0].s++; /* "#wrong"-style: the word after the mark */
        t[0].col++;
    }
    if (nw <= 0 || !w[0].s[0])
        return;
    bool has_time = false;
    for (int i = 0; i < nw; i++)
        has_time |= strcmp(w[i].s, "time") == 0 || strcmp(w[i].s, "cputime") == 0;
    if ((strcmp(w[0].s, "size") == 0 || strcmp(w[0].s, "bytes") == 0) && has_time)
        open_table(r, w, nw, nt);
    else if (strcmp(w[0].s, "Rank") == 0)
        rank_line(r, w, nw);
    else if (tok_is(w, nw, 0, "nccl-tests") && tok_is(w, nw, 1, "version")) {
        run_start(r); /* "# nccl-tests version 2.13.9 nccl-headers=21903 nccl-library=21903" */
        for (int i = 2; i < nw && i < MAX_TOKENS; i++)
            if (g_str_has_prefix(w[i].s, "nccl-library="))
                r->run.nccl_version = ics_meas__nccl_version(w[i].s + strlen("nccl-library="));
    } else if (tok_is(w, nw, 0, "Collective") && tok_is(w, nw, 1, "test") &&
               tok_is(w, nw, 2, "starting:")) {
        run_start(r);
        if (nw > 3)
            name_op(r, w[3].s, "'Collective test starting' line");
    } else if (tok_is(w, nw, 0, "nThread")) {
        run_start(r);
        header_counts(r, w, nw);
    } else if (tok_is(w, nw, 0, "Using") && tok_is(w, nw, 1, "devices"))
        run_start(r);
    else if ((tok_is(w, nw, 0, "Collective") && tok_is(w, nw, 2, "concluded:")) ||
             (tok_is(w, nw, 0, "Out") && tok_is(w, nw, 1, "of") && tok_is(w, nw, 2, "bounds")) ||
             (tok_is(w, nw, 0, "Avg") && tok_is(w, nw, 1, "bus")))
        close_table(r);
    else if (w[0].s[0] == '(' && r->open && r->table_rows == 0) {
        for (int i = 0; i < nw; i++)
            if (strcmp(w[i].s, "(ms)") == 0)
                r->time_scale = 1000;
    } else
        command_line(r, w, nw); /* "# mpirun -np 8 ./all_reduce_perf" after a root prompt */
}

static void one_line(reader *r, char *work)
{
    token t[MAX_TOKENS];
    int nt = tokenize(work, r->prefix_cols, t);
    if (nt == 0 || nccl_line(r, t, nt))
        return;
    if (t[0].s[0] == '#') {
        hash_line(r, t, nt);
        return;
    }
    if (tok_is(t, nt, 0, "nThread")) { /* 2017: no '#' */
        run_start(r);
        header_counts(r, t, nt);
    } else if ((tok_is(t, nt, 0, "Out") && tok_is(t, nt, 1, "of") && tok_is(t, nt, 2, "bounds")) ||
               (tok_is(t, nt, 0, "Avg") && tok_is(t, nt, 1, "bus")))
        close_table(r);
    else if (r->open && g_ascii_isdigit(t[0].s[0]))
        read_row(r, t, nt);
    else if (!command_line(r, t, nt) && !r->open && !r->orphan_line && nt >= 2) {
        uint64_t a, b;
        if (parse_u64(t[0].s, &a) && parse_u64(t[1].s, &b))
            r->orphan_line = r->line;
    }
}

bool ics_meas__read_nccl_tests(const char *name, const char *text, size_t len,
                               const ics_coll_op *op, guint rows_left, GPtrArray *out,
                               GError **error)
{
    reader r = {.name = name, .given = op, .rows_left = rows_left, .out = out};
    r.run.max_rank = -1;
    size_t cap = len < ICS_MEAS_MAX_LINE_BYTES ? len : ICS_MEAS_MAX_LINE_BYTES; /* longest line */
    char *raw = g_malloc(cap + 1), *work = g_malloc(cap + 1);
    guint first_out = out->len;
    size_t at = 0;
    while (at < len && !failed(&r)) {
        const char *s = text + at, *nl = memchr(s, '\n', len - at);
        size_t n = nl ? (size_t)(nl - s) : len - at;
        at += n + (nl ? 1 : 0);
        r.line++;
        if (n > 0 && s[n - 1] == '\r')
            n--;
        if (n > ICS_MEAS_MAX_LINE_BYTES) {
            fail(&r, r.line, 0, "expected a line of at most %u MiB, got %zu bytes",
                 ICS_MEAS_MAX_LINE_BYTES >> 20, n);
            break;
        }
        const char *nul = memchr(s, '\0', n);
        if (nul) {
            fail(&r, r.line, (int)(nul - s) + 1, "expected text, got a NUL byte");
            break;
        }
        memcpy(raw, s, n);
        raw[n] = '\0';
        size_t tag = tag_length(raw);
        r.prefix_cols = (int)tag;
        r.raw = raw + tag;
        memcpy(work, raw + tag, n - tag + 1);
        one_line(&r, work);
    }
    r.n_lines = r.line;
    r.at_eof = true;
    if (!failed(&r))
        close_table(&r);
    if (!failed(&r) && out->len == first_out) {
        if (r.orphan_line)
            fail(&r, r.orphan_line, 0,
                 "expected the table header (\"#  size  count  type  redop  root  time  algbw  "
                 "busbw  #wrong ...\") above this row, got none");
        else if (r.n_lines == 0)
            fail(&r, 0, 0,
                 "expected an nccl-tests log or a JSON measurement file, got an empty "
                 "file");
        else
            fail(&r, r.n_lines, 0,
                 "expected an nccl-tests results table (a \"#  size  count  type ...\" header "
                 "and its rows), got the end of the file");
    }
    /* on error: whatever the open table held, and the tables made before */
    if (r.cur)
        ics_meas__table_free(r.cur);
    if (r.rows)
        g_array_free(r.rows, TRUE);
    for (int i = 0; i < r.ncols; i++)
        g_free(r.cols[i].name);
    g_free(r.hdr_desc);
    run_clear(&r.run);
    g_free(raw);
    g_free(work);
    if (failed(&r)) {
        g_ptr_array_set_size(out, first_out);
        g_propagate_error(error, r.error);
        return false;
    }
    return true;
}
