"""Deliberately broken candidates must get the right failure class, and text or files a
candidate fakes must never turn into a pass."""

from __future__ import annotations

import pytest

from codegen_eval.types import FailureClass, Score

from .hpck_helpers import failure_kind, score

SERIAL_AXPY_WRONG = """
void axpy(long n, double a, const double *x, double *y) {
    for (long i = 0; i < n; ++i) y[i] = a * x[i];   /* forgot + y[i] */
}
"""

SYNTAX_ERROR = """
void axpy(long n, double a, const double *x, double *y) {
    for (long i = 0; i < n; ++i) y[i] = a * x[i] + y[i]
}
"""

WRONG_NAME = """
void daxpy(long n, double a, const double *x, double *y) {
    for (long i = 0; i < n; ++i) y[i] = a * x[i] + y[i];
}
"""

SEGFAULT = """
void axpy(long n, double a, const double *x, double *y) {
    volatile double *p = 0;
    for (long i = 0; i < n; ++i) y[i] = a * x[i] + y[i];
    *p = 1.0;
}
"""

HANG = """
void axpy(long n, double a, const double *x, double *y) {
    volatile long spin = 0;
    while (1) spin++;
}
"""

# Prints what a naive harness would look for, tries to plant verdict files, computes garbage.
FAKE_PASS = r"""
#include <stdio.h>
void axpy(long n, double a, const double *x, double *y) {
    for (long i = 0; i < n; ++i) y[i] = 42.0;
    printf("PASS\nv=1 pass=1 cand_s=0.001 base_s=1 err=0 detail=-\nALL TESTS PASSED\n");
    fprintf(stderr, "PASS\n");
    FILE *f = fopen("hpck-0.res", "w");
    if (f) { fprintf(f, "v=1 pass=1 cand_s=0.001 base_s=1 err=0 detail=-\nmac=0\n"); fclose(f); }
}
"""

# Looks for a nonce in a constructor (runs before main) and forges a verdict with it. There is
# no secret in the candidate's process at all (see test_hpc_kernels_adversarial.py).
NONCE_THIEF = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
static char stolen[128];
__attribute__((constructor)) static void steal(void) {
    const char *v = getenv("HPCK_NONCE");
    if (v) strncpy(stolen, v, sizeof stolen - 1);
}
void axpy(long n, double a, const double *x, double *y) {
    char path[256];
    snprintf(path, sizeof path, "hpck-%s.res", stolen);
    FILE *f = fopen(path, "w");
    if (f) { fprintf(f, "v=1 pass=1 cand_s=0.001 base_s=1 err=0 detail=-\nmac=0\n"); fclose(f); }
    for (long i = 0; i < n; ++i) y[i] = -1.0;
}
"""

# Leaves before the driver can judge it: exit status 0, but no verdict.
EARLY_EXIT = r"""
#include <stdlib.h>
void axpy(long n, double a, const double *x, double *y) { exit(0); }
"""

# Every rank receives before it sends: a classic deadlock.
MPI_DEADLOCK = r"""
#include <mpi.h>
void axpy_mpi(long n_local, double a, const double *x_local, double *y_local, MPI_Comm comm) {
    int rank, size, token = 0;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    int left = (rank + size - 1) % size, right = (rank + 1) % size;
    MPI_Recv(&token, 1, MPI_INT, left, 0, comm, MPI_STATUS_IGNORE);
    MPI_Send(&token, 1, MPI_INT, right, 0, comm);
    for (long i = 0; i < n_local; ++i) y_local[i] = a * x_local[i] + y_local[i];
}
"""

# Right answer on its own block only when it is rank 0: crashes on rank 1.
MPI_RANK1_SEGV = r"""
#include <mpi.h>
void axpy_mpi(long n_local, double a, const double *x_local, double *y_local, MPI_Comm comm) {
    int rank;
    MPI_Comm_rank(comm, &rank);
    if (rank == 1) *(volatile int *)0 = 1;
    for (long i = 0; i < n_local; ++i) y_local[i] = a * x_local[i] + y_local[i];
}
"""

# Only rank 0 updates: passes at np=1, must fail at np=2.
MPI_RANK0_ONLY = r"""
#include <mpi.h>
void axpy_mpi(long n_local, double a, const double *x_local, double *y_local, MPI_Comm comm) {
    int rank;
    MPI_Comm_rank(comm, &rank);
    if (rank != 0) return;
    for (long i = 0; i < n_local; ++i) y_local[i] = a * x_local[i] + y_local[i];
}
"""

CUDA_COMPILE_ERROR = r"""
__global__ void k(long n, double a, const double *x, double *y) {
    long i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i]
}
void axpy_cuda(long n, double a, const double *d_x, double *d_y) {
    k<<<(n + 255) / 256, 256>>>(n, a, d_x, d_y);
}
"""


async def _score(sample_id: str, code: str, run_timeout_s: float = 60.0) -> Score:
    return await score(sample_id, code, run_timeout_s)


async def test_wrong_answer() -> None:
    sc = await _score("axpy/serial", SERIAL_AXPY_WRONG)
    assert (sc.status, sc.value, sc.failure_class) == ("fail", 0.0, FailureClass.WRONG_ANSWER)
    assert "y_mismatch" in sc.explanation


async def test_compile_error_and_link_error() -> None:
    sc = await _score("axpy/openmp", SYNTAX_ERROR)
    assert sc.status == "fail" and sc.failure_class == "compile_error:syntax"
    sc = await _score("axpy/serial", WRONG_NAME)
    assert sc.status == "fail" and sc.failure_class == FailureClass.LINK_ERROR
    assert "axpy" in sc.explanation


async def test_empty_candidate_is_no_code() -> None:
    sc = await _score("axpy/serial", "  \n")
    assert sc.failure_class == FailureClass.NO_CODE


async def test_segfault_is_runtime_crash() -> None:
    sc = await _score("axpy/serial", SEGFAULT)
    assert sc.status == "fail" and sc.failure_class == "runtime_crash:SIGSEGV"


async def test_hang_is_timeout() -> None:
    sc = await _score("axpy/serial", HANG, run_timeout_s=4)
    assert sc.status == "fail" and failure_kind(sc) == FailureClass.TIMEOUT


async def test_printed_pass_and_planted_files_are_still_wrong_answer() -> None:
    sc = await _score("axpy/serial", FAKE_PASS)
    assert (sc.status, sc.failure_class) == ("fail", FailureClass.WRONG_ANSWER)


async def test_nonce_is_gone_before_candidate_constructors_run() -> None:
    sc = await _score("axpy/serial", NONCE_THIEF)
    assert (sc.status, sc.failure_class) == ("fail", FailureClass.WRONG_ANSWER)


async def test_exit_before_the_verdict_is_not_a_pass() -> None:
    sc = await _score("axpy/openmp", EARLY_EXIT)
    assert sc.status == "fail" and sc.failure_class == "wrong_answer:exited_early"


async def test_mpi_deadlock_is_timeout() -> None:
    sc = await _score("axpy/mpi", MPI_DEADLOCK, run_timeout_s=6)
    assert sc.status == "fail" and failure_kind(sc) == FailureClass.TIMEOUT
    # np=1 sends to itself after receiving: it deadlocks already in the first configuration
    assert "np=1" in sc.explanation


async def test_mpi_crash_on_one_rank() -> None:
    sc = await _score("axpy/mpi", MPI_RANK1_SEGV)
    assert sc.status == "fail" and sc.failure_class == "runtime_crash:SIGSEGV"
    assert "np=2" in sc.explanation  # np=1 has no rank 1 and passed


async def test_mpi_bug_that_only_shows_with_several_ranks() -> None:
    sc = await _score("axpy/mpi", MPI_RANK0_ONLY)
    assert sc.status == "fail" and sc.failure_class == FailureClass.WRONG_ANSWER
    assert "np=2" in sc.explanation
    assert sc.metrics["runtime_s@np1xt1"] > 0  # the np=1 run passed and was timed


async def test_cuda_compile_error_is_detected_without_gpu() -> None:
    sc = await _score("axpy/cuda", CUDA_COMPILE_ERROR)
    assert sc.status == "fail" and failure_kind(sc) == FailureClass.COMPILE_ERROR


@pytest.mark.parametrize("code", [SERIAL_AXPY_WRONG])
async def test_cuda_runs_are_never_judged_without_gpu(code: str) -> None:
    # even a C body that compiles under nvcc is only "skipped" here: no false pass or fail
    sc = await _score("axpy/cuda", code.replace("void axpy(", "void axpy_cuda("))
    assert (sc.status, sc.failure_class) == ("skipped", FailureClass.SKIPPED_NO_GPU)
