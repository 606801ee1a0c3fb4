/* main.c: icsim-validate: measures GPUs the way icsim models them and prints what it measured
 * as nccl-tests and p2pBandwidthLatencyTest do (docs/validate.md).
 * Invariant: bad input exits 2 before any GPU is touched; nothing but the usage goes to stdout
 * then. */
#include "args.h"
#include "gpu.h"
#include "run.h"

#include <stdio.h>

#ifndef ICSV_CUDA_ARCHS
#define ICSV_CUDA_ARCHS "?"
#endif

/* Conditions only the build or the file system can fail, still before any GPU work. */
static bool check_environment(const icsv_args *a)
{
    bool nccl = a->kernel == ICSV_KERNEL_NCCL || a->kernel == ICSV_KERNEL_ALL;
    if (nccl && !icsv_nccl_built()) {
        fprintf(stderr,
                "icsim-validate: --kernel %s: this icsim-validate was built without NCCL "
                "(nccl.h or libnccl not found when configuring); set NCCL_HOME and "
                "reconfigure\n",
                icsv_kernel_name(a->kernel));
        return false;
    }
    if (a->json_path) {
        char *dir = g_path_get_dirname(a->json_path);
        bool ok = g_file_test(dir, G_FILE_TEST_IS_DIR);
        if (!ok)
            fprintf(stderr, "icsim-validate: --json %s: no directory %s\n", a->json_path, dir);
        g_free(dir);
        return ok;
    }
    return true;
}

int main(int argc, char **argv)
{
    icsv_args a;
    GError *err = NULL;
    if (!icsv_args_parse(argc, argv, &a, &err)) {
        fprintf(stderr, "icsim-validate: %s\n(icsim-validate --help lists the options)\n",
                err->message);
        g_error_free(err);
        return ICSV_EXIT_INPUT;
    }
    int rc = 0;
    if (a.help) {
        fputs(icsv_usage(), stdout);
    } else if (a.version) {
        printf("icsim-validate %s (CUDA archs %s, %s)\n", ICSV_VERSION, ICSV_CUDA_ARCHS,
               icsv_nccl_built() ? "with NCCL" : "without NCCL");
    } else if (!check_environment(&a)) {
        rc = ICSV_EXIT_INPUT;
    } else {
        rc = a.mode == ICSV_MODE_P2P       ? icsv_run_p2p(&a)
             : a.mode == ICSV_MODE_COMPUTE ? icsv_run_compute(&a)
                                           : icsv_run_collective(&a);
    }
    icsv_args_clear(&a);
    return rc;
}
