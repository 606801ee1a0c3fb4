/* The error domain; see error.h. */
#include "core/error.h"
#include "core/json.h"

#include <inttypes.h>
#include <math.h>

/* By hand rather than G_DEFINE_QUARK, whose dashed argument the formatter would split. */
GQuark ics_error_quark(void)
{
    return g_quark_from_static_string("ics-error-quark");
}

int ics_error_exit_status(const GError *e)
{
    if (e && (g_error_matches(e, ICS_ERROR, ICS_ERROR_INPUT) ||
              g_error_matches(e, ICS_ERROR, ICS_ERROR_LIMIT) || e->domain == ICS_JSON_ERROR))
        return 2;
    return 1;
}

/* "NAME: " or nothing. */
static const char *sep(const char *name)
{
    return name ? ": " : "";
}

bool ics_check_int(const char *name, int64_t v, int64_t lo, int64_t hi, GError **error)
{
    if (v >= lo && v <= hi)
        return true;
    if (hi == INT64_MAX)
        g_set_error(error, ICS_ERROR, ICS_ERROR_INPUT,
                    "%s%sexpected an integer >= %" PRId64 ", got %" PRId64, name ? name : "",
                    sep(name), lo, v);
    else
        g_set_error(error, ICS_ERROR, ICS_ERROR_INPUT,
                    "%s%sexpected an integer in %" PRId64 "..%" PRId64 ", got %" PRId64,
                    name ? name : "", sep(name), lo, hi, v);
    return false;
}

bool ics_check_num(const char *name, double v, double lo, double hi, GError **error)
{
    if (isfinite(v) && v >= lo && v <= hi)
        return true;
    if (isinf(hi))
        g_set_error(error, ICS_ERROR, ICS_ERROR_INPUT, "%s%sexpected a number >= %g, got %.15g",
                    name ? name : "", sep(name), lo, v);
    else
        g_set_error(error, ICS_ERROR, ICS_ERROR_INPUT, "%s%sexpected a number in %g..%g, got %.15g",
                    name ? name : "", sep(name), lo, hi, v);
    return false;
}
