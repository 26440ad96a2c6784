"""A status says what the sandbox observed, not what an exit code looks like (real sandbox).

Before: bwrap hands its caller 128+N for a payload killed by signal N, and the runner read
every such code as that signal, so `exit(152)` was cpu_limit, `exit(153)` file_size_limit and
`exit(137)` a SIGKILL; a payload raising SIGXCPU/SIGXFSZ on itself, or lowering its own
RLIMIT_CPU, got the sandbox's limit classes; and a program that exited 0 with its answer after
a child of its own was OOM-killed was memory_limit. Now the sandbox's init reports the main
process's wait status and CPU time on a pipe only it holds, a limit class needs the limit's
own evidence (CPU time at our RLIMIT_CPU, a file at our size cap, the payload itself killed
while the cgroup counted an OOM kill), and a child's OOM is ExecResult.oom_killed."""

from __future__ import annotations

import signal
from collections.abc import AsyncIterator

import pytest

from sandboxes import ExecResult, ExecStatus, Limits, Sandbox, open_sandbox

BACKENDS = ["bwrap", "unsafe-local"]
pytestmark = pytest.mark.filterwarnings("ignore:sandbox backend 'unsafe-local'")
# a child that touches 600 MiB (over a 256 MiB memory cgroup) and is OOM-killed
_HOG = "x = bytearray(600 << 20); x[::4096] = b'1' * len(x[::4096])"
_PARENT = (
    "import subprocess, sys\n"
    f"p = subprocess.run([sys.executable, '-c', {_HOG!r}])\n"
    "print('answer 42, child', p.returncode)\n"
    "sys.exit({code})\n"
)


@pytest.fixture(params=BACKENDS)
async def sb(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[Sandbox]:
    monkeypatch.setenv("CODEGEN_SANDBOX_ALLOW_UNSAFE", "1")
    async with open_sandbox(request.param) as s:
        yield s


async def _run(sb: Sandbox, script: str, **limits: object) -> ExecResult:
    return await sb.exec(["sh", "-c", script], limits=Limits(**limits))  # type: ignore[arg-type]


@pytest.mark.parametrize("code", [152, 153, 137, 139])
async def test_an_exit_code_that_looks_like_a_signal_is_an_exit(sb: Sandbox, code: int) -> None:
    r = await _run(sb, f"exit {code}")
    assert (r.status, r.exit_code, r.signal) == (ExecStatus.NONZERO_EXIT, code, None)


@pytest.mark.parametrize("sig", [signal.SIGXCPU, signal.SIGXFSZ, signal.SIGKILL])
async def test_a_limit_signal_raised_by_the_payload_is_a_signal(sb: Sandbox, sig: int) -> None:
    r = await _run(sb, f"kill -{signal.Signals(sig).name[3:]} $$")
    assert (r.status, r.signal) == (ExecStatus.SIGNAL, sig), r


async def test_limits_the_payload_lowered_itself_are_not_the_sandboxs(sb: Sandbox) -> None:
    # soft CPU limit 1 s of its own: a real SIGXCPU from the kernel, far below ours (11 s)
    r = await _run(sb, "ulimit -St 1; while :; do :; done")
    assert (r.status, r.signal) == (ExecStatus.SIGNAL, signal.SIGXCPU), r
    r = await _run(sb, "ulimit -t 1; while :; do :; done")  # soft = hard: SIGKILL
    assert (r.status, r.signal) == (ExecStatus.SIGNAL, signal.SIGKILL), r
    # a file size limit of its own: a real SIGXFSZ, a file far below ours
    r = await _run(sb, "ulimit -f 1; exec head -c 100000 /dev/zero > f")
    assert (r.status, r.signal) == (ExecStatus.SIGNAL, signal.SIGXFSZ), r


@pytest.mark.parametrize(("code", "status"), [(0, ExecStatus.OK), (1, ExecStatus.NONZERO_EXIT)])
async def test_a_childs_oom_leaves_the_payloads_own_status(
    sb: Sandbox, code: int, status: ExecStatus
) -> None:
    r = await sb.exec(["python3", "-c", _PARENT.format(code=code)], limits=Limits(memory_mb=256))
    assert "answer 42, child -9" in r.stdout
    assert (r.status, r.exit_code, r.oom_killed) == (status, code, True), r


async def test_the_sandboxs_own_limits_keep_their_classes(sb: Sandbox) -> None:
    r = await _run(sb, "while :; do :; done", cpu_s=1, wall_s=10)
    assert r.status is ExecStatus.CPU_LIMIT, r
    r = await _run(sb, "exec head -c 3000000 /dev/zero > big", file_bytes=1 << 20)
    assert (r.status, r.signal) == (ExecStatus.FILE_SIZE_LIMIT, signal.SIGXFSZ), r
    r = await _run(sb, "head -c 3000000 /dev/zero > big", file_bytes=1 << 20)  # sh exits 153
    assert (r.status, r.exit_code) == (ExecStatus.FILE_SIZE_LIMIT, 153), r
    r = await sb.exec(["python3", "-c", _HOG], limits=Limits(memory_mb=256))
    assert (r.status, r.oom_killed) == (ExecStatus.MEMORY_LIMIT, True), r
    r = await _run(sb, "kill -SEGV $$")
    assert (r.status, r.signal, r.oom_killed) == (ExecStatus.SIGNAL, signal.SIGSEGV, False)


async def test_the_inits_report_cannot_be_written_by_the_payload() -> None:
    """Every descriptor the payload can reach gets a forged report; none is the init's."""
    forge = (
        "for f in /proc/self/fd/* /proc/1/fd/*; do "
        "echo 'killed 24 cpu_ms 99999' > $f; done 2>/dev/null; exit 3"
    )
    async with open_sandbox("bwrap") as sb:
        r = await _run(sb, forge)
    assert (r.status, r.exit_code, r.signal) == (ExecStatus.NONZERO_EXIT, 3, None), r
