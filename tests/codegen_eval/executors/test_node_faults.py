"""Node faults on the real three-node cluster (scripts/slurm-local.sh up --nodes 3), mid-run:
a node killed (its slurmd, steps and workers SIGKILLed) and a node cut from the network with
its jobs frozen (as when its shared storage is cut too) while Slurm requeues the job. Both end
with every candidate scored exactly once: nothing lost, nothing doubled, retried candidates
recorded with their attempts (ours) or restarts (Slurm's own requeue, same job id)."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import pytest

from codegen_eval.cli import tasks_from_options
from codegen_eval.executors.slurm import SlurmExecutor, SlurmOptions
from codegen_eval.log import read_log
from codegen_eval.runner import RunConfig, run_eval
from codegen_eval.solvers import ReferenceSolver
from tests.codegen_eval.executors.conftest import REPO, THREE

SPEC = {"factory": "codegen_eval.cli:tasks_from_options",
        "kwargs": {"options": {"suite": ["verilog"]}, "plugins": []}}  # fmt: skip


async def _script(*args: str, cluster: tuple[str, ...] = THREE) -> None:
    proc = await asyncio.create_subprocess_exec(
        str(REPO / "scripts" / "slurm-local.sh"), *args, *cluster,
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL,
    )  # fmt: skip
    assert await proc.wait() == 0, args


async def _fault_when_running(
    ex: SlurmExecutor, action: list[str], hit: dict[str, Any], cluster: tuple[str, ...] = THREE
) -> None:
    """Once an array element is running with part of its batch done: apply the fault to its
    node (read from its first result line) on `cluster` (slurm-local.sh's --name NAME)."""
    while True:
        await asyncio.sleep(0.05)
        for job_id, el in list(ex._elements.items()):
            lines = el.results.read_text().splitlines() if el.results.exists() else []
            if el.state == "RUNNING" and lines and el.items:
                node = json.loads(lines[0])["node"]
                hit.update(job_id=job_id, node=node, done=len(lines), t=time.monotonic())
                await _script(*action, node, cluster=cluster)
                return


async def _run_with_fault(tmp_path: Path, action: list[str], **opts: Any) -> tuple[Any, dict]:
    tasks = tasks_from_options({"suite": ["verilog"]}, [])
    ex = SlurmExecutor(SlurmOptions(workdir=tmp_path / "w", poll_interval_s=0.2, **opts), SPEC)
    ex.check()
    hit: dict[str, Any] = {}
    fault = asyncio.create_task(_fault_when_running(ex, action, hit))
    try:
        await run_eval(tasks, ReferenceSolver(), tmp_path / "run.jsonl",
                       RunConfig(progress=False, executor=ex))  # fmt: skip
    finally:
        fault.cancel()
        if hit.get("node"):
            await _script("heal-node", hit["node"])
    assert hit, "no job was caught running"
    hit["recovery_s"] = time.monotonic() - hit["t"]
    contents = read_log(tmp_path / "run.jsonl")
    assert contents.duplicates == 0 and len(contents.scores) == 50
    assert all(r["status"] == "pass" for r in contents.score_records)  # none infra_error
    return contents.score_records, hit


@pytest.mark.slow
async def test_a_node_killed_mid_run(three_nodes: str, tmp_path: Path) -> None:
    """The controller notices the dead node (SlurmdTimeout=10), its jobs end NODE_FAIL, and
    their unscored candidates go into new jobs on the other nodes (attempt 2); what the
    killed jobs had finished is kept."""
    recs, hit = await _run_with_fault(tmp_path, ["kill-node"], batch_size=10, max_attempts=3)
    kept = [r for r in recs if r["executor"]["job_id"] == hit["job_id"]]
    assert hit["done"] <= len(kept) < 10  # the killed job's finished half is kept
    redone = [r for r in recs if r["executor"]["attempts"] >= 2]
    assert redone and all(r["executor"]["node"] != hit["node"] for r in redone)
    assert {r["executor"]["job_id"] for r in redone}.isdisjoint({hit["job_id"]})
    print(f"node killed -> last candidate scored: {hit['recovery_s']:.1f} s")


@pytest.mark.slow
async def test_a_node_cut_from_the_network_with_slurm_requeue(
    three_nodes: str, tmp_path: Path
) -> None:
    """Jobs submitted requeueable (a site's JobRequeue, here --requeue): the cut node's job
    goes back to PENDING under the same id and reruns elsewhere with SLURM_RESTART_COUNT=1,
    skipping what the first run wrote. After the heal the frozen first run continues and
    writes results again for candidates already scored: the first result stays the only one."""
    recs, hit = await _run_with_fault(
        tmp_path, ["cut-node", "--freeze"], batch_size=10, max_attempts=3,
        extra_args=["--requeue"],
    )  # fmt: skip
    same_job = [r for r in recs if r["executor"]["job_id"] == hit["job_id"]]
    assert len(same_job) == 10  # one job id for the whole batch: Slurm's requeue, not ours
    rerun = [r for r in same_job if r["executor"].get("restarts")]
    assert rerun and all(r["executor"]["restarts"] == 1 for r in rerun)
    assert all(r["executor"]["node"] != hit["node"] for r in rerun)
    assert all(r["executor"]["attempts"] == 1 for r in same_job)
    assert len(same_job) - len(rerun) >= hit["done"]  # the first run's results kept
    print(f"node cut -> last candidate scored: {hit['recovery_s']:.1f} s")
