"""The `appl` command and the demo program it runs."""

from __future__ import annotations

import argparse

import pytest

from appl.cli import build_parser, collect_commands, main


def test_demo_runs_parallel_gens_against_its_own_server(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "--latency", "0.05", "--drafts", "3"]) == 0
    out = capsys.readouterr().out
    assert "A warp is 32 GPU threads" in out
    assert "Judge picked: Slogan #1" in out
    assert "7 model calls" in out


def test_modules_register_subcommands_and_missing_ones_are_skipped() -> None:
    def register_cli(add) -> None:  # type: ignore[no-untyped-def]
        add("extra", help="x", configure=lambda p: p.add_argument("--n"), run=lambda a: 3)

    import sys
    import types

    module = types.ModuleType("fake_cli_module")
    module.register_cli = register_cli  # type: ignore[attr-defined]
    sys.modules["fake_cli_module"] = module
    try:
        commands = collect_commands(["appl.cli", "fake_cli_module", "appl.not_written_yet.cli"])
    finally:
        del sys.modules["fake_cli_module"]
    assert sorted(commands) == ["demo", "extra"]
    args = build_parser(commands).parse_args(["extra", "--n", "1"])
    assert isinstance(args, argparse.Namespace) and args._run(args) == 3
    with pytest.raises(ValueError, match="two modules"):
        collect_commands(["appl.cli", "appl.cli"])


def test_no_subcommand_prints_help(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    assert "demo" in capsys.readouterr().out
