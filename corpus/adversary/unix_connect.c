/* unix_connect: reaches for a service on the host through a unix socket bound to a path (a
 * database's, a container runtime's, a test listener next to the workdir): a private network
 * namespace does not close that channel by itself. Row "unix socket" of
 * corpus/adversary/README.md.
 *
 * Usage: unix_connect PATH
 * Prints "connected <first line the server sent>" or "blocked <error>"; exits 0 either way.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: unix_connect PATH\n");
        return 2;
    }
    int s = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un a = {0};
    a.sun_family = AF_UNIX;
    strncpy(a.sun_path, argv[1], sizeof a.sun_path - 1);
    if (s < 0 || connect(s, (struct sockaddr *)&a, sizeof a) != 0) {
        printf("blocked %s\n", strerror(errno));
        return 0;
    }
    char buf[256] = {0};
    ssize_t n = read(s, buf, sizeof buf - 1);
    if (n > 0)
        buf[strcspn(buf, "\n")] = 0;
    printf("connected %s\n", n > 0 ? buf : "");
    return 0;
}
