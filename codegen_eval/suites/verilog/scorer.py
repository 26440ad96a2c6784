"""Judge a Verilog candidate by simulating it against a reference with Icarus Verilog.

Pipeline (one sandbox per score, so the run directory is private to the candidate):

1. screen the source: no `module <top>` -> compile_error:missing_top; system tasks that could
   read the run's nonce or end the simulation early -> compile_error:forbidden_construct;
2. compile the candidate alone (`iverilog -s <top>`): its own syntax / declaration errors
   are reported as such, and a hierarchical reference into the testbench (which only exists
   in the full build) fails here, so a candidate cannot read the reference's outputs or
   write the testbench's counters;
3. compile candidate + reference + testbench; an error now is an interface mismatch;
4. run `vvp -n sim.vvp +cge_nonce=<random 128-bit hex>` under a wall limit. The verdict is
   the `CGE-VERDICT <nonce> errors=N samples=M timeout=T` line with *this run's* nonce; text
   a candidate prints (say a fake "Mismatches: 0 in 100 samples") carries no nonce and is
   ignored. With a known sample count, a short count is a failure too;
5. lint the candidate with `verilator --lint-only -Wall -Wno-fatal`: warnings and errors
   are recorded in metrics; lint errors fail the sample only with strict_lint=True (Icarus
   accepted the design, and Verilator is stricter than the language about some constructs).

Testbenches carry ``__TAG__`` in every name; each run substitutes a fresh random tag.
"""

from __future__ import annotations

import re
import secrets
import time
from dataclasses import dataclass

from codegen_eval.types import Candidate, FailureClass, Sample, Score
from sandboxes import ExecStatus, Limits, Sandbox, open_sandbox, toolchains

from .tbgen import NONCE_PLUSARG, OUTPUT_PREFIX, TAG, VERDICT_PREFIX

# Candidate files may not use these: they read plusargs or files (where the nonce lives),
# write files, or end the simulation before the testbench reports.
FORBIDDEN_TASKS = (
    "$value$plusargs", "$test$plusargs", "$fopen", "$fclose", "$fgets", "$fgetc", "$fscanf",
    "$fread", "$fwrite", "$fdisplay", "$fstrobe", "$fmonitor", "$readmemh", "$readmemb",
    "$writememh", "$writememb", "$system", "$finish", "$stop", "$dumpfile", "$dumpvars",
    "$sreadmemh", "$sreadmemb", "$ungetc", "$rewind", "$fseek", "$ftell", "$feof",
)  # fmt: skip
_COMMENTS_STRINGS = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"', re.DOTALL)
_TASK_NAME = re.compile(r"\$[A-Za-z_][\w$]*")
_INCLUDE = re.compile(r"^\s*`include\b", re.MULTILINE)
_VERDICT = re.compile(
    rf"^{VERDICT_PREFIX} (?P<nonce>[0-9a-f]+) errors=(?P<errors>\d+) samples=(?P<samples>\d+)"
    r" timeout=(?P<timeout>\d+)\s*$",
    re.MULTILINE,
)
_OUTPUT = re.compile(
    rf"^{OUTPUT_PREFIX} (?P<nonce>[0-9a-f]+) (?P<name>\S+) (?P<errors>\d+) (?P<first>-?\d+)\s*$",
    re.MULTILINE,
)


def strip_comments_and_strings(code: str) -> str:
    return _COMMENTS_STRINGS.sub(lambda m: " " if m.group(0).startswith("/") else '""', code)


def forbidden_constructs(code: str) -> list[str]:
    """Forbidden system tasks (and `include) used by `code`, outside comments and strings."""
    bare = strip_comments_and_strings(code)
    found = sorted({t for t in _TASK_NAME.findall(bare) if t in FORBIDDEN_TASKS})
    if _INCLUDE.search(bare):
        found.append("`include")
    return found


def has_module(code: str, name: str) -> bool:
    bare = strip_comments_and_strings(code)
    return re.search(rf"\bmodule\s+{re.escape(name)}\b", bare) is not None


def classify_compile_error(messages: list[str], *, stage: str) -> str:
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
        # The candidate compiled alone, so what breaks now is how it plugs into the harness.
        return "interface"
    if any(k in text for k in ("unable to bind", "not declared", "unknown module", "undeclared")):
        return "undeclared"
    if any(k in text for k in ("width", "type", "cannot be driven", "not a valid l-value")):
        return "type"
    return "other"


@dataclass(frozen=True, slots=True)
class Verdict:
    errors: int
    samples: int
    timed_out: bool
    per_output: dict[str, tuple[int, int]]  # name -> (mismatches, first mismatch time or -1)


def parse_verdict(stdout: str, nonce: str) -> Verdict | None:
    """The testbench's summary for this run's nonce; None when it never printed one."""
    want = nonce.lower().rjust(32, "0")
    for m in _VERDICT.finditer(stdout):
        if m["nonce"].rjust(32, "0") == want:
            outs = {
                o["name"]: (int(o["errors"]), int(o["first"]))
                for o in _OUTPUT.finditer(stdout)
                if o["nonce"].rjust(32, "0") == want
            }
            return Verdict(int(m["errors"]), int(m["samples"]), m["timeout"] != "0", outs)
    return None


def _tail(text: str, n: int = 1500) -> str:
    return text if len(text) <= n else "..." + text[-n:]


class VerilogScorer:
    """Scores samples whose metadata holds `top` (candidate module name, default TopModule),
    `tb_top` (testbench top, with ``__TAG__``), optional `expected_samples` and
    `interface` (a module header prepended when the candidate gives only a body), and whose
    files hold the reference (`ref.sv`, optional) and the testbench template (`tb.sv`)."""

    def __init__(
        self,
        *,
        backend: str | None = None,
        compile_wall_s: float = 30.0,
        sim_wall_s: float = 20.0,
        lint: bool = True,
        strict_lint: bool = False,
        lint_wall_s: float = 30.0,
    ) -> None:
        self.backend = backend
        self.compile_wall_s = compile_wall_s
        self.sim_wall_s = sim_wall_s
        self.lint = lint or strict_lint
        self.strict_lint = strict_lint
        self.lint_wall_s = lint_wall_s

    async def score(self, sample: Sample, candidate: Candidate) -> Score:
        top = str(sample.metadata.get("top", "TopModule"))
        code = candidate.code or ""
        if not code.strip():
            return Score(0.0, "fail", FailureClass.NO_CODE, explanation="empty candidate")
        if not has_module(code, top) and sample.metadata.get("interface"):
            # Completion-style answers (VerilogEval code-complete, v1): the body only.
            code = f"{sample.metadata['interface']}\n{code}"
            if not re.search(r"\bendmodule\b", strip_comments_and_strings(code)):
                code += "\nendmodule\n"
        if not has_module(code, top):
            return _fail("compile_error:missing_top", f"the candidate defines no `module {top}`")
        bad = forbidden_constructs(code)
        if bad:
            return _fail(
                "compile_error:forbidden_construct",
                f"the candidate uses {', '.join(bad)}, which a design under test may not use "
                "(they could read or forge the testbench's verdict, or end the run early)",
            )
        async with open_sandbox(self.backend) as sb:
            return await self._score_in(sb, sample, code, top)

    async def _score_in(self, sb: Sandbox, sample: Sample, code: str, top: str) -> Score:
        iv = toolchains.get("verilog-iverilog")
        metrics: dict[str, float] = {}
        climits = Limits(wall_s=self.compile_wall_s, memory_mb=1024, pids=64)
        cand_file = f"{top}.sv"  # verilator's DECLFILENAME wants file = module name

        t0 = time.monotonic()
        alone = await iv.compile(
            sb, {cand_file: code}, output="cand_only", extra_flags=["-s", top], limits=climits
        )
        if alone.exec_result.status is ExecStatus.WALL_TIMEOUT:
            return _fail("timeout:compile", "iverilog did not finish compiling the candidate")
        if not alone.ok:
            msgs = [str(d) for d in alone.errors] or [alone.exec_result.stderr]
            detail = classify_compile_error(msgs, stage="candidate")
            return _fail(f"compile_error:{detail}", _tail("\n".join(msgs)), metrics)

        tag = "t" + secrets.token_hex(6)
        nonce = secrets.token_hex(16)
        files = {cand_file: code}
        if "ref.sv" in sample.files:
            files["ref.sv"] = sample.files["ref.sv"].replace(TAG, tag)
        files["tb.sv"] = sample.files["tb.sv"].replace(TAG, tag)
        tb_top = str(sample.metadata.get("tb_top", f"tb_{TAG}")).replace(TAG, tag)
        full = await iv.compile(sb, files, output="sim", extra_flags=["-s", tb_top], limits=climits)
        metrics["compile_s"] = round(time.monotonic() - t0, 4)
        if full.exec_result.status is ExecStatus.WALL_TIMEOUT:
            return _fail("timeout:compile", "iverilog did not finish compiling the harness")
        if not full.ok:
            msgs = [str(d) for d in full.errors] or [full.exec_result.stderr]
            detail = classify_compile_error(msgs, stage="harness")
            return _fail(f"compile_error:{detail}", _tail("\n".join(msgs)), metrics)

        run = await iv.run(
            sb,
            full.artifact or "sim.vvp",
            [f"+{NONCE_PLUSARG}={nonce}"],
            limits=Limits(wall_s=self.sim_wall_s, memory_mb=1024, pids=64),
        )
        metrics["sim_s"] = round(run.wall_s, 4)
        lint_note = await self._lint(sb, code, cand_file, top, metrics)
        return self._judge(sample, run, nonce, metrics, lint_note)

    async def _lint(
        self, sb: Sandbox, code: str, cand_file: str, top: str, metrics: dict[str, float]
    ) -> str:
        if not self.lint:
            return ""
        vl = toolchains.get("verilog-verilator")
        res = await vl.compile(
            sb,
            {cand_file: code},
            mode="lint",
            extra_flags=["--top-module", top],
            limits=Limits(wall_s=self.lint_wall_s, memory_mb=2048, pids=64),
        )
        if res.exec_result.status is ExecStatus.WALL_TIMEOUT:
            metrics["lint_timeout"] = 1.0
            return "verilator lint timed out"
        warnings = [d for d in res.diagnostics if d.severity == "warning"]
        errors = [d for d in res.diagnostics if d.severity == "error"]
        metrics["lint_warnings"] = float(len(warnings))
        metrics["lint_errors"] = float(len(errors))
        codes = sorted({d.code for d in warnings if d.code})
        parts = []
        if errors:
            parts.append("verilator lint errors: " + "; ".join(str(d) for d in errors[:5]))
        if warnings:
            parts.append(f"verilator warnings ({len(warnings)}): {', '.join(codes)}")
        return "\n".join(parts)

    def _judge(
        self, sample: Sample, run, nonce: str, metrics: dict[str, float], lint_note: str
    ) -> Score:
        status = run.status
        if status in (ExecStatus.WALL_TIMEOUT, ExecStatus.CPU_LIMIT):
            return _fail(
                "timeout",
                f"simulation exceeded {self.sim_wall_s:g}s wall time (a combinational loop or "
                "a design that never lets simulated time advance)",
                metrics,
            )
        if status is ExecStatus.OUTPUT_LIMIT:
            return _fail("resource_limit:output", "simulation printed too much", metrics)
        if status is ExecStatus.MEMORY_LIMIT:
            return _fail("resource_limit:memory", "simulation ran out of memory", metrics)
        if status is ExecStatus.FILE_SIZE_LIMIT:
            return _fail("resource_limit:file_size", "simulation wrote too big a file", metrics)
        verdict = parse_verdict(run.stdout, nonce)
        if verdict is None:
            if status is ExecStatus.SIGNAL:
                return _fail(f"runtime_crash:signal{run.signal}", _tail(run.stderr), metrics)
            return _fail(
                "runtime_crash:no_verdict",
                "the testbench never printed its summary\n" + _tail(run.stdout + run.stderr),
                metrics,
            )
        metrics["mismatches"] = float(verdict.errors)
        metrics["samples"] = float(verdict.samples)
        if verdict.samples:
            metrics["match_ratio"] = round(1 - verdict.errors / verdict.samples, 6)
        summary = f"Mismatches: {verdict.errors} in {verdict.samples} samples"
        detail = ", ".join(
            f"{name}: {n} (first at t={first})"
            for name, (n, first) in verdict.per_output.items()
            if n
        )
        explanation = "\n".join(x for x in (summary, detail, lint_note) if x)
        if verdict.timed_out:
            return _fail("timeout:sim_time", "testbench watchdog fired\n" + explanation, metrics)
        expected = sample.metadata.get("expected_samples")
        if verdict.samples == 0 or (expected is not None and verdict.samples != int(expected)):
            return _fail(
                "sim_mismatch",
                f"incomplete run: {verdict.samples} samples, expected {expected}\n" + explanation,
                metrics,
            )
        if verdict.errors:
            return _fail("sim_mismatch", explanation, metrics)
        if self.strict_lint and metrics.get("lint_errors", 0) > 0:
            return _fail("lint_error", explanation, metrics)
        return Score(1.0, "pass", None, metrics, explanation)


def _fail(failure_class: str, explanation: str, metrics: dict[str, float] | None = None) -> Score:
    return Score(0.0, "fail", failure_class, dict(metrics or {}), explanation)
