"""Several candidates compiled and simulated in ONE sandbox exec, each step behind vguard.

A sandbox per candidate costs more CPU than RTLLM's and VerilogEval's tiny designs cost to
compile and simulate (bubblewrap's namespaces and mounts, our launcher, the run directory:
~9 ms of ~28 ms per candidate). A batch pays that once for up to `BATCH_SIZE` candidates.
The candidates of a batch share the sandbox's uid, so each step of each candidate starts
through `vguard` (vguard.c): a Landlock domain that reads only the system and the candidate's
own directory and writes only its own `w/` (the compile) or nothing at all (the simulation,
which also gets the no-new-process, no-signal seccomp filter), with CPU and file-size
rlimits. A candidate therefore cannot read another's reference or rewrite another's source,
testbench or compiled design, before or after it runs, and its outputs are files the trusted
shell opened where no candidate may write.

Layout of the run directory (inside: /sandbox):

    c<i>/            harness sources (random names), <Top>.sv, the testbench's data files;
                     read-only to its steps
    c<i>/w/          iverilog's output (sim.vvp) and temporary files; writable by its compile
    o/<i>.cerr .sout .serr   the steps' outputs, opened by the trusted shell

Per candidate the trusted shell (bash, for $EPOCHREALTIME: no process to read the clock)
runs the compile, empties the harness sources, runs the simulation, and prints one status
line with the batch's random marker on its own stdout, which no candidate can reach.

Anything the batch cannot vouch for comes back as None and the scorer scores that candidate
on its own, in a sandbox of its own (`harness.compile_and_run`): the batch's exec failed
before the candidate's status line, vguard itself failed, a step died of a signal the batch
cannot attribute (SIGKILL where the cgroup killed something for memory, a crash of iverilog).
The screen of the compiled design and the verdict (`judge.py`) are the same for both paths.
"""

from __future__ import annotations

import logging
import math
import re
import secrets
import shlex
import signal as _signal
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from codegen_eval.trusted_cache import (
    SHARED_C_DIR,
    TrustedBuildError,
    cache_root,
    digest,
    entry,
    gcc_id,
    run_checked,
)
from sandboxes import ExecResult, ExecStatus, Limits, Sandbox, open_sandbox

from .harness import (
    COMPILE_FAILED,
    IVERILOG_FLAGS,
    VVP_MAX_BYTES,
    HarnessSpec,
    RunFiles,
    RunOutput,
    run_files,
    take_design,
)
from .tbgen import NONCE_PLUSARG

BATCH_SIZE = 8  # candidates per sandbox exec: the fixed cost is ~1 ms each at 8
# A compiled design larger than this is compiled again alone (with VVP_MAX_BYTES): the run
# directory is a tmpfs whose pages count against the exec's memory, so without a cap one
# candidate's huge design could starve the candidates after it of memory or space.
BATCH_VVP_MAX_BYTES = 32 << 20
HERE = Path(__file__).parent
CACHE_ENV = "CODEGEN_VERILOG_GUARD_CACHE"
GUARD_FAILED = 112  # vguard's exit code when a confinement step failed
_STATUS = re.compile(
    r"^(?P<marker>B[0-9a-f]{16}) (?P<i>\d+) (?P<c>\d+) (?P<s>\d+|-) (?P<t0>[\d.]+) "
    r"(?P<t1>[\d.]+) (?P<t2>[\d.]+)$",
    re.MULTILINE,
)


@dataclass(frozen=True, slots=True)
class Guard:
    root: Path  # bind this read-only into the sandbox
    path: Path


log = logging.getLogger(__name__)
_guard: Guard | None = None
_usable: dict[str, bool] = {}  # backend -> vguard's probe passed in its sandbox


async def guard() -> Guard:
    """vguard, built once per version of its source (static, so any sandbox can run it)."""
    global _guard
    if _guard is not None:
        return _guard
    src = HERE / "vguard.c"
    key = digest(gcc_id().encode(), (SHARED_C_DIR / "confine.h").read_bytes(), src.read_bytes())
    root = cache_root("codegen-lab-vguard", CACHE_ENV)

    async def build(out: Path) -> dict[str, int]:
        await run_checked(
            ["gcc", "-O2", "-static", f"-I{SHARED_C_DIR}", str(src), "-o", "vguard"], cwd=out
        )
        return {"vguard": 0o755}

    d = await entry(root, f"vguard-{key}", build)
    _guard = Guard(root=root, path=d / "vguard")
    return _guard


async def usable(backend: str | None) -> Guard | None:
    """The guard where batches can run in this backend's sandboxes, else None: bubblewrap
    only (the docker backend keeps a container per candidate), and vguard's probe must find
    Landlock inside the sandbox (the kernel's, behind the sandbox's own seccomp filter)."""
    from sandboxes import current_backend

    name = backend or current_backend()
    if name != "bwrap":
        return None
    try:
        g = await guard()
    except (TrustedBuildError, OSError) as exc:
        if name not in _usable:
            log.warning("Verilog batches are off (one sandbox per candidate): %s", exc)
        _usable[name] = False
        return None
    if name not in _usable:
        async with open_sandbox(name, extra_ro_binds=(str(g.root),)) as sb:
            r = await sb.exec([str(g.path), "probe"], limits=Limits(wall_s=30))
        _usable[name] = r.ok
        if not r.ok:
            log.warning(
                "Verilog batches are off (one sandbox per candidate): vguard's probe says %s",
                (r.stdout + r.stderr).strip()[:200] or r.status,
            )
    return g if _usable[name] else None


def _plan(i: int, run: RunFiles, files: dict[str, str], g: Guard, cpu: tuple[int, int]) -> str:
    """Candidate i's files (added to `files`, under c<i>/) and its part of the script."""
    d = f"c{i}"
    for name, text in run.files.items():
        files[f"{d}/{name}"] = text
    files[f"{d}/w/.keep"] = ""
    q = shlex.quote
    here, w = f"/sandbox/{d}", f"/sandbox/{d}/w"
    gd = q(str(g.path))
    compile_cpu, sim_cpu = cpu
    return (
        f"cd {here} || exit 90\n"
        "t0=$EPOCHREALTIME s=-\n"
        f"TMPDIR={w} {gd} compile {here} {w} {compile_cpu} {BATCH_VVP_MAX_BYTES} iverilog "
        f"{' '.join(IVERILOG_FLAGS)} -s {q(run.tb_top)} -o w/sim.vvp "
        f"{' '.join(q(n) for n in run.order)} </dev/null >/sandbox/o/{i}.cerr 2>&1\n"
        "c=$? t1=$EPOCHREALTIME\n"
        # iverilog exits with its error count, mod 256: 256 errors read as success
        f"[ $c = 0 ] && [ ! -s w/sim.vvp ] && c={COMPILE_FAILED}\n"
        "if [ $c = 0 ]; then\n"
        + "".join(f"  : > {q(n)}\n" for n in run.harness_sources)
        + f"  {gd} sim {here} {w} {sim_cpu} {Limits().output_bytes} vvp -n w/sim.vvp -none "
        f"+{NONCE_PLUSARG}={run.nonce} </dev/null >/sandbox/o/{i}.sout 2>/sandbox/o/{i}.serr\n"
        "  s=$?\nfi\n"
    )


def _step_status(rc: int, oom: bool) -> tuple[ExecStatus, int | None, int | None] | None:
    """(status, exit code, signal) of a step from the shell's $?, None when the batch cannot
    vouch for it (the candidate is then scored alone)."""
    if rc == GUARD_FAILED:
        return None
    if rc < 128:
        return (ExecStatus.OK if rc == 0 else ExecStatus.NONZERO_EXIT), rc, None
    sig = rc - 128
    if sig == _signal.SIGXFSZ:
        return ExecStatus.OUTPUT_LIMIT, None, sig
    if sig == _signal.SIGKILL and oom:
        return None  # the cgroup's OOM killer, or the CPU limit's hard kill: not ours to say
    return ExecStatus.SIGNAL, None, sig


async def compile_and_run_batch(
    sb: Sandbox,
    items: Sequence[tuple[HarnessSpec, str]],
    g: Guard,
    *,
    compile_wall_s: float,
    sim_wall_s: float,
    memory_mb: int = 1024,
) -> list[RunOutput | None]:
    """A RunOutput per candidate, as `harness.compile_and_run` would give it, or None where
    the candidate must be scored on its own. `sb` must bind `g.root` read-only."""
    files: dict[str, str] = {"o/.keep": ""}
    marker = "B" + secrets.token_hex(8)
    cpu = (max(1, math.ceil(compile_wall_s)), max(1, math.ceil(sim_wall_s)))
    runs = [run_files(spec, code) for spec, code in items]
    script = ["set +e\n"]
    for i, run in enumerate(runs):
        part = _plan(i, run, files, g, cpu)
        script.append(part + f'echo "{marker} {i} $c $s $t0 $t1 $EPOCHREALTIME"\n')
    per = compile_wall_s + 2 * sim_wall_s
    # The batch gets one candidate's memory, not more: no candidate may get further in a
    # batch than alone. Earlier candidates' files (tmpfs pages) can only leave less, and a
    # step the OOM killer ends is scored again alone.
    limits = Limits(wall_s=per * len(items), memory_mb=memory_mb, pids=64)
    res = await sb.exec(["/bin/bash", "-c", "".join(script)], files=files, limits=limits)
    done = {int(m["i"]): m for m in _STATUS.finditer(res.stdout) if m["marker"] == marker}
    ran = sorted(done)
    cap = Limits().output_bytes
    # Everything read back in two calls (a thread hop each), not four per candidate.
    logs = await sb.read_files([f"o/{i}.{x}" for i in ran for x in _LOGS], max_bytes=cap + 1)
    compiled = [i for i in ran if done[i]["c"] == "0"]
    vvps = await sb.read_files([f"c{i}/w/sim.vvp" for i in compiled], max_bytes=VVP_MAX_BYTES)
    n = len(_LOGS)
    logs_of = {i: logs[k * n : (k + 1) * n] for k, i in enumerate(ran)}
    vvp = dict(zip(compiled, vvps, strict=True))
    return [
        _read_back(run, done[i], res, logs_of[i], vvp.get(i), cap) if i in done else None
        for i, run in enumerate(runs)
    ]


_LOGS = ("cerr", "sout", "serr")


def _read_back(
    run: RunFiles,
    m: re.Match[str],
    batch: ExecResult,
    logs: list[bytes | OSError | ValueError],  # .cerr .sout .serr, read up to cap + 1 bytes
    vvp: bytes | OSError | ValueError | None,
    cap: int,
) -> RunOutput | None:
    compiled = m["c"] == "0"
    if compiled:
        step = _step_status(int(m["s"]), batch.oom_killed) if m["s"] != "-" else None
    else:
        # iverilog exits with its error count, so $? >= 128 may be a signal (its CPU limit,
        # a crash, the batch's cap on a compiled design) or 64+ errors, and 112 may be
        # vguard's own failure: the single path, whose sandbox reports how iverilog really
        # ended, decides those (found by the batches' red team: 76 undeclared names read as
        # a compile timeout). Below that, a plain failed compile.
        rc = int(m["c"])
        step = None if rc >= 128 or rc == GUARD_FAILED else (ExecStatus.NONZERO_EXIT, rc, None)
    if step is None:
        return None
    status, code, sig = step
    if isinstance(logs[0], bytes) and len(logs[0]) > cap:
        # alone, the sandbox stops a compiler that writes more than its output cap: so here
        # (found by the batches' red team: 1.2 MB of warnings passed batched, failed alone)
        status, code, sig, compiled = ExecStatus.OUTPUT_LIMIT, None, None, False
    cerr, sout, serr = (_text(x, cap) for x in logs) if compiled else (_text(logs[0], cap), "", "")
    if not compiled and "No space left" in cerr:
        return None  # the batch's run directory filled up: not this candidate's doing
    er = ExecResult(
        status=status,
        exit_code=code,
        signal=sig,
        stdout=sout,
        stderr=cerr + serr,
        truncated=max(len(sout), len(serr), len(cerr)) >= cap,
        wall_s=float(m["t2"]) - float(m["t0"]),
        cpu_s=None,
        peak_memory_mb=None,
        limits_enforced=batch.limits_enforced,
        backend=batch.backend,
        oom_killed=False,
    )
    out = RunOutput(er, run.tag, run.nonce, run.names)
    out.compile_log = cerr
    if not compiled:
        return out
    out.compiled = True
    out.sim_stdout, out.sim_stderr = sout, serr
    take_design(
        out, vvp if vvp is not None else FileNotFoundError("sim.vvp"), empty="sim.vvp is empty"
    )
    return out


def _text(got: bytes | OSError | ValueError, cap: int) -> str:
    return got[:cap].decode("utf-8", errors="replace") if isinstance(got, bytes) else ""


__all__ = ["BATCH_SIZE", "Guard", "compile_and_run_batch", "guard", "usable"]
