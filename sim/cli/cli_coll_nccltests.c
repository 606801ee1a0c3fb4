/* nccl-tests' flags (cli_coll_nccltests.h), read with nccl-tests' meanings (nccl-tests
 * src/common.cu): most time iterations, which a simulator runs once, so they are echoed in the
 * header and said to be ignored; -g (with -G) moves the launch floor, -i the sizes. */
#include "cli/cli_coll_nccltests.h"
#include "cli/cli.h"
#include "cli/cli_common.h"

#include <limits.h>
#include <string.h>

void ics_cli_nccltests_entries(ics_cli_nccltests *n, GOptionEntry out[ICS_CLI_NCCLTESTS_ENTRIES])
{
    const GOptionEntry v[ICS_CLI_NCCLTESTS_ENTRIES] = {
        {"iters", 'n', 0, G_OPTION_ARG_STRING, &n->iters_s,
         "nccl-tests: timed iterations (timing only: ignored)", "N"},
        {"warmup_iters", 'w', 0, G_OPTION_ARG_STRING, &n->warmup_s,
         "nccl-tests: warm-up iterations (ignored)", "N"},
        {"agg_iters", 'm', 0, G_OPTION_ARG_STRING, &n->agg_s,
         "nccl-tests: operations aggregated per iteration (ignored)", "N"},
        {"ngpus", 'g', 0, G_OPTION_ARG_STRING, &n->ngpus_s,
         "nccl-tests: GPUs per thread: a call lasts at least G of the model's launch_us", "G"},
        {"nthreads", 't', 0, G_OPTION_ARG_STRING, &n->nthreads_s,
         "nccl-tests: threads per process (the header's nThread)", "T"},
        {"check", 'c', 0, G_OPTION_ARG_STRING, &n->check_s,
         "nccl-tests: check results, 0/1 (nothing is checked: #wrong N/A)", "0|1"},
        {"average", 'a', 0, G_OPTION_ARG_STRING, &n->average_s,
         "nccl-tests: time reported, 0 rank 0, 1 mean, 2 min, 3 max (ranks end alike: ignored)",
         "0-3"},
        {"blocking", 'z', 0, G_OPTION_ARG_STRING, &n->blocking_s,
         "nccl-tests: blocking collectives, 0/1 (ignored)", "0|1"},
        {"cudagraph", 'G', 0, G_OPTION_ARG_STRING, &n->graph_s,
         "nccl-tests: CUDA graph launches: no per-GPU launch floor", "N"},
        {"report_cputime", 'C', 0, G_OPTION_ARG_STRING, &n->cputime_s,
         "nccl-tests: report CPU time, 0/1 (ignored)", "0|1"},
        {"local_register", 'R', 0, G_OPTION_ARG_STRING, &n->register_s,
         "nccl-tests: buffer registration, 0-2 (ignored)", "0-2"},
        {"stepbytes", 'i', 0, G_OPTION_ARG_STRING, &n->step_s,
         "nccl-tests: grow sizes by this many bytes instead of -f (K, M, G)", "BYTES"},
        G_OPTION_ENTRY_NULL};
    memcpy(out, v, sizeof v);
}

bool ics_cli_nccltests_check(ics_cli_nccltests *n, GError **error)
{
    n->iters = 1;
    n->ngpus = 1;
    n->nthreads = 1;
    n->agg = 1;
    if (!ics_cli_int_in("-n", n->iters_s, 1, INT_MAX, &n->iters, error) ||
        !ics_cli_int_in("-w", n->warmup_s, 0, INT_MAX, &n->warmup, error) ||
        !ics_cli_int_in("-m", n->agg_s, 1, INT_MAX, &n->agg, error) ||
        !ics_cli_int_in("-g", n->ngpus_s, 1, 1024, &n->ngpus, error) ||
        !ics_cli_int_in("-t", n->nthreads_s, 1, 1024, &n->nthreads, error) ||
        !ics_cli_int_in("-c", n->check_s, 0, 1, &n->check, error) ||
        !ics_cli_int_in("-a", n->average_s, 0, 3, &n->average, error) ||
        !ics_cli_int_in("-z", n->blocking_s, 0, 1, &n->blocking, error) ||
        !ics_cli_int_in("-G", n->graph_s, 0, INT_MAX, &n->graph, error) ||
        !ics_cli_int_in("-C", n->cputime_s, 0, 1, &n->cputime, error) ||
        !ics_cli_int_in("-R", n->register_s, 0, 2, &n->reg, error))
        return false;
    if (n->step_s && (!ics_cli_parse_size(n->step_s, &n->step_bytes) || n->step_bytes == 0)) {
        char *esc = g_strescape(n->step_s, NULL);
        g_set_error(error, ICS_ERROR, ICS_ERROR_INPUT,
                    "-i: expected a size >= 1 (N, NK, NM or NG), got \"%s\"", esc);
        g_free(esc);
        return false;
    }
    return true;
}

void ics_cli_nccltests_header(const ics_cli_nccltests *n, uint64_t min_b, uint64_t max_b,
                              int factor, GString *out)
{
    g_string_append_printf(out,
                           "# nThread %d nGpus %d minBytes %llu maxBytes %llu step: ", n->nthreads,
                           n->ngpus, (unsigned long long)min_b, (unsigned long long)max_b);
    if (n->step_bytes)
        g_string_append_printf(out, "%llu(bytes)", (unsigned long long)n->step_bytes);
    else
        g_string_append_printf(out, "%d(factor)", factor);
    g_string_append_printf(out,
                           " warmup iters: %d iters: %d agg iters: %d validation: %d graph: %d\n",
                           n->warmup, n->iters, n->agg, n->check, n->graph);
    /* what a simulator cannot honour, said once, only when asked for */
    const struct {
        const char *flag, *given;
    } timing[] = {{"-n", n->iters_s},   {"-w", n->warmup_s},  {"-m", n->agg_s},
                  {"-c", n->check_s},   {"-a", n->average_s}, {"-z", n->blocking_s},
                  {"-C", n->cputime_s}, {"-R", n->register_s}};
    GString *ignored = g_string_new(NULL);
    for (size_t i = 0; i < G_N_ELEMENTS(timing); i++)
        if (timing[i].given)
            g_string_append_printf(ignored, "%s%s %s", ignored->len ? ", " : "", timing[i].flag,
                                   timing[i].given);
    if (ignored->len)
        g_string_append_printf(out,
                               "# icsim: %s: timing-only here (one simulated iteration, every "
                               "rank alike, nothing checked): ignored\n",
                               ignored->str);
    g_string_free(ignored, TRUE);
}

int ics_cli_nccltests_gpus_per_thread(const ics_cli_nccltests *n)
{
    return n->graph > 0 ? 1 : n->ngpus;
}

void ics_cli_nccltests_clear(ics_cli_nccltests *n)
{
    char *strs[] = {n->iters_s,    n->warmup_s,  n->agg_s,      n->ngpus_s,
                    n->nthreads_s, n->check_s,   n->average_s,  n->blocking_s,
                    n->graph_s,    n->cputime_s, n->register_s, n->step_s};
    for (size_t i = 0; i < G_N_ELEMENTS(strs); i++)
        g_free(strs[i]);
    *n = (ics_cli_nccltests){0};
}
