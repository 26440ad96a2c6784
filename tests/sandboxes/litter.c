/* A payload that makes its run directory as hard to clean up as an unprivileged uid can:
 *   litter DEPTH WIDE
 * a DEPTH-level directory chain (deeper than PATH_MAX allows as one path) with a mode-000
 * directory at the bottom, WIDE empty files in one directory, a FIFO and a listening unix
 * socket, a mode-000 directory holding a file, a read-only directory holding a mode-000
 * file, and attempts at the immutable and append-only inode flags (which need a capability
 * the payload lacks). Prints "chattr +i: <errno name>" / "chattr +a: ..." and exits 3 (a
 * non-zero exit makes the harness inspect the run directory for size-capped files).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

static void touch(const char *p, mode_t m) {
    int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, m);
    if (fd >= 0) close(fd);
}

static void try_flag(const char *what, int flag) {
    touch("flagged", 0644);
    int fd = open("flagged", O_RDONLY);
    int attr = flag;
    int r = fd < 0 ? -1 : ioctl(fd, FS_IOC_SETFLAGS, &attr);
    printf("%s: %s\n", what, r == 0 ? "SET" : strerrorname_np(errno));
    if (fd >= 0) close(fd);
}

int main(int argc, char **argv) {
    int depth = argc > 1 ? atoi(argv[1]) : 5000;
    int wide = argc > 2 ? atoi(argv[2]) : 1000;
    try_flag("chattr +i", FS_IMMUTABLE_FL);
    try_flag("chattr +a", FS_APPEND_FL);
    if (mkfifo("fifo", 0600) != 0) perror("mkfifo");
    int s = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    strcpy(a.sun_path, "sock");
    if (bind(s, (struct sockaddr *)&a, sizeof a) != 0 || listen(s, 1) != 0) perror("sock");
    mkdir("locked", 0700);
    touch("locked/f", 0600);
    chmod("locked", 0);
    mkdir("ro", 0700);
    touch("ro/f", 0);
    chmod("ro", 0500);
    mkdir("wide", 0700);
    char name[64];
    for (int i = 0; i < wide; i++) {
        snprintf(name, sizeof name, "wide/%d", i);
        touch(name, 0);
    }
    for (int i = 0; i < depth; i++) {
        if (mkdir("d", 0700) != 0 || chdir("d") != 0) {
            perror("deep");
            return 4;
        }
    }
    mkdir("bottom", 0700);
    touch("bottom/f", 0600);
    chmod("bottom", 0);
    puts("littered");
    return 3;
}
