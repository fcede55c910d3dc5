/* forkbomb: a fork bomb that does not give up. Each child sleeps; a refused fork (EAGAIN under a
 * pids ceiling) is retried, as a real bomb would. Row "fork bomb" of corpus/adversary/README.md.
 *
 * Usage: forkbomb [MAX_CHILDREN] [SECONDS]
 * Bounded so that it cannot harm a machine without a ceiling: at most MAX_CHILDREN (default
 * 100000) children, each sleeping SECONDS (default 30), and the parent stops after SECONDS.
 * Prints "created N refused M" when it stops; exits 0.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    long max = argc > 1 ? atol(argv[1]) : 100000;
    int seconds = argc > 2 ? atoi(argv[2]) : 30;
    time_t until = time(NULL) + seconds;
    long created = 0, refused = 0;
    while (created < max && time(NULL) < until) {
        pid_t p = fork();
        if (p == 0) {
            sleep((unsigned)seconds);
            _exit(0);
        }
        if (p < 0) {
            refused++;
            continue; /* retry at once: a bomb never backs off */
        }
        created++;
    }
    printf("created %ld refused %ld\n", created, refused);
    return 0;
}
