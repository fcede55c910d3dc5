/* allreduce: a long, legitimate collective that moves bytes (never a deadlock).
 *
 * Usage: mpirun -n 2 ./allreduce DOUBLES SECONDS
 *
 * Repeats MPI_Allreduce over DOUBLES doubles for SECONDS (rank 0's clock decides, broadcast to
 * all), silently, then rank 0 prints how many it did. Every rank spends nearly all its time
 * inside MPI_Allreduce, as a deadlocked rank would, but data moves: page faults and memory
 * change between samples. Must end `ok`.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    long n = argc > 1 ? atol(argv[1]) : (1L << 22);
    double secs = argc > 2 ? atof(argv[2]) : 5;
    double *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b);
    if (!a || !b) {
        fprintf(stderr, "allreduce: cannot allocate %ld doubles\n", n);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    for (long i = 0; i < n; i++)
        a[i] = (double)i;
    double t0 = MPI_Wtime();
    long rounds = 0;
    int go = 1;
    while (go) {
        MPI_Allreduce(a, b, (int)n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        rounds++;
        go = MPI_Wtime() - t0 < secs;
        MPI_Bcast(&go, 1, MPI_INT, 0, MPI_COMM_WORLD);
    }
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0)
        printf("%ld allreduces of %ld doubles\n", rounds, n);
    free(a);
    free(b);
    MPI_Finalize();
    return 0;
}
