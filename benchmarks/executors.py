"""Scoring throughput, --executor local vs --executor slurm, on the one-node local cluster.

    .venv/bin/python benchmarks/executors.py [--copies 6] [--rounds 2] [--batch-size N]
        [--hpc serial[,openmp]] [--noop-jobs 20] [--nodes 1,3]

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

--nodes 1,3: the same measurements on a cluster of each size (scripts/slurm-local.sh up
--nodes N --name bench-Nn, stopped afterwards), and on several nodes the recovery from a fault
mid-run: the time from a node's death (kill-node) and from a node's network cut (cut-node
--freeze, jobs requeueable) to the last candidate scored, with every candidate scored once.
On one machine the nodes share its CPUs: node counts change the scheduling, not the compute.
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
from codegen_eval.solvers import FileSolver, ReferenceSolver  # noqa: E402


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


async def fault_round(action: list[str], name: str, work: Path) -> tuple[float, int]:
    """50 Verilog references in elements of 10; once one runs with a result written, the
    fault hits its node. Returns (fault -> last candidate scored, s; candidates retried)."""
    from tests.codegen_eval.executors.test_node_faults import _fault_when_running

    tasks = tasks_from_options({"suite": ["verilog"]}, [])
    spec = {"factory": "codegen_eval.cli:tasks_from_options",
            "kwargs": {"options": {"suite": ["verilog"]}, "plugins": []}}  # fmt: skip
    extra = ["--requeue"] if action[0] == "cut-node" else []
    ex = SlurmExecutor(SlurmOptions(batch_size=10, workdir=work / "fault", poll_interval_s=0.2,
                                    extra_args=extra), spec)  # fmt: skip
    ex.check()
    hit: dict[str, object] = {}
    fault = asyncio.create_task(_fault_when_running(ex, action, hit, ("--name", name)))
    try:
        result = await run_eval(tasks, ReferenceSolver(), work / f"fault-{time.monotonic_ns()}.jsonl",
                                RunConfig(progress=False, executor=ex))  # fmt: skip
    finally:
        fault.cancel()
        if hit.get("node"):
            slurm_local("heal-node", str(hit["node"]), "--name", name)
    done = time.monotonic()
    assert hit.get("node"), "no job was caught running"
    if fault.done() and not fault.cancelled() and fault.exception():
        raise RuntimeError(f"the fault was not applied: {fault.exception()!r}")
    assert len(result.records) == 50 and all(r["status"] == "pass" for r in result.records)
    again = sum(bool(r["executor"].get("restarts") or r["executor"]["attempts"] > 1)
                for r in result.records)  # fmt: skip
    return done - float(hit["t"]), again  # type: ignore[arg-type]


def slurm_local(*args: str) -> str:
    p = subprocess.run([str(ROOT / "scripts" / "slurm-local.sh"), *args], capture_output=True,
                       text=True, timeout=300, check=True)  # fmt: skip
    return p.stdout


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
    ap.add_argument("--nodes", default="", metavar="N,N",
                    help="measure on local clusters of these sizes, e.g. 1,3")  # fmt: skip
    args = ap.parse_args()
    try:
        sizes = [int(x) for x in args.nodes.split(",") if x.strip()]
    except ValueError:
        ap.error(f"--nodes: node counts separated by commas, e.g. 1,3, not {args.nodes!r}")
    if any(not 1 <= n <= 64 for n in sizes):
        ap.error("--nodes: each count from 1 to 64")
    work = Path(tempfile.mkdtemp(prefix="executors-bench-"))
    suites, total = write_samples(work / "samples.jsonl", args.copies, args.hpc)
    print(f"{total} scorings per round ({', '.join(suites)}), {os.cpu_count()} CPUs, "
          f"batch size {args.batch_size or 'auto'}; {load()}")  # fmt: skip
    if not sizes:
        ensure_cluster()
        return measure(args, suites, total, work)
    for n in sizes:
        name = f"bench-{n}n"
        line = slurm_local("up", "--nodes", str(n), "--name", name).strip().splitlines()[-1]
        os.environ["SLURM_CONF"] = line.split("=", 1)[1]
        print(f"== {n} node(s) (cluster {name}) ==")
        try:
            measure(args, suites, total, work)
            if n > 1:
                for action in (["kill-node"], ["cut-node", "--freeze"]):
                    took, again = asyncio.run(_interruptible(fault_round(action, name, work)))
                    print(f"{' '.join(action)} mid-run: last candidate scored {took:.1f} s "
                          f"after the fault; 50 of 50 once, {again} scored again; {load()}")  # fmt: skip
        finally:
            slurm_local("down", "--name", name)
    return 0


def measure(args: argparse.Namespace, suites: list[str], total: int, work: Path) -> int:
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
    if ratios:  # --rounds 0: only the scheduling and fault figures
        print(f"throughput local {statistics.median(tput['local']):.1f}/s, slurm "
              f"{statistics.median(tput['slurm']):.1f}/s; slurm/local per round "
              f"{', '.join(f'{x:.2f}' for x in ratios)} (median {statistics.median(ratios):.2f})")  # fmt: skip
    if args.noop_jobs:
        per = noop_overhead(args.noop_jobs)
        from codegen_eval.executors.slurm_client import partition_cpus

        print(f"no-op array elements: {per:.3f} s each, submit to done, "
              f"{partition_cpus(None)[1]} slots; {load()}")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
