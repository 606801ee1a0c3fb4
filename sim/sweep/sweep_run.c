/* Running a study: configurations on a GLib thread pool, their rows written in configuration
 * order as soon as every earlier one is written (a finished configuration waits for slower
 * earlier ones, so the files never depend on which thread was fast), both files flushed per
 * configuration so that an interrupted run leaves whole configurations behind, and resuming
 * after the last one whose rows both files hold. */
#include "sweep/sweep_internal.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

typedef struct {
    const ics_sweep *s;
    GMutex lock;
    GCond done;
    char **csv, **json; /* per configuration, set by a worker, taken by the writer */
    bool *ready;
} results;

static void work(gpointer data, gpointer user)
{
    results *r = user;
    int c = GPOINTER_TO_INT(data) - 1;
    char *csv, *json;
    ics_sweep_run_config(r->s, c, &csv, &json);
    g_mutex_lock(&r->lock);
    r->csv[c] = csv;
    r->json[c] = json;
    r->ready[c] = true;
    g_cond_broadcast(&r->done);
    g_mutex_unlock(&r->lock);
}

/* ---- the flow engine ---------------------------------------------------------------------- */

static bool mine(const ics_sweep_opts *o, int c);

/* Whether configuration c runs on the flow engine. */
static bool config_flow(const ics_sweep *s, int c)
{
    ics_sweep_set set;
    ics_sweep_config(s, c, &set);
    bool flow = set.engine && strcmp(set.engine, "flow") == 0;
    ics_sweep_set_clear(&set);
    return flow;
}

/* SimGrid (the flow engine) runs in one thread per process and seals its platform at its first
 * run: a study that uses it runs every configuration in the calling thread, after sizing the
 * platform for each flow configuration's system (building them once more; a configuration
 * whose system cannot be built reports it in its own row). True if any configuration uses it. */
static bool flow_prepare(const ics_sweep *s, const ics_sweep_opts *o)
{
    bool any = false;
    for (int c = 0; c < s->nconfigs; c++) {
        if (!mine(o, c) || !config_flow(s, c))
            continue;
        any = true;
        ics_sweep_set set;
        ics_sweep_config(s, c, &set);
        ics_topo *t = NULL;
        ics_hw *hw = ics_sweep_config_system(s, &set, &t, NULL);
        if (hw)
            (void)ics_net_backend_ready(ics_net_backend("flow"), t, NULL); /* grows the platform */
        ics_topo_free(t);
        ics_hw_free(hw);
        ics_sweep_set_clear(&set);
    }
    return any;
}

/* ---- resuming ------------------------------------------------------------------------------ */

/* Whole lines of text from offset `from`: their count, and in *end the offset after the last. */
static int whole_lines(const char *text, size_t len, size_t from, size_t *end)
{
    int n = 0;
    *end = from;
    for (size_t i = from; i < len; i++)
        if (text[i] == '\n') {
            n++;
            *end = i + 1;
        }
    return n;
}

/* Checks the rows of one file against the study, line k being configuration k / nsizes's;
 * returns the configurations it holds whole and in *keep the bytes they take (header
 * included), or -1 and *error if a line belongs to another study. */
static int rows_done(const ics_sweep *s, const char *path, const char *text, size_t len,
                     size_t body, bool json, size_t *keep, GError **error)
{
    size_t end;
    int lines = whole_lines(text, len, body, &end);
    int nsizes = MAX(1, s->nsizes), configs = MIN(lines / nsizes, s->nconfigs);
    const char *line = text + body;
    GString *key = g_string_new(NULL);
    for (int k = 0; k < configs * nsizes; k++) {
        g_string_truncate(key, 0);
        ics_sweep_row_keys(s, k / nsizes, json ? NULL : key, json ? key : NULL);
        g_string_append(key, json ? ", " : ",");
        if (strncmp(line, key->str, key->len) != 0) {
            g_set_error(error, ICS_ERROR, ICS_ERROR_INPUT,
                        "%s: line %d is not this study's (expected it to start \"%s\"): another "
                        "study's output? Remove it or start over (restart)",
                        path, k + 1 + (json ? 0 : 1), key->str);
            g_string_free(key, TRUE);
            return -1;
        }
        line = strchr(line, '\n') + 1;
    }
    g_string_free(key, TRUE);
    *keep = (size_t)(line - text);
    return configs;
}

/* Reads what an earlier run left in one file: -1 on error, else configurations done. */
static int file_done(const ics_sweep *s, const char *path, bool json, char **text, size_t *keep,
                     GError **error)
{
    gsize len = 0;
    GError *err = NULL;
    *text = NULL;
    *keep = 0;
    if (!g_file_get_contents(path, text, &len, &err)) {
        bool missing = g_error_matches(err, G_FILE_ERROR, G_FILE_ERROR_NOENT);
        if (!missing)
            g_set_error(error, ICS_ERROR, ICS_ERROR_IO, "%s: %s", path, err->message);
        g_error_free(err);
        return missing ? 0 : -1;
    }
    size_t body = 0;
    if (!json) {
        char *header = ics_sweep_csv_header(s);
        size_t hl = strlen(header);
        bool same = len >= hl && memcmp(*text, header, hl) == 0;
        bool empty = len == 0;
        g_free(header);
        if (empty)
            return 0;
        if (!same) {
            g_set_error(error, ICS_ERROR, ICS_ERROR_INPUT,
                        "%s: its header is not this study's: another study's output? Remove it "
                        "or start over (restart)",
                        path);
            return -1;
        }
        body = hl;
    }
    return rows_done(s, path, *text, len, body, json, keep, error);
}

/* Opens a file to append to after its first `keep` bytes of `text` (rewritten when it held
 * more: a configuration cut short, or one file ahead of the other). */
static FILE *reopen(const char *path, const char *text, size_t keep, size_t had, const char *header,
                    GError **error)
{
    bool rewrite = !text || keep != had;
    if (rewrite) {
        GError *err = NULL;
        const char *content = keep ? text : (header ? header : "");
        size_t n = keep ? keep : strlen(content);
        if (!g_file_set_contents(path, content, (gssize)n, &err)) {
            g_set_error(error, ICS_ERROR, ICS_ERROR_IO, "%s: %s", path, err->message);
            g_error_free(err);
            return NULL;
        }
    }
    FILE *f = fopen(path, "ab");
    if (!f)
        g_set_error(error, ICS_ERROR, ICS_ERROR_IO, "%s: %s", path, g_strerror(errno));
    return f;
}

typedef struct {
    FILE *csv, *json;
} outputs;

/* Where the writer starts: the configurations both files hold, the files cut there. */
static int resume(const ics_sweep *s, const ics_sweep_opts *o, outputs *out, GError **error)
{
    const char *paths[2] = {o->csv_path, o->json_path};
    FILE **files[2] = {&out->csv, &out->json};
    char *texts[2] = {NULL, NULL};
    size_t keeps[2] = {0, 0}, lens[2] = {0, 0};
    int first = s->nconfigs;
    bool ok = true;
    for (int k = 0; k < 2 && ok; k++) {
        if (!paths[k])
            continue;
        int done = o->restart ? 0 : file_done(s, paths[k], k == 1, &texts[k], &keeps[k], error);
        ok = done >= 0;
        first = MIN(first, done);
        lens[k] = texts[k] ? strlen(texts[k]) : 0;
    }
    if (first == s->nconfigs && !paths[0] && !paths[1])
        first = 0;
    char *header = ics_sweep_csv_header(s);
    for (int k = 0; k < 2 && ok; k++) {
        if (!paths[k])
            continue;
        /* keep exactly `first` configurations: the header and first x nsizes lines */
        size_t keep = 0;
        if (texts[k] && first > 0) {
            const char *p = texts[k] + (k == 0 ? strlen(header) : 0);
            for (int line = 0; line < first * s->nsizes; line++)
                p = strchr(p, '\n') + 1;
            keep = (size_t)(p - texts[k]);
        }
        *files[k] = reopen(paths[k], texts[k], keep, o->restart ? SIZE_MAX : lens[k],
                           k == 0 ? header : NULL, error);
        ok = *files[k] != NULL;
    }
    g_free(header);
    g_free(texts[0]);
    g_free(texts[1]);
    return ok ? first : -1;
}

/* ---- progress ------------------------------------------------------------------------------ */

static void progress(const ics_sweep *s, int written, int total, double elapsed, bool last)
{
    double eta = written > 0 ? elapsed / written * (total - written) : 0;
    fprintf(stderr, "\r%s: %d/%d configurations, %.0f s, ETA %.0f s   %s", ics_sweep_name(s),
            written, total, elapsed, eta, last ? "\n" : "");
    fflush(stderr);
}

/* ---- the run ------------------------------------------------------------------------------- */

static bool put(FILE *f, const char *text, const char *path, GError **error)
{
    if (!f)
        return true;
    if (fputs(text, f) < 0 || fflush(f) != 0) {
        g_set_error(error, ICS_ERROR, ICS_ERROR_IO, "%s: %s", path, g_strerror(errno));
        return false;
    }
    return true;
}

static bool mine(const ics_sweep_opts *o, int c)
{
    return !o->split || o->split->mine(o->split->ctx, c);
}

bool ics_sweep_run(const ics_sweep *s, const ics_sweep_opts *o, int *done, int *skipped,
                   GError **error)
{
    bool writer = !o->split || o->split->writer;
    outputs out = {0};
    int first = writer ? resume(s, o, &out, error) : 0;
    if (o->split) /* every process starts where the writer's files end (-1: nobody runs) */
        first = o->split->start(o->split->ctx, first);
    if (first < 0) {
        if (!writer)
            g_set_error(error, ICS_ERROR, ICS_ERROR_IO,
                        "the writing process could not open "
                        "its files");
        return false;
    }
    results r = {.s = s,
                 .csv = g_new0(char *, s->nconfigs + 1),
                 .json = g_new0(char *, s->nconfigs + 1),
                 .ready = g_new0(bool, s->nconfigs + 1)};
    g_mutex_init(&r.lock);
    g_cond_init(&r.done);
    bool here = flow_prepare(s, o); /* run each configuration in this thread, not the pool's */
    GThreadPool *pool = g_thread_pool_new(work, &r, MAX(1, o->threads), FALSE, NULL);
    for (int c = first; c < s->nconfigs && !here; c++)
        if (mine(o, c))
            g_thread_pool_push(pool, GINT_TO_POINTER(c + 1), NULL);
    bool show = o->progress && writer && isatty(STDERR_FILENO);
    gint64 t0 = g_get_monotonic_time();
    bool ok = true;
    int ran = 0;
    for (int c = first; c < s->nconfigs && ok; c++) {
        char *csv = NULL, *json = NULL;
        if (mine(o, c)) {
            if (here)
                work(GINT_TO_POINTER(c + 1), &r);
            g_mutex_lock(&r.lock);
            while (!r.ready[c])
                g_cond_wait(&r.done, &r.lock);
            csv = r.csv[c];
            json = r.json[c];
            r.csv[c] = r.json[c] = NULL;
            g_mutex_unlock(&r.lock);
            ran++;
            if (!writer)
                o->split->give(o->split->ctx, c, csv, json);
        } else if (writer) {
            o->split->fetch(o->split->ctx, c, &csv, &json);
        }
        if (writer)
            ok = put(out.csv, csv, o->csv_path, error) && put(out.json, json, o->json_path, error);
        g_free(csv);
        g_free(json);
        if (show)
            progress(s, c + 1 - first, s->nconfigs - first,
                     (double)(g_get_monotonic_time() - t0) / 1e6, c + 1 == s->nconfigs);
    }
    g_thread_pool_free(pool, !ok, TRUE); /* on error: drop what has not started, wait */
    for (int c = 0; c < s->nconfigs; c++) {
        g_free(r.csv[c]);
        g_free(r.json[c]);
    }
    g_free(r.csv);
    g_free(r.json);
    g_free(r.ready);
    g_mutex_clear(&r.lock);
    g_cond_clear(&r.done);
    if (out.csv && fclose(out.csv) != 0 && ok) {
        g_set_error(error, ICS_ERROR, ICS_ERROR_IO, "%s: %s", o->csv_path, g_strerror(errno));
        ok = false;
    }
    if (out.json && fclose(out.json) != 0 && ok) {
        g_set_error(error, ICS_ERROR, ICS_ERROR_IO, "%s: %s", o->json_path, g_strerror(errno));
        ok = false;
    }
    if (done)
        *done = ran;
    if (skipped)
        *skipped = first;
    return ok;
}
