/* The memory budget: what a run may take, checked against an estimate before anything big is
 * built (a trace read, a topology, a replay, a training step, an event queue), so that an input
 * too big is refused at once with the estimate instead of ending in an allocation abort after
 * minutes. Estimates are per-unit figures measured on real runs (docs/limits.md says which);
 * they aim a little high, never low. */
#ifndef ICS_BUDGET_H
#define ICS_BUDGET_H

#include <stdbool.h>
#include <stdint.h>

#include <glib.h>

/* The default budget, 8 GiB: above the largest shipped scenario run in full (GPT-3 175B on 1024
 * GPUs, --no-fold: 5.04 GiB), within a 16 GB workstation. */
#define ICS_BUDGET_DEFAULT_BYTES (UINT64_C(8) << 30)

/* The environment variable that replaces it: a number of GiB > 0 ("16", "0.5"). */
#define ICS_BUDGET_ENV "ICSIM_MAX_MEMORY"

/* The budget in bytes: ICSIM_MAX_MEMORY if set, else the default. 0 and sets *error
 * (ICS_ERROR_INPUT) when the variable is set to something else than a number of GiB in
 * 0.000001..1048576. Reads the environment on every call (cheap; tests change it). */
uint64_t ics_budget_bytes(GError **error);

/* True if a build estimated at `bytes` fits the budget; else false and sets *error
 * (ICS_ERROR_LIMIT): "WHAT: about 5.3 GB (10000000 ops x 530 B), over the memory budget of
 * 8 GiB (ICSIM_MAX_MEMORY=GiB raises it; docs/limits.md)". what: the thing and its count as the
 * user knows them ("10000000 ops x 530 B"); it is printed after the estimate. */
bool ics_budget_check(uint64_t bytes, const char *what, GError **error);

/* a x b + c, saturated at UINT64_MAX: estimates of counts the user chose must not wrap. */
uint64_t ics_budget_mul_add(uint64_t a, uint64_t b, uint64_t c);

#endif
