/* omp_threads: a parallel region of N threads. Under --pids below N, libgomp cannot start its
 * team: "libgomp: Thread creation failed", exit 1 -> exit_failure naming the pids ceiling;
 * with room for them -> ok.
 *
 * Usage: omp_threads N
 */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 4;
    long sum = 0;
#pragma omp parallel num_threads(n) reduction(+ : sum)
    sum += omp_get_thread_num();
    printf("%d threads, sum %ld\n", n, sum);
    return 0;
}
