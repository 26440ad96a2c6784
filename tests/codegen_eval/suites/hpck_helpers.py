"""Scoring one hpc-kernels candidate in tests (shared by the failure and adversarial tests)."""

from __future__ import annotations

from codegen_eval.suites.hpc_kernels import hpc_kernels_task
from codegen_eval.types import Candidate, Sample, Score


def sample_of(sample_id: str) -> Sample:
    problem, variant = sample_id.split("/")
    (s,) = hpc_kernels_task(problems=[problem], variants=[variant]).dataset
    return s


async def score(sample_id: str, code: str, run_timeout_s: float) -> Score:
    """Two repetitions per configuration: enough to see a memoised or lazy answer."""
    task = hpc_kernels_task(run_timeout_s=run_timeout_s, reps=2)
    return await task.scorer.score(sample_of(sample_id), Candidate(sample_id, 0, code))


def failure_kind(sc: Score) -> str:
    """The failure class without its detail (``timeout:wall`` -> ``timeout``)."""
    return (sc.failure_class or "").split(":")[0]
