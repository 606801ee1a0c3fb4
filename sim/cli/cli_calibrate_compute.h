/* `icsim calibrate` on compute measurements (icsim-validate compute --json): the GPU type's
 * compute parameters fitted and reported (calibrate/compute_calib.h). cli_calibrate.c routes
 * the files here when they are of that kind. */
#ifndef ICS_CLI_CALIBRATE_COMPUTE_H
#define ICS_CLI_CALIBRATE_COMPUTE_H

#include <stdbool.h>

#include <glib.h>

/* Shared with cli_calibrate.c: a percentage column (or "-" when x is not finite), and the
 * cross-validation table of ics_calib_fold rows. */
void ics_cli__calib_pct(GString *out, double x);
void ics_cli__calib_folds(const GArray *folds, GString *out);

/* Fits system's GPU type to the files, prints the points, the parameters, the medians and the
 * cross-validation (unless no_cv), writes the overlay to out (NULL: none); an exit status. */
int ics_cli__calibrate_compute(const char *system, const char *out, bool no_cv, bool quiet,
                               int nfiles, char **files);

#endif
