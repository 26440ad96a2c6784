"""Failure classification from real compiler and sandbox output (the tiny C suite)."""

from __future__ import annotations

import asyncio

import pytest

from codegen_eval.failures import classify_compile, classify_exec, detect_sanitizer
from codegen_eval.types import Candidate
from sandboxes.types import ExecResult, ExecStatus
from tests.codegen_eval.tiny_suite import BROKEN, REFERENCE, TinyScorer, tiny_task

EXPECTED = {
    "syntax": "compile_error:syntax",
    "undeclared": "compile_error:undeclared",
    "type": "compile_error:type",
    "missing_include": "compile_error:missing_include",
    "link": "link_error",
    "segfault": "runtime_crash:SIGSEGV",
    "wrong": "wrong_answer",
    "loop": "timeout",
    "memory": "resource_limit:memory",
}


async def test_each_failure_class_from_real_runs() -> None:
    sample = tiny_task(1).dataset[0]
    scorer = TinyScorer()
    names = ["reference", *EXPECTED]
    codes = [REFERENCE, *(BROKEN[n] for n in EXPECTED)]
    scores = await asyncio.gather(
        *(scorer.score(sample, Candidate(sample.id, 0, c)) for c in codes)
    )
    got = dict(zip(names, scores, strict=True))
    assert got["reference"].status == "pass" and got["reference"].failure_class is None
    for name, expected in EXPECTED.items():
        fc = got[name].failure_class or ""
        assert fc.startswith(expected), f"{name}: {fc} ({got[name].explanation})"
        assert got[name].status == "fail"


def _res(
    status: str, *, code: int | None = None, sig: int | None = None, err: str = ""
) -> ExecResult:
    return ExecResult(ExecStatus(status), code, sig, "", err, False, 0.1, 0.1, None)


@pytest.mark.parametrize(
    ("result", "expected"),
    [
        (_res("ok", code=0), None),
        (_res("signal", sig=6), "runtime_crash:SIGABRT"),
        # the sandbox saw no limit: text and signals the program chose are its own crash
        (
            _res(
                "signal",
                sig=6,
                err="terminate called after throwing an instance of 'std::bad_alloc'",
            ),
            "runtime_crash:SIGABRT",
        ),
        (_res("signal", sig=24), "runtime_crash:SIGXCPU"),
        (_res("signal", sig=25), "runtime_crash:SIGXFSZ"),
        (_res("cpu_limit"), "timeout:cpu"),
        (_res("output_limit"), "resource_limit:output"),
        (_res("pids_limit"), "resource_limit:pids"),
        (_res("file_size_limit"), "resource_limit:file_size"),
        (_res("skipped_no_gpu"), "skipped_no_gpu"),
        (_res("nonzero_exit", code=139), "runtime_crash:SIGSEGV"),
        (_res("nonzero_exit", code=2), "nonzero_exit"),
        (
            _res("nonzero_exit", code=1, err="==1==ERROR: AddressSanitizer: heap-buffer-overflow"),
            "sanitizer:asan",
        ),
    ],
)
def test_classify_exec(result: ExecResult, expected: str | None) -> None:
    assert classify_exec(result) == expected


@pytest.mark.parametrize(
    ("result", "expected"),
    [
        # forged text: "Killed" / MemoryError / bad_alloc / mpirun's line for a limit signal
        (_res("nonzero_exit", code=1, err="Killed\nMemoryError\nstd::bad_alloc"), "nonzero_exit"),
        (_res("nonzero_exit", code=1, err="Cannot allocate memory"), "nonzero_exit"),
        (_res("nonzero_exit", code=1, err="mpirun noticed ... exited on signal 24"),
         "nonzero_exit"),
        (_res("nonzero_exit", code=1, err="mpirun noticed ... exited on signal 9"),
         "nonzero_exit"),
        # exit codes that look like a limit's signal
        (_res("nonzero_exit", code=152), "nonzero_exit"),
        (_res("nonzero_exit", code=153), "nonzero_exit"),
        (_res("nonzero_exit", code=137), "nonzero_exit"),
    ],
)  # fmt: skip
def test_a_program_cannot_name_its_own_limit(result: ExecResult, expected: str) -> None:
    """Before: each of these was resource_limit:memory, timeout:cpu or a limit crash."""
    assert classify_exec(result) == expected


def test_an_oom_kill_the_sandbox_counted_in_a_failed_program_is_the_memory_limit() -> None:
    failed = _res("nonzero_exit", code=1)
    failed.oom_killed = True
    assert classify_exec(failed) == "resource_limit:memory"
    fine = _res("ok", code=0)  # a child killed for memory, the program coped and exited 0
    fine.oom_killed = True
    assert classify_exec(fine) is None


def test_classify_compile_messages_in_c_locale_and_clang() -> None:
    assert (
        classify_compile("a.c:1:5: error: 'x' undeclared (first use in this function)")
        == "compile_error:undeclared"
    )
    assert (
        classify_compile("a.cpp:3:1: error: use of undeclared identifier 'foo'")
        == "compile_error:undeclared"
    )
    assert (
        classify_compile("a.cpp:3:1: error: no matching function for call to 'f'")
        == "compile_error:type"
    )
    assert (
        classify_compile(
            "/usr/bin/ld: a.o: undefined reference to `g'\ncollect2: error: ld returned 1 exit status"
        )
        == "link_error"
    )
    assert (  # mpi-completion builds with -Werror=int-conversion
        classify_compile(
            "c.c:15:18: error: passing argument 1 of 'MPI_Send' makes pointer from integer "
            "without a cast [-Werror=int-conversion]"
        )
        == "compile_error:type"
    )
    assert classify_compile("t.v:3: syntax error\nI give up.") == "compile_error:syntax"
    assert classify_compile("something odd happened: error: ???") == "compile_error:other"


def test_detect_sanitizer() -> None:
    assert detect_sanitizer("x.c:3:5: runtime error: signed integer overflow") == "ubsan"
    assert detect_sanitizer("WARNING: ThreadSanitizer: data race") == "tsan"
    assert detect_sanitizer("all good") is None


def test_mpirun_rank_killed_by_signal_is_a_crash_not_an_exit_code() -> None:
    text = (
        "--------------------------------------------------------------------------\n"
        "mpirun noticed that process rank 1 with PID 0 on node sandbox exited on signal 11 "
        "(Segmentation fault).\n"
    )
    assert (
        classify_exec(ExecResult(ExecStatus.NONZERO_EXIT, 1, None, "", text, False, 0.1, 0.1, None))
        == "runtime_crash:SIGSEGV"
    )
    plain = ExecResult(ExecStatus.NONZERO_EXIT, 1, None, "", "error", False, 0.1, 0.1, None)
    assert classify_exec(plain) == "nonzero_exit"


_HEAD = "#include <signal.h>\n#include <stdio.h>\n#include <stdlib.h>\n#include <string.h>\n"
_SUM = "long s = 0; for (int i = 0; i < n; i++) s += a[i];"
CHOSEN = {
    # each one chose its class before: timeout:cpu, timeout:cpu, resource_limit:memory, ...
    "exit_152": ("exit(152);", "nonzero_exit"),
    "raise_sigxcpu": ("raise(SIGXCPU); return 0;", "runtime_crash:SIGXCPU"),
    "fake_oom_text": ('fputs("Killed\\nMemoryError\\nstd::bad_alloc\\n", stderr); exit(1);',
                      "nonzero_exit"),
    "raise_sigxfsz": ("raise(SIGXFSZ); return 0;", "runtime_crash:SIGXFSZ"),
    # (a CPU limit the candidate lowers itself: tests/sandboxes/test_status_observed.py)
    # a child killed for memory while the program answers correctly and exits 0: a pass
    "child_oom_right_answer": (
        "pid_t c = fork(); if (c == 0) { for (;;) { char *p = malloc(1 << 24); "
        "if (p) memset(p, 1, 1 << 24); } } waitpid(c, 0, 0); " + _SUM + " return s;", None),
}  # fmt: skip


async def test_a_candidate_cannot_choose_a_limit_class_in_a_real_run() -> None:
    sample = tiny_task(1).dataset[0]
    scorer = TinyScorer()
    head = _HEAD + "#include <sys/resource.h>\n#include <sys/wait.h>\n#include <unistd.h>\n"
    codes = [f"{head}long sum_array(const int *a, int n) {{ {body} }}\n" for body, _ in
             CHOSEN.values()]  # fmt: skip
    scores = await asyncio.gather(
        *(scorer.score(sample, Candidate(sample.id, 0, c)) for c in codes)
    )
    got = {name: s.failure_class for name, s in zip(CHOSEN, scores, strict=True)}
    assert got == {name: cls for name, (_, cls) in CHOSEN.items()}
