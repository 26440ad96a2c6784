/* Exec control for hpck_host: no candidate-side process may exist that did not pass the guard.
 *
 * The guard's seccomp filter keeps a candidate process from forking, but a trusted helper
 * the candidate can talk to starts processes for it: asked through MPI_Comm_spawn (PMIx),
 * mpirun forks and execs any program directly, not through hpck_guard, and that process has
 * no filter, no Landlock domain and the host's uid (the red team's helper stopped the host
 * and let the ranks work outside the timed window). So the launch child installs, before it
 * execs the launcher, a filter that turns every execve/execveat of the whole tree (mpirun,
 * everything it forks, the guards, the candidate) into a notification to the host, and the
 * host decides:
 *   - EXEC_LAUNCH (until every guard has reported in): allowed. Nothing but trusted code
 *     runs yet (the launcher, its forks, the static guards); no candidate code has run.
 *   - EXEC_GUARDS (every guard in, until the phase's last check): exactly one exec per
 *     admitted guard, from the guard's own pid (its candidate program). Anything else is
 *     refused (EPERM) and ends the run: tamper:exec_refused. The host serves notifications
 *     wherever it waits (for messages, for the guests to stop).
 *   - closed (the outputs are checked, the guests are told to end): the host closes the
 *     listener; the kernel then fails every exec of the tree with ENOSYS, so nothing can be
 *     started any more (mpirun included).
 * The process tree cannot remove the filter (filters are inherited and permanent) and cannot
 * reach the listener (the host is not dumpable, and the launch child closes its copy). */
#ifndef HPCK_EXECCTL_H
#define HPCK_EXECCTL_H

#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#if defined(__x86_64__)
#define EXECCTL_ARCH AUDIT_ARCH_X86_64
#define EXECCTL_X32_BIT 0x40000000u /* x32 calls carry this bit in nr, under the same arch */
#elif defined(__aarch64__)
#define EXECCTL_ARCH AUDIT_ARCH_AARCH64
#define EXECCTL_X32_BIT 0u
#else
#error "execctl.h: unsupported architecture"
#endif

enum { EXEC_LAUNCH = 0, EXEC_GUARDS = 1 };

/* In the launch child, before its exec: install the filter and return the listener (-1 and
 * errno on failure). Another ABI's calls (i386 int 0x80, x32) cannot be judged by number:
 * refused outright (no trusted program here uses them). */
static inline int execctl_install(void) {
    struct sock_filter f[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, EXECCTL_ARCH, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, EXECCTL_X32_BIT, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_execve, 2, 0),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_execveat, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF),
    };
    struct sock_fprog prog = {(unsigned short)(sizeof f / sizeof f[0]), f};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return -1;
    return (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER,
                        SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog);
}

/* Pass a descriptor over a unix socket (the launch child hands the listener to the host). */
static inline int execctl_send_fd(int sock, int fd) {
    char c = 'L', cbuf[CMSG_SPACE(sizeof(int))];
    memset(cbuf, 0, sizeof cbuf);
    struct iovec iov = {&c, 1};
    struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
                        .msg_controllen = sizeof cbuf};
    struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
    cm->cmsg_level = SOL_SOCKET;
    cm->cmsg_type = SCM_RIGHTS;
    cm->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(cm), &fd, sizeof fd);
    return sendmsg(sock, &mh, MSG_NOSIGNAL) == 1 ? 0 : -1;
}

/* The descriptor sent by execctl_send_fd, or -1 (the child died before sending it). */
static inline int execctl_recv_fd(int sock) {
    char c, cbuf[CMSG_SPACE(sizeof(int))];
    struct iovec iov = {&c, 1};
    struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
                        .msg_controllen = sizeof cbuf};
    if (recvmsg(sock, &mh, MSG_CMSG_CLOEXEC) != 1) return -1;
    struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
    if (!cm || cm->cmsg_type != SCM_RIGHTS) return -1;
    int fd;
    memcpy(&fd, CMSG_DATA(cm), sizeof fd);
    return fd;
}

/* Receive one notification and answer it. `allowed(pid)` decides (1: let the exec go on).
 * Returns 1 if an exec was refused, 0 if none or allowed, -1 if the listener failed. */
static inline int execctl_serve(int listener, int (*allowed)(pid_t)) {
    struct seccomp_notif req;
    struct seccomp_notif_resp resp;
    memset(&req, 0, sizeof req);
    if (ioctl(listener, SECCOMP_IOCTL_NOTIF_RECV, &req) != 0)
        return errno == EINTR || errno == ENOENT ? 0 : -1; /* ENOENT: the caller is gone */
    memset(&resp, 0, sizeof resp);
    resp.id = req.id;
    const int ok = allowed((pid_t)req.pid);
    if (ok) resp.flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
    else resp.error = -EPERM;
    /* ENOENT: the caller died (a signal) while we decided; nothing to answer */
    if (ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, &resp) != 0 && errno != ENOENT) return -1;
    return ok ? 0 : 1;
}

#endif
