"""Our verdicts as Inspect scores, and our metrics next to Inspect's accuracy.

The verdict is our suite's: `Scorer.score(sample, candidate)` compiles, runs or simulates the
candidate in our sandbox and decides pass/fail from what it observed, where no candidate code
runs (docs/threat-model.md). Inspect's process only carries the text of the answer to it and
the result back: the candidate is never executed, imported or evaluated here.

An Inspect `Score` is CORRECT when our status is "pass", else INCORRECT; a candidate that cannot
be judged here (our "skipped", e.g. CUDA without a GPU) or that a samples file lacks is
unscored (NaN), left out of accuracy and the reducers as our pass@k leaves it out of n. The
metadata keeps our status, failure class, value, metrics (speedup, runtimes, resources) and
explanation; `codegen_eval.inspect_logs` reads them back into run-log records.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from inspect_ai.scorer import (
    CORRECT,
    INCORRECT,
    Metric,
    SampleScore,
    Scorer,
    Target,
    accuracy,
    metric,
    scorer,
    stderr,
)
from inspect_ai.scorer import Score as InspectScore
from inspect_ai.solver import TaskState

from codegen_eval.cache import ScoreCache, code_hash
from codegen_eval.inspect_tasks.solvers import CANDIDATE_KEY, candidate_from_store
from codegen_eval.runner import MAX_EXPLANATION, guarded_score
from codegen_eval.types import Sample, Score, Task

SCORER_NAME = "codegen_verdict"


def to_inspect_score(score: Score, code: str, *, cached: bool = False) -> InspectScore:
    """Our Score as Inspect's: C/I from our status, everything else in the metadata."""
    metadata: dict[str, Any] = {
        "status": score.status,
        "failure_class": score.failure_class,
        "value": score.value,
        "metrics": dict(score.metrics),
        "cached": cached,
    }
    explanation = score.explanation[:MAX_EXPLANATION]
    if score.status == "skipped":
        return InspectScore.unscored(
            reason=score.failure_class or "skipped",
            answer=code,
            explanation=explanation,
            metadata=metadata,
        )
    return InspectScore(
        value=CORRECT if score.status == "pass" else INCORRECT,
        answer=code,
        explanation=explanation,
        metadata=metadata,
    )


def _records(scores: Sequence[SampleScore]) -> list[dict[str, Any]]:
    """Per-epoch scores as the run-log score records our report functions read."""
    out = []
    for item in scores:
        md = item.score.metadata or {}
        if "status" not in md:
            continue  # not ours (another scorer's score in the same task)
        out.append(
            {
                "sample_id": str(item.sample_id),
                "status": md["status"],
                "failure_class": md.get("failure_class"),
                "metrics": md.get("metrics") or {},
            }
        )
    return out


@metric(scores="unreduced")
def codegen_metrics(ks: Sequence[int] = (1,)) -> Metric:
    """Our table's figures over every epoch: pass@k (unbiased, skipped candidates not in n),
    speedup@k and efficiency@k (expected best of k, a failure counting 0) where the suite
    reports speedups, and the count of infra errors (harness failures, not results).
    Unscored epochs (our skipped) never reach a metric: Inspect leaves NaN scores out."""

    def compute(scores: list[SampleScore]) -> dict[str, float]:
        from codegen_eval.report import summarize_group

        records = _records(scores)
        group = summarize_group("inspect", records, list(ks))
        out: dict[str, float] = {}
        for k in ks:
            for name, table in (
                ("pass", group.pass_at),
                ("speedup", group.speedup_at),
                ("efficiency", group.efficiency_at),
            ):
                value = table.get(k)
                if value is not None:
                    out[f"{name}@{k}"] = float(value)
        out["infra_errors"] = float(group.failures.get("infra_error", 0))
        return out

    return compute


def verdict_scorer(
    suite: Task,
    samples: dict[str, Sample],
    *,
    ks: Sequence[int] = (1,),
    max_sandboxes: int = 1,
    timeout_s: float = 1800.0,
) -> Scorer:
    """The Inspect scorer of one of our suites (see the module docstring)."""

    @scorer(name=SCORER_NAME, metrics=[accuracy(), stderr(), codegen_metrics(tuple(ks))])
    def make() -> Scorer:
        cache = ScoreCache()
        # compilers and simulators are CPU bound: at most max_sandboxes at once, as
        # `codegen-eval run --max-sandboxes`
        gate = asyncio.Semaphore(max(1, max_sandboxes))

        async def score(state: TaskState, target: Target) -> InspectScore:
            sample = samples[str(state.sample_id)]
            cand = candidate_from_store(state, sample)
            if cand is None and state.store.get(CANDIDATE_KEY) is not None:
                # a samples file with fewer candidates than epochs: not a result (the runner
                # leaves such indices out too)
                return InspectScore.unscored(
                    reason="no_candidate",
                    explanation="the samples file has no candidate for this epoch",
                    metadata={"status": "missing"},
                )
            if cand is None:
                # the solver never finished: an Inspect limit (tokens, time, messages) ended
                # the sample inside the model call. No answer within the limit is a failure.
                return to_inspect_score(
                    Score(
                        0.0,
                        "fail",
                        "no_code",
                        explanation="no candidate: the sample ended before the solver gave one "
                        "(an Inspect limit)",
                    ),
                    "",
                )
            if "generation_error" in cand.metadata:
                return to_inspect_score(
                    Score(
                        0.0,
                        "error",
                        "infra_error",
                        explanation=f"generation failed: {cand.metadata['generation_error']}",
                    ),
                    cand.code,
                )
            key = code_hash(suite.name, sample.id, cand.code)

            async def judge() -> Score:
                async with gate:
                    return await guarded_score(suite.scorer, sample, cand, timeout_s)

            # identical candidates are scored once, as in `codegen-eval run`
            verdict, cached = await cache.get_or_score(key, judge)
            result = to_inspect_score(verdict, cand.code, cached=cached)
            assert result.metadata is not None
            result.metadata["code_hash"] = key
            return result

        return score

    return make()


__all__ = [
    "CANDIDATE_KEY",
    "SCORER_NAME",
    "codegen_metrics",
    "to_inspect_score",
    "verdict_scorer",
]
