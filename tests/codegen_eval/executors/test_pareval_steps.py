"""ParEval's MPI launch configs as Slurm steps on the real local cluster (`--slurm-mpi-steps`):
the producer (trusted verdict) and upstream's driver (upstream verdict) run under
`srun --mpi=pmix` at each num_procs, with the same verdicts as mpirun in the sandbox and the
counts Slurm granted in the metrics."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from codegen_eval.executors.mpi_step import MPI_LAUNCHER_ENV, STEP_DIR_ENV
from codegen_eval.readers.pareval import load_pareval
from codegen_eval.runner import RunConfig, run_eval
from codegen_eval.solvers import FileSolver, ReferenceSolver

FIXTURE = Path(__file__).parents[1] / "pareval_fixture"
# Sums only its own rank's block and never reduces: right at num_procs=1, wrong from 2 on.
LOCAL_ONLY = (
    "  int rank, size;\n  MPI_Comm_rank(MPI_COMM_WORLD, &rank);\n"
    "  MPI_Comm_size(MPI_COMM_WORLD, &size);\n"
    "  size_t lo = x.size() * rank / size, hi = x.size() * (rank + 1) / size;\n"
    "  double s = 0;\n  for (size_t i = lo; i < hi; ++i) s += x[i] * x[i];\n  return s;\n}"
)
SAMPLE = "00_reduce_sum_of_squares/mpi"


async def _verdicts(tmp_path: Path, verdict: str) -> tuple[dict[str, str], dict[str, dict]]:
    task = load_pareval(FIXTURE, models=("mpi",), verdict=verdict, cores=4)
    cfg = RunConfig(progress=False, max_sandboxes=2)
    ref = await run_eval([task], ReferenceSolver(), tmp_path / "ref.jsonl", cfg)
    rows = tmp_path / "wrong.jsonl"
    rows.write_text(json.dumps({"sample_id": SAMPLE, "completion": LOCAL_ONLY}) + "\n")
    bad = await run_eval([task], FileSolver(rows), tmp_path / "bad.jsonl", cfg)
    got = {f"ref:{r['sample_id']}": r for r in ref.records}
    got.update({f"wrong:{r['sample_id']}": r for r in bad.records})
    summary = {k: f"{r['status']}/{r['failure_class']}" for k, r in got.items()}
    return summary, {k: r["metrics"] for k, r in got.items()}


@pytest.mark.slow
@pytest.mark.parametrize("verdict", ["trusted", "upstream"])
async def test_pareval_mpi_configs_as_srun_steps(
    slurm_cluster: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, verdict: str
) -> None:
    monkeypatch.setenv(STEP_DIR_ENV, str(tmp_path))
    runs = {}
    for launcher in ("sandbox", "srun"):
        monkeypatch.setenv(MPI_LAUNCHER_ENV, launcher)
        (tmp_path / launcher).mkdir()
        runs[launcher] = await _verdicts(tmp_path / launcher, verdict)
    (sandbox, _), (srun, metrics) = runs["sandbox"], runs["srun"]
    assert srun == sandbox
    assert srun[f"wrong:{SAMPLE}"] == "fail/wrong_answer"
    assert all(v == "pass/None" for k, v in srun.items() if k.startswith("ref:")), srun
    ref = metrics[f"ref:{SAMPLE}"]
    for np in (1, 2, 4):
        assert ref[f"ranks_granted@num_procs={np}"] == float(np)
        assert ref[f"cpus_granted@num_procs={np}"] >= 1.0
    assert not any(k.startswith("ranks_granted") for k in runs["sandbox"][1][f"ref:{SAMPLE}"])
    assert not [n for n in os.listdir(tmp_path) if n.startswith("step-")]  # all cleaned up
