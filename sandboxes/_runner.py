"""Launch one payload process tree, read its output under a cap, enforce the wall and CPU
limits, kill everything it left, and classify what happened. Shared by the bwrap and
unsafe-local backends (the difference is the argv they build and the isolation it gives).
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import logging
import math
import os
import resource
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from . import _launcher
from ._cleanup import any_file_at_least, run_dir_full
from .cgroups import RunCgroup
from .types import ExecResult, ExecStatus, Limits, SandboxError, cpu_limit_s

log = logging.getLogger(__name__)
_CPU_POLL_S = 0.1
_ESCALATE_S = 5.0  # SIGKILL a launcher that has not exited this long after our SIGTERM
# CPU seconds below the RLIMIT_CPU soft limit that still count as having reached it: the
# process's time is read in clock ticks and the cgroup's is accounted apart (a busy loop
# killed at 1 s showed 0.98 s there). A payload can only lower its limit by whole seconds.
_CPU_SLACK_S = 0.25


@dataclass(slots=True)
class LaunchSpec:
    argv: list[str]
    env: dict[str, str]
    cwd: str
    uid: int | None  # drop to this uid (and gid) in the child; None: keep ours
    gid: int | None
    rlimits: list[tuple[int, int, int]]
    cgroup: RunCgroup | None
    pass_fds: tuple[int, ...] = ()
    # bwrap reports a payload killed by signal N as exit code 128+N (like a shell).
    shell_style_signals: bool = False
    enforced: dict[str, bool] = field(default_factory=dict)
    # Read end of the sandbox init's report (init.c --report-fd): how the payload's main
    # process really ended and its CPU time. The runner reads and closes it after the run.
    report_fd: int | None = None


@dataclass(frozen=True, slots=True)
class PayloadEnd:
    """How the payload's main process ended, as its reaper (our init) saw it: an exit code
    or a signal, never both, and its own CPU seconds (None: unknown)."""

    exit_code: int | None
    signal: int | None
    cpu_s: float | None = None


def read_report(fd: int) -> PayloadEnd | None:
    """The init's one report line (`exited 0 cpu_ms 12` / `killed 24 cpu_ms 11000`), or None
    when there is none: the init was killed before it could write (an OOM kill of the group,
    our kill) or did not run. Only the init holds the pipe's write end."""
    os.set_blocking(fd, False)
    data = b""
    with contextlib.suppress(BlockingIOError, OSError):
        while len(data) < 4096 and (chunk := os.read(fd, 4096)):
            data += chunk
    parts = data.decode("ascii", errors="replace").split()
    if len(parts) != 4 or parts[0] not in ("exited", "killed") or parts[2] != "cpu_ms":
        return None
    try:
        value, ms = int(parts[1]), int(parts[3])
    except ValueError:
        return None
    cpu = ms / 1000 if ms >= 0 else None
    return PayloadEnd(value, None, cpu) if parts[0] == "exited" else PayloadEnd(None, value, cpu)


def rlimits_for(
    limits: Limits, *, memory_cgroup: bool, pids_cgroup: bool
) -> list[tuple[int, int, int]]:
    """RLIMITs applied to every payload. RLIMIT_AS is off by default where a memory cgroup
    holds, because nvcc and Open MPI reserve far more address space than they touch."""
    cpu = math.ceil(cpu_limit_s(limits))
    out = [
        (resource.RLIMIT_CPU, cpu, cpu + 1),  # SIGXCPU, then SIGKILL a second later
        (resource.RLIMIT_FSIZE, limits.file_bytes, limits.file_bytes),
        (resource.RLIMIT_NOFILE, limits.nofile, limits.nofile),
        (resource.RLIMIT_CORE, 0, 0),
    ]
    # NPROC counts every process of the uid on the host (other sandboxes too), so with a
    # pids cgroup it is only a generous backstop; without one it is the fork-bomb limit.
    nproc = limits.pids if not pids_cgroup else max(4 * limits.pids, 4096)
    out.append((resource.RLIMIT_NPROC, nproc, nproc))
    as_mb = limits.address_space_mb
    if as_mb is None and not memory_cgroup:
        as_mb = limits.memory_mb * 4  # address space is looser than RSS; a coarse backstop
    if as_mb is not None:
        out.append((resource.RLIMIT_AS, as_mb << 20, as_mb << 20))
    return out


_PR_SET_PDEATHSIG = 1
_libc = ctypes.CDLL(None, use_errno=True)


def _make_preexec(spec: LaunchSpec) -> Callable[[], None]:
    procs = spec.cgroup.procs_files() if spec.cgroup else []
    rlimits = spec.rlimits
    uid, gid = spec.uid, spec.gid

    def preexec() -> None:  # runs in the forked child: keep it to raw syscalls
        pid = str(os.getpid()).encode()
        for path in procs:  # join the cgroup while still root, before anything can fork
            fd = os.open(path, os.O_WRONLY)
            try:
                os.write(fd, pid)
            finally:
                os.close(fd)
        for res, soft, hard in rlimits:
            resource.setrlimit(res, (soft, hard))
        if uid is not None and gid is not None:
            os.setgroups([])
            os.setresgid(gid, gid, gid)
            os.setresuid(uid, uid, uid)
        # If this Python process dies (SIGKILL, crash), take bwrap and so the whole
        # namespace with it. Set last: a credential change clears the death signal.
        _libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)

    return preexec


class _Collector(asyncio.SubprocessProtocol):
    """Keeps the first `cap` bytes of stdout and of stderr and drains the rest to EOF.

    Draining matters: a pipe nobody reads is paused by asyncio's flow control and never
    reaches EOF, and asyncio (3.11) wakes `Process.wait()` only once every pipe has closed.
    A payload that filled its (enlarged) pipe and exited hung the harness that way, for
    good. Here the process exit is its own event, independent of the pipes.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop, cap: int, on_overflow: Callable[[], None]):
        self.cap = cap
        self.on_overflow = on_overflow
        self.bufs = {1: bytearray(), 2: bytearray()}
        self.overflowed: set[int] = set()
        self.exited: asyncio.Future[None] = loop.create_future()
        self.closed: asyncio.Future[None] = loop.create_future()  # exited and pipes at EOF

    def pipe_data_received(self, fd: int, data: bytes) -> None:
        buf = self.bufs.get(fd)
        if buf is None or fd in self.overflowed:
            return  # over the cap already: drop it, the tree is being killed
        room = self.cap - len(buf)
        buf += data[:room]
        if len(data) > room:  # a byte past the cap (an exactly full buffer is not over)
            self.overflowed.add(fd)
            self.on_overflow()

    def process_exited(self) -> None:
        if not self.exited.done():
            self.exited.set_result(None)

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.closed.done():
            self.closed.set_result(None)


def _kill_pid(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, signal.SIGKILL)


def _killpg(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


async def run(spec: LaunchSpec, limits: Limits, stdin: bytes | None, backend: str) -> ExecResult:
    cg = spec.cgroup
    exe = _launcher.launcher_path()
    if exe is not None:
        # vfork+exec of the tiny launcher; it gates the target (cgroup, rlimits, uid drop)
        # in its own child and reaps whatever that child orphans.
        argv = _launcher.launcher_argv(
            exe,
            spec.argv,
            cgroup_procs=cg.procs_files() if cg else [],
            rlimits=spec.rlimits,
            uid=spec.uid,
            gid=spec.gid,
        )
        preexec: Callable[[], None] | None = None
    else:
        argv, preexec = spec.argv, _make_preexec(spec)
    loop = asyncio.get_running_loop()
    reason: list[ExecStatus] = []  # why we killed it, first reason wins
    escalation: list[asyncio.TimerHandle] = []
    pid = -1

    def hard_kill() -> None:
        if transport.get_returncode() is None:
            log.warning("sandbox launcher %d ignored SIGTERM; SIGKILL", pid)
            _kill_pid(pid)

    def stop_tree(escalate: bool = True) -> None:
        if pid < 0:  # not spawned yet (output can arrive first): done right after the spawn
            return
        if exe is not None:
            # The launcher SIGKILLs its child's process group and keeps reaping until
            # nothing is left; SIGKILLing the launcher itself would orphan bwrap's init.
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGTERM)
            if escalate and not escalation:  # it exits at once; never wait forever on it
                escalation.append(loop.call_later(_ESCALATE_S, hard_kill))
        else:
            _killpg(pid)
        if cg is not None:
            cg.kill_all()

    def kill(why: ExecStatus) -> None:
        if not reason:
            reason.append(why)
        stop_tree()

    t0 = time.monotonic()
    try:
        transport, collector = await loop.subprocess_exec(
            lambda: _Collector(loop, limits.output_bytes, lambda: kill(ExecStatus.OUTPUT_LIMIT)),
            *argv,
            stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=spec.cwd,
            env=spec.env,
            start_new_session=True,
            preexec_fn=preexec,
            pass_fds=spec.pass_fds,
        )
    except FileNotFoundError as exc:
        raise SandboxError(f"cannot start {spec.argv[0]!r}: {exc}") from exc
    except (OSError, subprocess.SubprocessError) as exc:
        raise SandboxError(f"sandbox launch failed: {exc}") from exc
    finally:
        for fd in spec.pass_fds:
            with contextlib.suppress(OSError):
                os.close(fd)
    pid = transport.get_pid()
    if reason:  # output went over the cap before the spawn returned: kill now that we can
        stop_tree()
    if stdin is not None:
        _feed(transport, stdin)
    cpu_cap = (
        limits.cpu_s
        if (limits.cpu_s is not None and cg and cg.enforced.get("cpu_account"))
        else None
    )

    async def watchdog() -> None:
        deadline = t0 + limits.wall_s
        while True:
            now = time.monotonic()
            if now >= deadline:
                kill(ExecStatus.WALL_TIMEOUT)
                return
            # Whole-tree CPU (all processes, all threads) from the cgroup, which RLIMIT_CPU,
            # being per process, cannot bound.
            if cpu_cap is not None and cg is not None:
                used = cg.cpu_seconds()
                if used is not None and used > cpu_cap:
                    kill(ExecStatus.CPU_LIMIT)
                    return
                await asyncio.sleep(min(_CPU_POLL_S, deadline - now))
            else:
                await asyncio.sleep(deadline - now)

    dog = asyncio.create_task(watchdog())
    try:
        # Shielded: cancelling this task would otherwise cancel `exited` itself, and the
        # cleanup below, which waits for it, would SIGKILL the launcher at once, in the middle
        # of reaping its tree (bwrap's init was left a zombie under the caller).
        await asyncio.shield(collector.exited)
        # Nothing may outlive the run: the namespace died with bwrap, but sweep the group
        # and the cgroup anyway (unsafe-local relies on this). The launcher already swept
        # its child's group before it exited.
        if exe is None:
            _killpg(pid)
        if cg is not None:
            cg.kill_all()
        # the rest of the output, up to EOF; a pipe still held open by something we could
        # not kill is cut off here
        await asyncio.wait([collector.closed], timeout=2.0)
    finally:
        dog.cancel()
        for h in escalation:
            h.cancel()
        try:
            if transport.get_returncode() is None:  # cancelled from outside: take it down
                stop_tree(escalate=False)
                if exe is None:
                    _kill_pid(pid)
                # the launcher exits once it has swept its tree: bounded, never forever
                await asyncio.wait([collector.exited], timeout=_ESCALATE_S)
        finally:
            transport.close()  # SIGKILLs a launcher that is somehow still there
            await asyncio.gather(dog, return_exceptions=True)
    rc = transport.get_returncode()
    assert rc is not None  # `exited` resolves only after asyncio has the exit status
    out, err = collector.bufs[1], collector.bufs[2]
    wall = time.monotonic() - t0
    cpu = cg.cpu_seconds() if cg else None
    peak = cg.peak_memory_bytes() if cg else None
    oom = cg.oom_killed() if cg else False
    pids_hit = cg.pids_hit() if cg else False
    end = None
    if spec.report_fd is not None:
        end = read_report(spec.report_fd)
    status, exit_code, sig = classify(
        rc,
        killed_for=reason[0] if reason else None,
        oom=oom,
        pids_hit=pids_hit,
        cpu_s=cpu,
        limits=limits,
        shell_style=spec.shell_style_signals,
        end=end,
    )
    if (status is ExecStatus.NONZERO_EXIT or sig == signal.SIGXFSZ) and not reason:
        # A file really at the size cap (or the run directory full) is the limit, whatever
        # the payload made of EFBIG/ENOSPC or SIGXFSZ; SIGXFSZ alone it can raise itself.
        if await asyncio.to_thread(sweep_file_size, spec.cwd, limits.file_bytes):
            status = ExecStatus.FILE_SIZE_LIMIT
    return ExecResult(
        status=status,
        exit_code=exit_code,
        signal=sig,
        stdout=out.decode("utf-8", errors="replace"),
        stderr=err.decode("utf-8", errors="replace"),
        truncated=bool(reason and reason[0] is ExecStatus.OUTPUT_LIMIT),
        wall_s=wall,
        cpu_s=cpu,
        peak_memory_mb=None if peak is None else peak / (1 << 20),
        limits_enforced=dict(spec.enforced),
        backend=backend,
        oom_killed=oom,
    )


def _feed(transport: asyncio.SubprocessTransport, data: bytes) -> None:
    """Hand stdin to the pipe transport: it writes as the payload reads, and closes the pipe
    once the data is out (or drops it when the payload closed its end)."""
    pipe = transport.get_pipe_transport(0)
    if pipe is None:
        return
    assert isinstance(pipe, asyncio.WriteTransport)
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
        pipe.write(data)
    pipe.close()


def classify(
    rc: int,
    *,
    killed_for: ExecStatus | None,
    oom: bool,
    pids_hit: bool,
    cpu_s: float | None,
    limits: Limits,
    shell_style: bool,
    end: PayloadEnd | None = None,
) -> tuple[ExecStatus, int | None, int | None]:
    """The status of a run from what the sandbox observed, never from what an exit code
    looks like: a payload can `exit(152)`, raise SIGXCPU or SIGKILL on itself, lower its own
    rlimits, or let a child of its own be killed for memory.

    `rc` is the launcher's return code (exact for unsafe-local, whose launcher reaps the
    payload itself); `end` the init's report of the payload's main process (bwrap). Without
    a report, a shell-style 128+N from bwrap is read as signal N: bwrap's own pid 1 (no C
    compiler) or an init killed before it reported (an OOM kill of the whole group, our own
    kill): then the cgroup's counters or our kill decide.

    - memory_limit: the cgroup recorded an OOM kill AND the payload itself was SIGKILLed (or
      its init could not report). A child killed for memory while the payload exited on its
      own leaves the payload's status (`ok` when it exited 0), with ExecResult.oom_killed.
    - cpu_limit: our watchdog killed the tree for CPU, or the payload died of SIGXCPU/SIGKILL
      with its CPU time (its own, else the tree's) at our RLIMIT_CPU soft limit.
    - file_size_limit: decided by the caller's sweep (a file at the cap), not by SIGXFSZ.
    """
    exit_code, sig, own_cpu = _payload_end(rc, end, shell_style)
    failed = sig is not None or exit_code != 0
    # bwrap without the init's report: its code may stand for the init's death (killed with
    # the whole group for memory), so it cannot clear the payload of an OOM kill
    unreported = shell_style and end is None
    if oom and (sig == signal.SIGKILL or (unreported and failed)):
        return ExecStatus.MEMORY_LIMIT, exit_code, sig
    if killed_for in (ExecStatus.OUTPUT_LIMIT, ExecStatus.CPU_LIMIT):
        return killed_for, exit_code, sig
    used = own_cpu if own_cpu is not None else cpu_s
    at_limit = used is not None and used >= math.ceil(cpu_limit_s(limits)) - _CPU_SLACK_S
    if killed_for is None and sig in (signal.SIGXCPU, signal.SIGKILL) and at_limit:
        return ExecStatus.CPU_LIMIT, exit_code, sig  # RLIMIT_CPU: SIGXCPU, then SIGKILL
    if pids_hit and (killed_for is not None or failed):
        return ExecStatus.PIDS_LIMIT, exit_code, sig
    if killed_for is not None:
        return killed_for, exit_code, sig
    if sig is not None:
        return ExecStatus.SIGNAL, exit_code, sig
    if exit_code != 0:
        return ExecStatus.NONZERO_EXIT, exit_code, sig
    return ExecStatus.OK, exit_code, sig


def _payload_end(
    rc: int, end: PayloadEnd | None, shell_style: bool
) -> tuple[int | None, int | None, float | None]:
    """(exit code, signal, the main process's own CPU seconds) of the payload."""
    if end is not None:
        return end.exit_code, end.signal, end.cpu_s
    if rc < 0:  # the launcher re-raises the signal its child died of
        return None, -rc, None
    if shell_style and 128 < rc <= 128 + 64:
        return rc, rc - 128, None
    return rc, None, None


def sweep_file_size(root: str, file_bytes: int) -> bool:
    """True when the payload ran into a size cap without dying of SIGXFSZ (it saw EFBIG or
    ENOSPC and may just exit non-zero): some file under root reached the per-file cap, or
    the capped run directory is full (space or inodes)."""
    return run_dir_full(Path(root)) or any_file_at_least(root, file_bytes)
