/* names.c: the spellings of collectives, data types and kernels, listed once.
 * Invariant: every enum value has exactly one canonical name; parsing is its inverse. */
#include "icsv.h"

#include <string.h>

static const char *const op_names[ICSV_OP_COUNT] = {
    [ICSV_OP_ALL_REDUCE] = "all_reduce",
    [ICSV_OP_ALL_GATHER] = "all_gather",
    [ICSV_OP_REDUCE_SCATTER] = "reduce_scatter",
    [ICSV_OP_ALLTOALL] = "alltoall",
    [ICSV_OP_SENDRECV] = "sendrecv",
    [ICSV_OP_BROADCAST] = "broadcast",
    [ICSV_OP_REDUCE] = "reduce",
};

/* nccl-tests prints "none" for the collectives that do not reduce; sendrecv passes ncclSum. */
static const char *const op_redops[ICSV_OP_COUNT] = {
    [ICSV_OP_ALL_REDUCE] = "sum", [ICSV_OP_ALL_GATHER] = "none", [ICSV_OP_REDUCE_SCATTER] = "sum",
    [ICSV_OP_ALLTOALL] = "none",  [ICSV_OP_SENDRECV] = "sum",    [ICSV_OP_BROADCAST] = "none",
    [ICSV_OP_REDUCE] = "sum",
};

static const char *const dtype_names[ICSV_DTYPE_COUNT] = {
    [ICSV_FLOAT] = "float",
    [ICSV_BF16] = "bfloat16",
};

static const char *const kernel_names[ICSV_KERNEL_COUNT] = {
    [ICSV_KERNEL_ICSIM] = "icsim", [ICSV_KERNEL_NCCL] = "nccl", [ICSV_KERNEL_ALL] = "all",
    [ICSV_KERNEL_CE] = "ce",       [ICSV_KERNEL_NVLS] = "nvls",
};

/* The compute JSON's spellings, which `icsim calibrate` reads (sim/calibrate/compute_meas.c). */
static const char *const gemm_dtype_names[ICSV_GEMM_DTYPE_COUNT] = {
    [ICSV_GEMM_BF16] = "bf16",
    [ICSV_GEMM_FP16] = "fp16",
    [ICSV_GEMM_FP8] = "fp8",
};

const char *icsv_op_name(icsv_op op)
{
    return op >= 0 && op < ICSV_OP_COUNT ? op_names[op] : "?";
}

const char *icsv_op_redop(icsv_op op)
{
    return op >= 0 && op < ICSV_OP_COUNT ? op_redops[op] : "?";
}

/* Compares ignoring '_' and '-', so that "allreduce", "all-reduce" and "all_reduce" agree. */
static bool same_name(const char *a, const char *b)
{
    for (;;) {
        while (*a == '_' || *a == '-')
            a++;
        while (*b == '_' || *b == '-')
            b++;
        if (*a != *b)
            return false;
        if (*a == '\0')
            return true;
        a++;
        b++;
    }
}

bool icsv_op_parse(const char *s, icsv_op *out)
{
    for (int i = 0; s && i < ICSV_OP_COUNT; i++) {
        if (same_name(s, op_names[i])) {
            *out = (icsv_op)i;
            return true;
        }
    }
    return false;
}

const char *icsv_dtype_name(icsv_dtype t)
{
    return t >= 0 && t < ICSV_DTYPE_COUNT ? dtype_names[t] : "?";
}

bool icsv_dtype_parse(const char *s, icsv_dtype *out)
{
    if (!s)
        return false;
    if (strcmp(s, "float") == 0 || strcmp(s, "float32") == 0 || strcmp(s, "f32") == 0) {
        *out = ICSV_FLOAT;
        return true;
    }
    if (strcmp(s, "bfloat16") == 0 || strcmp(s, "bf16") == 0) {
        *out = ICSV_BF16;
        return true;
    }
    return false;
}

size_t icsv_dtype_size(icsv_dtype t)
{
    return t == ICSV_BF16 ? 2 : 4;
}

const char *icsv_kernel_name(icsv_kernel k)
{
    return k >= 0 && k < ICSV_KERNEL_COUNT ? kernel_names[k] : "?";
}

bool icsv_kernel_parse(const char *s, icsv_kernel *out)
{
    for (int i = 0; s && i < ICSV_KERNEL_COUNT; i++) {
        if (strcmp(s, kernel_names[i]) == 0) {
            *out = (icsv_kernel)i;
            return true;
        }
    }
    return false;
}

const char *icsv_gemm_dtype_name(icsv_gemm_dtype t)
{
    return t >= 0 && t < ICSV_GEMM_DTYPE_COUNT ? gemm_dtype_names[t] : "?";
}

bool icsv_gemm_dtype_parse(const char *s, icsv_gemm_dtype *out)
{
    for (int i = 0; s && i < ICSV_GEMM_DTYPE_COUNT; i++) {
        if (strcmp(s, gemm_dtype_names[i]) == 0) {
            *out = (icsv_gemm_dtype)i;
            return true;
        }
    }
    return false;
}
