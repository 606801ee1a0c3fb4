/* A study split across MPI processes (`mpirun -n N icsim sweep STUDY.json -o out`): process r
 * computes configurations r, r + N, ...; process 0 writes every row in configuration order,
 * receiving the others' rows as they finish (a process's rows arrive in its order, so
 * receiving in configuration order never waits on a message sent later). The files are the
 * single-process files byte for byte: a row depends only on its point (sweep.h). Compiled
 * with MPI when CMake finds it (ICS_HAVE_MPI); without it the split is never taken. */
#include "cli/cli_sweep.h"

#include <stdlib.h>
#include <string.h>

#ifdef ICS_HAVE_MPI
#include <mpi.h>

typedef struct {
    int rank, size;
} mpi_ctx;

enum { TAG_CSV = 1, TAG_JSON = 2 };

static bool mine(void *ctx, int c)
{
    const mpi_ctx *m = ctx;
    return c % m->size == m->rank;
}

static int start(void *ctx, int first)
{
    (void)ctx;
    MPI_Bcast(&first, 1, MPI_INT, 0, MPI_COMM_WORLD);
    return first;
}

static void give(void *ctx, int c, const char *csv, const char *json)
{
    (void)ctx;
    (void)c;
    MPI_Send(csv, (int)strlen(csv), MPI_CHAR, 0, TAG_CSV, MPI_COMM_WORLD);
    MPI_Send(json, (int)strlen(json), MPI_CHAR, 0, TAG_JSON, MPI_COMM_WORLD);
}

static char *receive(int from, int tag)
{
    MPI_Status st;
    int n = 0;
    MPI_Probe(from, tag, MPI_COMM_WORLD, &st);
    MPI_Get_count(&st, MPI_CHAR, &n);
    char *text = g_malloc((size_t)n + 1);
    MPI_Recv(text, n, MPI_CHAR, from, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    text[n] = '\0';
    return text;
}

static void fetch(void *ctx, int c, char **csv, char **json)
{
    const mpi_ctx *m = ctx;
    *csv = receive(c % m->size, TAG_CSV);
    *json = receive(c % m->size, TAG_JSON);
}

/* Launched by mpirun: Open MPI's and PMI's launchers say so in the environment. */
static bool under_mpirun(void)
{
    return getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMI_SIZE") || getenv("PMIX_RANK");
}

bool ics_cli_sweep_mpi_split(ics_sweep_split *split)
{
    if (!under_mpirun())
        return false;
    mpi_ctx *m = g_new0(mpi_ctx, 1);
    MPI_Init(NULL, NULL);
    MPI_Comm_rank(MPI_COMM_WORLD, &m->rank);
    MPI_Comm_size(MPI_COMM_WORLD, &m->size);
    *split = (ics_sweep_split){.writer = m->rank == 0,
                               .mine = mine,
                               .fetch = fetch,
                               .give = give,
                               .start = start,
                               .ctx = m};
    return true;
}

void ics_cli_sweep_mpi_end(ics_sweep_split *split, bool ok)
{
    if (split->writer && !ok)
        MPI_Abort(MPI_COMM_WORLD, 1);
    MPI_Finalize();
    g_free(split->ctx);
    split->ctx = NULL;
}

#else

bool ics_cli_sweep_mpi_split(ics_sweep_split *split)
{
    (void)split;
    return false;
}

void ics_cli_sweep_mpi_end(ics_sweep_split *split, bool ok)
{
    (void)split;
    (void)ok;
}

#endif
