/* sandbox launcher: the gate between the (large, multi-threaded) Python caller and bwrap.
 *
 * Python starts this tiny program with vfork/exec (no preexec_fn, so the event loop is not
 * blocked by a fork of the whole interpreter). It then:
 *   1. makes itself a child subreaper, so an intermediate process (bwrap's pid-namespace init,
 *      orphaned when the outer bwrap dies first) is reparented to us and reaped here, never
 *      left as a zombie of the host's PID 1;
 *   2. forks one child that, before anything of the payload runs: starts a new session, joins
 *      the per-run cgroup(s), sets the rlimits, drops supplementary groups, gid and uid (in
 *      that order; a failure is fatal), sets PR_SET_PDEATHSIG (after the uid drop, which
 *      clears it) and execs the target (bwrap, or the payload for unsafe-local). Limits and
 *      cgroup membership therefore hold from the target's first instruction;
 *   3. reaps everything that lands on it until nothing is left, then exits with the child's
 *      status (re-raising its signal, so the caller sees exactly what a direct child gives).
 * When the child exits, its process group and then every process that was reparented to us
 * is SIGKILLed, so nothing outlives the run. SIGTERM (from the caller, or as our own
 * parent-death signal) kills the child's process group with SIGKILL; the reaping goes on.
 *
 * usage: launcher PARENT_PID [-c CGROUP_PROCS_FILE]... [-r RES:SOFT:HARD]... [-u UID -g GID]
 *                 -- PROGRAM ARGS...
 * Exit status 127 with a message on stderr ("sandbox-launcher: ...") if the gate could not
 * be set up; the target never ran then.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_CG 16
#define MAX_RL 16

static volatile sig_atomic_t child_pid = 0;
static volatile sig_atomic_t terminate = 0;

static void die(const char *what) {
    char buf[256];
    int n = snprintf(buf, sizeof buf, "sandbox-launcher: %s: %s\n", what, strerror(errno));
    if (n > 0) (void)!write(2, buf, (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1);
    _exit(127);
}

static void on_term(int sig) {
    (void)sig;
    terminate = 1;
    if (child_pid > 0) {
        kill(-child_pid, SIGKILL);
        kill(child_pid, SIGKILL); /* in case it has not reached setsid() yet */
    }
}

static long long num(const char *s, const char *what) {
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s || (*end && *end != ':')) {
        errno = EINVAL;
        die(what);
    }
    return v;
}

/* SIGKILL every current child (orphans that were reparented to us); their own children are
 * reparented to us in turn and killed on the next round. */
static void kill_children(pid_t self) {
    char path[64], buf[4096];
    snprintf(path, sizeof path, "/proc/%d/task/%d/children", (int)self, (int)self);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) return;
    buf[n] = 0;
    for (char *p = buf, *end; *p; p = end) {
        long v = strtol(p, &end, 10);
        if (end == p) break;
        if (v > 0) kill((pid_t)v, SIGKILL);
    }
}

int main(int argc, char **argv) {
    const char *cgroups[MAX_CG];
    int ncg = 0;
    struct { int res; struct rlimit lim; } rl[MAX_RL];
    int nrl = 0;
    long long uid = -1, gid = -1;
    int i = 2;

    if (argc < 4) { errno = EINVAL; die("usage"); }
    pid_t parent = (pid_t)num(argv[1], "parent pid");
    for (; i < argc; i++) {
        if (!strcmp(argv[i], "--")) { i++; break; }
        if (i + 1 >= argc) { errno = EINVAL; die(argv[i]); }
        if (!strcmp(argv[i], "-c")) {
            if (ncg == MAX_CG) { errno = E2BIG; die("-c"); }
            cgroups[ncg++] = argv[++i];
        } else if (!strcmp(argv[i], "-r")) {
            if (nrl == MAX_RL) { errno = E2BIG; die("-r"); }
            char *s = argv[++i], *a = strchr(s, ':'), *b = a ? strchr(a + 1, ':') : NULL;
            if (!b) { errno = EINVAL; die("-r"); }
            rl[nrl].res = (int)num(s, "-r");
            long long soft = num(a + 1, "-r"), hard = num(b + 1, "-r");
            rl[nrl].lim.rlim_cur = soft < 0 ? RLIM_INFINITY : (rlim_t)soft;
            rl[nrl].lim.rlim_max = hard < 0 ? RLIM_INFINITY : (rlim_t)hard;
            nrl++;
        } else if (!strcmp(argv[i], "-u")) {
            uid = num(argv[++i], "-u");
        } else if (!strcmp(argv[i], "-g")) {
            gid = num(argv[++i], "-g");
        } else {
            errno = EINVAL;
            die(argv[i]);
        }
    }
    if (i >= argc) { errno = EINVAL; die("no program"); }
    if ((uid < 0) != (gid < 0)) { errno = EINVAL; die("-u and -g go together"); }

    /* SIGTERM: blocked until the child's pid is known, so the handler always sees it. */
    sigset_t term, old;
    sigemptyset(&term);
    sigaddset(&term, SIGTERM);
    sigprocmask(SIG_BLOCK, &term, &old);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_term;
    sigaction(SIGTERM, &sa, NULL);
    if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0) die("PR_SET_CHILD_SUBREAPER");
    /* Our caller dying (even by SIGKILL) tears the child's tree down through on_term. */
    if (prctl(PR_SET_PDEATHSIG, SIGTERM, 0, 0, 0) != 0) die("PR_SET_PDEATHSIG");
    if (getppid() != parent) _exit(127); /* the caller is already gone */

    pid_t self = getpid();
    pid_t pid = fork();
    if (pid < 0) die("fork");
    if (pid == 0) {
        sa.sa_handler = SIG_DFL;
        sigaction(SIGTERM, &sa, NULL);
        prctl(PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0);
        if (setsid() < 0) die("setsid");
        /* Join the cgroup(s) while still root, before the target can fork. */
        for (int k = 0; k < ncg; k++) {
            int fd = open(cgroups[k], O_WRONLY | O_CLOEXEC);
            if (fd < 0) die(cgroups[k]);
            if (write(fd, "0", 1) != 1) die(cgroups[k]); /* "0": the writing process */
            close(fd);
        }
        for (int k = 0; k < nrl; k++)
            if (setrlimit(rl[k].res, &rl[k].lim) != 0) die("setrlimit");
        if (uid >= 0) {
            if (setgroups(0, NULL) != 0) die("setgroups");
            if (setresgid((gid_t)gid, (gid_t)gid, (gid_t)gid) != 0) die("setresgid");
            if (setresuid((uid_t)uid, (uid_t)uid, (uid_t)uid) != 0) die("setresuid");
            if (getuid() != (uid_t)uid || geteuid() != (uid_t)uid) { errno = EPERM; die("uid"); }
        }
        /* Set last: credential changes clear the parent-death signal. */
        if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0) die("PR_SET_PDEATHSIG");
        if (getppid() != self) _exit(127);
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        execvp(argv[i], &argv[i]);
        die(argv[i]);
    }
    child_pid = pid;
    if (terminate) {
        kill(-pid, SIGKILL);
        kill(pid, SIGKILL);
    }
    sigprocmask(SIG_SETMASK, &old, NULL);

    int status = 0, have = 0;
    for (;;) {
        /* Once the child is gone, nothing it started may outlive it (a setsid daemon of an
         * unsafe-local payload lands on us as subreaper). */
        if (have) kill_children(self);
        siginfo_t si;
        memset(&si, 0, sizeof si);
        if (waitid(P_ALL, 0, &si, WEXITED | WNOWAIT) != 0) {
            if (errno == EINTR) continue;
            break; /* ECHILD: nothing left */
        }
        if (si.si_pid == pid && !have) {
            /* The child's group goes with it (before the pid is reaped and could be reused). */
            kill(-pid, SIGKILL);
            status = si.si_code == CLD_EXITED ? (si.si_status & 0xff) : -si.si_status;
            have = 1;
        }
        while (waitpid(si.si_pid, NULL, __WALL) < 0 && errno == EINTR) {
        }
    }
    if (status >= 0) return status;
    /* Die the way the child died. No core dump of ours. */
    struct rlimit zero = {0, 0};
    setrlimit(RLIMIT_CORE, &zero);
    signal(-status, SIG_DFL);
    sigset_t all;
    sigfillset(&all);
    sigprocmask(SIG_UNBLOCK, &all, NULL);
    kill(getpid(), -status);
    return 128 - status;
}
