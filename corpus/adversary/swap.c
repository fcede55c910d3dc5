/* swap: replaces its own program file during its cell: copies OTHER (default /bin/true) next to
 * itself and renames the copy over its own path, so that a receipt that digested the program
 * after the cells would name the other file. Row "swap" of corpus/adversary/README.md.
 *
 * Usage: swap SELF [OTHER]   (SELF: the program's path as the spec runs it, e.g. ./prog)
 * Prints "swapped" when the rename succeeded, else "blocked <error>"; exits 0 either way.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    const char *self = argc > 1 ? argv[1] : argv[0];
    const char *other = argc > 2 ? argv[2] : "/bin/true";
    char copy[4096];
    snprintf(copy, sizeof copy, "%s.swap", self);
    int in = open(other, O_RDONLY);
    int out = open(copy, O_WRONLY | O_CREAT | O_TRUNC, 0755);
    if (in < 0 || out < 0) {
        printf("blocked %s\n", strerror(errno));
        return 0;
    }
    char buf[65536];
    ssize_t n;
    while ((n = read(in, buf, sizeof buf)) > 0)
        if (write(out, buf, (size_t)n) != n) {
            printf("blocked %s\n", strerror(errno));
            return 0;
        }
    close(in);
    close(out);
    if (rename(copy, self) != 0) {
        printf("blocked %s\n", strerror(errno));
        return 0;
    }
    printf("swapped\n");
    return 0;
}
