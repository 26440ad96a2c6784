"""Judge a Verilog candidate by simulating it against a reference with Icarus Verilog.

Pipeline (candidates compiled and simulated up to eight to a sandbox exec, each step behind
vguard so that a candidate sees only its own directory: `batch.py`; one sandbox per
candidate where batches cannot run, with docker, or with lint on):

1. text checks: no `module <top>` -> compile_error:missing_top; an `` `include `` anywhere
   -> forbidden_construct:`include (it would read a harness file while compiling);
2. the reference's calibration for this problem (`calibrate.py`: measured once per toolchain
   and cached): the sample count its run compares and the model of the harness;
3. iverilog compiles harness + candidate (VerilogEval's flags), then vvp runs it
   (`batch.py`, `harness.py`); the compiled design that ran is read back and screened
   (`screen.py`): no system task or function in the candidate's scopes except pure ones, no
   reference to the harness, no force, no driven inputs, the harness unchanged;
4. the verdict is the testbench's `CGE-VERDICT <nonce> errors=N samples=M timeout=T` line
   with this run's nonce, exactly once, with M equal to the reference's count; then the
   upstream benchmark's own rules for VerilogEval samples (`upstream.py`);
5. on request only (lint=True, or strict_lint=True where lint errors fail the sample),
   `verilator --lint-only -Wall -Wno-fatal` on the candidate.

Testbenches may carry ``__TAG__`` in names; each run substitutes a fresh random tag.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from codegen_eval.types import Candidate, FailureClass, Sample, Score
from sandboxes import ExecStatus, Limits, Sandbox, open_sandbox, toolchains

from . import batch
from .calibrate import Calibration, calibrate
from .harness import (
    HarnessSpec,
    RunOutput,
    Verdict,
    classify_compile_error,
    compile_and_run,
    parse_verdict,
)
from .judge import fail, judge
from .screen import (
    ALLOWED_SYSTEM_FUNCTIONS,
    FORBIDDEN_TASKS,
    forbidden_constructs,
    has_module,
    strip_comments_and_strings,
)
from .tbgen import TAG


def harness_spec(sample: Sample) -> HarnessSpec:
    """The harness of a sample: its files `tb.sv` (+ `ref.sv`, + `data/<name>` files the
    testbench reads at run time) and metadata `top`, `tb_top`, `verilog_rules` (builtin |
    verilogeval-v2 | verilogeval-v1) and `reset_candidate`."""
    md = sample.metadata
    harness = [("tb.sv", sample.files["tb.sv"])]
    if "ref.sv" in sample.files:
        harness.append(("ref.sv", sample.files["ref.sv"]))
    return HarnessSpec(
        top=str(md.get("top", "TopModule")),
        tb_top=str(md.get("tb_top", f"tb_{TAG}")),
        harness=tuple((r, str(t)) for r, t in harness),
        reset_candidate=bool(md.get("reset_candidate", True)),
        rules=str(md.get("verilog_rules", "builtin")),
        data=tuple(
            (name[5:], str(text))
            for name, text in sorted(sample.files.items())
            if name.startswith("data/")
        ),
    )


def complete_candidate(code: str, sample: Sample) -> str:
    """Completion-style answers (VerilogEval code-complete, v1) may give only the body: the
    prompt's interface is put in front (and `endmodule` after, when missing)."""
    top = str(sample.metadata.get("top", "TopModule"))
    if not has_module(code, top) and sample.metadata.get("interface"):
        code = f"{sample.metadata['interface']}\n{code}"
        if not re.search(r"\bendmodule\b", strip_comments_and_strings(code)):
            code += "\nendmodule\n"
    return code


@dataclass(frozen=True, slots=True)
class _Prepared:
    code: str  # as compiled
    spec: HarnessSpec  # spec.top: the candidate's module
    cal: Calibration | None
    expected: int | None  # the sample count the reference's run compares
    note: str


class VerilogScorer:
    """Scores samples whose metadata holds `top` (candidate module name, default TopModule),
    `tb_top` (testbench top, may hold ``__TAG__``), optional `interface` (a module header
    prepended when the candidate gives only a body) and `expected_samples` (used only when
    the sample has no reference to calibrate with), and whose files hold the testbench
    (`tb.sv`) and optionally the reference (`ref.sv`). `sample.target` is the reference as a
    candidate; it is what the calibration runs."""

    def __init__(
        self,
        *,
        backend: str | None = None,
        compile_wall_s: float = 30.0,
        sim_wall_s: float = 20.0,
        lint: bool = False,
        strict_lint: bool = False,
        lint_wall_s: float = 30.0,
    ) -> None:
        self.backend = backend
        self.compile_wall_s = compile_wall_s
        self.sim_wall_s = sim_wall_s
        self.lint = lint or strict_lint
        self.strict_lint = strict_lint
        self.lint_wall_s = lint_wall_s
        # candidates simulated in a batch / alone (no guard, lint, or the batch could not
        # vouch for them): for the curious and for the tests that the batch really ran
        self.runs: Counter[str] = Counter()

    @property
    def batch_size(self) -> int:
        """How many candidates the runner hands `score_batch` at once: one where batches
        cannot run (another backend than bubblewrap, lint on), so that every candidate
        keeps a sandbox slot of its own there."""
        from sandboxes import current_backend

        if self.lint or (self.backend or current_backend()) != "bwrap":
            return 1
        return batch.BATCH_SIZE

    async def calibration(self, sample: Sample) -> Calibration | None:
        """The reference's run for this sample (None when the sample has no reference)."""
        if not sample.target:
            return None
        return await calibrate(
            harness_spec(sample),
            complete_candidate(sample.target, sample),
            backend=self.backend,
            compile_wall_s=self.compile_wall_s,
            sim_wall_s=self.sim_wall_s,
        )

    def prepare(self, code: str, sample: Sample) -> str:
        """The candidate as it is compiled (a body-only answer gets its module header)."""
        return complete_candidate(code, sample)

    def finish(self, score: Score, out: RunOutput) -> Score:
        """A reader's last word on the judged run (RTLLM adds upstream's verdict beside it)."""
        return score

    async def _prepared(self, sample: Sample, candidate: Candidate) -> Score | _Prepared:
        """The candidate as it is compiled, with its harness and calibration, or the Score
        of a candidate that fails before anything runs."""
        top = str(sample.metadata.get("top", "TopModule"))
        code = candidate.code or ""
        if not code.strip():
            return Score(0.0, "fail", FailureClass.NO_CODE, explanation="empty candidate")
        code = self.prepare(code, sample)
        if not has_module(code, top):
            return fail("compile_error:missing_top", f"the candidate defines no `module {top}`")
        bad = forbidden_constructs(code)
        if bad:
            return fail(
                f"forbidden_construct:{bad[0]}",
                f"the candidate uses {', '.join(bad)}, which a design under test may not use "
                "(`include would read a file of the harness while compiling; `line would put "
                "its compile errors on the harness's files)",
            )
        cal = await self.calibration(sample)
        expected = sample.metadata.get("expected_samples")
        note = ""
        if cal is not None and cal.ok:
            expected = cal.samples
        elif cal is not None:
            expected = None
            note = f"note: the reference itself fails here ({cal.reason})"
        expected_n = int(expected) if expected is not None else None
        return _Prepared(code, harness_spec(sample), cal, expected_n, note)

    def _judge(self, out: RunOutput, p: _Prepared) -> Score:
        return judge(
            out,
            p.spec,
            sim_wall_s=self.sim_wall_s,
            model=p.cal.model if p.cal is not None else None,
            expected_samples=p.expected,
            note=p.note,
        )

    async def score(self, sample: Sample, candidate: Candidate) -> Score:
        """One candidate: a batch of one where batches run (so that a candidate gets the
        same verdict however the run hands it over: the runner, Inspect, the repair loop)."""
        return (await self.score_batch([(sample, candidate)]))[0]

    async def score_batch(self, items: Sequence[tuple[Sample, Candidate]]) -> list[Score]:
        """The scores of several candidates, those that reach the simulator compiled and
        simulated in one sandbox exec, each step behind vguard (`batch.py`). Without a
        usable guard (another backend, no Landlock), with lint on, or for a candidate the
        batch cannot vouch for, a candidate runs alone in a sandbox of its own."""
        prepared = [await self._prepared(s, c) for s, c in items]
        g = None if self.lint else await batch.usable(self.backend)
        todo = [i for i, p in enumerate(prepared) if not isinstance(p, Score)]
        outs: list[RunOutput | None] = [None] * len(items)
        if g is not None and todo:
            runs = [p for p in prepared if isinstance(p, _Prepared)]
            async with open_sandbox(self.backend, extra_ro_binds=(str(g.root),)) as sb:
                got = await batch.compile_and_run_batch(
                    sb, [(p.spec, p.code) for p in runs], g,
                    compile_wall_s=self.compile_wall_s, sim_wall_s=self.sim_wall_s,
                )  # fmt: skip
            for i, out in zip(todo, got, strict=True):
                outs[i] = out
            self.runs["batched"] += sum(out is not None for out in got)
        scores: list[Score] = []
        for p, out in zip(prepared, outs, strict=True):
            if isinstance(p, Score):
                scores.append(p)
            elif out is None:
                scores.append(await self._score_alone(p))
            else:
                scores.append(self.finish(self._judge(out, p), out))
        return scores

    async def _score_alone(self, p: _Prepared) -> Score:
        """A sandbox of its own: one exec compiles and simulates (`harness.compile_and_run`:
        the simulation may write no byte, under `ulimit -f 0`)."""
        self.runs["alone"] += 1
        async with open_sandbox(self.backend) as sb:
            out = await compile_and_run(
                sb, p.spec, p.code, compile_wall_s=self.compile_wall_s, sim_wall_s=self.sim_wall_s
            )
            score = self._judge(out, p)
            if self.lint and out.compiled:
                score = await self._lint(sb, score, p.code, p.spec.top)
        return self.finish(score, out)

    async def _lint(self, sb: Sandbox, score: Score, code: str, top: str) -> Score:
        vl = toolchains.get("verilog-verilator")
        res = await vl.compile(
            sb,
            {f"{top}.sv": code},
            mode="lint",
            extra_flags=["--top-module", top],
            limits=Limits(wall_s=self.lint_wall_s, memory_mb=2048, pids=64),
        )
        metrics = dict(score.metrics)
        if res.exec_result.status is ExecStatus.WALL_TIMEOUT:
            metrics["lint_timeout"] = 1.0
            return Score(score.value, score.status, score.failure_class, metrics,
                         score.explanation + "\nverilator lint timed out")  # fmt: skip
        warnings = [d for d in res.diagnostics if d.severity == "warning"]
        errors = [d for d in res.diagnostics if d.severity == "error"]
        metrics["lint_warnings"] = float(len(warnings))
        metrics["lint_errors"] = float(len(errors))
        parts = [score.explanation] if score.explanation else []
        if errors:
            parts.append("verilator lint errors: " + "; ".join(str(d) for d in errors[:5]))
        if warnings:
            codes = sorted({d.code for d in warnings if d.code})
            parts.append(f"verilator warnings ({len(warnings)}): {', '.join(codes)}")
        explanation = "\n".join(parts)
        if self.strict_lint and errors and score.status == "pass":
            return fail("lint_error", explanation, metrics)
        return Score(score.value, score.status, score.failure_class, metrics, explanation)


__all__ = [
    "ALLOWED_SYSTEM_FUNCTIONS",
    "FORBIDDEN_TASKS",
    "Verdict",
    "VerilogScorer",
    "classify_compile_error",
    "complete_candidate",
    "forbidden_constructs",
    "harness_spec",
    "has_module",
    "parse_verdict",
    "strip_comments_and_strings",
]
