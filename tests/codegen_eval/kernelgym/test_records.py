"""Bug records: kBench JSON loads unchanged; bundled bugs are complete."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from codegen_eval.kernelgym.builders import touched_files
from codegen_eval.kernelgym.records import (
    BugRecord,
    bundled_bug,
    bundled_bugs,
    load_record,
    load_records,
    record_from_json,
)

SAMPLE = Path(__file__).parent / "data" / "kbench_sample.json"


def test_kbench_record_loads_unchanged() -> None:
    bug = load_record(SAMPLE)
    raw = json.loads(SAMPLE.read_text())
    assert bug.id == raw["id"]
    assert bug.title == "KASAN: use-after-free Read in foo_release"
    assert bug.kind == "kbench" and bug.tier is None
    assert bug.parent_commit == "4444444444444444444444444444444444444444"
    assert bug.kernel_commit == bug.parent_commit  # the fix's parent is what gets repaired
    assert bug.fix_commits[0]["hash"] == "1" * 40
    assert bug.crash["kernel-source-commit"] == "2" * 40
    assert bug.modified_files == ["drivers/foo/foo.c"]
    assert touched_files(bug.developer_patch) == ["drivers/foo/foo.c"]
    assert bug.raw_crash_report and "foo_release" in bug.raw_crash_report
    # A syzbot link is not C source: no reproducer to run without fetching it.
    assert bug.c_reproducer is None
    assert bug.kernel_config is None
    # Round trip: every field, unknown ones included, survives.
    assert bug.to_json() == raw


def test_load_records_from_directory_and_jsonl(tmp_path: Path) -> None:
    (tmp_path / "a.json").write_text(SAMPLE.read_text())
    assert [b.id for b in load_records(tmp_path)] == [load_record(SAMPLE).id]
    jsonl = tmp_path / "bugs.jsonl"
    jsonl.write_text(json.dumps(json.loads(SAMPLE.read_text())) + "\n")
    assert load_records(jsonl)[0].title == load_record(SAMPLE).title


def test_bundled_benchmark_size() -> None:
    bugs = bundled_bugs()
    assert len(bugs) >= 12
    assert len(bundled_bugs(tier=0)) >= 8
    assert len(bundled_bugs(tier=1)) >= 4
    assert len({b.id for b in bugs}) == len(bugs)
    assert len({b.expected_title for b in bugs}) == len(bugs)


@pytest.mark.parametrize("bug", bundled_bugs(), ids=lambda b: b.id)
def test_bundled_bug_is_complete(bug) -> None:  # type: ignore[no-untyped-def]
    assert bug.c_reproducer and "int main(" in bug.c_reproducer
    assert bug.developer_patch.startswith("diff --git ")
    assert bug.expected_title == bug.crash["title"]
    assert touched_files(bug.developer_patch) == bug.modified_files
    if bug.kind == "module":
        assert bug.source_dir is not None
        assert (bug.source_dir / "Makefile").read_text().startswith("obj-m")
        for rel in bug.modified_files:
            assert (bug.source_dir / rel).is_file()
    else:
        assert bug.kind == "tree"
        assert bug.base_dir is not None
        inject = (bug.base_dir / bug.kgym["inject"]).read_text()
        assert touched_files(inject) == bug.modified_files


def test_unknown_bundled_bug() -> None:
    with pytest.raises(KeyError, match="bundled bugs"):
        bundled_bug("no-such-bug")


# Record-driven titles (issue 29 item 2): a record's own report, raw or as syzbot publishes it
# (symbolized: file:line after every frame, a headline per inlined function), is read by the
# same reader as the gym's console, so the two titles compare like with like.
DATA = Path(__file__).parent / "data"
CONSOLE = (Path(__file__).parent / "consoles" / "t1-use-after-free.txt").read_text()
SYMBOLIZED = (DATA / "kbench_symbolized_report.txt").read_text()
GYM_TITLE = "KASAN: use-after-free Read in kgym_uaf_write"


def _record(title: str, report: str | None) -> BugRecord:
    raw = {"id": "uaf", "title": title, "crashes": [{"title": title}]}
    if report is not None:
        raw["raw_crash_report"] = report
    return record_from_json(raw)


def _judge(bug: BugRecord, console: str = CONSOLE) -> bool:
    """Is the crash of a gym run whose console is `console` the record's bug?"""
    from codegen_eval.kernelgym.crash import parse_console
    from codegen_eval.kernelgym.runner import ReproResult
    from codegen_eval.kernelgym.scoring import judge
    from sandboxes.qemu import VMResult, VMStatus

    vm = VMResult(VMStatus.STOPPED, console, 0, 1.0, False, "tcg")
    run = ReproResult(vm=vm, crashes=parse_console(console), booted=True)
    return judge(run, bug.expected_title, 2, also=bug.expected_titles).matches_expected


@pytest.mark.parametrize("form", ["symbolized", "raw"])
def test_a_records_own_report_titles_it_raw_or_symbolized(form: str) -> None:
    report = SYMBOLIZED if form == "symbolized" else CONSOLE
    # The stored title is older wording (syzbot renames functions, kernels rename them).
    bug = _record("KASAN: use-after-free Read in kgym_old_name", report)
    assert bug.report_title == GYM_TITLE
    assert bug.expected_titles == ["KASAN: use-after-free Read in kgym_old_name", GYM_TITLE]
    assert _judge(bug)
    # Without its report the stored title alone decides: another function, another bug.
    assert not _judge(_record("KASAN: use-after-free Read in kgym_old_name", None))


def test_the_symbolized_report_keeps_its_positions_out_of_the_title() -> None:
    assert "[inline]" in SYMBOLIZED and "kgym_uaf.c:43" in SYMBOLIZED
    bug = _record("", SYMBOLIZED)
    assert bug.expected_title == GYM_TITLE  # no stored title: the report's
    assert ".c:" not in bug.expected_title and "LINE" not in bug.expected_title


def test_a_cut_report_adds_no_title() -> None:
    cut = "\n".join(SYMBOLIZED.splitlines()[:3]) + "\n"  # the headlines, no stack
    bug = _record("KASAN: use-after-free Read in kgym_old_name", cut)
    assert bug.report_title is None
    assert bug.expected_titles == ["KASAN: use-after-free Read in kgym_old_name"]
    # A link, as kBench's own records hold, is no report.
    link = _record("x", "/text?tag=CrashReport&x=def0")
    assert link.own_report is None and link.expected_titles == ["x"]


SYMBOLIZED_KINDS = Path(__file__).parent / "reports" / "symbolized"  # the crash reader's fixtures


@pytest.mark.parametrize(
    "name", sorted(p.name.removesuffix(".raw.txt") for p in SYMBOLIZED_KINDS.glob("*.raw.txt"))
)
def test_every_crash_kind_matches_its_record_through_a_symbolized_report(name: str) -> None:
    """A record whose stored title is stale, carrying syzbot's symbolized report, is matched
    by the same crash printed raw on a console (the gym's run)."""
    console = (SYMBOLIZED_KINDS / f"{name}.raw.txt").read_text()
    stale = "WARNING in some_function_renamed_since"
    bug = _record(stale, (SYMBOLIZED_KINDS / f"{name}.txt").read_text())
    assert bug.report_title is not None, name
    assert _judge(bug, console), name
    assert not _judge(_record(stale, None), console)
