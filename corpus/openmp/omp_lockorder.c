/* omp_lockorder: a lock-order deadlock on two OpenMP locks (drives `deadlock`).
 *
 * Usage: OMP_WAIT_POLICY=active ./omp_lockorder
 *
 * Thread 0 takes lock A then B, thread 1 takes B then A, each pausing between the two. With
 * OMP_WAIT_POLICY=active both spin inside libgomp's omp_set_lock: frame #0 is `?? () from
 * libgomp.so.1`, called from main._omp_fn.0.
 */
#include <omp.h>
#include <stdio.h>
#include <unistd.h>

int main(void)
{
    omp_lock_t a, b;
    omp_init_lock(&a);
    omp_init_lock(&b);
    #pragma omp parallel num_threads(2)
    {
        omp_lock_t *first = omp_get_thread_num() == 0 ? &a : &b;
        omp_lock_t *second = omp_get_thread_num() == 0 ? &b : &a;
        omp_set_lock(first);
        usleep(100000);
        omp_set_lock(second);
        omp_unset_lock(second);
        omp_unset_lock(first);
    }
    puts("never here");
    return 0;
}
