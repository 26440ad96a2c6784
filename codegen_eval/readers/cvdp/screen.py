"""The screen for CVDP designs: what the candidate's Verilog may call inside the simulator.

In a cocotb run the design under test and the tests share one process: vvp loads cocotb's
VPI library, which runs the harness's Python. Upstream's verdict is pytest's exit status,
which follows the results file cocotb writes (`<test>.result.xml`) in the simulator's
working directory, so a design with a `final` block that `$fopen`s that file and writes
three passing test cases passes upstream's flow while every test failed (measured; see
tests/codegen_eval/readers/test_cvdp_cheats.py). The design must therefore not write,
read or end anything: we read what vvp ran (the compiled design the `vvp` shim archived,
after the preprocessor and compiler have expanded every macro) and check each system task
or function call:

* made from a candidate file (the answer's files; each call in the compiled design carries
  the index of its source file): only pure functions ($clog2, $bits, ...) and text output
  ($display and friends: the verdict never reads the log) are allowed, so no `$fopen`/
  `$fwrite`, `$dumpfile`, `$readmem*` (which would read the harness's expected data),
  `$finish`/`$stop`/`$fatal`, plusargs;
* made from any other file (the harness's own Verilog, cocotb's wave-dump module): must be
  one the reference's run also made (same file, line, task), so the candidate cannot slip
  calls into harness code through a macro it defines;
* the VPI modules loaded are the reference run's.

`` `include `` in a candidate file is refused on its text (it could read a harness file at
compile time). What this does not check: how the candidate's macros change the harness's
own Verilog (CVDP harnesses are Python; a Verilog harness file is rare).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from codegen_eval.suites.verilog.screen import ALLOWED_SYSTEM_FUNCTIONS, forbidden_constructs
from codegen_eval.suites.verilog.vvp import Design, VvpSyntaxError, parse

# Text output only: what a design prints never reaches the verdict.
_OUTPUT_TASKS = frozenset(
    f"${base}{radix}"
    for base in ("display", "write", "strobe", "monitor")
    for radix in ("", "b", "h", "o")
) | {"$monitoron", "$monitoroff", "$info", "$warning", "$error", "$sformat", "$sformatf",
     "$swrite", "$time", "$stime", "$realtime", "$random", "$urandom", "$urandom_range"}  # fmt: skip
ALLOWED = ALLOWED_SYSTEM_FUNCTIONS | _OUTPUT_TASKS
_LINE = re.compile(r"`\s*line\b")
# cocotb's own wave-dump module (runner.build(waves=True)): trusted without a reference run.
_DUMP = "cocotb_iverilog_dump.v"


@dataclass(frozen=True, slots=True)
class Finding:
    failure_class: str
    message: str


@dataclass(slots=True)
class DesignFacts:
    """What the screen needs from a design that ran: the harness's own calls and modules."""

    harness_calls: set[tuple[str, int, str]] = field(default_factory=set)  # (file, line, name)
    vpi_modules: list[str] = field(default_factory=list)


def _base(name: str) -> str:
    return name.rsplit("/", 1)[-1]


def _is_candidate(fname: str, candidate_files: set[str]) -> bool:
    """Whether a compiled file name is one of the answer's files (`rtl/x.sv` is compiled as
    /code/rtl/x.sv, or as given relative to the run directory)."""
    f = fname.replace("\\", "/")
    return any(f == c or f.endswith("/" + c) for c in candidate_files)


def _calls(design: Design) -> list[tuple[str, int, str]]:
    """(source file, line, system task) of every call in the design."""
    out = []
    for st in design.stmts:
        name = st.syscall()
        if name is None:
            continue
        toks = st.tokens
        fidx = int(toks[0]) if toks and toks[0].isdigit() else -1
        line = int(toks[1]) if len(toks) > 1 and toks[1].isdigit() else -1
        fname = design.files[fidx] if 0 <= fidx < len(design.files) else "?"
        out.append((fname, line, name))
    return out


def facts(text: str, candidate_files: set[str]) -> DesignFacts:
    """The harness calls and VPI modules of a trusted (reference) run's design."""
    d = parse(text)
    calls = {(f, ln, n) for f, ln, n in _calls(d) if not _is_candidate(f, candidate_files)}
    return DesignFacts(calls, d.vpi_modules())


def screen_source(code: str) -> list[Finding]:
    found = [
        Finding(
            f"forbidden_construct:{bad}",
            f"the candidate uses {bad}, which a design under test may not use (it would read "
            "a file of the harness while compiling)",
        )
        for bad in forbidden_constructs(code)
    ]
    if _LINE.search(code):
        found.append(
            Finding(
                "forbidden_construct:`line",
                "the candidate uses `line, which would make its code look like another file's",
            )
        )
    return found


def screen_design(text: str, candidate_files: set[str], ref: DesignFacts | None) -> list[Finding]:
    """[] when the compiled design may count; else what it does that it may not."""
    try:
        d = parse(text)
    except VvpSyntaxError as exc:
        return [Finding("tamper:unreadable_design", f"the design that ran is not vvp: {exc}")]
    findings: list[Finding] = []
    seen: set[str] = set()
    for fname, line, name in _calls(d):
        if _is_candidate(fname, candidate_files):
            if name in ALLOWED or name in seen:
                continue
            seen.add(name)
            findings.append(
                Finding(
                    f"forbidden_construct:{name}",
                    f"the design calls {name} ({_base(fname)}:{line}); a design under test may "
                    "call only pure functions and text output (it shares the simulator with "
                    "the tests and their results file)",
                )
            )
        elif name not in ALLOWED and (
            (fname, line, name) not in ref.harness_calls
            if ref is not None
            else _base(fname) != _DUMP
        ):
            findings.append(
                Finding(
                    "tamper:harness_changed",
                    f"{name} is called from {_base(fname)}:{line}, which the reference's run "
                    "did not do",
                )
            )
            break
    if ref is not None and d.vpi_modules() != ref.vpi_modules:
        findings.append(
            Finding(
                "tamper:harness_changed", "the design loads other VPI modules than the reference's"
            )
        )
    return findings
