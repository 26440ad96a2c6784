"""Scoring throughput, --executor local vs --executor slurm, on the one-node local cluster.

    .venv/bin/python benchmarks/executors.py [--copies 6] [--rounds 2] [--batch-size N]
        [--hpc serial[,openmp]] [--noop-jobs 20]

The same candidates both ways: every built-in Verilog reference `--copies` times (each copy
differs by a comment, so the score cache does not collapse them), plus with --hpc the
hpc-kernels references of the variants named. Variants whose sweep needs 2+ CPUs (openmp, mpi)
get jobs of that size, which on a small node wait for a whole free node while local runs them
oversubscribed next to everything else: docs/running-at-scale.md gives both figures. Local scores with --max-sandboxes = this machine's CPUs;
slurm submits batches (--batch-size, default the executor's automatic size: one element per
CPU of the partition) as job-array elements of 1 CPU each, so both run as many candidates at
once. Rounds are interleaved (local, slurm, local, slurm, ...) because the
machine is shared and noisy; each round's load average is printed with its figures.

Per-job scheduling overhead is measured two ways: from the slurm rounds (sbatch call, submit
to running) and with --noop-jobs array elements that run `true` (submit to all finished,
divided by the jobs, with the node's CPUs as slots). The cluster is started with
scripts/slurm-local.sh up when $SLURM_CONF is not set.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from codegen_eval.cli import tasks_from_options  # noqa: E402
from codegen_eval.executors.slurm import SlurmExecutor, SlurmOptions  # noqa: E402
from codegen_eval.registry import get_suite  # noqa: E402
from codegen_eval.runner import RunConfig, _interruptible, run_eval  # noqa: E402
from codegen_eval.solvers import FileSolver  # noqa: E402


def load() -> str:
    a, b, c = os.getloadavg()
    return f"load {a:.1f}/{b:.1f}/{c:.1f}"


def ensure_cluster() -> None:
    if os.environ.get("SLURM_CONF"):
        return
    p = subprocess.run([str(ROOT / "scripts" / "slurm-local.sh"), "up"], capture_output=True,
                       text=True, timeout=300, check=True)  # fmt: skip
    os.environ["SLURM_CONF"] = p.stdout.strip().splitlines()[-1].split("=", 1)[1]


def write_samples(path: Path, copies: int, hpc: str) -> tuple[list[str], int]:
    suites, lines = ["verilog"], []
    for s in get_suite("verilog").dataset:
        for i in range(copies):
            code = f"{s.target}\n// copy {i}\n"
            lines.append({"suite": "verilog", "sample_id": s.id, "index": i, "code": code})
    if hpc:
        suites.append("hpc-kernels")
        for s in get_suite("hpc-kernels").dataset:
            if s.metadata["variant"] in hpc.split(","):
                lines.append({"suite": "hpc-kernels", "sample_id": s.id, "index": 0,
                              "code": s.target})  # fmt: skip
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return suites, len(lines)


async def one_round(kind: str, suites: list[str], samples: Path, n: int, batch: int,
                    work: Path) -> tuple[float, dict[str, object]]:  # fmt: skip
    tasks = tasks_from_options({"suite": suites}, [])
    executor = None
    if kind == "slurm":
        spec = {"factory": "codegen_eval.cli:tasks_from_options",
                "kwargs": {"options": {"suite": suites}, "plugins": []}}  # fmt: skip
        executor = SlurmExecutor(SlurmOptions(batch_size=batch, workdir=work / "slurm"), spec)
        executor.check()
    config = RunConfig(n=n, progress=False, max_sandboxes=os.cpu_count() or 1,
                       executor=executor)  # fmt: skip
    log = work / f"{kind}-{time.monotonic_ns()}.jsonl"
    t0 = time.perf_counter()
    result = await run_eval(tasks, FileSolver(samples), log, config)
    wall = time.perf_counter() - t0
    bad = [r for r in result.records if r["status"] != "pass" and r["status"] != "skipped"]
    assert not bad, bad[:2]  # every reference passes: a throughput of failures means nothing
    return wall, executor.stats() if executor else {}


def noop_overhead(jobs: int) -> float:
    """Seconds per trivial array element, submit to all done (node CPUs as slots)."""
    t0 = time.perf_counter()
    job = subprocess.run(["sbatch", "--parsable", f"--array=0-{jobs - 1}", "-o", "/dev/null",
                          "--job-name=cgeval-noop", "--wrap", "true"], capture_output=True,
                         text=True, timeout=60, check=True).stdout.strip()  # fmt: skip
    while subprocess.run(["squeue", "-h", "-j", job], capture_output=True, text=True,
                         timeout=60).stdout.strip():  # fmt: skip
        time.sleep(0.05)
    return (time.perf_counter() - t0) / jobs


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--copies", type=int, default=6)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--batch-size", type=int, help="default: the executor's automatic size")
    ap.add_argument(
        "--hpc",
        default="",
        metavar="VARIANTS",
        help="add these hpc-kernels variants' references, e.g. serial or serial,openmp",
    )
    ap.add_argument("--noop-jobs", type=int, default=20)
    args = ap.parse_args()
    ensure_cluster()
    work = Path(tempfile.mkdtemp(prefix="executors-bench-"))
    suites, total = write_samples(work / "samples.jsonl", args.copies, args.hpc)
    print(f"{total} scorings per round ({', '.join(suites)}), {os.cpu_count()} CPUs, "
          f"batch size {args.batch_size or 'auto'}; {load()}")  # fmt: skip
    tput: dict[str, list[float]] = {"local": [], "slurm": []}
    stats: list[dict[str, object]] = []
    for r in range(args.rounds):
        for kind in ("local", "slurm") if r % 2 == 0 else ("slurm", "local"):
            # _interruptible: Ctrl-C or SIGTERM cancels the round through the event loop, so
            # the executor scancels its jobs on the way out.
            wall, st = asyncio.run(
                _interruptible(
                    one_round(
                        kind, suites, work / "samples.jsonl", args.copies, args.batch_size, work
                    )
                )
            )
            tput[kind].append(total / wall)
            extra = ""
            if st:
                stats.append(st)
                extra = (f"  jobs {st['jobs']} in {st['submissions']} sbatch calls "
                         f"({st['sbatch_s_median']:.2f} s each), fastest submit->worker "
                         f"{st['submit_to_worker_s_min']:.2f} s, worker setup (imports + "
                         f"tasks) {st['worker_setup_s_median']:.2f} s")  # fmt: skip
            print(f"round {r + 1} {kind:5s}: {wall:6.1f} s, {total / wall:5.1f} scorings/s"
                  f"{extra}; {load()}")  # fmt: skip
    ratios = [s / loc for s, loc in zip(tput["slurm"], tput["local"], strict=True)]
    print(f"throughput local {statistics.median(tput['local']):.1f}/s, slurm "
          f"{statistics.median(tput['slurm']):.1f}/s; slurm/local per round "
          f"{', '.join(f'{x:.2f}' for x in ratios)} (median {statistics.median(ratios):.2f})")  # fmt: skip
    if args.noop_jobs:
        per = noop_overhead(args.noop_jobs)
        print(f"no-op array elements: {per:.3f} s each, submit to done, "
              f"{os.cpu_count()} slots; {load()}")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
