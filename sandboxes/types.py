"""Value types at the sandbox seam: what a caller asks for (`Limits`) and what happened
(`ExecResult`). A program that fails, crashes or times out is a *result*; only a broken
sandbox (cannot start, backend missing) raises `SandboxError`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum


class ExecStatus(StrEnum):
    OK = "ok"
    NONZERO_EXIT = "nonzero_exit"
    SIGNAL = "signal"
    WALL_TIMEOUT = "wall_timeout"
    CPU_LIMIT = "cpu_limit"
    MEMORY_LIMIT = "memory_limit"
    OUTPUT_LIMIT = "output_limit"
    FILE_SIZE_LIMIT = "file_size_limit"
    PIDS_LIMIT = "pids_limit"
    SKIPPED_NO_GPU = "skipped_no_gpu"


@dataclass(frozen=True, slots=True)
class Limits:
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
