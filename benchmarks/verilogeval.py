"""VerilogEval's references through upstream's own flow and through ours, side by side.

    .venv/bin/python benchmarks/verilogeval.py PATH [--mode spec-to-rtl|code-complete|v1]
                                                    [--rounds 2] [--jobs N]

PATH is a VerilogEval v2 checkout (or a dataset_* directory), or a v1 problems JSONL. For
every problem the reference, renamed to the candidate's module, is the sample:

* upstream: the commands of upstream's flow, one problem after the other, as its Makefile
  runs them (v2: `iverilog -Wall -Winfloop -Wno-timescale -g2012 -s tb -o X sample.sv
  test.sv ref.sv` then `timeout 30 ./X`, judged by sv-iv-analyze's rules; v1: test + prompt +
  completion in one file, `iverilog ... -o test.vvp F.sv; vvp -n test.vvp`, judged by
  execution.py's rules). Its CPU is that of the iverilog/vvp processes only (no loop cost).
* ours: `verilogeval(PATH, mode)` + `run_eval` with the reference solver, as
  `codegen-eval run --verilogeval PATH --solver reference` does: bubblewrap sandbox per
  sample, one compile, the screen of the compiled design, calibrated sample counts, both cores
  busy. Its CPU is everything: this process (task building, screening) and its children.

The calibration (each reference run once per toolchain, cached) is measured once first and
reported on its own line; the timed runs use the warm cache, as every run after the first
does. Rounds alternate the order; medians are printed. Then the verdicts are compared problem
by problem (an excluded problem counts as a failure, as upstream counts it) and every
disagreement is listed with both reasons.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks._interleave import alternate, cpu_split, print_medians  # noqa: E402
from codegen_eval.readers.verilogeval import V2_DIRS, resolve_mode, verilogeval  # noqa: E402
from codegen_eval.runner import RunConfig, run_eval  # noqa: E402
from codegen_eval.solvers import ReferenceSolver  # noqa: E402
from codegen_eval.suites.verilog.upstream import v1_outcome, v2_outcome  # noqa: E402

FLAGS = ["-Wall", "-Winfloop", "-Wno-timescale", "-g2012", "-s", "tb"]


def upstream_v2(root: Path) -> tuple[dict[str, tuple[bool, str]], float, float]:
    """{problem: (passed, outcome)}, wall s, CPU s of the tools."""
    verdicts: dict[str, tuple[bool, str]] = {}
    work = Path(tempfile.mkdtemp(prefix="ve-upstream-"))
    t0, (_, k0) = time.monotonic(), cpu_split()
    try:
        for ref in sorted(root.glob("*_ref.sv")):
            pid = ref.name[: -len("_ref.sv")]
            sample = work / f"{pid}_sample01.sv"
            sample.write_text(ref.read_text().replace("RefModule", "TopModule"))
            exe = work / f"{pid}_sample01"
            c = subprocess.run(
                ["iverilog", *FLAGS, "-o", str(exe), str(sample), str(root / f"{pid}_test.sv"), str(ref)],
                capture_output=True, text=True, errors="replace",
            )  # fmt: skip
            log = c.stdout + c.stderr
            if exe.exists():
                r = subprocess.run(["timeout", "30", f"./{exe.name}"], cwd=work,
                                   capture_output=True, text=True, errors="replace")  # fmt: skip
                log += r.stdout + r.stderr + ("TIMEOUT\n" if r.returncode == 124 else "")
            code = v2_outcome(log)
            verdicts[pid] = (code == ".", code)
    finally:
        wall, (_, k1) = time.monotonic() - t0, cpu_split()
        shutil.rmtree(work, ignore_errors=True)
    return verdicts, wall, k1 - k0


def upstream_v1(jsonl: Path) -> tuple[dict[str, tuple[bool, str]], float, float]:
    verdicts: dict[str, tuple[bool, str]] = {}
    work = Path(tempfile.mkdtemp(prefix="ve-upstream-v1-"))
    t0, (_, k0) = time.monotonic(), cpu_split()
    try:
        for line in jsonl.read_text().splitlines():
            if not line.strip():
                continue
            row = json.loads(line)
            tid = row["task_id"]
            (work / f"{tid}.sv").write_text(
                row["test"] + "\n" + row["prompt"] + "\n" + row["canonical_solution"]
            )
            (work / "test.vvp").unlink(missing_ok=True)
            p = subprocess.run(
                f"iverilog {' '.join(FLAGS[:-2])} -s tb -o test.vvp {tid}.sv; vvp -n test.vvp",
                shell=True, cwd=work, capture_output=True, text=True, errors="replace", timeout=60,
            )  # fmt: skip
            result = v1_outcome(p.stdout, p.stderr)
            verdicts[tid] = (result == "passed", result)
    finally:
        wall, (_, k1) = time.monotonic() - t0, cpu_split()
        shutil.rmtree(work, ignore_errors=True)
    return verdicts, wall, k1 - k0


def ours(
    path: str, mode: str, jobs: int, **opts: object
) -> tuple[dict[str, tuple[bool, str]], float, float]:
    work = Path(tempfile.mkdtemp(prefix="ve-ours-"))
    t0, c0 = time.monotonic(), cpu_split()
    try:
        task = verilogeval(path, mode, **opts)  # type: ignore[arg-type]
        res = asyncio.run(
            run_eval([task], ReferenceSolver(), work / "run.jsonl",
                     RunConfig(max_sandboxes=jobs, progress=False))
        )  # fmt: skip
    finally:
        wall, c1 = time.monotonic() - t0, cpu_split()
        shutil.rmtree(work, ignore_errors=True)
    verdicts = {
        r["sample_id"]: (r["status"] == "pass", str(r.get("failure_class") or "pass"))
        for r in res.records
    }
    for sid, reason in task.excluded.items():
        verdicts[sid] = (False, f"excluded: {reason}")
    # Where ours goes: this process (reader, runner, screen, sandbox launch) and its children
    # (bwrap, our init, the shell, iverilog, vvp): the tools alone cost about upstream's CPU.
    print(f"    ours: {c1[0] - c0[0]:.2f} s CPU in this process, "
          f"{c1[1] - c0[1]:.2f} s in its children", flush=True)  # fmt: skip
    return verdicts, wall, (c1[0] - c0[0]) + (c1[1] - c0[1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("path")
    ap.add_argument("--mode", choices=["spec-to-rtl", "code-complete", "v1"], default=None)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    args = ap.parse_args()
    mode, _ = resolve_mode(args.path, args.mode)
    if mode == "v1":
        up = lambda: upstream_v1(Path(args.path))  # noqa: E731
    else:
        p = Path(args.path)
        root = p / V2_DIRS[mode] if (p / V2_DIRS[mode]).is_dir() else p
        up = lambda: upstream_v2(root)  # noqa: E731
    print(
        f"VerilogEval {mode} at {args.path}; {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}"
    )

    t0, c0 = time.monotonic(), cpu_split()
    task = verilogeval(args.path, mode)  # type: ignore[arg-type]
    c1 = cpu_split()
    print(f"calibration (each reference once per toolchain, cached; warm if ~0 s): "
          f"{time.monotonic() - t0:.1f} s wall, {(c1[0] - c0[0]) + (c1[1] - c0[1]):.1f} s CPU, "
          f"{len(task.dataset)} scorable, {len(task.excluded)} excluded")  # fmt: skip

    up_runs, our_runs = alternate(args.rounds, up, lambda: ours(args.path, mode, args.jobs))
    print_medians(up_runs, our_runs, "upstream sequential loop", f"ours ({args.jobs} jobs)")

    upv, ourv = up_runs[-1][0], our_runs[-1][0]
    ids = sorted(set(upv) | set(ourv))
    agree = [i for i in ids if i in upv and i in ourv and upv[i][0] == ourv[i][0]]
    print(f"verdicts: {len(agree)}/{len(ids)} agree; upstream passes "
          f"{sum(v[0] for v in upv.values())}, ours {sum(v[0] for v in ourv.values())}")  # fmt: skip
    for i in ids:
        if i not in agree:
            print(f"  DISAGREE {i}: upstream {upv.get(i)}, ours {ourv.get(i)}")
    for i in ids:
        if i in agree and not upv[i][0]:
            why = " ".join(ourv[i][1].split())[:150]
            print(f"  both fail {i}: upstream {upv[i][1]!r}; ours {why}")
    return 0 if len(agree) == len(ids) else 1


if __name__ == "__main__":
    raise SystemExit(main())
