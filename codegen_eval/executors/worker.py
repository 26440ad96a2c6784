"""The compute-node side of the slurm executor: score one batch of candidates.

    python -m codegen_eval.executors.worker SUBMISSION_DIR

run by the job script the executor submits (one job-array element per batch). It reads
`batch-$SLURM_ARRAY_TASK_ID.json`, rebuilds the tasks from the batch's task spec (a
"module:function" returning the run's tasks, with JSON arguments: the same suites, options and
sandbox backend as the submitting run; the spec's `backend` is also the backend of the
`use_backend` block the worker scores in), scores each candidate with the suite's own scorer (so
in the project's sandbox, with the suite's limits; a scorer that takes several candidates per
sandbox, Verilog's, gets them as the local runner gives them: `codegen_eval/batching.py`)
and appends one JSON line per candidate to
`result-$SLURM_ARRAY_TASK_ID.jsonl` the moment it is scored. The submitter tails that file, so
results stream back while the job runs; a job killed half-way leaves the finished half behind
and only the rest is retried.

Slurm may also rerun the same job by itself (a site with JobRequeue, `scontrol requeue`, a
node lost with the job requeueable): the same job id, the same batch, SLURM_RESTART_COUNT > 0.
The rerun appends to the same result file, skips every candidate already there and says
`restarts` in its lines; a line the earlier run still adds (a node cut from the network keeps
running) is a second line for a key the submitter has already settled, and the first wins.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import os
import socket
import sys
import time
from pathlib import Path
from typing import Any

from codegen_eval.batching import batcher_for
from codegen_eval.types import Candidate, Score, Task
from sandboxes import use_backend

_PROCESS_START = time.time()  # the worker's own start-up (imports) counts as job overhead

__all__ = ["build_tasks", "job_id_from_env", "main", "score_to_json"]


def score_to_json(score: Score) -> dict[str, Any]:
    return {
        "value": score.value,
        "status": score.status,
        "failure_class": score.failure_class,
        "metrics": score.metrics,
        "explanation": score.explanation,
        "metadata": score.metadata,
    }


def job_id_from_env(env: dict[str, str] | os._Environ[str] = os.environ) -> str:
    """The id squeue shows: 123_4 for an array element, else the plain job id."""
    array_job, array_task = env.get("SLURM_ARRAY_JOB_ID"), env.get("SLURM_ARRAY_TASK_ID")
    if array_job and array_task:
        return f"{array_job}_{array_task}"
    return env.get("SLURM_JOB_ID", "")


def _cpus_granted() -> int:
    """CPUs Slurm gave this job on this node (0 outside a job)."""
    for name in ("SLURM_CPUS_ON_NODE", "SLURM_CPUS_PER_TASK"):
        value = os.environ.get(name, "")
        if value.isdigit():
            return int(value)
    return 0


def _add_granted_efficiency(score: Score, cpus: int) -> None:
    """A sweep's efficiency divided by what could really run at once: ranks x threads as
    asked, but at most the CPUs granted (np=4 on a 2-CPU job is 2-way parallel at best).
    The scorer's own `efficiency` (by ranks x threads asked) stays, for comparison."""
    m = score.metrics
    if {"speedup", "np", "threads"} <= m.keys():
        asked = max(1.0, float(m["np"]) * float(m["threads"]))
        m["cpus_granted"] = float(cpus)
        m["efficiency_granted"] = float(m["speedup"]) / min(asked, float(cpus))


def done_keys(path: Path) -> set[str]:
    """Keys with a complete result line in `path` (an earlier run of this same job)."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return set()
    keys = set()
    for line in data[: data.rfind(b"\n") + 1].splitlines():
        try:
            keys.add(str(json.loads(line)["key"]))
        except (ValueError, KeyError, TypeError):
            continue
    return keys


def _ends_inside_a_line(path: Path) -> bool:
    with path.open("rb") as fh:
        if fh.seek(0, os.SEEK_END) == 0:
            return False
        fh.seek(-1, os.SEEK_END)
        return fh.read(1) != b"\n"


def build_tasks(spec: dict[str, Any]) -> list[Task]:
    """The run's tasks from a spec {"factory": "module:function", "kwargs": {...}}."""
    module_name, _, attr = str(spec["factory"]).partition(":")
    factory = getattr(importlib.import_module(module_name), attr)
    tasks = factory(**(spec.get("kwargs") or {}))
    return list(tasks)


async def score_batch(batch: dict[str, Any], out_path: Path, job_id: str) -> int:
    """Score the batch's candidates into `out_path`, in the spec's backend (`backend`: the
    submitting run's choice, shipped in the spec, not read from this node's environment)."""
    for name, value in (batch.get("task_spec", {}).get("env") or {}).items():
        os.environ[str(name)] = str(value)
    with use_backend(batch.get("task_spec", {}).get("backend")):
        return await _score_batch(batch, out_path, job_id)


async def _score_batch(batch: dict[str, Any], out_path: Path, job_id: str) -> int:
    from codegen_eval.runner import guarded_score

    started = _PROCESS_START
    tasks = {t.name: t for t in build_tasks(batch["task_spec"])}
    ready = time.time()
    samples = {name: {s.id: s for s in t.dataset} for name, t in tasks.items()}
    timeout_s = float(batch.get("score_timeout_s", 1800.0))
    per_candidate = max(1, int(batch.get("cpus_per_candidate", 1)))
    concurrency = max(1, (_cpus_granted() or per_candidate) // per_candidate)
    sem = asyncio.Semaphore(concurrency)
    batchers = {
        name: batcher_for(t.scorer, sem, concurrency, timeout_s) for name, t in tasks.items()
    }
    node = socket.gethostname()
    restarts = int(os.environ.get("SLURM_RESTART_COUNT") or 0)
    done = done_keys(out_path) if restarts else set()
    written = 0
    # O_APPEND and one write per line: two runs of the job (a requeue while the first still
    # runs on a node cut from the network) never interleave inside a line.
    fd = os.open(out_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    if _ends_inside_a_line(out_path):  # an earlier run died mid-write: end its half line
        os.write(fd, b"\n")
    try:

        async def one(item: dict[str, Any]) -> None:
            nonlocal written
            task = tasks.get(item["suite"])
            sample = samples.get(item["suite"], {}).get(item["sample_id"])
            t0 = time.monotonic()
            if task is None or sample is None:
                score = Score(
                    0.0,
                    "error",
                    "infra_error",
                    explanation=f"the worker's tasks have no {item['suite']}/{item['sample_id']}"
                    " (the compute node rebuilt a different suite)",
                )
            else:
                cand = Candidate(
                    item["sample_id"],
                    int(item["index"]),
                    item["code"],
                    item.get("raw", ""),
                    dict(item.get("metadata") or {}),
                )
                batcher = batchers.get(task.name)
                if batcher is not None:  # several candidates per sandbox (batching.py)
                    score = await batcher.score(sample, cand)
                else:
                    async with sem:
                        score = await guarded_score(task.scorer, sample, cand, timeout_s)
            granted = _cpus_granted()
            if granted:
                _add_granted_efficiency(score, granted)
            line = {
                "key": item["key"],
                "cpus_granted": granted,
                "score": score_to_json(score),
                "job_id": job_id,
                "node": node,
                "restarts": restarts,
                "elapsed_s": round(time.monotonic() - t0, 4),
                # wall clock (node's): when the worker started, had its tasks, wrote this
                "worker_started": started,
                "worker_ready": ready,
                "t": time.time(),
            }
            # One write of one line: the submitter never reads half a result (it ignores a
            # last line without its newline).
            data = (json.dumps(line, ensure_ascii=False, default=str) + "\n").encode()
            os.write(fd, data)
            written += 1

        async with asyncio.TaskGroup() as tg:
            for item in batch["items"]:
                if item["key"] not in done:
                    tg.create_task(one(item))
    finally:
        os.close(fd)
    return written


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 1:
        print("usage: python -m codegen_eval.executors.worker SUBMISSION_DIR", file=sys.stderr)
        return 2
    directory = Path(args[0])
    index = os.environ.get("SLURM_ARRAY_TASK_ID", "0")
    batch = json.loads((directory / f"batch-{index}.json").read_text(encoding="utf-8"))
    job_id = job_id_from_env()
    n = asyncio.run(score_batch(batch, directory / f"result-{index}.jsonl", job_id))
    print(f"worker: job {job_id} scored {n} candidate(s) on {socket.gethostname()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
