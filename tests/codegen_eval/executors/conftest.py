"""Real Slurm clusters for the executor tests, started with scripts/slurm-local.sh:
`slurm_cluster`, one node (about a second warm, idempotent), SLURM_CONF set for the session;
`three_nodes`, three nodes as network + UTS + mount namespaces of this machine (cluster name
cgl-test-3n), SLURM_CONF set for one test. Each is stopped (`down`) at the end of the session
when this session started it (a cluster somebody had already started is left running)."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
SCRIPT = REPO / "scripts" / "slurm-local.sh"


THREE = ("--name", "cgl-test-3n")


def slurm_local(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(SCRIPT), *args], capture_output=True, text=True, timeout=timeout, check=False
    )


@pytest.fixture(scope="session")
def slurm_cluster() -> Iterator[str]:
    """The cluster's SLURM_CONF (also exported into os.environ for the session)."""
    was_up = slurm_local("status").returncode == 0
    p = slurm_local("up")
    if p.returncode != 0:
        pytest.fail(f"scripts/slurm-local.sh up failed:\n{p.stderr[-3000:]}")
    line = p.stdout.strip().splitlines()[-1]
    assert line.startswith("export SLURM_CONF="), p.stdout
    conf = line.split("=", 1)[1].strip("'\"")
    saved = os.environ.get("SLURM_CONF")
    os.environ["SLURM_CONF"] = conf
    try:
        yield conf
    finally:
        if saved is None:
            os.environ.pop("SLURM_CONF", None)
        else:
            os.environ["SLURM_CONF"] = saved
        if not was_up:
            slurm_local("down")


@pytest.fixture(scope="session")
def three_node_cluster() -> Iterator[str]:
    """The SLURM_CONF of a three-node cluster (node1..node3), up for the session."""
    was_up = slurm_local("status", *THREE).returncode == 0
    p = slurm_local("up", "--nodes", "3", *THREE)
    if p.returncode != 0:
        pytest.fail(f"scripts/slurm-local.sh up --nodes 3 failed:\n{p.stderr[-3000:]}")
    conf = p.stdout.strip().splitlines()[-1].split("=", 1)[1].strip("'\"")
    try:
        yield conf
    finally:
        if not was_up:
            slurm_local("down", *THREE)


@pytest.fixture
def three_nodes(three_node_cluster: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The three-node cluster for one test: SLURM_CONF points at it, every node answers
    (a fault test before may have left one down: `up` restarts it and waits)."""
    p = slurm_local("up", "--nodes", "3", *THREE)
    if p.returncode != 0:
        pytest.fail(f"the three-node cluster did not come back:\n{p.stderr[-3000:]}")
    monkeypatch.setenv("SLURM_CONF", three_node_cluster)
    yield three_node_cluster
