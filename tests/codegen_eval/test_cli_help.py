"""`codegen-eval --help` pages: every option says what it does, and its default."""

from __future__ import annotations

import argparse

from codegen_eval import cli


def _subcommands() -> dict[str, argparse.ArgumentParser]:
    parser = cli.build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


def test_every_option_has_help() -> None:
    for name, parser in _subcommands().items():
        for action in parser._actions:
            if action.dest != "help":
                assert action.help, f"codegen-eval {name}: {action.dest} has no help"


def test_run_help_shows_the_defaults() -> None:
    text = _subcommands()["run"].format_help()
    flat = " ".join(text.split())
    for option, default in [("--temperature", "0.8"), ("--max-tokens", "1024"), ("-n", "1")]:
        assert option in flat
        assert f"(default: {default})" in flat, option


def test_list_suite_shows_every_problem_id_whole(capsys) -> None:
    assert cli.main(["list", "hpc-kernels"]) == 0
    out = capsys.readouterr().out
    assert "histogram/mpi-openmp" in out and "axpy/serial" in out
    assert "45 problems (9 kernels x 5 variants" in " ".join(out.split())
    assert cli.main(["list", "omp-pragma", "--filter", "*atomic*"]) == 0
    out = capsys.readouterr().out
    ids = [line.split("│")[1].strip() for line in out.splitlines() if line.startswith("│")]
    assert ids and all("atomic" in i for i in ids)
    assert cli.main(["list", "nosuch"]) == 2
    assert "unknown suite 'nosuch'" in capsys.readouterr().err
