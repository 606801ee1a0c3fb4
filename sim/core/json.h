/* Reading user JSON with errors a person can act on: file:line:col, the JSON path, what was
 * expected and what was found. cJSON parses; this module remembers where each value sat in the
 * text (cJSON does not) and offers typed getters that check ranges and report unknown keys.
 * Only the readers (hw, scenario, trace) include this header; nothing downstream sees cJSON. */
#ifndef ICS_JSON_H
#define ICS_JSON_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <cjson/cJSON.h>
#include <glib.h>

/* Errors set by this module and the readers built on it: domain ICS_JSON_ERROR, code
 * ICS_JSON_ERROR_INPUT. The message is the complete line to print. */
#define ICS_JSON_ERROR (ics_json_error_quark())
enum { ICS_JSON_ERROR_INPUT = 1 };
GQuark ics_json_error_quark(void);

/* A reader: a set of loaded documents, a current JSON path, and a sticky first error.
 * Every getter is a no-op returning false/NULL once an error is set, so reader code can read a
 * whole object and check ics_jr_ok() once. Not thread-safe; one reader per load. */
typedef struct ics_jr ics_jr;

ics_jr *ics_jr_new(void);
void ics_jr_free(ics_jr *r); /* frees every loaded document */

/* Loads and parses a file (transfer none: the reader owns the tree). On a syntax error sets
 * the error with the position and the path reached, and returns NULL. Resets the current path
 * to "$". display_path is the name used in messages. */
const cJSON *ics_jr_load(ics_jr *r, const char *display_path);

/* Same, from memory (for tests and the fuzzer). */
const cJSON *ics_jr_load_text(ics_jr *r, const char *display_path, const char *text, size_t len);

/* Whether len bytes of text can be JSON text at all: no NUL inside and UTF-8 throughout (RFC
 * 8259). ics_jr_load_text refuses, with the place, what fails this; readers that parse with
 * cJSON alone on a first pass must check it too. */
bool ics_json_text_ok(const char *text, size_t len);

bool ics_jr_ok(const ics_jr *r);
/* Moves the first error out (transfer full); NULL if none. */
GError *ics_jr_take_error(ics_jr *r);

/* Sets the error (if none yet) at value `at` (NULL: no position) with the current path plus
 * `key` (NULL: none): "<file>:<line>:<col>: <path>: <message>". */
void ics_jr_fail(ics_jr *r, const cJSON *at, const char *key, const char *fmt, ...)
    G_GNUC_PRINTF(4, 5);

/* Path handling. Push returns a mark; pop restores the path to that mark. */
size_t ics_jr_push_key(ics_jr *r, const char *key);
size_t ics_jr_push_index(ics_jr *r, int index);
void ics_jr_pop(ics_jr *r, size_t mark);
const char *ics_jr_path(const ics_jr *r);
/* Where value `at` sits as an error would name it, "<file>:<line>:<col>: <path>[.key]" with the
 * current path (one line of valid UTF-8; transfer full, g_free): for checks made after reading,
 * which name the value wherever it came from (a scenario's layout checked against its model). */
char *ics_jr_where(const ics_jr *r, const cJSON *at, const char *key);
/* The file the value was loaded from (transfer none), or NULL. */
const char *ics_jr_file_of(const ics_jr *r, const cJSON *item);

/* While set, errors located in the document that holds `item` leave out the bytes
 * [from, to) of the current path (marks from ics_jr_push_*): a cluster reads its node file's
 * values under "$.node", but in the node file they sit at "$". item NULL: no longer. */
void ics_jr_elide(ics_jr *r, const cJSON *item, size_t from, size_t to);

/* Makes `alias` (a cJSON reference item created by the caller) report the location of
 * `original`, and hands the reader `owned` (transfer full; may be NULL) to delete at free. */
void ics_jr_alias(ics_jr *r, const cJSON *alias, const cJSON *original);
void ics_jr_adopt(ics_jr *r, cJSON *owned);

/* Checks that obj is an object whose keys are all in `allowed` (NULL-terminated) and appear
 * once. Sets the error otherwise. */
bool ics_jr_keys(ics_jr *r, const cJSON *obj, const char *const *allowed);
/* Checks that no key of obj appears twice, for objects whose keys are names the user chose
 * (catalog sections). O(keys). Sets the error, at the second occurrence, otherwise. */
bool ics_jr_unique_keys(ics_jr *r, const cJSON *obj);

/* Typed getters. `required`: a missing key is an error; otherwise *out is left unchanged and
 * the getter returns false with no error. */
bool ics_jr_int(ics_jr *r, const cJSON *obj, const char *key, bool required, int64_t lo, int64_t hi,
                int64_t *out);
bool ics_jr_num(ics_jr *r, const cJSON *obj, const char *key, bool required, double lo, double hi,
                double *out);
bool ics_jr_bool(ics_jr *r, const cJSON *obj, const char *key, bool required, bool *out);
/* *out points into the tree (transfer none); empty strings are rejected. */
bool ics_jr_str(ics_jr *r, const cJSON *obj, const char *key, bool required, const char **out);
/* One of `names` (NULL-terminated); *out is its index. */
bool ics_jr_enum(ics_jr *r, const cJSON *obj, const char *key, bool required,
                 const char *const *names, int *out);
/* A child object / array (transfer none), or NULL if absent (error only if required). */
const cJSON *ics_jr_obj(ics_jr *r, const cJSON *obj, const char *key, bool required);
const cJSON *ics_jr_arr(ics_jr *r, const cJSON *obj, const char *key, bool required);

/* A short description of a value for "got ..." ("\"eight\"", "-5", "an object", "null"). */
char *ics_json_describe(const cJSON *v); /* transfer full, g_free */

/* ---- writing ---- */

/* Writes s (NULL: "") to f as a JSON string, quoted and escaped ('"', '\\', control
 * characters); bytes that are not UTF-8 become U+FFFD, so what is written is always valid JSON.
 * For writers that stream (traces, timelines: millions of values, no tree). */
void ics_json_write_string(FILE *f, const char *s);

#endif
