"""MPIrigen's own checkout (Scientific-Computing-Lab/MPI-rigen), behind $MPIRIGEN_ROOT:
`mpirigen-table` on upstream's released predictions equals each of its six released tables
to 3 decimals, and the reader reads both sets and judges one of the programs as upstream
ships it. CI has no network and no checkout: there these are skipped with the reason (as
test_pareval_real.py is).

    MPIRIGEN_ROOT=/path/to/MPI-rigen pytest tests/codegen_eval/readers/test_mpirigen_real.py
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest

from codegen_eval.readers.mpirigen import load_programs, mpirigen_task, read_predictions
from codegen_eval.types import Candidate

ROOT = Path(__file__).resolve().parents[3]
CHECKOUT = Path(os.environ.get("MPIRIGEN_ROOT", "/nonexistent"))
RESULTS = CHECKOUT / "MonoCoder" / "final_results" / "MPI-rigen"
pytestmark = pytest.mark.skipif(
    not (RESULTS / "bpe_1000_examples.jsonl").is_file(),
    reason="set MPIRIGEN_ROOT to a Scientific-Computing-Lab/MPI-rigen checkout to run these",
)


@pytest.mark.parametrize("tolerance", [0, 1, 2])
@pytest.mark.parametrize("mcc", [False, True])
def test_table_equals_upstreams(tmp_path: Path, tolerance: int, mcc: bool) -> None:
    name = f"scores_var_{tolerance}{'_MCC' if mcc else ''}.csv"
    out = tmp_path / name
    cp = subprocess.run(
        [sys.executable, "-m", "codegen_eval.cli", "mpirigen-table",
         "--predictions", str(RESULTS / "bpe_1000_examples.jsonl"), "--tolerance",
         str(tolerance), *(["--mcc"] if mcc else []), "--csv", str(out),
         "--compare", str(RESULTS / name)],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert cp.returncode == 0, cp.stdout + cp.stderr
    assert "equal to" in cp.stdout and "(42 rows)" in cp.stdout


def test_both_sets_read_and_the_predictions_answer_the_test_set() -> None:
    test_set = load_programs(CHECKOUT, "test")
    gpt_set = load_programs(CHECKOUT, "gpt")
    assert (len(test_set), len(gpt_set)) == (1323, 1000)
    assert test_set[0].name == "rookiehpc_rookiehpc.github.io_99"
    assert test_set[0].prompt.startswith("1: int main(int argc, char *argv[])\n2: {\n")
    assert test_set[0].prompt.endswith(" \n parallel ")
    # the released predictions are the test set's first 1,000 rows, in order (14 labels
    # differ at their start: the model's context cut them)
    labels = [label for label, _ in read_predictions(RESULTS / "bpe_1000_examples.jsonl")]
    same = sum(
        a.replace("<|endoftext|>", "").strip() == p.label.strip()
        for a, p in zip(labels, test_set, strict=False)
    )
    assert same == 986
    assert sum(bool(p.label) for p in gpt_set) >= 990


@pytest.mark.slow
def test_an_upstream_program_judges_its_label_and_a_wrong_answer() -> None:
    task = mpirigen_task(str(CHECKOUT), limit=7)
    sample = task.dataset[6]  # VinceDeslo_OpenMPI-study_0: Bcast from the root
    assert sample.metadata["program"] == "VinceDeslo_OpenMPI-study_0"
    ok = asyncio.run(task.scorer.score(sample, Candidate(sample.id, 0, sample.target, "")))
    assert ok.status == "pass", ok.explanation
    # count 0: the receivers print their own (never set) buffer instead of 13
    wrong = sample.target.replace("MPI_Bcast(&buf, count,", "MPI_Bcast(&buf, 0,")
    assert wrong != sample.target
    bad = asyncio.run(task.scorer.score(sample, Candidate(sample.id, 1, wrong, "")))
    assert bad.status == "fail", bad.explanation
