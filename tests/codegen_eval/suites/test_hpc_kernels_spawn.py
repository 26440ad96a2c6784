"""hpc-kernels against candidates that get a trusted helper (mpirun) to start a process for
them: every process that can touch a verdict must have passed the guard.

The red team's cheat (reproduced here as a candidate source, scored by the real scorer with
real Open MPI in the real sandbox): rank 0 calls MPI_Comm_spawn("./prog", {"--helper"}) from
a side thread; mpirun forks and execs the program itself, not through hpck_guard, so a
constructor turns that process into a helper with no seccomp filter and no Landlock domain.
The candidate function only posts its job to a worker thread and returns, so DONE comes at
once; once the host has stopped the ranks and read its clock, the helper SIGSTOPs the host,
SIGCONTs the ranks, lets the workers do the real work, stops them again and continues the
host, which then finds correct outputs. Before the fix this passed at 8-86x (honest: ~1x).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections.abc import Sequence

import pytest

from codegen_eval.suites.hpc_kernels import hpc_kernels_task
from codegen_eval.types import Candidate, Score
from sandboxes import Limits, open_sandbox, toolchains

from .hpck_helpers import sample_of, score

# The helper and the worker, shared by every problem. A problem supplies WORK(job), the real
# computation on the pointers gemm_mpi/axpy_mpi got, and POST(...), which fills `job`.
SPAWN_CHEAT = r"""
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <mpi.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

typedef struct { volatile long posted, done, ready; } shared_t;
static shared_t *sh; /* one page of /tmp shared by the ranks and the helper */
static shared_t *map_shared(void) {
    int fd = open("/tmp/.cheat", O_RDWR | O_CREAT, 0600);
    if (fd < 0 || ftruncate(fd, 4096) != 0) return NULL;
    void *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    return p == MAP_FAILED ? NULL : (shared_t *)p;
}
static char state_of(int pid) {
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%d/stat", pid);
    int fd = open(path, O_RDONLY);
    if (fd < 0) return 0;
    long n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) return 0;
    buf[n] = 0;
    char *r = strrchr(buf, ')');
    return r ? r[2] : 0;
}
static int find(const char *comm, int *out, int max, int skip) {
    int n = 0;
    DIR *d = opendir("/proc");
    struct dirent *e;
    while (d && (e = readdir(d)) && n < max) {
        int pid = atoi(e->d_name);
        if (pid <= 0 || pid == skip) continue;
        char path[64], buf[64] = "";
        snprintf(path, sizeof path, "/proc/%d/comm", pid);
        int fd = open(path, O_RDONLY);
        if (fd < 0) continue;
        long r = read(fd, buf, sizeof buf - 1);
        close(fd);
        if (r > 0 && buf[r - 1] == '\n') buf[r - 1] = 0;
        if (strcmp(buf, comm) == 0) out[n++] = pid;
    }
    if (d) closedir(d);
    return n;
}
/* The helper: never returns. Each time the ranks are stopped after a DONE with a job
 * outstanding, freeze the host, let the ranks do the work, freeze them, thaw the host. */
static void helper(void) {
    sh = map_shared();
    if (!sh) _exit(0);
    long handled = sh->posted;
    sh->ready = 1;
    for (;;) {
        int host, ranks[64];
        if (find("hpck_host", &host, 1, 0) != 1) _exit(0);
        int nr = find("prog", ranks, 64, getpid());
        int stopped = nr > 0;
        for (int i = 0; i < nr; ++i) stopped &= state_of(ranks[i]) == 'T';
        if (sh->posted > handled && stopped) {
            kill(host, SIGSTOP);
            for (int i = 0; i < nr; ++i) kill(ranks[i], SIGCONT);
            while (sh->done < sh->posted) usleep(50);
            for (int i = 0; i < nr; ++i) kill(ranks[i], SIGSTOP);
            for (int i = 0; i < nr; ++i) while (state_of(ranks[i]) != 'T') usleep(20);
            handled = sh->posted;
            kill(host, SIGCONT);
        }
        usleep(50);
    }
}
__attribute__((constructor)) static void maybe_helper(void) {
    char buf[4096];
    int fd = open("/proc/self/cmdline", O_RDONLY);
    long n = fd >= 0 ? read(fd, buf, sizeof buf) : 0;
    for (long i = 0; i + 8 <= n; ++i)
        if (memcmp(buf + i, "--helper", 8) == 0) helper();
}
static void *spawner(void *arg) {
    (void)arg;
    char *args[] = {"--helper", NULL};
    MPI_Comm inter;
    SPAWN_CALL;
    return NULL;
}
typedef struct { JOB_FIELDS } job_t;
static job_t job;
static volatile long want;
static long mine;
static void *worker(void *arg) {
    (void)arg;
    for (;;) {
        while (want == mine) usleep(20);
        WORK;
        mine = want;
        __sync_fetch_and_add(&sh->done, 1);
    }
    return NULL;
}
static void post(void) {
    static int started;
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (CHEAT_NP && size != CHEAT_NP) { /* honest where it is not cheating */
        WORK;
        return;
    }
    if (!started) {
        started = 1;
        sh = map_shared();
        pthread_t t;
        pthread_create(&t, NULL, worker, NULL);
        if (rank == 0) pthread_create(&t, NULL, spawner, NULL);
    }
    if (!sh->ready) { /* until the helper is up: the real work, in the window */
        WORK;
        return;
    }
    __sync_fetch_and_add(&sh->posted, 1);
    want++;
}
"""

_SPAWN = 'MPI_Comm_spawn("./prog", args, 1, MPI_INFO_NULL, 0, MPI_COMM_SELF, &inter, MPI_ERRCODES_IGNORE)'

GEMM = (
    "#define JOB_FIELDS int n; const double *A, *B; double *C;\n"
    "#define WORK if (job.C) for (int i = 0; i < job.n; ++i) for (int j = 0; j < job.n; ++j) {"
    " double s = 0; for (int k = 0; k < job.n; ++k) s += job.A[(long)i * job.n + k] *"
    " job.B[(long)k * job.n + j]; job.C[(long)i * job.n + j] = s; }\n"
)
GEMM_FN = r"""
void gemm_mpi(int n, const double *A, const double *B, double *C, MPI_Comm comm) {
    (void)comm;
    job.n = n, job.A = A, job.B = B, job.C = C;
    post();
}
"""
AXPY = (
    "#define JOB_FIELDS long n; double a; const double *x; double *y;\n"
    "#define WORK for (long i = 0; i < job.n; ++i) job.y[i] = job.a * job.x[i] + job.y[i];\n"
)
AXPY_FN = r"""
void axpy_mpi(long n_local, double a, const double *x_local, double *y_local, MPI_Comm comm) {
    (void)comm;
    job.n = n_local, job.a = a, job.x = x_local, job.y = y_local;
    post();
}
"""


def spawn_cheat(work: str, fn: str, *, at_np: int = 0, spawn: str = _SPAWN) -> str:
    """The cheat at comm size `at_np` only (0: at every size), honest work elsewhere, so the
    configuration it is caught at is the one under test."""
    return f"#define SPAWN_CALL {spawn}\n#define CHEAT_NP {at_np}\n" + work + SPAWN_CHEAT + fn


def assert_not_pass(sc: Score) -> None:
    assert sc.status != "pass", sc
    assert sc.value == 0.0, sc


# mpirun forks, then its child's exec waits on the host: the host refuses the exec, or, if a
# stop comes first, its census finds the forked child. Which one is a race; both are tamper.
SPAWN_CAUGHT = ("tamper:exec_refused", "tamper:unexpected_process")


@pytest.mark.slow
@pytest.mark.parametrize(
    ("sample_id", "code", "where"),
    [
        ("gemm/mpi", spawn_cheat(GEMM, GEMM_FN, at_np=4), "np=4 threads=1"),
        ("gemm/mpi-openmp", spawn_cheat(GEMM, GEMM_FN, at_np=2), "np=2 threads=2"),
        ("axpy/mpi", spawn_cheat(AXPY, AXPY_FN), "np=1 threads=1"),
    ],
    ids=["gemm-mpi-np4", "gemm-mpi-openmp-2x2", "axpy-mpi"],
)
async def test_a_process_spawned_through_mpirun_cannot_rescue_a_lazy_answer(
    sample_id: str, code: str, where: str
) -> None:
    # before exec control: pass at 42-154x (gemm), 14x (axpy); honest ~1x
    sc = await score(sample_id, code, 60)
    assert_not_pass(sc)
    assert sc.failure_class in SPAWN_CAUGHT, sc
    assert f"at {where}" in sc.explanation, sc


# Other roads to the same helper: a shell that execs it, MPI_Comm_spawn_multiple, and the
# PMPI entry point looked up at run time (no MPI_Comm_spawn in the source at all).
_VIA_SHELL = (
    'MPI_Comm_spawn("/bin/sh", (char *[]){"-c", "exec ./prog --helper", NULL}, 1, '
    "MPI_INFO_NULL, 0, MPI_COMM_SELF, &inter, MPI_ERRCODES_IGNORE); (void)args"
)
_MULTIPLE = (
    '{ char *cmds[] = {"./prog"}; char **argvs[] = {args}; int maxp[] = {1}; '
    "MPI_Info infos[] = {MPI_INFO_NULL}; MPI_Comm_spawn_multiple(1, cmds, argvs, maxp, infos, "
    "0, MPI_COMM_SELF, &inter, MPI_ERRCODES_IGNORE); }"
)
_PMPI_DLSYM = (
    "{ int (*f)(const char *, char **, int, MPI_Info, int, MPI_Comm, MPI_Comm *, int *) = "
    "(int (*)(const char *, char **, int, MPI_Info, int, MPI_Comm, MPI_Comm *, int *))dlsym("
    'RTLD_DEFAULT, "PMPI_" "Comm_" "spawn"); f("./prog", args, 1, MPI_INFO_NULL, 0, '
    "MPI_COMM_SELF, &inter, MPI_ERRCODES_IGNORE); }"
)


# PMIx_Spawn itself, over the rank's own PMIx connection to mpirun, past MPI altogether (the
# library Open MPI already loaded, found with dlopen; pmix_app_t as PMIx 4 lays it out).
_PMIX_SPAWN = (
    "{ typedef struct { char *cmd; char **argv, **env; char *cwd; int maxprocs; void *info; "
    'size_t ninfo; } app_t; app_t app = {0}; app.cmd = "./prog"; '
    'app.argv = (char *[]){"./prog", "--helper", NULL}; app.maxprocs = 1; char ns[256]; '
    'void *h = dlopen("libpmix.so.2", RTLD_NOW); int (*sp)(const void *, size_t, '
    "const app_t *, size_t, char *) = (int (*)(const void *, size_t, const app_t *, size_t, "
    'char *))dlsym(h, "PMIx_Spawn"); sp(NULL, 0, &app, 1, ns); (void)inter; (void)args; }'
)


@pytest.mark.slow
@pytest.mark.parametrize(
    "spawn",
    [_VIA_SHELL, _MULTIPLE, _PMPI_DLSYM, _PMIX_SPAWN],
    ids=["bin-sh", "spawn-multiple", "pmpi-dlsym", "pmix-spawn"],
)
async def test_every_road_to_a_spawned_helper_is_refused(spawn: str) -> None:
    # before exec control each passed like the direct spawn (axpy/mpi)
    sc = await score("axpy/mpi", spawn_cheat(AXPY, AXPY_FN, spawn=spawn), 60)
    assert_not_pass(sc)
    assert sc.failure_class in SPAWN_CAUGHT, sc


# A serial candidate that replaces itself with a shell: the guard's filter allowed exec (the
# new image kept the filter), exec control refuses it outright.
EXEC_SELF = r"""
#include <unistd.h>
void axpy(long n, double a, const double *x, double *y) {
    execl("/bin/sh", "sh", "-c", "true", (char *)0);
    for (long i = 0; i < n; ++i) y[i] = a * x[i] + y[i];
}
"""


async def test_a_candidate_exec_is_refused() -> None:
    sc = await score("axpy/serial", EXEC_SELF, 60)
    assert_not_pass(sc)
    assert sc.failure_class == "tamper:exec_refused", sc


@pytest.mark.slow
async def test_an_honest_candidate_beside_a_cheat_gets_its_own_verdict() -> None:
    honest = sample_of("axpy/mpi").target
    cheat = spawn_cheat(GEMM, GEMM_FN)
    good, bad = await asyncio.gather(score("axpy/mpi", honest, 60), score("gemm/mpi", cheat, 60))
    assert good.status == "pass" and good.value == 1.0, good
    assert bad.failure_class in SPAWN_CAUGHT, bad


async def test_a_process_nobody_admitted_is_tamper_at_the_first_stop(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The census: whatever started an extra process (here a launcher that leaves a `sleep`
    behind, before any candidate code runs, so exec control lets it through), a process of
    the candidate's uid that is neither the launcher, an admitted guest nor an ancestor of the
    host could act while the host believes everything is stopped."""
    recipe = toolchains.get("mpi")
    plain = recipe.run_command

    def leaves_a_process(artifact: str, args: Sequence[str], np: int | None) -> list[str]:
        return ["/bin/sh", "-c", 'sleep 30 & exec "$@"', "sh", *plain(artifact, args, np)]

    monkeypatch.setattr(recipe, "run_command", leaves_a_process)
    sc = await score("axpy/mpi", sample_of("axpy/mpi").target, 60)
    assert sc.failure_class == "tamper:unexpected_process", sc


# What else mpirun does when asked: MPI_Abort (mpirun kills the job; Open MPI 4.1's PMIx job
# control knows only KILL and TERMINATE, never a signal of the requester's choosing). A rank
# that aborts with status 0 after a right first answer gains nothing: the run ends unfinished.
ABORT_ZERO = r"""
#include <mpi.h>
void axpy_mpi(long n_local, double a, const double *x_local, double *y_local, MPI_Comm comm) {
    static int calls;
    int rank;
    MPI_Comm_rank(comm, &rank);
    for (long i = 0; i < n_local; ++i) y_local[i] = a * x_local[i] + y_local[i];
    if (++calls == 2 && rank == 0) MPI_Abort(comm, 0);
}
"""


async def test_mpirun_ending_the_job_for_the_candidate_is_no_pass() -> None:
    sc = await score("axpy/mpi", ABORT_ZERO, 60)
    assert_not_pass(sc)
    assert sc.status == "fail", sc  # the candidate's doing, never an infra error


@pytest.mark.filterwarnings("ignore:sandbox backend 'unsafe-local'")
async def test_the_census_counts_only_its_own_exec_without_a_pid_namespace() -> None:
    """`unsafe-local` gives an exec no PID namespace: another run's process of the same uid
    is visible in /proc and must not make an honest candidate `tamper`."""
    task = hpc_kernels_task(problems=["axpy"], variants=["mpi"], backend="unsafe-local", reps=2)
    (s,) = task.dataset

    async def bystander() -> None:
        async with open_sandbox("unsafe-local") as sb:
            await sb.exec(["sleep", "8"], limits=Limits(wall_s=20))

    sc, _ = await asyncio.gather(task.scorer.score(s, Candidate(s.id, 0, s.target)), bystander())
    assert sc.status == "pass", sc


# A right answer, plus a thread that spins forever: harmless while the host holds the process
# stopped, unless someone else continues it.
SPINNER = r"""
#include <pthread.h>
static void *spin(void *arg) { for (volatile unsigned long i = 0;; ++i) (void)arg; return 0; }
void axpy(long n, double a, const double *x, double *y) {
    static int started;
    if (!started) { pthread_t t; started = pthread_create(&t, 0, spin, 0) == 0; }
    for (long i = 0; i < n; ++i) y[i] = a * x[i] + y[i];
}
"""


def _descendants_named(comm: str, root: int) -> list[int]:
    """Pids of processes called `comm` below `root` (this test's own sandboxes only)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/comm") as f:
                if f.read().strip() != comm:
                    continue
            pid = int(entry)
            while pid > 1 and pid != root:
                with open(f"/proc/{pid}/stat") as f:
                    pid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        if pid == root:
            found.append(int(entry))
    return found


@pytest.mark.slow
async def test_a_guest_continued_while_the_host_holds_it_is_tamper() -> None:
    """Whoever continues a guest while the host holds it stopped (mpirun asked to, or any
    other process that could signal it) lets it run outside every window: the host compares
    each guest's CPU time from its confirmed stop to its next SIGCONT. Here the test itself,
    from outside the sandbox, plays the one that sends SIGCONT."""
    stop = asyncio.Event()

    async def keep_continuing() -> None:
        while not stop.is_set():
            for pid in _descendants_named("prog", os.getpid()):
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGCONT)
            await asyncio.sleep(0.002)

    poker = asyncio.create_task(keep_continuing())
    try:
        sc = await score("axpy/openmp", SPINNER, 60)
    finally:
        stop.set()
        await poker
    assert_not_pass(sc)
    assert sc.failure_class == "tamper:ran_while_stopped", sc


# mpirun's out-of-band channel takes daemon commands ("signal the local processes", "add
# local processes") from anyone of its uid, and mpirun hands the ranks its address. A rank
# that can reach it could have the ranks continued while the host holds them. The candidate
# answers right only if the connection is refused.
OOB_REACH = r"""
#include <arpa/inet.h>
#include <mpi.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
static int reached_mpirun(void) {
    const char *uri = getenv("OMPI_MCA_orte_hnp_uri"); /* "<jobid>.0;tcp://127.0.0.1:PORT" */
    const char *colon = uri ? strrchr(uri, ':') : NULL;
    if (!colon) return -1;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(atoi(colon + 1))};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int s = socket(AF_INET, SOCK_STREAM, 0);
    int ok = connect(s, (struct sockaddr *)&a, sizeof a) == 0;
    close(s);
    return ok;
}
void axpy_mpi(long n_local, double a, const double *x_local, double *y_local, MPI_Comm comm) {
    (void)comm;
    if (reached_mpirun() != 0) return; /* reached (or no address): leave the answer wrong */
    for (long i = 0; i < n_local; ++i) y_local[i] = a * x_local[i] + y_local[i];
}
"""


async def test_a_rank_cannot_reach_mpiruns_command_channel() -> None:
    sc = await score("axpy/mpi", OOB_REACH, 60)
    assert sc.status == "pass", sc
