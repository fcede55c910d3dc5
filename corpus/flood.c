/* flood: drives `output_truncated` and checks that the prober drains output without blocking
 * the child or growing its own memory.
 *
 * Usage: flood MIB
 *
 * Writes exactly MIB MiB to stdout as fast as it can, as MIB writes of the same 1 MiB block
 * (32768 lines of 32 bytes, "flood line NNNN...\n" with a 20-digit line number 0..32767), then
 * exits 0. Deterministic: the same MIB always yields the same bytes, so the sha256 is stable,
 * and the output always ends with "flood line 00000000000000032767\n".
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    long mib = argc > 1 ? atol(argv[1]) : 1;
    size_t size = 1 << 20;
    char *buf = malloc(size + 1); /* + 1: room for the last record's NUL */
    for (size_t i = 0; i < size; i += 32)
        snprintf(buf + i, 33, "flood line %020zu\n", i / 32); /* exactly 32 bytes */
    for (long m = 0; m < mib; m++) {
        size_t off = 0;
        while (off < size) {
            ssize_t n = write(1, buf + off, size - off);
            if (n < 0) {
                if (errno == EINTR)
                    continue;
                perror("flood: write");
                return 1;
            }
            off += (size_t)n;
        }
    }
    return 0;
}
