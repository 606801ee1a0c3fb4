/* gpus_impl.cuh: what an icsv_gpus holds, for the .cu files that launch on it. */
#ifndef ICSV_GPUS_IMPL_CUH
#define ICSV_GPUS_IMPL_CUH

#include "cuda_check.cuh"
#include "gpu.h"

struct icsv_gpus {
    int n;
    int dev[ICSV_MAX_GPUS]; /* CUDA ordinals; rank r runs on dev[r] */
    cudaDeviceProp prop[ICSV_MAX_GPUS];
    cudaStream_t stream[ICSV_MAX_GPUS];        /* where every collective and copy runs */
    cudaStream_t aux[ICSV_MAX_GPUS];           /* a second one, for bidirectional copies */
    bool access[ICSV_MAX_GPUS][ICSV_MAX_GPUS]; /* [from][to]: peer access enabled */
};

/* Waits for every GPU's stream (and aux stream). */
void icsv_gpus_sync(const icsv_gpus *g);

#endif /* ICSV_GPUS_IMPL_CUH */
