"""A SLURM_CONF that names no file is said at once, not after the clients' own wait."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from codegen_eval.executors.slurm_client import SlurmUnavailable, check_cluster


def test_a_missing_slurm_conf_is_reported_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    missing = tmp_path / "nowhere" / "slurm.conf"
    monkeypatch.setenv("SLURM_CONF", str(missing))
    started = time.monotonic()
    with pytest.raises(SlurmUnavailable, match="is not a file") as caught:
        check_cluster([])
    assert str(missing) in str(caught.value)
    assert time.monotonic() - started < 5  # the clients' own wait was 15 s
