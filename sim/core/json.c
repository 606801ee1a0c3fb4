/* Located JSON reading: cJSON parses; a small scanner then walks the same text to learn where
 * each value (and each object key) starts, so errors can say file:line:col. The scanner only
 * locates; it never decides validity, which is cJSON's job. Invariant: the scanner visits
 * values in the order cJSON stores them (pre-order, members in text order). */
#include "core/json.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include <glib/gstdio.h>

#define ICS_JSON_MAX_BYTES (64u << 20) /* hardware models and scenarios are small */
#define ICS_JSON_MAX_DEPTH 1000        /* cJSON's own nesting limit */

/* By hand rather than G_DEFINE_QUARK, whose dashed argument the formatter would split. */
GQuark ics_json_error_quark(void)
{
    return g_quark_from_static_string("ics-json-error-quark");
}

typedef struct {
    char *name; /* as shown in messages */
    char *text; /* NUL-terminated */
    size_t len;
    cJSON *root;
    GHashTable *val_at; /* cJSON* -> value offset + 1 */
    GHashTable *key_at; /* cJSON* -> offset of its key + 1 (object members only) */
} ics_jdoc;

struct ics_jr {
    GPtrArray *docs; /* of ics_jdoc*, owned */
    GString *path;
    GError *error;
    GHashTable *alias;       /* cJSON* -> the cJSON* whose location it reports */
    GPtrArray *owned;        /* cJSON trees built by callers (merged objects) */
    const cJSON *elide_item; /* see ics_jr_elide */
    size_t elide_from, elide_to;
};

/* ---- messages ---------------------------------------------------------------------------- */

/* Appends a key to a JSON path: ".name" for a plain name, ["..."] for anything else, with
 * control characters escaped so that a message stays one line. `raw`: the key as written in
 * the text (escapes already there are kept as they are). */
static void path_append_key(GString *path, const char *key, bool raw)
{
    bool plain = *key != '\0';
    for (const char *c = key; *c && plain; c++)
        plain = g_ascii_isalnum(*c) || *c == '_' || *c == '-';
    if (plain) {
        g_string_append_printf(path, ".%s", key);
        return;
    }
    g_string_append(path, "[\"");
    for (const char *c = key; *c; c++) {
        if ((unsigned char)*c < 0x20 || *c == 0x7f)
            g_string_append_printf(path, "\\x%02x", (unsigned char)*c);
        else if (!raw && (*c == '"' || *c == '\\'))
            g_string_append_printf(path, "\\%c", *c);
        else
            g_string_append_c(path, *c);
    }
    g_string_append(path, "\"]");
}

/* A message made one line of valid UTF-8: names and values from the input may hold control
 * characters or bytes that are not UTF-8 (a key in Latin-1), shown escaped as \\xNN, so that
 * what reaches a terminal or a log is the text, not its bytes. Transfer full. */
static char *one_line(const char *msg)
{
    GString *line = g_string_sized_new(strlen(msg));
    for (const char *c = msg; *c;) {
        gunichar u = g_utf8_get_char_validated(c, -1);
        if (*c == '\n') {
            g_string_append(line, "\\n");
        } else if ((unsigned char)*c < 0x20 || *c == 0x7f || u == (gunichar)-1 ||
                   u == (gunichar)-2) {
            g_string_append_printf(line, "\\x%02x", (unsigned char)*c);
        } else {
            const char *next = g_utf8_next_char(c);
            g_string_append_len(line, c, next - c);
            c = next;
            continue;
        }
        c++;
    }
    return g_string_free(line, FALSE);
}

static void set_error(ics_jr *r, const char *fmt, ...) G_GNUC_PRINTF(2, 3);
static void set_error(ics_jr *r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *msg = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    char *line = one_line(msg);
    g_set_error_literal(&r->error, ICS_JSON_ERROR, ICS_JSON_ERROR_INPUT, line);
    g_free(line);
    g_free(msg);
}

/* ---- scanner ------------------------------------------------------------------------------ */

typedef struct {
    const char *s;
    size_t len, pos;
    size_t stop;  /* for syntax errors: cJSON's error offset (SIZE_MAX: none) */
    GArray *vals; /* offsets of value starts, pre-order */
    GArray *keys; /* offset of the key for each value, or SIZE_MAX */
    GString *path;
    bool stopped;              /* reached `stop`; path is the value there */
    const char *stop_expected; /* what was due at `stop`, if the scanner knows */
    /* The first structural error met, for syntax errors: cJSON's own offset is sometimes one
     * past the offending character and says nothing of what was expected. */
    bool failed;
    size_t fail_pos;
    const char *fail_expected, *fail_got; /* fail_got NULL: the character at fail_pos */
} ics_jscan;

/* Whitespace as cJSON skips it: every byte from 1 to 32 (so form feeds and other control
 * characters too, or the scanner would stop where cJSON goes on). */
static bool scan_is_ws(char c)
{
    return c != '\0' && (unsigned char)c <= 32;
}

static void scan_ws(ics_jscan *sc)
{
    while (sc->pos < sc->len && scan_is_ws(sc->s[sc->pos]))
        sc->pos++;
}

/* cJSON skips a UTF-8 byte order mark at the start of the text; so must the scanner. */
static void scan_bom(ics_jscan *sc)
{
    if (sc->len >= 3 && memcmp(sc->s, "\xEF\xBB\xBF", 3) == 0)
        sc->pos = 3;
}

static bool scan_fail(ics_jscan *sc, size_t pos, const char *expected, const char *got)
{
    if (!sc->failed && !sc->stopped) {
        sc->failed = true;
        sc->fail_pos = pos;
        sc->fail_expected = expected;
        sc->fail_got = got;
    }
    return false;
}

/* True where scanning ends: past `stop`, or at the end of the text where `expected` was due.
 * A structural character at `stop` is still checked by the caller, so that the scanner can
 * say what was expected there. */
static bool scan_at_stop(ics_jscan *sc, const char *expected)
{
    if (sc->failed || sc->stopped)
        return true;
    if (sc->pos > sc->stop)
        sc->stopped = true;
    else if (sc->pos >= sc->len)
        scan_fail(sc, sc->pos, expected, NULL);
    return sc->stopped || sc->failed;
}

/* Skips a string starting at '"'; copies its raw content into `out` if non-NULL. */
static bool scan_string(ics_jscan *sc, GString *out)
{
    size_t start = sc->pos;
    sc->pos++; /* opening quote */
    while (sc->pos < sc->len) {
        char c = sc->s[sc->pos];
        if (c == '"') {
            sc->pos++;
            if (start < sc->stop && sc->stop < sc->pos)
                sc->stopped = true; /* cJSON failed inside this string (an escape) */
            return !sc->stopped;
        }
        if (c == '\\' && sc->pos + 1 < sc->len) {
            if (out)
                g_string_append_len(out, sc->s + sc->pos, 2);
            sc->pos += 2;
            continue;
        }
        if (out)
            g_string_append_c(out, c);
        sc->pos++;
    }
    return scan_fail(sc, start, "'\"' to close the string that starts here", "end of file");
}

static bool scan_value(ics_jscan *sc, size_t key_off, int depth);

static bool scan_members(ics_jscan *sc, int depth, bool is_object)
{
    char close = is_object ? '}' : ']';
    const char *next = is_object ? "',' or '}'" : "',' or ']'";
    const char *first = is_object ? "a key in double quotes or '}'" : "a value or ']'";
    const char *key_exp = "a key in double quotes";
    int index = 0;
    sc->pos++;
    for (;;) {
        scan_ws(sc);
        if (scan_at_stop(sc, index > 0 ? next : first))
            return false;
        if (sc->s[sc->pos] == close) {
            sc->pos++;
            return true;
        }
        if (index > 0) {
            if (sc->s[sc->pos] != ',')
                return scan_fail(sc, sc->pos, next, NULL);
            sc->pos++;
            scan_ws(sc);
            if (scan_at_stop(sc, is_object ? key_exp : "a value"))
                return false;
        }
        size_t mark = sc->path->len;
        size_t key_off = SIZE_MAX;
        if (is_object) {
            if (sc->s[sc->pos] != '"')
                return scan_fail(sc, sc->pos, index > 0 ? key_exp : first, NULL);
            key_off = sc->pos;
            GString *key = g_string_new(NULL);
            bool ok = scan_string(sc, key);
            path_append_key(sc->path, key->str, true);
            g_string_free(key, TRUE);
            if (!ok)
                return false;
            scan_ws(sc);
            if (scan_at_stop(sc, "':' after the key"))
                return false;
            if (sc->s[sc->pos] != ':')
                return scan_fail(sc, sc->pos, "':' after the key", NULL);
            sc->pos++;
            scan_ws(sc);
        } else {
            g_string_append_printf(sc->path, "[%d]", index);
        }
        if (!scan_value(sc, key_off, depth + 1))
            return false;
        g_string_truncate(sc->path, mark);
        index++;
    }
}

/* depth: how many arrays and objects enclose the value. */
static bool scan_value(ics_jscan *sc, size_t key_off, int depth)
{
    if (scan_at_stop(sc, "a value"))
        return false;
    char c = sc->s[sc->pos];
    if (strchr(",]}:", c))
        return scan_fail(sc, sc->pos, "a value", NULL);
    if ((c == '{' || c == '[') && depth >= ICS_JSON_MAX_DEPTH)
        return scan_fail(sc, sc->pos,
                         "at most " G_STRINGIFY(ICS_JSON_MAX_DEPTH) " nested arrays and objects",
                         NULL);
    if (sc->pos == sc->stop) {
        sc->stopped = true; /* cJSON failed at this value: the path names it */
        sc->stop_expected = "a JSON value (object, array, string, number, true, false or null)";
        return false;
    }
    g_array_append_val(sc->vals, sc->pos);
    g_array_append_val(sc->keys, key_off);
    if (c == '{' || c == '[')
        return scan_members(sc, depth, c == '{');
    if (c == '"')
        return scan_string(sc, NULL);
    size_t start = sc->pos;
    while (sc->pos < sc->len && !strchr(",]}:", sc->s[sc->pos]) && !scan_is_ws(sc->s[sc->pos]))
        sc->pos++;
    if (start < sc->stop && sc->stop < sc->pos)
        sc->stopped = true; /* cJSON failed inside this literal */
    return !sc->stopped;
}

/* ---- documents ---------------------------------------------------------------------------- */

static void jdoc_free(gpointer p)
{
    ics_jdoc *d = p;
    if (!d)
        return;
    g_free(d->name);
    g_free(d->text);
    cJSON_Delete(d->root);
    if (d->val_at)
        g_hash_table_destroy(d->val_at);
    if (d->key_at)
        g_hash_table_destroy(d->key_at);
    g_free(d);
}

static void assign_offsets(ics_jdoc *d, cJSON *item, const GArray *vals, const GArray *keys,
                           guint *next)
{
    if (*next >= vals->len)
        return;
    size_t v = g_array_index(vals, size_t, *next), k = g_array_index(keys, size_t, *next);
    (*next)++;
    g_hash_table_insert(d->val_at, item, GSIZE_TO_POINTER(v + 1));
    if (k != SIZE_MAX)
        g_hash_table_insert(d->key_at, item, GSIZE_TO_POINTER(k + 1));
    for (cJSON *c = item->child; c; c = c->next)
        assign_offsets(d, c, vals, keys, next);
}

/* Columns count characters as an editor shows them: UTF-8 sequences count once, a leading
 * byte order mark not at all. */
static void offset_to_line_col(const ics_jdoc *d, size_t off, int *line, int *col)
{
    *line = 1;
    *col = 1;
    size_t i = d->len >= 3 && memcmp(d->text, "\xEF\xBB\xBF", 3) == 0 ? 3 : 0;
    for (; i < off && i < d->len; i++) {
        if (d->text[i] == '\n') {
            (*line)++;
            *col = 1;
        } else if (((unsigned char)d->text[i] & 0xC0) != 0x80) {
            (*col)++;
        }
    }
}

static char *describe_char_at(const ics_jdoc *d, size_t off)
{
    if (off >= d->len)
        return g_strdup("end of file");
    char buf[2] = {d->text[off], 0};
    char *esc = g_strescape(buf, "\"");
    char *s = g_strdup_printf("'%s'", esc);
    g_free(esc);
    return s;
}

/* A syntax error at cJSON's offset err_off, or earlier where the scanner finds a structural
 * error first. `expected`/`got` (NULL: generic) describe what is at err_off. */
static void fail_syntax(ics_jr *r, ics_jdoc *d, size_t err_off, const char *expected,
                        const char *got)
{
    ics_jscan sc = {.s = d->text, .len = d->len, .stop = err_off};
    sc.vals = g_array_new(FALSE, FALSE, sizeof(size_t));
    sc.keys = g_array_new(FALSE, FALSE, sizeof(size_t));
    sc.path = g_string_new("$");
    scan_bom(&sc);
    scan_ws(&sc);
    if (scan_value(&sc, SIZE_MAX, 0)) {
        scan_ws(&sc);
        if (sc.pos < sc.len)
            scan_fail(&sc, sc.pos, "the end of the text after the top-level value", NULL);
    }
    if (!expected && sc.failed && sc.fail_pos <= err_off) {
        err_off = sc.fail_pos;
        expected = sc.fail_expected;
        got = sc.fail_got;
    } else if (!expected && sc.stopped) {
        expected = sc.stop_expected;
    }
    if (sc.path->len > 120) { /* 1000 levels of nesting: keep both ends, cut at a '[' or '.' */
        size_t a = 60, b = sc.path->len - 40;
        while (a < b && !strchr("[.", sc.path->str[a]))
            a++;
        while (b > a && !strchr("[.", sc.path->str[b]))
            b--;
        g_string_erase(sc.path, (gssize)a, (gssize)(b - a));
        g_string_insert(sc.path, (gssize)a, "...");
    }
    int line, col;
    offset_to_line_col(d, err_off, &line, &col);
    char *got_char = describe_char_at(d, err_off);
    set_error(r, "%s:%d:%d: %s: expected %s, got %s", d->name, line, col, sc.path->str,
              expected ? expected : "valid JSON (a value, ',', ':' or a closing bracket)",
              got ? got : got_char);
    g_free(got_char);
    g_array_free(sc.vals, TRUE);
    g_array_free(sc.keys, TRUE);
    g_string_free(sc.path, TRUE);
}

bool ics_json_text_ok(const char *text, size_t len)
{
    return memchr(text, '\0', len) == NULL && g_utf8_validate(text, (gssize)len, NULL);
}

const cJSON *ics_jr_load_text(ics_jr *r, const char *display_path, const char *text, size_t len)
{
    if (r->error)
        return NULL;
    g_string_assign(r->path, "$");
    ics_jdoc *d = g_new0(ics_jdoc, 1);
    d->name = g_strdup(display_path);
    d->text = g_strndup(text, len); /* stops at an embedded NUL: checked below */
    d->len = len;
    g_ptr_array_add(r->docs, d);
    if (strlen(d->text) != len) {
        d->len = strlen(d->text);
        fail_syntax(r, d, d->len, "JSON text", "a NUL byte");
        return NULL;
    }
    /* JSON text is UTF-8 (RFC 8259, 8.1); cJSON would pass other bytes through, and a name
     * that is not UTF-8 cannot be written back (two such names may print alike) */
    const gchar *bad = NULL;
    if (!g_utf8_validate(d->text, (gssize)d->len, &bad)) {
        char got[64];
        snprintf(got, sizeof got, "the byte 0x%02X, which is not UTF-8", (unsigned char)*bad);
        fail_syntax(r, d, (size_t)(bad - d->text), "UTF-8 text (RFC 8259)", got);
        return NULL;
    }
    const char *end = NULL;
    d->root = cJSON_ParseWithLengthOpts(d->text, d->len + 1, &end, true);
    if (!d->root) {
        size_t off = end ? (size_t)(end - d->text) : 0;
        fail_syntax(r, d, off > d->len ? d->len : off, NULL, NULL);
        return NULL;
    }
    d->val_at = g_hash_table_new(g_direct_hash, g_direct_equal);
    d->key_at = g_hash_table_new(g_direct_hash, g_direct_equal);
    ics_jscan sc = {.s = d->text, .len = d->len, .stop = SIZE_MAX};
    sc.vals = g_array_new(FALSE, FALSE, sizeof(size_t));
    sc.keys = g_array_new(FALSE, FALSE, sizeof(size_t));
    sc.path = g_string_new("$");
    scan_bom(&sc);
    scan_ws(&sc);
    scan_value(&sc, SIZE_MAX, 0);
    guint next = 0;
    assign_offsets(d, d->root, sc.vals, sc.keys, &next);
    g_array_free(sc.vals, TRUE);
    g_array_free(sc.keys, TRUE);
    g_string_free(sc.path, TRUE);
    return d->root;
}

const cJSON *ics_jr_load(ics_jr *r, const char *display_path)
{
    if (r->error)
        return NULL;
    /* Size and kind first: a FIFO or /dev/zero would otherwise be read forever. */
    GStatBuf st;
    if (g_stat(display_path, &st) == 0 && !S_ISREG(st.st_mode)) {
        set_error(r, "%s: expected a regular file, got %s", display_path,
                  S_ISDIR(st.st_mode) ? "a directory" : "a special file");
        return NULL;
    }
    if (g_stat(display_path, &st) == 0 && st.st_size > (off_t)ICS_JSON_MAX_BYTES) {
        set_error(r, "%s: expected a file of at most %u MiB, got %lld bytes", display_path,
                  ICS_JSON_MAX_BYTES >> 20, (long long)st.st_size);
        return NULL;
    }
    char *text = NULL;
    gsize len = 0;
    GError *io = NULL;
    if (!g_file_get_contents(display_path, &text, &len, &io)) {
        set_error(r, "%s: expected a readable file, got %s", display_path, io->message);
        g_error_free(io);
        return NULL;
    }
    if (len > ICS_JSON_MAX_BYTES) { /* grew since */
        set_error(r, "%s: expected a file of at most %u MiB, got %zu bytes", display_path,
                  ICS_JSON_MAX_BYTES >> 20, (size_t)len);
        g_free(text);
        return NULL;
    }
    const cJSON *root = ics_jr_load_text(r, display_path, text, len);
    g_free(text);
    return root;
}

/* ---- reader state ------------------------------------------------------------------------- */

ics_jr *ics_jr_new(void)
{
    ics_jr *r = g_new0(ics_jr, 1);
    r->docs = g_ptr_array_new_with_free_func(jdoc_free);
    r->path = g_string_new("$");
    r->alias = g_hash_table_new(g_direct_hash, g_direct_equal);
    r->owned = g_ptr_array_new_with_free_func((GDestroyNotify)cJSON_Delete);
    return r;
}

void ics_jr_free(ics_jr *r)
{
    if (!r)
        return;
    g_ptr_array_free(r->owned, TRUE);
    g_ptr_array_free(r->docs, TRUE);
    g_hash_table_destroy(r->alias);
    g_string_free(r->path, TRUE);
    if (r->error)
        g_error_free(r->error);
    g_free(r);
}

bool ics_jr_ok(const ics_jr *r)
{
    return r->error == NULL;
}

GError *ics_jr_take_error(ics_jr *r)
{
    GError *e = r->error;
    r->error = NULL;
    return e;
}

size_t ics_jr_push_key(ics_jr *r, const char *key)
{
    size_t mark = r->path->len;
    path_append_key(r->path, key, false);
    return mark;
}

size_t ics_jr_push_index(ics_jr *r, int index)
{
    size_t mark = r->path->len;
    g_string_append_printf(r->path, "[%d]", index);
    return mark;
}

void ics_jr_pop(ics_jr *r, size_t mark)
{
    g_string_truncate(r->path, mark);
}

const char *ics_jr_path(const ics_jr *r)
{
    return r->path->str;
}

void ics_jr_elide(ics_jr *r, const cJSON *item, size_t from, size_t to)
{
    r->elide_item = item;
    r->elide_from = from;
    r->elide_to = to;
}

void ics_jr_alias(ics_jr *r, const cJSON *alias, const cJSON *original)
{
    g_hash_table_insert(r->alias, (gpointer)alias, (gpointer)original);
}

void ics_jr_adopt(ics_jr *r, cJSON *owned)
{
    if (owned)
        g_ptr_array_add(r->owned, owned);
}

static ics_jdoc *doc_of(const ics_jr *r, const cJSON *item, size_t *off, bool want_key)
{
    const cJSON *orig = g_hash_table_lookup(r->alias, item);
    if (orig)
        item = orig;
    for (guint i = 0; i < r->docs->len; i++) {
        ics_jdoc *d = g_ptr_array_index(r->docs, i);
        if (!d->val_at)
            continue;
        gpointer p = NULL;
        if (want_key)
            p = g_hash_table_lookup(d->key_at, item);
        if (!p)
            p = g_hash_table_lookup(d->val_at, item);
        if (p) {
            *off = GPOINTER_TO_SIZE(p) - 1;
            return d;
        }
    }
    return NULL;
}

const char *ics_jr_file_of(const ics_jr *r, const cJSON *item)
{
    size_t off;
    ics_jdoc *d = doc_of(r, item, &off, false);
    return d ? d->name : NULL;
}

/* "<file>:<line>:<col>: <path>[.key]" of value `at` (its key's position with at_key). */
static char *locate(const ics_jr *r, const cJSON *at, bool at_key, const char *key)
{
    GString *where = g_string_new(NULL);
    size_t off;
    ics_jdoc *d = at ? doc_of(r, at, &off, at_key) : NULL;
    if (d) {
        int line, col;
        offset_to_line_col(d, off, &line, &col);
        g_string_printf(where, "%s:%d:%d: ", d->name, line, col);
    } else if (r->docs->len > 0) {
        ics_jdoc *last = g_ptr_array_index(r->docs, r->docs->len - 1);
        g_string_printf(where, "%s: ", last->name);
    }
    size_t start = where->len, eoff;
    g_string_append(where, r->path->str);
    if (d && r->elide_item && doc_of(r, r->elide_item, &eoff, false) == d &&
        r->elide_from <= r->elide_to && r->elide_to <= r->path->len)
        g_string_erase(where, (gssize)(start + r->elide_from),
                       (gssize)(r->elide_to - r->elide_from));
    if (key)
        path_append_key(where, key, false);
    return g_string_free(where, FALSE);
}

static void fail_v(ics_jr *r, const cJSON *at, bool at_key, const char *key, const char *fmt,
                   va_list ap)
{
    if (r->error)
        return;
    char *msg = g_strdup_vprintf(fmt, ap);
    char *where = locate(r, at, at_key, key);
    set_error(r, "%s: %s", where, msg);
    g_free(where);
    g_free(msg);
}

char *ics_jr_where(const ics_jr *r, const cJSON *at, const char *key)
{
    char *where = locate(r, at, false, key);
    char *line = one_line(where);
    g_free(where);
    return line;
}

void ics_jr_fail(ics_jr *r, const cJSON *at, const char *key, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fail_v(r, at, false, key, fmt, ap);
    va_end(ap);
}

static void fail_at_key(ics_jr *r, const cJSON *member, const char *fmt, ...) G_GNUC_PRINTF(3, 4);
static void fail_at_key(ics_jr *r, const cJSON *member, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fail_v(r, member, true, member->string, fmt, ap);
    va_end(ap);
}

/* ---- typed getters ------------------------------------------------------------------------ */

char *ics_json_describe(const cJSON *v)
{
    if (!v)
        return g_strdup("nothing");
    if (cJSON_IsString(v)) {
        const char *s = v->valuestring;
        char *cut = g_strndup(s, 40);
        char *esc = g_strescape(cut, NULL);
        char *out = g_strdup_printf("\"%s%s\"", esc, strlen(s) > 40 ? "..." : "");
        g_free(esc);
        g_free(cut);
        return out;
    }
    if (cJSON_IsNumber(v))
        return g_strdup_printf("%.15g", v->valuedouble);
    if (cJSON_IsBool(v))
        return g_strdup(cJSON_IsTrue(v) ? "true" : "false");
    if (cJSON_IsNull(v))
        return g_strdup("null");
    if (cJSON_IsArray(v))
        return g_strdup("an array");
    if (cJSON_IsObject(v))
        return g_strdup("an object");
    return g_strdup("an invalid value");
}

static void fail_got(ics_jr *r, const cJSON *obj, const char *key, const cJSON *v,
                     const char *expected)
{
    char *got = ics_json_describe(v);
    ics_jr_fail(r, v ? v : obj, key, "expected %s, got %s", expected, got);
    g_free(got);
}

bool ics_jr_keys(ics_jr *r, const cJSON *obj, const char *const *allowed)
{
    if (r->error)
        return false;
    if (!cJSON_IsObject(obj)) {
        fail_got(r, obj, NULL, obj, "an object");
        return false;
    }
    for (const cJSON *m = obj->child; m; m = m->next) {
        bool known = false;
        for (const char *const *a = allowed; *a && !known; a++)
            known = strcmp(*a, m->string) == 0;
        if (!known) {
            GString *list = g_string_new(NULL);
            for (const char *const *a = allowed; *a; a++)
                g_string_append_printf(list, "%s%s", a == allowed ? "" : ", ", *a);
            char *got = g_strescape(m->string, NULL);
            fail_at_key(r, m, "expected one of the keys %s, got \"%s\" (an unknown key)", list->str,
                        got);
            g_free(got);
            g_string_free(list, TRUE);
            return false;
        }
        for (const cJSON *p = obj->child; p != m; p = p->next)
            if (strcmp(p->string, m->string) == 0) {
                fail_at_key(r, m, "expected each key once, got a duplicate");
                return false;
            }
    }
    return true;
}

bool ics_jr_unique_keys(ics_jr *r, const cJSON *obj)
{
    if (r->error || !cJSON_IsObject(obj))
        return r->error == NULL;
    GHashTable *seen = g_hash_table_new(g_str_hash, g_str_equal);
    for (const cJSON *m = obj->child; m && !r->error; m = m->next)
        if (!g_hash_table_add(seen, m->string))
            fail_at_key(r, m, "expected each key once, got a duplicate");
    g_hash_table_destroy(seen);
    return r->error == NULL;
}

/* The member `key` of obj; records a "missing" error when required. */
static const cJSON *member(ics_jr *r, const cJSON *obj, const char *key, bool required,
                           const char *expected)
{
    if (r->error)
        return NULL;
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!v && required)
        ics_jr_fail(r, obj, key, "expected %s, got nothing (the key is missing)", expected);
    return v;
}

bool ics_jr_int(ics_jr *r, const cJSON *obj, const char *key, bool required, int64_t lo, int64_t hi,
                int64_t *out)
{
    char expected[96];
    snprintf(expected, sizeof expected, "an integer in %" PRId64 "..%" PRId64, lo, hi);
    if (hi == INT64_MAX)
        snprintf(expected, sizeof expected, "an integer >= %" PRId64, lo);
    const cJSON *v = member(r, obj, key, required, expected);
    if (!v)
        return false;
    double d = cJSON_IsNumber(v) ? v->valuedouble : NAN;
    /* (double)INT64_MAX rounds up to 2^63, which no int64_t holds */
    if (!cJSON_IsNumber(v) || d != floor(d) || d < (double)lo || d > (double)hi || d >= 0x1p63) {
        fail_got(r, obj, key, v, expected);
        return false;
    }
    *out = (int64_t)d;
    return true;
}

bool ics_jr_num(ics_jr *r, const cJSON *obj, const char *key, bool required, double lo, double hi,
                double *out)
{
    char expected[96];
    if (isinf(hi))
        snprintf(expected, sizeof expected, "a number >= %g", lo);
    else
        snprintf(expected, sizeof expected, "a number in %g..%g", lo, hi);
    const cJSON *v = member(r, obj, key, required, expected);
    if (!v)
        return false;
    if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble) || v->valuedouble < lo ||
        v->valuedouble > hi) {
        fail_got(r, obj, key, v, expected);
        return false;
    }
    *out = v->valuedouble;
    return true;
}

bool ics_jr_bool(ics_jr *r, const cJSON *obj, const char *key, bool required, bool *out)
{
    const cJSON *v = member(r, obj, key, required, "true or false");
    if (!v)
        return false;
    if (!cJSON_IsBool(v)) {
        fail_got(r, obj, key, v, "true or false");
        return false;
    }
    *out = cJSON_IsTrue(v);
    return true;
}

bool ics_jr_str(ics_jr *r, const cJSON *obj, const char *key, bool required, const char **out)
{
    const cJSON *v = member(r, obj, key, required, "a non-empty string");
    if (!v)
        return false;
    if (!cJSON_IsString(v) || v->valuestring[0] == '\0') {
        fail_got(r, obj, key, v, "a non-empty string");
        return false;
    }
    *out = v->valuestring;
    return true;
}

bool ics_jr_enum(ics_jr *r, const cJSON *obj, const char *key, bool required,
                 const char *const *names, int *out)
{
    GString *expected = g_string_new("one of ");
    for (const char *const *n = names; *n; n++)
        g_string_append_printf(expected, "%s\"%s\"", n == names ? "" : ", ", *n);
    const cJSON *v = member(r, obj, key, required, expected->str);
    bool ok = false;
    if (v && cJSON_IsString(v)) {
        for (int i = 0; names[i] && !ok; i++)
            if (strcmp(names[i], v->valuestring) == 0) {
                *out = i;
                ok = true;
            }
    }
    if (v && !ok)
        fail_got(r, obj, key, v, expected->str);
    g_string_free(expected, TRUE);
    return ok;
}

const cJSON *ics_jr_obj(ics_jr *r, const cJSON *obj, const char *key, bool required)
{
    const cJSON *v = member(r, obj, key, required, "an object");
    if (v && !cJSON_IsObject(v)) {
        fail_got(r, obj, key, v, "an object");
        return NULL;
    }
    return v;
}

const cJSON *ics_jr_arr(ics_jr *r, const cJSON *obj, const char *key, bool required)
{
    const cJSON *v = member(r, obj, key, required, "an array");
    if (v && !cJSON_IsArray(v)) {
        fail_got(r, obj, key, v, "an array");
        return NULL;
    }
    return v;
}

void ics_json_write_string(FILE *f, const char *s)
{
    char *valid = s && !g_utf8_validate(s, -1, NULL) ? g_utf8_make_valid(s, -1) : NULL;
    const char *p = valid ? valid : s ? s : "";
    fputc('"', f);
    for (; *p; p++) {
        unsigned char c = (unsigned char)*p;
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c < 0x20)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
    }
    fputc('"', f);
    g_free(valid);
}
