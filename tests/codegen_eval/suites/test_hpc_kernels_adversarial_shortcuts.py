"""hpc-kernels against candidates that skip the work through the inputs, the tolerance or the
verdict's classes, rather than through the harness's processes (those are in
test_hpc_kernels_adversarial.py). Found by a red-team pass on 2026-11-27; on the commit before
the fixes every candidate here scored `pass` (the chmod one `error`), and none may now.
"""

from __future__ import annotations

from codegen_eval.suites.hpc_kernels.protocol import HostVerdict
from codegen_eval.suites.hpc_kernels.scorer import _candidate_caused
from codegen_eval.types import FailureClass, Score

from .hpck_helpers import sample_of, score

# Splitmix64, the generator the host used, is invertible: x[0] gives 53 bits of its first
# output, 2048 guesses the rest, x[1] confirms the state; replaying it tells where the host
# then planted maxloc's maximum (the early copy). No scan and no fallback: with inputs from a
# keyed PRF there is no state to recover, and the answer is wrong.
SEED_RECOVERY = r"""
#include <stdint.h>
#define G 0x9e3779b97f4a7c15ULL
static uint64_t mix(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}
static uint64_t unshift(uint64_t y, int k) { uint64_t x = y; for (int i = 0; i < 64 / k + 1; ++i) x = y ^ (x >> k); return x; }
static uint64_t inverse(uint64_t a) { uint64_t x = a; for (int i = 0; i < 6; ++i) x *= 2 - a * x; return x; }
static uint64_t unmix(uint64_t z) {
    z = unshift(z, 31) * inverse(0x94d049bb133111ebULL);
    z = unshift(z, 27) * inverse(0xbf58476d1ce4e5b9ULL);
    return unshift(z, 30);
}
double max_loc(long n, const double *x, long *idx) {
    uint64_t m0 = (uint64_t)((x[0] + 1.0) * 4503599627370496.0);  /* x = -1 + m 2^-52 */
    uint64_t m1 = (uint64_t)((x[1] + 1.0) * 4503599627370496.0);
    for (uint64_t low = 0; low < 2048; ++low) {
        uint64_t s1 = unmix(m0 << 11 | low);
        if (mix(s1 + G) >> 11 != m1) continue;
        /* draws n+1 and n+2 chose the planted positions: the early one is the answer */
        *idx = (long)(mix(s1 - G + (uint64_t)(n + 1) * G) % (uint64_t)(n - 1));
        return x[*idx];
    }
    *idx = 0;
    return x[0];
}
"""

# The planted maximum was a constant outside the data's range: stop at the first value > 1.
ABOVE_ONE = r"""
double max_loc(long n, const double *x, long *idx) {
    for (long i = 0; i < n; ++i) if (x[i] > 1.0) { *idx = i; return x[i]; }
    double best = x[0]; long bi = 0;
    for (long i = 1; i < n; ++i) if (x[i] > best) { best = x[i]; bi = i; }
    *idx = bi;
    return best;
}
"""

# Right at np=1, where it also makes the run directory read-only (the sandbox uid owns it),
# so that the next configuration's host cannot create its log: its wrong answer at np=2 came
# out as an infra error, which is not cached and is re-scored.
CHMOD_RUN_DIR = r"""
#include <mpi.h>
#include <sys/stat.h>
void axpy_mpi(long n_local, double a, const double *x_local, double *y_local, MPI_Comm comm) {
    int size;
    MPI_Comm_size(comm, &size);
    if (size > 1) { for (long i = 0; i < n_local; ++i) y_local[i] = 0.0; return; }
    for (long i = 0; i < n_local; ++i) y_local[i] = a * x_local[i] + y_local[i];
    chmod(".", 0555);
}
"""

# The same, by leaving the run directory without free inodes (a size- and inode-capped
# tmpfs where the sandbox can mount one): no mode to give back, so the host's error in the
# next configuration must count as the candidate's.
FILL_RUN_DIR = r"""
#include <fcntl.h>
#include <mpi.h>
#include <stdio.h>
#include <unistd.h>
void axpy_mpi(long n_local, double a, const double *x_local, double *y_local, MPI_Comm comm) {
    int size;
    MPI_Comm_size(comm, &size);
    if (size > 1) { for (long i = 0; i < n_local; ++i) y_local[i] = 0.0; return; }
    for (long i = 0; i < n_local; ++i) y_local[i] = a * x_local[i] + y_local[i];
    static int filled;
    char name[32];
    for (int i = 0; !filled && i < (1 << 21); ++i) {
        snprintf(name, sizeof name, "f%d", i);
        int fd = open(name, O_WRONLY | O_CREAT | O_EXCL, 0644);
        if (fd < 0) break;
        close(fd);
    }
    filled = 1;
}
"""


# A "serial" answer that would start threads of its own (a two-pthread gemm had up to 2x on
# two free CPUs). Decided without timing: it answers right only where it cannot start a
# thread, so on the commit before the rule it failed; now it passes.
THREAD_PROBE = r"""
#include <pthread.h>
static void *nothing(void *arg) { return arg; }
void axpy(long n, double a, const double *x, double *y) {
    pthread_t t;
    int started = pthread_create(&t, 0, nothing, 0) == 0;
    if (started) pthread_join(t, 0);
    double k = started ? a + 1.0 : a;
    for (long i = 0; i < n; ++i) y[i] = k * x[i] + y[i];
}
"""


async def _score(sample_id: str, code: str) -> Score:
    return await score(sample_id, code, 30.0)


async def test_inputs_give_no_generator_state_away() -> None:
    sc = await _score("maxloc/serial", SEED_RECOVERY)
    assert (sc.status, sc.failure_class) == ("fail", FailureClass.WRONG_ANSWER), sc.explanation


async def test_the_planted_maximum_is_an_ordinary_value() -> None:
    sc = await _score("maxloc/serial", ABOVE_ONE)
    assert (sc.status, sc.failure_class) == ("fail", FailureClass.WRONG_ANSWER), sc.explanation


async def test_cg_with_a_loosened_tolerance_fails() -> None:
    # honest CG ends at <= 1 tol (true residual); the check accepted 10 tol, and tol * 9.5
    # passed with ~12% fewer iterations
    target = sample_of("cg/serial").target
    loose = target.replace(
        "double stop = tol * tol * rs;", "tol *= 9.5;\n    double stop = tol * tol * rs;"
    )
    assert loose != target
    sc = await _score("cg/serial", loose)
    assert (sc.status, sc.failure_class) == ("fail", FailureClass.WRONG_ANSWER), sc.explanation
    assert "residual_too_large" in sc.explanation


async def test_a_chmod_run_directory_is_given_back() -> None:
    sc = await _score("axpy/mpi", CHMOD_RUN_DIR)
    assert (sc.status, sc.failure_class) == ("fail", FailureClass.WRONG_ANSWER), sc.explanation
    assert "np=2" in sc.explanation


async def test_an_error_after_candidate_code_ran_is_the_candidates() -> None:
    sc = await _score("axpy/mpi", FILL_RUN_DIR)
    assert sc.status == "fail", sc.explanation
    assert "np=2" in sc.explanation
    # tamper where the run directory is an inode-capped tmpfs (root); else nothing filled up
    assert sc.failure_class in (f"{FailureClass.TAMPER}:environment", FailureClass.WRONG_ANSWER)


def test_only_our_own_failures_stay_infra_errors() -> None:
    def error(**fields: str) -> HostVerdict:
        return HostVerdict("error", "guest_log:Permission_denied", fields=fields)

    assert not _candidate_caused(error(), candidate_ran=False)  # no candidate code yet
    assert _candidate_caused(error(), candidate_ran=True)  # an earlier configuration ran it
    assert _candidate_caused(error(cand_started="1"), candidate_ran=False)
    # our reference failing (cg not converging) is never the candidate's doing
    assert not _candidate_caused(error(fault="host", cand_started="1"), candidate_ran=True)


async def test_a_serial_candidate_starts_no_threads() -> None:
    sc = await _score("axpy/serial", THREAD_PROBE)
    assert sc.status == "pass", (sc.failure_class, sc.explanation)
    # the OpenMP variant may start threads (at 1 thread too: OMP_NUM_THREADS is a default)
    sc = await _score("axpy/openmp", THREAD_PROBE)
    assert sc.status == "fail", sc.explanation
