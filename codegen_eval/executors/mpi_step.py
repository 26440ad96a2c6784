"""MPI ranks as a Slurm step: `srun --mpi=pmix --ntasks=NP --cpus-per-task=T` over a program
the sandbox built, each rank confined by rank_confine.sh.

Why not mpirun in the sandbox (what the scorers do by default, and still the most isolated
choice on one node): mpirun in a private network namespace cannot reach a second node, and a
cluster's ranks are launched by Slurm. Debian's Open MPI initialises under `--mpi=pmix` only
(pmi2 and none fail in MPI_Init), PMIx 4 meets its server over tcp4://127.0.0.1 and
authenticates the rank as the job's user, and Open MPI's shared-memory transport needs one
PID namespace and a shared /dev/shm among the ranks of a node: so the confinement keeps the
network, the PID namespace and the uid, and takes the rest away (see rank_confine.sh).

Limits: wall time here (the step is killed, then `--time` is Slurm's backstop), CPU time,
file size and address space as rlimits of srun, which Slurm propagates to every rank
(PropagateResourceLimits defaults to ALL), output capped while it is read.

The counts that speedup and efficiency use are the ones Slurm granted, read from each rank's
environment (SLURM_STEP_NUM_TASKS, SLURM_CPUS_PER_TASK, SLURM_CPUS_ON_NODE), not the ones
asked for: on a 2-CPU node np=4 runs overcommitted on 2 CPUs.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
import resource
import shutil
import stat
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from sandboxes import ExecResult, ExecStatus, Limits
from sandboxes.types import cpu_limit_s

__all__ = [
    "MPI_LAUNCHER_ENV",
    "STEP_DIR_ENV",
    "Granted",
    "StepRun",
    "run_mpi_step",
    "srun_steps_requested",
    "step_dir",
]

STEP_DIR_ENV = "CODEGEN_SLURM_STEP_DIR"
# "sandbox" (mpirun in the sandbox, the default) or "srun" (ranks as Slurm steps): set by
# `codegen-eval run --executor slurm --slurm-mpi-steps` for the workers.
MPI_LAUNCHER_ENV = "CODEGEN_MPI_LAUNCHER"
MAX_COLLECTED_BYTES = 64 << 20  # per file the ranks leave for the caller


def srun_steps_requested() -> bool:
    return os.environ.get(MPI_LAUNCHER_ENV, "sandbox") == "srun"


def step_dir() -> Path:
    """Where step directories go: $CODEGEN_SLURM_STEP_DIR, else the working directory (a
    slurm worker runs in its submission directory, on storage every node sees)."""
    return Path(os.environ.get(STEP_DIR_ENV) or os.getcwd())


CONFINE = Path(__file__).with_name("rank_confine.sh")
# As root (a one-machine cluster run by root), Open MPI refuses to start without these.
_ROOT_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}


@dataclass(frozen=True, slots=True)
class Granted:
    ranks: int  # tasks in the step
    threads: int  # CPUs per task
    cpus: int  # CPUs of the allocation on the ranks' nodes (summed over nodes)
    nodes: tuple[str, ...]

    def metrics(self, label: str) -> dict[str, float]:
        """The counts granted, as score metrics of one launch config (`label`): speedup and
        efficiency read these, not the counts asked for."""
        return {
            f"ranks_granted@{label}": float(self.ranks),
            f"cpus_granted@{label}": float(self.cpus),
            f"nodes_granted@{label}": float(len(self.nodes)),
        }

    @property
    def parallelism(self) -> int:
        """What efficiency divides by: the work units that could really run at once."""
        return max(1, min(self.ranks * self.threads, self.cpus))


@dataclass(frozen=True, slots=True)
class StepRun:
    result: ExecResult
    granted: Granted | None  # None when no rank started
    files: dict[str, bytes]  # the `collect` files the ranks left in their /tmp (b"" if none)


def _read_left_file(path: Path, max_bytes: int) -> bytes:
    """A file a rank left: only a regular file, never followed through a link the rank planted
    (it names a host path), never a FIFO that would block us, and capped."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return b""
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
            return b""
        return fh.read(max_bytes + 1)


def _granted(stepdir: Path) -> Granted | None:
    per_node: dict[str, int] = {}
    ranks = threads = 0
    for f in stepdir.glob("granted.*"):
        parts = f.read_text().split()
        if len(parts) != 5 or not all(p.isdigit() for p in parts[:3]):
            continue
        ranks, threads = int(parts[0]), int(parts[1])
        per_node[parts[3]] = int(parts[2])
    if not per_node:
        return None
    return Granted(ranks, threads, sum(per_node.values()), tuple(sorted(per_node)))


async def _read_capped(stream: asyncio.StreamReader, cap: int, over: asyncio.Event) -> bytes:
    buf = bytearray()
    while chunk := await stream.read(65536):
        if len(buf) < cap:
            buf += chunk[: cap - len(buf)]
        if len(buf) >= cap:
            over.set()
    return bytes(buf)


def _step_ids(step: Path) -> list[str]:
    """The "job.step" ids the ranks wrote (rank_confine.sh)."""
    ids = {f.read_text().split()[-1] for f in step.glob("granted.*") if f.read_text().strip()}
    return [i for i in ids if i.split(".")[0].isdigit()]


async def _stop(proc: asyncio.subprocess.Process, step: Path) -> None:
    """End a step that ran too long or printed too much. SIGTERM makes srun signal the ranks
    and end the step; a srun killed outright leaves its step (and the allocation it made)
    running, measured: for minutes. So: SIGTERM, then SIGKILL, then scancel the step by the
    ids its ranks wrote, and the job too when srun made it (no allocation around us)."""
    with contextlib.suppress(ProcessLookupError):
        proc.terminate()
    try:
        await asyncio.wait_for(proc.wait(), 5.0)
    except TimeoutError:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, 9)
        await proc.wait()
    targets = _step_ids(step)
    if "SLURM_JOB_ID" not in os.environ:  # srun's own allocation: cancel the job itself
        targets = [i.split(".")[0] for i in targets]
    if targets:
        with contextlib.suppress(OSError):
            cancel = await asyncio.create_subprocess_exec("scancel", *sorted(set(targets)))
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(cancel.wait(), 20.0)


def _spread(np: int, srun_args: Sequence[str]) -> list[str]:
    """Inside a job that holds several nodes, the step uses as many of them as it has ranks
    (srun would otherwise pack an overcommitted step onto the first node)."""
    nodes = os.environ.get("SLURM_JOB_NUM_NODES", "")
    if (
        not nodes.isdigit()
        or int(nodes) < 2
        or any(a.startswith(("-N", "--nodes")) for a in srun_args)
    ):
        return []
    return [f"--nodes={min(np, int(nodes))}"]


async def run_mpi_step(
    program: bytes,
    np: int,
    *,
    args: Sequence[str] = (),
    threads: int = 1,
    limits: Limits | None = None,
    env: dict[str, str] | None = None,
    workdir: str | os.PathLike[str],
    srun_args: tuple[str, ...] = (),
    files: Mapping[str, bytes] | None = None,
    collect: Sequence[str] = (),
    collect_max_bytes: int = MAX_COLLECTED_BYTES,
) -> StepRun:
    """Run `program` (an executable's bytes) with `args` as one Slurm step of `np` ranks.
    Inside a job the step uses the job's allocation; outside one, srun asks for its own.
    `workdir` must be visible from every node the ranks land on. The ranks start in a /tmp
    they share, holding `files` (plain names); what they leave there under the names in
    `collect` comes back in `StepRun.files`, each at most collect_max_bytes + 1 bytes (so a
    caller can tell an oversized file)."""
    limits = limits or Limits(wall_s=60.0)
    step = Path(workdir) / f"step-{uuid.uuid4().hex[:12]}"
    for sub in ("bin", "tmp", "shm"):
        (step / sub).mkdir(parents=True, mode=0o755)
    (step / "bin" / "prog").write_bytes(program)
    (step / "bin" / "prog").chmod(0o755)
    for name, data in (files or {}).items():
        if "/" in name or name in ("", ".", ".."):
            raise ValueError(f"step input files are plain names, not {name!r}")
        (step / "tmp" / name).write_bytes(data)
    for sub in ("tmp", "shm"):
        (step / sub).chmod(0o1777)
    run_env = dict(os.environ)
    run_env.update(env or {})
    run_env.update(STEPDIR=str(step), OMP_NUM_THREADS=str(threads), **_ROOT_ENV)
    run_env.setdefault("OMPI_MCA_btl_vader_single_copy_mechanism", "none")  # across userns
    # PMIx's shared-memory store (gds ds21/ds12: process-shared locks in a segment the
    # node's PMIx server maps into each rank) let a rank in its own user namespace jump to
    # NULL now and then (SIGSEGV at address 0, no frames: 2 runs in 13 of the two-node MPI
    # test here, PMIx 4.2.2); the hash store fetches the same data over the server's socket
    run_env.setdefault("PMIX_MCA_gds", "hash")
    spread = _spread(np, srun_args)
    argv = [
        "srun", "--mpi=pmix", *spread, f"--ntasks={np}", f"--cpus-per-task={threads}", "--overcommit",
        "--kill-on-bad-exit=1", f"--time={max(1, math.ceil(limits.wall_s / 60) + 1)}",
        "--job-name=cgeval-step", "--quiet", *srun_args, str(CONFINE), "/step/prog", *args,
    ]  # fmt: skip

    def set_limits() -> None:  # in the child before exec: srun propagates them to the ranks
        cpu = math.ceil(cpu_limit_s(limits))
        resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu))
        resource.setrlimit(resource.RLIMIT_FSIZE, (limits.file_bytes, limits.file_bytes))
        mem = limits.memory_mb << 20
        resource.setrlimit(resource.RLIMIT_AS, (mem, mem))
        os.setsid()

    t0 = time.monotonic()
    proc = await asyncio.create_subprocess_exec(
        *argv,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=run_env,
        cwd=step,
        preexec_fn=set_limits,  # rlimits before srun starts: it propagates them
    )
    over = asyncio.Event()
    assert proc.stdout is not None and proc.stderr is not None
    readers = asyncio.gather(
        _read_capped(proc.stdout, limits.output_bytes, over),
        _read_capped(proc.stderr, limits.output_bytes, over),
    )
    status: ExecStatus | None = None
    waiter = asyncio.ensure_future(proc.wait())
    flood = asyncio.ensure_future(over.wait())
    try:
        done, _ = await asyncio.wait({waiter, flood}, timeout=limits.wall_s,
                                     return_when=asyncio.FIRST_COMPLETED)  # fmt: skip
        if waiter not in done:
            status = ExecStatus.OUTPUT_LIMIT if flood in done else ExecStatus.WALL_TIMEOUT
            await _stop(proc, step)
    finally:
        flood.cancel()
    out, err = await readers
    wall = time.monotonic() - t0
    rc = proc.returncode
    if status is None:
        status = ExecStatus.OK if rc == 0 else ExecStatus.NONZERO_EXIT
    granted = _granted(step)
    left = {name: _read_left_file(step / "tmp" / name, collect_max_bytes) for name in collect}
    shutil.rmtree(step, ignore_errors=True)
    result = ExecResult(
        status, rc if rc is None or rc >= 0 else None, -rc if rc and rc < 0 else None,
        out.decode(errors="replace"), err.decode(errors="replace"), over.is_set(), wall,
        None, None, {"wall": True, "cpu": True, "file_size": True, "memory": True},
        "slurm-step",
    )  # fmt: skip
    return StepRun(result, granted, left)
