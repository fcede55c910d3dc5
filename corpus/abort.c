/* abort: drives `crash` with signal SIGABRT.
 *
 * Usage: abort
 *
 * Calls abort(3), as a failed assert would. Core dumps are disabled first.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>

int main(void)
{
    struct rlimit none = {0, 0};
    setrlimit(RLIMIT_CORE, &none);
    fprintf(stderr, "abort: calling abort()\n");
    abort();
}
