"""kBench records without a build: what is missing is named, with the way to supply it.
(The end-to-end path on a real Linux git checkout is in test_kbench_git.py, marked slow.)"""

from __future__ import annotations

import copy
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from codegen_eval.kernelgym import (
    BugSetupError,
    KernelGym,
    PatchScorer,
    UnsupportedBug,
    kbench_inputs,
    load_record,
)
from codegen_eval.kernelgym.cli import bench
from codegen_eval.kernelgym.cli import main as cli_main
from codegen_eval.kernelgym.records import record_from_json

SAMPLE = Path(__file__).parent / "data" / "kbench_sample.json"
CONFIG = "CONFIG_64BIT=y\nCONFIG_KASAN=y\n"
REPRO = "#include <unistd.h>\nint main(void) { return 0; }\n"


def _sample(**changes: Any) -> dict[str, Any]:
    data = copy.deepcopy(json.loads(SAMPLE.read_text()))
    crash_changes = changes.pop("crash", {})
    data.update(changes)
    data["crashes"][0].update(crash_changes)
    return data


def _flat(text: str) -> str:
    return " ".join(text.split())  # rich wraps long lines


def test_links_only_record_names_each_missing_field() -> None:
    bug = load_record(SAMPLE)
    with pytest.raises(BugSetupError) as info:
        kbench_inputs(bug)
    msg = str(info.value)
    assert not isinstance(info.value, UnsupportedBug)
    assert "crashes[0].kernel-config" in msg and "--config FILE" in msg
    assert "crashes[0].c-reproducer" in msg and "--repro FILE" in msg
    assert "/text?tag=KernelConfig&x=9abc" in msg  # shows the link it could not use
    assert "kernel_config" in msg and "c_reproducer" in msg  # or fields in a local copy


def test_inputs_given_as_text_or_through_with_inputs() -> None:
    bug = load_record(SAMPLE).with_inputs(kernel_config=CONFIG, c_reproducer=REPRO)
    inputs = kbench_inputs(bug)
    assert inputs.commit == "4" * 40  # the fix's parent, which has the bug
    assert inputs.config == CONFIG and inputs.reproducer == REPRO
    inline = record_from_json(_sample(crash={"kernel-config": CONFIG, "c-reproducer": REPRO}))
    assert kbench_inputs(inline) == inputs


def test_only_the_config_missing() -> None:
    bug = load_record(SAMPLE).with_inputs(c_reproducer=REPRO)
    with pytest.raises(BugSetupError, match="--config FILE") as info:
        kbench_inputs(bug)
    assert "reproducer" not in str(info.value)


def test_syz_only_reproducer_is_unsupported() -> None:
    bug = record_from_json(_sample(crash={"c-reproducer": "", "kernel-config": CONFIG}))
    with pytest.raises(UnsupportedBug, match="syz reproducer") as info:
        kbench_inputs(bug)
    assert "syz-prog2c" in str(info.value)
    # A C reproducer supplied by hand makes it runnable.
    assert kbench_inputs(bug.with_inputs(c_reproducer=REPRO)).reproducer == REPRO


def test_syz_program_in_place_of_c_is_unsupported() -> None:
    program = 'r0 = openat$foo(0xffffffffffffff9c, &(0x7f0000000000)="2f6465762f666f6f00", 0x2, 0x0)\nioctl$FOO_RELEASE(r0, 0x4004, 0x0)\n'
    bug = record_from_json(_sample(crash={"c-reproducer": program, "kernel-config": CONFIG}))
    with pytest.raises(UnsupportedBug, match="syz program, not C"):
        kbench_inputs(bug)


def test_other_architectures_are_unsupported() -> None:
    bug = record_from_json(_sample(crash={"architecture": "arm64"}))
    with pytest.raises(UnsupportedBug, match="arm64"):
        kbench_inputs(bug)


def test_no_commit() -> None:
    data = _sample(crash={"kernel-source-commit": ""})
    del data["parent_of_fix_commit"]
    with pytest.raises(BugSetupError, match="parent_of_fix_commit"):
        kbench_inputs(record_from_json(data).with_inputs(kernel_config=CONFIG, c_reproducer=REPRO))


async def test_scorer_without_linux_tree_names_the_option() -> None:
    bug = load_record(SAMPLE).with_inputs(kernel_config=CONFIG, c_reproducer=REPRO)
    with pytest.raises(BugSetupError, match="--linux-tree PATH") as info:
        await PatchScorer().score(bug, "")
    assert not isinstance(info.value, NotImplementedError)
    assert "KernelGym(linux_tree=PATH)" in str(info.value)


def _repo(tmp_path: Path) -> Path:
    repo = tmp_path / "linux"
    repo.mkdir()
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], cwd=repo, check=True)
    (repo / "Makefile").write_text("all:\n")
    subprocess.run([*git, "add", "."], cwd=repo, check=True)
    subprocess.run([*git, "commit", "-qm", "x"], cwd=repo, check=True)
    return repo


async def test_linux_tree_must_be_a_checkout_with_the_commit(tmp_path: Path) -> None:
    bug = load_record(SAMPLE).with_inputs(kernel_config=CONFIG, c_reproducer=REPRO)
    with pytest.raises(BugSetupError, match="not a git checkout"):
        await PatchScorer(linux_tree=tmp_path).score(bug, "")
    with pytest.raises(BugSetupError, match="4444444444444444444444444444444444444444 is not in"):
        await PatchScorer(linux_tree=_repo(tmp_path)).score(bug, "")


def test_env_reset_fails_before_any_build() -> None:
    env = KernelGym(bugs=[load_record(SAMPLE)], runs=1)
    with pytest.raises(BugSetupError, match="--linux-tree"):
        env.reset(load_record(SAMPLE).id)


def test_cli_errors_name_the_option(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bug_id = load_record(SAMPLE).id
    assert cli_main(["--records", str(SAMPLE), "reproduce", bug_id]) == 2
    out = _flat(capsys.readouterr().err)
    assert out.startswith("kernel-gym: error:") and "--linux-tree PATH" in out

    repo = _repo(tmp_path)
    assert cli_main(["--linux-tree", str(repo), "--records", str(SAMPLE), "reproduce", bug_id]) == 2
    out = _flat(capsys.readouterr().err)
    assert "--config FILE" in out and "--repro FILE" in out

    (tmp_path / "cfg").write_text(CONFIG)
    (tmp_path / "repro.c").write_text(REPRO)
    argv = ["--linux-tree", str(repo), "--records", str(SAMPLE)]
    argv += ["--config", str(tmp_path / "cfg"), "--repro", str(tmp_path / "repro.c")]
    assert cli_main([*argv, "try", bug_id, str(tmp_path / "cfg")]) == 2
    out = _flat(capsys.readouterr().err)
    assert "is not in --linux-tree" in out  # got past the inputs, stopped at the commit

    syz_only = tmp_path / "syz.json"
    syz_only.write_text(json.dumps(_sample(crash={"c-reproducer": ""})))
    assert cli_main(["--linux-tree", str(repo), "--records", str(syz_only), "bench"]) == 1
    out = _flat(capsys.readouterr().out)
    assert "unsupported" in out


async def test_bench_reports_unrunnable_bugs_as_rows(capsys: pytest.CaptureFixture[str]) -> None:
    bug = load_record(SAMPLE)
    rows = await bench([bug], PatchScorer())
    assert rows[0]["error"].count("--linux-tree") == 1
    assert rows[0]["unsupported"] is False and rows[0]["reproduced"] is False
    # progress on stderr as each step ends, naming the bug: a bench into a file is not silent
    err = capsys.readouterr().err
    assert f"[1/1] {bug.id}: building and booting" in err and f"{bug.id}: cannot run" in err


def test_the_bench_table_never_cuts_a_bug_id() -> None:
    from rich.console import Console

    from codegen_eval.kernelgym.cli import bench_table

    ids = ["t0-hung-task-with-a-long-name", "t0-list-corruption-long", "t0-null-deref-long"]
    rows = [{"bug": i, "error": "x", "unsupported": False} for i in ids]
    narrow = Console(width=60, record=True)
    narrow.print(bench_table(rows))
    text = narrow.export_text()
    assert all(i in text for i in ids)
