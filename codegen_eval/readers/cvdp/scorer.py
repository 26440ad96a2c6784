"""Score a CVDP answer: upstream's harness in our sandbox, the verdict read where no
candidate code runs.

The candidate passes when, in one run of the harness:

1. every compiled design vvp ran passes the screen (`screen.py`);
2. as many simulations ran as in the reference's run, each left a cocotb report whose
   test cases all passed, and together as many test cases as the reference's run had;
3. pytest's own report has the reference's number of tests, all passed, and pytest exited 0.

The reference (the record's solution) is run first, once per problem and process (the
calibration): it gives the expected counts and the harness's own system calls. A problem
whose reference fails here is excluded with the measured reason (`classify`). A record
without a solution (the dataset as published on the hub) is scored without the counts of
step 2 and 3 (at least one simulation and one test must still run), and a problem that
needs a commercial simulator or another simulator than Icarus is excluded on its face.
"""

from __future__ import annotations

import asyncio
import json
import re
from dataclasses import dataclass, field
from typing import Any

from codegen_eval.suites.verilog.calibrate import toolchain_id
from codegen_eval.suites.verilog.vvp import VvpSyntaxError
from codegen_eval.types import Candidate, FailureClass, Sample, Score
from sandboxes import ExecStatus, open_sandbox

from . import cache
from .harness import HarnessRun, pytest_command, python_binds, run_harness, venv_bin_dir
from .screen import DesignFacts, Finding, facts, screen_design, screen_source
from .verdict import ReportError, read_report

# The causes `classify` names that do not change until the toolchain does.
STABLE_CAUSES = ("needs a commercial", "needs a newer Icarus", "the reference breaks the screen",
                 "SIM=", "Icarus here cannot compile")  # fmt: skip
COMMERCIAL_TOOLS = ("xrun", "imc", "vcs", "vsim", "dsim", "jg", "xcelium")


@dataclass(slots=True)
class Calibration:
    ok: bool
    reason: str = ""
    runs: int = 0  # simulations
    cocotb_total: int = 0  # cocotb test cases over all simulations
    pytest_total: int = 0
    facts: DesignFacts = field(default_factory=DesignFacts)
    wall_s: float = 0.0
    measured: bool = True  # False: no solution to run, the counts are unknown


def _fail(cls: str, msg: str, **metrics: float) -> Score:
    return Score(0.0, "fail", cls, dict(metrics), explanation=msg)


def answer_files(sample: Sample, candidate: Candidate) -> dict[str, str] | None:
    """The answer's files (output paths -> text). One output file: the code is its text;
    several: upstream's `{"code": [{"path": "text"}, ...]}` JSON in the reply."""
    outs: list[str] = list(sample.metadata["outputs"])
    code = candidate.code or ""
    if len(outs) == 1:
        return {outs[0]: code} if code.strip() else None
    for text in (code, candidate.raw):
        try:
            doc = json.loads(text)
        except (TypeError, ValueError):
            continue
        files: dict[str, str] = {}
        for entry in doc.get("code", []) if isinstance(doc, dict) else []:
            if isinstance(entry, dict):
                files.update({str(k): str(v) for k, v in entry.items() if k in outs})
        if files:
            return files
    return None


def union_facts(designs: list[str], answer_files: set[str]) -> DesignFacts:
    out = DesignFacts()
    for d in designs:
        try:
            f = facts(d, answer_files)
        except VvpSyntaxError:
            continue  # the screen reports it
        out.harness_calls |= f.harness_calls
        out.vpi_modules = out.vpi_modules or f.vpi_modules
    return out


def _first_lines(text: str, pattern: str, n: int = 2) -> str:
    hits = [ln.strip() for ln in text.splitlines() if re.search(pattern, ln)]
    return " | ".join(hits[:n])[:300]


def classify(sample: Sample, run: HarnessRun | None, findings: list[Finding], why: str) -> str:
    """Why the reference fails here, in words a user can act on."""
    log = run.log if run is not None else ""
    sim = str(sample.metadata.get("env", {}).get("SIM", "icarus")).lower()
    for tool in COMMERCIAL_TOOLS:
        if re.search(rf"\b{tool}\b[^\n]*(not found|No such file)|{tool} executable not found", log):
            return f"needs a commercial simulator: its harness calls {tool}, not installed here"
    if sample.metadata.get("commercial"):
        return f"needs a commercial simulator (upstream's licensed EDA image): {why}"
    if sim != "icarus":
        here = "the harness passed" if run is not None and run.exec.exit_code == 0 else (
            _first_lines(log, r"^%(Error|Warning)-|error:", 1) or why
        )  # fmt: skip
        return f"SIM={sim}: this reader screens Icarus-compiled designs only (run here: {here})"
    sorry = _first_lines(log, r"sorry:")
    if sorry:
        return f"needs a newer Icarus than this one (upstream builds 13.0): {sorry}"
    if findings:
        return f"the reference breaks the screen: {findings[0].message}"
    err = _first_lines(log, r"(syntax error|error:|Unable to bind|Unknown module)")
    if run is not None and not run.designs and err:
        return f"Icarus here cannot compile the reference (upstream builds 13.0): {err}"
    return f"the reference fails here: {why}"


def _cal_to_json(c: Calibration) -> dict[str, Any]:
    return {"ok": c.ok, "reason": c.reason, "runs": c.runs, "cocotb_total": c.cocotb_total,
            "pytest_total": c.pytest_total, "facts": cache.facts_to_json(c.facts),
            "wall_s": c.wall_s}  # fmt: skip


def _cal_from_json(d: dict[str, Any]) -> Calibration:
    return Calibration(
        bool(d["ok"]),
        str(d["reason"]),
        int(d["runs"]),
        int(d["cocotb_total"]),
        int(d["pytest_total"]),
        cache.facts_from_json(d["facts"]),
        float(d["wall_s"]),
    )


def unmeasured(sample: Sample) -> Calibration:
    """A record without a solution: excluded on its face where it cannot run here."""
    sim = str(sample.metadata.get("env", {}).get("SIM", "icarus")).lower()
    if sample.metadata.get("commercial"):
        return Calibration(False, "needs a commercial simulator (its category or upstream's "
                           "licensed EDA image; the record has no solution to run)")  # fmt: skip
    if sim != "icarus":
        return Calibration(False, f"SIM={sim}: this reader screens Icarus-compiled designs only")
    return Calibration(True, "the record has no solution: counts not compared", measured=False)


class CvdpScorer:
    """Runs a CVDP harness on the answer; see the module doc."""

    def __init__(self, *, backend: str | None = None, wall_s: float = 300.0) -> None:
        if backend not in (None, "bwrap"):
            raise ValueError(f"the CVDP reader runs harnesses in bwrap only, not {backend!r}")
        self.backend = "bwrap"
        self.wall_s = wall_s
        self._cal: dict[str, Calibration] = {}
        self._locks: dict[str, asyncio.Lock] = {}

    async def run(self, sample: Sample, answer: dict[str, str]) -> HarnessRun | str:
        """One run of the harness on `answer` (its files); a string when it cannot run."""
        argv = pytest_command(str(sample.metadata.get("command") or ""))
        if argv is None:
            return f"the harness command is not pytest: {sample.metadata.get('command')!r}"
        files = dict(sample.files)
        files.update({f"code/{k}": v for k, v in answer.items()})
        env = {k: v for k, v in sample.metadata.get("env", {}).items() if "\0" not in v and k}
        async with open_sandbox(self.backend, extra_ro_binds=python_binds()) as sb:
            return await run_harness(sb, files, env, argv, wall_s=self.wall_s)

    async def calibration(self, sample: Sample) -> Calibration:
        """The reference's run: from this process, else the disk cache, else measured."""
        if not sample.metadata.get("reference"):
            return unmeasured(sample)
        key = cache.key_of(sample, await toolchain_id(), venv_bin_dir())
        if key in self._cal:  # measured before the run, in another event loop
            return self._cal[key]
        async with self._locks.setdefault(key, asyncio.Lock()):
            if key not in self._cal:
                stored = cache.load(key)
                if stored is not None:
                    self._cal[key] = _cal_from_json(stored)
                else:
                    self._cal[key] = cal = await self._calibrate(sample)
                    # an unexplained failure may be this machine's passing trouble: measured
                    # again next time; a pass or a named cause is kept
                    if cal.ok or cal.reason.startswith(STABLE_CAUSES):
                        cache.store(key, _cal_to_json(cal))
        return self._cal[key]

    async def _calibrate(self, sample: Sample) -> Calibration:
        reference: dict[str, str] = dict(sample.metadata.get("reference") or {})
        if not reference:
            return unmeasured(sample)
        run = await self.run(sample, reference)
        if isinstance(run, str):
            return Calibration(False, run)
        outcome = self._judge(run, reference, None)
        if outcome is not None:
            findings = [Finding(outcome.failure_class or "", outcome.explanation)]
            screened = (outcome.failure_class or "").startswith(("forbidden", "tamper"))
            reason = classify(sample, run, findings if screened else [], outcome.explanation)
            return Calibration(False, reason, wall_s=run.exec.wall_s)
        reports = [read_report(r) for r in run.results]
        return Calibration(
            True,
            runs=len(run.designs),
            cocotb_total=sum(r.total for r in reports),
            pytest_total=read_report(run.junit).total,
            facts=union_facts(run.designs, set(reference)),
            wall_s=run.exec.wall_s,
        )

    def _judge(
        self, run: HarnessRun, answer: dict[str, str], cal: Calibration | None
    ) -> Score | None:
        """The failing Score, or None when the run passes every check."""
        res = run.exec
        if res.status is ExecStatus.WALL_TIMEOUT:
            return _fail("timeout", f"the harness ran past {self.wall_s:.0f} s")
        if res.status not in (ExecStatus.OK, ExecStatus.NONZERO_EXIT):
            return _fail(f"resource_limit:{res.status}", f"the harness ended: {res.status}")
        if run.oversized:
            return _fail("resource_limit:design_size", "a compiled design is too large to screen")
        # The reference's own run learns the harness's calls (without one: from this run).
        measured = cal is not None and cal.measured
        ref = cal.facts if measured else union_facts(run.designs, set(answer))
        for design in run.designs:
            found = screen_design(design, set(answer), ref)
            if found:
                return _fail(found[0].failure_class, found[0].message)
        if not run.designs:
            err = _first_lines(run.log, r"(error|sorry)", 3) or run.log[-300:]
            return _fail("compile_error", f"no simulation ran: {err}")
        if measured and len(run.designs) != cal.runs:
            return _fail(
                "wrong_answer",
                f"{len(run.designs)} simulations ran; the reference's run had {cal.runs}",
            )
        total = 0
        for i, xml in enumerate(run.results):
            try:
                rep = read_report(xml)
            except ReportError as exc:
                return _fail("runtime_crash", f"simulation {i + 1}: {exc}")
            if not rep.ok:
                shown = "; ".join(rep.problems[:3]) or "no test case ran"
                return _fail("wrong_answer", f"{rep.total - rep.passed} of {rep.total} cocotb "
                             f"tests failed: {shown}")  # fmt: skip
            total += rep.total
        if measured and total != cal.cocotb_total:
            return _fail(
                "wrong_answer",
                f"{total} cocotb tests ran; the reference's run had {cal.cocotb_total}",
            )
        try:
            py = read_report(run.junit)
        except ReportError as exc:
            return _fail("infra_error", f"pytest's report: {exc}")
        if not py.ok or (measured and py.total != cal.pytest_total) or res.exit_code != 0:
            shown = "; ".join(py.problems[:2]) or f"pytest exited {res.exit_code}"
            return _fail("wrong_answer", f"the harness's pytest failed: {shown}")
        return None

    async def score(self, sample: Sample, candidate: Candidate) -> Score:
        answer = answer_files(sample, candidate)
        if answer is None:
            return Score(0.0, "fail", FailureClass.NO_CODE, explanation="no answer files")
        for text in answer.values():
            found = screen_source(text)
            if found:
                return _fail(found[0].failure_class, found[0].message)
        cal = await self.calibration(sample)
        if not cal.ok:
            return Score(0.0, "skipped", None, explanation=f"excluded: {cal.reason}")
        run = await self.run(sample, answer)
        if isinstance(run, str):
            return Score(0.0, "error", FailureClass.INFRA_ERROR, explanation=run)
        metrics = {"harness_wall_s": run.exec.wall_s}
        if run.exec.cpu_s is not None:
            metrics["harness_cpu_s"] = run.exec.cpu_s
        # upstream's verdict on the same run, for comparison only: pytest's exit status,
        # which the design can forge (see screen.py)
        upstream = {"upstream_verdict": "pass" if run.exec.exit_code == 0 else "fail"}
        bad = self._judge(run, answer, cal)
        if bad is not None:
            bad.metrics.update(metrics)
            bad.metadata.update(upstream)
            return bad
        done = f"{cal.cocotb_total} cocotb tests in {cal.runs} simulation(s) passed"
        if not cal.measured:
            done = f"every cocotb test in {len(run.designs)} simulation(s) passed (no solution "
            done += "in the record: the counts were not compared with its run)"
        return Score(1.0, "pass", metrics=metrics, explanation=done, metadata=upstream)


def measured_exclusions(scorer: CvdpScorer, samples: list[Sample]) -> dict[str, str]:
    """{id: reason} for the samples whose reference fails here (runs each reference)."""
    from codegen_eval.readers.verilogeval import run_sync

    async def all_() -> list[tuple[str, Calibration]]:
        sem = asyncio.Semaphore(2)

        async def one(s: Sample) -> tuple[str, Calibration]:
            async with sem:
                return s.id, await scorer.calibration(s)

        return await asyncio.gather(*(one(s) for s in samples))

    return {sid: cal.reason for sid, cal in run_sync(all_()) if not cal.ok}


__all__: list[Any] = [
    "Calibration",
    "CvdpScorer",
    "answer_files",
    "classify",
    "measured_exclusions",
]
