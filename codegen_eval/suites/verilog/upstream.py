"""VerilogEval's own pass/fail rules, applied to the same logs, so our verdicts keep theirs.

Written from the behaviour of NVlabs/verilog-eval (not copied):

* v2 (`scripts/sv-iv-analyze`): the log is iverilog's output followed by the simulation's.
  Scanning it line by line, the first of these decides: "syntax error" (S), a line with
  "error: This assignment requires an explicit cast" (e), "error: Sized numeric constant must
  have a size greater than zero" (0), "always_comb process has no sensitivities" or "found no
  sensitivities so it will never trigger" (n, two *warnings* that fail a sample), "is declared
  here as wire" (w), "Unknown module type" (m), "Unable to bind wire/reg/memory `clk'" (c),
  "TIMEOUT" (T). Otherwise "Unable to bind wire/reg" anywhere gives p, any other line holding
  "error" gives C, and a line `Mismatches: 0 in N samples` gives a pass ("."); else R.
* v1 (`verilog_eval/execution.py`): "syntax error" on stderr fails, any other stderr output
  (iverilog warnings included) fails as a compile error, and otherwise the first
  `Mismatches: X in Y samples` on stdout passes when X is 0.
"""

from __future__ import annotations

import re

V2_PASS = "."
_V2_FIRST = (
    ("syntax error", "S"),
    ("error: This assignment requires an explicit cast", "e"),
    ("error: Sized numeric constant must have a size greater than zero", "0"),
    ("warning: always_comb process has no sensitivities", "n"),
    ("found no sensitivities so it will never trigger", "n"),
    ("is declared here as wire", "w"),
    ("Unknown module type", "m"),
    ("Unable to bind wire/reg/memory `clk'", "c"),
    ("TIMEOUT", "T"),
)
_V2_MISMATCH = re.compile(r"^Mismatches: (\d+) in \d+ samples$")
_V1_MISMATCH = re.compile(r"Mismatches: ([0-9]*) in ([0-9]*) samples")

# What each upstream outcome means in our vocabulary.
V2_CLASSES = {
    "S": "compile_error:syntax",
    "e": "compile_error:type",
    "0": "compile_error:type",
    "n": "compile_error:no_sensitivity",
    "w": "compile_error:type",
    "m": "compile_error:undeclared",
    "c": "compile_error:interface",
    "T": "timeout:sim_time",
    "p": "compile_error:interface",
    "C": "compile_error:other",
    "R": "sim_mismatch",
}


def v2_outcome(log: str) -> str:
    """The one-letter outcome sv-iv-analyze gives a sample log ("." is a pass)."""
    error_p = error_c = zero_mismatches = False
    for line in log.splitlines():
        for needle, code in _V2_FIRST:
            if needle in line:
                return code
        if "error" in line:
            error_c = True
        if "Unable to bind wire/reg" in line:
            error_p = True
        m = _V2_MISMATCH.match(line)
        if m and int(m.group(1)) == 0:
            zero_mismatches = True
    if error_p:
        return "p"
    if error_c:
        return "C"
    return V2_PASS if zero_mismatches else "R"


def v1_outcome(stdout: str, stderr: str) -> str:
    """The result string v1's check_correctness gives ("passed" is a pass)."""
    m = _V1_MISMATCH.search(stdout)
    if "syntax error" in stderr:
        return "failed: syntax error."
    if stderr:
        return "failed: compile error."
    if m:
        wrong, total = int(m.group(1) or 0), int(m.group(2) or 0)
        return "passed" if wrong == 0 else f"failed: {wrong} out of {total} samples."
    return "failed: info string not matched."


def v2_line(log: str, code: str) -> str:
    """The log line behind an outcome, for explanations."""
    for line in log.splitlines():
        if code in ("n",) and "sensitivities" in line:
            return line.strip()
        if code == "C" and "error" in line:
            return line.strip()
        if code == "T" and "TIMEOUT" in line:
            return line.strip()
    return ""


__all__ = ["V2_CLASSES", "V2_PASS", "v1_outcome", "v2_line", "v2_outcome"]
