"""Scorer of the omp-pragma suite.

1. The answer is read from the candidate (code, else the raw reply): the first run of
   `#pragma omp` lines (continuations joined), or "none". Anything else -> no_code.
2. Screen (screen.py): the lines must be in the suite's pragma grammar: accepted directives
   and clauses, clause arguments that only read the program's own variables and constants.
   A call, assignment, statement expression, `sizeof`, string, digraph, non-ASCII character,
   unknown name, ... -> forbidden_construct:<what>; a malformed pragma -> compile_error:syntax.
   Only the screened tokens, re-joined, are compiled: never the answer's own text.
3. Clause metrics: the screened answer and the reference are parsed (pragma.py) and compared
   clause by clause (precision/recall per kind, exact_match). They never decide the verdict.
4. Functional verdict (Score.value): the scorer builds the serial program itself (no pragma,
   no -fopenmp) and records its output; the candidate's program is compiled with gcc
   -fopenmp and run at each thread count of `threads` (default 1, 2, 4, 2); every run must
   print exactly the serial output.
5. Observed parallelism (observe.py), when the reference is a parallel construct: both
   builds carry our observer, which records per encounter of the loop how many iterations
   ran, on how many threads, in what team size, and the most one thread ran. A run that
   replicated or skipped work, ran in a team of one at two or more threads, or (static
   schedule) gave one thread more than 3/4 of an encounter (observe.BUSIEST_SHARE) fails
   (wrong_answer:replicated_work / skipped_work / not_parallel), whatever the clauses say.
   A timing-dependent schedule (dynamic, guided, taskloop) must share in one run, and its
   chunks or tasks (the evaluated constants against the serial iteration counts) may not
   hand one thread more than 3/4 of the loop in one piece (not_parallel, before running).
6. The answer must be the kind of construct the reference is: a "none" reference needs
   "none", a pragma reference a pragma, an atomic/critical reference atomic or critical, a
   simd reference a simd construct (wrong_answer:unsafe_parallelism / missed_parallelism /
   wrong_construct).
7. A loop construct (for, simd, taskloop, ...) must not leave shared a variable that the
   reference keeps out of the shared state (its reduction, private and lastprivate
   variables: every one of them is written by the loop): that is a data race whether or not
   it showed in the runs (wrong_answer:data_race, decided once the program compiles, before
   any run: a compile error is reported first). So is `none` on a statement the reference
   guards (atomic, critical): the parallel loop around it runs it in every thread. A
   variable privatised the wrong way (a reduction variable not reduced with the reference's
   operator, a lastprivate one not lastprivate: sharing.py) is wrong_answer:data_sharing.
8. A simd reference answered with safelen(1), simdlen(1) or an `if` that is not a constant
   the suite computes to be true is wrong_answer:not_parallel (the loop is not vectorised),
   decided the same way.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import re
from dataclasses import dataclass, field

from codegen_eval.failures import classify_compile_result, classify_exec, short_log
from codegen_eval.suites._cscreen import Forbidden, ProgramNames, ScreenSyntaxError, program_names
from codegen_eval.suites._csource import loop_nest_vars
from codegen_eval.types import Candidate, FailureClass, Sample, Score
from sandboxes import Limits, Sandbox, open_sandbox, toolchains

from .observe import (
    BUSIEST_SHARE,
    LINK_FLAGS,
    OBSERVER_FILE,
    TRACE_ENV,
    Trace,
    busiest_share,
    handed_share,
    instrument,
    judge_run,
    observer_source,
    parse_trace,
    shared,
    smallest_piece,
)
from .pragma import OmpPragma, PragmaSyntaxError, compare, logical_lines, parse_pragma
from .screen import ScreenedPragma, screen_pragma
from .sharing import Sharing, check_sharing, undeferred, unvectorised

_THINK = re.compile(r"<think>.*?(</think>|\Z)", re.DOTALL | re.IGNORECASE)
_PRAGMA_LINE = re.compile(r"^\s*#\s*pragma\s+omp\b", re.IGNORECASE)
_NONE_ANSWER = re.compile(
    r"\bnone\b|\bno (openmp )?pragma\b|\b(should|must|can) ?not be parallel|"
    r"\bcannot be parallel|\bnot (safely )?parallelizable\b|\bnot parallelisable\b",
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True)
class OmpAnswer:
    lines: tuple[str, ...]  # pragma lines; empty = "none"

    @property
    def is_none(self) -> bool:
        return not self.lines

    @property
    def text(self) -> str:
        return "\n".join(self.lines) if self.lines else "none"


def _unquote(line: str) -> str:
    # inline code: "Use `#pragma omp parallel for` here" -> the part between the backticks
    if "`" in line:
        m = re.search(r"`+\s*(#\s*pragma[^`]*)`", line)
        if m:
            return m.group(1)
        line = line.replace("`", "")
    return line


def parse_answer(text: str) -> OmpAnswer | None:
    """The pragma lines (or "none") of a reply; None when it holds neither."""
    body = _THINK.sub("", text or "")
    lines = [_unquote(ln).rstrip() for ln in logical_lines(body)]
    picked: list[str] = []
    for ln in lines:
        if _PRAGMA_LINE.match(ln):
            picked.append(ln.strip())
        elif picked:
            break  # only the first run of consecutive pragma lines is the answer
    if picked:
        return OmpAnswer(tuple(picked))
    # a fence on one line ("```none```") is inline code; a fence line's info string is not prose
    prose = re.sub(r"(`{3,}|~{3,})([^`~\n]*)\1", r" \2 ", body)
    prose = re.sub(r"^\s*(`{3,}|~{3,}).*$", "", prose, flags=re.MULTILINE)
    if _NONE_ANSWER.search(prose):
        return OmpAnswer(())
    return None


def _fail(cls: str, explanation: str, metrics: dict[str, float]) -> Score:
    return Score(0.0, "fail", cls, metrics, explanation)


@functools.lru_cache(maxsize=256)
def _names(program: str) -> ProgramNames:
    return program_names(program)


_ZERO_METRICS = {
    "directive_match": 0.0, "clause_precision": 0.0, "clause_recall": 0.0,
    "clause_f1": 0.0, "exact_match": 0.0,
}  # fmt: skip


def _one_line(answer: OmpAnswer) -> str:
    return " / ".join(answer.lines) if answer.lines else "none"


# directive words that guard one statement against the other threads of its team
_MUTUAL_EXCLUSION = frozenset({"atomic", "critical"})


def _wrong_construct(reference: OmpPragma | None, screened: ScreenedPragma) -> str | None:
    """Why the answer cannot be the construct the reference's statement needs (decided from
    the screened structure, before anything runs), or None."""
    if reference is None or reference.parallel:
        return None  # "none" references and parallel ones are judged after the runs
    need = set(reference.directive.split())
    words = set(screened.words)
    if need & _MUTUAL_EXCLUSION and not (
        len(screened.directives) == 1 and words & _MUTUAL_EXCLUSION
    ):
        return "the statement needs mutual exclusion (atomic or critical)"
    if "simd" in need and "simd" not in words:
        return "the loop needs a simd construct"
    return None


def _data_race(plan: _Plan, metrics: dict[str, float]) -> Score:
    if plan.unguarded:
        failed = _fail(f"{FailureClass.WRONG_ANSWER}:data_race",
                       "none: the statement is run by every thread of the parallel loop around "
                       "it and needs mutual exclusion (decided without running)",
                       metrics)  # fmt: skip
        # the program shows the parallel loop around the statement; "mutual exclusion" names
        # the reference's kind of construct, which a repairing model is not told
        failed.feedback = ("none: a data race: the statement runs in several threads at once "
                           "(decided without running)")  # fmt: skip
        return failed
    if not plan.sharing.racy:
        why = "; ".join(w for _, w in plan.sharing.wrong)
        failed = _fail(f"{FailureClass.WRONG_ANSWER}:data_sharing",
                       f"{_one_line(plan.answer)}: {why} (decided without running)",
                       metrics)  # fmt: skip
        # `why` names the reference's clause for the variable; a repairing model hears only
        # that a privatised variable does not carry the value the program needs
        failed.feedback = (f"{_one_line(plan.answer)}: wrong data sharing: a variable the loop "
                           "writes is privatised in a way that loses the value the program "
                           "needs from it (decided without running)")  # fmt: skip
        return failed
    names = ", ".join(plan.sharing.racy)
    verb = "is" if len(plan.sharing.racy) == 1 else "are"
    failed = _fail(f"{FailureClass.WRONG_ANSWER}:data_race",
                   f"{_one_line(plan.answer)}: {names} {verb} written by the loop's iterations "
                   "but shared between threads (decided without running)", metrics)  # fmt: skip
    # the names are the reference's clause variables: a repairing model hears the verdict on
    # its answer, not which variables the reference privatises
    failed.feedback = (f"{_one_line(plan.answer)}: a data race: a variable the loop writes "
                       "stays shared between threads")  # fmt: skip
    return failed


@dataclass(frozen=True, slots=True)
class _Plan:
    """What one sample's runs need: the screened answer, whether the runs are observed."""

    answer: OmpAnswer  # the screened (canonical) lines
    screened: ScreenedPragma | None
    reference: OmpPragma | None
    cand: OmpPragma | None
    observed: bool  # the reference is a parallel construct: observe the runs
    # the answer's data-sharing faults (sharing.check_sharing); none checked for `none`
    sharing: Sharing = field(default_factory=Sharing)
    # why the clauses alone leave the loop serial: a taskloop that may run undeferred, a simd
    # answer that cannot vectorise (sharing.py)
    serial_by_clauses: str | None = None
    depth: int = 1  # the answer's collapse: where the per-iteration hook goes

    @property
    def unguarded(self) -> bool:
        """`none` where the reference guards a statement (atomic, critical) inside a parallel
        loop: a race, whether or not it shows (it hid in 1 of 2 runs of atomic_histogram)."""
        return (self.answer.is_none and self.reference is not None
                and bool(set(self.reference.directive.split()) & _MUTUAL_EXCLUSION))  # fmt: skip


class OmpPragmaScorer:
    """Scores samples made by `omp_pragma.make_sample` (metadata: marker_line, indent,
    loop_vars; files: program.c, the masked program)."""

    def __init__(
        self,
        *,
        backend: str | None = None,
        threads: tuple[int, ...] = (1, 2, 4, 2),
        run_timeout_s: float = 20.0,
        compile_timeout_s: float = 60.0,
    ) -> None:
        self.backend = backend
        self.threads = threads
        self.run_timeout_s = run_timeout_s
        self.compile_timeout_s = compile_timeout_s
        self._serial: dict[str, tuple[str, Trace | None]] = {}
        self._locks: dict[str, asyncio.Lock] = {}

    async def score(self, sample: Sample, candidate: Candidate) -> Score:
        answer = parse_answer(candidate.code) or parse_answer(candidate.raw)
        if answer is None:
            return _fail(FailureClass.NO_CODE, "no '#pragma omp' line and no 'none'", {})
        implicit = frozenset(sample.metadata.get("loop_vars", ()))
        reference = None if sample.target == "none" else parse_pragma(sample.target)
        screened: ScreenedPragma | None = None
        if not answer.is_none:
            try:
                screened = screen_pragma(answer.lines, _names(sample.files["program.c"]))
            except (Forbidden, ScreenSyntaxError) as exc:
                metrics = {**_ZERO_METRICS, "pragma_screened_out": 1.0}
                return _fail(exc.failure_class, f"{_one_line(answer)[:160]}: {exc}",
                             metrics)  # fmt: skip
            answer = OmpAnswer(screened.lines)
        cand: OmpPragma | None = None
        metrics: dict[str, float] = {}
        if screened is not None:
            try:
                cand = parse_pragma(screened.text, implicit_private=implicit)
            except PragmaSyntaxError as exc:
                # screened text parses (collapse is rendered as its value); should it ever
                # not, the data-sharing check cannot be made, so nothing may pass unchecked
                return _fail(f"{FailureClass.INFRA_ERROR}:pragma_parse",
                             f"{_one_line(answer)}: the screened pragma does not parse: {exc}",
                             {**_ZERO_METRICS, "pragma_parse_error": 1.0})  # fmt: skip
        metrics.update(compare(reference, cand, implicit))
        if screened is not None and (why := _wrong_construct(reference, screened)):
            failed = _fail(f"{FailureClass.WRONG_ANSWER}:wrong_construct",
                           f"{_one_line(answer)}: {why}", metrics)  # fmt: skip
            # `why` names the reference's construct: a repairing model is told only that this
            # one is the wrong kind (what any failing verdict says), not which kind is right
            failed.feedback = (f"{_one_line(answer)}: not the kind of construct this "
                               "statement needs (decided before any run)")  # fmt: skip
            return failed
        sharing, serial_simd, depth = Sharing(), None, 1
        if screened is not None and cand is not None:
            sharing = check_sharing(reference, cand, self._loop_vars(sample, cand))
            macros = _names(sample.files["program.c"]).macros
            serial_simd = undeferred(reference, screened, macros) or unvectorised(
                reference, screened, macros
            )
            depth = max(1, cand.collapse)
        plan = _Plan(answer, screened, reference, cand, self._observes(sample), sharing,
                     serial_simd, depth)  # fmt: skip
        async with open_sandbox(self.backend) as sb:
            return await self._run(sb, sample, plan, metrics)

    @staticmethod
    def _loop_vars(sample: Sample, cand: OmpPragma) -> frozenset[str]:
        """Iteration variables the answer's own construct makes private (its collapse depth)."""
        depth = max(1, cand.collapse)
        k = int(sample.metadata["marker_line"])
        return frozenset(loop_nest_vars(sample.files["program.c"], k + 1, depth))

    def _program(
        self, sample: Sample, lines: tuple[str, ...], observed: bool = False, depth: int = 1
    ) -> str:
        """Our program with `lines` (screened pragma lines, or none) at the marker; with the
        observer's hooks when `observed` (the per-iteration one at loop depth `depth`)."""
        src = sample.files["program.c"]
        k = int(sample.metadata["marker_line"])
        indent = str(sample.metadata.get("indent", ""))
        if observed:
            return instrument(src, k, indent, lines, depth)
        body = [indent + ln for ln in lines] or [""]
        src_lines = src.splitlines()
        return "\n".join([*src_lines[: k - 1], *body, *src_lines[k:]]) + "\n"

    def _sources(self, name: str, program: str, observed: bool) -> dict[str, str]:
        files = {f"{name}.c": program}
        if observed:
            files[OBSERVER_FILE] = observer_source()
        return files

    async def serial_output(self, sb: Sandbox, sample: Sample) -> str:
        """Output of the program without the pragma, compiled without OpenMP (so the other
        pragmas are ignored too): the loop's sequential semantics. Cached per source."""
        return (await self._serial_run(sb, sample, self._observes(sample)))[0]

    @staticmethod
    def _observes(sample: Sample) -> bool:
        return sample.target != "none" and parse_pragma(sample.target).parallel

    async def _serial_run(
        self, sb: Sandbox, sample: Sample, observed: bool, depth: int = 1
    ) -> tuple[str, Trace | None]:
        src = self._program(sample, (), observed, depth)
        key = hashlib.sha256(src.encode()).hexdigest()
        lock = self._locks.setdefault(key, asyncio.Lock())
        async with lock:
            if key in self._serial:
                return self._serial[key]
            c = toolchains.get("c")
            build = await c.compile(
                sb, self._sources("serial", src, observed), output="serial",
                extra_flags=["-Wno-unknown-pragmas"],
                limits=Limits(wall_s=self.compile_timeout_s, memory_mb=2048, pids=64),
            )  # fmt: skip
            if not build.ok:
                raise RuntimeError(f"serial program of {sample.id} does not compile:\n"
                                   f"{build.exec_result.stderr}")  # fmt: skip
            r = await c.run(sb, "serial", limits=self._run_limits(),
                            env={TRACE_ENV: "serial_trace.txt"})  # fmt: skip
            if not r.ok:
                raise RuntimeError(f"serial program of {sample.id} failed: {r.status}")
            trace = None
            if observed:
                trace = parse_trace(await sb.read_text("serial_trace.txt", max_bytes=1 << 20))
                if trace is None:
                    raise RuntimeError(f"serial program of {sample.id}: no observer trace")
            self._serial[key] = (r.stdout, trace)
            return self._serial[key]

    def _run_limits(self) -> Limits:
        return Limits(wall_s=self.run_timeout_s, memory_mb=1024, pids=64)

    async def _one_lane(self, sb: Sandbox, sample: Sample, plan: _Plan) -> str | None:
        """Why a `for simd` / `taskloop simd` answer to a simd reference cannot vectorise:
        it vectorises inside one chunk or task only, and its clauses cut pieces of one
        iteration (`schedule(static, 1)`, `dynamic`, `grainsize(1)`, `num_tasks(N)`)."""
        screened, reference = plan.screened, plan.reference
        if screened is None or reference is None or "simd" not in reference.directive.split():
            return None
        if "simd" not in screened.words or not {"for", "taskloop"} & set(screened.words):
            return None
        # the loop's encounters and their sizes, from the serial program with the observer
        _, trace = await self._serial_run(sb, sample, True, plan.depth)
        piece = smallest_piece(trace, screened) if trace is not None else 0
        if piece != 1:
            return None
        return (
            "its chunks or tasks hold one iteration, and a simd construct vectorises only "
            "inside one: the loop is not vectorised"
        )

    async def _run(
        self, sb: Sandbox, sample: Sample, plan: _Plan, metrics: dict[str, float]
    ) -> Score:
        expected, serial_trace = await self._serial_run(sb, sample, plan.observed, plan.depth)
        omp = toolchains.get("openmp")
        program = self._program(sample, plan.answer.lines, plan.observed, plan.depth)
        build = await omp.compile(
            sb, self._sources("candidate", program, plan.observed), output="candidate",
            extra_flags=list(LINK_FLAGS) if plan.observed else [],
            limits=Limits(wall_s=self.compile_timeout_s, memory_mb=2048, pids=64),
        )  # fmt: skip
        if (cls := classify_compile_result(build.exec_result)) is not None or not build.ok:
            cls = cls or FailureClass.with_detail(FailureClass.COMPILE_ERROR, "other")
            log = short_log(build.exec_result.stderr + build.exec_result.stdout)
            return _fail(cls, log, metrics)
        if plan.sharing or plan.unguarded:  # it compiles (compile errors come first), and races
            return _data_race(plan, metrics)
        wrong = FailureClass.WRONG_ANSWER
        if plan.serial_by_clauses:
            return _fail(f"{wrong}:not_parallel", f"{_one_line(plan.answer)}: "
                         f"{plan.serial_by_clauses} (decided without running)", metrics)  # fmt: skip
        if (why := await self._one_lane(sb, sample, plan)) is not None:
            return _fail(f"{wrong}:not_parallel", f"{_one_line(plan.answer)}: {why} "
                         "(decided without running)", metrics)  # fmt: skip
        timing_dependent = plan.screened is None or plan.screened.timing_dependent
        if plan.observed and plan.screened and serial_trace is not None and timing_dependent:
            handed = handed_share(serial_trace, plan.screened)
            metrics["handed_share"] = round(handed, 4)
            if handed > BUSIEST_SHARE:
                return _fail(f"{wrong}:not_parallel", f"{_one_line(plan.answer)}: its chunks or "
                             f"tasks hand one thread {handed:.1%} of the loop's iterations in "
                             f"one piece (at most {BUSIEST_SHARE:.0%}): the work is not shared "
                             "(decided without running)", metrics)  # fmt: skip
        metrics["functional_output_match"] = 0.0
        sharing_runs: list[bool] = []  # per observed run at 2+ threads: was the work shared
        for k, t in enumerate(self.threads):
            trace_file = f"omp_trace_{k}.txt"
            r = await omp.run(
                sb, "candidate", threads=t, limits=self._run_limits(),
                env={"OMP_DYNAMIC": "false", TRACE_ENV: trace_file},
            )  # fmt: skip
            if (cls := classify_exec(r)) is not None:
                return _fail(cls, f"run {k + 1} at {t} threads: {r.status}\n"
                             + short_log(r.stderr + r.stdout, 800), metrics)  # fmt: skip
            if r.stdout != expected:
                return _fail(
                    FailureClass.WRONG_ANSWER,
                    f"run {k + 1} at {t} threads printed {r.stdout.strip()[:200]!r}, "
                    f"the serial program prints {expected.strip()[:200]!r}",
                    metrics,
                )
            metrics[f"runtime_s@{t}t"] = round(r.wall_s, 4)
            if plan.observed and serial_trace is not None and plan.screened is not None:
                try:
                    text = await sb.read_text(trace_file, max_bytes=1 << 20)
                except (FileNotFoundError, PermissionError):
                    text = ""
                trace = parse_trace(text)
                if trace is None:
                    return _fail(f"{FailureClass.INFRA_ERROR}:observer",
                                 f"run {k + 1} at {t} threads left no observer trace",
                                 metrics)  # fmt: skip
                if trace.encounters:
                    metrics[f"observed_team@{t}t"] = float(
                        min(e.team_min for e in trace.encounters)
                    )
                    metrics[f"observed_workers@{t}t"] = float(
                        max(e.workers for e in trace.encounters))  # fmt: skip
                    metrics[f"observed_busiest@{t}t"] = round(busiest_share(trace), 4)
                verdict = judge_run(serial_trace, trace, threads=t,
                                    timing_dependent=timing_dependent)  # fmt: skip
                if verdict is not None:
                    return _fail(verdict[0], f"{_one_line(plan.answer)}: {verdict[1]}", metrics)
                if t >= 2:
                    sharing_runs.append(shared(trace))
        if sharing_runs and not any(sharing_runs):
            return _fail(f"{FailureClass.WRONG_ANSWER}:not_parallel",
                         f"{_one_line(plan.answer)}: in none of the {len(sharing_runs)} runs at "
                         "2+ threads did two threads share the loop's iterations (one thread "
                         "took every chunk)", metrics)  # fmt: skip
        metrics["functional_output_match"] = 1.0
        return self._judge(plan, metrics)

    def _judge(self, plan: _Plan, metrics: dict[str, float]) -> Score:
        wrong = FailureClass.WRONG_ANSWER
        answer, reference = plan.answer, plan.reference
        if reference is None and not answer.is_none:
            failed = _fail(f"{wrong}:unsafe_parallelism", "the loop carries a dependence and "
                           "must stay serial; no race showed in these runs, but it is one",
                           metrics)  # fmt: skip
            # "must stay serial" is the reference's answer; a repairing model hears the verdict
            failed.feedback = (f"{_one_line(answer)}: judged wrong, although the output "
                               "matched in these runs")  # fmt: skip
            return failed
        if reference is not None and answer.is_none:
            return _fail(f"{wrong}:missed_parallelism", "the loop needs a pragma: without "
                         "one it is correct but serial", metrics)  # fmt: skip
        note = f"output matches the serial program at threads {list(self.threads)}"
        if plan.observed:
            note += "; observed: work shared by a team of 2+ threads at every thread count >= 2"
        return Score(1.0, "pass", None, metrics, f"{_one_line(answer)}: {note}")
