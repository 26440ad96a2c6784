"""Reader for RTLLM 2.0 (hkust-zhiyao/RTLLM), from a checkout the user has (nothing is
downloaded).

Layout: `<category>/<group>/<design>/` holds `design_description.txt` (the prompt),
`testbench.v` (a self-checking testbench that prints `...Your Design Passed...` when its own
checks found no error), `verified_<something>.v` (the reference, whose module is usually
named `verified_<design>`) and sometimes data files the testbench reads at run time
(`$readmemh("reference.txt", ...)`, `$fopen("test_data.dat")`).

Upstream's verdict (`auto_run.py`) is "the simulation's output contains `Pass` or `pass`",
which one `$display` in the candidate forges. Ours is what the testbench's checks decide:

* the testbench is instrumented, not trusted: its one pass message also increments a counter
  of ours, and a `final` block prints the nonce-keyed verdict line the scorer reads
  (`CGE-VERDICT <nonce> errors=<0 when the pass message ran> samples=1 timeout=0`);
* the candidate is compiled last, with `-s <testbench>` (an uninstantiated module of the
  candidate is no second root, as it is under VCS), and the compiled design is screened as in
  every Verilog reader here (`codegen_eval/suites/verilog/screen.py`): no system task in the
  candidate's scopes (no `$display`, no `$finish`), no reach into the testbench, no new
  driver on a testbench net;
* the time scale is VCS's `-timescale=1ns/1ns`: the testbench and the candidate each get
  1ns/1ns unless they declare their own (`resetall` between them).

Upstream's rule is applied to the same run's output and reported next to ours as
`metrics["upstream_pass"]`, labelled forgeable; it never decides the verdict.

Exclusions are measured: each reference runs once on this machine's toolchain (cached per
toolchain) and a design whose reference fails is excluded with the measured reason and, from
that error, whether a newer Icarus Verilog is expected to fix it (`newer_icarus`).
"""

from __future__ import annotations

import bisect
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from codegen_eval.errors import CodegenEvalError
from codegen_eval.readers._pick import Problems, apply_calibration, pick_problems
from codegen_eval.readers.verilogeval import measure_exclusions, run_sync
from codegen_eval.registry import register_suite
from codegen_eval.suites.verilog import VerilogScorer
from codegen_eval.suites.verilog.harness import RunOutput
from codegen_eval.suites.verilog.judge import tail
from codegen_eval.suites.verilog.tbgen import NONCE_PLUSARG, TAG, VERDICT_PREFIX
from codegen_eval.types import Sample, Score, Task
from sandboxes import ExecStatus

SIM_WALL_S = 8.0  # auto_run.py's exec_shell timeout for `make sim`
DEFAULT_TIMESCALE = "`timescale 1ns/1ns"  # the makefiles' `vcs -timescale=1ns/1ns`
_PASS_DISPLAY = re.compile(
    r'\$display\s*\(\s*"(?:[^"\\\n]|\\.)*Your\s+Design\s+Passed(?:[^"\\\n]|\\.)*"\s*\)\s*;'
)
_MODULE = re.compile(r"\bmodule\s+([A-Za-z_][A-Za-z0-9_$]*)")
_DATA_CALL = re.compile(r'\$(?:readmem[hb]|fopen)\s*\(\s*"([^"\\\n]+)"')
_DEFINE = re.compile(r'`define\s+(\w+)\s+"([^"\\\n]+)"')
_NONCE, _PASSES = f"cge_nonce_{TAG}", f"cge_passes_{TAG}"
_MAX_DATA_BYTES = 4 << 20
TB_LINE_OFFSET = 1  # the instrumented testbench's line N is testbench.v's line N - 1
_TB_LINE = re.compile(r"\btb\.sv:(\d+)")


class RtllmFormatError(CodegenEvalError, ValueError):
    """The path is not an RTLLM checkout (or design directory); the message says why."""


class UnsupportedTestbench(CodegenEvalError, ValueError):
    """The testbench lacks what the instrumentation needs (one live pass message)."""


# -- text helpers ----------------------------------------------------------------------------
_LEXEME = re.compile(r'"(?:[^"\\\n]|\\.)*"?|//[^\n]*|/\*.*?(?:\*/|\Z)', re.DOTALL)


def _comments(text: str) -> list[tuple[int, int]]:
    """The (start, end) spans of comments, found as the compiler finds them: strings first
    (a `//` inside a string is text), then line and block comments."""
    return [m.span() for m in _LEXEME.finditer(text) if m.group(0)[0] == "/"]


def _in_comment(pos: int, spans: list[tuple[int, int]]) -> bool:
    i = bisect.bisect_right(spans, (pos, 1 << 62)) - 1
    return i >= 0 and spans[i][0] <= pos < spans[i][1]


def _code_only(text: str) -> str:
    """The text with every comment blanked (offsets kept)."""
    out, last = [], 0
    for a, b in _comments(text):
        out += [text[last:a], " " * (b - a)]
        last = b
    return "".join([*out, text[last:]])


def _live(text: str, pattern: re.Pattern[str]) -> list[re.Match[str]]:
    spans = _comments(text)
    return [m for m in pattern.finditer(text) if not _in_comment(m.start(), spans)]


def testbench_top(text: str) -> str:
    """The testbench's module: the one holding the pass message (RTLLM has one per file)."""
    mods = _live(text, _MODULE)
    if not mods:
        raise UnsupportedTestbench("no module in testbench.v")
    passes = _live(text, _PASS_DISPLAY)
    if not passes:
        return mods[0].group(1)
    return [m for m in mods if m.start() < passes[0].start()][-1].group(1)


def instrument_testbench(text: str) -> tuple[str, str]:
    """(instrumented testbench, its module name). The one live `$display("...Your Design
    Passed...")` also counts itself, and a `final` block prints our verdict line; names,
    ports and behaviour are otherwise unchanged. The text starts from VCS's default time
    scale and ends with a `resetall` back to it, for the candidate compiled next."""
    passes = _live(text, _PASS_DISPLAY)
    if len(passes) != 1:
        raise UnsupportedTestbench(
            f'expected one live `$display("...Your Design Passed...")`, found {len(passes)}'
        )
    top = testbench_top(text)
    header = re.compile(rf"\bmodule\s+{re.escape(top)}\b[^;]*;")
    hm = next((m for m in _live(text, header)), None)
    if hm is None:
        raise UnsupportedTestbench(f"no header `module {top} ...;` found")
    p = passes[0]
    # One line, after the header: the testbench's own line numbers move by the one line of
    # the time scale put in front (TB_LINE_OFFSET), which reasons and messages undo.
    body = (
        f" reg [127:0] {_NONCE}; integer {_PASSES} = 0;"
        f' initial if (!$value$plusargs("{NONCE_PLUSARG}=%h", {_NONCE})) {_NONCE} = 0;'
        f' final $display("{VERDICT_PREFIX} %032h errors=%0d samples=1 timeout=0", '
        f"{_NONCE}, {_PASSES} == 0);"
    )
    out = (
        text[: hm.end()]
        + body
        + text[hm.end() : p.start()]
        + f"begin {p.group(0)} {_PASSES} = {_PASSES} + 1; end"
        + text[p.end() :]
    )
    return f"{DEFAULT_TIMESCALE}\n{out}\n`resetall\n{DEFAULT_TIMESCALE}\n", top


def design_top(design: str, testbench: str, description: str) -> str:
    """The module the testbench instantiates: the directory's name, else the description's
    `Module name:` (RTLLM's fixed_point_substractor instantiates fixed_point_subtractor)."""
    names = [design]
    m = re.search(r"Module name:\s*([A-Za-z_]\w*)", description, re.IGNORECASE)
    if m:
        names.append(m.group(1))
    code = _code_only(testbench)
    for name in names:
        if re.search(rf"(?<![\w$.]){re.escape(name)}\s*(?:#|[A-Za-z_]\w*\s*\()", code):
            return name
    raise UnsupportedTestbench(f"the testbench instantiates none of {', '.join(names)}")


def reference_as(top: str, text: str) -> tuple[str, str]:
    """(the reference submitted as `top`, a note). Upstream's file names say `verified_` is
    a prefix on a design's name: it is dropped. When the reference still defines no `top`,
    its first module is renamed (two RTLLM references name theirs after an older design)."""
    text = re.sub(r"\bverified_", "", text)
    if re.search(rf"\bmodule\s+{re.escape(top)}\b", text):
        return text, ""
    first = next(iter(_live(text, _MODULE)), None)
    if first is None:
        raise UnsupportedTestbench("the reference defines no module")
    old = first.group(1)
    text = re.sub(rf"(?<![\w$]){re.escape(old)}(?![\w$])", top, text)
    return text, f"reference module {old} renamed to {top}"


def data_files(testbench: str, directory: Path) -> dict[str, str]:
    """The files the testbench reads by name ($readmemh/$readmemb/$fopen, also through a
    `define), taken from the design's directory."""
    macros = dict(_DEFINE.findall(testbench))
    names = {m.group(1) for m in _live(testbench, _DATA_CALL)}
    for m in _live(testbench, re.compile(r"\$fopen\s*\(\s*`(\w+)")):
        if m.group(1) in macros:
            names.add(macros[m.group(1)])
    found: dict[str, str] = {}
    for name in sorted(names):
        path = directory / name
        if "/" in name or name.startswith(".") or not path.is_file():
            continue  # a missing file fails the reference too: the exclusion says so
        if path.stat().st_size > _MAX_DATA_BYTES:
            raise UnsupportedTestbench(f"data file {name} is over {_MAX_DATA_BYTES} bytes")
        found[name] = path.read_text(errors="replace")
    return found


# -- reading ---------------------------------------------------------------------------------
@dataclass(slots=True)
class ReadResult:
    samples: list[Sample] = field(default_factory=list)
    excluded: list[tuple[str, str]] = field(default_factory=list)  # (id, reason)


def design_dirs(root: str | Path) -> list[Path]:
    """Every design directory under `root` (one with design_description.txt and
    testbench.v), `root` itself included; upstream's `_chatgpt*` answer folders are skipped."""
    p = Path(root)
    if not p.exists():
        raise RtllmFormatError(f"{p} does not exist")
    if not p.is_dir():
        raise RtllmFormatError(f"{p} is not a directory: give an RTLLM checkout")
    found = [
        d.parent
        for d in p.rglob("design_description.txt")
        if (d.parent / "testbench.v").is_file()
        and not any(part.startswith(("_", ".")) for part in d.parent.relative_to(p).parts)
    ]
    if not found:
        raise RtllmFormatError(
            f"{p} has no RTLLM designs (directories with design_description.txt and "
            "testbench.v): give a checkout of hkust-zhiyao/RTLLM"
        )
    return sorted(found, key=lambda d: d.name)


def read_design(d: Path) -> Sample:
    """One design directory as a Sample (raises UnsupportedTestbench with why not)."""
    name = d.name
    description = (d / "design_description.txt").read_text(errors="replace")
    raw_tb = (d / "testbench.v").read_text(errors="replace")
    refs = sorted(d.glob("verified_*.v"))
    if len(refs) != 1:
        raise UnsupportedTestbench(f"expected one verified_*.v reference, found {len(refs)}")
    top = design_top(name, raw_tb, description)
    tb, tb_top = instrument_testbench(raw_tb)
    reference, note = reference_as(top, refs[0].read_text(errors="replace"))
    files = {"tb.sv": tb}
    files.update({f"data/{n}": t for n, t in data_files(raw_tb, d).items()})
    meta: dict[str, Any] = {
        "language": "verilog",
        "suite": "rtllm",
        "top": top,
        "tb_top": tb_top,
        "verilog_rules": "builtin",
        "reset_candidate": False,  # the testbench's text ends with `resetall + time scale
        "upstream_id": name,
        "category": "/".join(d.parts[-3:-1]),
        "reference_file": refs[0].name,
    }
    if note:
        meta["reference_note"] = note
    return Sample(id=name, input=description, target=reference, metadata=meta, files=files)


def read_rtllm(root: str | Path) -> ReadResult:
    result = ReadResult()
    for d in design_dirs(root):
        try:
            result.samples.append(read_design(d))
        except UnsupportedTestbench as exc:
            result.excluded.append((d.name, f"unsupported: {exc}"))
    return result


# -- scoring ---------------------------------------------------------------------------------
def upstream_pass(stdout: str, completed: bool) -> bool:
    """auto_run.py's rule on a run's output: it finished in time and says Pass or pass."""
    lines = [x for x in stdout.splitlines() if not x.startswith(VERDICT_PREFIX)]
    text = "\n".join(lines)
    return completed and ("Pass" in text or "pass" in text)


class RtllmScorer(VerilogScorer):
    """The verilog suite's scorer (compile, screen, nonce-keyed verdict, calibrated sample
    count) with upstream's forgeable verdict next to ours in `metrics["upstream_pass"]`:
    one run, two verdicts."""

    def prepare(self, code: str, sample: Sample) -> str:
        return code  # RTLLM answers are whole modules, compiled as given

    def finish(self, score: Score, out: RunOutput) -> Score:
        return annotate(score, out)


def annotate(score: Score, out: RunOutput) -> Score:
    """Our score with upstream's verdict on the same run beside it, and the testbench's own
    words (not our counters) where its checks failed."""
    completed = out.compiled and out.exec_result.status is ExecStatus.OK
    up = upstream_pass(out.sim_stdout, completed)
    metrics = dict(score.metrics)
    metrics["upstream_pass"] = 1.0 if up else 0.0
    explanation = testbench_lines(score.explanation)
    if score.status == "pass":
        explanation = "the testbench's checks passed"
    elif score.failure_class == "sim_mismatch":
        said = [
            x for x in out.sim_stdout.splitlines() if x.strip() and not x.startswith(VERDICT_PREFIX)
        ]
        explanation = "the testbench's checks failed (its pass message never ran)"
        if said:
            explanation += "; it printed:\n" + tail("\n".join(said), 800)
    explanation += f"\nupstream's rule (forgeable: any 'Pass' in the output): {_word(up)}"
    return Score(score.value, score.status, score.failure_class, metrics, explanation)


def _word(passed: bool) -> str:
    return "pass" if passed else "fail"


# -- exclusions ------------------------------------------------------------------------------
EXCLUSIONS_FILE = Path(__file__).with_name("rtllm_exclusions.json")


def _recorded() -> dict[str, Any]:
    try:
        return json.loads(EXCLUSIONS_FILE.read_text())
    except (OSError, ValueError):
        return {}


def newer_icarus(reason: str, design: str | None = None) -> str:
    """Whether a newer Icarus Verilog fixes a reference's failure: measured, where
    rtllm_exclusions.json recorded this design failing for this reason and the result of
    upstream's flow on a newer Icarus (tests/.../test_rtllm_real.py checks the record);
    otherwise read from the measured error (not from the design's name)."""
    record = _recorded()
    rec = (record.get("designs") or {}).get(design or "")
    if rec and rec.get("reason") and rec["reason"] in reason and "newer_icarus" in rec:
        return str(rec["newer_icarus"])
    text = reason.lower()
    if "sorry:" in text:
        return "likely: iverilog reports the construct as not supported yet ('sorry')"
    if "unknown module type" in text or "compile_error:missing_top" in text:
        return "no: the testbench instantiates a module the reference does not define"
    if text.startswith("compile_error"):
        return "unknown: iverilog rejects it as an error, not as unsupported"
    if text.startswith(("sim_mismatch", "timeout")):
        return "no: it compiles and runs; the testbench's own checks fail"
    return "unknown"


def rtllm(
    root: str | Path,
    *,
    problems: Problems = None,
    limit: int | None = None,
    include_known_bad: bool = False,
    calibrate: bool = True,
    progress: Any = None,
    **scorer_options: Any,
) -> Task:
    """A Task over an RTLLM checkout. Every reference is run once here (calibrate=True,
    cached per toolchain) and designs whose reference fails are excluded with the measured
    reason and `newer_icarus` (task.excluded: {id: reason}, and
    task.metadata["newer_icarus"]: {id: assessment}), unless include_known_bad."""

    read = read_rtllm(root)
    samples, excluded = pick_problems(read.samples, read.excluded, problems, limit)
    scorer_options.setdefault("sim_wall_s", SIM_WALL_S)
    scorer = RtllmScorer(**scorer_options)
    measured: dict[str, str] = {}
    if calibrate and samples:
        raw = run_sync(measure_exclusions(samples, scorer, progress))
        measured = {i: exclusion_reason(r) for i, r in raw.items()}
        samples = apply_calibration(
            samples, excluded, measured, include_known_bad,
            lambda i, r: f"{r}; newer Icarus: {newer_icarus(_bare(r), i)}",
        )  # fmt: skip
    return Task(
        name="rtllm",
        dataset=samples,
        scorer=scorer,
        metadata={
            "language": "verilog",
            "source": str(root),
            "measured_failures": measured,
            "newer_icarus": {i: newer_icarus(_bare(r), i) for i, r in measured.items()},
            "include_known_bad": include_known_bad,
            "verdict": "trusted (testbench's checks); upstream's forgeable rule in "
            "metrics.upstream_pass",
        },
        excluded=excluded,
    )


def _bare(reason: str) -> str:
    """measure_exclusions' "the reference fails here (iverilog ...): <class>: ..." -> the
    part from the failure class on."""
    return reason.split("): ", 1)[1] if "): " in reason else reason


def testbench_lines(text: str) -> str:
    """Messages about the instrumented testbench (tb.sv:N) in testbench.v's line numbers."""
    return _TB_LINE.sub(lambda m: f"testbench.v:{int(m.group(1)) - TB_LINE_OFFSET}", text)


def exclusion_reason(reason: str) -> str:
    """A measured reason in the testbench's own terms (our verdict line says `Mismatches:
    1 in 1 samples` when the testbench's pass message never ran)."""
    reason = testbench_lines(reason)
    return reason.replace(
        "sim_mismatch: Mismatches: 1 in 1 samples",
        "sim_mismatch: the testbench's checks fail (its pass message never ran)",
    )


def register_rtllm(root: str | Path, name: str = "rtllm", **defaults: Any) -> str:
    """Register a suite for the user's checkout (the CLI's --rtllm PATH); returns its name."""
    design_dirs(root)  # a clear error now rather than when the suite is built

    @register_suite(name, f"RTLLM 2.0 from {root}")
    def _factory(**options: Any) -> Task:
        return rtllm(root, **{**defaults, **options})

    return name


__all__ = [
    "EXCLUSIONS_FILE",
    "RtllmFormatError",
    "RtllmScorer",
    "UnsupportedTestbench",
    "design_dirs",
    "design_top",
    "instrument_testbench",
    "newer_icarus",
    "read_design",
    "read_rtllm",
    "reference_as",
    "register_rtllm",
    "rtllm",
    "upstream_pass",
]
