"""Calibrations (each reference's run) kept on disk per toolchain, so that only the first
run on a machine pays for running the references: `$CODEGEN_CVDP_CALIBRATION`, else
`$XDG_CACHE_HOME/codegen-lab/cvdp-calibration/` (default `~/.cache/...`).

The key covers the problem's files, the reference, the harness's command and environment,
Icarus' version and the harness runtime's pins, so a change to any of them measures again.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from codegen_eval.types import Sample

from .screen import DesignFacts

CACHE_ENV = "CODEGEN_CVDP_CALIBRATION"
_FORMAT = 2  # bump when what is stored (or how a cause is worded) changes
_REQUIREMENTS = Path(__file__).with_name("requirements.txt")


def cache_dir() -> Path:
    env = os.environ.get(CACHE_ENV)
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "codegen-lab" / "cvdp-calibration"


def key_of(sample: Sample, toolchain: str, venv: str) -> str:
    h = hashlib.sha256(f"cvdp-calibration {_FORMAT}\n{toolchain}\n{venv}\n".encode())
    h.update(_REQUIREMENTS.read_bytes())
    md = sample.metadata
    material = [sample.files, md.get("reference"), md.get("env"), md.get("command")]
    h.update(json.dumps(material, sort_keys=True).encode())
    return h.hexdigest()


def facts_to_json(f: DesignFacts) -> dict[str, Any]:
    return {"harness_calls": sorted(list(c) for c in f.harness_calls), "vpi": f.vpi_modules}


def facts_from_json(d: dict[str, Any]) -> DesignFacts:
    calls = {(str(a), int(b), str(c)) for a, b, c in d["harness_calls"]}
    return DesignFacts(calls, [str(m) for m in d["vpi"]])


def load(key: str) -> dict[str, Any] | None:
    try:
        data = json.loads((cache_dir() / f"{key}.json").read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and data.get("format") == _FORMAT else None


def store(key: str, data: dict[str, Any]) -> None:
    d = cache_dir()
    with contextlib.suppress(OSError):
        d.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=d, prefix=".tmp-", suffix=".json")
        with os.fdopen(fd, "w") as f:
            json.dump({**data, "format": _FORMAT}, f)
        os.replace(tmp, d / f"{key}.json")  # atomic: concurrent runs never read half a file
