/* The icsim command: hands argv to the CLI dispatcher in cli.c. */
#include "cli/cli.h"

#include <stdlib.h> /* defines __GLIBC__ where it is glibc */
#ifdef __GLIBC__
#include <malloc.h>
#endif

int main(int argc, char **argv)
{
#if defined(M_TOP_PAD) && defined(M_MMAP_THRESHOLD)
    /* glibc hands the heap's free top back to the kernel as soon as it passes a threshold that
     * adapts to the blocks freed. A replay plans and frees a schedule for every call it
     * memoizes (up to a million steps, most far fewer: their arrays of steps, edges,
     * successors and devices grow by doubling), so the same memory went back and forth: a third
     * of a Llama 3 405B step on 6,048 GPUs was page faults and copies of growing arrays.
     * Keeping 64 MiB of slack at the top makes the next schedule reuse those pages (arrays
     * over the mmap threshold are mapped whatever is set here; realloc grows them by mremap).
     * Setting the slack turns off glibc's adaptive mmap threshold, which raises itself to the
     * size of each mapped block freed, up to 32 MiB: it is fixed there, or every block over
     * 128 KiB (each simulated network's per-channel arrays, 2.8 MB on 16,384 GPUs) would be
     * mapped and faulted in anew. Llama 3 405B on 16,384 GPUs: 1.42 s with neither, 3.13 s
     * with the slack alone, 1.30 s with both; the 16,384-GPU all-reduce sweep 53.5 s with
     * neither or the slack alone, 33-35 s with both (farm-bench medians, 2026-12-01). */
    mallopt(M_TOP_PAD, 64 << 20);
    mallopt(M_MMAP_THRESHOLD, 32 << 20);
#endif
    return ics_cli_main(argc, argv);
}
