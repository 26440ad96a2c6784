"""From one compile-and-run (`harness.RunOutput`) to a `Score`, for candidates and for the
reference's own calibration run alike.

Order of the checks: the compile, the screen of the compiled design (candidates only), the
simulator's exit, exactly one verdict line with this run's nonce, the testbench's timeout
flag, the sample count against the reference's run, mismatches, and last the upstream
benchmark's own rules (VerilogEval), which can only turn a pass into a fail.
"""

from __future__ import annotations

import signal as _signal
from typing import Any

from codegen_eval.types import FailureClass, Score
from sandboxes import ExecStatus

from .harness import (
    HarnessSpec,
    RunOutput,
    classify_compile_error,
    compile_errors,
    error_stage,
    parse_verdicts,
)
from .screen import Finding, HarnessModel, screen
from .tbgen import OUTPUT_PREFIX, VERDICT_PREFIX
from .upstream import V2_CLASSES, V2_PASS, v1_outcome, v2_line, v2_outcome

_LIMITS = {
    ExecStatus.MEMORY_LIMIT: "memory",
    ExecStatus.OUTPUT_LIMIT: "output",
    ExecStatus.FILE_SIZE_LIMIT: "file_size",
    ExecStatus.PIDS_LIMIT: "pids",
}


def tail(text: str, n: int = 1500) -> str:
    return text if len(text) <= n else "..." + text[-n:]


def fail(failure_class: str, explanation: str, metrics: dict[str, float] | None = None) -> Score:
    return Score(0.0, "fail", failure_class, dict(metrics or {}), explanation)


def judge(
    out: RunOutput,
    spec: HarnessSpec,
    *,
    sim_wall_s: float,
    model: HarnessModel | None,
    expected_samples: int | None,
    check_screen: bool = True,
    note: str = "",
) -> Score:
    """The verdict of one run. `model` and `expected_samples` come from the reference's
    calibration run (None when there is none)."""
    res = out.exec_result
    metrics: dict[str, float] = {"run_s": round(res.wall_s, 4)}
    suffix = f"\n{note}" if note else ""
    if not out.compiled:
        if res.status in (ExecStatus.WALL_TIMEOUT, ExecStatus.CPU_LIMIT):
            return fail("timeout:compile", "iverilog did not finish compiling" + suffix, metrics)
        if res.status in _LIMITS:
            return fail(
                f"resource_limit:{_LIMITS[res.status]}",
                "iverilog hit a limit: " + tail(out.clean(res.stderr), 600) + suffix,
                metrics,
            )
        msgs = compile_errors(out)
        stage = error_stage(out, msgs, spec.top)
        detail = classify_compile_error(msgs, stage=stage)
        return fail(f"compile_error:{detail}", tail("\n".join(msgs)) + suffix, metrics)
    if out.vvp_problem:
        return fail("tamper:compiled_design", out.vvp_problem + suffix, metrics)
    if check_screen:
        assert out.design is not None
        found = screen(out.design, top=spec.top, tb_top=spec.tb_top.replace("__TAG__", out.tag),
                       tag=out.tag, model=model)  # fmt: skip
        if found:
            return _screened(found, metrics, suffix)
    if res.status in (ExecStatus.WALL_TIMEOUT, ExecStatus.CPU_LIMIT) or (
        res.status is ExecStatus.SIGNAL and res.signal in (_signal.SIGXCPU, _signal.SIGKILL)
    ):
        return fail(
            "timeout",
            f"simulation exceeded {sim_wall_s:g}s (a combinational loop or a design "
            "that never lets simulated time advance)" + suffix,
            metrics,
        )
    if res.status in _LIMITS:
        return fail(
            f"resource_limit:{_LIMITS[res.status]}",
            "the simulation hit a limit" + suffix,
            metrics,
        )
    if res.status is ExecStatus.SIGNAL:
        name = _signal.Signals(res.signal).name if res.signal else "signal"
        return fail(
            f"runtime_crash:{name}", "vvp died: " + tail(out.sim_stderr, 600) + suffix, metrics
        )
    if res.status is not ExecStatus.OK:
        return fail(
            "runtime_crash:vvp",
            f"vvp exited with status {res.exit_code}: " + tail(out.sim_stderr, 600) + suffix,
            metrics,
        )
    verdicts = parse_verdicts(out.sim_stdout, out.nonce)
    if len(verdicts) > 1:
        return fail(
            "tamper:verdict", "more than one verdict line carried this run's nonce", metrics
        )
    if not verdicts:
        return fail(
            "sim_mismatch:incomplete",
            "the testbench never reported: the simulation ended before its summary\n"
            + tail(out.sim_stdout + out.sim_stderr, 800)
            + suffix,
            metrics,
        )
    v = verdicts[0]
    metrics["mismatches"] = float(v.errors)
    metrics["samples"] = float(v.samples)
    if v.samples:
        metrics["match_ratio"] = round(1 - v.errors / v.samples, 6)
    summary = f"Mismatches: {v.errors} in {v.samples} samples"
    detail = ", ".join(
        f"{name}: {n} (first at t={first})" for name, (n, first) in v.per_output.items() if n
    )
    explanation = "\n".join(x for x in (summary, detail, note) if x)
    if v.timed_out:
        return fail("timeout:sim_time", "the testbench's TIMEOUT fired\n" + explanation, metrics)
    if v.samples == 0 or (expected_samples is not None and v.samples != expected_samples):
        want = f"the reference's run has {expected_samples}" if expected_samples else "none"
        return fail(
            "sim_mismatch:incomplete",
            f"incomplete run: {v.samples} samples, {want}\n" + explanation,
            metrics,
        )
    if v.errors:
        return fail("sim_mismatch", explanation, metrics)
    upstream = _upstream(out, spec)
    if upstream is not None:
        cls, why = upstream
        return fail(cls, why + "\n" + explanation, metrics)
    return Score(1.0, "pass", None, metrics, explanation)


def _screened(found: list[Finding], metrics: dict[str, float], suffix: str) -> Score:
    lines = [f"{f.failure_class}: {f.message}" for f in found]
    return fail(found[0].failure_class, "\n".join(lines) + suffix, metrics)


def _upstream(out: RunOutput, spec: HarnessSpec) -> tuple[str, str] | None:
    """VerilogEval's own rule on the same logs; None when it agrees with a pass."""
    # Upstream's logs do not have our verdict lines (whose "errors=" would read as an error).
    stdout = "".join(
        line for line in out.sim_stdout.splitlines(keepends=True)
        if not line.startswith((VERDICT_PREFIX, OUTPUT_PREFIX))
    )  # fmt: skip
    if spec.rules == "verilogeval-v2":
        log = out.compile_log + stdout + out.sim_stderr
        code = v2_outcome(log)
        if code != V2_PASS:
            line = out.clean(v2_line(log, code))
            return V2_CLASSES.get(code, FailureClass.COMPILE_ERROR), (
                f"VerilogEval's own analysis marks this run '{code}'"
                + (f": {line}" if line else "")
            )
    elif spec.rules == "verilogeval-v1":
        result = v1_outcome(stdout, out.compile_log + out.sim_stderr)
        if result != "passed":
            first = (
                out.clean((out.compile_log + out.sim_stderr).strip().splitlines()[0])
                if (out.compile_log + out.sim_stderr).strip()
                else ""
            )
            cls = "compile_error:syntax" if "syntax" in result else "compile_error:warning"
            if "samples" in result or "info string" in result:
                cls = "sim_mismatch"
            return cls, f"VerilogEval v1 says {result!r} (any output on stderr fails a sample)" + (
                f": {first}" if first else ""
            )
    return None


def reason_of(score: Score) -> str:
    """One line for an exclusion table: the failure class and the first explanation line."""
    first = next((x for x in score.explanation.splitlines() if x.strip()), "")
    return f"{score.failure_class}: {first}" if first else str(score.failure_class)


__all__: list[Any] = ["fail", "judge", "reason_of", "tail"]
