/* mismatch: mismatched collectives (drives `deadlock` by stack sampling).
 *
 * Usage: mpirun -n 2 ./mismatch
 *
 * Rank 0 calls MPI_Barrier while every other rank calls MPI_Allreduce: neither collective can
 * complete, and each rank spins in its own one.
 */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    double x = rank, sum = 0;
    if (rank == 0)
        MPI_Barrier(MPI_COMM_WORLD);
    else
        MPI_Allreduce(&x, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    printf("rank %d: never here\n", rank);
    MPI_Finalize();
    return 0;
}
