/* The flow backend's door to SimGrid (net_flow_sg.cpp, the project's one C++ file): a C API over
 * SimGrid 3.32's S4U engine, used by net_flow.c only (and its tests). Internal to net/.
 *
 * SimGrid keeps one engine, one clock and one platform per process (its s4u::Engine is a
 * singleton, and a platform is sealed at the first run), so this module is process-wide state,
 * the only such state in icsim, and all of it lives here:
 *   - the engine, created on first use and configured as a pure fluid network: the CM02 model
 *     (max-min fair sharing of link capacities, LMM), without TCP's window bound, cross-traffic
 *     or SMPI's Ethernet correction factors: InfiniBand and NVLink are credit-based, lossless
 *     fabrics whose flows share a link's bandwidth fairly, not TCP over Ethernet;
 *   - one netzone whose routes are whatever icsim's router chose for the transfer being started
 *     (a subclass of NetZoneImpl, the extension point SimGrid's own zones use), so SimGrid
 *     shares bandwidth on exactly icsim's paths (ECMP, NVSwitch planes, rails) and never routes
 *     itself; two hosts stand for every endpoint;
 *   - a pool of links, one per icsim resource (a channel, a switch's reduction unit), created up
 *     to the size of the first topology that needs them and re-rated (capacities) for each
 *     network; a later, larger topology cannot grow it once SimGrid has run (its platform is
 *     sealed): ics_sg_acquire says so.
 * Every call must come from the thread that first called ics_sg_acquire (SimGrid's maestro). */
#ifndef ICS_NET_FLOW_SG_H
#define ICS_NET_FLOW_SG_H

#include <stdbool.h>
#include <stdint.h>

#include <glib.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ics_sg_comm ics_sg_comm; /* a SimGrid communication under way */

/* Makes links 0..nlinks-1 available (creating the engine and links on first use). False, with
 * a message in *err, where SimGrid cannot: the platform is sealed and smaller, or the caller is
 * not SimGrid's thread. */
bool ics_sg_acquire(int nlinks, GError **err);

/* Sets link i's capacity, bytes per second (> 0). */
void ics_sg_link_rate(int link, double bytes_per_s);

/* The simulated clock, seconds. */
double ics_sg_clock(void);

/* Starts a transfer of `bytes` (> 0) over links[0..n) (a link listed k times is charged k
 * times: a group's paths that share it), tagged `user`, at
 * `priority` (0 < priority <= 1; SimGrid's sharing penalty is 1 / priority), rounded by
 * ics_sg_priority: transfers held back by the same link get rates in proportion to their
 * priorities. */
ics_sg_comm *ics_sg_start(const int *links, int n, double bytes, double priority, void *user);

/* The priority SimGrid runs `share` (0 < share <= 1) at, for a communication in which no link
 * appears more than max_weight times: share to 20 significant bits, the multiple nearest to it
 * whose usage terms SimGrid computes exactly (weight / (1 / p) == weight x p), so that links
 * carrying the same communications tie in its solve (net_flow_sg.cpp says why that matters).
 * Less than 2^-16 of itself away for weights up to 8 (at most 7 steps of 2^-20 of the
 * significand; /net/flow/priority-exact checks every one); shares under 2^-16 are raised to it;
 * 1 for 1, NaN or more. */
double ics_sg_priority(double share, int max_weight);

/* Cancels a transfer under way (its completion is never reported); the handle is freed. */
void ics_sg_cancel(ics_sg_comm *c);
/* Stops a transfer's progress, and lets it go on. */
void ics_sg_suspend(ics_sg_comm *c);
void ics_sg_resume(ics_sg_comm *c);

/* Runs SimGrid until the first instant at or before `until` (seconds) at which transfers
 * complete, or until `until`: done(ctx, user) for each transfer completed then (its handle
 * freed), in SimGrid's order. Returns how many completed. */
int ics_sg_run_until(double until, void (*done)(void *ctx, void *user), void *ctx);

#ifdef __cplusplus
}
#endif

#endif
