/* net_wait: one rank spins in MPI_Recv while its partner waits on the network outside the
 * tree (never a deadlock: the outside world could answer).
 *
 * Usage: mpirun -n 2 ./net_wait
 *
 * Rank 1 listens on 127.0.0.1 (an ephemeral port) and blocks in accept(); nobody connects.
 * Rank 0 waits in MPI_Recv for a message rank 1 would send after a connection. Expected: a
 * timeout whose kind says the evidence is ambiguous, not a deadlock.
 */
#include <mpi.h>
#include <netinet/in.h>
#include <stdio.h>
#include <sys/socket.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    int value = 0;
    if (rank == 1) {
        int s = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = 0,
                                .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        if (s < 0 || bind(s, (struct sockaddr *)&a, sizeof a) != 0 || listen(s, 1) != 0) {
            perror("net_wait: listen");
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
        int c = accept(s, NULL, NULL);
        if (c >= 0)
            close(c);
        MPI_Send(&value, 1, MPI_INT, 0, 0, MPI_COMM_WORLD);
    } else if (rank == 0) {
        MPI_Recv(&value, 1, MPI_INT, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    MPI_Finalize();
    return 0;
}
