/* Numeric data types' names (dtype.h). */
#include <stddef.h>

#include "core/dtype.h"

const char *const ics_dtype_names[ICS_DTYPE_COUNT + 1] = {"fp64", "fp32", "tf32", "fp16",
                                                          "bf16", "fp8",  "fp4",  NULL};

const char *ics_dtype_name(ics_dtype d)
{
    return (unsigned)d < ICS_DTYPE_COUNT ? ics_dtype_names[d] : "?";
}
