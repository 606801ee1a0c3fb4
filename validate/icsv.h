/* icsv.h: names and plain types shared by validate/'s host library and its CUDA half.
 * Plain C11 with no GLib and no CUDA, so that both gcc and nvcc (as C++) include it; nothing
 * here allocates. Sizes are bytes, times microseconds, bandwidths GB/s with GB = 1e9 bytes. */
#ifndef ICSV_H
#define ICSV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#ifndef ICSV_VERSION
#define ICSV_VERSION "0.0.0" /* CMake passes the project's version */
#endif

#define ICSV_MAX_GPUS   32 /* one node, one process: more than any machine has */
#define ICSV_MAX_CTAS   128
#define ICSV_WRONG_NA   (-1) /* #wrong not checked: nccl-tests prints "N/A" */
#define ICSV_EXIT_INPUT 2    /* bad command line */
#define ICSV_EXIT_SKIP  77   /* this machine cannot run the measurement (no P2P, no NVLS) */

/* The collectives nccl-tests times. Broadcast and reduce have sizes and bus-bandwidth
 * factors here but no kernels yet. */
typedef enum icsv_op {
    ICSV_OP_ALL_REDUCE,
    ICSV_OP_ALL_GATHER,
    ICSV_OP_REDUCE_SCATTER,
    ICSV_OP_ALLTOALL,
    ICSV_OP_SENDRECV,
    ICSV_OP_BROADCAST,
    ICSV_OP_REDUCE,
    ICSV_OP_COUNT
} icsv_op;

typedef enum icsv_dtype { ICSV_FLOAT, ICSV_BF16, ICSV_DTYPE_COUNT } icsv_dtype;

/* What moves the bytes: our kernels, NCCL, both (--kernel all), copy engines (p2p only),
 * or NVLink SHARP multimem instructions (all_reduce only). */
typedef enum icsv_kernel {
    ICSV_KERNEL_ICSIM,
    ICSV_KERNEL_NCCL,
    ICSV_KERNEL_ALL,
    ICSV_KERNEL_CE,
    ICSV_KERNEL_NVLS,
    ICSV_KERNEL_COUNT
} icsv_kernel;

/* How our kernels cut the work, as NCCL's Simple protocol does: one channel per CTA, each
 * channel's part of the buffer cut into chunks, each chunk into slices; one flag handshake per
 * slice. chunk_bytes is a multiple of 16 * slices. */
typedef struct icsv_kernel_params {
    int ctas;             /* channels; <= ICSV_MAX_CTAS and <= the GPU's SM count */
    int unroll;           /* 16-byte loads in flight per thread: 1, 2, 4 or 8 */
    uint64_t chunk_bytes; /* per channel per ring step */
    int slices;           /* per chunk */
} icsv_kernel_params;

/* One size of a sweep as nccl-tests defines it (see icsv_plan_counts). */
typedef struct icsv_counts {
    uint64_t size_bytes; /* the "size" column: max(send, recv) bytes */
    uint64_t count;      /* the "count" column: elements per rank-call (per-rank block for
                            all_gather, reduce_scatter, alltoall) */
    uint64_t send_count; /* elements in each rank's send buffer */
    uint64_t recv_count; /* elements in each rank's receive buffer */
} icsv_counts;

/* One GPU as the "# Using devices" lines name it. */
typedef struct icsv_device {
    int ordinal;
    int pci_domain, pci_bus, pci_device;
    char name[256]; /* cudaDeviceProp.name */
} icsv_device;

/* The machine, as the JSON "hardware" object reports it. */
typedef struct icsv_hw {
    int ngpus;
    icsv_device dev[ICSV_MAX_GPUS];
    int sm_count;        /* of GPU 0 */
    char cuda_arch[16];  /* "sm_90" */
    char intra_node[64]; /* "NVLink", "PCIe", "NVLink+PCIe", "none" (see gpus.cu) */
    char system[128];    /* DMI product name, or "unknown" */
} icsv_hw;

/* One side of a table row: out-of-place or in-place. */
typedef struct icsv_place {
    double time_us;
    double algbw_gbps;
    double busbw_gbps;
    int64_t wrong; /* mismatching elements, or ICSV_WRONG_NA */
} icsv_place;

/* One line of the nccl-tests table. */
typedef struct icsv_row {
    icsv_op op;
    icsv_dtype dtype;
    icsv_counts counts;
    int root; /* -1 except broadcast and reduce */
    icsv_place oop, ip;
} icsv_row;

/* The compute mode's GEMM input types, all with fp32 accumulation; fp8 is E4M3 in, bf16 out. */
typedef enum icsv_gemm_dtype {
    ICSV_GEMM_BF16,
    ICSV_GEMM_FP16,
    ICSV_GEMM_FP8,
    ICSV_GEMM_DTYPE_COUNT
} icsv_gemm_dtype;

#define ICSV_GEMM_ALL ((1u << ICSV_GEMM_DTYPE_COUNT) - 1) /* a mask: bit 1 << icsv_gemm_dtype */

/* What one compute-mode row times: a GEMM, or an HBM-to-HBM copy. */
typedef enum icsv_compute_kernel { ICSV_COMPUTE_GEMM, ICSV_COMPUTE_COPY } icsv_compute_kernel;

/* One compute-mode measurement: a GEMM C[m x n] = A[m x k] . B[k x n], or a device-to-device
 * copy of `bytes` (reading them and writing them). Fields of the other kernel are 0. */
typedef struct icsv_compute_row {
    icsv_compute_kernel kernel;
    icsv_gemm_dtype dtype; /* gemm */
    int64_t m, n, k;       /* gemm */
    int groups, streams;   /* gemm: G such GEMMs at once on S streams (compute --groups); 0 or
                            * 1: one GEMM */
    uint64_t bytes;        /* copy */
    double time_us;        /* mean of one call (a group: all G GEMMs); 0 until measured */
} icsv_compute_row;

/* A GEMM shape of compute's --shapes: C[m x n] = A[m x k] . B[k x n]. */
typedef struct icsv_gemm_shape {
    int64_t m, n, k;
} icsv_gemm_shape;

/* The GPU the compute mode measures, as its table and JSON "hardware" report it. */
typedef struct icsv_compute_hw {
    char gpu[256];           /* cudaDeviceProp.name */
    int sms;                 /* multiProcessorCount */
    int cc_major, cc_minor;  /* compute capability: 9.0 is sm_90 */
    int clock_khz;           /* peak SM clock (cudaDevAttrClockRate); 0 when the driver omits it */
    uint64_t memory_bytes;   /* totalGlobalMem */
    uint64_t free_bytes;     /* cudaMemGetInfo once cuBLASLt is set up: what the copies may use */
    size_t cublaslt_version; /* cublasLtGetVersion(), e.g. 130000 */
} icsv_compute_hw;

/* Names. Returned strings are static; parse functions return false on unknown names. */
const char *icsv_op_name(icsv_op op);            /* "all_reduce" ... */
bool icsv_op_parse(const char *s, icsv_op *out); /* also "allreduce", "all-reduce" */
const char *icsv_op_redop(icsv_op op);           /* nccl-tests' redop column: "sum", "none" */
const char *icsv_dtype_name(icsv_dtype t);       /* nccl-tests' names: "float", "bfloat16" */
bool icsv_dtype_parse(const char *s, icsv_dtype *out);
size_t icsv_dtype_size(icsv_dtype t);
const char *icsv_kernel_name(icsv_kernel k); /* the --kernel spelling */
bool icsv_kernel_parse(const char *s, icsv_kernel *out);
const char *icsv_gemm_dtype_name(icsv_gemm_dtype t); /* "bf16", "fp16", "fp8": the JSON's */
bool icsv_gemm_dtype_parse(const char *s, icsv_gemm_dtype *out);

#ifdef __cplusplus
}
#endif

#endif /* ICSV_H */
