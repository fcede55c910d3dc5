/* escape: drives the sandbox tests: tries everything an artifact under test must not do, and
 * says for each attempt whether it got through.
 *
 * Usage: escape HOLDOUT_FILE KEY_FILE LEDGER_FILE HOME_DIR OUTSIDE_FILE PORT
 *
 * Attempts, one output line each, `NAME ok` (it got through) or `NAME blocked <error>`:
 *   read_holdout   read HOLDOUT_FILE (a held-out check)
 *   read_key       read KEY_FILE (the signing key)
 *   write_ledger   open LEDGER_FILE for writing (qualify's ledger)
 *   write_etc      create /etc/qualify-escape-<pid>
 *   write_home     create HOME_DIR/qualify-escape-<pid>
 *   write_outside  create OUTSIDE_FILE (the repository, outside the workdir)
 *   connect_host   connect to 127.0.0.1:PORT (a listener on the host's loopback)
 *   signal_qualify kill(qualify's pid, 0) (the pid is the prefix of QUALIFY_PROBE_ID)
 *   list_proc      `ok N` when /proc lists more than 16 processes (N), else `blocked N`
 * Files it manages to create are removed again. Always exits 0.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static void say(const char *name, int ok, int err)
{
    if (ok)
        printf("%s ok\n", name);
    else
        printf("%s blocked %s\n", name, strerror(err));
}

static void try_read(const char *name, const char *path)
{
    int fd = open(path, O_RDONLY);
    if (fd < 0) {
        say(name, 0, errno);
        return;
    }
    char buf[64];
    ssize_t n = read(fd, buf, sizeof buf);
    int err = errno;
    close(fd);
    say(name, n > 0, n == 0 ? ENODATA : err);
}

static void try_create(const char *name, const char *path)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
    if (fd < 0) {
        say(name, 0, errno);
        return;
    }
    close(fd);
    unlink(path);
    say(name, 1, 0);
}

int main(int argc, char **argv)
{
    if (argc < 7) {
        fprintf(stderr, "usage: escape HOLDOUT_FILE KEY_FILE LEDGER_FILE HOME_DIR OUTSIDE_FILE PORT\n");
        return 2;
    }
    char path[4096];
    try_read("read_holdout", argv[1]);
    try_read("read_key", argv[2]);
    int fd = open(argv[3], O_WRONLY);
    int err = errno;
    if (fd >= 0)
        close(fd);
    say("write_ledger", fd >= 0, err);
    snprintf(path, sizeof path, "/etc/qualify-escape-%d", (int)getpid());
    try_create("write_etc", path);
    snprintf(path, sizeof path, "%s/qualify-escape-%d", argv[4], (int)getpid());
    try_create("write_home", path);
    try_create("write_outside", argv[5]);

    int s = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in addr = {0};
    addr.sin_family = AF_INET;
    addr.sin_port = htons((unsigned short)atoi(argv[6]));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int c = s < 0 ? -1 : connect(s, (struct sockaddr *)&addr, sizeof addr);
    err = errno;
    say("connect_host", c == 0, err);
    if (s >= 0)
        close(s);

    const char *tag = getenv("QUALIFY_PROBE_ID");
    int qualify = tag ? atoi(tag) : 0;
    if (qualify > 0) {
        int k = kill(qualify, 0);
        err = errno;
        say("signal_qualify", k == 0, err);
    }
    else
        printf("signal_qualify blocked no QUALIFY_PROBE_ID\n");

    int procs = 0;
    DIR *d = opendir("/proc");
    if (d) {
        struct dirent *e;
        while ((e = readdir(d)) != NULL)
            if (e->d_name[0] >= '0' && e->d_name[0] <= '9')
                procs++;
        closedir(d);
    }
    printf("list_proc %s %d\n", procs > 16 ? "ok" : "blocked", procs);
    return 0;
}
