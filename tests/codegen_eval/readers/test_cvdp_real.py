"""Against a real NVlabs/cvdp_benchmark checkout, when you have one (CI has none):

    CVDP_ROOT=/path/to/cvdp_benchmark .venv/bin/python -m pytest -s \\
        tests/codegen_eval/readers/test_cvdp_real.py

Every `example_dataset/*_with_solutions.jsonl` is read: each non-agentic code-generation
reference passes its own harness here or is excluded with a measured reason that names a
commercial simulator; broken variants of every passing reference fail; a broken design
that forges cocotb's results file passes upstream's verdict (pytest's exit status) and
fails ours. The counts are printed (run with -s).
"""

from __future__ import annotations

import os
import re
from collections import Counter
from pathlib import Path

import pytest

from codegen_eval.readers.cvdp import CvdpScorer, cvdp, read_cvdp
from codegen_eval.readers.cvdp.harness import HarnessRun
from codegen_eval.types import Candidate, Sample

ROOT = os.environ.get("CVDP_ROOT")
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not ROOT, reason="CVDP_ROOT does not point at a cvdp_benchmark checkout"),
]


def _files(solutions: bool = True) -> list[Path]:
    d = Path(ROOT or ".") / "example_dataset"
    files = sorted(d.glob("*.jsonl"))
    return [f for f in files if f.name.endswith("_with_solutions.jsonl") == solutions]


@pytest.fixture(scope="module")
def scorer() -> CvdpScorer:
    return CvdpScorer()


@pytest.fixture(scope="module")
def passing(scorer: CvdpScorer) -> list[Sample]:
    """The references that pass here; every other code-generation problem is excluded
    for a commercial simulator (the counts are printed)."""
    out, why, records, not_read = [], {}, 0, {}
    for f in _files():
        task = cvdp(f)
        records += task.reader_facts.records or 0
        not_read.update(task.reader_facts.not_read)
        why.update(task.excluded)
        out.extend(task.dataset)
    print(f"\ncvdp examples: {records} records, {len(not_read)} not code generation, "
          f"{len(out)} reference(s) pass here, {len(why)} excluded")  # fmt: skip
    for pid, reason in sorted({**not_read, **why}.items()):
        print(f"  {pid}: {reason}")
    assert out, "no reference passes here"
    assert all("commercial simulator" in r for r in why.values()), why
    return out


def _mutants(code: str) -> dict[str, str]:
    """Broken variants: the module emptied, and the first of each operator swapped (in the
    code, comments removed first)."""
    out = {}
    code = re.sub(r"//[^\n]*|/\*.*?\*/", "", code, flags=re.DOTALL)
    head = re.search(r"\bmodule\b.*?\)\s*;", code, re.DOTALL)
    assert head, "no module header"
    out["empty body"] = head.group(0) + "\nendmodule\n"
    for a, b in [("^", "&"), ("+", "-"), ("<=", "<= ~"), ("[0]", "[1]")]:
        body = code[head.end() :]
        if a in body:
            out[f"{a} -> {b}"] = code[: head.end()] + body.replace(a, b, 1)
    return out


async def test_references_pass(scorer: CvdpScorer, passing: list[Sample]) -> None:
    for s in passing:
        score = await scorer.score(s, Candidate(s.id, 0, s.target))
        assert score.status == "pass", f"{s.id}: {score.explanation}"


async def test_broken_variants_fail(scorer: CvdpScorer, passing: list[Sample]) -> None:
    """Every variant gets upstream's verdict (pytest's exit status on the same run) from
    ours; the emptied module fails. A variant both pass is one the harness's own tests do
    not catch (printed), not a hole of the reader."""
    results: Counter[str] = Counter()
    for s in passing:
        for name, code in _mutants(s.target).items():
            score = await scorer.score(s, Candidate(s.id, 0, code))
            assert score.status == score.metadata["upstream_verdict"], f"{s.id} ({name})"
            if name == "empty body":
                assert score.status == "fail", f"{s.id}: {score.explanation}"
            results[f"{score.status}: {score.failure_class or name}"] += 1
    print(f"\nbroken variants: {dict(results)}")


async def test_forged_results_pass_upstream_fail_ours(
    scorer: CvdpScorer, passing: list[Sample]
) -> None:
    for s in passing:
        broken = _mutants(s.target)["empty body"].replace("endmodule", "")
        forge = broken + (
            '  integer cge_fd;\n  final begin\n    cge_fd = $fopen("test_runner.result.xml", "w");\n'
            '    $fwrite(cge_fd, "<testsuites><testsuite name=\\"a\\"><testcase name=\\"t\\" '
            'classname=\\"c\\"/></testsuite></testsuites>");\n    $fclose(cge_fd);\n  end\n'
            "endmodule\n"
        )
        run = await scorer.run(s, {s.metadata["outputs"][0]: forge})
        assert isinstance(run, HarnessRun)
        assert run.exec.exit_code == 0, f"{s.id}: upstream's verdict did not pass the forge"
        score = await scorer.score(s, Candidate(s.id, 0, forge))
        assert score.failure_class == "forbidden_construct:$fopen", score.explanation


async def test_files_without_solutions_score_the_solutions(scorer: CvdpScorer) -> None:
    """The same problems as published without solutions: the solution, given as the
    answer, passes there too."""
    solutions = {s.id: s.target for f in _files() for s in read_cvdp(f).samples}
    scored = 0
    for f in _files(solutions=False):
        task = cvdp(f)
        for s in task.dataset:
            score = await task.scorer.score(s, Candidate(s.id, 0, solutions[s.id]))
            assert score.status == "pass", f"{s.id}: {score.explanation}"
            scored += 1
    assert scored >= 1
