"""Scorer of the omp-pragma suite.

1. The answer is read from the candidate (code, else the raw reply): the first run of
   `#pragma omp` lines (continuations joined), or "none". Nothing else from the answer is
   ever compiled, so a candidate cannot print a forged result: it can only change how the
   loop is scheduled. Anything else -> no_code.
2. Clause metrics: the answer and the reference are parsed (pragma.py) and compared
   clause by clause (precision/recall per kind, exact_match). They never decide the verdict.
3. Functional verdict (Score.value): the scorer builds the serial program itself (marker
   removed, compiled without -fopenmp) and records its output; the candidate's program is
   compiled with gcc -fopenmp and run at each thread count of `threads` (default 1, 2, 4, 2:
   four threads on two cores interleave more, and repeated runs catch races that one run
   misses). Every run must print exactly the serial output. Then the answer must do the job
   the reference does: a parallel reference needs a parallel answer that is not serialised
   (if(0), num_threads(1)); a "none" reference needs "none" (a race that happened not to
   show in these runs is still a race); a pragma reference needs a pragma.
"""

from __future__ import annotations

import asyncio
import hashlib
import re
from dataclasses import dataclass

from codegen_eval.failures import classify_compile_result, classify_exec, short_log
from codegen_eval.types import Candidate, FailureClass, Sample, Score
from sandboxes import Limits, Sandbox, open_sandbox, toolchains

from .pragma import OmpPragma, PragmaSyntaxError, compare, logical_lines, parse_pragma

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
    prose = re.sub(r"^\s*(`{3,}|~{3,}).*$", "", body, flags=re.MULTILINE)
    if _NONE_ANSWER.search(prose):
        return OmpAnswer(())
    return None


def _fail(cls: str, explanation: str, metrics: dict[str, float]) -> Score:
    return Score(0.0, "fail", cls, metrics, explanation)


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
        self._serial: dict[str, str] = {}
        self._locks: dict[str, asyncio.Lock] = {}

    async def score(self, sample: Sample, candidate: Candidate) -> Score:
        answer = parse_answer(candidate.code) or parse_answer(candidate.raw)
        if answer is None:
            return _fail(FailureClass.NO_CODE, "no '#pragma omp' line and no 'none'", {})
        implicit = frozenset(sample.metadata.get("loop_vars", ()))
        reference = None if sample.target == "none" else parse_pragma(sample.target)
        cand: OmpPragma | None = None
        metrics: dict[str, float] = {}
        if not answer.is_none:
            try:
                cand = parse_pragma("\n".join(answer.lines), implicit_private=implicit)
            except PragmaSyntaxError:
                cand = None  # gcc still judges it; the clause metrics count it as all wrong
        if answer.is_none or cand is not None:
            metrics.update(compare(reference, cand, implicit))
        else:
            metrics.update(
                directive_match=0.0, clause_precision=0.0, clause_recall=0.0,
                clause_f1=0.0, exact_match=0.0, pragma_parse_error=1.0,
            )  # fmt: skip
        async with open_sandbox(self.backend) as sb:
            return await self._run(sb, sample, answer, reference, cand, metrics)

    def _program(self, sample: Sample, lines: tuple[str, ...]) -> str:
        src = sample.files["program.c"].splitlines()
        k = int(sample.metadata["marker_line"]) - 1
        indent = str(sample.metadata.get("indent", ""))
        body = [indent + ln for ln in lines] or [""]
        return "\n".join([*src[:k], *body, *src[k + 1 :]]) + "\n"

    async def serial_output(self, sb: Sandbox, sample: Sample) -> str:
        """Output of the program without the pragma, compiled without OpenMP (so the other
        pragmas are ignored too): the loop's sequential semantics. Cached per source."""
        src = self._program(sample, ())
        key = hashlib.sha256(src.encode()).hexdigest()
        lock = self._locks.setdefault(key, asyncio.Lock())
        async with lock:
            if key in self._serial:
                return self._serial[key]
            c = toolchains.get("c")
            build = await c.compile(
                sb, {"serial.c": src}, output="serial",
                extra_flags=["-Wno-unknown-pragmas"],
                limits=Limits(wall_s=self.compile_timeout_s, memory_mb=2048, pids=64),
            )  # fmt: skip
            if not build.ok:
                raise RuntimeError(f"serial program of {sample.id} does not compile:\n"
                                   f"{build.exec_result.stderr}")  # fmt: skip
            r = await c.run(sb, "serial", limits=self._run_limits())
            if not r.ok:
                raise RuntimeError(f"serial program of {sample.id} failed: {r.status}")
            self._serial[key] = r.stdout
            return r.stdout

    def _run_limits(self) -> Limits:
        return Limits(wall_s=self.run_timeout_s, memory_mb=1024, pids=64)

    async def _run(
        self,
        sb: Sandbox,
        sample: Sample,
        answer: OmpAnswer,
        reference: OmpPragma | None,
        cand: OmpPragma | None,
        metrics: dict[str, float],
    ) -> Score:
        expected = await self.serial_output(sb, sample)
        omp = toolchains.get("openmp")
        build = await omp.compile(
            sb, {"candidate.c": self._program(sample, answer.lines)}, output="candidate",
            limits=Limits(wall_s=self.compile_timeout_s, memory_mb=2048, pids=64),
        )  # fmt: skip
        if (cls := classify_compile_result(build.exec_result)) is not None or not build.ok:
            cls = cls or FailureClass.with_detail(FailureClass.COMPILE_ERROR, "other")
            log = short_log(build.exec_result.stderr + build.exec_result.stdout)
            return _fail(cls, log, metrics)
        metrics["functional_output_match"] = 0.0
        for k, t in enumerate(self.threads):
            r = await omp.run(
                sb, "candidate", threads=t, limits=self._run_limits(),
                env={"OMP_DYNAMIC": "false"},
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
        metrics["functional_output_match"] = 1.0
        return self._judge(answer, reference, cand, metrics)

    def _judge(
        self,
        answer: OmpAnswer,
        reference: OmpPragma | None,
        cand: OmpPragma | None,
        metrics: dict[str, float],
    ) -> Score:
        wrong = FailureClass.WRONG_ANSWER
        if reference is None and not answer.is_none:
            return _fail(f"{wrong}:unsafe_parallelism", "the loop carries a dependence and "
                         "must stay serial; no race showed in these runs, but it is one",
                         metrics)  # fmt: skip
        if reference is not None and answer.is_none:
            return _fail(f"{wrong}:missed_parallelism", "the loop needs a pragma: without "
                         "one it is correct but serial", metrics)  # fmt: skip
        if reference is not None and reference.parallel:
            if cand is None or not cand.parallel or cand.serializing:
                return _fail(f"{wrong}:not_parallel", "the answer does not run the loop "
                             "in parallel (no parallel construct, if(0) or num_threads(1))",
                             metrics)  # fmt: skip
        note = f"output matches the serial program at threads {list(self.threads)}"
        return Score(1.0, "pass", None, metrics, f"{answer.text}: {note}")
