"""--executor slurm on a real single-node cluster (scripts/slurm-local.sh): the same verdicts
as --executor local, results streamed into the run log with the job that scored them, a job
killed with scancel mid-run retried with nothing lost or doubled, a dead or misconfigured
cluster refused in one line before any work, and Ctrl-C + --resume across a cancelled run."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from codegen_eval.cli import tasks_from_options
from codegen_eval.executors.slurm import SlurmExecutor, SlurmOptions
from codegen_eval.log import read_log
from codegen_eval.registry import get_suite
from codegen_eval.runner import RunConfig, run_eval
from codegen_eval.solvers import ReferenceSolver

ROOT = Path(__file__).resolve().parents[3]
HPC_SAMPLES = ("axpy/serial", "axpy/openmp", "axpy/mpi", "scan/mpi-openmp")


def cli(*args: str, env: dict[str, str] | None = None, timeout: float = 300) -> Any:
    return subprocess.run(
        [sys.executable, "-m", "codegen_eval.cli", *args],
        cwd=ROOT,
        env=dict(env or os.environ, PYTHONPATH=str(ROOT)),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def verdicts(log: Path) -> dict[tuple[str, str, int], tuple[str, str | None]]:
    return {
        (r["suite"], r["sample_id"], r["index"]): (r["status"], r["failure_class"])
        for r in read_log(log).score_records
    }


def reference_samples(path: Path) -> int:
    """Every built-in Verilog reference, two broken variants of some, and a few hpc-kernels
    references (serial, OpenMP, MPI, hybrid) with one wrong answer: a candidates file."""
    lines = []
    for s in get_suite("verilog").dataset:
        lines.append({"suite": "verilog", "sample_id": s.id, "index": 0, "code": s.target})
    for s in list(get_suite("verilog").dataset)[:12:3]:
        lines.append({"suite": "verilog", "sample_id": s.id, "index": 1,
                      "code": s.target.replace("endmodule", "wire;\nendmodule", 1)})  # fmt: skip
        lines.append({"suite": "verilog", "sample_id": s.id, "index": 2,
                      "code": s.target.replace("assign", "assign #1", 1).replace("&", "|", 1)})  # fmt: skip
    hpc = {s.id: s for s in get_suite("hpc-kernels").dataset}
    for sid in HPC_SAMPLES:
        lines.append(
            {"suite": "hpc-kernels", "sample_id": sid, "index": 0, "code": hpc[sid].target}
        )
    wrong = hpc["axpy/serial"].target.replace("a * x[i]", "x[i]")
    lines.append({"suite": "hpc-kernels", "sample_id": "axpy/serial", "index": 1, "code": wrong})
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return len(lines)


@pytest.mark.slow
def test_same_verdicts_local_and_slurm(slurm_cluster: str, tmp_path: Path) -> None:
    samples = tmp_path / "samples.jsonl"
    total = reference_samples(samples)
    common = ["run", "--suite", "verilog", "--suite", "hpc-kernels", "--samples", str(samples),
              "-n", "3", "--no-progress"]  # fmt: skip
    sel = ["--filter", "*"]
    local = cli(*common, *sel, "--log", str(tmp_path / "local.jsonl"))
    assert local.returncode == 0, local.stderr
    remote = cli(*common, *sel, "--log", str(tmp_path / "slurm.jsonl"), "--executor", "slurm",
                 "--slurm-batch-size", "8")  # fmt: skip
    assert remote.returncode == 0, remote.stderr
    a, b = verdicts(tmp_path / "local.jsonl"), verdicts(tmp_path / "slurm.jsonl")
    assert len(a) == total and a == b
    classes = {v[1] for v in a.values()}
    assert None in classes and len(classes) >= 3, classes  # passes and two kinds of failure
    records = read_log(tmp_path / "slurm.jsonl").score_records
    hpc_configs = {s.id: s.metadata["configs"] for s in get_suite("hpc-kernels").dataset}
    assert all(r["executor"]["kind"] == "slurm" for r in records)
    jobs = {r["executor"]["job_id"] for r in records}
    assert len(jobs) >= total // 8 and all(j.split("_")[0].isdigit() for j in jobs)
    assert not any("executor" in r for r in read_log(tmp_path / "local.jsonl").score_records)
    # A sweep's job is granted its ranks x threads (up to a node's CPUs), and efficiency is
    # also given by what was granted.
    node_cpus = os.cpu_count() or 1
    for r in records:
        if r["suite"] != "hpc-kernels" or r["status"] != "pass":
            continue
        m, granted = r["metrics"], r["executor"]["cpus_granted"]
        asked = int(m["np"] * m["threads"])
        want = max(int(np_) * int(t) for np_, t in hpc_configs[r["sample_id"]])
        assert granted == min(want, node_cpus)
        assert m["cpus_granted"] == granted
        assert m["efficiency_granted"] == pytest.approx(m["speedup"] / min(asked, granted))


async def _kill_one_running_job(ex: SlurmExecutor, killed: list[str]) -> None:
    """scancel the first array element seen running with part of its batch done."""
    while True:
        await asyncio.sleep(0.05)
        for job_id, el in list(ex._elements.items()):
            done = len(el.results.read_text().splitlines()) if el.results.exists() else 0
            if el.state == "RUNNING" and 1 <= done and el.items:
                proc = await asyncio.create_subprocess_exec("scancel", job_id)
                await proc.wait()
                killed.append(job_id)
                return


@pytest.mark.slow
@pytest.mark.parametrize("attempts", [3, 1])
async def test_scancel_mid_run(slurm_cluster: str, tmp_path: Path, attempts: int) -> None:
    """attempts=3: the killed job's unfinished candidates run again in a new job, the finished
    ones are kept; nothing lost or doubled. attempts=1: they end as infra_error naming the
    Slurm state, never as a candidate failure."""
    tasks = tasks_from_options({"suite": ["verilog"]}, [])
    spec = {"factory": "codegen_eval.cli:tasks_from_options",
            "kwargs": {"options": {"suite": ["verilog"]}, "plugins": []}}  # fmt: skip
    opts = SlurmOptions(batch_size=25, max_attempts=attempts, workdir=tmp_path / "w",
                        poll_interval_s=0.2)  # fmt: skip
    ex = SlurmExecutor(opts, spec)
    killed: list[str] = []
    log = tmp_path / "run.jsonl"
    config = RunConfig(progress=False, executor=ex)
    killer = asyncio.create_task(_kill_one_running_job(ex, killed))
    try:
        result = await run_eval(tasks, ReferenceSolver(), log, config)
    finally:
        killer.cancel()
    assert killed, "no job was caught running"
    contents = read_log(log)
    assert contents.duplicates == 0 and len(contents.scores) == 50
    recs = contents.score_records
    kept = [r for r in recs if r["executor"].get("job_id") == killed[0]]
    assert 1 <= len(kept) < 25  # what the killed job finished is kept, not redone
    if attempts == 3:
        assert all(r["status"] == "pass" for r in recs)
        redone = [r for r in recs if r["executor"]["attempts"] == 2]
        assert len(kept) + len(redone) == 25 and ex.stats()["retried"] == len(redone)
        assert {r["executor"]["job_id"] for r in redone}.isdisjoint(killed)
    else:
        lost = [r for r in recs if r["status"] != "pass"]
        assert len(kept) + len(lost) == 25 and lost
        for r in lost:
            assert r["failure_class"] == "infra_error"
            assert r["executor"]["state"] == "CANCELLED"
            assert f"slurm job {killed[0]} ended CANCELLED" in r["explanation"]
    assert result.scored_now == 50


def test_sweep_cpus_reads_both_launch_formats() -> None:
    from codegen_eval.executors.slurm import sweep_cpus
    from codegen_eval.types import Sample

    assert sweep_cpus(Sample("a", "")) == 1
    assert sweep_cpus(Sample("b", "", metadata={"configs": [[1, 1], [4, 1], [2, 2]]})) == 4
    launch = [{"procs": 1, "threads": 8}, {"procs": 16, "threads": 2}]
    assert sweep_cpus(Sample("c", "", metadata={"launch": launch})) == 32


def test_dead_controller_is_one_line_before_any_work(slurm_cluster: str, tmp_path: Path) -> None:
    conf = Path(slurm_cluster).read_text()
    dead = tmp_path / "slurm.conf"
    dead.write_text(
        "\n".join(
            "SlurmctldPort=6999" if line.startswith("SlurmctldPort=") else line
            for line in conf.splitlines()
        )
    )
    log = tmp_path / "run.jsonl"
    t0 = time.monotonic()
    cp = cli("run", "--suite", "verilog", "--solver", "reference", "--log", str(log),
             "--executor", "slurm", env=dict(os.environ, SLURM_CONF=str(dead)))  # fmt: skip
    assert cp.returncode == 2
    assert len(cp.stderr.strip().splitlines()) == 1, cp.stderr
    assert "--executor slurm: the Slurm controller does not answer" in cp.stderr
    assert str(dead) in cp.stderr and not log.exists()
    assert time.monotonic() - t0 < 60


def test_misconfigured_options_are_one_line(slurm_cluster: str, tmp_path: Path) -> None:
    for flags, why in (
        (["--slurm-partition", "no-such-partition"], "invalid partition"),
        (["--slurm-mem", "100000T"], "node configuration is not available"),
    ):
        cp = cli("run", "--suite", "verilog", "--solver", "reference", "--log",
                 str(tmp_path / "r.jsonl"), "--executor", "slurm", *flags)  # fmt: skip
        assert cp.returncode == 2, cp.stderr
        assert len(cp.stderr.strip().splitlines()) == 1, cp.stderr
        assert "the cluster refuses these job options" in cp.stderr and why in cp.stderr
        assert not (tmp_path / "r.jsonl").exists()


def _queued_or_running(job_name_prefix: str = "cgeval-") -> list[str]:
    out = subprocess.run(["squeue", "-h", "-r", "-o", "%i|%j|%T"], capture_output=True,
                         text=True, timeout=20, check=True).stdout  # fmt: skip
    return [line for line in out.splitlines() if f"|{job_name_prefix}" in line]


@pytest.mark.slow
def test_sigint_cancels_jobs_and_resume_finishes(slurm_cluster: str, tmp_path: Path) -> None:
    log = tmp_path / "run.jsonl"
    args = [sys.executable, "-m", "codegen_eval.cli", "run", "--suite", "verilog", "--solver",
            "reference", "--log", str(log), "--executor", "slurm", "--slurm-batch-size", "4",
            "--no-progress"]  # fmt: skip
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    before = set(_queued_or_running())
    proc = subprocess.Popen(args, cwd=ROOT, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)  # fmt: skip
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        if log.exists() and log.read_text().count('"type": "score"') >= 6:
            break
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    first = read_log(log)
    assert 6 <= len(first.scores) < 50
    # The interrupted run left no job behind: its cancelled jobs may show COMPLETING for a
    # while under load (their processes being killed), then go.
    deadline = time.monotonic() + 60
    while not set(_queued_or_running()) <= before and time.monotonic() < deadline:
        assert all(x.endswith("|COMPLETING") for x in set(_queued_or_running()) - before)
        time.sleep(0.5)
    assert set(_queued_or_running()) <= before
    cp = cli("run", "--resume", "--log", str(log))  # the executor comes from the log
    assert cp.returncode == 0, cp.stderr
    final = read_log(log)
    assert final.duplicates == 0 and len(final.scores) == 50
    assert all(r["status"] == "pass" for r in final.score_records)
    resumed = [r for r in final.score_records if r["sample_id"] not in first.scores]
    assert all(r["executor"]["kind"] == "slurm" for r in final.score_records), resumed[:1]


def test_slurm_local_script_is_idempotent(slurm_cluster: str) -> None:
    from tests.codegen_eval.executors.conftest import slurm_local

    again = slurm_local("up")
    assert again.returncode == 0 and again.stdout.strip() == f"export SLURM_CONF={slurm_cluster}"
    status = slurm_local("status")
    assert status.returncode == 0 and "controller up" in status.stderr
    states = ("idle", "mixed", "allocated", "completing")
    assert any(f"node localnode: {s}" in status.stderr for s in states), status.stderr
    out = subprocess.run(["srun", "-n1", "echo", "hi"], capture_output=True, text=True,
                         timeout=30, check=True)  # fmt: skip
    assert out.stdout.strip() == "hi"


async def test_a_worker_that_cannot_start_is_infra_error_with_its_cause(
    slurm_cluster: str, tmp_path: Path
) -> None:
    """A compute node that cannot rebuild the tasks (here: a spec naming a missing module):
    the job fails, is retried, and every candidate ends infra_error naming the Slurm state
    and the worker's own last words, not as a failed candidate."""
    tasks = tasks_from_options({"suite": ["verilog"]}, [])
    spec = {"factory": "codegen_eval.no_such_module:tasks", "kwargs": {}}
    opts = SlurmOptions(batch_size=1, max_attempts=2, workdir=tmp_path / "w", poll_interval_s=0.2)
    ex = SlurmExecutor(opts, spec)
    result = await run_eval(tasks, ReferenceSolver(), tmp_path / "r.jsonl",
                            RunConfig(progress=False, executor=ex, filter="p0[12]_*"))  # fmt: skip
    assert len(result.records) == 2
    for r in result.records:
        assert r["failure_class"] == "infra_error" and r["status"] == "error"
        assert r["executor"] == {"kind": "slurm", "job_id": "", "state": "FAILED", "attempts": 2}
        assert "ended FAILED" in r["explanation"] and "no_such_module" in r["explanation"]
    assert ex.stats()["retried"] == 2 and ex.stats()["jobs"] == 4
