"""Which MPIrigen programs can be built and run here, which can judge an answer, and why the
rest cannot (`codegen-eval mpirigen-survey CHECKOUT`; the classes are runs.py's)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from .data import RigenProgram
from .runs import build_and_run
from .task import MpirigenScorer, make_sample


@dataclass(frozen=True, slots=True)
class SurveyRow:
    program: str
    built_and_ran: bool  # the reference (all the label's calls) built and ran at np=2
    verdict: str  # "judged", or why the program cannot build, run or judge
    detail: str


async def survey_one(
    program: RigenProgram, index: int, scorer: MpirigenScorer, backend: str | None
) -> SurveyRow:
    why, detail = await build_and_run(program, backend)
    if why:
        return SurveyRow(program.name, False, why, detail)
    sample = make_sample(program, index)
    if not sample.files["target"].strip():
        return SurveyRow(program.name, True, "only_setup_calls", "")
    ref = await scorer.reference_verdict(sample)
    return SurveyRow(program.name, True, ref[0] if ref else "judged", ref[1] if ref else "")


async def survey(
    programs: Sequence[RigenProgram],
    backend: str | None = None,
    jobs: int = 2,
    progress: Callable[[int, int], None] | None = None,
) -> list[SurveyRow]:
    scorer = MpirigenScorer(backend=backend)
    sem = asyncio.Semaphore(jobs)
    done = 0

    async def one(k: int, p: RigenProgram) -> SurveyRow:
        nonlocal done
        async with sem:
            row = await survey_one(p, k, scorer, backend)
        done += 1
        if progress:
            progress(done, len(programs))
        return row

    return list(await asyncio.gather(*(one(k, p) for k, p in enumerate(programs))))
