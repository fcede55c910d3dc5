/* wrong_source: a receive from the wrong rank (drives `deadlock` by stack sampling).
 *
 * Usage: mpirun -n 2 ./wrong_source
 *
 * Rank 0 sends a request to rank 1 and waits for the reply. Rank 1 posts its receive for the
 * request from the wrong rank (itself, the last rank, instead of rank 0), so it never sees the
 * request and never replies: both spin in MPI_Recv. Further ranks wait in MPI_Barrier.
 */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int request = 42, reply = 0;
    if (rank == 0 && size > 1) {
        MPI_Send(&request, 1, MPI_INT, 1, 0, MPI_COMM_WORLD);
        MPI_Recv(&reply, 1, MPI_INT, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else if (rank == 1) {
        int wrong = size - 1; /* should be 0 */
        MPI_Recv(&request, 1, MPI_INT, wrong, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        reply = request + 1;
        MPI_Send(&reply, 1, MPI_INT, 0, 1, MPI_COMM_WORLD);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0)
        printf("reply %d\n", reply);
    MPI_Finalize();
    return 0;
}
