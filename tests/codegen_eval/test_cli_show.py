"""`codegen-eval show LOG [ID]`: the per-problem view of a run log, in the terminal and JSON."""

from __future__ import annotations

import json
from pathlib import Path

from codegen_eval import cli

HEADER = {"type": "header", "log_version": 1, "suites": ["s"], "n": 2, "ks": [1]}


def _log(tmp_path: Path) -> Path:
    records = [HEADER]
    for sid, index, status, cls, code in [
        ("alpha/with-a-long-id-that-must-not-be-cut", 0, "pass", None, "int a;"),
        ("alpha/with-a-long-id-that-must-not-be-cut", 1, "fail", "compile_error:syntax", "int"),
        ("beta", 0, "fail", "wrong_answer", "int b;"),
    ]:
        records.append({"type": "candidate", "suite": "s", "sample_id": sid, "index": index,
                        "code": code, "raw": f"```c\n{code}\n```", "metadata": {}})  # fmt: skip
        records.append({"type": "score", "suite": "s", "sample_id": sid, "index": index,
                        "value": float(status == "pass"), "status": status,
                        "failure_class": cls, "metrics": {},
                        "explanation": f"why {sid} {index}\nsecond line"})  # fmt: skip
    log = tmp_path / "run.jsonl"
    log.write_text("".join(json.dumps(r) + "\n" for r in records))
    return log


def test_show_lists_every_sample_with_its_class(tmp_path: Path, capsys) -> None:
    log = _log(tmp_path)
    assert cli.main(["show", str(log)]) == 0
    out = capsys.readouterr().out
    assert "alpha/with-a-long-id-that-must-not-be-cut" in out
    assert "compile_error:syntax" in out and "wrong_answer" in out and "3 samples" in out


def test_show_id_prints_code_reply_and_explanation_whole(tmp_path: Path, capsys) -> None:
    log = _log(tmp_path)
    assert cli.main(["show", str(log), "beta"]) == 0
    out = capsys.readouterr().out
    assert "why beta 0" in out and "second line" in out  # the whole explanation
    assert "int b;" in out and "raw reply" in out and "```c" in out


def test_show_json_and_an_unknown_id(tmp_path: Path, capsys) -> None:
    log = _log(tmp_path)
    assert cli.main(["show", str(log), "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [(r["id"], r["index"], r["status"]) for r in rows] == [
        ("alpha/with-a-long-id-that-must-not-be-cut", 0, "pass"),
        ("alpha/with-a-long-id-that-must-not-be-cut", 1, "fail"),
        ("beta", 0, "fail"),
    ]
    assert cli.main(["show", str(log), "alpha"]) == 1
    err = capsys.readouterr().err
    assert "no sample 'alpha'" in err and "alpha/with-a-long-id-that-must-not-be-cut" in err
