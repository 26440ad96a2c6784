"""Test-only suites whose scorer records the sandbox backend it opened, and what it saw of
$CODEGEN_SANDBOX, in `Score.metadata` (the log's `score_metadata`). Loaded with
`--plugin tests.codegen_eval.backend_probe`.

"backend-probe" takes `backend` in its factory (how the built-in suites get it);
"backend-probe-implicit" takes nothing, as a user's plugin may not, and its scorer calls
`open_sandbox()` with no backend (the run's `use_backend` block decides).
"""

from __future__ import annotations

import os

from codegen_eval.registry import register_suite
from codegen_eval.types import Candidate, Sample, Score, Task
from sandboxes import BACKEND_ENV, Limits, open_sandbox


class BackendProbeScorer:
    def __init__(self, backend: str | None = None) -> None:
        self.backend = backend

    async def score(self, sample: Sample, candidate: Candidate) -> Score:
        async with open_sandbox(self.backend) as sb:
            r = await sb.exec(["true"], limits=Limits(wall_s=30))
            opened = sb.backend
        seen = {"backend": opened, "env": os.environ.get(BACKEND_ENV)}
        if not r.ok:
            return Score(0.0, "fail", "runtime_error", explanation=r.status, metadata=seen)
        return Score(1.0, "pass", metadata=seen)


def probe_task(name: str, backend: str | None = None) -> Task:
    sample = Sample(id=f"{name}-0", input="answer anything", target="anything")
    return Task(name=name, dataset=[sample], scorer=BackendProbeScorer(backend))


@register_suite("backend-probe", "Test-only: records the backend its factory was given")
def _explicit(backend: str | None = None) -> Task:
    return probe_task("backend-probe", backend)


@register_suite("backend-probe-implicit", "Test-only: opens the run's backend, takes none")
def _implicit() -> Task:
    return probe_task("backend-probe-implicit")


def worker_tasks() -> list[Task]:
    """A slurm worker's task factory (the spec's "module:function") that names no backend."""
    return [probe_task("backend-probe-implicit")]
