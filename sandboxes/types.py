"""Value types at the sandbox seam: what a caller asks for (`Limits`) and what happened
(`ExecResult`). A program that fails, crashes or times out is a *result*; only a broken
sandbox (cannot start, backend missing) raises `SandboxError`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum


class ExecStatus(StrEnum):
    """What happened to the payload. Exactly one applies; limits are checked first, so a
    process killed by SIGKILL because it reached its memory limit is MEMORY_LIMIT, not
    SIGNAL."""

    OK = "ok"  # exited with status 0
    NONZERO_EXIT = "nonzero_exit"  # exited with another status (`exit_code`)
    SIGNAL = "signal"  # killed by a signal it did not get from a limit (`signal`)
    WALL_TIMEOUT = "wall_timeout"  # still running at `Limits.wall_s`: the tree was killed
    CPU_LIMIT = "cpu_limit"  # used its CPU seconds (`cpu_limit_s`)
    MEMORY_LIMIT = "memory_limit"  # the cgroup (or RLIMIT_AS) memory limit killed it
    OUTPUT_LIMIT = "output_limit"  # wrote more than `Limits.output_bytes` to stdout/stderr
    FILE_SIZE_LIMIT = "file_size_limit"  # wrote a file past `Limits.file_bytes` (SIGXFSZ)
    PIDS_LIMIT = "pids_limit"  # a fork failed at `Limits.pids` and the program died of it
    SKIPPED_NO_GPU = "skipped_no_gpu"  # a CUDA program with `Limits.gpus` and no GPU here


@dataclass(frozen=True, slots=True)
class Limits:
    """What one exec may use. Every limit applies to the whole process tree, and reaching
    one is a status of the result (see `ExecStatus`), never an exception."""

    wall_s: float = 10.0
    cpu_s: float | None = None  # None: a backstop just above wall_s (see cpu_limit_s)
    memory_mb: int = 1024
    pids: int = 128
    output_bytes: int = 1 << 20  # stdout and stderr, each, captured while read
    file_bytes: int = 64 << 20  # largest file the program may write
    tmp_mb: int = 64  # size of the private /tmp
    network: bool = False
    gpus: int = 0
    # Added by the sandboxes package (defaults keep the seam unchanged):
    nofile: int = 256  # RLIMIT_NOFILE
    cpus: float | None = None  # CPU bandwidth quota in cores (cgroup), None: unlimited
    address_space_mb: int | None = None  # RLIMIT_AS; None: only where no memory cgroup


def cpu_limit_s(limits: Limits) -> float:
    """The CPU-time limit in force. Without an explicit `cpu_s` it is a backstop one second
    above the wall limit, so a single busy thread always meets the wall limit first (equal
    limits raced: the same hung testbench came out wall_timeout or cpu_limit run to run)."""
    return limits.cpu_s if limits.cpu_s is not None else limits.wall_s + 1.0


@dataclass(slots=True)
class ExecResult:
    """One exec's outcome. `stdout`/`stderr` are decoded as UTF-8 with replacement and cut
    at `Limits.output_bytes` each (`truncated`); `exit_code` is set for OK/NONZERO_EXIT,
    `signal` where a signal ended it; `limits_enforced` says which limits the host could
    really enforce (e.g. no memory cgroup: {"memory": False})."""

    status: ExecStatus
    exit_code: int | None
    signal: int | None
    stdout: str
    stderr: str
    truncated: bool
    wall_s: float
    cpu_s: float | None
    peak_memory_mb: float | None
    limits_enforced: dict[str, bool] = field(
        default_factory=dict
    )  # e.g. {"memory": True, "pids": True, ...}
    backend: str = ""
    # The cgroup recorded an OOM kill of some process in the tree. `status` is what happened
    # to the payload itself (memory_limit only when it was the one killed); a program whose
    # child was killed for memory and that still exited 0 is `ok`, with this flag set.
    oom_killed: bool = False

    @property
    def ok(self) -> bool:
        return self.status is ExecStatus.OK


class SandboxError(Exception):
    """The sandbox itself failed (backend missing, could not start, lost contact).
    Never raised for anything the payload did."""
