"""The kernel-crash gym on Slurm: each (bug, patch) is one job (build + boot + reproduce).

    rows = await bench_on_slurm(bugs, gym=GymOptions(runs=3), slurm=SlurmOptions(...))
    steps = await score_patches_on_slurm([(bug, patch), ...], gym=..., slurm=...)

No second scheduler: the pairs become a codegen_eval Task (one Sample per bug, the patch as
the Candidate's code) and go through the same SlurmExecutor as `codegen-eval run --executor
slurm` (batching, streamed result files, retries of jobs the cluster killed, infra_error with
the Slurm state). On the compute node the worker rebuilds the gym from GymOptions and runs the
gym's own PatchScorer; the StepResult comes back whole, as JSON in the Score's explanation.

Build cache: `cache_root()` ($KERNELGYM_CACHE, else ~/.cache/codegen-lab/kernelgym, for
root /var/cache/codegen-lab/kernelgym, on each node). By default every node builds into its
own cache (modules, reproducers, patched kernels rebuilt per node, once). Pointing
$KERNELGYM_CACHE at shared storage (the jobs inherit the submitter's environment) shares
builds between nodes; two jobs building the same key at the same moment both build it. A
`%n` in $KERNELGYM_CACHE is the node's name on the compute node (`/scratch/kgym-%n`): a cache
per node on storage they all see.

Each bug job asks for `cpus` CPUs (a kernel build wants them all) and scores one pair at a
time; one pair per job (batch_size 1) keeps a slow build from holding other bugs back.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from codegen_eval.cache import code_hash
from codegen_eval.errors import CodegenEvalError
from codegen_eval.executors.slurm import SlurmExecutor, SlurmOptions
from codegen_eval.kernelgym.kbench import BugSetupError, UnsupportedBug
from codegen_eval.kernelgym.records import BugRecord, bundled_bugs, load_records
from codegen_eval.kernelgym.runner import ReproConfig
from codegen_eval.kernelgym.scoring import Outcome, PatchScorer, StepResult, bench_row
from codegen_eval.types import Candidate, Sample, Score, Task

__all__ = [
    "GymOptions",
    "SlurmStepError",
    "SlurmStepScorer",
    "bench_on_slurm",
    "gym_tasks",
    "score_patches_on_slurm",
]

SUITE = "kernel-gym"


@dataclass(frozen=True)
class GymOptions:
    """What the compute node needs to rebuild the gym (JSON-able: it travels in the batch)."""

    bugs: str | None = None  # --bugs (None: the bundled bugs)
    runs: int = 3
    accel: str = "auto"
    linux_tree: str | None = None
    config_text: str | None = None  # --config's text, for kBench records
    repro_text: str | None = None  # --repro's text
    cpus: int = 1  # CPUs per bug job


def _load(opts: GymOptions) -> list[BugRecord]:
    bugs = load_records(opts.bugs) if opts.bugs else bundled_bugs()
    return [
        b.with_inputs(kernel_config=opts.config_text, c_reproducer=opts.repro_text)
        if b.kind == "kbench"
        else b
        for b in bugs
    ]


class _GymScorer:
    """The gym's PatchScorer behind codegen_eval's Scorer protocol: a StepResult as a Score."""

    def __init__(self, opts: GymOptions, bugs: dict[str, BugRecord]) -> None:
        self.scorer = PatchScorer(
            ReproConfig(runs=opts.runs, accel=opts.accel), linux_tree=opts.linux_tree
        )
        self.bugs = bugs

    async def score(self, sample: Sample, candidate: Candidate) -> Score:
        expand_node_cache()
        bug = self.bugs[sample.id]
        try:
            step = await self.scorer.score(bug, candidate.code)
        except BugSetupError as exc:  # the bug cannot run here: said, not a crash
            payload = {"error": str(exc), "unsupported": isinstance(exc, UnsupportedBug)}
            return Score(0.0, "error", "infra_error", explanation=json.dumps(payload))
        value = 1.0 if step.outcome is Outcome.RESOLVED else 0.0
        return Score(
            value,
            "pass" if value else "fail",
            None if value else str(step.outcome),
            {"build_s": step.build_s, "run_s": step.run_s},
            json.dumps({"step": step.to_dict()}),
        )


def expand_node_cache() -> None:
    """On a compute node: a `%n` in $KERNELGYM_CACHE becomes this node's name."""
    value = os.environ.get("KERNELGYM_CACHE", "")
    if "%n" in value:
        node = os.environ.get("SLURMD_NODENAME") or socket.gethostname()
        os.environ["KERNELGYM_CACHE"] = value.replace("%n", node)


def gym_tasks(options: dict[str, Any]) -> list[Task]:
    """The task spec's factory (also run on the compute node): one Sample per bug."""
    if os.environ.get("SLURMD_NODENAME"):  # on a compute node, before any builder is made
        expand_node_cache()
    opts = GymOptions(**options)
    bugs = {b.id: b for b in _load(opts)}
    samples = [
        Sample(b.id, "", metadata={"suite": SUITE, "tier": b.tier, "cpus": opts.cpus})
        for b in bugs.values()
    ]
    return [Task(SUITE, samples, _GymScorer(opts, bugs))]


def _step_from(score: Score) -> StepResult | dict[str, Any]:
    payload = json.loads(score.explanation) if score.explanation.startswith("{") else {}
    if "step" in payload:
        step = dict(payload["step"])
        step["outcome"] = Outcome(step["outcome"])
        return StepResult(**step)
    return payload or {"error": score.explanation, "unsupported": False}


StepOutcome = tuple[StepResult | dict[str, Any], dict[str, Any]]


async def score_patches_on_slurm(
    pairs: Sequence[tuple[BugRecord, str]],
    *,
    gym: GymOptions,
    slurm: SlurmOptions,
    on_result: Callable[[int, StepResult | dict[str, Any], dict[str, Any]], None] | None = None,
) -> list[StepOutcome]:
    """Score each (bug, patch) as a Slurm job: (StepResult, executor info) per pair, in order.
    A pair whose jobs the cluster kept killing comes back as {"error": ..., "slurm_state":
    ...} instead of a StepResult (never as a failed patch). This is the seam for the kernel
    agent's `bench`: its candidate patches go in, the gym's verdicts come out. `on_result(i,
    step, info)` sees each pair as its job comes back (progress lines that name the job)."""
    spec = {
        "factory": "codegen_eval.kernelgym.distributed:gym_tasks",
        "kwargs": {"options": asdict(gym)},
    }
    task = gym_tasks(asdict(gym))[0]
    by_id = {s.id: s for s in task.dataset}
    missing = [bug.id for bug, _ in pairs if bug.id not in by_id]
    if missing:
        raise ValueError(f"bugs not in the gym's records: {', '.join(missing)}")
    slurm = SlurmOptions(**{**asdict(slurm), "batch_size": 1, "cpus_per_task": gym.cpus})
    executor = SlurmExecutor(slurm, spec)
    await asyncio.to_thread(executor.check)

    async def one(i: int, bug: BugRecord, patch: str) -> StepOutcome:
        key = code_hash(SUITE, bug.id, f"{i}\0{patch}")
        score, info = await executor.score(task, by_id[bug.id], Candidate(bug.id, i, patch), key)
        step = _step_from(score)
        if isinstance(step, dict) and info.get("state"):
            step = {"error": score.explanation, "unsupported": False, "slurm_state": info["state"]}
        if on_result is not None:
            on_result(i, step, info)
        return step, info

    async with executor:
        return list(await asyncio.gather(*(one(i, b, p) for i, (b, p) in enumerate(pairs))))


def job_line(step: StepResult | dict[str, Any], info: dict[str, Any]) -> str:
    """`reproduced (Slurm job 17 on node1)`: a step's outcome and the job that ran it."""
    outcome = step.outcome if isinstance(step, StepResult) else f"error: {step.get('error')}"
    where = f" on {info['node']}" if info.get("node") else ""
    tries = f", attempt {info['attempts']}" if info.get("attempts", 1) > 1 else ""
    state = f" {info['state']}" if info.get("state") else ""
    return f"{outcome} (Slurm job {info.get('job_id') or '-'}{state}{where}{tries})"


async def bench_on_slurm(
    bugs: Sequence[BugRecord],
    *,
    gym: GymOptions,
    slurm: SlurmOptions,
    patches: str = "developer",
    progress: Callable[[str], None] | None = None,
) -> list[dict[str, Any]]:
    """`kernel-gym bench` with every baseline and fix as its own job, all in flight at once;
    the rows have the shape of the local bench's, plus the job that ran each step.
    `progress` gets one line per step as its job comes back, naming the job."""
    pairs: list[tuple[BugRecord, str]] = [(b, "") for b in bugs]
    if patches == "developer":
        pairs += [(b, b.developer_patch) for b in bugs]
    done = 0

    def said(i: int, step: StepResult | dict[str, Any], info: dict[str, Any]) -> None:
        nonlocal done
        done += 1
        bug, patch = pairs[i]
        what = "developer fix" if patch else "baseline"
        if progress is not None:
            progress(f"[{done}/{len(pairs)}] {bug.id}: {what} {job_line(step, info)}")

    results = await score_patches_on_slurm(pairs, gym=gym, slurm=slurm, on_result=said)
    rows: list[dict[str, Any]] = []
    for i, bug in enumerate(bugs):
        base, base_info = results[i]
        if isinstance(base, dict):
            rows.append(bench_row(bug, None, **base, executor=base_info))
            continue
        row = bench_row(bug, base, executor=base_info)
        if patches == "developer":
            fixed, fixed_info = results[len(bugs) + i]
            if isinstance(fixed, dict):
                row["patched"] = {"outcome": "error", "build_s": 0.0, "run_s": 0.0, **fixed}
                row["resolved"] = False
            else:
                row["patched"] = fixed.to_dict()
                row["resolved"] = fixed.outcome is Outcome.RESOLVED
            row["patched_executor"] = fixed_info
        rows.append(row)
    return rows


class SlurmStepError(CodegenEvalError, RuntimeError):
    """The cluster, not the patch, failed a step (its jobs kept being killed, or the bug cannot
    run there): the agent's episode for this bug ends with an error, never with a verdict."""


class SlurmStepScorer:
    """The gym's `score`/`check_baseline` with every build + boot + reproduce as a Slurm job,
    for `KernelGym(step_scorer=...)`: the agent and its model stay on this machine, the
    kernels run on the cluster (one job per step, about 2 s of scheduling on top)."""

    def __init__(self, gym: GymOptions, slurm: SlurmOptions) -> None:
        self.gym, self.slurm = gym, slurm
        self._baselines: dict[str, StepResult] = {}
        self.jobs: list[dict[str, Any]] = []  # the executor info of each step's job, in order

    async def score(self, bug: BugRecord, patch: str = "") -> StepResult:
        # The node's PatchScorer runs the unpatched baseline itself before it calls a clean
        # candidate resolved (baseline_not_reproduced), so the verdict is the gym's own.
        [(step, info)] = await score_patches_on_slurm(
            [(bug, patch)], gym=self.gym, slurm=self.slurm
        )
        self.jobs.append(info)
        if isinstance(step, dict):
            state = step.get("slurm_state") or info.get("state") or "error"
            raise SlurmStepError(
                f"bug {bug.id}: Slurm job {info.get('job_id')}: {state}: {step.get('error')}"
            )
        if not patch.strip():
            self._baselines[bug.id] = step
        return step

    async def check_baseline(self, bug: BugRecord) -> StepResult:
        if bug.id not in self._baselines:
            await self.score(bug, "")
        return self._baselines[bug.id]
