"""`codegen-eval run --mpirigen CHECKOUT`: MPIrigen's programs as a task.

Each sample's prompt is upstream's (the numbered code, then " \\n parallel "), its target the
label's groups. The scorer reports upstream's metrics for every answer (metrics
`location_t{0,1,2}`, `function_t*`, `args_t*`, and `*_mcc` on the common core; an absent key
is upstream's empty cell) and decides the verdict by running the program where it can be
built and run (runs.py): elsewhere the sample is `skipped` with the measured reason, never
passed on the metrics alone.
"""

from __future__ import annotations

from collections.abc import Sequence

from codegen_eval.suites.mpi_completion import MpiCompletionScorer
from codegen_eval.types import Candidate, FailureClass, Sample, Score, ScoreStatus, Task

from .data import RigenProgram, load_programs
from .metrics import score_program
from .runs import RunSetup, answer_has_groups, candidate_answer, run_setup, static_blocker

TOLERANCES = (0, 1, 2)


def upstream_metrics(label: str, answer: str) -> dict[str, float]:
    out: dict[str, float] = {}
    for t in TOLERANCES:
        for mcc in (False, True):
            s = score_program(label, answer, t, mcc)
            tail = f"t{t}{'_mcc' if mcc else ''}"
            for key, value in (("location", s.location), ("function", s.function),
                               ("args", s.args)):  # fmt: skip
                if value is not None:
                    out[f"{key}_{tail}"] = round(value, 6)
    return out


def make_sample(program: RigenProgram, index: int) -> Sample:
    setup = run_setup(program)
    return Sample(
        id=f"mpirigen-{program.dataset}/{index:04d}-{program.name}",
        input=program.prompt,
        target=program.label,
        metadata={
            "language": "mpi",
            "program": program.name,
            "set": program.dataset,
            "static_blocker": static_blocker(program),
            "kept_after": [list(x) for x in setup.kept_after],
        },
        files={"program.c": setup.stripped, "target": setup.target},
    )


class MpirigenScorer:
    """Upstream's metrics, and the mpi-completion scorer's run verdict where it applies."""

    def __init__(self, backend: str | None = None, nps: tuple[int, ...] = (2, 3, 4)) -> None:
        self.runner = MpiCompletionScorer(backend=backend, nps=nps)
        self._reference: dict[str, tuple[str, str] | None] = {}

    async def score(self, sample: Sample, candidate: Candidate) -> Score:
        # MonoCoder's answer is plain text after "parallel": the groups may be in the
        # extracted code or only in the raw reply.
        answer = candidate.code if answer_has_groups(candidate.code) else candidate.raw
        metrics = upstream_metrics(sample.target, answer)
        if why := sample.metadata.get("static_blocker"):
            return _skipped(why, "the reference cannot be rebuilt from the label", metrics)
        if not sample.files["target"].strip():
            return _skipped("only_setup_calls", "the label has no call but the set-up "
                            "calls, which the program keeps", metrics)  # fmt: skip
        setup = RunSetup(sample.files["program.c"], sample.files["target"],
                         tuple((a, b) for a, b in sample.metadata["kept_after"]))  # fmt: skip
        # The label itself, judged first (once per sample): a program whose own reference
        # does not pass here (refused by the screen, fails to build or run, prints in a
        # different order each run) cannot judge an answer.
        ref = await self._reference_verdict(sample)
        if ref is not None:
            return _skipped(ref[0], ref[1], metrics)
        verdict = await self._judge(sample, candidate_answer(setup, answer), candidate)
        if isinstance(verdict, tuple):
            return _skipped(*verdict, metrics)
        verdict.metrics.update(metrics)
        return verdict

    async def _judge(
        self, sample: Sample, lines: str, candidate: Candidate
    ) -> Score | tuple[str, str]:
        inner = Sample(sample.id, sample.input, sample.files["target"], sample.metadata,
                       {"program.c": sample.files["program.c"]})  # fmt: skip
        try:
            return await self.runner.score(
                inner, Candidate(candidate.sample_id, candidate.index, lines, lines)
            )
        except RuntimeError as exc:  # the reference program does not build or run here
            text = str(exc)
            why = "reference_build" if "compile" in text else "reference_run"
            return why, text.splitlines()[0][:300]

    async def _reference_verdict(self, sample: Sample) -> tuple[str, str] | None:
        """None when the label, as an answer, passes; else (reason, detail)."""
        if sample.id not in self._reference:
            ref = Candidate(sample.id, -1, sample.files["target"], sample.files["target"])
            # Twice: ranks that print unsynchronized interleave differently per run, and
            # such a program would fail a correct answer by chance.
            got = await self._judge(sample, sample.files["target"], ref)
            if isinstance(got, Score) and got.status == ScoreStatus.PASS:
                got = await self._judge(sample, sample.files["target"], ref)
            if isinstance(got, Score):
                got = None if got.status == ScoreStatus.PASS else (
                    f"reference_{str(got.failure_class).split(':')[0]}",
                    f"the label's own calls: {got.failure_class}: {got.explanation[:200]}",
                )  # fmt: skip
            self._reference[sample.id] = got
        return self._reference[sample.id]


def _skipped(why: str, detail: str, metrics: dict[str, float]) -> Score:
    return Score(
        0.0,
        ScoreStatus.SKIPPED,
        FailureClass.with_detail("not_runnable", why),
        metrics,
        f"not run ({why}): {detail}; upstream's metrics only",
    )


def mpirigen_task(
    checkout: str,
    dataset: str = "test",
    limit: int | None = 1000,
    *,
    backend: str | None = None,
    nps: Sequence[int] = (2, 3, 4),
) -> Task:
    """The first `limit` programs of the set (1,000: those upstream's released predictions
    answer; None: all)."""
    programs = load_programs(checkout, dataset)[:limit]
    return Task(
        name=f"mpirigen-{dataset}",
        dataset=[make_sample(p, k) for k, p in enumerate(programs)],
        scorer=MpirigenScorer(backend=backend, nps=tuple(nps)),
        metadata={"language": "mpi", "source": str(checkout), "set": dataset,
                  "programs": len(programs)},
    )  # fmt: skip
