"""VerilogEval's references through upstream's own flow and through ours, side by side.

    .venv/bin/python benchmarks/verilogeval.py PATH [--mode spec-to-rtl|code-complete|v1]
                                                    [--rounds 2] [--jobs N] [--v1-workers 32]

PATH is a VerilogEval v2 checkout (or a dataset_* directory), or a v1 problems JSONL. For
every problem the reference, renamed to the candidate's module, is the sample:

* upstream's tools (the strict lower bound): the commands of upstream's flow, one problem
  after the other, each a direct subprocess, as its Makefile runs them (v2: `iverilog -Wall
  -Winfloop -Wno-timescale -g2012 -s tb -o X sample.sv test.sv ref.sv` then `timeout 30
  ./X`, judged by sv-iv-analyze's rules; v1: test + prompt + completion in one file,
  `iverilog ... -o test.vvp F.sv; vvp -n test.vvp` through a shell, judged by
  execution.py's rules). CPU: the iverilog/vvp processes (and v1's shell) only, no loop
  cost.
* upstream's loop (v1 only): v1's evaluate_functional_correctness (tag v1.0.0, with its
  execution block enabled as its README asks) as it runs the references as samples: the
  problems read, a ProcessPoolExecutor of --v1-workers (its command line's default, 32) with
  one check_correctness per sample: a multiprocessing Manager for the result list, a
  Process that makes a temp dir its cwd, applies reliability_guard, writes TASK.sv, runs the
  command above with shell=True under a 30 s SIGALRM limit and a 30 s Timer kill, applies
  the same rule; the Process joined for 31 s; the results written to a JSONL. Not
  reproduced: tqdm bars, pass@k (numpy), the final `pkill iverilog; pkill vvp` (by name it
  would end every user's simulations on a shared machine), and the guard leaves os.kill so
  that the Timer works. CPU: its children (workers, Managers, Processes, sh, iverilog, vvp)
  + this process during the loop, both printed.
* ours: `verilogeval(PATH, mode)` + `run_eval` with the reference solver, as
  `codegen-eval run --verilogeval PATH --solver reference` does: bubblewrap sandbox per
  sample, one compile, the screen of the compiled design, calibrated sample counts, both cores
  busy. Its CPU is everything: this process (task building, screening) and its children.

The calibration (each reference run once per toolchain, cached) is measured once first and
reported on its own line; the timed runs use the warm cache, as every run after the first
does. Each round rotates the order of the sides; medians and ours over each upstream side
are printed. Then the verdicts are compared problem by problem (an excluded problem counts
as a failure, as upstream counts it) and every disagreement is listed with both reasons;
so is every problem where upstream's loop and its tools differ.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import io
import json
import multiprocessing
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor, as_completed
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks._interleave import cpu_split, print_against, rotate  # noqa: E402
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
                shell=True, cwd=work, capture_output=True, text=True, errors="replace",
                timeout=V1_TIMEOUT_S,
            )  # fmt: skip
            result = v1_outcome(p.stdout, p.stderr)
            verdicts[tid] = (result == "passed", result)
    finally:
        wall, (_, k1) = time.monotonic() - t0, cpu_split()
        shutil.rmtree(work, ignore_errors=True)
    return verdicts, wall, k1 - k0


# v1's evaluate_functional_correctness defaults (its command line): --n_workers 32,
# --timeout 30.
V1_WORKERS = 32
V1_TIMEOUT_S = 30.0
V1_CMD = "iverilog -Wall -Winfloop -Wno-timescale -g2012 -s tb -o test.vvp {}.sv; vvp -n test.vvp"
# What v1's reliability_guard sets to None in the process that runs a sample. os.kill is
# left: with it gone, v1's Timer cannot kill a late shell and only its final `pkill iverilog;
# pkill vvp` (by name: every user's simulations on a shared machine) ends it.
_V1_GUARD = {
    os: ("system putenv remove removedirs rmdir fchdir setuid fork forkpty killpg rename renames "
         "truncate replace fchmod fchown chmod chown chroot lchflags lchmod lchown getcwd chdir"),
    shutil: "rmtree move chown",
}  # fmt: skip


class _V1Timeout(Exception):
    pass


def _v1_guard() -> dict[tuple[object, str], object]:
    """v1's reliability_guard (minus os.kill, see _V1_GUARD); what it replaced, to restore
    the calls the temp dir's clean-up needs, as v1 does."""
    import builtins
    import faulthandler

    faulthandler.disable()
    builtins.exit = builtins.quit = None  # type: ignore[assignment]
    os.environ["OMP_NUM_THREADS"] = "1"
    saved: dict[tuple[object, str], object] = {}
    for mod, names in _V1_GUARD.items():
        for name in names.split():
            if hasattr(mod, name):
                saved[(mod, name)] = getattr(mod, name)
                setattr(mod, name, None)
    builtins.help = None
    for name in ("ipdb", "joblib", "resource", "psutil", "tkinter"):
        sys.modules[name] = None  # type: ignore[assignment]
    return saved


def _v1_execute(problem: dict[str, str], completion: str, timeout: float, result: Any) -> None:
    """v1's unsafe_execute (in its own process): a temp dir as cwd, the guard, test + prompt
    + completion written to TASK.sv, the shell command run under SIGALRM and a Timer kill,
    upstream's rule on its output appended to the Manager's list."""
    with tempfile.TemporaryDirectory() as d:
        cwd = os.getcwd()
        os.chdir(d)
        try:
            saved = _v1_guard()
            text = problem["test"] + "\n" + problem["prompt"] + "\n" + completion
            Path(f"{problem['task_id']}.sv").write_text(text)
            try:
                with _v1_swallow_io(), _v1_time_limit(timeout):
                    p = subprocess.Popen(V1_CMD.format(problem["task_id"]), shell=True,
                                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)  # fmt: skip
                    timer = threading.Timer(timeout, p.kill)
                    try:
                        timer.start()
                        out, err = p.communicate()
                    finally:
                        timer.cancel()
                    result.append(v1_outcome(out.decode("utf-8"), err.decode("utf-8")))
            except _V1Timeout:
                result.append("timed out")
            except BaseException as e:
                result.append(f"failed: {e}")
            for (mod, name), fn in saved.items():  # v1 restores rmtree, rmdir, chdir
                if name in ("rmtree", "rmdir", "chdir"):
                    setattr(mod, name, fn)
        finally:
            os.chdir(cwd)


@contextmanager
def _v1_time_limit(seconds: float) -> Iterator[None]:
    def fire(signum: int, frame: object) -> None:
        raise _V1Timeout("Timed out!")

    signal.setitimer(signal.ITIMER_REAL, seconds)
    signal.signal(signal.SIGALRM, fire)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)


@contextmanager
def _v1_swallow_io() -> Iterator[None]:
    sink = io.StringIO()
    with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
        yield


def v1_check(problem: dict[str, str], completion: str, timeout: float, cid: int) -> dict[str, Any]:
    """v1's check_correctness: a Manager process holds the result list, a Process runs the
    sample, joined for timeout + 1 s, killed if still alive."""
    manager = multiprocessing.Manager()
    result = manager.list()
    p = multiprocessing.Process(target=_v1_execute, args=(problem, completion, timeout, result))
    p.start()
    p.join(timeout=timeout + 1)
    if p.is_alive():
        p.kill()
    if not result:
        result.append("timed out")
    return {"task_id": problem["task_id"], "passed": result[0] == "passed",
            "result": result[0], "completion_id": cid}  # fmt: skip


def upstream_v1_loop(
    jsonl: Path, workers: int = V1_WORKERS
) -> tuple[dict[str, tuple[bool, str]], float, float]:
    """{task: (passed, result)}, wall s, CPU s (children + this process) of v1's
    evaluate_functional_correctness on the references: the problems read, one
    check_correctness per sample submitted to a ProcessPoolExecutor of `workers`, the
    results gathered as they complete and written next to the samples."""
    work = Path(tempfile.mkdtemp(prefix="ve-upstream-v1-loop-"))
    try:
        rows = [json.loads(x) for x in jsonl.read_text().splitlines() if x.strip()]
        samples = work / "samples.jsonl"  # what a user hands v1: written before the clock
        samples.write_text("".join(json.dumps({"task_id": r["task_id"], "completion":
                                               r["canonical_solution"]}) + "\n" for r in rows))  # fmt: skip
        t0, (s0, k0) = time.monotonic(), cpu_split()
        try:
            results = _v1_evaluate(samples, jsonl, workers)
        finally:
            wall, (s1, k1) = time.monotonic() - t0, cpu_split()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    late = [r["task_id"] for r in results if r["result"] == "timed out"]
    print(f"    upstream loop: {k1 - k0:.2f} s CPU in its children, {s1 - s0:.2f} s in this "
          f"process ({workers} workers){'; TIMED OUT: ' + ' '.join(late) if late else ''}",
          flush=True)  # fmt: skip
    verdicts = {r["task_id"]: (bool(r["passed"]), str(r["result"])) for r in results}
    return verdicts, wall, (k1 - k0) + (s1 - s0)


def _v1_evaluate(samples: Path, problem_file: Path, workers: int) -> list[dict[str, Any]]:
    problems = {}
    for line in problem_file.read_text().splitlines():
        if line.strip():
            row = json.loads(line)
            problems[row["task_id"]] = row
    with ProcessPoolExecutor(max_workers=workers) as ex:
        futures = []
        for line in samples.read_text().splitlines():
            s = json.loads(line)
            futures.append(ex.submit(v1_check, problems[s["task_id"]], s["completion"],
                                     V1_TIMEOUT_S, 0))  # fmt: skip
        results = [f.result() for f in as_completed(futures)]
    with open(f"{samples}_results.jsonl", "w") as out:
        for r in results:
            out.write(json.dumps(r) + "\n")
    return results


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
    ap.add_argument("--v1-workers", type=int, default=V1_WORKERS,
                    help=f"v1 loop's --n_workers (upstream's default {V1_WORKERS})")  # fmt: skip
    args = ap.parse_args()
    if args.v1_workers < 1 or args.rounds < 1 or args.jobs < 1:
        ap.error("--v1-workers, --rounds and --jobs must be at least 1")
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

    sides = [("upstream tools", up)]
    labels = {"upstream tools": "upstream's tools only (sequential)"}
    if mode == "v1":
        sides.append(("upstream loop", lambda: upstream_v1_loop(Path(args.path), args.v1_workers)))
        labels["upstream loop"] = f"upstream's v1 loop ({args.v1_workers} workers)"
    sides.append(("ours", lambda: ours(args.path, mode, args.jobs)))
    labels["ours"] = f"ours ({args.jobs} jobs)"
    runs = rotate(args.rounds, sides)
    print_against(runs, labels, "ours")
    up_runs, our_runs = runs["upstream tools"], runs["ours"]
    if "upstream loop" in runs:
        loopv, toolv = runs["upstream loop"][-1][0], up_runs[-1][0]
        for i in sorted(set(loopv) | set(toolv)):
            if loopv.get(i) != toolv.get(i):
                print(f"  upstream's loop and its tools differ on {i}: loop {loopv.get(i)}, "
                      f"tools {toolv.get(i)}")  # fmt: skip
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
