/* hpck_guard PROG [ARGS...]: the last trusted code in every candidate process.
 *
 * Built static (no dynamic loader runs before main) and started by the host directly or by
 * mpirun, once per rank. It marks itself not dumpable, connects to the host's socket
 * (HPCK_SOCK), installs a seccomp filter that the candidate can never remove, reports in and
 * stops itself. Only once every rank has reported in and is stopped does the host let them
 * go on, so no candidate code runs anywhere before every candidate process is filtered. Then
 * it execs PROG with the connection as fd HPCK_FD.
 *
 * It also puts the process in a Landlock domain of its own (see enter_landlock), so it can
 * reach no other process's memory, not even a dumpable one such as the sandbox's PID 1.
 *
 * The filter keeps a candidate process from changing what the host measures: no new
 * processes (threads only: a forked helper would escape the host's SIGSTOP), no signals to
 * any process but itself, no async-I/O owners that would make the kernel signal someone
 * else, no changing another process's priority or scheduling policy, no reading or writing
 * other processes' memory. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/landlock.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include "hpck_proto.h"

#if defined(__x86_64__)
#define HPCK_AUDIT_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define HPCK_AUDIT_ARCH AUDIT_ARCH_AARCH64
#else
#error "hpck_guard: unsupported architecture"
#endif

#define ARG_LO(n) (offsetof(struct seccomp_data, args[n]))
#define LOAD(off) BPF_STMT(BPF_LD | BPF_W | BPF_ABS, (off))
#define RET(v) BPF_STMT(BPF_RET | BPF_K, (v))
#define DENY RET(SECCOMP_RET_ERRNO | EPERM)
#define ALLOW RET(SECCOMP_RET_ALLOW)
/* if nr == NR, go on to the next instruction, else skip `skip` instructions */
#define IF_NR(nr, skip) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (nr), 0, (skip))

static void die(const char *what) {
    fprintf(stderr, "hpck_guard: %s: %s\n", what, strerror(errno));
    _exit(111);
}

static int install_filter(void) {
    const unsigned self = (unsigned)getpid();
    struct sock_filter f[] = {
        LOAD(offsetof(struct seccomp_data, arch)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, HPCK_AUDIT_ARCH, 1, 0),
        RET(SECCOMP_RET_KILL_PROCESS),
        LOAD(offsetof(struct seccomp_data, nr)),
#ifdef SYS_fork
        IF_NR(SYS_fork, 1), DENY,
#endif
#ifdef SYS_vfork
        IF_NR(SYS_vfork, 1), DENY,
#endif
        /* clone3 hides its flags behind a pointer: say "not here" so glibc falls back to
         * clone, whose flags we can read */
        IF_NR(SYS_clone3, 1), RET(SECCOMP_RET_ERRNO | ENOSYS),
        IF_NR(SYS_clone, 4), LOAD(ARG_LO(0)),
        BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, 0x00010000 /* CLONE_THREAD */, 0, 1), ALLOW, DENY,
        /* signals: only to this process (the pid argument, low 32 bits as the kernel reads it) */
        IF_NR(SYS_kill, 4), LOAD(ARG_LO(0)), BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, self, 0, 1),
        ALLOW, DENY,
        IF_NR(SYS_tgkill, 4), LOAD(ARG_LO(0)), BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, self, 0, 1),
        ALLOW, DENY,
        IF_NR(SYS_rt_sigqueueinfo, 4), LOAD(ARG_LO(0)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, self, 0, 1), ALLOW, DENY,
        IF_NR(SYS_rt_tgsigqueueinfo, 4), LOAD(ARG_LO(0)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, self, 0, 1), ALLOW, DENY,
        IF_NR(SYS_tkill, 1), DENY,
        IF_NR(SYS_pidfd_open, 1), DENY,
        IF_NR(SYS_pidfd_send_signal, 1), DENY,
        IF_NR(SYS_pidfd_getfd, 1), DENY,
        IF_NR(SYS_process_vm_readv, 1), DENY,
        IF_NR(SYS_process_vm_writev, 1), DENY,
        IF_NR(SYS_ptrace, 1), DENY,
        /* PRIO_USER / PRIO_PGRP would reach the host: no priorities at all */
        IF_NR(SYS_setpriority, 1), DENY,
        /* scheduling policy of this process (pid 0 or its own pid) only. CPU affinity stays
         * open: libgomp binds its threads by thread id, and pinning the host elsewhere can
         * only make the candidate's own windows longer (the baseline is already measured) */
        IF_NR(SYS_sched_setscheduler, 5), LOAD(ARG_LO(0)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 1, 0),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, self, 0, 1), ALLOW, DENY,
        IF_NR(SYS_sched_setparam, 5), LOAD(ARG_LO(0)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 1, 0),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, self, 0, 1), ALLOW, DENY,
        IF_NR(SYS_sched_setattr, 5), LOAD(ARG_LO(0)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 1, 0),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, self, 0, 1), ALLOW, DENY,
        /* F_SETOWN / F_SETOWN_EX / F_SETSIG would have the kernel signal another process */
        IF_NR(SYS_fcntl, 6), LOAD(ARG_LO(1)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, F_SETOWN, 2, 0),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, F_SETSIG, 1, 0),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, F_SETOWN_EX, 0, 1), DENY, ALLOW,
        IF_NR(SYS_ioctl, 5), LOAD(ARG_LO(1)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0x8901 /* FIOSETOWN */, 1, 0),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0x8902 /* SIOCSPGRP */, 0, 1), DENY, ALLOW,
        ALLOW,
    };
    struct sock_fprog prog = {(unsigned short)(sizeof f / sizeof f[0]), f};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return -1;
    return (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog);
}

/* A Landlock domain of its own: Landlock then refuses this process (and what it execs) ptrace
 * (attach) access to any process outside the domain, which covers opening another process's
 * /proc/<pid>/mem (the sandbox's PID 1, the host, mpirun), and from ABI 6 on also signals to
 * them. Their environ and fd/ are closed by their being not dumpable, not by Landlock. The ruleset handles one filesystem right nobody here needs
 * (making character devices), since a domain must handle something. Returns the ABI version
 * in force, 0 where the kernel has no Landlock. */
static int enter_landlock(void) {
    /* the kernel's struct landlock_ruleset_attr as of ABI 6; older libc headers lack fields */
    struct {
        uint64_t handled_access_fs, handled_access_net, scoped;
    } attr = {.handled_access_fs = LANDLOCK_ACCESS_FS_MAKE_CHAR};
    long abi = syscall(SYS_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);
    if (abi < 1) return 0;
    size_t size = sizeof attr.handled_access_fs; /* ABI 1-3 */
    if (abi >= 6) {
        attr.scoped = 1u << 1; /* LANDLOCK_SCOPE_SIGNAL */
        size = sizeof attr;
    }
    int fd = (int)syscall(SYS_landlock_create_ruleset, &attr, size, 0);
    if (fd < 0) return 0;
    int rc = (int)syscall(SYS_landlock_restrict_self, fd, 0);
    close(fd);
    return rc == 0 ? (int)abi : 0;
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
    if (install_filter() != 0) die("seccomp");
    int landlock = enter_landlock();
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
