/* gpu.h: the C interface to validate/'s CUDA half (the *.cu files), used by main.c,
 * run_coll.c, run_p2p.c and run_compute.c. No CUDA types cross it.
 * Errors: a failing CUDA call prints "file:line: call: CUDA's message" and exits 1. What the
 * machine cannot do (no peer access, no multicast) returns NULL/false after printing why on
 * stderr; the caller exits ICSV_EXIT_SKIP. */
#ifndef ICSV_GPU_H
#define ICSV_GPU_H

#include "icsv.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- devices (gpus.cu) ---- */
typedef struct icsv_gpus icsv_gpus;

/* Opens GPUs 0 .. ngpus-1 (ngpus 0: every visible GPU), one non-blocking stream (and an
 * auxiliary one) each, and enables peer access between every pair that supports it.
 * Returns NULL, having printed why, when fewer GPUs are visible than asked for.
 * Transfer full: icsv_gpus_free. */
icsv_gpus *icsv_gpus_open(int ngpus);
void icsv_gpus_free(icsv_gpus *g);
int icsv_gpus_count(const icsv_gpus *g);
/* Names, PCI ids, SM count, arch, and the intra-node link guessed from P2P attributes. */
void icsv_gpus_describe(const icsv_gpus *g, icsv_hw *out);
/* Whether GPU `from` can load and store GPU `to`'s memory (always true for from == to). */
bool icsv_gpus_can_access(const icsv_gpus *g, int from, int to);
/* True when every pair has peer access; otherwise prints the first pair without and returns
 * false. Our collective kernels need it: they store straight into peers' memory. */
bool icsv_gpus_require_peers(const icsv_gpus *g);

/* ---- collectives (coll.cu) ---- */
typedef struct icsv_coll icsv_coll;

/* Buffers, FIFOs and flags for timing `op` with kernel k (ICSIM, NCCL or NVLS) at sizes up to
 * max_bytes (the size column). NULL, having printed why, when the machine cannot run k (no
 * multicast for NVLS, NCCL not built). Transfer full: icsv_coll_free. */
icsv_coll *icsv_coll_new(icsv_gpus *g, icsv_op op, icsv_dtype t, icsv_kernel k,
                         const icsv_kernel_params *p, uint64_t max_bytes);
void icsv_coll_free(icsv_coll *c);
/* The JSON "kernel": "icsim-simple-ring", "icsim-simple-p2p", "icsim-direct", "icsim-nvls",
 * "nccl". Static storage. */
const char *icsv_coll_kernel_name(const icsv_coll *c);
/* The parameters the kernel honours; fields that do not apply are 0. */
icsv_kernel_params icsv_coll_params(const icsv_coll *c);
/* Mean wall time of one call over `iters` back-to-back calls on every GPU, after `warmup`
 * untimed ones, as nccl-tests measures it (host clock around launches and a final sync). */
double icsv_coll_time_us(icsv_coll *c, const icsv_counts *n, bool in_place, int warmup, int iters);
/* Fills the inputs with a rank- and index-dependent pattern, runs one call, and counts the
 * output elements that differ from the exact expected values, summed over GPUs.
 * ICSV_WRONG_NA for in-place alltoall and sendrecv, which nccl-tests does not check either. */
int64_t icsv_coll_check(icsv_coll *c, const icsv_counts *n, bool in_place);

/* ---- NCCL (nccl_runner.cu, or nccl_none.c when NCCL was not found) ---- */
bool icsv_nccl_built(void);
/* "2.27.3", or NULL without NCCL. Static storage. */
const char *icsv_nccl_version(void);

/* ---- point to point (p2p.cu) ---- */
/* Fills the n x n matrices (n = icsv_gpus_count, [from * n + to]): unidirectional and
 * bidirectional GB/s of `bytes`-byte copies, and one-way latency in us. copy: ICSV_KERNEL_ICSIM
 * (SM stores over peer pointers, p->ctas CTAs, 0 = one per SM) or ICSV_KERNEL_CE (copy
 * engines). Pairs without peer access fall back to cudaMemcpyPeerAsync, as
 * p2pBandwidthLatencyTest does. access[from * n + to] says which pairs had it. */
void icsv_p2p_measure(icsv_gpus *g, icsv_kernel copy, const icsv_kernel_params *p, uint64_t bytes,
                      int warmup, int iters, double *uni_gbps, double *bi_gbps, double *lat_us,
                      int *access);

/* ---- compute (compute.cu) ---- */
typedef struct icsv_compute icsv_compute;

/* A cuBLASLt handle, its 32 MiB workspace and two events on GPU 0 of g, which must outlive it.
 * Transfer full: icsv_compute_free. */
icsv_compute *icsv_compute_new(icsv_gpus *g);
void icsv_compute_free(icsv_compute *c);
/* GPU 0's name, SMs, compute capability, clock and memory; free_bytes as of this call. */
void icsv_compute_describe(const icsv_compute *c, icsv_compute_hw *out);
/* The mean time of one call in us: `iters` back-to-back calls of the row's GEMM (cuBLASLt's first
 * heuristic algorithm, TN layout, fp32 accumulation) or copy (cudaMemcpyAsync device to device)
 * between two CUDA events, after `warmup` untimed ones. With `graph`, the `iters` calls are
 * captured into one CUDA graph, replayed once untimed, then timed as one replay: what the GPU
 * takes when the host is out of the way. Allocates the row's buffers, fills the inputs with
 * pseudo-random values, and frees them. A GEMM cuBLASLt has no algorithm for is a runtime
 * failure: it prints the shape and exits 1. */
double icsv_compute_time_us(icsv_compute *c, const icsv_compute_row *r, int warmup, int iters,
                            bool graph);

#ifdef __cplusplus
}
#endif

#endif /* ICSV_GPU_H */
