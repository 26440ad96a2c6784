"""A real single-node Slurm cluster for the executor tests: `scripts/slurm-local.sh up`
(about a second warm, idempotent), SLURM_CONF set for the session, and `down` at the end
when this session started it (a cluster somebody had already started is left running)."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
SCRIPT = REPO / "scripts" / "slurm-local.sh"


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
