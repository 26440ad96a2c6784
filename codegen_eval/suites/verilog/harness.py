"""Compile and simulate one design against its harness, in one sandbox exec.

    iverilog <flags> -s <tb> -o sim.vvp <harness files...> [reset.sv] <Top>.sv   (stderr)
    [ -s sim.vvp ] || exit 97          # iverilog exits with its error count mod 256
    : > <harness sources>              # the reference's source is gone before anything runs
    echo CGE-COMPILED <random>         (stderr: the end of the compiler's output)
    ulimit -t <sim seconds>; ulimit -f 0; exec vvp -n sim.vvp -none +cge_nonce=<random>

One exec instead of two (compile, then run) saves a sandbox start per candidate, and only
builtins run between the compiler and the simulator. The screen (`screen.py`) reads sim.vvp
afterwards, so the file it reads must be the one that ran: under `ulimit -f 0` (hard and soft)
the simulation can write no byte to any file (Linux refuses a write at any offset >= the
limit, SIGXFSZ), so a candidate with file I/O can at most truncate sim.vvp on open, and an
empty sim.vvp is `tamper:compiled_design`. (This replaced a `sha256sum` of sim.vvp printed
before `vvp` started: one process less per candidate.) Nothing the run printed is trusted
unless the screen passes, in which case the candidate could print nothing at all. `-none`
turns off the testbench's VCD dump, which no verdict reads; a testbench that writes files
fails here, and with it its reference (measured: the problem is excluded).

The harness files are written under names with a random prefix, so a candidate cannot name
them in an `` `include `` (which the text check forbids anyway), and the candidate is compiled
last, so its macros and directives cannot change the harness (`reset.sv` holds a
`` `resetall `` so that it still starts from the defaults it would have had as the first file,
as upstream VerilogEval compiles it).
"""

from __future__ import annotations

import hashlib
import math
import re
import secrets
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field

from sandboxes import ExecResult, ExecStatus, Limits, Sandbox
from sandboxes.toolchains import parse_iverilog

from .tbgen import NONCE_PLUSARG, OUTPUT_PREFIX, TAG, VERDICT_PREFIX
from .vvp import Design, parse

# VerilogEval's flags (Makefile.in / execution.py), used for every design.
IVERILOG_FLAGS = ("-Wall", "-Winfloop", "-Wno-timescale", "-g2012")
COMPILE_FAILED = 97  # the script's exit code when iverilog failed
VVP_MAX_BYTES = 256 << 20  # the largest compiled design read back
_COMPILED = "CGE-COMPILED"
_VERDICT = re.compile(
    rf"^{VERDICT_PREFIX} (?P<nonce>[0-9a-f]+) errors=(?P<errors>\d+) samples=(?P<samples>\d+)"
    r" timeout=(?P<timeout>\d+)\s*$",
    re.MULTILINE,
)
_OUTPUT = re.compile(
    rf"^{OUTPUT_PREFIX} (?P<nonce>[0-9a-f]+) (?P<name>\S+) (?P<errors>\d+) (?P<first>-?\d+)\s*$",
    re.MULTILINE,
)


@dataclass(frozen=True, slots=True)
class HarnessSpec:
    """How a sample is compiled and judged; built from its files and metadata."""

    top: str  # the candidate's module (TopModule, top_module)
    tb_top: str  # the testbench's module, may hold TAG
    harness: tuple[tuple[str, str], ...]  # (role, text) in compile order; text may hold TAG
    reset_candidate: bool = True  # `resetall before the candidate
    rules: str = "builtin"  # builtin | verilogeval-v2 | verilogeval-v1
    # Files the testbench reads at run time under their own names ($readmemh, $fopen: RTLLM's
    # expected values). Kept through the run; the screen forbids the candidate any file I/O.
    data: tuple[tuple[str, str], ...] = ()

    def key_material(self) -> bytes:
        h = hashlib.sha256()
        for part in (self.top, self.tb_top, str(self.reset_candidate), self.rules, *IVERILOG_FLAGS):
            h.update(part.encode() + b"\0")
        for role, text in self.harness:
            h.update(role.encode() + b"\0" + hashlib.sha256(text.encode()).digest())
        for name, text in self.data:
            h.update(b"data\0" + name.encode() + b"\0" + hashlib.sha256(text.encode()).digest())
        return h.digest()


@dataclass(frozen=True, slots=True)
class Verdict:
    errors: int
    samples: int
    timed_out: bool
    per_output: dict[str, tuple[int, int]]  # name -> (mismatches, first mismatch time or -1)


def parse_verdict(stdout: str, nonce: str) -> Verdict | None:
    """The testbench's summary for this run's nonce; None when it printed none."""
    found = parse_verdicts(stdout, nonce)
    return found[0] if found else None


def parse_verdicts(stdout: str, nonce: str) -> list[Verdict]:
    want = nonce.lower().rjust(32, "0")
    outs = {
        o["name"]: (int(o["errors"]), int(o["first"]))
        for o in _OUTPUT.finditer(stdout)
        if o["nonce"].rjust(32, "0") == want
    }
    return [
        Verdict(int(m["errors"]), int(m["samples"]), m["timeout"] != "0", outs)
        for m in _VERDICT.finditer(stdout)
        if m["nonce"].rjust(32, "0") == want
    ]


@dataclass(slots=True)
class RunOutput:
    exec_result: ExecResult
    tag: str
    nonce: str
    names: dict[str, str]  # role (tb.sv, ref.sv) -> the file name used in this run
    compiled: bool = False
    compile_log: str = ""  # iverilog's own output
    sim_stdout: str = ""
    sim_stderr: str = ""
    design: Design | None = None
    vvp_problem: str = ""  # why sim.vvp could not be read back faithfully
    extra: dict[str, float] = field(default_factory=dict)

    @property
    def phase(self) -> str:
        return "sim" if self.compiled else "compile"

    def clean(self, text: str) -> str:
        """Messages with this run's random file names and tag replaced by stable ones."""
        for role, name in self.names.items():
            text = text.replace(name, role)
        return text.replace(self.tag, "")


def spec_files(spec: HarnessSpec, tag: str) -> tuple[dict[str, str], dict[str, str]]:
    """(files to write, role -> file name). Harness names carry a random prefix."""
    prefix = "h" + secrets.token_hex(8)
    files: dict[str, str] = {}
    names: dict[str, str] = {}
    for i, (role, text) in enumerate(spec.harness):
        name = f"{prefix}_{i}_{role}"
        files[name] = text.replace(TAG, tag)
        names[role] = name
    if spec.reset_candidate:
        files[f"{prefix}_reset.sv"] = "`resetall\n"
    return files, names


@dataclass(frozen=True, slots=True)
class RunFiles:
    """One run's files and names, fresh random ones each run (alone and in a batch)."""

    tag: str
    nonce: str
    files: dict[str, str]  # name -> text: harness, candidate, the testbench's data files
    names: dict[str, str]  # role (tb.sv, ref.sv) -> the file name used in this run
    order: list[str]  # compile order: the harness, then the candidate
    harness_sources: list[str]  # emptied before the simulation starts
    tb_top: str


def run_files(spec: HarnessSpec, code: str) -> RunFiles:
    tag = "t" + secrets.token_hex(6)
    cand_name = f"{spec.top}.sv"  # verilator's DECLFILENAME wants file = module name
    files, names = spec_files(spec, tag)
    order = [*files, cand_name]
    files[cand_name] = code
    harness_sources = [n for n in files if n != cand_name]
    files.update(spec.data)  # after the list of sources to empty: the run reads them
    tb_top = spec.tb_top.replace(TAG, tag)
    return RunFiles(tag, secrets.token_hex(16), files, names, order, harness_sources, tb_top)


async def compile_and_run(
    sb: Sandbox,
    spec: HarnessSpec,
    code: str,
    *,
    compile_wall_s: float,
    sim_wall_s: float,
    memory_mb: int = 1024,
) -> RunOutput:
    run = run_files(spec, code)
    q = shlex.quote
    # No process beyond iverilog and vvp: the rest are shell builtins. The marker is random,
    # so no compiler message quoting the candidate's text can forge the end of the compile.
    marker = f"{_COMPILED} {secrets.token_hex(8)}"
    script = (
        f"iverilog {' '.join(IVERILOG_FLAGS)} -s {q(run.tb_top)} -o sim.vvp "
        f"{' '.join(q(n) for n in run.order)} >&2 || exit {COMPILE_FAILED}\n"
        # iverilog exits with its error count, mod 256: 256 errors read as success
        f"[ -s sim.vvp ] || exit {COMPILE_FAILED}\n"
        + "".join(f": > {q(n)}\n" for n in run.harness_sources)
        + f"echo {marker} >&2\n"
        # The simulation's own limit, in CPU seconds (a builtin, and fair on a loaded
        # machine); the sandbox's wall limit is the backstop for the whole script. No file
        # may be written from here on (see the module's docstring).
        + f"ulimit -t {max(1, math.ceil(sim_wall_s))}\nulimit -f 0\n"
        f"exec vvp -n sim.vvp -none +{NONCE_PLUSARG}={run.nonce}\n"
    )
    limits = Limits(wall_s=compile_wall_s + 2 * sim_wall_s, memory_mb=memory_mb, pids=64)
    res = await sb.exec(["/bin/sh", "-c", script], files=run.files, limits=limits)
    out = RunOutput(res, run.tag, run.nonce, run.names)
    at = res.stderr.find(marker + "\n")
    if at < 0:
        out.compile_log = res.stderr
        return out
    out.compiled = True
    out.compile_log = res.stderr[:at]
    out.sim_stderr = res.stderr[at + len(marker) + 1 :]
    out.sim_stdout = res.stdout
    [data] = await sb.read_files(["sim.vvp"], max_bytes=VVP_MAX_BYTES)
    take_design(out, data, empty="sim.vvp was emptied while the simulation ran")
    return out


def take_design(out: RunOutput, data: bytes | OSError | ValueError, *, empty: str) -> None:
    """The compiled design read back into `out.design`, or in `out.vvp_problem` why it
    cannot be trusted (unreadable, empty, not vvp assembly): `tamper:compiled_design`."""
    if not isinstance(data, bytes):
        out.vvp_problem = f"sim.vvp could not be read back: {data}"
    elif not data.strip():
        out.vvp_problem = empty
    else:
        try:
            out.design = parse(data.decode("utf-8", errors="replace"))
        except ValueError as exc:  # VvpSyntaxError
            out.vvp_problem = f"sim.vvp does not read as vvp assembly: {exc}"


def compile_errors(out: RunOutput) -> list[str]:
    """iverilog's error lines exactly as it wrote them (`sorry:` keeps its wording), with
    this run's file names made stable."""
    lines = [
        out.clean(line)
        for line in out.compile_log.splitlines()
        if any(d.severity == "error" for d in parse_iverilog(line))
    ]
    return lines or [out.clean(x) for x in out.compile_log.splitlines() if x.strip()][:20]


def classify_compile_error(messages: Sequence[str], *, stage: str) -> str:
    """A detail for compile_error from iverilog's messages. stage "candidate" or "harness"."""
    text = "\n".join(messages).lower()
    if "syntax error" in text:
        return "syntax"
    if "root module" in text:
        return "missing_top"
    if "does not have any delay" in text:
        return "infinite_loop"  # iverilog proves an always block can never yield
    if "sorry" in text:
        return "unsupported"
    if stage == "harness" or re.search(r"\bports?\b", text):
        # The candidate compiles on its own terms; what breaks is how it plugs into the harness.
        return "interface"
    if any(k in text for k in ("unable to bind", "not declared", "unknown module", "undeclared")):
        return "undeclared"
    if any(k in text for k in ("width", "type", "cannot be driven", "not a valid l-value")):
        return "type"
    return "other"


def error_stage(out: RunOutput, messages: Sequence[str], top: str) -> str:
    """ "candidate" when an error is reported in the candidate's file, else "harness"."""
    cand = f"{top}.sv:"
    return "candidate" if any(m.startswith(cand) for m in messages) else "harness"


def status_is_limit(res: ExecResult) -> bool:
    return res.status in (
        ExecStatus.MEMORY_LIMIT,
        ExecStatus.OUTPUT_LIMIT,
        ExecStatus.FILE_SIZE_LIMIT,
        ExecStatus.PIDS_LIMIT,
    )


__all__ = [
    "COMPILE_FAILED",
    "IVERILOG_FLAGS",
    "HarnessSpec",
    "RunFiles",
    "RunOutput",
    "Verdict",
    "classify_compile_error",
    "compile_and_run",
    "compile_errors",
    "error_stage",
    "parse_verdict",
    "parse_verdicts",
    "run_files",
    "status_is_limit",
    "take_design",
]
