/* The memory budget (budget.h): the default, the environment's override, the check and its
 * message. Nothing is cached, so a test (or an embedder) may change the variable between runs. */
#include "core/budget.h"
#include "core/error.h"

#define GIB 1073741824.0

uint64_t ics_budget_bytes(GError **error)
{
    const char *v = g_getenv(ICS_BUDGET_ENV);
    if (!v)
        return ICS_BUDGET_DEFAULT_BYTES;
    char *end = NULL;
    double gib = g_ascii_strtod(v, &end);
    /* a millionth of a GiB (1 KiB) to a PiB: anything else is a typo, not a budget */
    if (end == v || *end != '\0' || !(gib >= 1e-6 && gib <= 1048576)) {
        g_set_error(error, ICS_ERROR, ICS_ERROR_INPUT,
                    "%s: expected a memory budget in GiB, 0.000001..1048576, got \"%s\"",
                    ICS_BUDGET_ENV, v);
        return 0;
    }
    return (uint64_t)(gib * GIB);
}

/* "5.3 GiB", "12.0 MiB": an estimate as people read it. Transfer full. */
static char *human(uint64_t bytes)
{
    if ((double)bytes >= GIB)
        return g_strdup_printf("%.1f GiB", (double)bytes / GIB);
    return g_strdup_printf("%.1f MiB", (double)bytes / (1 << 20));
}

bool ics_budget_check(uint64_t bytes, const char *what, GError **error)
{
    uint64_t budget = ics_budget_bytes(error);
    if (budget == 0)
        return false;
    if (bytes <= budget)
        return true;
    char *est = human(bytes);
    g_set_error(error, ICS_ERROR, ICS_ERROR_LIMIT,
                "%s: about %s, over the memory budget of %.3g GiB (%s=GiB raises it; "
                "docs/limits.md)",
                what, est, (double)budget / GIB, ICS_BUDGET_ENV);
    g_free(est);
    return false;
}

uint64_t ics_budget_mul_add(uint64_t a, uint64_t b, uint64_t c)
{
    if (b != 0 && a > (UINT64_MAX - c) / b)
        return UINT64_MAX;
    return a * b + c;
}
