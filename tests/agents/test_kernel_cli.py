"""kernel-agent and kernel-gym command lines: option placement, model preflight before any VM,
one-line errors, bench results with pass@k and --resume (no VM is booted here)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from agents.kernel import cli
from codegen_eval.kernelgym import cli as gym_cli


@pytest.mark.parametrize(
    "argv",
    [
        ["fix", "t0-null-deref", "--model", "local", "--max-steps", "3", "--mode", "planner"],
        ["--model", "local", "--max-steps", "3", "--mode", "planner", "fix", "t0-null-deref"],
    ],
)
def test_options_before_or_after_the_subcommand(argv: list[str]) -> None:
    args = cli.build_parser().parse_args(argv)
    assert (args.model, args.max_steps, args.mode, args.bug) == (
        "local",
        3,
        "planner",
        "t0-null-deref",
    )
    assert args.runs == 3  # defaults survive when an option is not given after the command


def test_unknown_model_is_one_line_before_any_vm(capsys) -> None:
    t0 = time.monotonic()
    assert cli.main(["fix", "t0-null-deref", "--model", "nosuch"]) == 2
    assert time.monotonic() - t0 < 10  # no baseline boot happened
    err = capsys.readouterr().err.strip()
    assert "unknown model alias 'nosuch'" in err and "[models.nosuch]" in err
    assert "--base-url URL" in err
    assert len(err.splitlines()) == 1


def test_dead_base_url_is_named_before_any_vm(capsys, tmp_path: Path) -> None:
    argv = ["--base-url", "http://127.0.0.1:9/v1", "bench", "--bugs", "t0-warn"]
    assert cli.main([*argv, "--out", str(tmp_path / "r.jsonl")]) == 2
    err = capsys.readouterr().err
    assert "model 'remote' is not usable" in err and "connection" in err
    assert "start (react)" not in err  # no bug was started


def test_bench_input_errors(capsys, tmp_path: Path) -> None:
    assert cli.main(["bench", "--bugs", "t0-warn,nope"]) == 2
    assert "unknown bug(s) nope" in capsys.readouterr().err
    assert cli.main(["bench", "--bugs", "t0-warn", "--resume"]) == 2
    assert "--resume needs --log" in capsys.readouterr().err
    out = tmp_path / "r.jsonl"
    out.write_text("")
    assert cli.main(["bench", "--bugs", "t0-warn", "--out", str(out)]) == 2
    assert "add --resume" in capsys.readouterr().err


def _row(bug: str, attempt: int, resolved: bool) -> dict:
    return {"bug_id": bug, "attempt": attempt, "resolved": resolved, "steps": [],
            "stopped": "resolved" if resolved else "max_steps", "turns": 2, "prompt_tokens": 10,
            "completion_tokens": 5, "wall_s": 1.0, "final_patch": "", "errors": []}  # fmt: skip


def test_resume_with_everything_done_prints_pass_at_k(tmp_path: Path, capsys) -> None:
    out = tmp_path / "r.jsonl"
    rows = [_row("t0-warn", 1, False), _row("t0-warn", 2, True), _row("t0-gpf", 1, False),
            _row("t0-gpf", 2, False)]  # fmt: skip
    out.write_text("".join(json.dumps(r) + "\n" for r in rows))
    argv = ["bench", "--bugs", "t0-warn,t0-gpf", "-n", "2", "--out", str(out), "--resume"]
    assert cli.main(argv) == 1  # t0-gpf never resolved; nothing was run (no model, no VM)
    text = " ".join(capsys.readouterr().out.split())
    assert "pass@1 0.25" in text and "pass@2 0.50" in text and "resolved (plausible) 1/2" in text
    assert "matching the developer fix 0/2" in text


def test_pass_at_k() -> None:
    assert cli.pass_at_k(5, 0, 1) == 0.0
    assert cli.pass_at_k(5, 5, 3) == 1.0
    assert cli.pass_at_k(4, 1, 1) == pytest.approx(0.25)
    assert cli.pass_at_k(4, 1, 2) == pytest.approx(0.5)


def test_gym_try_errors_are_one_line(tmp_path: Path, capsys) -> None:
    assert gym_cli.main(["try", "t0-null-deref", str(tmp_path / "missing.patch")]) == 2
    assert "cannot read patch" in capsys.readouterr().err
    empty = tmp_path / "empty.patch"
    empty.write_text("\n  \n")
    assert gym_cli.main(["try", "t0-null-deref", str(empty)]) == 2
    assert "is empty: nothing to try" in capsys.readouterr().err
    assert gym_cli.main(["--linux-tree", str(tmp_path / "no-linux"), "list"]) == 2
    assert "is not a directory" in capsys.readouterr().err


@pytest.mark.slow
def test_fix_ends_with_a_table_and_agent_end_whatever_the_model_says(tmp_path, capsys) -> None:
    """The issue's crash, end to end through the CLI (one real baseline boot): a server with a
    small window that refuses long prompts, and a model that answers prose under grammar-less
    tool emulation. The run ends with the result table and `agent_end`, exit 1, not a crash."""
    from appl import accounting, config
    from appl.testing import Rule, ScriptedServer
    from tests.agents.conftest import TEST_MODEL

    saved = config.get_config()
    server = ScriptedServer(
        [Rule(reply="The lookup result is not checked, add a NULL check.")],
        default_reply=None,
        context_window=600,
    ).start()
    model = {**TEST_MODEL, "base_url": server.base_url, "context_window": 50_000,
             "capabilities": {"auto_tool_choice": False}}  # fmt: skip
    config.configure(models={"scripted": model}, budget={})
    log = tmp_path / "agent.jsonl"
    try:
        argv = ["fix", "t0-null-deref", "--model", "scripted", "--max-steps", "3", "--runs", "1",
                "--log", str(log)]  # fmt: skip
        assert cli.main(argv) == 1
    finally:
        server.stop()
        config.reset_config(saved)
        accounting.reset_usage()
    out = capsys.readouterr()
    assert "kernel-agent" in out.out and "t0-null-deref" in out.out  # the table
    assert "resolved (plausible) 0/1" in out.out
    events = [json.loads(line) for line in log.read_text().splitlines()]
    end = events[-1]
    assert end["event"] == "agent_end" and end["steps"] == []
    # prose where JSON was due: errors; prose where an edit was forced: a wasted call
    assert end["stopped"] in ("model_error", "max_turns") and end["turns"] >= 3
    assert server.overflows >= 1  # the first, too long, request was refused and retried
    assert any("non-JSON" in e for e in end["errors"])


def test_slurm_account_and_cpu_spellings() -> None:
    args = cli.build_parser().parse_args(
        ["bench", "--slurm-account", "lab", "--slurm-cpus-per-task", "3"]
    )
    assert args.slurm_account == "lab" and args.slurm_cpus == 3


def test_the_table_shows_plausible_and_matching_the_fix_per_bug() -> None:
    rows = [
        {**_row("t0-warn", 1, True), "matches_fix": True},
        {**_row("t0-warn", 2, True), "matches_fix": False},
        {**_row("t0-gpf", 1, True), "matches_fix": False},
        _row("t0-bug-on", 1, False),
    ]
    table = cli.result_table(rows, 2)
    cells = {col.header: list(col.cells) for col in table.columns}
    assert cells["plausible"] == ["2/2", "1/1", "0/1"]
    assert cells["matches fix"] == ["1/2", "0/1", "-"]  # no plausible patch: nothing to compare
    assert str(table.caption).startswith("resolved (plausible) 2/3, matching the developer fix 1/3")
    assert cli.localization_lines(rows[0]) == []  # no step, no localization: nothing claimed
