"""Inspect-like types: a Task is a dataset of Samples, a Solver that produces candidates and a
Scorer that judges them in a sandbox. The verdict is decided by the scorer outside the sandbox,
never by trusting text the candidate prints.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Protocol, runtime_checkable


@dataclass(frozen=True, slots=True)
class Sample:
    id: str
    input: str  # the prompt given to the model
    target: str = ""  # reference solution (source text), if the suite has one
    metadata: dict[str, Any] = field(default_factory=dict)  # language, variant, np, threads...
    files: dict[str, str] = field(default_factory=dict)  # harness files the scorer needs


@dataclass(frozen=True, slots=True)
class Candidate:
    """One generated answer to a sample. `index` is the sample index in 0..n-1."""

    sample_id: str
    index: int
    code: str  # the extracted code the scorer will build
    raw: str = ""  # the model's full reply
    metadata: dict[str, Any] = field(default_factory=dict)  # model, temperature, seed, tokens...


class ScoreStatus(StrEnum):
    """What a scorer concluded. A `str` subclass: it compares equal to, and serializes as,
    the plain strings older logs carry (`"pass"`), so those logs read unchanged."""

    PASS = "pass"  # the candidate does what the sample asks
    FAIL = "fail"  # it does not (the failure class says how)
    SKIPPED = "skipped"  # it could not be judged here (no GPU, an excluded problem)
    ERROR = "error"  # the scoring machinery failed, not the candidate (infra_error)


@dataclass(slots=True)
class Score:
    value: float  # 1.0 pass, 0.0 fail (partial credit allowed by some suites)
    status: ScoreStatus  # a plain "pass"/"fail"/... is accepted and converted
    failure_class: str | None = None  # e.g. "compile_error:syntax", "wrong_answer", "timeout"
    metrics: dict[str, float] = field(default_factory=dict)  # e.g. runtime_s, speedup
    explanation: str = ""
    # What a model repairing the candidate may be shown; None: the explanation. A scorer sets
    # it where the explanation names what it read off the reference answer rather than
    # observed of the candidate's own build and runs (omp-pragma: "needs atomic or critical"),
    # so that feedback does not hand a repair agent part of the answer plain sampling lacks.
    feedback: str | None = None
    # Structured, JSON-serializable details a suite wants in the log next to the verdict
    # (the kernel gym's crash titles and localization, a reader's upstream verdict), so
    # that nobody packs JSON into `explanation`.
    metadata: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # ValueError on a status outside the vocabulary: a typo fails where it is made.
        self.status = ScoreStatus(self.status)

    @property
    def model_feedback(self) -> str:
        return self.explanation if self.feedback is None else self.feedback


@runtime_checkable
class Solver(Protocol):
    async def solve(self, sample: Sample, n: int) -> Sequence[Candidate]: ...


@runtime_checkable
class IncrementalSolver(Protocol):
    """A solver that can make candidate `index` alone: the runner then generates only the
    indices a resumed run lacks, and scores each candidate the moment it exists. A solver
    without it (an agent that works on all n at once) is called once through `solve`."""

    async def solve_one(self, sample: Sample, index: int) -> Candidate: ...


@runtime_checkable
class Scorer(Protocol):
    async def score(self, sample: Sample, candidate: Candidate) -> Score: ...


@runtime_checkable
class Executor(Protocol):
    """Where candidates are scored when not in this process (codegen_eval.executors): an
    async context manager entered for the whole run."""

    # set by the runner: called with a one-line status whenever the executor's state changes
    on_status: Callable[[str], None] | None

    async def __aenter__(self) -> Executor: ...

    async def __aexit__(self, *exc: object) -> None: ...

    async def score(
        self, task: Task, sample: Sample, candidate: Candidate, key: str
    ) -> tuple[Score, dict[str, Any]]:
        """The candidate's score and what to record of where it ran (node, job id,
        attempts): the runner puts that in the score record as `executor`."""
        ...

    def status_line(self) -> str: ...


@dataclass(frozen=True, slots=True)
class ReaderFacts:
    """What a reader of a public benchmark learned about the user's copy beyond its
    problems; the CLI prints it beside the run's summary."""

    # records in the file that was read (CVDP's JSONL), problems or not
    records: int | None = None
    # {record id: why}: records that are not problems of this task (CVDP's other workflows
    # and categories), so not in its denominator either (unlike `Task.excluded`)
    not_read: Mapping[str, str] = field(default_factory=dict)
    # VerilogEval: the problems upstream discussed as broken, and whether this task excludes
    # them: {"applied": bool, "problems": {id: why}}
    policy: Mapping[str, Any] | None = None


# Keys users put in Task.metadata before they were fields: moved on construction with a
# DeprecationWarning (supported for one version; see CHANGELOG.md).
_TASK_KEYS = ("excluded", "log_header")
_READER_KEYS = ("records", "not_read", "policy")


@dataclass(slots=True)
class Task:
    """A suite's problems, how to answer them and how to judge an answer.

    A field with a wrong name is a TypeError, which is the point of fields: the runner and
    the CLI act on these, and a misspelt metadata key used to be silently ignored."""

    name: str
    dataset: Sequence[Sample]
    scorer: Scorer
    solver: Solver | None = None
    epochs: int = 1
    # Free-form facts for people and the suite's own code (source path, language, counts);
    # no shared code reads them.
    metadata: dict[str, Any] = field(default_factory=dict)
    # {sample id: reason}: problems left out on purpose (the reference fails here, a known
    # upstream bug). Not in `dataset`; the runner logs one `excluded` record per entry, and
    # reports count them as failures in the upstream-comparable totals.
    excluded: Mapping[str, str] = field(default_factory=dict)
    # What readers of the log must know to read this suite's numbers (ParEval's verdict mode
    # and core cap): the run's header carries it under `suite_notes[name]`, the CLI prints it.
    log_header: Mapping[str, Any] | None = None
    reader_facts: ReaderFacts | None = None

    def __post_init__(self) -> None:
        old = [k for k in (*_TASK_KEYS, *_READER_KEYS) if k in self.metadata]
        if old:
            warnings.warn(
                f"Task {self.name!r}: metadata key(s) {', '.join(map(repr, old))} are Task "
                "fields now (excluded, log_header, reader_facts=ReaderFacts(records, not_read, "
                "policy)); the metadata spelling is read for one more version",
                DeprecationWarning,
                stacklevel=3,  # the caller of Task(...), past the generated __init__
            )
            self._move_metadata_keys()
        if not isinstance(self.excluded, Mapping):
            raise TypeError(
                f"Task {self.name!r}: excluded must map sample id to reason, "
                f"not {type(self.excluded).__name__}"
            )

    def _move_metadata_keys(self) -> None:
        meta = dict(self.metadata)
        if "excluded" in meta:
            self.excluded = {**dict(meta.pop("excluded") or {}), **self.excluded}
        if "log_header" in meta:
            note = meta.pop("log_header")
            self.log_header = self.log_header if self.log_header is not None else note
        facts = {k: meta.pop(k) for k in _READER_KEYS if k in meta}
        if facts and self.reader_facts is None:
            facts["not_read"] = dict(facts.get("not_read") or {})
            self.reader_facts = ReaderFacts(**facts)
        self.metadata = meta


class FailureClass(StrEnum):
    """The vocabulary of `Score.failure_class`. A class may carry a detail after a colon
    (``compile_error:undeclared``, ``runtime_crash:SIGSEGV``); reports group by the part
    before the colon and show the detail in a second column."""

    NO_CODE = "no_code"  # nothing could be extracted from the model's reply
    COMPILE_ERROR = "compile_error"  # details: syntax, undeclared, type, missing_include, other
    LINK_ERROR = "link_error"
    RUNTIME_CRASH = "runtime_crash"  # detail: signal name, e.g. SIGSEGV
    NONZERO_EXIT = "nonzero_exit"
    WRONG_ANSWER = "wrong_answer"
    TIMEOUT = "timeout"
    RESOURCE_LIMIT = "resource_limit"  # detail: memory, output, pids, file_size
    SANITIZER = "sanitizer"  # detail: asan, ubsan, tsan...
    SIM_MISMATCH = "sim_mismatch"
    LINT_ERROR = "lint_error"
    SKIPPED_NO_GPU = "skipped_no_gpu"
    INFRA_ERROR = "infra_error"  # the sandbox failed, not the candidate
    # The candidate tried to reach the harness: forge a verdict, read a secret, tamper with
    # the trusted side's files or processes (detail: what was seen, e.g. bad_protocol).
    TAMPER = "tamper"
    # The candidate uses a construct the suite does not allow (a Verilog system task, a
    # statement expression in an OpenMP clause); detail: the construct.
    FORBIDDEN_CONSTRUCT = "forbidden_construct"

    @staticmethod
    def with_detail(cls_name: str, detail: str | None) -> str:
        return f"{cls_name}:{detail}" if detail else str(cls_name)
