/* he_guard PROG [ARGS...]: the last trusted code in the candidate's process.
 *
 * The trusted checker (a Python runner or a compiled test program) starts the candidate's
 * process through this static binary. Before PROG runs, the process is confined so that it
 * can only produce answers on its pipes, never reach the checker
 * (codegen_eval/harness_c/confine.h):
 *
 *   - a seccomp filter the candidate cannot remove: no new processes (threads only, so
 *     nothing outlives the kill at the end), no signals to any process but itself, no
 *     pidfd tricks, no ptrace or cross-process memory calls, no changing another
 *     process's scheduling, no asking the kernel to signal someone else (F_SETOWN);
 *   - a Landlock domain of its own: no ptrace-class access to any process outside it
 *     (/proc/<pid>/mem of the checker and of the sandbox's PID 1), and from ABI 6 on no
 *     signals or abstract unix sockets outside it;
 *   - no file descriptors but 0-4 (stdin, the log on 1 and 2, the two RPC pipes).
 *
 * Same confinement as the hpc-kernels guard; this one needs no handshake because its parent
 * is the checker itself, which waits for the candidate's first message. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "confine.h"

static void die(const char *what) {
    fprintf(stderr, "he_guard: %s: %s\n", what, strerror(errno));
    _exit(112);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: he_guard PROG [ARGS...]\n");
        return 2;
    }
    /* whatever else the parent left open is not the candidate's business */
    if (syscall(SYS_close_range, 5u, ~0u, 0u) != 0)
        for (int fd = 5; fd < 1024; fd++) close(fd);
    if (confine_seccomp(CONFINE_AFFINITY_OWN) != 0) die("seccomp");
    confine_landlock(1);
    execv(argv[1], argv + 1);
    die("exec");
}
