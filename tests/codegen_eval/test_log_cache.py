from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from codegen_eval.cache import ScoreCache, code_hash
from codegen_eval.log import LogFormatError, RunLog, read_log
from codegen_eval.types import Score


def _score(i: int) -> dict:
    return {
        "type": "score",
        "suite": "s",
        "sample_id": "a",
        "index": i,
        "value": 1.0,
        "status": "pass",
    }


def test_truncated_last_line_is_tolerated_and_cut_on_append(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    with RunLog.create(path, {"suites": ["s"]}) as log:
        log.write(_score(0))
        log.write(_score(1))
    with path.open("a") as fh:
        fh.write('{"type": "score", "suite": "s", "sample_id": "a", "ind')  # killed mid-write
    contents = read_log(path)
    assert contents.truncated_tail
    assert len(contents.scores) == 2
    with RunLog.append(path, {"suites": ["s"]}) as log:
        log.write(_score(2))
    lines = path.read_text().splitlines()
    assert all(json.loads(line) for line in lines)  # every line valid again
    again = read_log(path)
    assert not again.truncated_tail and len(again.scores) == 3 and len(again.resumes) == 1


def test_damaged_middle_line_is_an_error_with_line_number(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    path.write_text('{"type":"header"}\nnot json\n{"type":"end"}\n')
    with pytest.raises(LogFormatError, match=":2:"):
        read_log(path)


def test_create_refuses_to_overwrite(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    RunLog.create(path, {}).close()
    with pytest.raises(FileExistsError, match="--resume"):
        RunLog.create(path, {})


def test_duplicate_scores_are_counted_not_double_counted(tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    with RunLog.create(path, {}) as log:
        log.write(_score(0))
        log.write(_score(0))
    c = read_log(path)
    assert len(c.scores) == 1 and c.duplicates == 1


def test_code_hash_distinguishes_fields() -> None:
    assert code_hash("s", "a", "x") == code_hash("s", "a", "x")
    assert code_hash("s", "a", "x") != code_hash("s", "ax", "")
    assert code_hash("s", "a", "x") != code_hash("t", "a", "x")


async def test_cache_scores_identical_candidates_once() -> None:
    cache = ScoreCache()
    calls = 0

    async def compute() -> Score:
        nonlocal calls
        calls += 1
        await asyncio.sleep(0.05)
        return Score(1.0, "pass", metrics={"t": 1.0})

    results = await asyncio.gather(*(cache.get_or_score("k", compute) for _ in range(5)))
    assert calls == 1
    assert sum(1 for _, cached in results if not cached) == 1
    s, cached = await cache.get_or_score("k", compute)
    assert cached and s.value == 1.0 and calls == 1
    s.metrics["t"] = 99.0  # callers get copies
    assert cache.get("k").metrics["t"] == 1.0


async def test_cache_does_not_keep_infra_errors() -> None:
    cache = ScoreCache()
    calls = 0

    async def compute() -> Score:
        nonlocal calls
        calls += 1
        return Score(0.0, "error", "infra_error")

    await cache.get_or_score("k", compute)
    await cache.get_or_score("k", compute)
    assert calls == 2
