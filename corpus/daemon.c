/* daemon: drives the `leaked_processes` flag: a classic double-forked daemon that tries to
 * outlive the probe.
 *
 * Usage: daemon PIDFILE [keep-stdio]
 *
 * fork(); the child calls setsid() and forks again; the intermediate child exits, so the
 * grandchild is re-parented away from the main process. The grandchild writes its pid to
 * PIDFILE and sleeps forever (pause()). Unless "keep-stdio" is given it redirects stdin, stdout
 * and stderr to /dev/null first, as real daemons do (with keep-stdio it keeps the inherited
 * stdout/stderr open, which also tests that the prober does not wait for EOF on them).
 * The original process waits for the pid file to appear, then exits 0.
 */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: daemon PIDFILE [keep-stdio]\n");
        return 2;
    }
    const char *pidfile = argv[1];
    int keep_stdio = argc > 2 && strcmp(argv[2], "keep-stdio") == 0;
    unlink(pidfile);
    pid_t child = fork();
    if (child < 0) {
        perror("fork");
        return 2;
    }
    if (child == 0) {
        setsid();
        pid_t grandchild = fork();
        if (grandchild != 0)
            _exit(grandchild < 0 ? 2 : 0);
        if (!keep_stdio) {
            int null = open("/dev/null", O_RDWR);
            dup2(null, 0);
            dup2(null, 1);
            dup2(null, 2);
            if (null > 2)
                close(null);
        }
        char tmp[4096];
        snprintf(tmp, sizeof tmp, "%s.tmp", pidfile);
        FILE *f = fopen(tmp, "w");
        if (f) {
            fprintf(f, "%d\n", (int)getpid());
            fclose(f);
            rename(tmp, pidfile); /* atomic: readers never see a partial pid */
        }
        for (;;)
            pause();
    }
    waitpid(child, NULL, 0);
    struct stat st;
    struct timespec tick = {0, 10 * 1000 * 1000};
    for (int i = 0; i < 500 && stat(pidfile, &st) != 0; i++)
        nanosleep(&tick, NULL);
    printf("daemon started, pid file %s\n", pidfile);
    return 0;
}
