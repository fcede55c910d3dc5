/* pipe_deadlock: drives `deadlock` across two processes (circular wait on pipes).
 *
 * Usage: pipe_deadlock
 *
 * Creates pipes A and B and forks. The parent blocks in read(A) waiting for the child, the
 * child blocks in read(B) waiting for the parent; neither ever writes. Both processes keep the
 * write ends of both pipes open, so every write end is held inside the process tree and no
 * read ever sees EOF: only the tree itself could release the wait. Never exits.
 */
#include <stdio.h>
#include <unistd.h>

int main(void)
{
    int a[2], b[2];
    char c;
    if (pipe(a) != 0 || pipe(b) != 0) {
        perror("pipe");
        return 2;
    }
    pid_t pid = fork();
    if (pid < 0) {
        perror("fork");
        return 2;
    }
    if (pid == 0) {
        /* child: waits for a byte from the parent on B (write end b[1] held by both) */
        if (read(b[0], &c, 1) > 0)
            write(a[1], &c, 1);
        return 0;
    }
    fprintf(stderr, "pipe_deadlock: parent %d and child %d each wait on the other's pipe\n",
            (int)getpid(), (int)pid);
    /* parent: waits for a byte from the child on A (write end a[1] held by both) */
    if (read(a[0], &c, 1) > 0)
        write(b[1], &c, 1);
    puts("unreachable: no deadlock");
    return 0;
}
