/* cuda_check.cuh: every CUDA runtime call goes through ICSV_CUDA, which on failure prints
 * "icsim-validate: file:line: call: message" and exits 1. A benchmark that hits a CUDA error has
 * no result worth keeping, so nothing unwinds. */
#ifndef ICSV_CUDA_CHECK_CUH
#define ICSV_CUDA_CHECK_CUH

#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

[[noreturn]] inline void icsv_die(const char *file, int line, const char *call, const char *msg)
{
    std::fprintf(stderr, "icsim-validate: %s:%d: %s: %s\n", file, line, call, msg);
    std::exit(1);
}

#define ICSV_CUDA(call)                                                                            \
    do {                                                                                           \
        cudaError_t icsv_e_ = (call);                                                              \
        if (icsv_e_ != cudaSuccess)                                                                \
            icsv_die(__FILE__, __LINE__, #call, cudaGetErrorString(icsv_e_));                      \
    } while (0)

/* After a <<<>>> launch: a bad configuration shows up here, a fault at the next sync. */
#define ICSV_LAUNCHED() ICSV_CUDA(cudaGetLastError())

#endif /* ICSV_CUDA_CHECK_CUH */
