/* libFuzzer target for the command line's option handling: `icsim train` and `icsim collective`
 * parsed and checked by ics_cli_train_prepare / ics_cli_collective_prepare (cli/cli.h), which
 * stop before any hardware model is loaded, so an input costs microseconds; and `icsim infer`
 * whole (its options and scenario file, then the model catalog, which the empty working
 * directory never has, so it stops there too). Whatever the
 * arguments, preparing must return ICS_EXIT_OK or ICS_EXIT_USAGE (with one message printed),
 * leak nothing and raise no sanitizer report.
 *
 * Input: byte 0 picks the command (mod 3: 0 train, 1 collective, 2 infer; '0', '1', '2'); the rest
 * is its arguments, one a line. A line "@@" ends them: what follows is written to a scenario file
 * whose path becomes train's SCENARIO argument (collective gets it as an argument too, to refuse).
 * Each argument is also read as an NCCL_ALGO and an NCCL_PROTO list. Inputs with an argument that
 * holds '/' are skipped: a path could name /dev/zero or a FIFO; names without one are looked up
 * in the working directory, which the ctests make an empty one. fuzz_hw_replay.c's driver runs
 * the seeds (corpus-cli/) in every build. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <glib.h>

#include "cli/cli.h"
#include "collectives/comm.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_ARGS 64

static char *scen_path;

static void remove_scenario(void)
{
    remove(scen_path);
}

/* One scenario file per process, removed at exit. */
static const char *scenario_path(void)
{
    if (!scen_path) {
        scen_path = g_strdup_printf("%s/icsim-fuzz-cli-%d.json", g_get_tmp_dir(), (int)getpid());
        atexit(remove_scenario);
    }
    return scen_path;
}

static void also_nccl_lists(const char *word)
{
    char *bad = NULL;
    unsigned set = ics_coll_algos_parse(word, &bad);
    if (set >= ICS_COLL_SET(ICS_ALGO_COUNT))
        abort();
    g_free(bad);
    set = ics_coll_protos_parse(word, &bad);
    if (set >= ICS_COLL_SET(ICS_PROTO_COUNT))
        abort();
    g_free(bad);
}

/* Splits the input into argv (argv[0] the command); false to skip it. *words owns the strings
 * (GLib's option parser removes entries from argv, never frees them). */
static bool split(const uint8_t *data, size_t size, char ***words, int *n)
{
    static const char *const cmds[] = {"train", "collective", "infer"};
    const char *cmd = cmds[data[0] % 3];
    char *text = g_strndup((const char *)data + 1, size - 1); /* stops at a NUL */
    /* the marker line: first, or after a newline */
    bool first = g_str_has_prefix(text, "@@\n");
    char *scen = first ? text : strstr(text, "\n@@\n");
    if (scen) {
        const char *json = scen + (first ? 3 : 4);
        if (!g_file_set_contents(scenario_path(), json, -1, NULL)) {
            g_free(text);
            return false;
        }
    }
    if (scen)
        *scen = '\0';
    char **lines = *text ? g_strsplit(text, "\n", MAX_ARGS) : g_new0(char *, 1);
    g_free(text);
    int count = (int)g_strv_length(lines);
    *words = g_new0(char *, count + 3);
    *n = 0;
    (*words)[(*n)++] = g_strdup(cmd);
    bool ok = true;
    for (int i = 0; lines[i]; i++) {
        ok &= strchr(lines[i], '/') == NULL;
        also_nccl_lists(lines[i]);
        (*words)[(*n)++] = g_strdup(lines[i]);
    }
    if (scen)
        (*words)[(*n)++] = g_strdup(scenario_path());
    g_strfreev(lines);
    return ok;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    char **words = NULL;
    int n = 0;
    if (split(data, size, &words, &n)) {
        char **argv = g_memdup2(words, sizeof(char *) * (size_t)(n + 1));
        int rc;
        if (strcmp(words[0], "train") == 0) {
            ics_cli_train_job *j = NULL;
            rc = ics_cli_train_prepare(n, argv, false, &j);
            ics_cli_train_job_free(j);
        } else if (strcmp(words[0], "infer") == 0) {
            rc = ics_cli_infer_with(n, argv, false);
        } else {
            ics_cli_coll_job *j = NULL;
            rc = ics_cli_collective_prepare(n, argv, false, &j);
            ics_cli_coll_job_free(j);
        }
        if (rc != ICS_EXIT_OK && rc != ICS_EXIT_USAGE) {
            /* stdout: the short run closes stderr (one message per input; fuzz_short.sh) */
            printf("fuzz_cli: %s: exit status %d\n", words[0], rc);
            fflush(stdout);
            abort();
        }
        g_free(argv);
    }
    g_strfreev(words);
    return 0;
}
