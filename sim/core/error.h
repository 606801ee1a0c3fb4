/* The error domain of everything that fails on the user's input, and the exit status each error
 * means. Invariant: a function that sets an error returns false/NULL, and one that returns
 * false/NULL for a reason the user can act on has set one. */
#ifndef ICS_ERROR_H
#define ICS_ERROR_H

#include <stdbool.h>
#include <stdint.h>

#include <glib.h>

/* Errors are data (STYLE.md): every function that can fail on the user's input takes GError **
 * and sets one of these, or the JSON reader's (core/json.h), whose messages are the complete
 * line to print. The domain and code say the exit status (ics_error_exit_status). */
#define ICS_ERROR (ics_error_quark())
typedef enum {
    /* the user's input is wrong or impossible: exit 2 */
    ICS_ERROR_INPUT = 1,
    /* the input is well-formed but beyond what a run may take (simulated time, memory): exit 2 */
    ICS_ERROR_LIMIT,
    /* a file could not be read or written for reasons other than its content: exit 1 */
    ICS_ERROR_IO,
} ics_error_code;
GQuark ics_error_quark(void);

/* Range checks of values that reach a check without a reader's location: command-line options,
 * fields of a struct filled from several places. Out of [lo, hi], false and *error
 * (ICS_ERROR_INPUT) "NAME: expected an integer in LO..HI, got V", worded as the JSON reader
 * words its own (NAME NULL: the message starts at "expected"; hi INT64_MAX: "an integer >= LO").
 * A number's check refuses NaN and the infinities, which are in no range. */
bool ics_check_int(const char *name, int64_t v, int64_t lo, int64_t hi, GError **error);
bool ics_check_num(const char *name, double v, double lo, double hi, GError **error);

/* 2 for errors in the user's input (ICS_ERROR_INPUT, ICS_ERROR_LIMIT, the JSON reader's
 * domain), 1 otherwise. */
int ics_error_exit_status(const GError *e);

#endif
