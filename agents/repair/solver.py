"""Generate -> compile -> test -> repair, as an appl program and a codegen_eval solver.

For one sample, k attempts start at once, all in flight together. Round 1 of each is a plain
generation, the same request `generate` makes (codegen_eval.solvers.first_draft: same system
prompt, seed, temperature and extraction), so R rounds of repair compare with R samples of
generate at equal budget. Each attempt then runs its own chain: extract the code, score it
with the suite's own Scorer (which compiles, runs or simulates it in the sandbox and explains
what went wrong), and if it failed, ask the model again with the spec, its previous code, the
failure class and the trimmed explanation - up to `rounds` model calls in all. The chains are independent, so while one attempt is being compiled another is already
talking to the model.

    solver = RepairSolver(task.scorer, model="local", rounds=3)
    cands = await solver.solve(sample, 5)          # 5 attempts, each with its own repair chain
    cands[0].metadata["failure_history"]           # e.g. ["compile_error:syntax", "pass"]

The candidate returned is the attempt's last code (or an earlier one that scored strictly
higher). The runner scores it again itself: the verdict in the log never comes from us.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import os
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from agents.repair.diagnostics import diagnostic_hints
from agents.repair.prompts import (
    answer_code,
    fence_tag,
    own_format,
    quote_diagnosed_lines,
    repair_hint,
    system_prompt,
    trim,
    wants_whole_file,
)
from appl import AIMessage, GenResult, SystemMessage, gen, ppl
from appl.errors import BadResponseError, ClientRequestError, ModelTimeoutError, ServerError
from codegen_eval.solvers import first_draft, usage_of
from codegen_eval.types import Candidate, FailureClass, Sample, Score, Scorer, Task

ScorerFor = Callable[[Sample], Scorer]
CODE_IN_HISTORY = 6000  # chars of each round's code kept in the metadata
EXPLANATION_IN_HISTORY = 600


@dataclass(slots=True)
class Round:
    """One model call of an attempt and the scorer's verdict on its code."""

    round: int  # 1-based
    code: str
    raw: str
    score: Score
    extraction: str = ""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    request: str = "repair"  # draft (round 1) | repair | restart (a fresh draft)
    readings: list[str] = field(default_factory=list)  # sent with the next repair request

    def summary(self) -> dict[str, Any]:
        return {
            "round": self.round,
            "request": self.request,
            "status": self.score.status,
            "failure_class": self.score.failure_class,
            "value": self.score.value,
            "extraction": self.extraction,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            # each round's code (the candidate holds only the chosen one), so a log shows what
            # a repair changed, and its hash, so a round that repeated the last is plain
            "code_sha": hashlib.sha256(self.code.encode()).hexdigest()[:12],
            "code": self.code[:CODE_IN_HISTORY],
            "explanation": self.score.explanation[:EXPLANATION_IN_HISTORY],
            "readings": list(self.readings),
            # what the model was shown instead of the explanation, where the scorer said
            **({"feedback": self.score.feedback} if self.score.feedback is not None else {}),
        }


@dataclass(slots=True)
class Attempt:
    """The repair chain of one candidate index."""

    index: int
    rounds: list[Round] = field(default_factory=list)
    error: str = ""  # a repair request the model server refused: the chain ended there
    cut_by_server: bool = False  # ... because the server timed out or failed, not the prompt

    @property
    def passed(self) -> bool:
        return bool(self.rounds) and self.rounds[-1].score.status == "pass"

    def chosen(self) -> Round:
        # The last round unless an earlier one scored strictly higher (partial credit).
        best = self.rounds[-1]
        for r in self.rounds:
            if r.score.value > best.score.value:
                best = r
        return best


def _normalized(code: str) -> str:
    """Code compared for repeats: whitespace does not make a new answer."""
    return " ".join(code.split())


def repair_seed(seed: int, round_no: int) -> int:
    """The seed of a repair round. Round 1 keeps the attempt's seed (it is generate's
    request); each later round gets its own, because the same seed replays the same random
    stream and a small model then tends to write its first answer again word for word."""
    return seed if round_no <= 1 else seed + 100_003 * (round_no - 1)


def _history_label(score: Score) -> str:
    if score.status == "pass":
        return "pass"
    return score.failure_class or score.status


def reply_instruction(sample: Sample) -> str:
    """The repair request's last line. A suite with a line-oriented answer (omp-pragma: the
    pragma lines; mpi-completion: `N: MPI_Call(args);` lines) gets its own format again: asked
    for "the complete corrected solution", the 1.5B model wrote whole C programs in 28 of 36
    omp-pragma repair rounds (0 of 23 drafts), which the scorer reads as the program's first
    pragma, not as the answer."""
    if wants_whole_file(sample):
        return "Reply with the complete corrected solution in the required format."
    return (
        "Reply with the corrected answer only, in the task's answer format, not a whole "
        f"program: {own_format(sample)}"
    )


def _done(score: Score) -> bool:
    """Stop repairing: a pass, a sample that cannot be judged here (e.g. CUDA compiled fine but
    no GPU: `skipped`), or an infrastructure error (the sandbox broke, not the code)."""
    return score.status in ("pass", "skipped", "error")


# --------------------------------------------------------------------------- appl programs


@ppl
async def _repair(
    system: str,
    spec: str,
    previous: str,
    failure_class: str,
    feedback: str,
    quoted: str,
    hint: str,
    readings: list[str],
    reply_with: str,
    round_no: int,
    *,
    model: str | None,
    temperature: float,
    seed: int,
    max_tokens: int,
) -> GenResult:
    """One repair request: the task, the previous answer as the model's own turn, then the
    grader's verdict and what to look at."""
    SystemMessage(system)
    spec
    AIMessage(previous)
    f"Attempt {round_no} failed the grader: `{failure_class}`."
    "The grader's report (compiler diagnostics, test or simulation results):"
    f"```text\n{feedback}\n```"
    if quoted:
        "The lines of your code that the report points at:"
        f"```text\n{quoted}\n```"
    hint
    if readings:
        listed = "\n".join(f"- {r}" for r in readings)
        f"What the report means:\n{listed}"
    reply_with
    return await gen(
        model=model, temperature=temperature, seed=seed, max_tokens=max_tokens
    ).result()


# --------------------------------------------------------------------------- solver


class RepairSolver:
    """A codegen_eval Solver (`solve`, `solve_one`) that repairs from scorer feedback.

    scorer: the suite's Scorer, or `scorer_for(sample)` when one solver serves several suites.
    rounds: model calls per attempt (1 = no repair). max_scoring: concurrent scorings of this
    solver (defaults to the number of cores; compilers and simulators are CPU bound).
    """

    def __init__(
        self,
        scorer: Scorer | None = None,
        *,
        scorer_for: ScorerFor | None = None,
        model: str | None = None,
        rounds: int = 3,
        temperature: float = 0.8,
        repair_temperature: float | None = None,
        max_tokens: int = 1024,
        seed: int = 0,
        feedback_chars: int = 1500,
        max_scoring: int | None = None,
        restart_on_repeat: bool = False,
        diagnostic_hints: bool = True,
    ) -> None:
        if scorer is None and scorer_for is None:
            raise ValueError("RepairSolver needs a scorer (or scorer_for)")
        if rounds < 1:
            raise ValueError("rounds must be >= 1")
        self._scorer_for: ScorerFor = scorer_for or (lambda _s: scorer)  # type: ignore[assignment,return-value]
        self.model = model
        self.rounds = rounds
        self.temperature = temperature
        self.repair_temperature = temperature if repair_temperature is None else repair_temperature
        self.max_tokens = max_tokens
        self.seed = seed
        self.feedback_chars = feedback_chars
        self.max_scoring = max_scoring or os.cpu_count() or 1
        # A small model asked to repair often writes the same code again (13 of 22 rounds of
        # the 0.5B model): that round is spent for nothing. With restart_on_repeat, the round
        # after a repeat is a fresh first draft (its own seed) instead of another repair.
        self.restart_on_repeat = restart_on_repeat
        # Readings of the report's messages (agents.repair.diagnostics) in repair requests;
        # off, the request carries the raw report only (the behaviour measured before them).
        self.diagnostic_hints = diagnostic_hints
        self._sems: dict[int, asyncio.Semaphore] = {}

    def describe(self) -> dict[str, Any]:
        return {
            "solver": "repair",
            "model": self.model or "",
            "rounds": self.rounds,
            "temperature": self.temperature,
            "repair_temperature": self.repair_temperature,
            "max_tokens": self.max_tokens,
            "seed": self.seed,
            "feedback_chars": self.feedback_chars,
            "restart_on_repeat": self.restart_on_repeat,
            "diagnostic_hints": self.diagnostic_hints,
        }

    # -- Solver protocol ------------------------------------------------------------------
    async def solve(self, sample: Sample, n: int) -> Sequence[Candidate]:
        return await self.solve_indices(sample, range(n))

    async def solve_one(self, sample: Sample, index: int) -> Candidate:
        return (await self.solve_indices(sample, [index]))[0]

    async def solve_indices(self, sample: Sample, indices: Sequence[int]) -> list[Candidate]:
        attempts = await self.run_attempts(sample, indices)
        return [self._candidate(sample, a) for a in attempts]

    # -- the loop -------------------------------------------------------------------------
    async def run_attempts(self, sample: Sample, indices: Sequence[int]) -> list[Attempt]:
        """k independent chains, all in flight at once: while one attempt is being compiled
        another is already talking to the model."""
        return list(await asyncio.gather(*(self.chain(sample, i) for i in indices)))

    async def chain(self, sample: Sample, index: int) -> Attempt:
        attempt = Attempt(index)
        system = system_prompt(sample)
        # Round 1 is a plain generation: the very request `generate` makes with this seed.
        result = await self._draft(sample, self.seed + index)
        request = "draft"
        for round_no in range(1, self.rounds + 1):
            current = await self._judge(sample, index, round_no, result)
            current.request = request
            attempt.rounds.append(current)
            if _done(current.score) or round_no == self.rounds:
                break
            request = "restart" if self._stuck(attempt) else "repair"
            try:
                if request == "restart":
                    seed = repair_seed(self.seed + index, round_no + 1)
                    result = await self._draft(sample, seed)
                else:
                    result = await self._ask_repair(sample, index, round_no, system, current)
            except (ClientRequestError, BadResponseError, ModelTimeoutError, ServerError) as exc:
                # e.g. a prompt over the context window: the rounds so far still count
                attempt.error = f"round {round_no + 1}: {type(exc).__name__}: {exc}"[:500]
                attempt.cut_by_server = isinstance(exc, ModelTimeoutError | ServerError)
                break
        return attempt

    def _stuck(self, attempt: Attempt) -> bool:
        """restart_on_repeat: the last round wrote code an earlier round already had."""
        if not self.restart_on_repeat or len(attempt.rounds) < 2:
            return False
        last = _normalized(attempt.rounds[-1].code)
        return bool(last) and any(_normalized(r.code) == last for r in attempt.rounds[:-1])

    async def _draft(self, sample: Sample, seed: int) -> GenResult:
        return await first_draft(
            sample,
            model=self.model,
            temperature=self.temperature,
            seed=seed,
            max_tokens=self.max_tokens,
        )

    async def _ask_repair(
        self, sample: Sample, index: int, round_no: int, system: str, current: Round
    ) -> GenResult:
        # A line-oriented answer (pragma lines, MPI call lines) is C: fenced under the suite's
        # language tag (```openmp) the 1.5B model took the tag for the language and answered
        # `omp parallel for ...` without `#pragma` (3 of 35 omp-pragma rounds). Replayed bare,
        # as the model wrote it, it wrote the same answer again in 28 of 33 rounds (10 of 35
        # fenced, in the run before).
        whole_file = wants_whole_file(sample)
        fence = fence_tag(sample) if whole_file else "c"
        previous = f"```{fence}\n{current.code}```" if current.code else trim(current.raw, 2000)
        if self.diagnostic_hints:
            language = str(sample.metadata.get("language", ""))
            current.readings = diagnostic_hints(
                current.score.model_feedback,
                current.code,
                language=language,
                whole_file=whole_file,
            )
        return await _repair(
            system,
            sample.input,
            previous or "(empty reply)",
            current.score.failure_class or current.score.status,
            trim(current.score.model_feedback or "(no details)", self.feedback_chars),
            quote_diagnosed_lines(current.score.model_feedback, current.code, sample.files),
            repair_hint(current.score.failure_class, whole_file=whole_file),
            current.readings,
            reply_instruction(sample),
            round_no,
            model=self.model,
            temperature=self.repair_temperature,
            seed=repair_seed(self.seed + index, round_no + 1),
            max_tokens=self.max_tokens,
        )

    async def _judge(self, sample: Sample, index: int, round_no: int, result: GenResult) -> Round:
        raw = result.text or ""
        code, method = answer_code(sample, raw)
        usage = usage_of(result)
        tokens = {
            "prompt_tokens": usage.get("prompt_tokens", 0),
            "completion_tokens": usage.get("completion_tokens", 0),
        }
        if not code.strip():
            score = Score(
                0.0,
                "fail",
                FailureClass.NO_CODE,
                explanation=f"no code could be extracted from the reply: {method}",
            )
            return Round(round_no, "", raw, score, method, **tokens)
        cand = Candidate(sample.id, index, code, raw=raw, metadata={"round": round_no})
        score = await self._score(sample, cand)
        return Round(round_no, code, raw, score, method, **tokens)

    async def _score(self, sample: Sample, cand: Candidate) -> Score:
        loop_id = id(asyncio.get_running_loop())
        sem = self._sems.setdefault(loop_id, asyncio.Semaphore(self.max_scoring))
        try:
            async with sem:
                score = await self._scorer_for(sample).score(sample, cand)
        except Exception as exc:  # a broken scorer ends the chain with a clear verdict
            text = "".join(traceback.format_exception_only(type(exc), exc)).strip()
            return Score(0.0, "error", FailureClass.INFRA_ERROR, explanation=text)
        return score

    def _candidate(self, sample: Sample, attempt: Attempt) -> Candidate:
        chosen = attempt.chosen()
        meta: dict[str, Any] = {
            **self.describe(),
            "seed": self.seed + attempt.index,
            "rounds_used": len(attempt.rounds),
            "max_rounds": self.rounds,
            "passed": attempt.passed,
            "passed_round": attempt.rounds[-1].round if attempt.passed else None,
            "chosen_round": chosen.round,
            "failure_history": [_history_label(r.score) for r in attempt.rounds],
            "history": [r.summary() for r in attempt.rounds],
            "final_failure_class": chosen.score.failure_class,
            "extraction": chosen.extraction,
            "prompt_tokens": sum(r.prompt_tokens for r in attempt.rounds),
            "completion_tokens": sum(r.completion_tokens for r in attempt.rounds),
        }
        if attempt.error:
            meta["repair_error"] = attempt.error
        if attempt.cut_by_server:
            # Not a result: the chain did not get its rounds. The runner logs it as an
            # infra_error, which `codegen-eval run --resume --retry-infra` runs again (a prompt
            # over the window is the chain's own doing and stays a result).
            meta["generation_error"] = f"repair chain cut by the model server: {attempt.error}"
        return Candidate(sample.id, attempt.index, chosen.code, raw=chosen.raw, metadata=meta)


def with_repair(task: Task, **options: Any) -> Task:
    """The same suite, with a RepairSolver using the suite's own scorer as its Task.solver
    (run it with `run_eval([...], None, ...)`, which uses each task's solver). This is
    `codegen-eval run --solver repair`; `--solver-opt` sets the options in SOLVER_OPTIONS."""
    return dataclasses.replace(task, solver=RepairSolver(task.scorer, **options))


# What `codegen-eval run --solver repair --solver-opt KEY=VALUE` may set (model, temperature,
# max_tokens and seed are run options of their own).
SOLVER_OPTIONS: dict[str, type] = {
    "rounds": int,
    "repair_temperature": float,
    "feedback_chars": int,
    "max_scoring": int,
    "restart_on_repeat": bool,
    "diagnostic_hints": bool,
}
with_repair.solver_options = SOLVER_OPTIONS  # type: ignore[attr-defined]
