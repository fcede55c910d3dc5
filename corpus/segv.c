/* segv: drives `crash` with signal SIGSEGV.
 *
 * Usage: segv
 *
 * Writes through a null pointer. Core dumps are disabled first so the crash is quick and
 * leaves no core file behind.
 */
#include <stdio.h>
#include <sys/resource.h>

int main(void)
{
    struct rlimit none = {0, 0};
    setrlimit(RLIMIT_CORE, &none);
    fprintf(stderr, "segv: writing through a null pointer\n");
    volatile int *p = NULL;
    *p = 42;
    return 0;
}
