/* Located JSON reading (sim/json.c): every error names file:line:col of the offending value
 * (or key), its JSON path, what was expected and what was found; syntax errors are located at
 * the offending character; merged objects report where their values were written. */
#include <math.h>
#include <string.h>

#include <glib.h>
#include <glib/gstdio.h>

#include "core/error.h"
#include "core/json.h"

/* Loads `text` as "t.json" (sets no error if it parses). */
static const cJSON *load(ics_jr *r, const char *text)
{
    return ics_jr_load_text(r, "t.json", text, strlen(text));
}

/* The message of the reader's error (transfer full), asserting there is one. */
static char *take_msg(ics_jr *r)
{
    g_assert_false(ics_jr_ok(r));
    GError *e = ics_jr_take_error(r);
    g_assert_error(e, ICS_JSON_ERROR, ICS_JSON_ERROR_INPUT);
    char *m = g_strdup(e->message);
    g_error_free(e);
    g_assert_true(ics_jr_ok(r));
    return m;
}

static void assert_msg(ics_jr *r, const char *want)
{
    char *m = take_msg(r);
    g_assert_cmpstr(m, ==, want);
    g_free(m);
}

/* Syntax error message for a text. */
static char *syntax_msg(const char *text, size_t len)
{
    ics_jr *r = ics_jr_new();
    g_assert_null(ics_jr_load_text(r, "t.json", text, len));
    char *m = take_msg(r);
    ics_jr_free(r);
    return m;
}

static void test_deep_location(void)
{
    const char *text = "{\n"
                       "  \"a\": {\n"
                       "    \"b\": [\n"
                       "      1,\n"
                       "      {\"c\": [true, {\"d\":   \"x\"}]}\n"
                       "    ]\n"
                       "  }\n"
                       "}\n";
    ics_jr *r = ics_jr_new();
    const cJSON *root = load(r, text);
    g_assert_nonnull(root);
    const cJSON *b = cJSON_GetObjectItem(cJSON_GetObjectItem(root, "a"), "b");
    const cJSON *c = cJSON_GetObjectItem(cJSON_GetArrayItem(b, 1), "c");
    const cJSON *d = cJSON_GetObjectItem(cJSON_GetArrayItem(c, 1), "d");
    g_assert_true(cJSON_IsString(d));

    size_t m0 = ics_jr_push_key(r, "a");
    ics_jr_push_key(r, "b");
    ics_jr_push_index(r, 1);
    ics_jr_push_key(r, "c");
    ics_jr_push_index(r, 1);
    g_assert_cmpstr(ics_jr_path(r), ==, "$.a.b[1].c[1]");
    ics_jr_fail(r, d, "d", "expected %s, got \"x\"", "a number");
    ics_jr_pop(r, m0);
    g_assert_cmpstr(ics_jr_path(r), ==, "$");
    assert_msg(r, "t.json:5:28: $.a.b[1].c[1].d: expected a number, got \"x\"");

    /* the array element, the array, the root */
    ics_jr_fail(r, cJSON_GetArrayItem(b, 0), NULL, "expected x, got y");
    assert_msg(r, "t.json:4:7: $: expected x, got y");
    ics_jr_fail(r, b, NULL, "expected x, got y");
    assert_msg(r, "t.json:3:10: $: expected x, got y");
    ics_jr_fail(r, root, NULL, "expected x, got y");
    assert_msg(r, "t.json:1:1: $: expected x, got y");
    /* no value: the file only */
    ics_jr_fail(r, NULL, "k", "expected x, got y");
    assert_msg(r, "t.json: $.k: expected x, got y");
    g_assert_cmpstr(ics_jr_file_of(r, d), ==, "t.json");
    ics_jr_free(r);
}

/* Tabs count as one column; CRLF ends a line; whitespace cJSON skips (form feed, a BOM) is
 * skipped by the locator too, so later values keep their places. */
static void test_whitespace_location(void)
{
    ics_jr *r = ics_jr_new();
    const cJSON *root = load(r, "{\r\n\t\"a\":\t1,\f\"b\": 2}");
    g_assert_nonnull(root);
    ics_jr_fail(r, cJSON_GetObjectItem(root, "a"), "a", "expected x, got y");
    assert_msg(r, "t.json:2:7: $.a: expected x, got y");
    ics_jr_fail(r, cJSON_GetObjectItem(root, "b"), "b", "expected x, got y");
    assert_msg(r, "t.json:2:15: $.b: expected x, got y");
    ics_jr_free(r);

    r = ics_jr_new();
    root = load(r, "\xEF\xBB\xBF{\"a\": [0, 7]}");
    g_assert_nonnull(root);
    ics_jr_fail(r, cJSON_GetArrayItem(cJSON_GetObjectItem(root, "a"), 1), NULL,
                "expected x, got y");
    assert_msg(r, "t.json:1:11: $: expected x, got y");
    ics_jr_free(r);

    /* a UTF-8 character is one column */
    r = ics_jr_new();
    root = load(r, "{\"\xC3\xA9\": [1, 2]}");
    g_assert_nonnull(root);
    ics_jr_fail(r, cJSON_GetArrayItem(root->child, 1), NULL, "expected x, got y");
    assert_msg(r, "t.json:1:11: $: expected x, got y");
    ics_jr_free(r);
}

static void test_unknown_key_at_key(void)
{
    static const char *const allowed[] = {"alpha", "beta", NULL};
    ics_jr *r = ics_jr_new();
    const cJSON *root = load(r, "{\"alpha\": 1,\n  \"gamma\":\n     {\"x\": 1}}");
    g_assert_false(ics_jr_keys(r, root, allowed));
    assert_msg(r, "t.json:2:3: $.gamma: expected one of the keys alpha, beta, got \"gamma\" (an "
                  "unknown key)");
    ics_jr_free(r);

    r = ics_jr_new();
    root = load(r, "{\"alpha\": 1, \"beta\": 2, \"alpha\": 3}");
    g_assert_false(ics_jr_keys(r, root, allowed));
    assert_msg(r, "t.json:1:25: $.alpha: expected each key once, got a duplicate");
    /* keys the user names: only uniqueness */
    g_assert_false(ics_jr_unique_keys(r, root));
    assert_msg(r, "t.json:1:25: $.alpha: expected each key once, got a duplicate");
    ics_jr_free(r);

    r = ics_jr_new();
    root = load(r, "[1]");
    g_assert_false(ics_jr_keys(r, root, allowed));
    assert_msg(r, "t.json:1:1: $: expected an object, got an array");
    ics_jr_free(r);
}

/* Keys that are not plain names are bracketed, and no message spans two lines. */
static void test_odd_keys(void)
{
    ics_jr *r = ics_jr_new();
    const cJSON *root = load(r, "{\"a.b\": {\"new\\nline\": 1, \"x\": {\"ok-1_b\": [\"v\\n2\"]}}}");
    g_assert_nonnull(root);
    const cJSON *ab = cJSON_GetObjectItem(root, "a.b");
    size_t m0 = ics_jr_push_key(r, "a.b");
    ics_jr_fail(r, cJSON_GetObjectItem(ab, "new\nline"), "new\nline", "expected x, got y");
    assert_msg(r, "t.json:1:23: $[\"a.b\"][\"new\\x0aline\"]: expected x, got y");
    ics_jr_push_key(r, "x");
    ics_jr_fail(r, ab, "ok-1_b", "expected x, got %s", "\"v\n2\"");
    assert_msg(r, "t.json:1:9: $[\"a.b\"].x.ok-1_b: expected x, got \"v\\n2\"");
    ics_jr_pop(r, m0);
    ics_jr_free(r);

    /* a raw newline inside a key, in a syntax error's path */
    char *m = syntax_msg("{\"a\nb\": [1 2]}", 13);
    g_assert_cmpstr(m, ==, "t.json:2:8: $[\"a\\x0ab\"]: expected ',' or ']', got '2'");
    g_free(m);
}

static void check_describe(const char *json, const char *want)
{
    cJSON *v = cJSON_Parse(json);
    g_assert_nonnull(v);
    char *got = ics_json_describe(v);
    g_assert_cmpstr(got, ==, want);
    g_free(got);
    cJSON_Delete(v);
}

static void test_describe(void)
{
    check_describe("\"eight\"", "\"eight\"");
    check_describe("\"\"", "\"\"");
    check_describe("\"a\\\"b\\nc\"", "\"a\\\"b\\nc\"");
    check_describe("\"0123456789012345678901234567890123456789X\"",
                   "\"0123456789012345678901234567890123456789...\"");
    check_describe("-5", "-5");
    check_describe("2.5", "2.5");
    check_describe("1e20", "1e+20");
    check_describe("0.1", "0.1");
    check_describe("true", "true");
    check_describe("false", "false");
    check_describe("null", "null");
    check_describe("[1, 2]", "an array");
    check_describe("{}", "an object");
    char *n = ics_json_describe(NULL);
    g_assert_cmpstr(n, ==, "nothing");
    g_free(n);
}

typedef struct {
    const char *text;
    const char *want;
} syntax_case;

static void test_syntax_positions(void)
{
    static const syntax_case cases[] = {
        {"", "t.json:1:1: $: expected a value, got end of file"},
        {"   \n", "t.json:2:1: $: expected a value, got end of file"},
        {"{\"a\": 1,\n}", "t.json:2:1: $: expected a key in double quotes, got '}'"},
        {"[1, 2,]", "t.json:1:7: $[2]: expected a value, got ']'"},
        {"{\"a\": 1", "t.json:1:8: $: expected ',' or '}', got end of file"},
        {"{\"a\": [1, 2}", "t.json:1:12: $.a: expected ',' or ']', got '}'"},
        {"{\"a\" 1}", "t.json:1:6: $.a: expected ':' after the key, got '1'"},
        {"{\"a\": {\"b\": @}}",
         "t.json:1:13: $.a.b: expected a JSON value (object, array, string, number, true, "
         "false or null), got '@'"},
        {"{\"a\": \"x}", "t.json:1:7: $.a: expected '\"' to close the string that starts here, "
                         "got end of file"},
        {"{} {}", "t.json:1:4: $: expected the end of the text after the top-level value, "
                  "got '{'"},
        {"{a: 1}", "t.json:1:2: $: expected a key in double quotes or '}', got 'a'"},
        {"{\"a\": 1 \"b\": 2}", "t.json:1:9: $: expected ',' or '}', got '\"'"},
        {"[\n  1,\n  tru\n]", "t.json:3:3: $[1]: expected a JSON value (object, array, string, "
                              "number, true, false or null), got 't'"},
    };
    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        char *m = syntax_msg(cases[i].text, strlen(cases[i].text));
        if (strcmp(m, cases[i].want) != 0)
            g_error("text %s:\n  got  %s\n  want %s", cases[i].text, m, cases[i].want);
        g_free(m);
    }
}

static void test_syntax_nul_and_depth(void)
{
    char *m = syntax_msg("{\"a\":\n 1\0}", 9);
    g_assert_cmpstr(m, ==, "t.json:2:3: $: expected JSON text, got a NUL byte");
    g_free(m);

    /* cJSON's nesting limit: the 1001st level is reported where it opens, with a short path */
    GString *deep = g_string_new("{\"a\": ");
    for (int i = 0; i < 1200; i++)
        g_string_append_c(deep, '[');
    m = syntax_msg(deep->str, deep->len);
    g_assert_true(g_str_has_prefix(m, "t.json:1:1006: $.a[0][0]"));
    g_assert_true(g_str_has_suffix(m, "[0]: expected at most 1000 nested arrays and objects, "
                                      "got '['"));
    g_assert_cmpuint(strlen(m), <, 250);
    g_free(m);

    /* 1000 levels parse, and their leaves are located */
    g_string_assign(deep, "");
    for (int i = 0; i < 1000; i++)
        g_string_append_c(deep, '[');
    g_string_append(deep, "7");
    for (int i = 0; i < 1000; i++)
        g_string_append_c(deep, ']');
    ics_jr *r = ics_jr_new();
    const cJSON *v = ics_jr_load_text(r, "t.json", deep->str, deep->len);
    g_assert_nonnull(v);
    while (v->child)
        v = v->child;
    ics_jr_fail(r, v, NULL, "expected x, got y");
    assert_msg(r, "t.json:1:1001: $: expected x, got y");
    ics_jr_free(r);
    g_string_free(deep, TRUE);
}

static void test_getters(void)
{
    ics_jr *r = ics_jr_new();
    const cJSON *o = load(r, "{\"i\": 2.5, \"n\": -1, \"s\": \"\", \"b\": 1, \"e\": \"c\",\n"
                             " \"big\": 1e300, \"ok\": 7, \"arr\": {}, \"obj\": []}");
    g_assert_nonnull(o);
    int64_t i = 42;
    double d = 0;
    bool b = false;
    const char *s = NULL;
    int e = -1;
    static const char *const names[] = {"a", "b", NULL};

    g_assert_false(ics_jr_int(r, o, "missing", false, 0, 10, &i));
    g_assert_true(ics_jr_ok(r));
    g_assert_cmpint(i, ==, 42);
    g_assert_true(ics_jr_int(r, o, "ok", true, 0, 10, &i));
    g_assert_cmpint(i, ==, 7);

    g_assert_false(ics_jr_int(r, o, "i", true, 0, 10, &i));
    assert_msg(r, "t.json:1:7: $.i: expected an integer in 0..10, got 2.5");
    g_assert_false(ics_jr_int(r, o, "big", true, 1, INT64_MAX, &i));
    assert_msg(r, "t.json:2:9: $.big: expected an integer >= 1, got 1e+300");
    g_assert_false(ics_jr_int(r, o, "missing", true, 0, 10, &i));
    assert_msg(r, "t.json:1:1: $.missing: expected an integer in 0..10, got nothing (the key is "
                  "missing)");
    g_assert_false(ics_jr_num(r, o, "n", true, 0, INFINITY, &d));
    assert_msg(r, "t.json:1:17: $.n: expected a number >= 0, got -1");
    g_assert_false(ics_jr_num(r, o, "s", true, 0.5, 2, &d));
    assert_msg(r, "t.json:1:26: $.s: expected a number in 0.5..2, got \"\"");
    g_assert_false(ics_jr_str(r, o, "s", true, &s));
    assert_msg(r, "t.json:1:26: $.s: expected a non-empty string, got \"\"");
    g_assert_false(ics_jr_bool(r, o, "b", true, &b));
    assert_msg(r, "t.json:1:35: $.b: expected true or false, got 1");
    g_assert_false(ics_jr_enum(r, o, "e", true, names, &e));
    assert_msg(r, "t.json:1:43: $.e: expected one of \"a\", \"b\", got \"c\"");
    g_assert_null(ics_jr_arr(r, o, "arr", true));
    assert_msg(r, "t.json:2:32: $.arr: expected an array, got an object");
    g_assert_null(ics_jr_obj(r, o, "obj", true));
    assert_msg(r, "t.json:2:43: $.obj: expected an object, got an array");

    /* The first error sticks; later getters do nothing. */
    g_assert_false(ics_jr_int(r, o, "i", true, 0, 10, &i));
    g_assert_false(ics_jr_str(r, o, "s", true, &s));
    g_assert_false(ics_jr_int(r, o, "ok", true, 0, 10, &i));
    assert_msg(r, "t.json:1:7: $.i: expected an integer in 0..10, got 2.5");
    ics_jr_free(r);
}

/* A merged object (a cluster's node with replaced keys) reports where each value was written,
 * in whichever document, and ics_jr_elide drops the prefix the merged view adds. */
static void test_alias(void)
{
    ics_jr *r = ics_jr_new();
    const char *ta = "{\n  \"gpu\": \"x\",\n  \"gpus\": 8\n}";
    const char *tb = "{\"node\": {\"gpu\": \"y\"}}";
    const cJSON *a = ics_jr_load_text(r, "node.json", ta, strlen(ta));
    const cJSON *b = ics_jr_load_text(r, "cluster.json", tb, strlen(tb));
    g_assert_nonnull(a);
    g_assert_nonnull(b);
    const cJSON *repl = cJSON_GetObjectItem(b, "node");

    cJSON *m = cJSON_CreateObject();
    ics_jr_adopt(r, m);
    cJSON_AddItemReferenceToObject(m, "gpus", cJSON_GetObjectItem(a, "gpus"));
    ics_jr_alias(r, cJSON_GetObjectItem(m, "gpus"), cJSON_GetObjectItem(a, "gpus"));
    cJSON_AddItemReferenceToObject(m, "gpu", cJSON_GetObjectItem(repl, "gpu"));
    ics_jr_alias(r, cJSON_GetObjectItem(m, "gpu"), cJSON_GetObjectItem(repl, "gpu"));
    ics_jr_alias(r, m, a);

    int64_t n;
    g_assert_false(ics_jr_int(r, m, "gpus", true, 1, 4, &n));
    assert_msg(r, "node.json:3:11: $.gpus: expected an integer in 1..4, got 8");
    ics_jr_fail(r, cJSON_GetObjectItem(m, "gpu"), "gpu", "expected x, got \"y\"");
    assert_msg(r, "cluster.json:1:18: $.gpu: expected x, got \"y\"");
    g_assert_false(ics_jr_int(r, m, "missing", true, 1, 4, &n));
    assert_msg(r, "node.json:1:1: $.missing: expected an integer in 1..4, got nothing (the key "
                  "is missing)");
    g_assert_cmpstr(ics_jr_file_of(r, cJSON_GetObjectItem(m, "gpu")), ==, "cluster.json");
    g_assert_cmpstr(ics_jr_file_of(r, m), ==, "node.json");

    /* read under "$.node": node.json's values are at "$..." there */
    size_t mark = ics_jr_push_key(r, "node");
    ics_jr_elide(r, a, mark, strlen(ics_jr_path(r)));
    g_assert_false(ics_jr_int(r, m, "gpus", true, 1, 4, &n));
    assert_msg(r, "node.json:3:11: $.gpus: expected an integer in 1..4, got 8");
    ics_jr_fail(r, cJSON_GetObjectItem(m, "gpu"), "gpu", "expected x, got \"y\"");
    assert_msg(r, "cluster.json:1:18: $.node.gpu: expected x, got \"y\"");
    ics_jr_elide(r, NULL, 0, 0);
    ics_jr_pop(r, mark);
    ics_jr_free(r);
}

static void test_load_file(void)
{
    ics_jr *r = ics_jr_new();
    g_assert_null(ics_jr_load(r, "/nonexistent/dir/x.json"));
    char *m = take_msg(r);
    g_assert_true(g_str_has_prefix(m, "/nonexistent/dir/x.json: expected a readable file, got "));
    g_free(m);

    char *dir = g_dir_make_tmp("icsim-json-XXXXXX", NULL);
    g_assert_null(ics_jr_load(r, dir));
    m = take_msg(r);
    char *want = g_strdup_printf("%s: expected a regular file, got a directory", dir);
    g_assert_cmpstr(m, ==, want);
    g_free(want);
    g_free(m);

    char *p = g_build_filename(dir, "x.json", NULL);
    g_assert_true(g_file_set_contents(p, "{\n  \"k\": [1, 2,, 3]\n}\n", -1, NULL));
    g_assert_null(ics_jr_load(r, p));
    m = take_msg(r);
    want = g_strdup_printf("%s:2:14: $.k[2]: expected a value, got ','", p);
    g_assert_cmpstr(m, ==, want);
    g_free(want);
    g_free(m);
    g_remove(p);
    g_rmdir(dir);
    g_free(p);
    g_free(dir);
    ics_jr_free(r);
}

/* The exit status an error means (core/error.h): 2 for the user's input, the JSON reader's
 * errors included, 1 for files that cannot be read or written. */
/* JSON text is UTF-8 (RFC 8259): a Latin-1 "\xe9" is refused where it sits, in a message that is
 * itself valid UTF-8; UTF-8 text stays as it is, and a name given by the program that is not
 * UTF-8 (a "\x80" key) reaches messages escaped. */
static void test_messages_utf8(void)
{
    ics_jr *r = ics_jr_new();
    g_assert_null(load(r, "{\"caf\xe9\": 1}"));
    char *m = take_msg(r);
    g_assert_true(g_utf8_validate(m, -1, NULL));
    g_assert_nonnull(strstr(m, "t.json:1:6: "));
    g_assert_nonnull(strstr(m, "expected UTF-8 text (RFC 8259), got the byte 0xE9"));
    g_free(m);
    ics_jr_free(r);
    r = ics_jr_new();
    const cJSON *root = load(r, "{\"na\xc3\xafve\": {\"x\": 2}}");
    g_assert_nonnull(root);
    const cJSON *inner = cJSON_GetObjectItemCaseSensitive(root, "na\xc3\xafve");
    size_t mark = ics_jr_push_key(r, inner->string);
    char *where = ics_jr_where(r, inner->child, "\x80");
    g_assert_cmpstr(where, ==, "t.json:1:17: $[\"na\xc3\xafve\"][\"\\x80\"]");
    g_free(where);
    ics_jr_pop(r, mark);
    ics_jr_free(r);
}

/* The range checks of values that come without a location (core/error.h) word their messages
 * as the reader's getters do. */
static void test_range_checks(void)
{
    GError *err = NULL;
    g_assert_true(ics_check_int("--tp", 8, 1, 65536, &err));
    g_assert_false(ics_check_int("--tp", 0, 1, 65536, &err));
    g_assert_cmpstr(err->message, ==, "--tp: expected an integer in 1..65536, got 0");
    g_clear_error(&err);
    g_assert_false(ics_check_int(NULL, -1, 0, INT64_MAX, &err));
    g_assert_cmpstr(err->message, ==, "expected an integer >= 0, got -1");
    g_clear_error(&err);
    g_assert_false(ics_check_num("--mb", NAN, 0, 1, &err));
    g_assert_cmpstr(err->message, ==, "--mb: expected a number in 0..1, got nan");
    g_clear_error(&err);
    g_assert_false(ics_check_num("--mb", INFINITY, 0, INFINITY, &err));
    g_assert_error(err, ICS_ERROR, ICS_ERROR_INPUT);
    g_clear_error(&err);
    /* 2^63 is no int64_t, whatever the bound */
    ics_jr *r = ics_jr_new();
    const cJSON *root = load(r, "{\"n\": 9223372036854775808}");
    int64_t v;
    g_assert_false(ics_jr_int(r, root, "n", true, 0, INT64_MAX, &v));
    assert_msg(r, "t.json:1:7: $.n: expected an integer >= 0, got 9.22337203685478e+18");
    ics_jr_free(r);
}

static void test_exit_status(void)
{
    ics_jr *r = ics_jr_new();
    g_assert_null(ics_jr_load_text(r, "t.json", "[", 1));
    GError *e = ics_jr_take_error(r);
    g_assert_error(e, ICS_JSON_ERROR, ICS_JSON_ERROR_INPUT);
    g_assert_cmpint(ics_error_exit_status(e), ==, 2);
    g_error_free(e);
    ics_jr_free(r);
    static const struct {
        int code, status;
    } cases[] = {{ICS_ERROR_INPUT, 2}, {ICS_ERROR_LIMIT, 2}, {ICS_ERROR_IO, 1}};
    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        e = g_error_new_literal(ICS_ERROR, cases[i].code, "x");
        g_assert_cmpint(ics_error_exit_status(e), ==, cases[i].status);
        g_error_free(e);
    }
    e = g_error_new_literal(G_FILE_ERROR, G_FILE_ERROR_NOENT, "x"); /* another library's */
    g_assert_cmpint(ics_error_exit_status(e), ==, 1);
    g_error_free(e);
    g_assert_cmpstr(g_quark_to_string(ICS_ERROR), ==, "ics-error-quark");
    g_assert_cmpstr(g_quark_to_string(ICS_JSON_ERROR), ==, "ics-json-error-quark");
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);
    g_test_add_func("/json/deep-location", test_deep_location);
    g_test_add_func("/json/whitespace-location", test_whitespace_location);
    g_test_add_func("/json/unknown-key-at-key", test_unknown_key_at_key);
    g_test_add_func("/json/odd-keys", test_odd_keys);
    g_test_add_func("/json/describe", test_describe);
    g_test_add_func("/json/syntax-positions", test_syntax_positions);
    g_test_add_func("/json/syntax-nul-and-depth", test_syntax_nul_and_depth);
    g_test_add_func("/json/getters", test_getters);
    g_test_add_func("/json/alias", test_alias);
    g_test_add_func("/json/load-file", test_load_file);
    g_test_add_func("/json/exit-status", test_exit_status);
    g_test_add_func("/json/messages-utf8", test_messages_utf8);
    g_test_add_func("/json/range-checks", test_range_checks);
    return g_test_run();
}
