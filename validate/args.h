/* args.h: the command line of icsim-validate, nccl-tests' flags plus our kernel's knobs.
 *   icsim-validate p2p [options]
 *   icsim-validate collective OP [options]      (or --op OP)
 *   icsim-validate nvls [options]               (all_reduce through NVLink SHARP)
 *   icsim-validate compute [options]            (GEMMs and HBM copies on one GPU)
 * Everything is checked here, before any GPU is touched; a bad value is an ICSV_ERROR_INPUT
 * whose message names the flag ("-b: expected a size ..."), and the caller exits 2. */
#ifndef ICSV_ARGS_H
#define ICSV_ARGS_H

#include "icsv.h"
#include "plan.h"

typedef enum icsv_mode {
    ICSV_MODE_P2P,
    ICSV_MODE_COLLECTIVE,
    ICSV_MODE_NVLS,
    ICSV_MODE_COMPUTE
} icsv_mode;

/* Defaults, in one place. nccl-tests' own: -b 32M -e 32M -f 1 -i 1M -n 20 -w 1 -c 1. Our
 * kernels' mirror NCCL's Simple protocol on Hopper: a 2 MiB chunk in 2 slices (NCCL's 512 KiB
 * step, ALLREDUCE_CHUNKSTEPS 4, SLICESTEPS 2), so each channel's receive FIFO of two chunks
 * is NCCL's 4 MiB buffer. */
#define ICSV_DEFAULT_BYTES     (32ull << 20)
#define ICSV_DEFAULT_STEP      (1ull << 20)
#define ICSV_DEFAULT_P2P_BYTES (256ull << 20) /* enough to hide launch costs at 900 GB/s */
#define ICSV_DEFAULT_ITERS     20
#define ICSV_DEFAULT_WARMUP    1
#define ICSV_DEFAULT_CTAS      16
#define ICSV_DEFAULT_UNROLL    4
#define ICSV_DEFAULT_CHUNK     (2ull << 20)
#define ICSV_DEFAULT_SLICES    2
#define ICSV_MAX_CHUNK         (64ull << 20)
#define ICSV_MAX_SLICES        16

/* compute's -w: cuBLASLt's first call of a shape loads its kernel, and the clock settles. */
#define ICSV_DEFAULT_COMPUTE_WARMUP 3
/* compute's --shapes: at most this many, each dimension 1 .. ICSV_COMPUTE_DIM_MAX (three
 * operands of 32768^2 bf16 are 6 GiB; a shape the GPU's free memory cannot hold is refused when
 * the plan is made, run_compute.c). */
#define ICSV_COMPUTE_SHAPES_MAX 512
#define ICSV_COMPUTE_DIM_MAX    32768
/* compute --graph: a graph of at most this many calls (-n) per shape */
#define ICSV_COMPUTE_GRAPH_ITERS_MAX 10000

typedef struct icsv_args {
    icsv_mode mode;
    icsv_op op;           /* collective: the positional OP or --op; nvls: all_reduce */
    icsv_kernel kernel;   /* collective: icsim|nccl|all|nvls; p2p: icsim|ce; nvls: nvls|nccl|all */
    icsv_dtype dtype;     /* -d */
    uint64_t min_bytes;   /* -b; p2p: the bytes of each copy */
    uint64_t max_bytes;   /* -e */
    uint64_t step_bytes;  /* -i */
    uint64_t step_factor; /* -f */
    int iters, warmup;    /* -n, -w */
    bool check;           /* -c: count wrong elements after each size */
    int ngpus;            /* -g; 0 = every visible GPU; compute: 1 (GPU 0) */
    unsigned gemm_dtypes; /* compute's --dtype: a mask of 1 << icsv_gemm_dtype */
    bool gemm_dtypes_all; /* --dtype all (default): leave out, not refuse, what the GPU lacks */
    icsv_gemm_shape *shapes; /* compute's --shapes; NULL = the default plan. Owned. */
    size_t n_shapes;
    bool graph;                /* compute's --graph: time calls replayed from one CUDA graph */
    int groups, streams;       /* compute's --groups, --streams: 1, 1 without --groups */
    icsv_kernel_params params; /* --ctas --unroll --chunk --slices; p2p's ctas 0: one per SM */
    char *json_path;           /* --json; NULL = none. Owned. */
    char *command;             /* argv joined by spaces, for the JSON "command". Owned. */
    bool help, version;        /* -h, -V: print and exit 0 */
} icsv_args;

/* Parses argv (argv[0] is the program). On success fills *out (free with icsv_args_clear) and
 * returns true; with -h or -V only help/version are meaningful. On bad input returns false
 * with ICSV_ERROR_INPUT; *out is then cleared. */
bool icsv_args_parse(int argc, char **argv, icsv_args *out, GError **err);

/* Frees what icsv_args_parse allocated; safe on a zeroed or already-cleared struct. */
void icsv_args_clear(icsv_args *a);

/* The usage text (static storage). */
const char *icsv_usage(void);

/* argv[0..argc) joined by single spaces, arguments with blanks or quotes shell-quoted.
 * Transfer full: g_free. */
char *icsv_join_argv(int argc, char *const *argv);

#endif /* ICSV_ARGS_H */
