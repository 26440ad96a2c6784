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
from dataclasses import replace

from codegen_eval.suites.mpi_completion import MpiCompletionScorer
from codegen_eval.types import Candidate, FailureClass, Sample, Score, ScoreStatus, Task

from .data import RigenProgram, load_programs
from .metrics import MAX_ANSWER, score_program
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


class _LinesInAnyOrder(MpiCompletionScorer):
    """The mpi-completion scorer comparing the lines a run prints in any order: MPIrigen's
    programs print from several ranks without synchronizing, and the order in which mpirun
    forwards those lines changes from run to run. An answer still has to make every line
    the reference prints, as often; it only cannot be judged on their order."""

    async def _launch(self, sb, artifact, np, metrics=None):  # type: ignore[no-untyped-def]
        r = await super()._launch(sb, artifact, np, metrics)
        return replace(r, stdout="".join(sorted(r.stdout.splitlines(keepends=True))))


class MpirigenScorer:
    """Upstream's metrics, and the mpi-completion scorer's run verdict where it applies."""

    def __init__(self, backend: str | None = None, nps: tuple[int, ...] = (2, 3, 4)) -> None:
        self.backend = backend
        self.nps = nps
        self._runners: dict[tuple[int, ...], MpiCompletionScorer] = {}
        # sample id -> the process counts its label passes at, or why it passes at none
        self._reference: dict[str, tuple[int, ...] | tuple[str, str]] = {}

    def _runner(self, nps: tuple[int, ...]) -> MpiCompletionScorer:
        if nps not in self._runners:
            self._runners[nps] = _LinesInAnyOrder(backend=self.backend, nps=nps)
        return self._runners[nps]

    async def score(self, sample: Sample, candidate: Candidate) -> Score:
        # MonoCoder's answer is plain text after "parallel": the groups may be in the
        # extracted code or only in the raw reply.
        answer = candidate.code if answer_has_groups(candidate.code) else candidate.raw
        answer = answer[:MAX_ANSWER]
        metrics = upstream_metrics(sample.target, answer)
        if why := sample.metadata.get("static_blocker"):
            return _skipped(why, "the reference cannot be rebuilt from the label", metrics)
        if not sample.files["target"].strip():
            return _skipped("only_setup_calls", "the label has no call but the set-up "
                            "calls, which the program keeps", metrics)  # fmt: skip
        setup = RunSetup(sample.files["program.c"], sample.files["target"],
                         tuple((a, b) for a, b in sample.metadata["kept_after"]))  # fmt: skip
        # The label itself, judged first (once per sample): a program whose own reference
        # does not pass here (refused by the screen, fails to build or run) cannot judge an
        # answer; one that passes at some process counts judges answers at those.
        ref = await self.reference_verdict(sample)
        if isinstance(ref, tuple):
            return _skipped(ref[0], ref[1], metrics)
        nps = self._reference[sample.id]
        verdict = await self._judge(sample, candidate_answer(setup, answer), candidate, nps)
        if isinstance(verdict, tuple):
            return _skipped(*verdict, metrics)
        verdict.metrics.update(metrics)
        return verdict

    async def _judge(
        self, sample: Sample, lines: str, candidate: Candidate, nps: tuple[int, ...]
    ) -> Score | tuple[str, str]:
        inner = Sample(sample.id, sample.input, sample.files["target"], sample.metadata,
                       {"program.c": sample.files["program.c"]})  # fmt: skip
        try:
            return await self._runner(nps).score(
                inner, Candidate(candidate.sample_id, candidate.index, lines, lines)
            )
        except RuntimeError as exc:  # the reference program does not build or run here
            lines = str(exc).splitlines() or [""]
            why = "reference_build" if "compile" in lines[0] else "reference_run"
            cause = next((ln for ln in lines[1:] if "error" in ln), lines[-1])
            return why, f"{lines[0]} {cause.strip()}"[:300]

    async def reference_verdict(self, sample: Sample) -> tuple[str, str] | None:
        """None when the label, as an answer, passes at one or more of `nps` (recorded);
        else (reason, detail) of its failure at the first."""
        if sample.id not in self._reference:
            target = sample.files["target"]
            ref = Candidate(sample.id, -1, target, target)
            good: list[int] = []
            first: tuple[str, str] | None = None
            for np in self.nps:
                # Twice: a program whose output changes from run to run cannot judge.
                for _ in range(2):
                    got = await self._judge(sample, target, ref, (np,))
                    if not isinstance(got, Score) or got.status != ScoreStatus.PASS:
                        break
                else:
                    good.append(np)
                    continue
                if first is None:
                    first = got if isinstance(got, tuple) else (
                        f"reference_{str(got.failure_class).split(':')[0]}",
                        f"the label's own calls: {got.failure_class}: {got.explanation[:200]}",
                    )  # fmt: skip
            self._reference[sample.id] = tuple(good) if good else first  # type: ignore[assignment]
        got = self._reference[sample.id]
        return None if got and isinstance(got[0], int) else got  # type: ignore[return-value]


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
