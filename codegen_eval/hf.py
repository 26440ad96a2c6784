"""Suites and run logs as Hugging Face `datasets.Dataset` objects, from local data only.

Nothing here touches the Hub: datasets are built in memory with `Dataset.from_list` and written
with `to_parquet`. Heterogeneous dict fields (sample metadata and files, score metrics) are
stored as JSON strings so that every row has the same Arrow schema; `json.loads` them back.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from codegen_eval.log import read_log
from codegen_eval.types import Task

if TYPE_CHECKING:
    from datasets import Dataset

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # belt and braces: never reach for the Hub


def suite_to_dataset(task: Task) -> Dataset:
    """One row per sample: suite, id, input, target, language, variant, metadata, files."""
    from datasets import Dataset

    rows = [
        {
            "suite": task.name,
            "id": s.id,
            "input": s.input,
            "target": s.target,
            "language": str(s.metadata.get("language", "")),
            "variant": str(s.metadata.get("variant", "")),
            "metadata": json.dumps(s.metadata, default=str, sort_keys=True),
            "files": json.dumps(s.files, sort_keys=True),
        }
        for s in task.dataset
    ]
    return Dataset.from_list(rows) if rows else Dataset.from_dict({k: [] for k in _SUITE_COLS})


_SUITE_COLS = ("suite", "id", "input", "target", "language", "variant", "metadata", "files")


def log_to_dataset(path: str | os.PathLike[str], *, with_code: bool = True) -> Dataset:
    """One row per scored candidate of a run log, joined with its code when logged."""
    from datasets import Dataset

    contents = read_log(path)
    header = contents.header
    rows: list[dict[str, Any]] = []
    for key, rec in contents.scores.items():
        cand = contents.candidates.get(key, {})
        row = {
            "run_model": str(header.get("model", "")),
            "suite": rec["suite"],
            "sample_id": rec["sample_id"],
            "index": int(rec["index"]),
            "language": rec.get("language", ""),
            "variant": rec.get("variant", ""),
            "status": rec["status"],
            "value": float(rec.get("value") or 0.0),
            "failure_class": rec.get("failure_class") or "",
            "metrics": json.dumps(rec.get("metrics") or {}, sort_keys=True),
            "speedup": _opt_float((rec.get("metrics") or {}).get("speedup")),
            "explanation": rec.get("explanation", ""),
            "cached": bool(rec.get("cached", False)),
            "code_hash": rec.get("code_hash", ""),
        }
        if with_code:
            row["code"] = cand.get("code", "")
        rows.append(row)
    if not rows:
        raise ValueError(f"{path}: the log holds no scored candidates")
    return Dataset.from_list(rows)


def _opt_float(x: Any) -> float | None:
    return None if x is None else float(x)


def export_parquet(log_path: str | os.PathLike[str], out: str | os.PathLike[str]) -> Path:
    out_path = Path(out)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    log_to_dataset(log_path).to_parquet(str(out_path))
    return out_path
