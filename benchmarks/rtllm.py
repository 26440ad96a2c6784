"""RTLLM 2.0's references through upstream's flow (on iverilog) and through our reader.

    .venv/bin/python benchmarks/rtllm.py CHECKOUT [--rounds 3] [--jobs N]

For every design the reference (`verified_*.v`, `verified_` dropped from its names, as the
designs' own names are) is the candidate:

* upstream's tools (the strict lower bound): the commands auto_run.py's makefiles run per
  design, with iverilog in place of VCS (upstream's makefiles call `vcs -sverilog
  -timescale=1ns/1ns <design>.v testbench.v` and `./simv`): `iverilog -g2012 -c CMD -o simv
  <design>.v testbench.v` with `+timescale+1ns/1ns` in CMD, then `./simv` under auto_run's
  8 s limit, each a direct subprocess in a copy of the design's directory (its data files
  included). Pass: the run ended in time and its output contains `Pass` or `pass`. CPU: the
  iverilog/vvp processes only, no loop cost.
* upstream's loop: auto_run.py's own loop as it runs, on a scratch copy of every design
  directory (made before the clock starts) whose makefile's `vcs` recipe runs the iverilog
  command above on the makefile's own sources: per design, the makefile's `${TEST_DESIGN}`
  pointed at the sample, `os.system("make vcs")` (through /bin/sh), `simv` checked,
  `make sim > output.txt` in a thread polled every second up to 8 s (exec_shell), output.txt
  read for "Pass"/"pass", the makefile restored, `os.system("make clean")`. The makefiles
  are upstream's, so freq_div's (which names a file on the authors' machine instead of
  `${TEST_DESIGN}`) fails here as it does there. Not reproduced: its tqdm bar and pass@k
  sums (scipy), and make's and the tools' output goes to /dev/null, not a terminal. CPU:
  its children (sh, make, iverilog, vvp, rm) + this process during the loop (makefile
  rewrites, threads, polling), both printed; its wall is mostly the 1 s polls.
* ours: `rtllm(CHECKOUT)` + `run_eval` with the reference solver, as `codegen-eval run
  --rtllm CHECKOUT --solver reference` does: a bubblewrap sandbox per design, one compile,
  the screen of the compiled design, the instrumented testbench's verdict. Its CPU is
  everything: this process and its children.

The calibration (each reference once per toolchain, cached) is measured once first and
reported on its own line; the timed runs use the warm cache. Each round rotates the order of
the three sides; medians and ours over each upstream side are printed. Then the verdicts are
compared design by design (an excluded design counts as a failure): every reference
upstream's tools pass must pass ours; where upstream's loop and its tools differ, both
reasons are printed.
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
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from threading import Thread

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks._interleave import cpu_split, print_against, rotate  # noqa: E402
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


# auto_run.py's exec_shell: a thread runs os.system(cmd); the caller checks it, sleeps 1 s,
# checks again, up to 8 s. So every simulated design costs at least one second of wall.
AUTO_RUN_POLL_S = 1.0
VCS_DROPPED = ("-sverilog", "+v2k", "-debug_all")  # no iverilog counterpart needed


def iverilog_makefile(text: str) -> tuple[str, str]:
    """(upstream's makefile with its `vcs` recipe turned into iverilog on the same sources,
    the iverilog command file carrying vcs's -timescale). The sources are kept as written:
    `${TEST_DESIGN}.v testbench.v`, or whatever path the makefile holds."""
    lines = text.splitlines()
    try:
        start = next(i for i, line in enumerate(lines) if line.strip() == "vcs:") + 1
    except StopIteration:
        raise ValueError("makefile has no `vcs:` target") from None
    end = start
    while end < len(lines) and lines[end].startswith("\t"):
        end += 1
    words = " ".join(line.rstrip().rstrip("\\") for line in lines[start:end]).split()
    if not words or words[0] != "vcs":
        raise ValueError(f"the `vcs:` recipe does not run vcs: {' '.join(words)!r}")
    cmd, sources, rest = [], [], iter(words[1:])
    for w in rest:
        if w.startswith("-timescale="):
            cmd.append(f"+timescale+{w.split('=', 1)[1]}")
        elif w == "-l":
            next(rest, None)  # vcs's compile log; iverilog writes none
        elif w in VCS_DROPPED:
            continue
        elif w.startswith(("-", "+")):
            raise ValueError(f"vcs option {w!r} has no iverilog counterpart here")
        else:
            sources.append(w)
    recipe = f"\t\tiverilog -g2012 -c cmd -o simv {' '.join(sources)}"
    out = [*lines[:start], recipe, *lines[end:]]
    return "\n".join(out) + "\n", "".join(f"{c}\n" for c in cmd)


def exec_shell(cmd: str, timeout: float = UPSTREAM_SIM_S) -> bool:
    """auto_run.py's exec_shell: True when `cmd` (os.system in a thread) ended within
    `timeout`, polled every AUTO_RUN_POLL_S; a late command is left running, as there."""
    start = time.time()
    t = Thread(target=os.system, args=(cmd,), daemon=False)
    t.start()
    while True:
        if time.time() - start >= timeout:
            return not t.is_alive()
        if not t.is_alive():
            return True
        time.sleep(AUTO_RUN_POLL_S)


def auto_run_one(design: str, samples: str) -> tuple[bool, str]:
    """auto_run.py's test_one_file for one design, from the directory holding the designs:
    point the makefile at the sample, `make vcs`, `make sim > output.txt` under exec_shell,
    "Pass"/"pass" in output.txt, the makefile restored, `make clean`."""
    original = Path(design, "makefile").read_text()
    Path(design, "makefile").write_text(original.replace("${TEST_DESIGN}", f"{samples}/{design}"))
    os.chdir(design)
    try:
        os.system("make vcs")
        ok, why = False, "no simv (compile failed)"
        if os.path.exists("simv"):
            if exec_shell("make sim > output.txt"):
                out = Path("output.txt").read_text(errors="replace")
                ok = "Pass" in out or "pass" in out
                why = "pass" if ok else " ".join(out.split())[:120]
            else:
                why = f"still running after {UPSTREAM_SIM_S} s"
        Path("makefile").write_text(original)
        os.system("make clean")
    finally:
        os.chdir("..")
    return ok, why


@contextmanager
def _quiet_fds() -> Iterator[None]:
    """make's echo and the tools' output go to auto_run's terminal; here to /dev/null."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = [os.dup(1), os.dup(2)]
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, 1)
        os.dup2(null, 2)
        yield
    finally:
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for fd in (*saved, null):
            os.close(fd)


def upstream_loop(root: str) -> tuple[dict[str, tuple[bool, str]], float, float]:
    """{design: (passed, note)}, wall s, CPU s of auto_run.py's own loop (see the module
    docstring) over a scratch copy of the designs, with the references as samples; the copy
    is made before the clock starts (upstream's loop starts with designs and samples in
    place)."""
    scratch = Path(tempfile.mkdtemp(prefix="rtllm-auto-run-"))
    samples, designs = scratch / "samples" / "t1", scratch / "designs"
    samples.mkdir(parents=True)
    names = []
    for d in design_dirs(root):
        shutil.copytree(d, designs / d.name)
        makefile, cmd = iverilog_makefile((d / "makefile").read_text())
        (designs / d.name / "makefile").write_text(makefile)
        (designs / d.name / "cmd").write_text(cmd)
        (samples / f"{d.name}.v").write_text(upstream_reference(d))
        names.append(d.name)
    verdicts: dict[str, tuple[bool, str]] = {}
    cwd = os.getcwd()
    os.chdir(designs)
    t0, (s0, k0) = time.monotonic(), cpu_split()
    try:
        with _quiet_fds():
            for name in names:
                verdicts[name] = auto_run_one(name, str(samples))
    finally:
        wall, (s1, k1) = time.monotonic() - t0, cpu_split()
        os.chdir(cwd)
        shutil.rmtree(scratch, ignore_errors=True)
    # The children (sh, make, iverilog, vvp, rm) are most of it; the part in this process is
    # the makefile rewrites, the threads and the polling.
    print(f"    upstream loop: {k1 - k0:.2f} s CPU in its children, {s1 - s0:.2f} s in this "
          f"process", flush=True)  # fmt: skip
    return verdicts, wall, (k1 - k0) + (s1 - s0)


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
    if args.rounds < 1 or args.jobs < 1:
        ap.error("--rounds and --jobs must be at least 1")
    print(f"RTLLM at {args.checkout}; {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}")
    t0, c0 = time.monotonic(), cpu_split()
    task = rtllm(args.checkout)
    c1 = cpu_split()
    print(f"calibration (each reference once per toolchain, cached; warm if ~0 s): "
          f"{time.monotonic() - t0:.1f} s wall, {(c1[0] - c0[0]) + (c1[1] - c0[1]):.1f} s CPU, "
          f"{len(task.dataset)} scorable, {len(task.excluded)} excluded")  # fmt: skip
    for sid, why in sorted(task.excluded.items()):
        print(f"  excluded {sid}: {why} | newer Icarus: {task.metadata['newer_icarus'].get(sid)}")

    runs = rotate(args.rounds, [
        ("upstream tools", lambda: upstream(args.checkout)),
        ("upstream loop", lambda: upstream_loop(args.checkout)),
        ("ours", lambda: ours(args.checkout, args.jobs)),
    ])  # fmt: skip
    print_against(runs, {
        "upstream tools": "upstream's tools only (iverilog + vvp, sequential)",
        "upstream loop": "upstream's auto_run loop (wall: 1 s poll per design)",
        "ours": f"ours ({args.jobs} jobs)",
    }, "ours")  # fmt: skip
    up_runs, our_runs, loopv = runs["upstream tools"], runs["ours"], runs["upstream loop"][-1][0]
    for i in sorted(loopv):
        if loopv[i][0] != up_runs[-1][0][i][0]:
            print(f"  upstream's loop and its tools differ on {i}: loop {loopv[i][1]!r}, "
                  f"tools {up_runs[-1][0][i][1]!r}")  # fmt: skip
    upv, ourv = up_runs[-1][0], our_runs[-1][0]
    lost = sorted(i for i, (ok, _) in upv.items() if ok and not ourv.get(i, (False, ""))[0])
    gained = sorted(i for i, (ok, _) in ourv.items() if ok and not upv.get(i, (False, ""))[0])
    print(f"upstream's tools pass {sum(v[0] for v in upv.values())}, its loop "
          f"{sum(v[0] for v in loopv.values())}, ours {sum(v[0] for v in ourv.values())} "
          f"of {len(upv)}")  # fmt: skip
    for i in lost:
        print(f"  PASSES UPSTREAM ONLY {i}: ours {ourv.get(i)}")
    for i in gained:
        print(f"  passes ours only {i}: upstream {upv[i][1]!r}")
    return 1 if lost else 0


if __name__ == "__main__":
    raise SystemExit(main())
