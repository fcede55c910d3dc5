/* handoff: correct condition-variable and semaphore handoffs (no bug): two threads pass a
 * token back and forth 200 times through a mutex and condition variable (each wait in a loop
 * on the turn), meet at a barrier, then pass it 200 times through a pair of semaphores. Exits 0
 * when every pass was in turn, 1 otherwise. Under perturbation it is slower, never stuck and
 * never wrong. (Without the barrier it was not correct: the first thread's unlocked semaphore
 * passes raced the other's last locked pass, a lost update that 1 in 1000 bare runs and 1 in
 * 1000 PCT runs of bench/perturb.sh showed.)
 *
 * Usage: handoff
 */
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>

#define ROUNDS 200

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t changed = PTHREAD_COND_INITIALIZER;
static int turn;
static long passes, out_of_turn;
static sem_t ping, pong;
static pthread_barrier_t between;

static void *player(void *arg)
{
    int me = (int)(long)arg;
    for (int i = 0; i < ROUNDS; i++) {
        pthread_mutex_lock(&lock);
        while (turn != me)
            pthread_cond_wait(&changed, &lock);
        if (turn != me)
            out_of_turn++;
        passes++;
        turn = 1 - me;
        pthread_cond_broadcast(&changed);
        pthread_mutex_unlock(&lock);
    }
    /* Both are done with the condition variable before either counts a semaphore pass. */
    pthread_barrier_wait(&between);
    for (int i = 0; i < ROUNDS; i++) {
        sem_wait(me == 0 ? &ping : &pong);
        passes++;
        sem_post(me == 0 ? &pong : &ping);
    }
    return NULL;
}

int main(void)
{
    pthread_t a, b;
    sem_init(&ping, 0, 1);
    sem_init(&pong, 0, 0);
    pthread_barrier_init(&between, NULL, 2);
    pthread_create(&a, NULL, player, (void *)0L);
    pthread_create(&b, NULL, player, (void *)1L);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    if (passes != 4 * ROUNDS || out_of_turn != 0) {
        fprintf(stderr, "handoff: %ld passes, %ld out of turn\n", passes, out_of_turn);
        return 1;
    }
    printf("handoff: %ld passes\n", passes);
    return 0;
}
