"""One vocabulary across the four CLIs (docs/cli.md, issue 32 item 5): usage errors are one
line `PROG: error: ...` with exit 2 in every CLI and subcommand; `--records` / `--bug` /
`--bugs` / `--log` / `--json` and the Slurm options mean the same in both kernel CLIs and are
accepted before and after the subcommand; old spellings still work with a note on stderr.
Nothing here boots a VM or calls a model."""

from __future__ import annotations

import argparse
import json
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from agents.kernel import cli as agent_cli
from appl import cli as appl_cli
from codegen_eval import cli as eval_cli
from codegen_eval.kernelgym import cli as gym_cli

SAMPLE = Path(__file__).parent / "codegen_eval" / "kernelgym" / "data" / "kbench_sample.json"

Main = Callable[[list[str]], int]


def _subcommands(parser: argparse.ArgumentParser) -> Iterator[tuple[list[str], str]]:
    """(argv prefix, prog) of the parser and every subcommand, nested ones too."""
    yield [], parser.prog
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                for argv, prog in _subcommands(sub):
                    yield [name, *argv], prog


def _clis() -> list[tuple[str, Main, argparse.ArgumentParser]]:
    return [
        ("appl", appl_cli.main, appl_cli.build_parser(appl_cli.collect_commands())),
        ("codegen-eval", eval_cli.main, eval_cli.build_parser()),
        ("kernel-gym", gym_cli.main, gym_cli.build_parser()),
        ("kernel-agent", agent_cli.main, agent_cli.build_parser()),
    ]


def _one_error_line(err: str, prog: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    # argparse names the top-level program for arguments no parser took
    assert lines[0].startswith((f"{prog}: error: ", f"{prog.split()[0]}: error: ")), err
    return lines[0]


def test_every_usage_error_in_every_cli_is_one_line_and_exit_2(capsys) -> None:
    seen = 0
    for _name, main, parser in _clis():
        for argv, prog in _subcommands(parser):
            with pytest.raises(SystemExit) as stop:
                main([*argv, "--no-such-option"])
            assert stop.value.code == 2, (prog, stop.value.code)
            _one_error_line(capsys.readouterr().err, prog)
            seen += 1
    assert seen >= 15  # every subcommand was walked, nested ones (appl trace show) too


@pytest.mark.parametrize(
    ("argv", "prog", "message"),
    [
        (["kernel-gym", "reproduce", "t0-nosuch"], "kernel-gym", "unknown bug 't0-nosuch'"),
        (["kernel-agent", "fix", "t0-nosuch"], "kernel-agent", "unknown bug 't0-nosuch'"),
        (["codegen-eval", "list", "nosuch"], "codegen-eval", "unknown suite 'nosuch'"),
        (["appl", "trace", "show", "MISSING"], "appl trace", "MISSING"),
    ],
)
def test_bad_input_is_one_error_line_and_exit_2(
    argv: list[str], prog: str, message: str, tmp_path: Path, capsys
) -> None:
    main = {name: main for name, main, _ in _clis()}[argv[0]]
    args = [str(tmp_path / "none.json") if a == "MISSING" else a for a in argv[1:]]
    assert main(args) == 2
    out = capsys.readouterr()
    line = _one_error_line(out.err, prog)
    assert message.replace("MISSING", "none.json") in line and out.out == ""


def test_appl_without_a_command_says_so(capsys) -> None:
    assert appl_cli.main([]) == 2
    line = _one_error_line(capsys.readouterr().err, "appl")
    assert "a command is required" in line and "trace" in line


@pytest.mark.parametrize("where", ["before", "after"])
def test_bugs_and_records_mean_the_same_in_both_kernel_clis(where: str, tmp_path: Path) -> None:
    records = tmp_path / "records"
    records.mkdir()
    shutil.copy(SAMPLE, records / "one.json")
    record_id = json.loads(SAMPLE.read_text())["id"]
    for parser, bugs_of, sub in (
        (gym_cli.build_parser(), gym_cli._bugs, "list"),
        (agent_cli.build_parser(), agent_cli.selected_bugs, "bench"),
    ):
        for opts, ids in (
            (["--bugs", "t0-warn,t0-gpf"], ["t0-warn", "t0-gpf"]),
            (["--bug", "t0-gpf", "--bug", "t0-warn"], ["t0-gpf", "t0-warn"]),
            (["--records", str(records)], [record_id]),
            (["--tier", "1", "--bugs", "t1-double-free,t0-warn"], ["t1-double-free"]),
        ):
            argv = [*opts, sub] if where == "before" else [sub, *opts]
            args = parser.parse_args(argv)
            gym_cli.normalize(args, parser.prog)
            assert [b.id for b in bugs_of(args)] == ids, (parser.prog, argv)


def test_the_old_bugs_path_still_loads_records_with_a_note(capsys) -> None:
    record_id = json.loads(SAMPLE.read_text())["id"]
    for parser, bugs_of in ((gym_cli.build_parser(), gym_cli._bugs),
                            (agent_cli.build_parser(), agent_cli.selected_bugs)):  # fmt: skip
        args = parser.parse_args(["--bugs", str(SAMPLE), "bench"])
        gym_cli.normalize(args, parser.prog)
        assert [b.id for b in bugs_of(args)] == [record_id]
        err = capsys.readouterr().err.strip()
        assert err == f"{parser.prog}: note: --bugs {SAMPLE} (records) is deprecated: use " \
            f"--records {SAMPLE}"  # fmt: skip


def test_a_missing_records_path_given_to_bugs_is_named(capsys) -> None:
    assert gym_cli.main(["list", "--bugs", "nowhere/bugs.jsonl"]) == 2
    line = _one_error_line(capsys.readouterr().err, "kernel-gym")
    assert "no such file" in line and "--records PATH" in line


def _option_strings(parser: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    return {s: a for a in parser._actions for s in a.option_strings if s.startswith("--")}


def test_every_top_level_option_is_accepted_after_the_subcommand() -> None:
    plugin = eval_cli.build_parser().parse_args(["list", "--plugin", "tests.codegen_eval"])
    assert plugin.plugin == ["tests.codegen_eval"]
    for parser in (eval_cli.build_parser(), gym_cli.build_parser(), agent_cli.build_parser()):
        top = _option_strings(parser)
        subs = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        for name, sub in subs.choices.items():
            after = _option_strings(sub)
            for option, action in top.items():
                if option in ("--help", "--version"):
                    continue
                assert option in after, f"{parser.prog} {name} {option}"
                assert after[option].dest == action.dest, option
        if parser.prog == "codegen-eval":
            continue
        # and the one given after the subcommand wins
        args = parser.parse_args(["--runs", "1", "bench", "--runs", "2"])
        assert args.runs == 2
        assert parser.parse_args(["--runs", "1", "bench"]).runs == 1


def test_both_kernel_clis_have_the_same_slurm_options_and_defaults() -> None:
    def slurm(parser: argparse.ArgumentParser) -> dict[str, object]:
        subs = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        opts = _option_strings(parser)
        assert set(_option_strings(subs.choices["bench"])) >= set(opts) - {"--version"}
        return {
            s: (a.dest, a.default)
            for s, a in opts.items()
            if s.startswith("--slurm") or s == "--executor"
        }

    gym, agent = slurm(gym_cli.build_parser()), slurm(agent_cli.build_parser())
    assert gym == agent and "--slurm-cpus-per-task" in gym and "--slurm-account" in gym
    # codegen-eval names them alike (it has more: batching, MPI steps)
    run = next(
        a for a in eval_cli.build_parser()._actions if isinstance(a, argparse._SubParsersAction)
    ).choices["run"]
    assert set(gym) - {"--slurm-cpus"} <= set(_option_strings(run))


def test_the_default_slurm_workdir_is_next_to_the_log(tmp_path: Path) -> None:
    from codegen_eval.kernelgym.cli_options import slurm_options

    for parser in (gym_cli.build_parser(), agent_cli.build_parser()):
        args = parser.parse_args(["bench", "--log", str(tmp_path / "run.jsonl")])
        assert slurm_options(args).workdir == tmp_path / "run.jsonl.slurm"  # as codegen-eval
        assert slurm_options(parser.parse_args(["bench"])).workdir is None  # runs/slurm
        args = parser.parse_args(["bench", "--slurm-workdir", "/shared/x", "--log", "l.jsonl"])
        assert slurm_options(args).workdir == Path("/shared/x")


def test_kernel_gym_list_json_is_stdout_alone(capsys) -> None:
    assert gym_cli.main(["list", "--json", "--tier", "1"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert rows and {r["tier"] for r in rows} == {1} and "t1-double-free" in {r["id"] for r in rows}


def test_kernel_gym_bench_log_has_a_row_per_bug_and_json_goes_to_stdout(
    tmp_path: Path, capsys
) -> None:
    # a kBench record that cannot run here (no --linux-tree): its row, without any build
    log = tmp_path / "bench.jsonl"
    argv = ["--records", str(SAMPLE), "bench", "--log", str(log), "--json"]
    assert gym_cli.main(argv) == 1  # the bench ran; its one bug did not reproduce
    out = capsys.readouterr()
    (row,) = json.loads(out.out)
    assert "--linux-tree" in row["error"] and "reproduced" in out.err
    (logged,) = [json.loads(line) for line in log.read_text().splitlines()]
    assert logged == {"event": "bench", **row}


def _attempt(bug: str, attempt: int, resolved: bool) -> dict[str, object]:
    return {"bug_id": bug, "attempt": attempt, "resolved": resolved, "steps": [],
            "stopped": "resolved" if resolved else "max_steps", "turns": 1, "prompt_tokens": 1,
            "completion_tokens": 1, "wall_s": 1.0, "final_patch": "", "errors": []}  # fmt: skip


@pytest.mark.timeout(60)  # a regression would start the agent and its model
def test_kernel_agent_resumes_from_its_log_and_prints_json(tmp_path: Path, capsys) -> None:
    log = tmp_path / "agent.jsonl"
    events = [
        {"event": "reset", "bug": "t0-warn"},
        {"event": "attempt", **_attempt("t0-warn", 1, True)},
    ]
    log.write_text("".join(json.dumps(e) + "\n" for e in events))
    argv = ["bench", "--bugs", "t0-warn", "--log", str(log)]
    assert agent_cli.main(argv) == 2  # attempts in the log: refuse to mix two runs
    assert "add --resume" in _one_error_line(capsys.readouterr().err, "kernel-agent")
    assert agent_cli.main([*argv, "--resume", "--json"]) == 0  # nothing left: no model needed
    out = capsys.readouterr()
    assert json.loads(out.out) == [_attempt("t0-warn", 1, True)]


@pytest.mark.timeout(60)  # a regression would start the agent and its model
def test_kernel_agent_old_out_and_json_file_still_work_with_notes(tmp_path: Path, capsys) -> None:
    out, rows = tmp_path / "r.jsonl", tmp_path / "rows.json"
    out.write_text(json.dumps(_attempt("t0-gpf", 1, False)) + "\n")
    argv = ["bench", "--bugs", "t0-gpf", "--out", str(out), "--resume", "--json", str(rows)]
    assert agent_cli.main(argv) == 1  # not resolved
    captured = capsys.readouterr()
    assert json.loads(rows.read_text()) == [_attempt("t0-gpf", 1, False)]
    notes = [x for x in captured.err.splitlines() if x.startswith("kernel-agent: note: --")]
    assert len(notes) == 2, captured.err
    assert "use --log FILE" in notes[0] and "(a file) is deprecated" in notes[1]
    assert "kernel-agent" in captured.out  # the table, as before
