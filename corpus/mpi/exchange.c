/* exchange: the textbook send-send deadlock (drives `deadlock` by stack sampling, or `ok`).
 *
 * Usage: mpirun -n 2 ./exchange BYTES
 *
 * Every rank sends BYTES to its partner (rank ^ 1) with MPI_Send, then receives BYTES from it.
 * Below the MPI library's eager limit the send completes from a buffer and the run ends `ok`;
 * above it both sends wait for a receive that is never posted, spinning in the progress loop
 * at full CPU. With Open MPI's shared-memory transport (vader) the boundary is 4040 / 4041
 * bytes. Prints "exchanged N bytes" on rank 0 when done.
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
    long n = argc > 1 ? atol(argv[1]) : 1000;
    if (n < 1)
        n = 1;
    char *out = calloc(n, 1), *in = calloc(n, 1);
    if (!out || !in) {
        fprintf(stderr, "exchange: cannot allocate %ld bytes\n", n);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int peer = rank ^ 1;
    if (peer < size) {
        MPI_Send(out, (int)n, MPI_CHAR, peer, 0, MPI_COMM_WORLD);
        MPI_Recv(in, (int)n, MPI_CHAR, peer, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    if (rank == 0)
        printf("exchanged %ld bytes\n", n);
    free(out);
    free(in);
    MPI_Finalize();
    return 0;
}
