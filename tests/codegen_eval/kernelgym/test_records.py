"""Bug records: kBench JSON loads unchanged; bundled bugs are complete."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from codegen_eval.kernelgym.builders import touched_files
from codegen_eval.kernelgym.records import bundled_bug, bundled_bugs, load_record, load_records

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
