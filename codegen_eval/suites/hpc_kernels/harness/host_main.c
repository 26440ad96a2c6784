/* hpck_host (host_main.c + problems/<name>/reference.c): the trusted side of an hpc-kernels
 * run. No candidate code is linked here.
 *
 *   hpck_host --np N --reps R --timeout S --nodump LIB --guard GUARD --base BASE -- LAUNCH...
 *
 * stdin: a 32-hex-digit key (read whole before anything else starts). LAUNCH starts N guest
 * processes through GUARD (directly, or as mpirun ... hpck_guard ./prog); BASE is our own
 * sequential reference built as a guest. stdout: one verdict line,
 * `HPCK2 <fields> mac=<siphash>`; the guests' stdout/stderr go to fresh <what>-<random>.log
 * files named in the fields. Two phases, the baseline then the candidate, each:
 *   1. start the guests; every guard reports in and stops; continue them once all are in;
 *   2. give each guest its arena (a sealed memfd);
 *   3. per repetition, with every guest stopped: check the previous repetition's outputs,
 *      write fresh inputs from a new secret seed, poison the outputs, then SIGCONT and time
 *      until every guest has said done and been sent SIGSTOP (the clock is read after the
 *      stop goes out, so no candidate work falls between the window and the stop);
 *   4. end the guests.
 * The baseline runs before any candidate process exists, and through the same protocol, so
 * both are measured under the same conditions. Then the verdict is printed. */
#include "hpck.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "census.h"
#include "execctl.h"
#include "siphash.h"

static unsigned char key[16];
static int np = 1, reps = 5;
static double timeout_s = 60, deadline;
static pid_t child = -1;
static pid_t gpid[HPCK_MAXRANKS];
static int gsock[HPCK_MAXRANKS];
static int rank_of_conn[HPCK_MAXRANKS];
static uint32_t landlock_abi; /* the lowest Landlock ABI any guard got */
static void *arena_ptr[HPCK_MAXRANKS];
static void *bufs[HPCK_MAXRANKS][HPCK_MAXBUF];
static size_t buf_bytes[HPCK_MAXRANKS][HPCK_MAXBUF];
/* exec control (execctl.h): the listener, the phase, which guard has used its one exec */
static int notify_fd = -1;
static void census(void);
static void serve_exec(void);
static int exec_phase;
static int exec_used[HPCK_MAXRANKS];

static int debug; /* HPCK_DEBUG=1: progress on stderr */
#define DBG(...) (debug ? fprintf(stderr, "hpck_host: " __VA_ARGS__), fputc('\n', stderr) : 0)

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* -- the verdict ------------------------------------------------------------------------- */
static char extra[4096]; /* key=value fields gathered on the way (windows, base time) */
static int in_baseline;  /* 1 while our own reference runs as a guest (phase 1) */

static void add_field(const char *fmt, ...) {
    size_t used = strlen(extra);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(extra + used, sizeof extra - used, fmt, ap);
    va_end(ap);
}

static void kill_all(void) {
    for (int i = 0; i < np; ++i)
        if (gpid[i] > 0) kill(gpid[i], SIGKILL);
    if (child > 0) kill(-child, SIGKILL), kill(child, SIGKILL);
}

/* Print the tagged verdict and leave. `status`: pass, wrong, crash, timeout, tamper, error. */
__attribute__((noreturn)) static void verdict(const char *status, const char *fmt, ...) {
    char detail[256], line[8192];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(detail, sizeof detail, fmt, ap);
    va_end(ap);
    for (char *p = detail; *p; ++p)
        if (*p == ' ' || *p == '\n' || *p == '=') *p = '_';
    if (in_baseline && strcmp(status, "pass") != 0) {
        /* no candidate process exists yet: whatever went wrong is ours */
        char ours[sizeof detail];
        snprintf(ours, sizeof ours, "baseline_%s_%s", status, detail);
        memcpy(detail, ours, sizeof detail);
        status = "error";
    }
    if (strcmp(status, "pass") != 0) kill_all();
    int n = snprintf(line, sizeof line, "HPCK2 status=%s detail=%s%s", status,
                     detail[0] ? detail : "-", extra);
    if (n < 0 || (size_t)n >= sizeof line) n = (int)strlen(line);
    printf("%s mac=%016llx\n", line, (unsigned long long)codegen_siphash24(key, line, (size_t)n));
    fflush(stdout);
    _exit(0);
}

__attribute__((noreturn)) static void fail_errno(const char *what) {
    verdict("error", "%s:%s", what, strerror(errno));
}

/* -- key and arguments ------------------------------------------------------------------- */
static void read_key(void) {
    char hex[33];
    size_t got = 0;
    while (got < 33) {
        ssize_t r = read(0, hex + got, 33 - got);
        if (r <= 0) {
            fprintf(stderr, "hpck_host: no key on stdin\n");
            _exit(2);
        }
        got += (size_t)r;
    }
    for (int i = 0; i < 16; ++i) {
        unsigned v;
        if (sscanf(hex + 2 * i, "%2x", &v) != 1) _exit(2);
        key[i] = (unsigned char)v;
    }
    int devnull = open("/dev/null", O_RDONLY);
    if (devnull >= 0) dup2(devnull, 0), close(devnull);
}

/* -- guests: stop, continue, wait ------------------------------------------------------- */
/* 1 when every thread of pid is stopped, 0 when some still run, -1 when it is gone. */
static int proc_stopped(pid_t pid) {
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
    DIR *d = opendir(path);
    if (!d) return -1;
    int all = 1, any = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.') continue;
        char sp[512], buf[512];
        snprintf(sp, sizeof sp, "%s/%s/stat", path, e->d_name);
        int fd = open(sp, O_RDONLY);
        if (fd < 0) continue; /* a thread that just exited */
        ssize_t r = read(fd, buf, sizeof buf - 1);
        close(fd);
        if (r <= 0) continue;
        buf[r] = 0;
        char *rp = strrchr(buf, ')');
        if (!rp || rp[1] != ' ') continue;
        char st = rp[2];
        any = 1;
        if (st == 'Z' || st == 'X') continue; /* exiting threads do not run */
        if (st != 'T' && st != 't') all = 0;
    }
    closedir(d);
    return any ? all : -1;
}

/* Wait until every guest is stopped (by us, or by its own guard before it execs). `resend`:
 * stop again, every millisecond, a guest that is not: something else may have continued it
 * (never for the guards, whose own raise(SIGSTOP) a second stop would outlive). */
static void wait_stopped(int resend) {
    double next_resend = now() + 1e-3;
    for (;;) {
        int all = 1;
        const int again = resend && now() > next_resend;
        for (int i = 0; i < np; ++i) {
            int s = proc_stopped(gpid[i]);
            if (s < 0) verdict("crash", "guest_%d_gone", i);
            if (!s) all = 0;
            if (!s && again) kill(gpid[i], SIGSTOP);
        }
        if (again) next_resend = now() + 1e-3;
        if (all) return;
        if (now() > deadline) verdict("timeout", "guests_did_not_stop");
        struct pollfd p = {notify_fd, POLLIN, 0};
        if (notify_fd >= 0 && poll(&p, 1, 0) > 0) serve_exec();
        struct timespec ts = {0, 20000};
        nanosleep(&ts, NULL);
    }
}

static void signal_stop_all(void) {
    for (int i = 0; i < np; ++i)
        if (kill(gpid[i], SIGSTOP) != 0) verdict("crash", "guest_%d_gone", i);
}

/* CPU time of each guest when its stop was confirmed. While the host holds the guests
 * stopped (checking, writing inputs) none may run: a SIGCONT from anyone but us (mpirun
 * forwarding one, a command forged to it) would let a lazy candidate finish its work there.
 * The slack covers a stopping thread's last microseconds, which /proc can show as 'T'
 * before the kernel has accounted them. */
static unsigned long long ran_ns[HPCK_MAXRANKS];
#define HPCK_STOPPED_SLACK_NS 200000ull

static void stop_all(void) {
    signal_stop_all();
    wait_stopped(1);
    census();
    for (int i = 0; i < np; ++i) ran_ns[i] = census_run_ns(gpid[i]);
}

static void check_still_stopped(void) {
    for (int i = 0; i < np; ++i)
        if (census_run_ns(gpid[i]) > ran_ns[i] + HPCK_STOPPED_SLACK_NS)
            verdict("tamper", "ran_while_stopped");
}

static void cont_all(void) {
    for (int i = 0; i < np; ++i) kill(gpid[i], SIGCONT);
}

/* The launched command ended: a crash (signal) or an early exit. */
__attribute__((noreturn)) static void child_ended(int status, const char *when) {
    child = -1;
    if (WIFSIGNALED(status)) verdict("crash", "signal_%d_%s", WTERMSIG(status), when);
    verdict("crash", "exit_%d_%s", WEXITSTATUS(status), when);
}

static void check_child(const char *when) {
    int status;
    if (child > 0 && waitpid(child, &status, WNOHANG) == child) child_ended(status, when);
}

/* A guest hung up: its process ended. Give the launcher (mpirun, which tears the job down,
 * or the guest itself) a moment to end too, so the verdict can say how. */
__attribute__((noreturn)) static void guest_gone(int i, const char *when) {
    double until = now() + 3.0;
    while (child > 0 && now() < until) {
        check_child(when);
        usleep(5000);
    }
    verdict("crash", "guest_%d_closed_%s", i, when);
}

/* -- exec control and the census -------------------------------------------------------- */
static int exec_allowed(pid_t pid) {
    if (exec_phase == EXEC_LAUNCH) return 1;
    for (int i = 0; i < np; ++i)
        if (gpid[i] == pid && !exec_used[i]) return exec_used[i] = 1;
    return 0;
}

/* Answer one exec notification. A refused exec is candidate code (or a trusted helper it
 * asked, such as mpirun for MPI_Comm_spawn) trying to start a process that never passed the
 * guard: tamper. */
static void serve_exec(void) {
    int r = execctl_serve(notify_fd, exec_allowed);
    if (r < 0) fail_errno("seccomp_notify");
    if (r > 0) verdict("tamper", "exec_refused");
}

/* With every guest stopped: every process of our uid must be one we know. Anything else (a
 * helper a trusted program started for the candidate, mpirun's child whose exec is still
 * waiting on us) could act outside the host's stop: tamper. */
static void census(void) {
    pid_t known[HPCK_MAXRANKS + 2];
    int n = 0;
    known[n++] = getpid();
    known[n++] = child;
    for (int i = 0; i < np; ++i) known[n++] = gpid[i];
    pid_t stranger = census_stranger(known, n);
    if (stranger < 0) fail_errno("census");
    if (stranger > 0) {
        DBG("unexpected process %d", (int)stranger);
        verdict("tamper", "unexpected_process");
    }
}

/* Receive exactly one message of `want` bytes from connection i before the deadline. */
static void recv_msg(int i, void *msg, size_t want, const char *when) {
    for (;;) {
        double left = deadline - now();
        if (left <= 0) verdict("timeout", "%s", when);
        struct pollfd p[2] = {{gsock[i], POLLIN, 0}, {notify_fd, POLLIN, 0}};
        int ms = left > 0.05 ? 50 : (int)(left * 1000) + 1;
        int r = poll(p, notify_fd >= 0 ? 2 : 1, ms);
        if (r < 0 && errno != EINTR) fail_errno("poll");
        if (r > 0 && p[1].revents) serve_exec();
        if (r > 0 && p[0].revents) {
            ssize_t n = recv(gsock[i], msg, want, MSG_TRUNC);
            if (n == 0) guest_gone(i, when);
            if (n != (ssize_t)want) verdict("tamper", "bad_message_%s", when);
            if (((hpck_msg *)msg)->magic != HPCK_MAGIC) verdict("tamper", "bad_magic_%s", when);
            return;
        }
        check_child(when);
    }
}

static void send_msg(int i, uint32_t kind, uint32_t a) {
    hpck_msg m = {HPCK_MAGIC, kind, a, 0};
    if (send(gsock[i], &m, sizeof m, MSG_NOSIGNAL) != (ssize_t)sizeof m)
        verdict("crash", "guest_%d_unreachable", i);
}

/* -- start-up ---------------------------------------------------------------------------- */
static int listen_socket(char *name, size_t len) {
    uint64_t r;
    if (getrandom(&r, sizeof r, 0) != sizeof r) fail_errno("getrandom");
    snprintf(name, len, "hpck-%016llx", (unsigned long long)r);
    int s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    if (s < 0) fail_errno("socket");
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    memcpy(addr.sun_path + 1, name, strlen(name));
    socklen_t alen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + strlen(name));
    if (bind(s, (struct sockaddr *)&addr, alen) != 0 || listen(s, HPCK_MAXRANKS) != 0)
        fail_errno("listen");
    return s;
}

static void launch(char **argv, const char *sock_name, const char *nodump, const char *what) {
    /* a fresh name each run: an earlier run's candidate may have planted a symlink, a FIFO
     * or a directory under any fixed name */
    char log_name[64];
    uint64_t r;
    if (getrandom(&r, sizeof r, 0) != sizeof r) fail_errno("getrandom");
    snprintf(log_name, sizeof log_name, "%s-%016llx.log", what, (unsigned long long)r);
    int log = open(log_name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (log < 0) fail_errno("guest_log");
    add_field(" %s=%s", in_baseline ? "base_log" : "log", log_name);
    fflush(stdout);
    int sp[2]; /* the launch child hands its exec-control listener over this pair */
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) != 0) fail_errno("socketpair");
    exec_phase = EXEC_LAUNCH;
    memset(exec_used, 0, sizeof exec_used);
    child = fork();
    if (child < 0) fail_errno("fork");
    if (child == 0) {
        setpgid(0, 0);
        dup2(log, 1);
        dup2(log, 2);
        setenv("HPCK_SOCK", sock_name, 1);
        if (nodump && *nodump) setenv("LD_PRELOAD", nodump, 1);
        int listener = execctl_install();
        if (listener < 0 || execctl_send_fd(sp[1], listener) != 0) {
            fprintf(stderr, "hpck_host: exec control: %s\n", strerror(errno));
            _exit(126);
        }
        close(listener); /* only the host may hold it: whoever does decides every exec */
        execvp(argv[0], argv);
        fprintf(stderr, "hpck_host: cannot run %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    close(log);
    close(sp[1]);
    notify_fd = execctl_recv_fd(sp[0]);
    close(sp[0]);
    if (notify_fd < 0) verdict("error", "exec_control_unavailable");
    /* from here on a candidate process exists: an error it could have caused is its failure,
     * not an infra error (scorer.py) */
    if (!in_baseline) add_field(" cand_started=1");
}

/* Every guard connects, says hello and stops itself; continue them all once all are in. */
static void admit_guards(int ls) {
    for (int i = 0; i < np; ++i) {
        for (;;) {
            if (now() > deadline) verdict("timeout", "guests_did_not_start");
            /* the launcher's own execs (mpirun forking the guards) wait on our answer */
            struct pollfd p[2] = {{ls, POLLIN, 0}, {notify_fd, POLLIN, 0}};
            int r = poll(p, 2, 50);
            if (r > 0 && p[1].revents) serve_exec();
            if (r > 0 && p[0].revents) break;
            check_child("startup");
        }
        gsock[i] = accept4(ls, NULL, NULL, SOCK_CLOEXEC);
        if (gsock[i] < 0) fail_errno("accept");
        struct ucred cred;
        socklen_t cl = sizeof cred;
        if (getsockopt(gsock[i], SOL_SOCKET, SO_PEERCRED, &cred, &cl) != 0) fail_errno("peercred");
        for (int j = 0; j < i; ++j)
            if (gpid[j] == cred.pid) verdict("tamper", "two_connections_from_one_process");
        gpid[i] = cred.pid;
        DBG("guard %d is pid %d", i, (int)cred.pid);
        hpck_msg m;
        recv_msg(i, &m, sizeof m, "guard_hello");
        if (m.kind != 'g') verdict("tamper", "expected_guard_hello");
        if (i == 0 || m.a < landlock_abi) landlock_abi = m.a;
    }
    add_field(" landlock=%u", landlock_abi); /* 0: no Landlock, only seccomp and no-dump */
    close(ls); /* nobody else may connect */
    exec_phase = EXEC_GUARDS; /* from now on: one exec per admitted guard, nothing else */
    /* each guard stops itself right after its hello; sending SIGSTOP here instead would
     * race with that raise() and could leave a guard stopped for good */
    wait_stopped(0);
    cont_all();
}

static void setup_arenas(void) {
    for (int i = 0; i < np; ++i) {
        hpck_msg m;
        recv_msg(i, &m, sizeof m, "hello");
        if (m.kind != HPCK_HELLO || m.b != (uint32_t)np || m.a >= (uint32_t)np)
            verdict("tamper", "bad_hello");
        for (int j = 0; j < i; ++j)
            if (rank_of_conn[j] == (int)m.a) verdict("tamper", "duplicate_rank");
        rank_of_conn[i] = (int)m.a;
    }
    for (int i = 0; i < np; ++i) {
        int r = rank_of_conn[i];
        size_t sz[HPCK_MAXBUF] = {0};
        hpck_layout(np, r, sz);
        hpck_setup s = {.magic = HPCK_MAGIC, .kind = HPCK_SETUP};
        uint64_t total = 0;
        for (int b = 0; b < hpck_nbuf; ++b) {
            s.off[b] = total;
            s.bytes[b] = sz[b];
            buf_bytes[r][b] = sz[b];
            total += (sz[b] + 4095) & ~(uint64_t)4095;
        }
        s.arena_bytes = total ? total : 4096;
        int fd = (int)syscall(SYS_memfd_create, "hpck-arena", MFD_CLOEXEC | MFD_ALLOW_SEALING);
        if (fd < 0 || ftruncate(fd, (off_t)s.arena_bytes) != 0) fail_errno("memfd");
        /* a guest that shrank the memfd would crash us (SIGBUS) when we read it */
        if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0)
            fail_errno("seal");
        void *p = mmap(NULL, s.arena_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (p == MAP_FAILED) fail_errno("mmap");
        arena_ptr[r] = p;
        for (int b = 0; b < hpck_nbuf; ++b) bufs[r][b] = sz[b] ? (char *)p + s.off[b] : NULL;
        char cbuf[CMSG_SPACE(sizeof(int))];
        memset(cbuf, 0, sizeof cbuf);
        struct iovec iov = {&s, sizeof s};
        struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf,
                            .msg_controllen = sizeof cbuf};
        struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(c), &fd, sizeof fd);
        if (sendmsg(gsock[i], &mh, MSG_NOSIGNAL) != (ssize_t)sizeof s)
            verdict("crash", "guest_%d_unreachable", i);
        close(fd);
    }
    for (int i = 0; i < np; ++i) {
        hpck_msg m;
        recv_msg(i, &m, sizeof m, "ready");
        if (m.kind != HPCK_READY) verdict("tamper", "expected_ready");
    }
}

/* -- repetitions ------------------------------------------------------------------------- */
/* 128 secret bits: the key of the PRF every input of this repetition comes from (hpck.h) */
static hpck_seed fresh_seed(void) {
    hpck_seed s;
    if (getrandom(&s, sizeof s, 0) != sizeof s) fail_errno("getrandom");
    return s;
}

/* Fill every rank's buffers with the pristine inputs of the current seed and poison the
 * outputs (all bits set: NaN for doubles, -1 for integers), so an untouched output fails. */
static void distribute(void) {
    for (int r = 0; r < np; ++r) {
        for (int b = 1; b < hpck_nbuf; ++b)
            if ((hpck_buf_flags[b] & HPCK_INOUT) == HPCK_OUT && bufs[r][b])
                memset(bufs[r][b], 0xff, buf_bytes[r][b]);
        hpck_scatter(np, r, bufs[r]);
    }
}

static void check_outputs(int rep) {
    char detail[128] = "";
    double err = 0;
    hpck_reference();
    int ok = hpck_check(np, bufs, &err, detail, sizeof detail);
    if (rep == 0) add_field(" %s=%.6g", in_baseline ? "base_err" : "err", err);
    else add_field(",%.6g", err);
    if (ok < 0) {
        /* our reference failed: an infra error even after candidate code ran (scorer.py) */
        add_field(" fault=host");
        verdict("error", "%s", detail[0] ? detail : "check_failed");
    }
    if (ok != 1) {
        check_still_stopped(); /* wrong because someone let it run while we read? tamper */
        verdict("wrong", "%s_rep_%d", detail[0] ? detail : "mismatch", rep + 1);
    }
}

/* One phase: start LAUNCH (np guests through the guard), run `reps` timed repetitions with
 * fresh inputs, check every one, end the guests. Returns the best window. */
static double run_phase(char **launch_argv, const char *nodump, const char *what) {
    char name[64];
    int ls = listen_socket(name, sizeof name);
    launch(launch_argv, name, nodump, what);
    DBG("%s: launched %d", what, (int)child);
    admit_guards(ls);
    setup_arenas();
    DBG("%s: arenas set up", what);

    double best = INFINITY, sum = 0;
    char windows[2048] = "";
    for (int k = 0; k < reps; ++k) {
        stop_all();
        if (k > 0) check_outputs(k - 1);
        hpck_generate(fresh_seed());
        distribute();
        for (int i = 0; i < np; ++i) send_msg(i, HPCK_GO, (uint32_t)k);
        check_still_stopped();
        double t0 = now();
        cont_all();
        for (int i = 0; i < np; ++i) {
            hpck_msg m;
            recv_msg(i, &m, sizeof m, "run");
            if (m.kind != HPCK_DONE || m.a != (uint32_t)k) verdict("tamper", "expected_done");
        }
        /* The stop goes out before the clock is read: if this process loses its CPU after
         * the last DONE (a loaded machine), whatever the candidate runs until the stop is
         * inside the window, never after it. The stop itself is confirmed at the loop head. */
        signal_stop_all();
        double t = now() - t0;
        if (t < best) best = t;
        sum += t;
        size_t wl = strlen(windows);
        snprintf(windows + wl, sizeof windows - wl, "%s%.6g", k ? "," : "", t);
    }
    stop_all();
    check_outputs(reps - 1);
    check_still_stopped();
    add_field(" %s_mean_s=%.9g %s_windows=%s", what, sum / reps, what, windows);

    /* Nothing may start any more: with the listener closed, every exec anywhere in the tree
     * fails (ENOSYS) without asking us. Until here each one was refused and a tamper. */
    close(notify_fd);
    notify_fd = -1;
    /* let the guests finish (MPI_Finalize) and go */
    for (int i = 0; i < np; ++i) send_msg(i, HPCK_END, 0);
    cont_all();
    double until = now() + 5.0;
    int status;
    while (child > 0 && now() < until) {
        if (waitpid(child, &status, WNOHANG) == child) {
            child = -1;
            break;
        }
        usleep(2000);
    }
    if (child > 0) kill_all();
    child = -1;
    for (int i = 0; i < np; ++i) {
        close(gsock[i]);
        gsock[i] = -1;
        gpid[i] = 0;
        rank_of_conn[i] = 0;
        size_t total = 0;
        for (int b = 0; b < hpck_nbuf; ++b) total += (buf_bytes[i][b] + 4095) & ~(size_t)4095;
        if (arena_ptr[i]) munmap(arena_ptr[i], total ? total : 4096);
        arena_ptr[i] = NULL;
        memset(bufs[i], 0, sizeof bufs[i]);
        memset(buf_bytes[i], 0, sizeof buf_bytes[i]);
    }
    return best;
}

int main(int argc, char **argv) {
    prctl(PR_SET_DUMPABLE, 0, 0, 0, 0); /* /proc/<us>/{mem,environ,fd} closed to guests */
    signal(SIGPIPE, SIG_IGN);
    signal(SIGXFSZ, SIG_IGN); /* an arena over RLIMIT_FSIZE is an error verdict, not a kill */
    read_key();
    debug = getenv("HPCK_DEBUG") != NULL;
    const char *nodump = NULL, *base_prog = NULL, *guard = NULL;
    int a = 1;
    for (; a < argc && strcmp(argv[a], "--") != 0; a += 2) {
        if (a + 1 >= argc) verdict("error", "usage");
        if (!strcmp(argv[a], "--np")) np = atoi(argv[a + 1]);
        else if (!strcmp(argv[a], "--reps")) reps = atoi(argv[a + 1]);
        else if (!strcmp(argv[a], "--timeout")) timeout_s = atof(argv[a + 1]);
        else if (!strcmp(argv[a], "--nodump")) nodump = argv[a + 1];
        else if (!strcmp(argv[a], "--base")) base_prog = argv[a + 1];
        else if (!strcmp(argv[a], "--guard")) guard = argv[a + 1];
        else verdict("error", "unknown_option_%s", argv[a]);
    }
    if (a >= argc - 1 || np < 1 || np > HPCK_MAXRANKS || reps < 1 || !base_prog || !guard)
        verdict("error", "usage");
    deadline = now() + timeout_s;
    census_init();
    int cand_np = np;

    /* 1. the baseline: our sequential reference, run as a guest through the very same
     * protocol (same arena, stop, wake-up and cache conditions as the candidate will get),
     * before any candidate process exists */
    in_baseline = 1;
    np = 1;
    char *base_argv[] = {(char *)guard, (char *)base_prog, NULL};
    double base = run_phase(base_argv, nodump, "base");
    add_field(" base_s=%.9g", base);
    in_baseline = 0;

    /* 2. the candidate */
    np = cand_np;
    double best = run_phase(argv + a + 1, nodump, "cand");
    add_field(" cand_s=%.9g", best);
    verdict("pass", "");
}
