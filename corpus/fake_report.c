/* fake_report: an impostor that prints a runtime's report text and ends however it is told;
 * a report must decide nothing it did not end with.
 *
 * Usage: fake_report out|err exit:N|abort|hang TEXT
 *
 * Writes TEXT (and a newline) to stdout or stderr, then exits with N, aborts (SIGABRT), or
 * sleeps forever.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: fake_report out|err exit:N|abort|hang TEXT\n");
        return 64;
    }
    FILE *to = strcmp(argv[1], "out") == 0 ? stdout : stderr;
    fprintf(to, "%s\n", argv[3]);
    fflush(to);
    if (strncmp(argv[2], "exit:", 5) == 0)
        return atoi(argv[2] + 5);
    if (strcmp(argv[2], "abort") == 0) {
        struct rlimit none = {0, 0};
        setrlimit(RLIMIT_CORE, &none);
        abort();
    }
    for (;;)
        pause();
}
