/* rank_fault: one rank fails, the others wait for it.
 *
 * Usage: srun --mpi=pmix -n RANKS ./rank_fault MODE [RANK] [MIB]
 *
 * Every rank works for half a second (MPI_Allreduce over and over), then rank RANK (default:
 * the last) fails while the others wait for it in MPI_Recv:
 *   crash — dereferences a null pointer (SIGSEGV);
 *   alloc — allocates MIB MiB (default 512) in 16 MiB chunks, touching every page, then holds
 *           it for a minute: past a per-node memory ceiling it is killed there;
 *   exit  — exits with status 3 without MPI_Finalize;
 *   none  — sends its message: the program ends ok.
 * Prints "rank_fault: R ranks ok" on rank 0 when nothing failed.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const char *mode = argc > 1 ? argv[1] : "none";
    int bad = argc > 2 ? atoi(argv[2]) : size - 1;
    long mib = argc > 3 ? atol(argv[3]) : 512;
    if (bad < 0 || bad >= size)
        bad = size - 1;

    double t0 = MPI_Wtime(), x = rank, sum = 0;
    int go = 1;
    while (go) {
        MPI_Allreduce(&x, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        go = MPI_Wtime() - t0 < 0.5;
        MPI_Bcast(&go, 1, MPI_INT, 0, MPI_COMM_WORLD);
    }

    int token = 1;
    if (rank == bad) {
        if (strcmp(mode, "crash") == 0) {
            volatile int *p = NULL;
            *p = 1;
        } else if (strcmp(mode, "alloc") == 0) {
            for (long i = 0; i < mib / 16; i++) {
                char *c = malloc(16 << 20);
                if (!c)
                    break;
                memset(c, 1, 16 << 20);
            }
            sleep(60);
        } else if (strcmp(mode, "exit") == 0) {
            exit(3);
        }
        for (int r = 0; r < size; r++)
            if (r != bad)
                MPI_Send(&token, 1, MPI_INT, r, 0, MPI_COMM_WORLD);
    } else {
        MPI_Recv(&token, 1, MPI_INT, bad, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0)
        printf("rank_fault: %d ranks ok\n", size);
    MPI_Finalize();
    return 0;
}
