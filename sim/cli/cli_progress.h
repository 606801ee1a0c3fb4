/* A one-line progress report on stderr for runs that may take more than a couple of seconds:
 * shown only when stderr is a terminal and the run has lasted 2 s, redrawn at most twice a
 * second, erased when the run ends; pipes and logs see nothing, and stdout is never touched,
 * so outputs stay byte-identical. ICSIM_PROGRESS=always shows it from the start whatever
 * stderr is (tests), ICSIM_PROGRESS=never hides it. */
#ifndef ICS_CLI_PROGRESS_H
#define ICS_CLI_PROGRESS_H

#include <glib.h>
#include <stdbool.h>

typedef struct {
    bool on, always, shown;
    gint64 start_us, last_us;
} ics_cli_progress;

void ics_cli_progress_init(ics_cli_progress *p);
/* "icsim: TEXT, 12 s, ETA 30 s" (the ETA from fraction, the share done in [0, 1]; none when
 * fraction <= 0). */
void ics_cli_progress_say(ics_cli_progress *p, double fraction, const char *fmt, ...)
    G_GNUC_PRINTF(3, 4);
/* Erases the line, if one was drawn. */
void ics_cli_progress_end(ics_cli_progress *p);

#endif
