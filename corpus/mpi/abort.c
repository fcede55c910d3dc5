/* abort: one rank calls MPI_Abort; mpirun prints which rank and ends the job with the error
 * code -> exit_failure, cause mpi_abort, naming the rank.
 *
 * Usage: mpirun -n 2 ./abort RANK CODE | none
 *
 * none: every rank finalizes -> ok. Run with more ranks than slots and without
 * --oversubscribe, mpirun refuses to start -> exit_failure, cause not_enough_slots.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    int rank;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (argc > 2 && strcmp(argv[1], "none") != 0 && rank == atoi(argv[1]))
        MPI_Abort(MPI_COMM_WORLD, atoi(argv[2]));
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0)
        printf("every rank finalized\n");
    MPI_Finalize();
    return 0;
}
