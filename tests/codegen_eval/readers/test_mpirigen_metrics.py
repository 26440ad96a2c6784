"""MPIrigen's metrics and table (codegen_eval/readers/mpirigen/metrics.py) on a fixture of our
own: four predictions whose tables were computed by hand.

The working (gt = label groups, pred = answer groups; a location is LINE.COL):
1. gt 2.1 Init, 3.1 Comm_rank; pred 2.1 Init, 4.1 Comm_rank(.., &r). T=0: location 1/2,
   function 1/1, args 1. T=1: 3.1 is within 1 of 4.1 (and of 2.1): location 1, function 2/2,
   args (1 + 1/2)/2.
2. gt 5.1 Send, 5.2 Barrier, 9.1 Finalize; pred (after an end-of-text marker) 5.1 Send, 5.2
   Bcast. location 2/3, function 1/2 (5.2 is reached, the name differs), args 1. MCC: only
   Send and Finalize count as found, location still divides by 3: 1/3, function 1/1.
3. no gt groups: left out.
4. gt 7.1 Reduce; pred 7.1 Allreduce: location 1, function 0, args none.
Rows: limit L = programs with at most L gt groups, column means over programs with a value.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from codegen_eval.readers.mpirigen.metrics import (
    compare_tables,
    near_locations,
    parse_groups,
    read_predictions,
    read_table,
    score_program,
    table,
)

FIXTURE = Path(__file__).parent / "mpirigen_fixture"
ROOT = Path(__file__).resolve().parents[3]


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "codegen_eval.cli", *args],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


@pytest.mark.parametrize(("tolerance", "mcc", "name"), [
    (0, False, "scores_var_0.csv"), (0, True, "scores_var_0_MCC.csv"),
    (1, False, "scores_var_1.csv"),
])  # fmt: skip
def test_table_equals_the_hand_computed_one(tolerance: int, mcc: bool, name: str) -> None:
    ours = table(read_predictions(FIXTURE / "predictions.jsonl"), tolerance, mcc)
    theirs = read_table(FIXTURE / name)
    assert compare_tables(ours, theirs) == []
    for a, b in zip(ours, theirs, strict=True):
        assert a[0] == b[0]
        for x, y in zip(a[1:], b[1:], strict=True):
            assert (x is None and y is None) or x == pytest.approx(y, abs=1e-12)


def test_cli_writes_the_table_and_compares(tmp_path: Path) -> None:
    out = tmp_path / "t1.csv"
    cp = cli("mpirigen-table", "--predictions", str(FIXTURE / "predictions.jsonl"),
             "--tolerance", "1", "--csv", str(out), "--compare", str(FIXTURE / "scores_var_1.csv"))  # fmt: skip
    assert cp.returncode == 0, cp.stderr
    assert "equal to" in cp.stdout
    assert out.read_text().splitlines()[1] == "1,1.0,0.0,"
    # A table that differs in one cell (the tolerance-0 one) is reported and exits 1.
    cp = cli("mpirigen-table", "--predictions", str(FIXTURE / "predictions.jsonl"),
             "--tolerance", "1", "--csv", str(out), "--compare", str(FIXTURE / "scores_var_0.csv"))  # fmt: skip
    assert cp.returncode == 1
    assert "limit 2 Locations: 1.000 here, 0.750 there" in cp.stdout


def test_bad_inputs_are_one_line_errors(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"pred": "x"}\n')
    cp = cli("mpirigen-table", "--predictions", str(bad), "--tolerance", "0", "--csv",
             str(tmp_path / "o.csv"))  # fmt: skip
    assert cp.returncode == 2 and "Traceback" not in cp.stderr
    assert cp.stderr.strip() == (
        f"codegen-eval: error: --predictions: {bad}:1: wants string fields 'pred' and 'label'"
    )
    cp = cli("mpirigen-table", "--predictions", str(bad), "--tolerance", "-1", "--csv", "o.csv")
    assert cp.returncode == 2 and "--tolerance must be >= 0" in cp.stderr
    assert len(cp.stderr.strip().splitlines()) == 1


def _numpy_near(loc: float, var: int) -> set[float]:
    """Upstream's tolerance arithmetic, in numpy as its script does it."""
    whole = np.arange(loc - var, loc + var + 1)
    tenths = np.arange(loc - var / 10, loc + 0.1 + var / 10, 0.1)
    return {round(x, 2) for x in np.concatenate((whole, tenths))}


def test_tolerance_is_numpys_arithmetic() -> None:
    # Float steps of 0.1 include or miss their end point depending on the location: the
    # windows must be exactly upstream's, quirks included, for the tables to match.
    for line in range(1, 200):
        for col in range(0, 14):
            loc = round(float(f"{line}.{col}"), 2)
            for var in (1, 2):
                assert set(near_locations(loc, var)) == _numpy_near(loc, var), (loc, var)


def test_locations_collide_as_upstream_reads_them() -> None:
    # "12 10" reads as 12.1, the location of "12 1": the later group replaces the earlier.
    groups = parse_groups("(12 1, MPI_Send(a, 1);) (12 10, MPI_Recv(b, 2);)", 0)
    assert list(groups) == [12.1]
    assert groups[12.1].name == "MPI_Recv" and groups[12.1].args == ("b", " 2")


def test_arguments_compare_as_written() -> None:
    label = "(3 1, MPI_Bcast(&n, 1, MPI_INT, 0, MPI_COMM_WORLD);)"
    spaced = "(3 1, MPI_Bcast(&n,1, MPI_INT, 0, MPI_COMM_WORLD);)"
    assert score_program(label, label, 0).args == 1.0
    assert score_program(label, spaced, 0).args == pytest.approx(4 / 5)
    # A wrong function at the right place: located, not matched, no argument score.
    other = "(3 1, MPI_Reduce(&n, 1, MPI_INT, 0, MPI_COMM_WORLD);)"
    s = score_program(label, other, 0)
    assert (s.location, s.function, s.args) == (1.0, 0.0, None)
