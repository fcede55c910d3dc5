/* accept_block: drives `timeout` with timeout_kind `blocked_external`: blocked on a socket,
 * waiting for a client from outside the process tree.
 *
 * Usage: accept_block
 *
 * Listens on 127.0.0.1 port 0 (an ephemeral port, printed on stderr) and calls accept(), which
 * blocks forever because nobody connects. Never exits on its own.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <sys/socket.h>
#include <unistd.h>

int main(void)
{
    int s = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in addr = {0};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    if (s < 0 || bind(s, (struct sockaddr *)&addr, sizeof addr) != 0 || listen(s, 1) != 0) {
        perror("accept_block: socket");
        return 2;
    }
    socklen_t len = sizeof addr;
    getsockname(s, (struct sockaddr *)&addr, &len);
    fprintf(stderr, "accept_block: waiting for a client on 127.0.0.1:%d\n", ntohs(addr.sin_port));
    for (;;) {
        int c = accept(s, NULL, NULL);
        if (c >= 0)
            close(c);
    }
}
