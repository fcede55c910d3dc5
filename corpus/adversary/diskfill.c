/* diskfill: writes until the disk says no. Row "disk fill" of corpus/adversary/README.md.
 *
 * Usage: diskfill PATH [MIB]
 * Writes 1 MiB blocks of non-zero bytes to PATH (default up to 2048 MiB) and prints "wrote N MiB"
 * and, when a write failed, "error <strerror>". Exits 0 when it wrote everything, 1 otherwise.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: diskfill PATH [MIB]\n");
        return 2;
    }
    long mib = argc > 2 ? atol(argv[2]) : 2048;
    static char block[1 << 20];
    memset(block, 'x', sizeof block);
    int fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) {
        printf("wrote 0 MiB\nerror %s\n", strerror(errno));
        return 1;
    }
    long done = 0;
    for (; done < mib; done++) {
        size_t off = 0;
        while (off < sizeof block) {
            ssize_t n = write(fd, block + off, sizeof block - off);
            if (n < 0) {
                printf("wrote %ld MiB\nerror %s\n", done, strerror(errno));
                fflush(stdout);
                return 1;
            }
            off += (size_t)n;
        }
    }
    close(fd);
    printf("wrote %ld MiB\n", done);
    return 0;
}
