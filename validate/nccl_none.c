/* nccl_none.c: stands in for nccl_runner.cu when CMake found no NCCL, so that
 * `--kernel nccl` fails with a message that says how to get it. */
#include "gpu.h"
#include "nccl_runner.h"

#include <stdio.h>

bool icsv_nccl_built(void)
{
    return false;
}

const char *icsv_nccl_version(void)
{
    return NULL;
}

icsv_nccl *icsv_nccl_new(int n, const int *devs)
{
    fprintf(stderr, "icsim-validate: built without NCCL (nccl.h or libnccl not found when "
                    "configuring); set NCCL_HOME and reconfigure\n");
    return NULL;
}

void icsv_nccl_free(icsv_nccl *c)
{
}

void icsv_nccl_launch(icsv_nccl *c, icsv_op op, icsv_dtype t, const icsv_counts *n, char *const *in,
                      char *const *out, void *const *streams)
{
}
