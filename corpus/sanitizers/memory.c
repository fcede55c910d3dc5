/* memory: AddressSanitizer's reports (built with `cc -fsanitize=address -g -O1`); ASan stops
 * the program at the first error (exit status 1).
 *
 * Usage: memory use-after-free|overflow|fine
 *
 * use-after-free: reads a freed block -> crash, cause use_after_free
 * overflow:       writes one int past a block -> crash, cause memory_error (heap-buffer-overflow)
 * fine:           reads and writes within a live block -> ok
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "fine";
    int *volatile p = malloc(8 * sizeof(int));
    for (int i = 0; i < 8; i++)
        p[i] = i;
    if (strcmp(mode, "use-after-free") == 0) {
        free(p);
        printf("%d\n", p[3]);
        return 0;
    }
    if (strcmp(mode, "overflow") == 0)
        p[8] = 8;
    printf("%d\n", p[3]);
    free(p);
    return 0;
}
