/* Confinement of a candidate process that shares a sandbox exec with a trusted checker (the
 * hpc-kernels host, the HumanEval checker). Called by the trusted guard just before it execs
 * the candidate; both layers hold for the candidate's whole life and it cannot remove them.
 *
 * confine_seccomp(): no new processes (threads only: a forked helper would outlive or escape
 * whatever the checker does to the candidate's process), no signals to any process but
 * itself, no pidfd tricks, no ptrace or cross-process memory calls, no priority or
 * scheduling-policy changes for other processes, no asking the kernel to signal someone else
 * (F_SETOWN, F_SETSIG, FIOSETOWN). CPU affinity of other processes only where allowed.
 *
 * confine_landlock(): a Landlock domain of its own. Landlock then refuses ptrace-class
 * (attach) access from inside the domain to any process outside it, which covers opening
 * their /proc/<pid>/mem (a dumpable one such as the sandbox's PID 1 included); from ABI 6 on
 * it also scopes signals, and optionally abstract unix sockets, to the domain. Their environ
 * and fd/ are closed by their being not dumpable, not by Landlock. */
#ifndef CODEGEN_CONFINE_H
#define CODEGEN_CONFINE_H
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
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#if defined(__x86_64__)
#define CONFINE_AUDIT_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define CONFINE_AUDIT_ARCH AUDIT_ARCH_AARCH64
#else
#error "confine.h: unsupported architecture"
#endif

#define CONFINE_ARG(n) (offsetof(struct seccomp_data, args[n]))
#define CONFINE_LOAD(off) BPF_STMT(BPF_LD | BPF_W | BPF_ABS, (off))
#define CONFINE_RET(v) BPF_STMT(BPF_RET | BPF_K, (v))
#define CONFINE_DENY CONFINE_RET(SECCOMP_RET_ERRNO | EPERM)
#define CONFINE_ALLOW CONFINE_RET(SECCOMP_RET_ALLOW)
/* syscall nr == NR: fall through to the next instruction, else skip `skip` of them */
#define CONFINE_IF_NR(nr, skip) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (nr), 0, (skip))
/* allow when the loaded pid argument (low 32 bits, as the kernel reads it) is this process,
 * else deny: 3 instructions */
#define CONFINE_SELF_ONLY(self) \
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (self), 0, 1), CONFINE_ALLOW, CONFINE_DENY
/* allow pid 0 (the caller) or this process, else deny: 4 instructions */
#define CONFINE_SELF_OR_ZERO(self) \
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 1, 0), CONFINE_SELF_ONLY(self)
/* deny when the loaded argument equals v, else allow (no others follow): 3 instructions */
#define CONFINE_DENY_EQ(v) \
    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (v), 0, 1), CONFINE_DENY, CONFINE_ALLOW

/* What sched_setaffinity may do. ANY: on any thread (libgomp pins its threads by thread id;
 * a harness that has nothing left to time may allow it). OWN: this process only.
 * SINGLE_THREAD: OWN, and no new threads either (clone refused outright): for a program
 * that its configuration holds to one thread, whatever CPUs the machine has free. */
enum { CONFINE_AFFINITY_OWN = 0, CONFINE_AFFINITY_ANY = 1, CONFINE_SINGLE_THREAD = 2 };

/* 0 on success; mode: one of the values above. */
static inline int confine_seccomp(int mode) {
    const uint32_t self = (uint32_t)getpid();
    /* (uint32_t)-1 matches no system call */
    const uint32_t affinity_nr = mode == CONFINE_AFFINITY_ANY ? (uint32_t)-1 : SYS_sched_setaffinity;
    const uint32_t clone_nr = mode == CONFINE_SINGLE_THREAD ? SYS_clone : (uint32_t)-1;
    struct sock_filter f[] = {
        CONFINE_LOAD(offsetof(struct seccomp_data, arch)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, CONFINE_AUDIT_ARCH, 1, 0),
        CONFINE_RET(SECCOMP_RET_KILL_PROCESS),
        CONFINE_LOAD(offsetof(struct seccomp_data, nr)),
#ifdef SYS_fork
        CONFINE_IF_NR(SYS_fork, 1), CONFINE_DENY,
#endif
#ifdef SYS_vfork
        CONFINE_IF_NR(SYS_vfork, 1), CONFINE_DENY,
#endif
        /* clone3 keeps its flags behind a pointer: "not implemented" makes glibc fall back
         * to clone, whose flags a filter can read */
        CONFINE_IF_NR(SYS_clone3, 1), CONFINE_RET(SECCOMP_RET_ERRNO | ENOSYS),
        CONFINE_IF_NR(clone_nr, 1), CONFINE_DENY, /* SINGLE_THREAD: no thread either */
        CONFINE_IF_NR(SYS_clone, 4), CONFINE_LOAD(CONFINE_ARG(0)),
        BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, 0x00010000 /* CLONE_THREAD */, 0, 1),
        CONFINE_ALLOW, CONFINE_DENY,
        /* signals: the pid argument must be this process (0 and -1 reach the group and
         * everyone, the checker included) */
        CONFINE_IF_NR(SYS_kill, 4), CONFINE_LOAD(CONFINE_ARG(0)), CONFINE_SELF_ONLY(self),
        CONFINE_IF_NR(SYS_tgkill, 4), CONFINE_LOAD(CONFINE_ARG(0)), CONFINE_SELF_ONLY(self),
        CONFINE_IF_NR(SYS_rt_sigqueueinfo, 4), CONFINE_LOAD(CONFINE_ARG(0)),
        CONFINE_SELF_ONLY(self),
        CONFINE_IF_NR(SYS_rt_tgsigqueueinfo, 4), CONFINE_LOAD(CONFINE_ARG(0)),
        CONFINE_SELF_ONLY(self),
        CONFINE_IF_NR(SYS_tkill, 1), CONFINE_DENY,
        CONFINE_IF_NR(SYS_pidfd_open, 1), CONFINE_DENY,
        CONFINE_IF_NR(SYS_pidfd_send_signal, 1), CONFINE_DENY,
        CONFINE_IF_NR(SYS_pidfd_getfd, 1), CONFINE_DENY,
        CONFINE_IF_NR(SYS_process_vm_readv, 1), CONFINE_DENY,
        CONFINE_IF_NR(SYS_process_vm_writev, 1), CONFINE_DENY,
        CONFINE_IF_NR(SYS_ptrace, 1), CONFINE_DENY,
        CONFINE_IF_NR(SYS_kcmp, 1), CONFINE_DENY,
        /* PRIO_PGRP / PRIO_USER would reach the checker: no priorities at all */
        CONFINE_IF_NR(SYS_setpriority, 1), CONFINE_DENY,
        CONFINE_IF_NR(affinity_nr, 5), CONFINE_LOAD(CONFINE_ARG(0)), CONFINE_SELF_OR_ZERO(self),
        CONFINE_IF_NR(SYS_sched_setscheduler, 5), CONFINE_LOAD(CONFINE_ARG(0)),
        CONFINE_SELF_OR_ZERO(self),
        CONFINE_IF_NR(SYS_sched_setparam, 5), CONFINE_LOAD(CONFINE_ARG(0)),
        CONFINE_SELF_OR_ZERO(self),
        CONFINE_IF_NR(SYS_sched_setattr, 5), CONFINE_LOAD(CONFINE_ARG(0)),
        CONFINE_SELF_OR_ZERO(self),
        /* the kernel would signal the owner of a descriptor: another process */
        CONFINE_IF_NR(SYS_fcntl, 6), CONFINE_LOAD(CONFINE_ARG(1)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, F_SETOWN, 2, 0),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, F_SETSIG, 1, 0), CONFINE_DENY_EQ(F_SETOWN_EX),
        CONFINE_IF_NR(SYS_ioctl, 5), CONFINE_LOAD(CONFINE_ARG(1)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0x8901 /* FIOSETOWN */, 1, 0),
        CONFINE_DENY_EQ(0x8902 /* SIOCSPGRP */),
        CONFINE_ALLOW,
    };
    struct sock_fprog prog = {(unsigned short)(sizeof f / sizeof f[0]), f};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return -1;
    return (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog);
}

/* The Landlock ABI in force, 0 where the kernel has none (the seccomp filter and the
 * checker's non-dumpable flag still stand there). A domain must handle some access right:
 * it handles making character devices, which nobody in a sandbox does. */
static inline int confine_landlock(int scope_abstract_unix) {
    /* struct landlock_ruleset_attr as of ABI 6; older libc headers lack the later fields */
    struct {
        uint64_t handled_access_fs, handled_access_net, scoped;
    } attr = {.handled_access_fs = LANDLOCK_ACCESS_FS_MAKE_CHAR};
    long abi = syscall(SYS_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);
    if (abi < 1) return 0;
    size_t size = sizeof attr.handled_access_fs; /* ABI 1-3 */
    if (abi >= 6) {
        attr.scoped = (scope_abstract_unix ? 1u << 0 : 0) | 1u << 1; /* unix sockets, signals */
        size = sizeof attr;
    }
    int fd = (int)syscall(SYS_landlock_create_ruleset, &attr, size, 0);
    if (fd < 0) return 0;
    int rc = (int)syscall(SYS_landlock_restrict_self, fd, 0);
    close(fd);
    return rc == 0 ? (int)abi : 0;
}
#endif
