/* sigterm_self: drives `killed`: the program dies of a signal that neither qualify nor the
 * memory ceiling sent.
 *
 * Usage: sigterm_self [SIGNAL_NUMBER]
 *
 * Sleeps 100 ms (so the prober has seen it running), then sends itself SIGTERM (or the given
 * signal number) with kill(getpid(), ...). Prints nothing on stdout.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    int sig = argc > 1 ? atoi(argv[1]) : SIGTERM;
    struct timespec t = {0, 100 * 1000 * 1000};
    nanosleep(&t, NULL);
    fprintf(stderr, "sigterm_self: sending signal %d to myself\n", sig);
    kill(getpid(), sig);
    pause();
    return 0;
}
