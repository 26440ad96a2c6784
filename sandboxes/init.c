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
 * With --report-fd N it also writes what it observed to fd N (a pipe to the scorer, closed to
 * the payload: close-on-exec here, and /proc/1/fd is closed by non-dumpability) as one line
 *     exited CODE cpu_ms MS      or      killed SIGNAL cpu_ms MS
 * where MS is the payload main process's own CPU time (utime + stime of the zombie, not of the
 * children it reaped). The exit status alone cannot say it: `exit(152)` and a death by SIGXCPU
 * both reach bwrap's caller as 152, and a payload may raise SIGXCPU on itself or lower its own
 * RLIMIT_CPU; the sandbox calls it cpu_limit only when the CPU time reached its own limit.
 *
 * usage: sandbox-init [--report-fd N] PROGRAM ARGS...
 *        (exit 127 with "sandbox-init: ..." if exec fails)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

/* utime + stime of `pid` (a zombie not yet reaped) in milliseconds, or -1 */
static long long cpu_ms(pid_t pid) {
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) return -1;
    buf[n] = 0;
    char *p = strrchr(buf, ')'); /* the command name may hold spaces and parentheses */
    unsigned long long ut, st;
    if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) != 2)
        return -1;
    long hz = sysconf(_SC_CLK_TCK);
    return hz > 0 ? (long long)((ut + st) * 1000ULL / (unsigned long long)hz) : -1;
}

static void report(int fd, int status, long long ms) {
    if (fd < 0) return;
    char line[96];
    int n = WIFEXITED(status)
                ? snprintf(line, sizeof line, "exited %d cpu_ms %lld\n", WEXITSTATUS(status), ms)
                : snprintf(line, sizeof line, "killed %d cpu_ms %lld\n", WTERMSIG(status), ms);
    if (n > 0) (void)!write(fd, line, (size_t)n);
    close(fd);
}

int main(int argc, char **argv) {
    int report_fd = -1;
    if (argc >= 3 && !strcmp(argv[1], "--report-fd")) {
        report_fd = atoi(argv[2]);
        /* never inherited by the payload: only this init can write the report */
        if (report_fd < 3 || fcntl(report_fd, F_SETFD, FD_CLOEXEC) != 0) {
            perror("sandbox-init: --report-fd");
            return 127;
        }
        argv += 2;
        argc -= 2;
    }
    if (argc < 2) {
        fputs("sandbox-init: usage: sandbox-init [--report-fd N] PROGRAM ARGS...\n", stderr);
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
        siginfo_t si;
        memset(&si, 0, sizeof si);
        if (waitid(P_ALL, 0, &si, WEXITED | WNOWAIT) != 0) {
            if (errno == EINTR) continue;
            return 127; /* ECHILD cannot happen before the payload was reaped */
        }
        /* the payload's CPU time is read while it is a zombie, before it is reaped */
        long long ms = si.si_pid == pid ? cpu_ms(pid) : -1;
        int status;
        pid_t w;
        while ((w = waitpid(si.si_pid, &status, __WALL)) < 0 && errno == EINTR) {
        }
        if (w == pid) {
            report(report_fd, status, ms);
            if (WIFEXITED(status)) return WEXITSTATUS(status);
            return 128 + WTERMSIG(status);
        }
    }
}
