/* ring: a small MPI program for `qualify run` over a topology axis.
 *
 * Usage: mpirun -n RANKS ./ring [LAPS]
 *
 * Rank 0 sends a token around the ring LAPS times (default 100); every rank adds its rank to it
 * on each pass. Rank 0 checks the total against the closed form and prints it; exit 1 when it
 * is wrong. With one rank the token goes to itself.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    long laps = argc > 1 ? atol(argv[1]) : 100;
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    long token = 0;
    for (long lap = 0; lap < laps; lap++) {
        if (size == 1) {
            token += rank;
            continue;
        }
        if (rank == 0) {
            token += rank;
            MPI_Send(&token, 1, MPI_LONG, next, 0, MPI_COMM_WORLD);
            MPI_Recv(&token, 1, MPI_LONG, prev, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(&token, 1, MPI_LONG, prev, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            token += rank;
            MPI_Send(&token, 1, MPI_LONG, next, 0, MPI_COMM_WORLD);
        }
    }
    int status = 0;
    if (rank == 0) {
        long want = laps * (long)size * (size - 1) / 2;
        printf("ring: %d ranks, %ld laps, token %ld (want %ld)\n", size, laps, token, want);
        status = token != want;
    }
    MPI_Bcast(&status, 1, MPI_INT, 0, MPI_COMM_WORLD);
    MPI_Finalize();
    return status;
}
