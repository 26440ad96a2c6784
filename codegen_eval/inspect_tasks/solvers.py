"""Our solvers as one Inspect solver: where each epoch's candidate comes from.

  generate   codegen_eval's GenerateSolver (the same request as `codegen-eval run`: system
             prompt, seed + index, extraction), its gen answered by Inspect's model
  repair     the repair agent (agents.repair), unchanged: its gens go to Inspect's model too
  reference  the suite's reference solution (a self-check of every harness)
  file       candidates from a JSONL file in the `codegen-eval --samples` format, or a run log

Epoch e of a sample is our candidate index e - 1, so `--epochs N` is `-n N` and a samples file
with indices 0..N-1 fills N epochs. The candidate (code, reply, metadata) goes to the sample's
store under CANDIDATE_KEY, where the scorer reads it; the reply also becomes the sample's
output, so `inspect view` shows what the model said.
"""

from __future__ import annotations

import importlib
from typing import Any

from inspect_ai.model import ChatMessageAssistant, ModelOutput
from inspect_ai.solver import Generate, Solver, TaskState, solver

from codegen_eval.types import Candidate, Sample

CANDIDATE_KEY = "codegen_eval:candidate"
SOLVER_NAME = "codegen_candidate"
# codegen_eval never imports agents at module level (the CLI's NAMED_FACTORIES rule)
REPAIR_FACTORY = "agents.repair:with_repair"


def store_candidate(state: TaskState, cand: Candidate) -> None:
    state.store.set(
        CANDIDATE_KEY,
        {
            "index": cand.index,
            "code": cand.code,
            "raw": cand.raw,
            "metadata": {k: v for k, v in cand.metadata.items() if k != "raw"},
        },
    )


def candidate_from_store(state: TaskState, sample: Sample) -> Candidate | None:
    """The epoch's candidate; None when the solver had none (a short samples file stores a
    `missing` marker; nothing is stored when a limit ended the sample first)."""
    rec = state.store.get(CANDIDATE_KEY)
    if not isinstance(rec, dict) or (rec.get("metadata") or {}).get("missing"):
        return None
    return Candidate(
        sample.id,
        int(rec.get("index", state.epoch - 1)),
        str(rec.get("code", "")),
        str(rec.get("raw", "")),
        dict(rec.get("metadata") or {}),
    )


def repair_solver(suite: Any, **options: Any) -> Any:
    """The repair agent's RepairSolver for `suite` (imported by name)."""
    module, _, attr = REPAIR_FACTORY.partition(":")
    factory = getattr(importlib.import_module(module), attr)
    return factory(suite, **options).solver


def candidate_solver(ours: Any, samples: dict[str, Sample], *, uses_model: bool) -> Solver:
    """An Inspect solver around one of our solvers (anything with `solve_one(sample, i)`).
    `uses_model`: its gens go to Inspect's model (appl's inspect provider)."""

    @solver(name=SOLVER_NAME)
    def make() -> Solver:
        async def solve(state: TaskState, generate: Generate) -> TaskState:
            sample = samples[str(state.sample_id)]
            index = state.epoch - 1
            if uses_model:
                from appl.models.inspect_provider import use_inspect_models

                with use_inspect_models():
                    cand = await _solve(ours, sample, index)
            else:
                cand = await _solve(ours, sample, index)
            store_candidate(state, cand)
            reply = cand.raw or cand.code
            if reply:
                state.messages.append(ChatMessageAssistant(content=reply))
                model = str(cand.metadata.get("model") or state.model)
                state.output = ModelOutput.from_content(model=model, content=reply)
            return state

        return solve

    return make()


async def _solve(ours: Any, sample: Sample, index: int) -> Candidate:
    try:
        return await ours.solve_one(sample, index)
    except Exception as exc:
        from inspect_ai.util import LimitExceededError

        if isinstance(exc, LimitExceededError):
            raise  # Inspect's token/time limits end the sample its own way
        if _model_error(exc):
            # as the runner records a failed generation: an infra_error, not a failed answer
            return Candidate(sample.id, index, "", metadata={"generation_error": str(exc)})
        raise


def _model_error(exc: BaseException) -> bool:
    from appl.errors import ModelError

    return isinstance(exc, ModelError)
