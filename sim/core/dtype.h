/* Numeric data types, as GPUs' datasheets list their peaks and traces tag their ops. A word of
 * the whole simulator (hardware peaks, trace ops, training layouts), so it lives in core. */
#ifndef ICS_DTYPE_H
#define ICS_DTYPE_H

typedef enum {
    ICS_DTYPE_FP64,
    ICS_DTYPE_FP32,
    ICS_DTYPE_TF32,
    ICS_DTYPE_FP16,
    ICS_DTYPE_BF16,
    ICS_DTYPE_FP8,
    ICS_DTYPE_FP4,
    ICS_DTYPE_COUNT
} ics_dtype;

/* The names the catalog and traces use ("fp64", ..., "fp4"), NULL-terminated, indexed by
 * ics_dtype. */
extern const char *const ics_dtype_names[ICS_DTYPE_COUNT + 1];

/* "bf16"; "?" for a value out of range. */
const char *ics_dtype_name(ics_dtype d);

#endif
