/* The icsim command: hands argv to the CLI dispatcher in cli.c. */
#include "cli/cli.h"

#include <malloc.h>

int main(int argc, char **argv)
{
#ifdef M_TOP_PAD
    /* glibc hands the heap's free top back to the kernel as soon as it passes a threshold that
     * adapts to the blocks freed. A replay plans and frees a schedule of up to a million steps
     * (~100 MB) for every call it memoizes, so the same memory went back and forth: a third
     * of a Llama 3 405B step on 6,048 GPUs was page faults and copies of growing arrays
     * (15.0 -> 10.2 s with 64 MiB kept, peak 145 -> 151 MiB). Keeping 64 MiB of slack at the
     * top makes the next schedule reuse those pages. */
    mallopt(M_TOP_PAD, 64 << 20);
#endif
    return ics_cli_main(argc, argv);
}
