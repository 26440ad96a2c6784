/* vguard MODE DIR OUT CPU_S FSIZE PROG [ARGS...]: one candidate's step inside a batch.
 *
 * Several Verilog candidates are compiled and simulated one after the other in ONE sandbox
 * exec (batch.py). They share the sandbox's uid, so without more each one's processes could
 * reach the others' files: a simulation could rewrite the next candidate's source or its
 * testbench before it compiles. Every step of a candidate (iverilog, then vvp) therefore
 * starts through this static binary, which confines it for the rest of its life:
 *
 *   - a Landlock domain of its own whose file rules allow reading the system (/usr, /etc,
 *     /dev/null) and the candidate's own directory DIR, and writing only beneath OUT
 *     (MODE compile: DIR/w, where sim.vvp and iverilog's temporary files go; MODE sim:
 *     nowhere). Everything else, the other candidates' directories, the batch's output
 *     directory and /proc included, is refused. Landlock also refuses ptrace-class access
 *     to processes outside the domain, and from ABI 6 on signals to them;
 *   - MODE sim: the seccomp filter of confine.h (no new processes, no signals to anyone but
 *     itself, no ptrace, no pidfd tricks), so nothing a simulation does outlives it;
 *   - rlimits: CPU_S seconds of CPU (SIGXCPU, then SIGKILL a second later), FSIZE bytes per
 *     written file (the simulation's stdout and stderr are files the batch's trusted shell
 *     opened before this ran: SIGXFSZ past the cap), no core files;
 *   - no file descriptors beyond 0-2.
 *
 * `vguard probe` prints the Landlock ABI and exits 0 when it is enough (file rules, ABI >= 1),
 * 3 otherwise: the scorer then keeps one sandbox per candidate. Exit codes of its own:
 * 2 usage, 112 a confinement step failed (before PROG ran). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "confine.h"

#define R_FILE (LANDLOCK_ACCESS_FS_READ_FILE)
#define R_DIR (LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR)
#define RX_DIR (R_DIR | LANDLOCK_ACCESS_FS_EXECUTE)
/* rights of later ABIs, by number: older kernel headers lack their names */
#define FS_REFER (1ULL << 13)      /* ABI 2 */
#define FS_TRUNCATE (1ULL << 14)   /* ABI 3 */
#define FS_IOCTL_DEV (1ULL << 15)  /* ABI 5 */
/* what iverilog needs beneath its output directory: make, write, truncate, remove files */
#define W_DIR                                                                                 \
    (R_DIR | LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_MAKE_REG |                    \
     LANDLOCK_ACCESS_FS_REMOVE_FILE)

static void die(const char *what) {
    fprintf(stderr, "vguard: %s: %s\n", what, strerror(errno));
    _exit(112);
}

static long landlock_abi(void) {
    return syscall(SYS_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);
}

/* Every file access right the kernel's ABI knows: all of them are handled, so anything no
 * rule allows is refused. */
static uint64_t handled_fs(long abi) {
    uint64_t fs = (LANDLOCK_ACCESS_FS_MAKE_SYM << 1) - 1; /* ABI 1: EXECUTE .. MAKE_SYM */
    if (abi >= 2) fs |= FS_REFER;
    if (abi >= 3) fs |= FS_TRUNCATE;
    if (abi >= 5) fs |= FS_IOCTL_DEV;
    return fs;
}

static void allow(int ruleset, const char *path, uint64_t access, uint64_t handled, int must) {
    struct landlock_path_beneath_attr rule = {.allowed_access = access & handled};
    rule.parent_fd = open(path, O_PATH | O_CLOEXEC);
    if (rule.parent_fd < 0) {
        if (must) die(path);
        return; /* a system path this sandbox lacks: nothing to allow */
    }
    if (syscall(SYS_landlock_add_rule, ruleset, LANDLOCK_RULE_PATH_BENEATH, &rule, 0) != 0)
        die("landlock_add_rule");
    close(rule.parent_fd);
}

static void confine_files(long abi, const char *dir, const char *out, int compile) {
    struct {
        uint64_t handled_access_fs, handled_access_net, scoped;
    } attr = {.handled_access_fs = handled_fs(abi)};
    size_t size = sizeof attr.handled_access_fs; /* ABI 1-3 */
    if (abi >= 4) {
        attr.handled_access_net = 3; /* BIND_TCP | CONNECT_TCP: no network anyway */
        size = 2 * sizeof(uint64_t);
    }
    if (abi >= 6) {
        attr.scoped = 1u << 0 | 1u << 1; /* abstract unix sockets, signals */
        size = sizeof attr;
    }
    int ruleset = (int)syscall(SYS_landlock_create_ruleset, &attr, size, 0);
    if (ruleset < 0) die("landlock_create_ruleset");
    uint64_t h = attr.handled_access_fs;
    allow(ruleset, "/usr", RX_DIR, h, 1);
    allow(ruleset, "/etc", R_DIR, h, 0);
    allow(ruleset, "/dev/null", R_FILE | LANDLOCK_ACCESS_FS_WRITE_FILE, h, 0);
    allow(ruleset, dir, R_DIR, h, 1);
    if (compile) allow(ruleset, out, W_DIR | FS_TRUNCATE, h, 1);
    if (syscall(SYS_landlock_restrict_self, ruleset, 0) != 0) die("landlock_restrict_self");
    close(ruleset);
}

/* Lower a limit (never raise one: the sandbox's own hard limits stay the ceiling). */
static void limit(int resource, rlim_t soft, rlim_t hard) {
    struct rlimit now;
    if (getrlimit(resource, &now) != 0) die("getrlimit");
    if (now.rlim_max != RLIM_INFINITY && hard > now.rlim_max) hard = now.rlim_max;
    if (soft > hard) soft = hard;
    struct rlimit rl = {soft, hard};
    if (setrlimit(resource, &rl) != 0) die("setrlimit");
}

int main(int argc, char **argv) {
    if (argc == 2 && strcmp(argv[1], "probe") == 0) {
        long abi = landlock_abi();
        printf("landlock %ld\n", abi < 0 ? 0 : abi);
        return abi >= 1 ? 0 : 3;
    }
    if (argc < 7 || (strcmp(argv[1], "compile") != 0 && strcmp(argv[1], "sim") != 0)) {
        fprintf(stderr, "usage: vguard compile|sim DIR OUT CPU_S FSIZE PROG [ARGS...]\n");
        return 2;
    }
    int compile = strcmp(argv[1], "compile") == 0;
    long cpu = strtol(argv[4], NULL, 10);
    long long fsize = strtoll(argv[5], NULL, 10);
    if (cpu < 1 || fsize < 0) {
        fprintf(stderr, "vguard: bad limits %s %s\n", argv[4], argv[5]);
        return 2;
    }
    long abi = landlock_abi();
    if (abi < 1) {
        errno = ENOSYS;
        die("landlock");
    }
    if (syscall(SYS_close_range, 3u, ~0u, 0u) != 0)
        for (int fd = 3; fd < 1024; fd++) close(fd);
    limit(RLIMIT_CPU, (rlim_t)cpu, (rlim_t)cpu + 1);
    limit(RLIMIT_FSIZE, (rlim_t)fsize, (rlim_t)fsize);
    limit(RLIMIT_CORE, 0, 0);
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) die("no_new_privs");
    confine_files(abi, argv[2], argv[3], compile);
    if (!compile && confine_seccomp(CONFINE_AFFINITY_OWN) != 0) die("seccomp");
    execvp(argv[6], argv + 6);
    die("exec");
}
