/* heap_corrupt: glibc's allocator catches its own heap corrupted and aborts.
 *
 * Usage: heap_corrupt corrupt|fine
 *
 * corrupt: overwrites the size field in the header of a block (as a write past the block
 *          before it would), then frees it: glibc prints "free(): invalid size" (or another of
 *          its checks) and aborts -> crash, cause memory_corruption.
 * fine:    the same block freed intact -> ok.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    int corrupt = argc > 1 && strcmp(argv[1], "corrupt") == 0;
    char *volatile p = malloc(40);
    memset(p, 0x41, 40);
    if (corrupt)
        ((volatile size_t *)p)[-1] = (size_t)0x4141414141414141ULL;
    free(p);
    puts("freed the block");
    return 0;
}
