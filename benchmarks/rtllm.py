"""RTLLM 2.0's references through upstream's flow (on iverilog) and through our reader.

    .venv/bin/python benchmarks/rtllm.py CHECKOUT [--rounds 3] [--jobs N]

For every design the reference (`verified_*.v`, `verified_` dropped from its names, as the
designs' own names are) is the candidate:

* upstream: the loop of commands auto_run.py runs per design, with iverilog in place of VCS
  (upstream's makefiles call `vcs -sverilog -timescale=1ns/1ns <design>.v testbench.v` and
  `./simv`): `iverilog -g2012 -c CMD -o simv <design>.v testbench.v` with `+timescale+1ns/1ns`
  in CMD, then `./simv > output.txt` under auto_run's 8 s limit, in a copy of the design's
  directory (its data files included). Pass: the run ended in time and its output contains
  `Pass` or `pass`. Its CPU is that of the iverilog/vvp processes only (no loop cost).
* ours: `rtllm(CHECKOUT)` + `run_eval` with the reference solver, as `codegen-eval run
  --rtllm CHECKOUT --solver reference` does: a bubblewrap sandbox per design, one compile,
  the screen of the compiled design, the instrumented testbench's verdict. Its CPU is
  everything: this process and its children.

The calibration (each reference once per toolchain, cached) is measured once first and
reported on its own line; the timed runs use the warm cache. Rounds alternate the order;
medians are printed. Then the verdicts are compared design by design (an excluded design
counts as a failure): every reference upstream's flow passes must pass ours.
"""

from __future__ import annotations

import argparse
import asyncio
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
from codegen_eval.readers.rtllm import design_dirs, rtllm  # noqa: E402
from codegen_eval.runner import RunConfig, run_eval  # noqa: E402
from codegen_eval.solvers import ReferenceSolver  # noqa: E402

UPSTREAM_SIM_S = 8  # auto_run.py: exec_shell(..., timeout=8)


def upstream_reference(design: Path) -> str:
    """The reference as upstream's flow would be given it: `verified_` dropped."""
    ref = next(design.glob("verified_*.v"))
    return ref.read_text(errors="replace").replace("verified_", "")


def upstream_one(design: Path, candidate: str, work: Path) -> tuple[bool, str]:
    """(passed, output) of upstream's commands for one candidate, run in `work` (a scratch
    directory; UNSANDBOXED, as upstream runs them: only for references and our own test
    cheats)."""
    shutil.copytree(design, work, dirs_exist_ok=True)
    name = design.name
    (work / f"{name}.v").write_text(candidate)
    (work / "cmd").write_text("+timescale+1ns/1ns\n")
    c = subprocess.run(
        ["iverilog", "-g2012", "-c", "cmd", "-o", "simv", f"{name}.v", "testbench.v"],
        cwd=work, capture_output=True, text=True, errors="replace",
    )  # fmt: skip
    if not (work / "simv").exists():
        return False, c.stdout + c.stderr
    try:
        r = subprocess.run(["./simv"], cwd=work, capture_output=True, text=True,
                           errors="replace", timeout=UPSTREAM_SIM_S)  # fmt: skip
    except subprocess.TimeoutExpired:
        return False, "timeout"
    return ("Pass" in r.stdout or "pass" in r.stdout), r.stdout


def upstream(root: str) -> tuple[dict[str, tuple[bool, str]], float, float]:
    """{design: (passed, first line of note)}, wall s, CPU s of the tools."""
    verdicts: dict[str, tuple[bool, str]] = {}
    scratch = Path(tempfile.mkdtemp(prefix="rtllm-upstream-"))
    t0, (_, k0) = time.monotonic(), cpu_split()
    try:
        for d in design_dirs(root):
            ok, out = upstream_one(d, upstream_reference(d), scratch / d.name)
            verdicts[d.name] = (ok, "pass" if ok else " ".join(out.split())[:120])
    finally:
        wall, (_, k1) = time.monotonic() - t0, cpu_split()
        shutil.rmtree(scratch, ignore_errors=True)
    return verdicts, wall, k1 - k0


def ours(root: str, jobs: int) -> tuple[dict[str, tuple[bool, str]], float, float]:
    work = Path(tempfile.mkdtemp(prefix="rtllm-ours-"))
    t0, c0 = time.monotonic(), cpu_split()
    try:
        task = rtllm(root)
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
    ap.add_argument("checkout")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    args = ap.parse_args()
    print(f"RTLLM at {args.checkout}; {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}")
    t0, c0 = time.monotonic(), cpu_split()
    task = rtllm(args.checkout)
    c1 = cpu_split()
    print(f"calibration (each reference once per toolchain, cached; warm if ~0 s): "
          f"{time.monotonic() - t0:.1f} s wall, {(c1[0] - c0[0]) + (c1[1] - c0[1]):.1f} s CPU, "
          f"{len(task.dataset)} scorable, {len(task.excluded)} excluded")  # fmt: skip
    for sid, why in sorted(task.excluded.items()):
        print(f"  excluded {sid}: {why} | newer Icarus: {task.metadata['newer_icarus'].get(sid)}")

    up_runs, our_runs = alternate(
        args.rounds, lambda: upstream(args.checkout), lambda: ours(args.checkout, args.jobs)
    )
    print_medians(up_runs, our_runs, "upstream sequential loop", f"ours ({args.jobs} jobs)")

    upv, ourv = up_runs[-1][0], our_runs[-1][0]
    lost = sorted(i for i, (ok, _) in upv.items() if ok and not ourv.get(i, (False, ""))[0])
    gained = sorted(i for i, (ok, _) in ourv.items() if ok and not upv.get(i, (False, ""))[0])
    print(f"upstream passes {sum(v[0] for v in upv.values())}, "
          f"ours {sum(v[0] for v in ourv.values())} of {len(upv)}")  # fmt: skip
    for i in lost:
        print(f"  PASSES UPSTREAM ONLY {i}: ours {ourv.get(i)}")
    for i in gained:
        print(f"  passes ours only {i}: upstream {upv[i][1]!r}")
    return 1 if lost else 0


if __name__ == "__main__":
    raise SystemExit(main())
