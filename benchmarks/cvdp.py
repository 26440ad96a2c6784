"""CVDP's references through upstream's harness run (no docker) and through ours, interleaved.

    .venv/bin/python benchmarks/cvdp.py [FILE.jsonl ...] [--fixture] [--rounds 3] [--jobs N]

FILE is a CVDP JSONL file with solutions (e.g. cvdp_benchmark's example_dataset/
*_nonagentic_code_generation_*_with_solutions.jsonl); --fixture adds the problems of our own
in tests/codegen_eval/readers/cvdp_fixture.py. For every problem our reader can score, the
solution is the answer:

* upstream: what its docker-compose service runs, without docker: the problem's files in a
  directory (`code/` with the answer, `src/` with the harness), the `.env` variables set
  (its /code and /src paths pointed at that directory), the compose command (`pytest ...
  /src/test_runner.py`) run in code/rundir with the same runtime our sandbox uses (the
  harness venv: cocotb 2.0.1, pytest 8.3.2) and Icarus; one problem after the other. Its CPU
  is that of its processes (pytest, iverilog, vvp). Its verdict: pytest's exit status.
* ours: `cvdp(FILE)` + `run_eval` with the reference solver, as `codegen-eval run --cvdp FILE
  --solver reference` does: one bubblewrap sandbox per answer, the vvp shim, the screen of
  every design that ran, the reports read. Its CPU is everything: this process and its
  children.

The calibration (each reference run once, kept on disk per toolchain) is measured first in a
fresh cache and reported on its own line; the timed runs use the warm cache, as every run
after the first does. Rounds alternate the order; medians are printed.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks._interleave import alternate, cpu_split, cpu_total, print_medians  # noqa: E402
from codegen_eval.readers.cvdp import cvdp  # noqa: E402
from codegen_eval.readers.cvdp.harness import venv_bin_dir  # noqa: E402
from codegen_eval.runner import RunConfig, run_eval  # noqa: E402
from codegen_eval.solvers import ReferenceSolver  # noqa: E402
from codegen_eval.types import Sample, Task  # noqa: E402


def _fixture(out: Path) -> Path:
    path = ROOT / "tests" / "codegen_eval" / "readers" / "cvdp_fixture.py"
    spec = importlib.util.spec_from_file_location("cvdp_fixture", path)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.write_jsonl(out)


def upstream_one(s: Sample, work: Path) -> bool:
    """Upstream's compose command for one problem, its container paths mapped to `work`."""

    def here(text: str) -> str:  # /code, /src and /rundir as the container has them
        return re.sub(r"(?<![\w./])/(code|src|rundir)\b", lambda m: f"{work}/{m[1]}", text)

    for rel, text in s.files.items():
        (work / rel).parent.mkdir(parents=True, exist_ok=True)
        (work / rel).write_text(text)
    for rel, text in s.metadata["reference"].items():
        (work / "code" / rel).parent.mkdir(parents=True, exist_ok=True)
        (work / "code" / rel).write_text(text)
    (work / "code" / "rundir").mkdir(parents=True, exist_ok=True)
    env = {**os.environ, **{k: here(v) for k, v in s.metadata["env"].items()}}
    env["PATH"] = f"{venv_bin_dir()}:{env['PATH']}"
    env["HOME"] = str(work / "code" / "rundir")
    argv = [here(a) for a in shlex.split(s.metadata["command"])]
    done = subprocess.run(argv, cwd=work / "code" / "rundir", env=env, capture_output=True)
    return done.returncode == 0


def upstream(samples: list[Sample]) -> tuple[dict[str, bool], float, float]:
    t0, c0 = time.monotonic(), cpu_split()[1]
    verdicts = {}
    for s in samples:
        work = Path(tempfile.mkdtemp(prefix="cvdp-upstream-"))
        try:
            verdicts[s.id] = upstream_one(s, work)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    return verdicts, time.monotonic() - t0, cpu_split()[1] - c0


def ours(files: list[Path], jobs: int) -> tuple[dict[str, bool], float, float]:
    work = Path(tempfile.mkdtemp(prefix="cvdp-ours-"))
    t0, c0 = time.monotonic(), cpu_total()
    try:
        tasks = [cvdp(f) for f in files]
        res = asyncio.run(run_eval(tasks, ReferenceSolver(), work / "run.jsonl",
                                   RunConfig(max_sandboxes=jobs, progress=False)))  # fmt: skip
    finally:
        wall, cpu = time.monotonic() - t0, cpu_total() - c0
        shutil.rmtree(work, ignore_errors=True)
    return {r["sample_id"]: r["status"] == "pass" for r in res.records}, wall, cpu


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("files", nargs="*", type=Path)
    ap.add_argument("--fixture", action="store_true", help="add our own fixture's problems")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--jobs", type=int, default=1, help="our sandboxes at once (upstream: 1)")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="cvdp-bench-"))
    files = list(args.files) + ([_fixture(tmp)] if args.fixture else [])
    if not files:
        ap.error("give CVDP JSONL files and/or --fixture")
    os.environ["CODEGEN_CVDP_CALIBRATION"] = str(tmp / "calibration")  # a cold cache
    print(f"CVDP {', '.join(f.name for f in files)}; {os.cpu_count()} cores, "
          f"load {os.getloadavg()[0]:.1f}")  # fmt: skip
    t0, c0 = time.monotonic(), cpu_total()
    tasks: list[Task] = [cvdp(f) for f in files]
    samples = [s for t in tasks for s in t.dataset]
    excluded = sum(len(t.excluded) for t in tasks)
    print(f"calibration (each reference once, then kept on disk): {time.monotonic() - t0:.1f} s "
          f"wall, {cpu_total() - c0:.1f} s CPU; {len(samples)} scorable, {excluded} excluded")  # fmt: skip

    up_runs, our_runs = alternate(
        args.rounds, lambda: upstream(samples), lambda: ours(files, args.jobs)
    )
    print_medians(up_runs, our_runs, "upstream, one after the other", f"ours ({args.jobs} job(s))")
    upv, ourv = up_runs[-1][0], our_runs[-1][0]
    agree = [i for i in upv if ourv.get(i) == upv[i]]
    print(f"verdicts: {len(agree)}/{len(upv)} agree")
    shutil.rmtree(tmp, ignore_errors=True)
    return 0 if len(agree) == len(upv) else 1


if __name__ == "__main__":
    raise SystemExit(main())
