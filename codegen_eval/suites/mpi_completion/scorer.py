"""Scorer of the mpi-completion suite.

1. Parse the answer (code, else the raw reply; a fenced block is fine): lines
   `N: MPI_Name(args);`. Each call is screened (screen.py): one call of an accepted
   communication function, each argument a side-effect-free expression over the program's
   own variables and constants that fits its parameter's role (buffers are data, statuses
   and requests are MPI_Status / MPI_Request variables). A refused construct anywhere in the
   answer (MPI_Abort, MPI_File_*, a call or assignment in an argument, a status used as a
   buffer, a cast to a status, ...) -> forbidden_construct:<what>; a malformed line is
   rejected and counted. Only the screened calls, re-rendered from their tokens, are
   inserted, each as a statement of a block (not as the body of an unbraced `if`/loop:
   forbidden_construct:placement). No valid call -> no_code. A call whose effect the
   output cannot show (barrier_timing's barriers: sample metadata required_calls) must be
   there, after a line where it does its job -> else wrong_answer:required_call.
2. Metrics (never the verdict): predicted and reference calls are paired by function name
   (closest lines first, then most equal arguments). function_precision/recall/f1 over the
   names, location_accuracy (pairs within `line_tolerance` lines / reference calls),
   argument_accuracy (equal normalized arguments / reference arguments), exact_match (all
   calls, lines within tolerance, arguments, and their order in the program).
3. Verdict (Score.value): the calls are inserted, the program is built with mpicc (pointer
   and integer conversions are errors) together with our run-time check (mpi_check.c) and
   run with mpirun at each np (default 2, 3 and 4) in the sandbox; every run must print
   exactly what the reference program (the removed calls put back, built the same way)
   prints at that np. A deadlock becomes timeout. The check aborts the job with one stderr
   line, read here as wrong_answer:<what>: a nonblocking request never completed
   (request_not_completed), an Isend buffer changed before completion (buffer_in_use),
   `rank`/`size` changed by a call (setup_overwritten); it can only fail a run. With
   $CODEGEN_MPI_LAUNCHER=srun (set by `codegen-eval run --executor slurm
   --slurm-mpi-steps`) the runs are Slurm steps instead, `srun --mpi=pmix` over the program
   the sandbox built, each rank confined by codegen_eval/executors/rank_confine.sh
   (docs/running-at-scale.md says what that keeps). The comparison happens here, in the
   scorer; the program's only channel to it is its output, which only the program's own
   printf writes: no accepted call can print, exit, or touch a file.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources

from codegen_eval.executors.mpi_step import (
    run_mpi_step,
    srun_steps_requested,
    step_dir,
)
from codegen_eval.failures import classify_compile_result, classify_exec, short_log
from codegen_eval.suites._cscreen import Forbidden, ProgramNames, ScreenSyntaxError, program_names
from codegen_eval.suites._csource import normalize_expr, parse_call_statement
from codegen_eval.types import Candidate, FailureClass, Sample, Score
from sandboxes import ExecResult, Limits, Sandbox, open_sandbox, toolchains

from .problems import MissingCall, insert_calls, insert_calls_at
from .screen import check_placement, screen_call, setup_variables, size_variables

# The run-time check linked into every program this scorer builds (mpi_check.c): a request
# never completed, an Isend buffer changed too early, or `rank`/`size` rewritten by a call
# ends the job with one stderr line.
CHECK_SOURCE = resources.files(__package__).joinpath("mpi_check.c").read_text()
CHECK_FILE, CHECK_OBJECT = "cge_mpi_check.c", "cge_mpi_check.o"
_CHECK_LINE = re.compile(
    r"^cge-mpi-check: (request_not_completed|buffer_in_use|setup_overwritten): (.*)$",
    re.MULTILINE,
)

_THINK = re.compile(r"<think>.*?(</think>|\Z)", re.DOTALL | re.IGNORECASE)
_ANSWER_LINE = re.compile(
    r"^\s*(?:[-*]\s*)?`?(?:line\s*)?(?P<line>\d+)\s*[:|)\]-]\s*`?(?P<call>MPI_.*?)`?\s*$",
    re.IGNORECASE,
)
# Open MPI inside the sandbox: no process_vm_readv single-copy, and idle ranks must yield
# the two cores instead of spinning (np=4 on 2 cores).
_MPI_ENV = {
    "OMPI_MCA_btl_vader_single_copy_mechanism": "none",
    "OMPI_MCA_mpi_yield_when_idle": "1",
}


@dataclass(frozen=True, slots=True)
class MpiAnswer:
    calls: tuple[MissingCall, ...]  # screened calls, canonical text
    rejected: tuple[str, ...]  # `N: MPI_...` lines that do not parse as one call
    forbidden: tuple[tuple[str, str, str], ...] = ()  # (line, failure class, why)


def parse_answer(
    text: str,
    max_line: int | None = None,
    names: ProgramNames | None = None,
    setup: frozenset[str] = frozenset(),
    sizes: frozenset[str] = frozenset(),
) -> MpiAnswer:
    """The answer lines of `text`. `names`: the program's names, to check identifiers and
    argument roles against (None: any identifier, as for the reference's own lines);
    `setup`: the variables its set-up calls fill (rank, size, ...), never buffers."""
    calls: list[MissingCall] = []
    rejected: list[str] = []
    forbidden: list[tuple[str, str, str]] = []
    for raw in _THINK.sub("", text or "").splitlines():
        m = _ANSWER_LINE.match(raw)
        if not m:
            continue
        n = int(m["line"])
        try:
            call = screen_call(m["call"], names, setup, sizes)
        except Forbidden as exc:
            forbidden.append((raw.strip(), exc.failure_class, str(exc)))
            continue
        except ScreenSyntaxError:
            rejected.append(raw.strip())
            continue
        if max_line is not None and n > max_line:
            rejected.append(raw.strip())
            continue
        calls.append(MissingCall(n, call.text))
    return MpiAnswer(tuple(calls), tuple(rejected), tuple(forbidden))


def _call_parts(text: str) -> tuple[str, tuple[str, ...]]:
    call = parse_call_statement(text)
    if call is None:  # reference calls always parse; a guard for hand-made samples
        return text.split("(", 1)[0].strip(), ()
    return call.name, call.normalized_args()


def _arg_score(a: tuple[str, ...], b: tuple[str, ...]) -> float:
    width = max(len(a), len(b))
    return sum(x == y for x, y in zip(a, b, strict=False)) / width if width else 1.0


def compare_calls(
    reference: tuple[MissingCall, ...], predicted: tuple[MissingCall, ...], tolerance: int = 1
) -> dict[str, float]:
    """Metrics of `predicted` against `reference` (see the module docstring)."""
    ref = [(c.after_line, *_call_parts(c.text)) for c in reference]
    pred = [(c.after_line, *_call_parts(c.text)) for c in predicted]
    options = []
    for i, (rl, rn, ra) in enumerate(ref):
        for j, (pl, pn, pa) in enumerate(pred):
            if rn == pn:
                options.append((abs(rl - pl), -_arg_score(ra, pa), i, j))
    used_r: set[int] = set()
    used_p: set[int] = set()
    located = 0
    args_total = 0.0
    exact_pairs = 0
    for dist, neg_args, i, j in sorted(options):
        if i in used_r or j in used_p:
            continue
        used_r.add(i)
        used_p.add(j)
        located += dist <= tolerance
        args_total += -neg_args
        exact_pairs += dist <= tolerance and neg_args == -1.0
    n_ref, n_pred, matched = len(ref), len(pred), len(used_r)
    # exact: the same calls in the same program order (two calls after one line are ordered)
    in_order = [sorted(x, key=lambda c: c[0]) for x in (ref, pred)]
    ordered = n_ref == n_pred and all(
        r[1] == p[1] and r[2] == p[2] and abs(r[0] - p[0]) <= tolerance
        for r, p in zip(*in_order, strict=True)
    )
    precision = matched / n_pred if n_pred else float(n_ref == 0)
    recall = matched / n_ref if n_ref else 1.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {
        "function_precision": round(precision, 4),
        "function_recall": round(recall, 4),
        "function_f1": round(f1, 4),
        "location_accuracy": round(located / n_ref, 4) if n_ref else 1.0,
        "argument_accuracy": round(args_total / n_ref, 4) if n_ref else 1.0,
        "exact_match": float(exact_pairs == n_ref and n_pred == n_ref and ordered),
        "n_reference_calls": float(n_ref),
        "n_predicted_calls": float(n_pred),
    }


def _missing_required(calls: tuple[MissingCall, ...], required: Sequence[Sequence]) -> str:
    """Why `calls` lack a call that the problem requires (metadata required_calls: [call,
    lo, hi], a call whose effect no output shows, made after a line in lo..hi); "" when
    none is missing. The reason names the function only, never the place or arguments."""
    free = [(c.after_line, _call_parts(c.text)) for c in calls]
    missing: dict[str, int] = {}
    for text, lo, hi in required:
        want = _call_parts(text)
        hit = next((f for f in free if f[1] == want and lo <= f[0] <= hi), None)
        if hit is None:
            missing[want[0]] = missing.get(want[0], 0) + 1
        else:
            free.remove(hit)
    return "; ".join(
        f"{n} {name} call(s) missing or out of place: the output cannot show what {name} "
        "does, so the scorer requires each one the program needs, where it does its job"
        for name, n in missing.items()
    )


def _fail(cls: str, explanation: str, metrics: dict[str, float]) -> Score:
    return Score(0.0, "fail", cls, metrics, explanation)


@functools.lru_cache(maxsize=256)
def _names(program: str) -> ProgramNames:
    return program_names(program)


@functools.lru_cache(maxsize=256)
def _setup(program: str) -> frozenset[str]:
    return setup_variables(program)


@functools.lru_cache(maxsize=256)
def _sizes(program: str) -> frozenset[str]:
    return size_variables(program)


# A call must have the types its prototype says: no pointer passed as a count, no int*
# passed as a status (the screen checks roles too; this is the compiler's own check).
STRICT_FLAGS = ("-Werror=incompatible-pointer-types", "-Werror=int-conversion",
                "-Werror=implicit-function-declaration")  # fmt: skip


class MpiCompletionScorer:
    """Scores samples made by `mpi_completion.make_sample` (files: program.c, the stripped
    program; target: the reference answer lines)."""

    def __init__(
        self,
        *,
        backend: str | None = None,
        nps: tuple[int, ...] = (2, 3, 4),
        line_tolerance: int = 1,
        run_timeout_s: float = 20.0,
        compile_timeout_s: float = 60.0,
    ) -> None:
        self.backend = backend
        self.nps = nps
        self.line_tolerance = line_tolerance
        self.run_timeout_s = run_timeout_s
        self.compile_timeout_s = compile_timeout_s
        self._expected: dict[tuple[str, int], str] = {}
        self._locks: dict[str, asyncio.Lock] = {}
        self._check_obj: bytes | None = None

    async def score(self, sample: Sample, candidate: Candidate) -> Score:
        stripped = sample.files["program.c"]
        max_line = len(stripped.splitlines())
        names, setup, sizes = _names(stripped), _setup(stripped), _sizes(stripped)
        answer = parse_answer(candidate.code, max_line, names, setup, sizes)
        if not answer.calls and not answer.forbidden:
            answer = parse_answer(candidate.raw, max_line, names, setup, sizes)
        reference = parse_answer(sample.target).calls
        if answer.forbidden:
            line, cls, why = answer.forbidden[0]
            return _fail(cls, f"{line[:160]}: {why}", {"forbidden_lines":
                                                      float(len(answer.forbidden))})  # fmt: skip
        if not answer.calls:
            why = f"; rejected lines: {list(answer.rejected)[:3]}" if answer.rejected else ""
            return _fail(FailureClass.NO_CODE, "no 'N: MPI_Call(args);' line" + why, {})
        metrics = compare_calls(reference, answer.calls, self.line_tolerance)
        metrics["rejected_lines"] = float(len(answer.rejected))
        if why := _missing_required(answer.calls, sample.metadata.get("required_calls", ())):
            return _fail(FailureClass.with_detail(FailureClass.WRONG_ANSWER, "required_call"),
                         why, metrics)  # fmt: skip
        program, where = insert_calls_at(stripped, answer.calls)
        try:
            check_placement(program, where, [c.text for c in answer.calls])
        except Forbidden as exc:
            return _fail(exc.failure_class, str(exc), metrics)
        async with open_sandbox(self.backend) as sb:
            return await self._run(sb, sample, insert_calls(stripped, reference), program,
                                   metrics)  # fmt: skip

    def _limits(self) -> Limits:
        return Limits(wall_s=self.run_timeout_s, memory_mb=2048, pids=512)

    async def _launch(
        self, sb: Sandbox, artifact: str, np: int, metrics: dict[str, float] | None = None
    ) -> ExecResult:
        """mpirun in the sandbox (default), or a Slurm step with pmix (srun_steps_requested)."""
        if not srun_steps_requested():
            return await toolchains.get("mpi").run(
                sb, artifact, np=np, limits=self._limits(), env=_MPI_ENV
            )
        program = await sb.read_file(artifact)
        step = await run_mpi_step(
            program, np, limits=self._limits(), env=_MPI_ENV, workdir=step_dir()
        )
        if metrics is not None and step.granted is not None:
            metrics.update(step.granted.metrics(f"np{np}"))
        return step.result

    async def _check_object(self, sb: Sandbox) -> bytes:
        """mpi_check.c compiled once per scorer (it costs as much as a problem's own build),
        in a sample's sandbox before any program runs there. No lock (the scorer outlives
        event loops): samples that start together each compile it, the same bytes."""
        if self._check_obj is None:
            build = await toolchains.get("mpi").compile(
                sb, {CHECK_FILE: CHECK_SOURCE}, output=CHECK_OBJECT,
                extra_flags=[*STRICT_FLAGS, "-c"],
                limits=Limits(wall_s=self.compile_timeout_s, memory_mb=2048, pids=128),
            )  # fmt: skip
            if not build.ok:
                raise RuntimeError("mpi_check.c does not compile:\n" + build.exec_result.stderr)
            self._check_obj = await sb.read_file(CHECK_OBJECT)
        return self._check_obj

    async def _build(self, sb: Sandbox, src: str, name: str):
        mpi = toolchains.get("mpi")
        check = await self._check_object(sb)
        return await mpi.compile(
            sb, {f"{name}.c": src, CHECK_OBJECT: check}, output=name,
            extra_flags=[*STRICT_FLAGS, CHECK_OBJECT],
            limits=Limits(wall_s=self.compile_timeout_s, memory_mb=2048, pids=128),
        )  # fmt: skip

    async def expected_output(self, sb: Sandbox, reference_src: str, np: int) -> str:
        """What the reference program prints at `np` ranks (built and run here, cached)."""
        key = hashlib.sha256(reference_src.encode()).hexdigest()
        lock = self._locks.setdefault(key, asyncio.Lock())
        async with lock:
            if (key, np) not in self._expected:
                build = await self._build(sb, reference_src, "reference")
                if not build.ok:
                    raise RuntimeError("reference program does not compile:\n"
                                       + build.exec_result.stderr)  # fmt: skip
                for n in self.nps:
                    r = await self._launch(sb, "reference", n)
                    if not r.ok:
                        raise RuntimeError(f"reference program failed at np={n}: {r.status}\n"
                                           + r.stderr[-1500:])  # fmt: skip
                    self._expected[(key, n)] = r.stdout
            return self._expected[(key, np)]

    async def _run(
        self, sb: Sandbox, sample: Sample, reference_src: str, program: str,
        metrics: dict[str, float],
    ) -> Score:  # fmt: skip
        expected = {np: await self.expected_output(sb, reference_src, np) for np in self.nps}
        build = await self._build(sb, program, "candidate")
        if (cls := classify_compile_result(build.exec_result)) is not None or not build.ok:
            cls = cls or FailureClass.with_detail(FailureClass.COMPILE_ERROR, "other")
            log = short_log(build.exec_result.stderr + build.exec_result.stdout)
            return _fail(cls, log, metrics)
        for np in self.nps:
            r = await self._launch(sb, "candidate", np, metrics)
            # Before the exit status: the check's own line names why the job was aborted.
            if m := _CHECK_LINE.search(r.stderr):
                return _fail(FailureClass.with_detail(FailureClass.WRONG_ANSWER, m[1]),
                             f"np={np}: {m[2]}", metrics)  # fmt: skip
            if (cls := classify_exec(r)) is not None:
                hint = " (a deadlock?)" if cls.startswith(FailureClass.TIMEOUT) else ""
                return _fail(cls, f"np={np}: {r.status}{hint}\n"
                             + short_log(r.stderr + r.stdout, 800), metrics)  # fmt: skip
            if r.stdout != expected[np]:
                return _fail(
                    FailureClass.WRONG_ANSWER,
                    f"np={np}: printed {r.stdout.strip()[:200]!r}, the reference prints "
                    f"{expected[np].strip()[:200]!r}",
                    metrics,
                )
            metrics[f"runtime_s@np{np}"] = round(r.wall_s, 4)
        return Score(
            1.0, "pass", None, metrics, f"output matches the reference at np={list(self.nps)}"
        )


__all__ = ["MpiAnswer", "MpiCompletionScorer", "compare_calls", "normalize_expr", "parse_answer"]
