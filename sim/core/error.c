/* The error domain; see error.h. */
#include "core/error.h"
#include "core/json.h"

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
