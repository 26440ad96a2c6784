"""Logs both ways: `codegen-eval report`/`show` read the `.eval` logs of our Inspect tasks,
and `codegen-eval export --inspect` writes our JSONL run logs as `.eval` logs Inspect reads
(same verdicts, metadata and figures)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from inspect_ai import eval as inspect_eval
from inspect_ai.log import EvalConfig, EvalDataset, EvalLog, EvalSpec, read_eval_log, write_eval_log

from codegen_eval.cli import main as cli_main
from codegen_eval.inspect_logs import eval_log_records
from codegen_eval.inspect_tasks import verilog
from codegen_eval.inspect_tasks.scorer import SCORER_NAME
from codegen_eval.log import read_log

from .suites.test_verilog_adversarial import HEAD, RIGHT, WRONG
from .tiny_suite import BROKEN, REFERENCE

GATES = "p01_basic_gates"
PLUGIN = ["--plugin", "tests.codegen_eval.tiny_suite"]


def _keyed(records: list[dict]) -> dict[tuple, tuple]:
    return {
        (r["suite"], r["sample_id"], r["index"]): (
            r["status"], r["failure_class"], r["metrics"], r["explanation"], r["value"]
        )
        for r in records
    }  # fmt: skip


@pytest.fixture
def run_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A real `codegen-eval run` of the tiny C suite: references and a broken candidate."""
    monkeypatch.setenv("TINY_COPIES", "2")
    samples = tmp_path / "samples.jsonl"
    lines = []
    for sid in ("sum-00", "sum-01"):
        for i, code in enumerate((REFERENCE, BROKEN["syntax"])):
            lines.append(json.dumps({"sample_id": sid, "index": i, "code": code}))
    samples.write_text("\n".join(lines) + "\n", encoding="utf-8")
    log = tmp_path / "run.jsonl"
    args = [*PLUGIN, "run", "--suite", "tiny-c", "--samples", str(samples), "-n", "2", "-k", "1,2"]
    assert cli_main([*args, "--log", str(log), "--no-progress"]) == 0
    return log


def test_export_writes_an_eval_log_with_our_verdicts(run_log: Path, tmp_path: Path, capsys) -> None:
    out = tmp_path / "run.eval"
    assert cli_main(["export", str(run_log), "--inspect", str(out)]) == 0
    assert f"inspect log: {out}" in capsys.readouterr().out
    log = read_eval_log(str(out))  # Inspect's own reader
    assert log.eval.task == "codegen_eval/tiny-c" and log.eval.config.epochs == 2
    ours = read_log(run_log).score_records
    by_key = {(r["sample_id"], r["index"] + 1): r for r in ours}
    assert len(log.samples or []) == len(ours) == 4
    for s in log.samples or []:
        rec = by_key[(s.id, s.epoch)]
        score = s.scores[SCORER_NAME]
        assert score.value == ("C" if rec["status"] == "pass" else "I")
        assert score.metadata["failure_class"] == rec["failure_class"]
        assert score.explanation == rec["explanation"]
    metrics = {k: m.value for sc in log.results.scores for k, m in sc.metrics.items()}
    assert metrics["accuracy"] == 0.5 and metrics["pass@1"] == 0.5 and metrics["pass@2"] == 1.0
    # and back: the .eval read as a run log gives the same records
    back = [r for r in eval_log_records(out) if r["type"] == "score"]
    assert _keyed(back) == _keyed(ours)


def test_report_reads_an_exported_log_like_the_jsonl(run_log: Path, tmp_path: Path, capsys) -> None:
    out = tmp_path / "run.eval"
    assert cli_main(["export", str(run_log), "--inspect", str(out)]) == 0
    capsys.readouterr()
    assert cli_main(["report", str(run_log), "-o", str(tmp_path / "a.html")]) == 0
    from_jsonl = capsys.readouterr().out
    assert cli_main(["report", str(out), "-o", str(tmp_path / "b.html")]) == 0
    from_eval = capsys.readouterr().out
    table = [line for line in from_jsonl.splitlines() if "tiny-c" in line]
    assert table and table == [line for line in from_eval.splitlines() if "tiny-c" in line]


def test_report_and_show_read_an_inspect_task_log(tmp_path: Path, capsys) -> None:
    """An `inspect eval codegen_eval/verilog` log: one passing and one failing epoch."""
    samples = tmp_path / "s.jsonl"
    rows = [HEAD + RIGHT + "endmodule\n", HEAD + WRONG + "endmodule\n"]
    samples.write_text(
        "".join(json.dumps({"sample_id": GATES, "index": i, "code": c}) + "\n"
                for i, c in enumerate(rows)),
        encoding="utf-8",
    )  # fmt: skip
    (log,) = inspect_eval(
        verilog(solver="file", samples=str(samples), filter=GATES),
        model="mockllm/model",
        epochs=2,
        log_dir=str(tmp_path / "logs"),
        display="none",
    )
    assert log.status == "success"
    (path,) = (tmp_path / "logs").glob("*.eval")
    assert cli_main(["report", str(path), "-k", "1,2", "-o", str(tmp_path / "r.html")]) == 0
    row = next(line for line in capsys.readouterr().out.splitlines() if "(all)" in line)
    assert "0.500" in row and "1.000" in row  # pass@1, pass@2 of one pass in two
    assert cli_main(["show", str(path), GATES, "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    text = json.dumps(shown)
    assert "sim_mismatch" in text or "wrong_answer" in text
    assert (tmp_path / "r.html").read_text(encoding="utf-8").count(GATES) >= 1


def test_a_log_of_another_task_is_one_line(tmp_path: Path, capsys) -> None:
    other = tmp_path / "other.eval"
    spec = EvalSpec(
        created="2026-11-28T00:00:00+00:00",
        task="someone/else",
        dataset=EvalDataset(name="x"),
        model="mockllm/model",
        config=EvalConfig(),
    )
    write_eval_log(EvalLog(eval=spec, samples=[]), str(other))
    assert cli_main(["report", str(other)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "not the log of a codegen_eval task" in err, err


def test_export_needs_a_target(run_log: Path, capsys) -> None:
    assert cli_main(["export", str(run_log)]) == 2
    assert "export needs --parquet OUT or --inspect OUT.eval" in capsys.readouterr().err
