/* he_guard PROG [ARGS...]: the last trusted code in the candidate's process.
 *
 * The trusted checker (a Python runner or a compiled test program) starts the candidate's
 * process through this static binary. Before PROG runs, the process is confined so that it
 * can only produce answers on its pipes, never reach the checker:
 *
 *   - a Landlock domain of its own: Landlock refuses ptrace-class access from inside the
 *     domain to any process outside it, which covers /proc/<pid>/mem, environ, fd/ and
 *     exe of the checker and of the sandbox's PID 1; from ABI 6 on it also scopes signals
 *     and abstract unix sockets to the domain;
 *   - a seccomp filter the candidate cannot remove: no new processes (threads only, so
 *     nothing outlives the kill at the end), no signals to any process but itself, no
 *     pidfd tricks, no ptrace or cross-process memory calls, no changing another
 *     process's scheduling, no asking the kernel to signal someone else (F_SETOWN);
 *   - no file descriptors but 0-4 (stdin, the log on 1 and 2, the two RPC pipes).
 *
 * Same ideas as the hpc-kernels guard; this one needs no handshake because its parent is
 * the checker itself, which waits for the candidate's first message. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/landlock.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#if defined(__x86_64__)
#define HE_AUDIT_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define HE_AUDIT_ARCH AUDIT_ARCH_AARCH64
#else
#error "he_guard: unsupported architecture"
#endif

#define ARG0 (offsetof(struct seccomp_data, args[0]))
#define ARG1 (offsetof(struct seccomp_data, args[1]))
#define LOAD(off) BPF_STMT(BPF_LD | BPF_W | BPF_ABS, (off))
#define RET(v) BPF_STMT(BPF_RET | BPF_K, (v))
#define DENY RET(SECCOMP_RET_ERRNO | EPERM)
#define ALLOW RET(SECCOMP_RET_ALLOW)
/* syscall nr == NR: fall through to the next instruction, else skip `skip` of them */
#define IF_NR(nr, skip) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (nr), 0, (skip))
/* allow when the (already loaded) pid argument is this process, else deny: 3 instructions */
#define SELF_ONLY(self) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (self), 0, 1), ALLOW, DENY
/* allow pid 0 (the caller) or this process, else deny: 4 instructions */
#define SELF_OR_ZERO(self) \
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 1, 0), SELF_ONLY(self)

static void die(const char *what) {
    fprintf(stderr, "he_guard: %s: %s\n", what, strerror(errno));
    _exit(112);
}

static int install_filter(void) {
    const uint32_t self = (uint32_t)getpid();
    struct sock_filter f[] = {
        LOAD(offsetof(struct seccomp_data, arch)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, HE_AUDIT_ARCH, 1, 0),
        RET(SECCOMP_RET_KILL_PROCESS),
        LOAD(offsetof(struct seccomp_data, nr)),
#ifdef SYS_fork
        IF_NR(SYS_fork, 1), DENY,
#endif
#ifdef SYS_vfork
        IF_NR(SYS_vfork, 1), DENY,
#endif
        /* clone3 keeps its flags behind a pointer: "not implemented" makes glibc fall back
         * to clone, whose flags a filter can read */
        IF_NR(SYS_clone3, 1), RET(SECCOMP_RET_ERRNO | ENOSYS),
        IF_NR(SYS_clone, 4), LOAD(ARG0),
        BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, 0x00010000 /* CLONE_THREAD */, 0, 1), ALLOW, DENY,
        /* signals: the pid argument must be this process (0 and -1 would reach the group
         * and everyone, the checker included) */
        IF_NR(SYS_kill, 4), LOAD(ARG0), SELF_ONLY(self),
        IF_NR(SYS_tgkill, 4), LOAD(ARG0), SELF_ONLY(self),
        IF_NR(SYS_rt_sigqueueinfo, 4), LOAD(ARG0), SELF_ONLY(self),
        IF_NR(SYS_rt_tgsigqueueinfo, 4), LOAD(ARG0), SELF_ONLY(self),
        IF_NR(SYS_tkill, 1), DENY,
        IF_NR(SYS_pidfd_open, 1), DENY,
        IF_NR(SYS_pidfd_send_signal, 1), DENY,
        IF_NR(SYS_pidfd_getfd, 1), DENY,
        IF_NR(SYS_process_vm_readv, 1), DENY,
        IF_NR(SYS_process_vm_writev, 1), DENY,
        IF_NR(SYS_ptrace, 1), DENY,
        IF_NR(SYS_kcmp, 1), DENY,
        /* PRIO_PGRP / PRIO_USER would slow the checker down: no priorities at all */
        IF_NR(SYS_setpriority, 1), DENY,
        IF_NR(SYS_sched_setaffinity, 5), LOAD(ARG0), SELF_OR_ZERO(self),
        IF_NR(SYS_sched_setscheduler, 5), LOAD(ARG0), SELF_OR_ZERO(self),
        IF_NR(SYS_sched_setparam, 5), LOAD(ARG0), SELF_OR_ZERO(self),
        IF_NR(SYS_sched_setattr, 5), LOAD(ARG0), SELF_OR_ZERO(self),
        /* the kernel would signal the owner of a descriptor: another process */
        IF_NR(SYS_fcntl, 6), LOAD(ARG1),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, F_SETOWN, 2, 0),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, F_SETSIG, 1, 0),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, F_SETOWN_EX, 0, 1), DENY, ALLOW,
        IF_NR(SYS_ioctl, 5), LOAD(ARG1),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0x8901 /* FIOSETOWN */, 1, 0),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0x8902 /* SIOCSPGRP */, 0, 1), DENY, ALLOW,
        ALLOW,
    };
    struct sock_fprog prog = {(unsigned short)(sizeof f / sizeof f[0]), f};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return -1;
    return (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog);
}

/* A Landlock domain of its own (see the top comment). A domain must handle some access
 * right: it handles making character devices, which nobody here does. Returns the ABI in
 * force, 0 where the kernel has no Landlock (the filter and the checker's non-dumpable
 * flag still stand there). */
static int enter_landlock(void) {
    /* struct landlock_ruleset_attr as of ABI 6; older headers lack the later fields */
    struct {
        uint64_t handled_access_fs, handled_access_net, scoped;
    } attr = {.handled_access_fs = LANDLOCK_ACCESS_FS_MAKE_CHAR};
    long abi = syscall(SYS_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);
    if (abi < 1) return 0;
    size_t size = sizeof attr.handled_access_fs;
    if (abi >= 6) {
        attr.scoped = 1u << 0 /* abstract unix sockets */ | 1u << 1 /* signals */;
        size = sizeof attr;
    }
    int fd = (int)syscall(SYS_landlock_create_ruleset, &attr, size, 0);
    if (fd < 0) return 0;
    int rc = (int)syscall(SYS_landlock_restrict_self, fd, 0);
    close(fd);
    return rc == 0 ? (int)abi : 0;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: he_guard PROG [ARGS...]\n");
        return 2;
    }
    /* whatever else the parent left open is not the candidate's business */
    if (syscall(SYS_close_range, 5u, ~0u, 0u) != 0)
        for (int fd = 5; fd < 1024; fd++) close(fd);
    if (install_filter() != 0) die("seccomp");
    enter_landlock();
    execv(argv[1], argv + 1);
    die("exec");
}
