/* sandbox init: pid 1 of every bwrap sandbox (bwrap --as-pid-1 execs it, read-only at
 * /.sandbox-init inside).
 *
 * Why not bwrap's own pid 1: that process is a fork of bwrap, and bwrap marks itself
 * dumpable again when it drops privileges (PR_SET_DUMPABLE 1 in drop_privs), so a payload
 * of the same uid could read its whole memory through /proc/1/mem: bwrap's parsed argument
 * list, every --setenv value included. This init is a fresh exec: its memory holds only its
 * argv (the payload's command line) and its environment (the payload's own), and it marks
 * itself non-dumpable anyway, which closes /proc/1/{mem,environ,fd,maps,...} to the payload.
 *
 * It forks the payload, reaps every process orphaned to it, and when the payload's main
 * process ends exits with its status (128+N for signal N, as bwrap reports it); the kernel
 * then SIGKILLs whatever is left in the pid namespace. It installs no signal handlers: as a
 * namespace's pid 1 it then ignores every signal sent from inside (only the host can kill it).
 *
 * usage: sandbox-init PROGRAM ARGS...   (exit 127 with "sandbox-init: ..." if exec fails)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv) {
    if (argc < 2) {
        fputs("sandbox-init: usage: sandbox-init PROGRAM ARGS...\n", stderr);
        return 127;
    }
    if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0) {
        perror("sandbox-init: PR_SET_DUMPABLE");
        return 127;
    }
    pid_t pid = fork();
    if (pid < 0) {
        perror("sandbox-init: fork");
        return 127;
    }
    if (pid == 0) {
        /* exec makes the payload dumpable again (its own /proc/self works as usual). */
        execvp(argv[1], &argv[1]);
        int e = errno;
        fprintf(stderr, "sandbox-init: execvp %s: %s\n", argv[1], strerror(e));
        _exit(e == ENOENT ? 127 : 126);
    }
    for (;;) {
        int status;
        pid_t w = wait(&status);
        if (w < 0) {
            if (errno == EINTR) continue;
            return 127; /* ECHILD cannot happen before the payload was reaped */
        }
        if (w == pid) {
            if (WIFEXITED(status)) return WEXITSTATUS(status);
            return 128 + WTERMSIG(status);
        }
    }
}
