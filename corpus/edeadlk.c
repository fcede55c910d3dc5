/* edeadlk: a thread locks an error-checking mutex it already holds; glibc refuses with EDEADLK
 * ("Resource deadlock avoided") instead of hanging, and the program reports it and exits 1
 * -> deadlock, cause deadlock_avoided.
 *
 * Usage: edeadlk errorcheck|recursive
 *
 * recursive: the same with a recursive mutex, which may be taken again -> ok.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
    int recursive = argc > 1 && strcmp(argv[1], "recursive") == 0;
    pthread_mutexattr_t attr;
    pthread_mutexattr_init(&attr);
    pthread_mutexattr_settype(&attr, recursive ? PTHREAD_MUTEX_RECURSIVE : PTHREAD_MUTEX_ERRORCHECK);
    pthread_mutex_t m;
    pthread_mutex_init(&m, &attr);
    pthread_mutex_lock(&m);
    int e = pthread_mutex_lock(&m);
    if (e != 0) {
        fprintf(stderr, "pthread_mutex_lock: %s\n", strerror(e));
        return 1;
    }
    puts("took the lock twice");
    return 0;
}
