/* The system's own NCCL settings, shown where a run's header says what it ran on: a user who
 * did not set NCCL_PROTO should still see that the model's profile did (hw_nccl_conf.c). */
#include "report/report.h"

void ics_report_nccl_conf(const ics_hw *hw, GString *out)
{
    const char **names = ics_hw_nccl_conf_names(hw);
    if (names[0]) {
        g_string_append(out, "# nccl_conf (the system's NCCL settings; the environment's win):");
        for (int i = 0; names[i]; i++) { /* escaped: a value may hold a newline */
            char *k = g_strescape(names[i], NULL),
                 *v = g_strescape(ics_hw_nccl_conf(hw, names[i]), NULL);
            g_string_append_printf(out, " %s=%s", k, v);
            g_free(k);
            g_free(v);
        }
        g_string_append_c(out, '\n');
    }
    g_free(names);
}
