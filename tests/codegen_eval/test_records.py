"""The run log's records (codegen_eval/records.py): one definition per `type`, one door in
(`parse_record`, which names the line of a bad record) and one door out (`to_json`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from codegen_eval.log import LogFormatError, read_log
from codegen_eval.records import RECORD_TYPES, parse_record, to_json

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "run_log_v1.jsonl"
HEADER = {"type": "header", "log_version": 1, "suites": ["s"], "n": 1, "ks": [1]}
SCORE = {"type": "score", "suite": "s", "sample_id": "a", "index": 0, "status": "pass"}


def test_every_line_of_an_old_log_parses_and_writes_back_byte_for_byte() -> None:
    lines = FIXTURE.read_text(encoding="utf-8").splitlines()
    kinds = set()
    for lineno, line in enumerate(lines, start=1):
        rec = parse_record(json.loads(line), f"{FIXTURE.name}:{lineno}")
        kinds.add(rec["type"])
        assert to_json(rec) == line
    assert kinds == set(RECORD_TYPES)  # the fixture has every kind


def _log(tmp_path: Path, *records: object) -> Path:
    path = tmp_path / "run.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def test_an_unknown_record_type_names_its_line(tmp_path: Path) -> None:
    # A misspelt type used to be skipped in silence: its candidate counted as never scored.
    log = _log(tmp_path, HEADER, {**SCORE, "type": "scroe"}, {"type": "end"})
    with pytest.raises(LogFormatError, match=r"run\.jsonl:2: unknown record type \"scroe\""):
        read_log(log)


def test_a_newer_writers_record_types_are_skipped_and_counted(tmp_path: Path) -> None:
    """A log whose header says a later log_version may hold record types this reader lacks:
    they are skipped and counted (the known ones still read), not refused as damage."""
    newer = {**HEADER, "log_version": 2}
    log = _log(tmp_path, newer, {"type": "checkpoint", "at": 3}, SCORE, {"type": "end"})
    contents = read_log(log)
    assert contents.skipped_newer == 1 and len(contents.scores) == 1
    # and `report` says so instead of dropping them in silence
    from codegen_eval.compare import load_runs

    (run,), _ = load_runs([str(log)], (1,))
    assert any("1 records of types this version does not know" in n for n in run.notes)
    # a known type is still checked in a newer log: damage is not skipped
    bad = _log(tmp_path, newer, {**SCORE, "index": "0"})
    with pytest.raises(LogFormatError, match=r"run\.jsonl:2: a score record"):
        read_log(bad)


@pytest.mark.parametrize(
    ("field", "value", "why"),
    [
        ("index", "0", 'with index "0" \\(not int\\)'),
        ("index", True, "with index true \\(not int\\)"),
        ("status", "passed", "with status 'passed' \\(not one of error, fail, pass, skipped\\)"),
        ("failure_class", 3, "with failure_class 3 \\(not str or null\\)"),
        ("metrics", [], "with metrics \\[\\] \\(not dict\\)"),
        ("value", "1.0", 'with value "1.0" \\(not int or float\\)'),
    ],
)
def test_a_malformed_score_names_its_line_and_field(
    tmp_path: Path, field: str, value: object, why: str
) -> None:
    log = _log(tmp_path, HEADER, {**SCORE, field: value})
    with pytest.raises(LogFormatError, match=rf"run\.jsonl:2: a score record {why}"):
        read_log(log)


def test_a_record_without_a_required_field_names_it(tmp_path: Path) -> None:
    log = _log(tmp_path, HEADER, {k: v for k, v in SCORE.items() if k != "sample_id"})
    with pytest.raises(LogFormatError, match=r"run\.jsonl:2: a score record without sample_id"):
        read_log(log)


def test_fields_an_older_writer_left_out_read_as_their_defaults(tmp_path: Path) -> None:
    log = _log(tmp_path, HEADER, SCORE, {"type": "excluded", "suite": "s", "sample_id": "b"})
    contents = read_log(log)
    rec = contents.score_records[0]
    assert (rec["failure_class"], rec["metrics"], rec["explanation"], rec["cached"]) == (
        None,
        {},
        "",
        False,
    )
    assert "score_metadata" not in rec and "executor" not in rec  # optional, stay absent
    assert contents.excluded[0]["reason"] == ""


def test_a_truncated_last_line_is_still_tolerated(tmp_path: Path) -> None:
    log = _log(tmp_path, HEADER, SCORE)
    with log.open("a", encoding="utf-8") as fh:
        fh.write('{"type": "score", "suite": "s", "sampl')
    contents = read_log(log)
    assert contents.truncated_tail and len(contents.scores) == 1


def test_parse_record_refuses_what_is_not_a_record() -> None:
    with pytest.raises(LogFormatError, match=r"x\.jsonl:3: a JSON list, not a record"):
        parse_record([1], "x.jsonl:3")
    with pytest.raises(LogFormatError, match="unknown record type null"):
        parse_record({"suite": "s"}, "x.jsonl:4")
