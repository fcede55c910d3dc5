/* omp_barrier: an OpenMP barrier one thread skips (drives `deadlock`).
 *
 * Usage: OMP_WAIT_POLICY=active|passive ./omp_barrier
 *
 * In a team of two, thread 0 passes two barriers and thread 1 none: the first barrier pairs
 * with thread 1's barrier at the end of the region, the second never completes. With
 * OMP_WAIT_POLICY=active the threads spin in libgomp at full CPU (recognised by stack samples:
 * Debian's libgomp is stripped, so by library); with the default or passive policy they sleep
 * in untimed futex waits (recognised by the blocked-wait rule).
 */
#include <omp.h>
#include <stdio.h>

int main(void)
{
    #pragma omp parallel num_threads(2)
    {
        if (omp_get_thread_num() == 0) {
            #pragma omp barrier
            #pragma omp barrier
        }
    }
    puts("never here");
    return 0;
}
