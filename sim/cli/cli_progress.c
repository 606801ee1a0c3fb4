/* Progress lines on stderr (cli_progress.h). */
#include "cli/cli_progress.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define SHOW_AFTER_US   (2 * G_USEC_PER_SEC)
#define REDRAW_EVERY_US (G_USEC_PER_SEC / 2)

void ics_cli_progress_init(ics_cli_progress *p)
{
    const char *env = g_getenv("ICSIM_PROGRESS");
    *p = (ics_cli_progress){0};
    p->always = env && strcmp(env, "always") == 0;
    p->on = p->always || ((!env || strcmp(env, "never") != 0) && isatty(STDERR_FILENO));
    p->start_us = g_get_monotonic_time();
}

void ics_cli_progress_say(ics_cli_progress *p, double fraction, const char *fmt, ...)
{
    if (!p->on)
        return;
    gint64 now = g_get_monotonic_time();
    if (!p->always && now - p->start_us < SHOW_AFTER_US)
        return;
    if (p->shown && now - p->last_us < REDRAW_EVERY_US)
        return;
    va_list ap;
    va_start(ap, fmt);
    char *text = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    double elapsed = (double)(now - p->start_us) / G_USEC_PER_SEC;
    GString *line = g_string_new("\ricsim: ");
    g_string_append_printf(line, "%s, %.0f s", text, elapsed);
    if (fraction > 0 && fraction < 1)
        g_string_append_printf(line, ", ETA %.0f s", elapsed * (1 - fraction) / fraction);
    g_string_append(line, "\033[K"); /* erase what a longer line left */
    fputs(line->str, stderr);
    fflush(stderr);
    g_string_free(line, TRUE);
    g_free(text);
    p->shown = true;
    p->last_us = now;
}

void ics_cli_progress_end(ics_cli_progress *p)
{
    if (p->shown) {
        fputs("\r\033[K", stderr);
        fflush(stderr);
    }
    p->shown = false;
}
