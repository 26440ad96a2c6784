"""The recipes behind `sandboxes.toolchains`. Commands run inside the caller's sandbox, in
its run directory, so compile and run share files; sources are written there first."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from ..base import FileContent, Sandbox
from ..types import ExecResult, ExecStatus, Limits
from .diagnostics import Diagnostic, parse_gcc, parse_iverilog, parse_nvcc, parse_verilator

_versions: dict[str, str] = {}
_version_lock: asyncio.Lock | None = None


async def tool_version(tool: str, flag: str = "--version") -> str:
    """First line of `tool --version`, cached for the process (the sandbox sees the host's
    /usr read-only, so the host's answer is the sandbox's)."""
    if tool in _versions:
        return _versions[tool]
    try:
        proc = await asyncio.create_subprocess_exec(
            tool, flag, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT
        )
        out, _ = await asyncio.wait_for(proc.communicate(), 20)
        lines = [x.strip() for x in out.decode(errors="replace").splitlines() if x.strip()]
        if tool.endswith("nvcc"):  # the useful line is the last ("Cuda compilation tools, ...")
            lines = [x for x in lines if "release" in x] or lines
        ver = lines[0] if lines else "unknown"
    except (OSError, TimeoutError):
        ver = "missing"
    _versions[tool] = ver
    return ver


@dataclass(slots=True)
class CompileResult:
    exec_result: ExecResult
    diagnostics: list[Diagnostic]
    artifact: str | None  # path relative to the run directory; None when compiling failed
    tool_versions: dict[str, str] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.exec_result.ok and self.artifact is not None

    @property
    def errors(self) -> list[Diagnostic]:
        return [d for d in self.diagnostics if d.severity == "error"]


class Recipe:
    """Base recipe. Subclasses set the tools and build the command lines."""

    name: str
    compile_limits = Limits(wall_s=60, memory_mb=2048, pids=256, tmp_mb=256)
    run_limits = Limits(wall_s=10, memory_mb=1024, pids=128)
    versions_of: tuple[str, ...] = ()
    parser: Callable[[str], list[Diagnostic]] = staticmethod(parse_gcc)

    def __init__(self, name: str) -> None:
        self.name = name

    def compile_command(
        self, sources: Sequence[str], output: str, extra_flags: Sequence[str], mode: str
    ) -> list[str]:
        raise NotImplementedError

    def artifact_name(self, output: str, mode: str) -> str:
        return output

    async def versions(self) -> dict[str, str]:
        return {t: await tool_version(t) for t in self.versions_of}

    async def compile(
        self,
        sb: Sandbox,
        sources: Mapping[str, FileContent],
        *,
        output: str = "main",
        extra_flags: Sequence[str] = (),
        mode: str = "exe",
        limits: Limits | None = None,
        env: Mapping[str, str] | None = None,
    ) -> CompileResult:
        """Write sources into the sandbox and compile them. Only files with a compilable
        suffix go on the command line; headers etc. are just written."""
        names = [n for n in sources if self.is_source(n)]
        cmd = self.compile_command(names, output, extra_flags, mode)
        res = await sb.exec(cmd, files=sources, limits=limits or self.compile_limits, env=env)
        # The candidate shapes this text (`#error` echoes anything): parsed off the event
        # loop, so a long parse never stalls the other candidates' execs.
        diags = await asyncio.to_thread(self.parser, res.stdout + "\n" + res.stderr)
        artifact: str | None = self.artifact_name(output, mode)
        if not res.ok or artifact is None or not await sb.exists(artifact):
            artifact = None
        return CompileResult(res, diags, artifact, await self.versions())

    def is_source(self, name: str) -> bool:
        return name.endswith((".c", ".cc", ".cpp", ".cxx", ".C"))

    def run_command(self, artifact: str, args: Sequence[str], np: int | None) -> list[str]:
        return [artifact if "/" in artifact else f"./{artifact}", *args]

    def run_env(self, threads: int | None) -> dict[str, str]:
        return {}

    async def run(
        self,
        sb: Sandbox,
        artifact: str,
        args: Sequence[str] = (),
        *,
        np: int | None = None,
        threads: int | None = None,
        limits: Limits | None = None,
        stdin: FileContent | None = None,
        env: Mapping[str, str] | None = None,
    ) -> ExecResult:
        full_env = self.run_env(threads)
        full_env.update(env or {})
        return await sb.exec(
            self.run_command(artifact, args, np),
            limits=limits or self.run_limits,
            stdin=stdin,
            env=full_env,
        )


class CRecipe(Recipe):
    def __init__(self, name: str, *, cxx: bool = False) -> None:
        super().__init__(name)
        self.cxx = cxx
        # Subclasses (openmp, mpi) name their own tools at class level.
        self.versions_of = type(self).versions_of or (("g++",) if cxx else ("gcc",))

    def compiler(self, sources: Sequence[str]) -> str:
        return "g++" if self.cxx or any(not s.endswith(".c") for s in sources) else "gcc"

    def base_flags(self) -> list[str]:
        return ["-O2", "-Wall"] + (["-std=c++17"] if self.cxx else [])

    def compile_command(
        self, sources: Sequence[str], output: str, extra_flags: Sequence[str], mode: str
    ) -> list[str]:
        return [
            self.compiler(sources),
            *self.base_flags(),
            *extra_flags,
            *sources,
            "-o",
            output,
            "-lm",
        ]


class OpenMPRecipe(CRecipe):
    """gcc -fopenmp; `threads` becomes OMP_NUM_THREADS (default 2)."""

    versions_of = ("gcc",)

    def base_flags(self) -> list[str]:
        return ["-O2", "-Wall", "-fopenmp"]

    def run_env(self, threads: int | None) -> dict[str, str]:
        return {"OMP_NUM_THREADS": str(threads or 2)}


class MpiRecipe(CRecipe):
    """mpicc/mpicxx; run with mpirun -np N --oversubscribe over shared memory (the sandbox
    has only a private loopback). The payload runs as an unprivileged uid, so no
    --allow-run-as-root."""

    versions_of = ("mpicc", "mpirun")
    run_limits = Limits(wall_s=30, memory_mb=2048, pids=512)

    def compiler(self, sources: Sequence[str]) -> str:
        return "mpicxx" if any(not s.endswith(".c") for s in sources) else "mpicc"

    def run_command(self, artifact: str, args: Sequence[str], np: int | None) -> list[str]:
        exe = artifact if "/" in artifact else f"./{artifact}"
        return [
            "mpirun", "--oversubscribe", "--bind-to", "none",
            "--mca", "btl", "self,vader",
            "-np", str(np or 2), exe, *args,
        ]  # fmt: skip

    def run_env(self, threads: int | None) -> dict[str, str]:
        # No ssh/rsh exists or is needed for a single-node job; silence the agent lookup
        # and keep the session dir in the private /tmp.
        env = {"OMPI_MCA_plm_rsh_agent": "false", "OMPI_MCA_orte_tmpdir_base": "/tmp"}
        if threads:
            env["OMP_NUM_THREADS"] = str(threads)
        return env


class CudaRecipe(Recipe):
    """nvcc to an executable (mode "exe"), PTX ("ptx") or a cubin ("cubin", sm_90 unless
    an -arch flag is given). Running needs a visible GPU; otherwise `run` returns
    skipped_no_gpu without running anything."""

    versions_of = ("nvcc",)
    parser = staticmethod(parse_nvcc)
    compile_limits = Limits(wall_s=180, memory_mb=4096, pids=256, tmp_mb=1024)
    run_limits = Limits(wall_s=30, memory_mb=4096, pids=256, gpus=1)

    def is_source(self, name: str) -> bool:
        return name.endswith((".cu", ".c", ".cpp", ".cc"))

    def artifact_name(self, output: str, mode: str) -> str:
        return output if mode == "exe" or output.endswith(f".{mode}") else f"{output}.{mode}"

    def compile_command(
        self, sources: Sequence[str], output: str, extra_flags: Sequence[str], mode: str
    ) -> list[str]:
        flags = ["nvcc", "-O2", *extra_flags]
        if mode in ("ptx", "cubin"):
            if mode == "cubin" and not any(
                f.startswith(("-arch", "--gpu-architecture")) for f in extra_flags
            ):
                flags.append("-arch=sm_90")
            flags.append(f"-{mode}")
        elif mode != "exe":
            raise ValueError(f"cuda mode must be exe, ptx or cubin, not {mode!r}")
        return [*flags, *sources, "-o", self.artifact_name(output, mode)]

    async def run(
        self,
        sb: Sandbox,
        artifact: str,
        args: Sequence[str] = (),
        *,
        np: int | None = None,
        threads: int | None = None,
        limits: Limits | None = None,
        stdin: FileContent | None = None,
        env: Mapping[str, str] | None = None,
    ) -> ExecResult:
        lim = limits or self.run_limits
        if not sb.gpu_visible():
            # Never a false pass or fail: the program is not run at all.
            return ExecResult(
                status=ExecStatus.SKIPPED_NO_GPU, exit_code=None, signal=None, stdout="",
                stderr="no GPU visible (/dev/nvidia* absent); not run", truncated=False,
                wall_s=0.0, cpu_s=None, peak_memory_mb=None, limits_enforced={}, backend=sb.backend,
            )  # fmt: skip
        if lim.gpus < 1:
            lim = dataclasses.replace(lim, gpus=1)
        return await super().run(sb, artifact, args, limits=lim, stdin=stdin, env=env)


class IverilogRecipe(Recipe):
    """iverilog -g2012 -o <output>.vvp, then `vvp -n` (no interactive prompt on $stop).
    A testbench without $finish runs until the wall limit: keep one."""

    versions_of = ("iverilog",)
    parser = staticmethod(parse_iverilog)
    compile_limits = Limits(wall_s=30, memory_mb=1024, pids=64)
    run_limits = Limits(wall_s=10, memory_mb=1024, pids=64)

    async def versions(self) -> dict[str, str]:
        return {"iverilog": await tool_version("iverilog", "-V")}

    def is_source(self, name: str) -> bool:
        return name.endswith((".v", ".sv"))

    def artifact_name(self, output: str, mode: str) -> str:
        return output if output.endswith(".vvp") else f"{output}.vvp"

    def compile_command(
        self, sources: Sequence[str], output: str, extra_flags: Sequence[str], mode: str
    ) -> list[str]:
        return [
            "iverilog",
            "-g2012",
            *extra_flags,
            "-o",
            self.artifact_name(output, mode),
            *sources,
        ]

    def run_command(self, artifact: str, args: Sequence[str], np: int | None) -> list[str]:
        return ["vvp", "-n", artifact, *args]


class VerilatorRecipe(Recipe):
    """mode "lint": `verilator --lint-only -Wall -Wno-fatal` (artifact: the first source,
    success means no %Error); mode "binary": `verilator --binary --timing` into obj_dir/<output>.
    Pass --top-module NAME in extra_flags when there are several tops."""

    versions_of = ("verilator",)
    parser = staticmethod(parse_verilator)
    compile_limits = Limits(wall_s=180, memory_mb=4096, pids=256, tmp_mb=256)
    run_limits = Limits(wall_s=10, memory_mb=1024, pids=64)

    def is_source(self, name: str) -> bool:
        return name.endswith((".v", ".sv"))

    def artifact_name(self, output: str, mode: str) -> str:
        return f"obj_dir/{output}"

    async def compile(
        self,
        sb: Sandbox,
        sources: Mapping[str, FileContent],
        *,
        output: str = "main",
        extra_flags: Sequence[str] = (),
        mode: str = "binary",
        limits: Limits | None = None,
        env: Mapping[str, str] | None = None,
    ) -> CompileResult:
        if mode != "lint":
            return await super().compile(
                sb,
                sources,
                output=output,
                extra_flags=extra_flags,
                mode=mode,
                limits=limits,
                env=env,
            )
        names = [n for n in sources if self.is_source(n)]
        cmd = ["verilator", "--lint-only", "-Wall", "-Wno-fatal", *extra_flags, *names]
        res = await sb.exec(cmd, files=sources, limits=limits or self.compile_limits, env=env)
        # The candidate shapes this text (`#error` echoes anything): parsed off the event
        # loop, so a long parse never stalls the other candidates' execs.
        diags = await asyncio.to_thread(self.parser, res.stdout + "\n" + res.stderr)
        return CompileResult(
            res, diags, names[0] if res.ok and names else None, await self.versions()
        )

    def compile_command(
        self, sources: Sequence[str], output: str, extra_flags: Sequence[str], mode: str
    ) -> list[str]:
        if mode != "binary":
            raise ValueError(f"verilator mode must be lint or binary, not {mode!r}")
        return [
            "verilator", "--binary", "--timing", "-j", "2", "-Wno-fatal",
            "--Mdir", "obj_dir", "-o", output, *extra_flags, *sources,
        ]  # fmt: skip
