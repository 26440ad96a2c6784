"""Building and launching ParEval programs in our sandbox the way upstream does.

Upstream builds each model's driver object once (`make` in drivers/cpp), then per candidate
links it with the benchmark driver and generated-code.hpp:

    {CXX} {CXXFLAGS} -I<dir of generated-code> -DDRIVER_PROBLEM_SIZE="<size>" \
        -Icpp -Icpp/models -DUSE_<MODEL> cpp/models/<model>-driver.o cpp/benchmarks/.../cpu.cc

and runs the binary once per launch config. Here the same command line is run inside the
sandbox with the checkout's files laid out under `cpp/` and the generated code under `gen/`;
srun becomes mpirun (MPI models) or a plain exec, and thread counts reach the program as the
argument upstream gives it. With --slurm-mpi-steps, MPI models' runs are Slurm steps again
(`srun --mpi=pmix`, see codegen_eval/executors/mpi_step.py). Driver objects contain no
candidate code, so they are compiled once per scorer in a sandbox of their own and copied into
each candidate's sandbox.
"""

from __future__ import annotations

import asyncio
import math
import shlex
from collections.abc import Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

from codegen_eval.executors.mpi_step import (
    MAX_COLLECTED_BYTES,
    Granted,
    run_mpi_step,
    srun_steps_requested,
    step_dir,
)
from codegen_eval.readers.pareval.checkout import LaunchConfig, ModelSpec
from sandboxes import ExecResult, Limits, Sandbox, open_sandbox, toolchains

BUILD_LIMITS = Limits(wall_s=120, memory_mb=4096, pids=256, tmp_mb=512)


def link_command(
    spec: ModelSpec, bench_dir: str, problem_size: str, gen_dir: str = "gen"
) -> list[str]:
    """Upstream's compile command for one candidate, as argv (shlex-split like upstream)."""
    text = (
        f'{spec.cxx} {spec.cxxflags} -I{gen_dir} -DDRIVER_PROBLEM_SIZE="{problem_size}" '
        f"-Icpp -Icpp/models {spec.macro} cpp/models/{spec.driver_obj} "
        f"{bench_dir}/{spec.bench_file} -o a.out"
    )
    return shlex.split(text)


def object_command(spec: ModelSpec) -> list[str]:
    """The Makefile's rule for the model's driver object."""
    return shlex.split(
        f"{spec.obj_cxx} {spec.obj_flags} -o cpp/models/{spec.driver_obj} "
        f"-c cpp/models/{spec.driver_src}"
    )


def run_command(
    spec: ModelSpec, cfg: LaunchConfig, exe: str = "./a.out"
) -> tuple[list[str], dict[str, str]]:
    """argv and environment of one launch config. OMP_NUM_THREADS mirrors srun's -c (the
    cores a rank may use); the drivers set the team size from their argument themselves."""
    env = {"OMP_NUM_THREADS": str(cfg.threads)}
    if spec.mpi:
        mpi = toolchains.get("mpi")
        env.update(mpi.run_env(None))
        # srun would give each rank cores of its own; on a shared machine a rank waiting in
        # MPI yields its core instead of spinning.
        env["OMPI_MCA_mpi_yield_when_idle"] = "1"
        return mpi.run_command(exe, list(cfg.argv), cfg.procs), env
    return [exe, *cfg.argv], env


@dataclass(frozen=True, slots=True)
class Launched:
    result: ExecResult
    files: dict[str, bytes]  # the `outputs` the run left (b"" for one it did not write)
    granted: Granted | None  # the counts Slurm granted, for a run launched as a step


async def launch(
    sb: Sandbox,
    spec: ModelSpec,
    cfg: LaunchConfig,
    exe: str,
    limits: Limits,
    *,
    inputs: Mapping[str, bytes] | None = None,
    outputs: Sequence[str] = (),
    max_output_bytes: int = MAX_COLLECTED_BYTES,
) -> Launched:
    """Run the built `exe` of `sb` at one launch config: in the sandbox (mpirun for MPI models),
    or, for MPI models when srun steps are asked for (--slurm-mpi-steps), as a Slurm step of
    cfg.procs ranks with cfg.threads CPUs each, as upstream's srun lines launch it. `inputs`
    are placed beside the program and `outputs` read back from beside it."""
    if spec.mpi and srun_steps_requested():
        step = await run_mpi_step(
            await sb.read_file(exe), cfg.procs, args=cfg.argv, threads=cfg.threads,
            limits=limits, env={"OMPI_MCA_mpi_yield_when_idle": "1"}, workdir=step_dir(),
            files=inputs, collect=outputs, collect_max_bytes=max_output_bytes,
        )  # fmt: skip
        return Launched(step.result, step.files, step.granted)
    for name in outputs:  # never a stale file from another config
        await sb.write_file(name, b"")
    for name, data in (inputs or {}).items():
        await sb.write_file(name, data)
    argv, env = run_command(spec, cfg, exe=f"./{exe}")
    r = await sb.exec(argv, limits=limits, env=env)
    files: dict[str, bytes] = {}
    for name in outputs:
        try:
            files[name] = await sb.read_file(name, max_bytes=max_output_bytes + 1)
        except (FileNotFoundError, PermissionError, NotADirectoryError):
            files[name] = b""
    return Launched(r, files, None)


class CpuTokens:
    """A weighted semaphore over the executor's cores: a compile holds one, a run holds as
    many as it has ranks x threads (at most all). Keeps every core busy without timing a
    2-thread run on a core another job is using."""

    def __init__(self, total: int) -> None:
        self.total = max(1, total)
        self._free = self.total
        self._cond: asyncio.Condition | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def _condition(self) -> asyncio.Condition:
        loop = asyncio.get_running_loop()
        if self._cond is None or self._loop is not loop:
            self._cond, self._loop, self._free = asyncio.Condition(), loop, self.total
        return self._cond

    @asynccontextmanager
    async def hold(self, n: int) -> Any:
        n = min(max(1, n), self.total)
        cond = self._condition()
        async with cond:
            await cond.wait_for(lambda: self._free >= n)
            self._free -= n
        try:
            yield
        finally:
            async with cond:
                self._free += n
                cond.notify_all()


class DriverObjects:
    """Each model's driver object, compiled once (per scorer) from the checkout's source."""

    def __init__(self, sources: Mapping[str, str], backend: str | None) -> None:
        self.sources = dict(sources)  # driver_src name -> text
        self.backend = backend
        self._objects: dict[str, bytes | str] = {}  # model -> object bytes, or the error
        self._locks: dict[str, asyncio.Lock] = {}

    async def get(self, spec: ModelSpec, tokens: CpuTokens) -> bytes | str:
        lock = self._locks.setdefault(spec.name, asyncio.Lock())
        async with lock:
            if spec.name not in self._objects:
                self._objects[spec.name] = await self._compile(spec, tokens)
            return self._objects[spec.name]

    async def _compile(self, spec: ModelSpec, tokens: CpuTokens) -> bytes | str:
        src = self.sources.get(spec.driver_src)
        if src is None:
            return f"no drivers/cpp/models/{spec.driver_src} in the checkout"
        async with tokens.hold(1), open_sandbox(self.backend) as sb:
            r = await sb.exec(  # the whole models/ directory, as `make` sees it
                object_command(spec),
                files={f"cpp/models/{name}": text for name, text in self.sources.items()},
                limits=BUILD_LIMITS,
            )
            if not r.ok:
                return f"the driver object did not build: {r.stderr.strip()[-400:]}"
            return await sb.read_file(f"cpp/models/{spec.driver_obj}")


# ------------------------------------------------------------------------ output parsing
def parse_driver_output(stdout: str) -> tuple[str, dict[str, float]]:
    """Strict reading of a driver's stdout: ("pass" | "fail" | problem, values).

    The drivers print `Validation: PASS|FAIL`, then on PASS `Time:` and `BestSequential:`.
    Upstream takes the last line of each kind anywhere in stdout. Here each must appear once,
    in that order, with finite non-negative values, so a candidate that prints its own lines
    has to stop the driver from printing (which the screen and the exit checks make harder).
    Other lines (a candidate's debug output) are allowed, as upstream allows them."""
    seen: list[tuple[str, str]] = []
    for line in stdout.splitlines():
        for key in ("Validation", "Time", "BestSequential"):
            if line.startswith(key + ":"):
                seen.append((key, line.split(":", 1)[1].strip()))
    keys = [k for k, _ in seen]
    if not keys:
        return "no validation line in the driver's output", {}
    if keys[0] != "Validation" or seen[0][1] not in ("PASS", "FAIL"):
        return "the driver's output does not start with a validation line", {}
    if seen[0][1] == "FAIL":
        return ("fail", {}) if keys == ["Validation"] else ("driver lines after a FAIL", {})
    if keys != ["Validation", "Time", "BestSequential"]:
        return f"driver lines out of sequence: {keys}", {}
    values: dict[str, float] = {}
    for key, text in seen[1:]:
        try:
            v = float(text)
        except ValueError:
            return f"{key} is not a number: {text!r}", {}
        if not math.isfinite(v) or v < 0:
            return f"{key} is not a finite non-negative time: {text!r}", {}
        values[key] = v
    return "pass", values


def timing_consistent(values: dict[str, float], wall_s: float, niter: int) -> bool:
    """The driver times `niter` calls of the candidate and `niter` of the baseline inside the
    run, so the reported means cannot add up to more than the run's own wall time."""
    spent = niter * (values.get("Time", 0.0) + values.get("BestSequential", 0.0))
    return spent <= wall_s * 1.05 + 0.05


def exec_summary(r: ExecResult) -> str:
    return f"{r.status} (exit {r.exit_code}) after {r.wall_s:.2f}s"


async def write_files(sb: Sandbox, files: Mapping[str, str | bytes]) -> None:
    for name, content in files.items():
        await sb.write_file(name, content)
