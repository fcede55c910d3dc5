/* exit_code: drives `ok` (N = 0) and `exit_failure` with exit_code N.
 *
 * Usage: exit_code N [MESSAGE]
 *
 * Prints MESSAGE (default "exiting with N") on stdout and exits with status N (0..255).
 */
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    int code = argc > 1 ? atoi(argv[1]) : 0;
    if (argc > 2)
        puts(argv[2]);
    else
        printf("exiting with %d\n", code);
    return code;
}
