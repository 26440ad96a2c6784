/* hpck_guard PROG [ARGS...]: the last trusted code in every candidate process.
 *
 * Built static (no dynamic loader runs before main) and started by the host directly or by
 * mpirun, once per rank. It marks itself not dumpable, connects to the host's socket
 * (HPCK_SOCK), installs a seccomp filter that the candidate can never remove, reports in and
 * stops itself. Only once every rank has reported in and is stopped does the host let them
 * go on, so no candidate code runs anywhere before every candidate process is filtered. Then
 * it execs PROG with the connection as fd HPCK_FD.
 *
 * The confinement (codegen_eval/harness_c/confine.h: a seccomp filter and a Landlock domain of
 * its own) keeps a candidate process from changing what the host measures: no new processes
 * (a forked helper would escape the host's SIGSTOP), no signals to any process but itself,
 * no reaching another process's memory, not even a dumpable one such as the sandbox's PID 1. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "confine.h" /* codegen_eval/harness_c: the seccomp filter and the Landlock domain */
#include "hpck_proto.h"
#include "netconfine.h"

static void die(const char *what) {
    fprintf(stderr, "hpck_guard: %s: %s\n", what, strerror(errno));
    _exit(111);
}

int main(int argc, char **argv) {
    prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
    if (argc < 2) {
        fprintf(stderr, "usage: hpck_guard PROG [ARGS...]\n");
        return 2;
    }
    const char *name = getenv("HPCK_SOCK");
    if (!name || !*name || strlen(name) >= sizeof(((struct sockaddr_un *)0)->sun_path) - 1) {
        fprintf(stderr, "hpck_guard: HPCK_SOCK not set\n");
        return 2;
    }
    int s = socket(AF_UNIX, SOCK_SEQPACKET, 0); /* not CLOEXEC: the guest inherits it */
    if (s < 0) die("socket");
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    memcpy(addr.sun_path + 1, name, strlen(name)); /* abstract: sun_path[0] == 0 */
    socklen_t alen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + strlen(name));
    if (connect(s, (struct sockaddr *)&addr, alen) != 0) die("connect");
    /* CPU affinity stays open: libgomp binds its threads by thread id, and pinning the host
     * elsewhere can only make the candidate's own windows longer (the baseline is already
     * measured). A serial configuration (HPCK_SINGLE_THREAD=1, set by the scorer) gets no
     * second thread at all: the filter refuses clone, so a "serial" candidate cannot use a
     * second CPU (with two pthreads it had up to 2x on two free CPUs). Pinning it to one CPU
     * instead made timing at load unusable (a nice-19 process held to a busy CPU: the same
     * code measured 0.4-33x against itself). Abstract sockets stay open: the connection to
     * the host is one. */
    const char *single = getenv("HPCK_SINGLE_THREAD");
    const int single_thread = single && strcmp(single, "1") == 0;
    unsetenv("HPCK_SINGLE_THREAD");
    /* The host stops the candidate when it hears DONE; until it gets a CPU to do so, a thread
     * the candidate left running goes on working outside the timed window. On a loaded machine
     * that wait is long (at load 6 on 2 CPUs a detached thread finished all of AXPY in it).
     * Every candidate process therefore runs at the lowest priority, so the host's wakeup
     * preempts it and other work starves it rather than the host; with RLIMIT_NICE 0 (hard
     * too) it can never lower its nice value again, and the filter below refuses setpriority.
     * The baseline runs in the same process, so speedups compare like with like. */
    if (setpriority(PRIO_PROCESS, 0, 19) != 0) die("setpriority");
    struct rlimit no_raise = {0, 0};
    if (setrlimit(RLIMIT_NICE, &no_raise) != 0) die("setrlimit");
    /* the filter lets it change its own scheduling policy: with an RLIMIT_RTPRIO above 0 (a
     * machine whose limits.conf grants real-time priority) SCHED_FIFO would starve the host */
    if (setrlimit(RLIMIT_RTPRIO, &no_raise) != 0) die("setrlimit");
    if (confine_seccomp(single_thread ? CONFINE_SINGLE_THREAD : CONFINE_AFFINITY_ANY) != 0) die("seccomp");
    int landlock = confine_landlock(0);
    extern char **environ;
    if (netconfine_tcp(environ) < 0) die("landlock tcp");
    hpck_msg hello = {HPCK_MAGIC, 'g', (uint32_t)landlock, 0};
    if (send(s, &hello, sizeof hello, 0) != (ssize_t)sizeof hello) die("send");
    /* the host continues us once every rank is filtered and stopped */
    raise(SIGSTOP);
    char fdenv[32];
    snprintf(fdenv, sizeof fdenv, "%d", s);
    setenv("HPCK_FD", fdenv, 1);
    unsetenv("HPCK_SOCK");
    execv(argv[1], argv + 1);
    die("exec");
}
