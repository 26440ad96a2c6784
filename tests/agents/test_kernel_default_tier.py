"""kernel-agent's out-of-the-box model is the embedded 1.5B tier (issue 32 item 9): the 0.5B
wrote its edits as text and fixed no tier-0 bug. `--local-model` and a config file's explicit
choice win; appl's own default stays 0.5B; the first progress line names the tier and who
chose it; a tier that was never fetched is one line naming the command that fetches it."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from agents.kernel import cli
from appl import config
from appl.local import server as local_server
from appl.local.catalog import DEFAULT_LOCAL_MODEL, SETUP_MODELS, resolve_spec
from appl.local.weights import weights_path

ONE_POINT_FIVE = "qwen2.5-coder-1.5b"


@pytest.fixture(autouse=True)
def fresh_config(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    """Each test reads the built-in config (or its own appl.toml) and leaves no override."""
    monkeypatch.delenv("APPL_CONFIG", raising=False)
    monkeypatch.delenv("APPL_DEFAULT_MODEL", raising=False)
    monkeypatch.chdir(tmp_path)  # no ./appl.toml
    saved = config.get_config()
    config.reset_config()
    yield
    config.reset_config(saved)


def _tier_after_configure(argv: list[str]) -> tuple[str, str]:
    args = cli.build_parser().parse_args(argv)
    alias = cli._configure_model(args)
    chosen = config.get_config().model(alias).options["model"]
    return resolve_spec(chosen).name, args.tier_source


def test_no_tier_named_means_the_1_5b_tier_which_setup_fetches() -> None:
    tier, source = _tier_after_configure(["fix", "t0-null-deref"])
    assert tier == ONE_POINT_FIVE and "kernel agent's default" in source
    assert _tier_after_configure(["fix", "t0-null-deref", "--model", "local"])[0] == ONE_POINT_FIVE
    assert cli.KERNEL_AGENT_TIER in SETUP_MODELS  # scripts/setup.sh --local-model fetches it
    # appl's own default (prompt programs) is unchanged
    assert DEFAULT_LOCAL_MODEL == "qwen2.5-coder-0.5b" == resolve_spec(None).name


@pytest.mark.parametrize("where", ["before", "after"])
def test_local_model_0_5b_still_selects_the_small_tier(where: str) -> None:
    opts = ["--local-model", "0.5b"]
    argv = [*opts, "fix", "t0-null-deref"] if where == "before" else ["fix", "t0-null-deref", *opts]
    assert _tier_after_configure(argv) == ("qwen2.5-coder-0.5b", "tier from --local-model")


def test_a_config_files_explicit_tier_wins(tmp_path: Path) -> None:
    (tmp_path / "appl.toml").write_text(
        '[models.local]\nprovider = "local"\noptions = { model = "qwen2.5-coder-0.5b" }\n'
    )
    config.reset_config()
    tier, source = _tier_after_configure(["fix", "t0-null-deref"])
    assert tier == "qwen2.5-coder-0.5b"
    assert "options.model of [models.local]" in source and "appl.toml" in source
    # and --local-model beats the file
    assert _tier_after_configure(["--local-model", "1.5b", "fix", "x"])[0] == ONE_POINT_FIVE


@pytest.mark.parametrize("command", [["fix", "t0-null-deref"], ["bench", "--bugs", "t0-warn"]])
def test_first_progress_line_names_the_tier_and_a_missing_one_names_the_fetch(
    command: list[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys
) -> None:
    monkeypatch.setenv("APPL_MODEL_CACHE", str(tmp_path / "empty-cache"))
    assert cli.main(command) == 2  # before any model call or VM
    err = capsys.readouterr().err.strip().splitlines()
    assert err[0].endswith(
        "model: local (qwen2.5-coder-1.5b, embedded llama.cpp; the kernel agent's default tier; "
        "--local-model 0.5b: the small one)"
    ), err
    assert len(err) == 2, err  # the model line, then one error line
    assert err[1].startswith("kernel-agent: ") and "qwen2.5-coder-1.5b is not fetched" in err[1]
    assert "`python -m appl.local fetch --model qwen2.5-coder-1.5b`" in err[1]


@pytest.mark.slow  # loads the 1.5B model: 33 s at load 9
def test_the_default_tier_is_the_one_that_answers(capsys) -> None:
    """Real weights (fetched by setup), the real llama.cpp server: the process serving the
    preflight's request runs the 1.5B file, and the first line said so."""
    spec = resolve_spec(ONE_POINT_FIVE)
    assert weights_path(spec).exists(), "run scripts/setup.sh --local-model (fetches 1.5B)"
    before = set(local_server._LIVE)
    try:
        assert cli.preflight(cli.build_parser().parse_args(["fix", "t0-null-deref"])) == "local"
        started = [s for s in local_server._LIVE - before if s.running]
        assert [s.spec.name for s in started] == [ONE_POINT_FIVE]
        cmdline = Path(f"/proc/{started[0]._proc.pid}/cmdline").read_bytes().split(b"\0")
        assert os.fsencode(weights_path(spec)) in cmdline
    finally:
        for s in local_server._LIVE - before:
            s.stop()
    first = capsys.readouterr().err.splitlines()[0]
    assert "model: local (qwen2.5-coder-1.5b, embedded llama.cpp;" in first
