"""Readers for the public VerilogEval formats, from paths the user gives (nothing is downloaded).

* v2 directories (`dataset_spec-to-rtl/`, `dataset_code-complete-iccad2023/`): per problem
  `ProbNNN_name_prompt.txt`, `ProbNNN_name_ref.sv` (module RefModule) and
  `ProbNNN_name_test.sv` (module tb, instantiating RefModule and TopModule, printing
  `Mismatches: N in M samples` in a final block); code-complete also has
  `ProbNNN_name_ifc.txt`, the module header upstream puts in front of a body-only answer.
* v1 JSONL (`VerilogEval_Human.jsonl` / `_Machine.jsonl`: task_id, prompt = the
  `module top_module(...)` header, canonical_solution = the body, test = reference_module +
  testbench) with an optional descriptions JSONL (task_id, detail_description,
  simple_description).

Both are scored by the verilog suite's `VerilogScorer`, compiled with upstream's iverilog
flags in upstream's order for the candidate (first in v2, after the test in v1) and judged
with upstream's own rules on top of ours (`codegen_eval/suites/verilog/upstream.py`). The
testbench is instrumented, not trusted: next to its `Mismatches:` line it prints the
nonce-keyed verdict line the scorer reads, and its `TIMEOUT` guard sets a flag.

Exclusions are measured, not remembered: each reference is run once on this machine's
toolchain (cached per toolchain version, see `calibrate.py`) and a problem whose reference
fails here is excluded with the measured reason, unless include_known_bad=True. The problems
upstream discussed (POLICY_EXCLUSIONS) are excluded only with policy_exclusions=True.
"""

from __future__ import annotations

import asyncio
import json
import re
import threading
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeVar

from codegen_eval.errors import CodegenEvalError
from codegen_eval.readers._jsonl import jsonl_records
from codegen_eval.readers._pick import apply_calibration, pick_problems
from codegen_eval.registry import register_suite
from codegen_eval.suites.verilog import VerilogScorer
from codegen_eval.suites.verilog.tbgen import NONCE_PLUSARG, VERDICT_PREFIX
from codegen_eval.types import ReaderFacts, Sample, Task

Mode = Literal["spec-to-rtl", "code-complete", "v1"]
MODES: tuple[str, ...] = ("spec-to-rtl", "code-complete", "v1")
V2_DIRS = {"spec-to-rtl": "dataset_spec-to-rtl", "code-complete": "dataset_code-complete-iccad2023"}
SIM_WALL_S = 30.0  # upstream's `timeout 30`

# Problems upstream discussed as defective, keyed by v2 number (ProbNNN) or v1 task_id.
# Sources: NVlabs/verilog-eval issues #8, #13, #21 and pull request #16 (the v2.1 errata).
# Applied only with policy_exclusions=True: by default what is excluded is what fails here.
POLICY_EXCLUSIONS: dict[str, str] = {
    "Prob082": "the reference, submitted as the candidate, hits the testbench's TIMEOUT (issue #21)",
    "Prob099": "spec-to-rtl: the testbench connects ports Y2/Y4 but prompt and reference "
    "declare Y1/Y3 (issue #13, PR #16)",
    "Prob118": "reference uses blocking assignments in sequential logic (PR #16)",
    "Prob134": "interface has a clk input the behaviour never uses (PR #16)",
    "Prob135": "prompt asks for the FSM but the testbench checks only its next-state logic "
    "(PR #16)",
    "Prob141": "the reference, submitted as the candidate, hits the testbench's TIMEOUT (issue #21)",
    "Prob153": "reference uses blocking assignments in sequential logic (PR #16)",
    "Prob156": "the reference, submitted as the candidate, hits the testbench's TIMEOUT (issue #21)",
    "dff8": "v1 reference has `initial q = 0`, so a correct register without an initial value "
    "fails (issue #8)",
}
KNOWN_BAD = POLICY_EXCLUSIONS  # the old name

_TB_MODULE = re.compile(r"\bmodule\s+tb\s*(?:\(\s*\))?\s*;")
_MISMATCH_DISPLAY = re.compile(
    r'\$display\(\s*"Mismatches:\s*%\w*d\s+in\s+%\w*d\s+samples"\s*,\s*(?P<a>[^,;]+?)\s*,'
    r"\s*(?P<b>[^;]+?)\s*\)\s*;"
)
_TIMEOUT_DISPLAY = re.compile(r'\$display\(\s*"TIMEOUT"\s*\)\s*;')
_NONCE, _TIMEOUT_FLAG = "cge_nonce", "cge_timeout"


class UnsupportedTestbench(CodegenEvalError, ValueError):
    """The testbench lacks what the instrumentation needs (module tb, the Mismatches line)."""


class VerilogEvalFormatError(CodegenEvalError, ValueError):
    """The path is not in the layout the mode expects; the message says what to use."""


def instrument_testbench(text: str) -> str:
    """Add to an upstream testbench a line `CGE-VERDICT <nonce> errors=N samples=M
    timeout=T` next to its `Mismatches:` display; names, ports and behaviour are unchanged."""
    if not _TB_MODULE.search(text):
        raise UnsupportedTestbench("no `module tb();` found")
    if not _MISMATCH_DISPLAY.search(text):
        raise UnsupportedTestbench('no `$display("Mismatches: %1d in %1d samples", ...)` found')
    header = (
        f"module tb();\n  reg [127:0] {_NONCE};\n  reg {_TIMEOUT_FLAG} = 0;\n"
        f'  initial if (!$value$plusargs("{NONCE_PLUSARG}=%h", {_NONCE})) {_NONCE} = 0;\n'
    )
    text = _TB_MODULE.sub(lambda _: header, text, count=1)
    text = _TIMEOUT_DISPLAY.sub(lambda m: f"begin {_TIMEOUT_FLAG} = 1; {m.group(0)} end", text)

    def verdict(m: re.Match[str]) -> str:
        return (
            f'begin {m.group(0)}\n    $display("{VERDICT_PREFIX} %032h errors=%0d samples=%0d '
            f'timeout=%0d", {_NONCE}, {m["a"]}, {m["b"]}, {_TIMEOUT_FLAG}); end'
        )

    return _MISMATCH_DISPLAY.sub(verdict, text)


def interface_of(prompt: str, top: str) -> str | None:
    """The `module <top> (...);` header in a prompt, if it has one."""
    m = re.search(rf"\bmodule\s+{re.escape(top)}\b[^;]*;", prompt, re.DOTALL)
    return m.group(0) if m else None


@dataclass(slots=True)
class ReadResult:
    samples: list[Sample] = field(default_factory=list)
    excluded: list[tuple[str, str]] = field(default_factory=list)  # (id, reason)
    policy: dict[str, str] = field(default_factory=dict)  # ids upstream discussed -> why


def _policy(pid: str) -> str | None:
    return POLICY_EXCLUSIONS.get(pid.split("_", 1)[0]) or POLICY_EXCLUSIONS.get(pid)


# -- formats -------------------------------------------------------------------------------
def detect(path: str | Path) -> str:
    """ "v2" (a checkout or a dataset directory), "v1" (a JSONL file) or raises
    VerilogEvalFormatError with what the path looks like and what to pass instead."""
    p = Path(path)
    if not p.exists():
        raise VerilogEvalFormatError(f"{p} does not exist")
    if p.is_dir():
        if any((p / d).is_dir() for d in V2_DIRS.values()) or any(p.glob("*_prompt.txt")):
            return "v2"
        v1 = sorted(p.glob("data/VerilogEval_*.jsonl")) + sorted(p.glob("VerilogEval_*.jsonl"))
        if v1:
            raise VerilogEvalFormatError(
                f"{p} is a VerilogEval v1 checkout: pass its problems file, e.g. "
                f"--verilogeval {v1[0]} --verilogeval-mode v1"
            )
        raise VerilogEvalFormatError(
            f"{p} has no VerilogEval problems: give a v2 checkout (with dataset_spec-to-rtl/), "
            "a dataset_* directory, or a v1 JSONL file"
        )
    try:
        with p.open(encoding="utf-8") as f:
            first = next((line for line in f if line.strip()), "")
        row = json.loads(first)
    except (OSError, UnicodeDecodeError, ValueError):
        row = None
    if isinstance(row, dict) and "task_id" in row and "test" in row:
        return "v1"
    raise VerilogEvalFormatError(
        f"{p} is neither a v2 dataset directory nor a v1 problems JSONL (task_id, prompt, "
        "canonical_solution, test)"
    )


def resolve_mode(path: str | Path, mode: str | None) -> tuple[str, str | None]:
    """(mode, note): the mode for `path`, detected when `mode` is None ("auto"); the note
    says what was detected. A mode that does not fit the path is a one-line error."""
    fmt = detect(path)
    if mode is None or mode == "auto":
        if fmt == "v1":
            return "v1", f"{path} is a VerilogEval v1 JSONL file: reading it as mode v1"
        p = Path(path)
        guess = "code-complete" if p.name == V2_DIRS["code-complete"] else "spec-to-rtl"
        return guess, None
    if mode not in MODES:
        raise VerilogEvalFormatError(
            f"unknown VerilogEval mode {mode!r} (one of {', '.join(MODES)})"
        )
    if mode == "v1" and fmt == "v2":
        raise VerilogEvalFormatError(
            f"{path} is a VerilogEval v2 directory, not a v1 JSONL: use "
            "--verilogeval-mode spec-to-rtl or code-complete (or pass the v1 JSONL file)"
        )
    if mode != "v1" and fmt == "v1":
        raise VerilogEvalFormatError(
            f"{path} is a VerilogEval v1 JSONL file: use --verilogeval-mode v1 "
            "(or pass a v2 checkout for spec-to-rtl / code-complete)"
        )
    return mode, None


def _v2_dir(path: Path, mode: str) -> Path:
    sub = path / V2_DIRS[mode]
    return sub if sub.is_dir() else path


def read_v2(
    path: str | Path, mode: Mode = "spec-to-rtl", *, policy_exclusions: bool = False
) -> ReadResult:
    """Read a v2 dataset directory (or a checkout containing dataset_<mode>/). Only policy
    exclusions are applied here; measured ones come from `measure_exclusions`."""
    if mode not in V2_DIRS:
        raise VerilogEvalFormatError(
            f"mode {mode!r} is not a v2 mode: use spec-to-rtl or code-complete"
        )
    root = _v2_dir(Path(path), mode)
    prompts = sorted(root.glob("*_prompt.txt"))
    if not prompts:
        raise VerilogEvalFormatError(
            f"no *_prompt.txt files in {root}: give a v2 checkout or a dataset_* directory "
            "(a v1 JSONL file needs --verilogeval-mode v1)"
        )
    result = ReadResult()
    for pfile in prompts:
        pid = pfile.name[: -len("_prompt.txt")]
        why = _policy(pid)
        if why:
            result.policy[pid] = why
            if policy_exclusions:
                result.excluded.append((pid, f"policy: {why}"))
                continue
        ref, test = root / f"{pid}_ref.sv", root / f"{pid}_test.sv"
        missing = [p.name for p in (ref, test) if not p.is_file()]
        if missing:
            result.excluded.append((pid, f"missing {', '.join(missing)}"))
            continue
        prompt = pfile.read_text()
        try:
            tb = instrument_testbench(test.read_text())
        except UnsupportedTestbench as exc:
            result.excluded.append((pid, f"unsupported testbench: {exc}"))
            continue
        meta: dict[str, Any] = {
            "language": "verilog",
            "suite": f"verilogeval-{mode}",
            "top": "TopModule",
            "tb_top": "tb",
            "verilog_rules": "verilogeval-v2",
            "reset_candidate": True,  # upstream compiles the sample first
            "upstream_id": pid,
        }
        if mode == "code-complete":
            ifc = root / f"{pid}_ifc.txt"
            meta["interface"] = (
                ifc.read_text().strip() if ifc.is_file() else interface_of(prompt, "TopModule")
            )
        if why:
            meta["policy_note"] = why
        ref_text = ref.read_text()
        result.samples.append(
            Sample(
                id=pid,
                input=prompt,
                target=ref_text.replace("RefModule", "TopModule"),
                metadata=meta,
                files={"tb.sv": tb, "ref.sv": ref_text},
            )
        )
    return result


def read_v1(
    problems_jsonl: str | Path,
    descriptions_jsonl: str | Path | None = None,
    *,
    description: Literal["detail", "simple"] = "detail",
    policy_exclusions: bool = False,
) -> ReadResult:
    """Read v1 JSONL. With descriptions the prompt is the description followed by the module
    header; without them it is the header alone (the original completion setting)."""
    if Path(problems_jsonl).is_dir():
        raise VerilogEvalFormatError(
            f"{problems_jsonl} is a directory: mode v1 reads a problems JSONL file "
            "(e.g. VerilogEval_Human.jsonl); a v2 directory needs spec-to-rtl or code-complete"
        )
    descs: dict[str, str] = {}
    if descriptions_jsonl is not None:
        key = f"{description}_description"
        for _, row in jsonl_records(Path(descriptions_jsonl), VerilogEvalFormatError):
            descs[row["task_id"]] = str(row.get(key, "")).strip()
    result = ReadResult()
    for _, row in jsonl_records(Path(problems_jsonl), VerilogEvalFormatError):
        if not isinstance(row, dict) or not {"task_id", "prompt", "test"} <= set(row):
            raise VerilogEvalFormatError(
                f"{problems_jsonl}: rows need task_id, prompt and test (a v1 problems file)"
            )
        tid = str(row["task_id"])
        why = _policy(tid)
        if why:
            result.policy[tid] = why
            if policy_exclusions:
                result.excluded.append((tid, f"policy: {why}"))
                continue
        header = str(row["prompt"])
        try:
            tb = instrument_testbench(str(row["test"]))
        except UnsupportedTestbench as exc:
            result.excluded.append((tid, f"unsupported testbench: {exc}"))
            continue
        desc = descs.get(tid, "")
        meta: dict[str, Any] = {
            "language": "verilog",
            "suite": "verilogeval-v1",
            "top": "top_module",
            "tb_top": "tb",
            "verilog_rules": "verilogeval-v1",
            "reset_candidate": False,  # v1 appends the answer to the test in one file
            "interface": interface_of(header, "top_module") or header.strip(),
            "upstream_id": tid,
        }
        if why:
            meta["policy_note"] = why
        result.samples.append(
            Sample(
                id=tid,
                input=f"{desc}\n\n{header}" if desc else header,
                target=header + str(row.get("canonical_solution", "")),
                metadata=meta,
                files={"tb.sv": tb},
            )
        )
    return result


# -- measured exclusions -------------------------------------------------------------------
T = TypeVar("T")


def run_sync(coro: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine to completion from sync code, also when a loop is already running
    in this thread (then in a helper thread with its own loop)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = asyncio.run(coro)
        except BaseException as exc:  # re-raised in the caller's thread
            box["error"] = exc

    t = threading.Thread(target=target, name="verilogeval-calibrate")
    t.start()
    t.join()
    if "error" in box:
        raise box["error"]
    return box["value"]


async def measure_exclusions(
    samples: list[Sample], scorer: VerilogScorer, progress: Callable[[str], None] | None = None
) -> dict[str, str]:
    """{id: reason} for the samples whose reference fails on this machine's toolchain."""
    import time

    from codegen_eval.suites.verilog.calibrate import toolchain_id

    sem = asyncio.Semaphore(8)
    done, t0 = 0, time.monotonic()

    async def one(s: Sample) -> tuple[str, str | None]:
        nonlocal done
        async with sem:
            cal = await scorer.calibration(s)
        done += 1
        # Only a cold cache takes long enough to be worth a word.
        if progress and time.monotonic() - t0 > 2 and (done % 25 == 0 or done == len(samples)):
            progress(
                f"measuring the references on this toolchain (once; cached): {done}/{len(samples)}"
            )
        return s.id, (None if cal is None or cal.ok else cal.reason)

    tool = short_toolchain(await toolchain_id())
    results = await asyncio.gather(*(one(s) for s in samples))
    return {sid: f"the reference fails here ({tool}): {why}" for sid, why in results if why}


def short_toolchain(toolchain: str) -> str:
    """ "Icarus Verilog version 11.0 (stable) () | ..." -> "iverilog 11.0 (stable)"."""
    m = re.search(r"version\s+(\S+(?:\s+\([^)]*\))?)", toolchain)
    return f"iverilog {m.group(1)}" if m else toolchain.split(" | ")[0]


def verilogeval(
    path: str | Path,
    mode: Mode | None = "spec-to-rtl",
    *,
    descriptions: str | Path | None = None,
    problems: list[str] | str | None = None,
    limit: int | None = None,
    include_known_bad: bool = False,
    policy_exclusions: bool = False,
    calibrate: bool = True,
    progress: Callable[[str], None] | None = None,
    **scorer_options: Any,
) -> Task:
    """A Task over a VerilogEval copy the user has: a v2 directory (mode spec-to-rtl or
    code-complete) or, with mode "v1", the problems JSONL (+ descriptions JSONL); mode None
    detects the format. Every reference is run once here (calibrate=True; cached per
    toolchain) and problems whose reference fails are excluded with the measured reason
    unless include_known_bad. Exclusions are in task.excluded as {id: reason};
    task.reader_facts.policy says which problems upstream discussed and whether they were
    excluded (policy_exclusions)."""
    mode_name, _ = resolve_mode(path, mode)
    if mode_name == "v1":
        read = read_v1(path, descriptions, policy_exclusions=policy_exclusions)
    else:
        read = read_v2(path, mode_name, policy_exclusions=policy_exclusions)  # type: ignore[arg-type]
    samples, excluded = pick_problems(read.samples, read.excluded, problems, limit)
    scorer_options.setdefault("sim_wall_s", SIM_WALL_S)
    scorer = VerilogScorer(**scorer_options)
    measured: dict[str, str] = {}
    if calibrate and samples:
        measured = run_sync(measure_exclusions(samples, scorer, progress))
        samples = apply_calibration(samples, excluded, measured, include_known_bad)
    return Task(
        name=f"verilogeval-{mode_name}",
        dataset=samples,
        scorer=scorer,
        metadata={
            "language": "verilog",
            "source": str(path),
            "measured_failures": measured,
            "include_known_bad": include_known_bad,
        },
        excluded=excluded,
        reader_facts=ReaderFacts(policy={"applied": policy_exclusions, "problems": read.policy}),
    )


def register_verilogeval(
    path: str | Path, mode: Mode | None = "spec-to-rtl", name: str | None = None, **defaults: Any
) -> str:
    """Register a suite for the user's copy (e.g. from the CLI's --verilogeval PATH); returns
    its name, `verilogeval-<mode>` unless given."""
    mode_name, _ = resolve_mode(path, mode)
    suite = name or f"verilogeval-{mode_name}"

    @register_suite(suite, f"VerilogEval {mode_name} from {path}")
    def _factory(**options: Any) -> Task:
        return verilogeval(path, mode_name, **{**defaults, **options})  # type: ignore[arg-type]

    return suite


__all__ = [
    "KNOWN_BAD",
    "MODES",
    "POLICY_EXCLUSIONS",
    "ReadResult",
    "UnsupportedTestbench",
    "VerilogEvalFormatError",
    "detect",
    "instrument_testbench",
    "interface_of",
    "measure_exclusions",
    "read_v1",
    "read_v2",
    "register_verilogeval",
    "resolve_mode",
    "verilogeval",
]
