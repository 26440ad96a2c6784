"""The kernel-crash gym on the three-node cluster (scripts/slurm-local.sh up --nodes 3), on the
module-build tier (tier 0: an out-of-tree module built against Debian's kernel, booted in QEMU;
a full kernel build per node is too slow for CI): bugs spread over the nodes with the local
bench's verdicts, and a node killed while a bug's module builds is retried on another node."""

from __future__ import annotations

import asyncio
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from codegen_eval.executors.slurm import SlurmOptions
from codegen_eval.kernelgym import bundled_bug
from codegen_eval.kernelgym.distributed import GymOptions, bench_on_slurm, score_patches_on_slurm
from tests.codegen_eval.executors.conftest import REPO, THREE

BUGS = ("t0-null-deref", "t0-divide-error")


def _running_gym_job() -> tuple[str, str] | None:
    out = subprocess.run(["squeue", "-h", "-r", "-t", "RUNNING", "-o", "%i|%j|%N"],
                         capture_output=True, text=True, timeout=20, check=False).stdout  # fmt: skip
    for line in out.splitlines():
        job, name, node = line.split("|")
        if name.startswith("cgeval-") and node:
            return job, node
    return None


async def _kill_a_building_node(hit: dict[str, Any]) -> None:
    """Kill the node of the first gym job seen running, a second into its build."""
    for _ in range(3000):  # polls squeue until a job runs (the test's timeout bounds it)
        if (found := _running_gym_job()) is not None:
            break
        await asyncio.sleep(0.1)
    else:
        return
    await asyncio.sleep(1.0)
    hit.update(job_id=found[0], node=found[1])
    proc = await asyncio.create_subprocess_exec(
        str(REPO / "scripts" / "slurm-local.sh"), "kill-node", found[1], *THREE
    )
    await proc.wait()


@pytest.mark.slow
async def test_bugs_spread_over_nodes_and_a_dead_node_is_retried(
    three_nodes: str, tmp_path: Path
) -> None:
    bugs = [bundled_bug(b) for b in BUGS]
    hit: dict[str, Any] = {}
    killer = asyncio.create_task(_kill_a_building_node(hit))
    try:
        rows = await bench_on_slurm(bugs, gym=GymOptions(runs=1, cpus=1),
                                    slurm=SlurmOptions(workdir=tmp_path))  # fmt: skip
    finally:
        killer.cancel()
    assert hit, "no gym job was seen running"
    infos = [i for r in rows for i in (r["executor"], r["patched_executor"])]
    for row in rows:  # the local bench's verdicts, whatever node each step ran on
        assert row["reproduced"] is True and row["resolved"] is True, json.dumps(row)[:2000]
    # Spread over nodes: a gym job ran on the node that was killed, and the final records
    # (the retries included) name another one. Which nodes took the rest is the scheduler's
    # choice: with 4 small jobs it may pack them all onto one surviving node.
    nodes = {i["node"] for i in infos}
    assert len(nodes | {hit["node"]}) >= 2, (hit, infos)
    retried = [i for i in infos if i["attempts"] == 2]
    assert retried and all(i["node"] != hit["node"] for i in retried), (hit, infos)


def _entries(cache: Path) -> dict[str, float]:
    """Build products in a gym cache (modules, reproducers, kernels) and their mtimes."""
    return {
        str(p.relative_to(cache)): p.stat().st_mtime
        for sub in ("modules", "repro", "debian")
        for p in (cache / sub).glob("*")
        if not p.name.endswith(".lock")
    }


async def _baseline_on(node: str, cache: str, tmp_path: Path) -> dict[str, Any]:
    [(step, info)] = await score_patches_on_slurm(
        [(bundled_bug("t0-null-deref"), "")],
        gym=GymOptions(runs=1, cpus=1),
        slurm=SlurmOptions(workdir=tmp_path / node,
                           extra_args=[f"--nodelist={node}", f"--export=ALL,KERNELGYM_CACHE={cache}"]),
    )  # fmt: skip
    assert not isinstance(step, dict) and step.outcome.value == "reproduced", step
    assert info["node"] == node
    return info


@pytest.mark.slow
async def test_build_cache_per_node_and_shared(three_nodes: str, tmp_path: Path) -> None:
    """KERNELGYM_CACHE on storage the nodes share: node2 reuses what node1 built (nothing in
    the cache is rebuilt). With `%n` in it: each node builds into its own cache."""
    shared, per_node = tmp_path / "shared", tmp_path / "cache-%n"
    # node1 into the shared cache and node3 into its own, at once; then node2 on the shared.
    await asyncio.gather(_baseline_on("node1", str(shared), tmp_path),
                         _baseline_on("node3", str(per_node), tmp_path))  # fmt: skip
    built = _entries(shared)
    assert any(k.startswith("modules/") for k in built) and any(
        k.startswith("repro/") for k in built
    )
    assert _entries(tmp_path / "cache-node3").keys() == built.keys()  # the same builds, its own
    assert not (tmp_path / "cache-%n").exists() and not (tmp_path / "cache-node1").exists()
    await _baseline_on("node2", str(shared), tmp_path)
    assert _entries(shared) == built  # reused from node1's builds: nothing rebuilt or added
    assert not (tmp_path / "cache-node2").exists()
