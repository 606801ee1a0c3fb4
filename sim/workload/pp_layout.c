/* Megatron-Core's pipeline layout strings (pp_layout.h). Megatron expands the repetitions
 * textually, then splits the result at '|'; so does this file, by recursive descent instead of
 * Megatron's regular expressions, so that a malformed string is refused with the character
 * where it goes wrong rather than mis-expanded. */
#include "workload/pp_layout.h"

#include <stdint.h>
#include <string.h>

#include "core/core.h"

/* The nesting of groups followed: deeper is refused (the recursion's bound). */
#define MAX_DEPTH 64

typedef struct {
    const char *s;
    char *name; /* "NAME: ", or "" */
    size_t at;
    GString *out;
    GError **error;
} parser;

static bool fail_at(parser *p, const char *expected)
{
    char got[16];
    if (p->s[p->at])
        g_snprintf(got, sizeof got, "'%c'", p->s[p->at]);
    else
        g_snprintf(got, sizeof got, "the end");
    g_set_error(p->error, ICS_ERROR, ICS_ERROR_INPUT, "%sexpected %s, got %s at character %zu",
                p->name, expected, got, p->at + 1);
    return false;
}

static bool is_symbol(char c)
{
    return c == 'E' || c == 't' || c == 'm' || c == 'L' || c == '|';
}

/* An optional "*N" after a symbol or a group: N in 1..ICS_PP_LAYOUT_MAX_SYMBOLS (1 without). */
static bool times(parser *p, int64_t *n)
{
    *n = 1;
    if (p->s[p->at] != '*')
        return true;
    p->at++;
    if (!g_ascii_isdigit(p->s[p->at]))
        return fail_at(p, "a count after '*'");
    int64_t v = 0;
    while (g_ascii_isdigit(p->s[p->at])) {
        v = v * 10 + (p->s[p->at++] - '0');
        if (v > ICS_PP_LAYOUT_MAX_SYMBOLS) {
            g_set_error(p->error, ICS_ERROR, ICS_ERROR_LIMIT,
                        "%sexpected a count of at most %d, got more at character %zu", p->name,
                        ICS_PP_LAYOUT_MAX_SYMBOLS, p->at);
            return false;
        }
    }
    if (v < 1)
        return fail_at(p, "a count of 1 or more");
    *n = v;
    return true;
}

/* Appends `piece` n times, within the expansion's bound. */
static bool repeat(parser *p, const char *piece, size_t len, int64_t n)
{
    if ((double)len * (double)n + (double)p->out->len > ICS_PP_LAYOUT_MAX_SYMBOLS) {
        g_set_error(p->error, ICS_ERROR, ICS_ERROR_LIMIT,
                    "%sexpected a layout of at most %d symbols expanded, got more (at "
                    "character %zu)",
                    p->name, ICS_PP_LAYOUT_MAX_SYMBOLS, p->at + 1);
        return false;
    }
    for (int64_t i = 0; i < n; i++)
        g_string_append_len(p->out, piece, (gssize)len);
    return true;
}

/* A sequence of symbols and groups up to a ')' (depth > 0) or the end (depth 0), appended to
 * p->out expanded. Commas and spaces are cosmetic. */
static bool sequence(parser *p, int depth)
{
    for (;;) {
        char c = p->s[p->at];
        if (c == ',' || c == ' ') {
            p->at++;
        } else if (is_symbol(c)) {
            p->at++;
            int64_t n;
            if (!times(p, &n) || !repeat(p, &c, 1, n))
                return false;
        } else if (c == '(') {
            if (depth >= MAX_DEPTH)
                return fail_at(p, "groups nested at most 64 deep");
            p->at++;
            size_t start = p->out->len;
            if (!sequence(p, depth + 1))
                return false;
            if (p->s[p->at] != ')')
                return fail_at(p, "')'");
            p->at++;
            if (p->s[p->at] != '*')
                return fail_at(p, "'*' and a count after a group");
            int64_t n;
            if (!times(p, &n))
                return false;
            /* the group is already there once: append it n - 1 more times */
            char *group = g_strndup(p->out->str + start, p->out->len - start);
            bool ok = repeat(p, group, strlen(group), n - 1);
            g_free(group);
            if (!ok)
                return false;
        } else if (c == ')' && depth > 0) {
            return true;
        } else if (c == '\0' && depth == 0) {
            return true;
        } else {
            return fail_at(p, c == '\0'  ? "')'"
                              : c == '*' ? "a symbol or a group before '*N'"
                              : c == ')' ? "a '(' before ')'"
                                         : "E, t, m, L, '|', ',' or a group '(...)*N'");
        }
    }
}

static int *fail_layout(GError **error, const char *name, const char *what)
{
    g_set_error(error, ICS_ERROR, ICS_ERROR_INPUT, "%sexpected %s", name, what);
    return NULL;
}

/* Where symbol c sits when it is refused: "a second E", or "E in stage 3 (of 32), symbol 2". */
static int *misplaced(GError **error, const char *name, const char *want, char c, int count, int s,
                      int stages, int at)
{
    char *got =
        count > 1 ? g_strdup_printf("a second %c", c)
                  : g_strdup_printf("%c in stage %d (of %d), symbol %d", c, s + 1, stages, at + 1);
    g_set_error(error, ICS_ERROR, ICS_ERROR_INPUT, "%sexpected %s, got %s", name, want, got);
    g_free(got);
    return NULL;
}

/* The expanded string's stages: E first in the first, L last in the last, each once; m's only
 * right before L. */
static int *count_stages(const GString *x, const char *name, int *n, GError **error)
{
    int stages = 1;
    for (size_t i = 0; i < x->len; i++)
        stages += x->str[i] == '|';
    /* counts: one more than the stages' first indices, for the MTP layers (pp_layout.h) */
    int *counts = g_new0(int, stages + 2), s = 0, e = 0, l = 0, mtp = 0,
        at = 0; /* at: in the stage */
    for (size_t i = 0; i < x->len; i++, at++) {
        char c = x->str[i];
        if (c == '|') {
            s++;
            at = -1;
        } else if (c == 't') {
            counts[s + 1]++;
        } else if (c == 'E') {
            e++;
            if (s != 0 || i != 0 || e > 1) {
                g_free(counts);
                return misplaced(error, name, "the embedding (E) once, first in the first stage", c,
                                 e, s, stages, at);
            }
        } else if (c == 'L') {
            l++;
            if (s != stages - 1 || i != x->len - 1 || l > 1) {
                g_free(counts);
                return misplaced(error, name,
                                 "the output layer and loss (L) once, last in the last stage "
                                 "(icsim places it on the last virtual stage)",
                                 c, l, s, stages, at);
            }
        } else if (c == 'm') {
            mtp++;
            /* Megatron-Core builds the MTP block after the decoder, before the loss: m's only
             * right before L, in the last stage (each m followed by an m or by that last L) */
            char next = i + 1 < x->len ? x->str[i + 1] : '\0';
            if (s != stages - 1 || !(next == 'm' || (next == 'L' && i + 2 == x->len))) {
                g_free(counts);
                return misplaced(error, name,
                                 "multi-token-prediction layers (m) only right before L, in the "
                                 "last stage",
                                 c, 1, s, stages, at);
            }
            if (mtp > ICS_PP_LAYOUT_MAX_MTP) {
                g_free(counts);
                g_set_error(error, ICS_ERROR, ICS_ERROR_LIMIT,
                            "%sexpected at most %d multi-token-prediction layers (m), got more",
                            name, ICS_PP_LAYOUT_MAX_MTP);
                return NULL;
            }
        }
    }
    if (e == 0 || l == 0) {
        g_free(counts);
        return fail_layout(error, name,
                           e == 0 ? "the embedding (E) first in the first stage, got none"
                                  : "the output layer and loss (L) last in the last stage, got "
                                    "none");
    }
    for (int i = 1; i <= stages; i++) /* counts, shifted by one, into first indices */
        counts[i] += counts[i - 1];
    counts[stages + 1] = mtp;
    *n = stages;
    return counts;
}

int *ics_pp_layout_parse(const char *text, const char *name, int *n, GError **error)
{
    parser p = {.s = text,
                .name = name ? g_strdup_printf("%s: ", name) : g_strdup(""),
                .out = g_string_new(NULL),
                .error = error};
    int *counts = sequence(&p, 0) ? count_stages(p.out, p.name, n, error) : NULL;
    g_string_free(p.out, TRUE);
    g_free(p.name);
    return counts;
}
