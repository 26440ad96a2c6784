"""Readers for the public VerilogEval formats, from paths the user gives (nothing is downloaded).

* v2 directories (`dataset_spec-to-rtl/`, `dataset_code-complete-iccad2023/`): per problem
  `ProbNNN_name_prompt.txt`, `ProbNNN_name_ref.sv` (module RefModule) and
  `ProbNNN_name_test.sv` (module tb, instantiating RefModule and TopModule, printing
  `Mismatches: N in M samples` in a final block). In code-complete mode the prompt ends with
  the module header and an answer may be the body only.
* v1 JSONL (`VerilogEval_Human.jsonl` / `_Machine.jsonl`: task_id, prompt = the
  `module top_module(...)` header, canonical_solution = the body, test = reference_module +
  testbench) with an optional descriptions JSONL (task_id, detail_description,
  simple_description).

Both are scored by the verilog suite's `VerilogScorer`. The user's testbench is instrumented,
not trusted: `module tb` and its instance/counter names get the per-run tag, and next to the
`Mismatches:` line it prints the nonce-keyed verdict line the scorer reads (see
codegen_eval/suites/verilog/scorer.py). Upstream problems known to be broken are listed in
KNOWN_BAD and reported as excluded (with the reason) unless include_known_bad=True.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from codegen_eval.readers._jsonl import jsonl_records
from codegen_eval.registry import register_suite
from codegen_eval.suites.verilog import VerilogScorer
from codegen_eval.suites.verilog.tbgen import NONCE_PLUSARG, TAG, VERDICT_PREFIX
from codegen_eval.types import Sample, Task

Mode = Literal["spec-to-rtl", "code-complete", "v1"]
V2_DIRS = {"spec-to-rtl": "dataset_spec-to-rtl", "code-complete": "dataset_code-complete-iccad2023"}

# Upstream problems with a known defect, keyed by v2 number (ProbNNN) or v1 task_id. Sources:
# NVlabs/verilog-eval issues #8, #13, #21 and pull request #16 (the v2.1 errata).
KNOWN_BAD: dict[str, str] = {
    "Prob082": "the reference, submitted as the candidate, hits the testbench's TIMEOUT (issue #21)",
    "Prob099": "testbench connects ports Y2/Y4 but prompt and reference declare Y1/Y3: even "
    "the reference does not compile (issue #13, PR #16)",
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

_TB_MODULE = re.compile(r"\bmodule\s+tb\s*(?:\(\s*\))?\s*;")
_MISMATCH_DISPLAY = re.compile(
    r'\$display\(\s*"Mismatches:\s*%\w*d\s+in\s+%\w*d\s+samples"\s*,\s*(?P<a>[^,;]+?)\s*,'
    r"\s*(?P<b>[^;]+?)\s*\)\s*;"
)
_TIMEOUT_DISPLAY = re.compile(r'\$display\(\s*"TIMEOUT"\s*\)\s*;')
# Names in the upstream testbenches a hierarchical reference could aim at.
_TB_NAMES = ("stats1", "good1", "stim1", "top_module1", "tb_match", "tb_mismatch")


class UnsupportedTestbench(ValueError):
    """The testbench lacks what the instrumentation needs (module tb, the Mismatches line)."""


def instrument_testbench(text: str) -> str:
    """Turn an upstream testbench into a template with ``__TAG__`` placeholders that also
    prints ``CGE-VERDICT <nonce> errors=N samples=M timeout=T``."""
    if not _TB_MODULE.search(text):
        raise UnsupportedTestbench("no `module tb();` found")
    if not _MISMATCH_DISPLAY.search(text):
        raise UnsupportedTestbench('no `$display("Mismatches: %1d in %1d samples", ...)` found')
    for name in _TB_NAMES:
        text = re.sub(rf"\b{name}\b", f"{name}_{TAG}", text)
    nonce, to = f"cge_nonce_{TAG}", f"cge_to_{TAG}"
    header = (
        f"module tb_{TAG}();\n  reg [127:0] {nonce};\n  reg {to} = 0;\n"
        f'  initial if (!$value$plusargs("{NONCE_PLUSARG}=%h", {nonce})) {nonce} = 0;\n'
    )
    text = _TB_MODULE.sub(lambda _: header, text, count=1)
    text = _TIMEOUT_DISPLAY.sub(lambda m: f"begin {to} = 1; {m.group(0)} end", text)

    def verdict(m: re.Match[str]) -> str:
        return (
            f'begin {m.group(0)}\n    $display("{VERDICT_PREFIX} %032h errors=%0d samples=%0d '
            f'timeout=%0d", {nonce}, {m["a"]}, {m["b"]}, {to}); end'
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


def _known_bad(pid: str) -> str | None:
    return KNOWN_BAD.get(pid.split("_", 1)[0]) or KNOWN_BAD.get(pid)


def _v2_dir(path: Path, mode: str) -> Path:
    sub = path / V2_DIRS[mode]
    return sub if sub.is_dir() else path


def read_v2(
    path: str | Path, mode: Mode = "spec-to-rtl", *, include_known_bad: bool = False
) -> ReadResult:
    """Read a v2 dataset directory (or a checkout containing dataset_<mode>/)."""
    if mode not in V2_DIRS:
        raise ValueError(f"mode must be one of {sorted(V2_DIRS)} for v2 directories")
    root = _v2_dir(Path(path), mode)
    prompts = sorted(root.glob("*_prompt.txt"))
    if not prompts:
        raise FileNotFoundError(f"no *_prompt.txt files in {root}")
    result = ReadResult()
    for pfile in prompts:
        pid = pfile.name[: -len("_prompt.txt")]
        bad = _known_bad(pid)
        if bad and not include_known_bad:
            result.excluded.append((pid, f"known bad upstream: {bad}"))
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
            "tb_top": f"tb_{TAG}",
            "expected_samples": None,
            "upstream_id": pid,
        }
        if mode == "code-complete":
            meta["interface"] = interface_of(prompt, "TopModule")
        if bad:
            meta["known_bad"] = bad
        ref_text = ref.read_text()
        result.samples.append(
            Sample(
                id=pid,
                input=prompt,
                target=ref_text.replace("RefModule", "TopModule"),
                metadata=meta,
                files={"ref.sv": ref_text, "tb.sv": tb},
            )
        )
    return result


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [row for _, row in jsonl_records(path)]


def read_v1(
    problems_jsonl: str | Path,
    descriptions_jsonl: str | Path | None = None,
    *,
    description: Literal["detail", "simple"] = "detail",
    include_known_bad: bool = False,
) -> ReadResult:
    """Read v1 JSONL. With descriptions the prompt is the description followed by the module
    header; without them it is the header alone (the original completion setting)."""
    descs: dict[str, str] = {}
    if descriptions_jsonl is not None:
        key = f"{description}_description"
        for row in _read_jsonl(Path(descriptions_jsonl)):
            descs[row["task_id"]] = str(row.get(key, "")).strip()
    result = ReadResult()
    for row in _read_jsonl(Path(problems_jsonl)):
        tid = str(row["task_id"])
        bad = _known_bad(tid)
        if bad and not include_known_bad:
            result.excluded.append((tid, f"known bad upstream: {bad}"))
            continue
        header = str(row["prompt"])
        try:
            tb = instrument_testbench(str(row["test"]))
        except UnsupportedTestbench as exc:
            result.excluded.append((tid, f"unsupported testbench: {exc}"))
            continue
        desc = descs.get(tid, "")
        prompt = f"{desc}\n\n{header}" if desc else header
        meta: dict[str, Any] = {
            "language": "verilog",
            "suite": "verilogeval-v1",
            "top": "top_module",
            "tb_top": f"tb_{TAG}",
            "expected_samples": None,
            "interface": interface_of(header, "top_module") or header.strip(),
            "upstream_id": tid,
        }
        if bad:
            meta["known_bad"] = bad
        result.samples.append(
            Sample(
                id=tid,
                input=prompt,
                target=header + str(row.get("canonical_solution", "")),
                metadata=meta,
                files={"tb.sv": tb},
            )
        )
    return result


def verilogeval(
    path: str | Path,
    mode: Mode = "spec-to-rtl",
    *,
    descriptions: str | Path | None = None,
    problems: list[str] | str | None = None,
    limit: int | None = None,
    include_known_bad: bool = False,
    **scorer_options: Any,
) -> Task:
    """A Task over a VerilogEval copy the user has: a v2 directory (mode spec-to-rtl or
    code-complete) or, with mode "v1", the problems JSONL (+ descriptions JSONL).
    Excluded problems are in task.metadata["excluded"] as {id: reason}, the runner's
    convention (it logs them and the report lists them)."""
    if mode == "v1":
        read = read_v1(path, descriptions, include_known_bad=include_known_bad)
    else:
        read = read_v2(path, mode, include_known_bad=include_known_bad)
    samples = read.samples
    if problems:
        import fnmatch

        pats = [problems] if isinstance(problems, str) else list(problems)
        samples = [s for s in samples if any(fnmatch.fnmatchcase(s.id, p) for p in pats)]
    if limit is not None:
        samples = samples[:limit]
    return Task(
        name=f"verilogeval-{mode}",
        dataset=samples,
        scorer=VerilogScorer(**scorer_options),
        metadata={"language": "verilog", "source": str(path), "excluded": dict(read.excluded)},
    )


def register_verilogeval(
    path: str | Path, mode: Mode = "spec-to-rtl", name: str | None = None, **defaults: Any
) -> str:
    """Register a suite for the user's copy (e.g. from the CLI's --verilogeval PATH); returns
    its name, `verilogeval-<mode>` unless given."""
    suite = name or f"verilogeval-{mode}"

    @register_suite(suite, f"VerilogEval {mode} from {path}")
    def _factory(**options: Any) -> Task:
        return verilogeval(path, mode, **{**defaults, **options})

    return suite


__all__ = [
    "KNOWN_BAD",
    "ReadResult",
    "UnsupportedTestbench",
    "instrument_testbench",
    "interface_of",
    "read_v1",
    "read_v2",
    "register_verilogeval",
    "verilogeval",
]
