/* nccl_runner.h: NCCL's collectives on the GPUs icsim-validate opened, single process, one
 * communicator per GPU (ncclCommInitAll), each call a group over all GPUs. C-compatible so
 * that nccl_none.c can stand in when NCCL was not found. */
#ifndef ICSV_NCCL_RUNNER_H
#define ICSV_NCCL_RUNNER_H

#include "icsv.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct icsv_nccl icsv_nccl;

/* Communicators over devices devs[0..n). NULL (message printed) without NCCL. */
icsv_nccl *icsv_nccl_new(int n, const int *devs);
void icsv_nccl_free(icsv_nccl *c);

/* Enqueues one collective on every GPU: in[r], out[r] as nccl-tests passes them, streams[r]
 * a cudaStream_t. */
void icsv_nccl_launch(icsv_nccl *c, icsv_op op, icsv_dtype t, const icsv_counts *n, char *const *in,
                      char *const *out, void *const *streams);

#ifdef __cplusplus
}
#endif

#endif /* ICSV_NCCL_RUNNER_H */
