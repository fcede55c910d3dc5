/* random_out: a nondeterministic program for --repeat: every run prints different stdout
 * (distinct_outputs > 1), while exiting 0.
 *
 * Usage: random_out
 *
 * Prints 16 bytes from /dev/urandom as hex, plus the pid, and exits 0.
 */
#include <stdio.h>
#include <unistd.h>

int main(void)
{
    unsigned char b[16] = {0};
    FILE *f = fopen("/dev/urandom", "rb");
    if (f) {
        fread(b, 1, sizeof b, f);
        fclose(f);
    }
    for (size_t i = 0; i < sizeof b; i++)
        printf("%02x", b[i]);
    printf(" pid %d\n", (int)getpid());
    return 0;
}
