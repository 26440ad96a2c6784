"""CVDP (NVlabs/cvdp_benchmark) non-agentic code-generation problems from a JSONL file the
user has, scored by running each problem's own cocotb harness in our sandbox.

`cvdp(path)` reads the records (`records.py`), runs every reference once on this machine
and excludes, with the measured reason, the problems whose reference fails here (a
commercial simulator, a construct our Icarus cannot compile); `register_cvdp(path)`
registers it as a suite for `codegen-eval run --cvdp FILE.jsonl`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from codegen_eval.readers._pick import Problems, pick_problems
from codegen_eval.registry import register_suite
from codegen_eval.types import ReaderFacts, Task

from .records import CvdpFormatError, ReadResult, read_cvdp
from .scorer import CvdpScorer, answer_files, measured_exclusions


def cvdp(
    path: str | Path,
    *,
    problems: Problems = None,
    limit: int | None = None,
    calibrate: bool = True,
    backend: str | None = None,
    wall_s: float = 300.0,
) -> Task:
    """A Task over the non-agentic code-generation records of a CVDP JSONL file.
    task.excluded is {id: reason} for the problems whose reference fails here;
    task.reader_facts.not_read the records of other workflows and categories."""
    read = read_cvdp(path)
    samples, _ = pick_problems(read.samples, {}, problems, limit)
    scorer = CvdpScorer(backend=backend, wall_s=wall_s)
    measured: dict[str, str] = {}
    if calibrate and samples:
        measured = measured_exclusions(scorer, samples)
        samples = [s for s in samples if s.id not in measured]
    return Task(
        name="cvdp",
        dataset=samples,
        scorer=scorer,
        metadata={"language": "verilog", "source": str(path), "measured_failures": measured},
        # code-generation problems that cannot be scored here (the reference fails)
        excluded=dict(measured),
        # records of other workflows (agentic, code comprehension): not problems of this
        # task, so not in its denominator either
        reader_facts=ReaderFacts(records=read.total, not_read=dict(read.excluded)),
    )


def register_cvdp(path: str | Path, name: str = "cvdp", **defaults: Any) -> str:
    @register_suite(name, f"CVDP code generation from {path}")
    def _factory(**options: Any) -> Task:
        return cvdp(path, **{**defaults, **options})

    return name


__all__ = [
    "CvdpFormatError",
    "CvdpScorer",
    "ReadResult",
    "answer_files",
    "cvdp",
    "read_cvdp",
    "register_cvdp",
]
