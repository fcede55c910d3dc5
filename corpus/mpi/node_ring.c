/* node_ring: a node-aware exchange that deadlocks only when its ranks span nodes.
 *
 * Usage: srun --mpi=pmix -n RANKS ./node_ring [SECONDS]
 *
 * Every rank first works for SECONDS (default 0.5: MPI_Allreduce over and over, rank 0's clock
 * decides), then the ranks are grouped by node (MPI_Comm_split_type, shared memory) and the
 * first rank of each node — its leader — passes a token round the ring of leaders: receive from
 * the previous node's leader, then send to the next. The bug is the order. On one node there is
 * no other leader, the exchange is skipped and the program prints "node_ring: N node(s), R
 * ranks: ok". On two or more every leader waits in MPI_Recv for a token nobody sends, and every
 * other rank waits for its leader in MPI_Barrier, all spinning in the progress loop: a deadlock
 * that only a sweep over nodes finds.
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
    double secs = argc > 1 ? atof(argv[1]) : 0.5;

    double t0 = MPI_Wtime(), x = rank, sum = 0;
    int go = 1;
    while (go) {
        MPI_Allreduce(&x, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        go = MPI_Wtime() - t0 < secs;
        MPI_Bcast(&go, 1, MPI_INT, 0, MPI_COMM_WORLD);
    }

    MPI_Comm node, leaders = MPI_COMM_NULL;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node);
    int local;
    MPI_Comm_rank(node, &local);
    MPI_Comm_split(MPI_COMM_WORLD, local == 0 ? 0 : MPI_UNDEFINED, rank, &leaders);
    int nodes = 0;
    if (leaders != MPI_COMM_NULL) {
        int me, n;
        MPI_Comm_rank(leaders, &me);
        MPI_Comm_size(leaders, &n);
        nodes = n;
        if (n > 1) {
            long token = 0;
            /* Receive first, then send: every leader waits. */
            MPI_Recv(&token, 1, MPI_LONG, (me + n - 1) % n, 0, leaders, MPI_STATUS_IGNORE);
            token += me;
            MPI_Send(&token, 1, MPI_LONG, (me + 1) % n, 0, leaders);
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0)
        printf("node_ring: %d node(s), %d ranks: ok\n", nodes, size);
    MPI_Finalize();
    return 0;
}
