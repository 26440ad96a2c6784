"""The slurm executor: candidates scored by jobs on a Slurm cluster, in batches.

    candidates --(buffer: batch_size, or linger_s after the first)--> one sbatch --array
      element i: python -m codegen_eval.executors.worker DIR  (batch-i.json -> result-i.jsonl)
    poll every poll_interval_s: new result lines resolve their candidates at once (streaming);
      squeue -t all --name RUN says queued / running / ended for every element
    an element that ended (any state) with candidates still unscored: those are resubmitted
      (a new job) up to max_attempts, then recorded as infra_error with the Slurm state

Protocol, not a client library: the batch and result files live in `workdir`, which must be
visible from the compute nodes (on one machine it is; on a cluster put it on shared storage).
A result line is written and flushed in one piece after each candidate, and only complete
lines are read, so a job killed half-way keeps what it finished and nothing is scored twice:
the first result for a candidate wins, and a candidate is resubmitted only after its job has
ended. Jobs are `--no-requeue` because retrying is ours to do, with a fresh job id each time.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import shlex
import sys
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import codegen_eval
from codegen_eval.executors import slurm_client
from codegen_eval.executors.slurm_client import SlurmError
from codegen_eval.types import Candidate, FailureClass, Sample, Score, Task

__all__ = ["SlurmExecutor", "SlurmOptions", "sweep_cpus"]

QUEUED = frozenset({"PENDING", "CONFIGURING", "REQUEUED", "RESIZING", "SUSPENDED"})
MAX_ARRAY = 1000  # Slurm's default MaxArraySize is 1001
MIN_AUTO_BATCH = 4
MAX_AUTO_BATCH = 256


@dataclass
class SlurmOptions:
    partition: str | None = None
    account: str | None = None
    time: str | None = "01:00:00"  # per job (sbatch --time)
    mem: str | None = None  # per job (sbatch --mem, e.g. 4G)
    # Candidates per job-array element. None (auto): a flush is cut into as many elements
    # as the partition has slots for them (at least MIN_AUTO_BATCH candidates each), so each
    # slot starts one Python worker, not many (measured: 0.7x of local's throughput with 8
    # elements on 2 CPUs, 0.88x with 2).
    batch_size: int | None = None
    cpus_per_task: int = 1  # the worker scores this many candidates at once
    max_attempts: int = 3  # jobs per candidate before infra_error
    linger_s: float = 1.0  # how long a partial batch waits for more candidates
    poll_interval_s: float = 0.5
    controller_grace_s: float = 120.0  # squeue failing this long aborts the run
    workdir: Path | None = None  # batch and result files (shared storage on a real cluster)
    # Nodes per job for candidates whose MPI ranks run as srun steps (--slurm-mpi-steps):
    # None is 2 when the partition has 2 nodes or more (ranks cross a node boundary, as on a
    # user's cluster), else 1.
    mpi_nodes: int | None = None
    python: str = sys.executable  # the interpreter on the compute nodes
    extra_args: list[str] = field(default_factory=list)  # more sbatch options, verbatim

    def sbatch_options(self) -> list[str]:
        out = [f"--cpus-per-task={self.cpus_per_task}", "--ntasks=1"]
        for flag, value in (
            ("--partition", self.partition),
            ("--account", self.account),
            ("--time", self.time),
            ("--mem", self.mem),
        ):
            if value:
                out.append(f"{flag}={value}")
        return out + list(self.extra_args)


@dataclass(eq=False)
class _Item:
    key: str
    task: Task
    sample: Sample
    cand: Candidate
    future: asyncio.Future[tuple[Score, dict[str, Any]]]
    attempts: int = 0
    last_state: str = ""


@dataclass(eq=False)
class _Element:
    job_id: str  # "123_4"
    items: dict[str, _Item]  # key -> item, not yet resolved
    results: Path
    submitted: float
    offset: int = 0
    state: str = "PENDING"
    reason: str = ""
    unseen_polls: int = 0
    ended_polls: int = 0


class SlurmExecutor:
    """Scores candidates as Slurm jobs. Use as `async with`: entering checks the cluster and
    starts the batcher and the poller; leaving cancels every job still queued or running."""

    kind = "slurm"

    def __init__(
        self,
        options: SlurmOptions,
        task_spec: dict[str, Any],
        *,
        score_timeout_s: float = 1800.0,
    ) -> None:
        self.options = options
        self.task_spec = task_spec
        self.score_timeout_s = score_timeout_s
        self.job_name = f"cgeval-{uuid.uuid4().hex[:10]}"
        base = options.workdir or Path("runs") / "slurm"
        self.dir = Path(base).resolve() / self.job_name
        self.on_status: Callable[[str], None] | None = None
        self._buffer: list[_Item] = []
        self._wake = asyncio.Event()
        self._elements: dict[str, _Element] = {}
        self._finished_jobs = 0
        self._retried = 0
        self._submissions = 0
        self._submit_s: list[float] = []  # sbatch call durations
        self._start_lag_s: list[float] = []  # submit -> first seen RUNNING
        self._submitted_at: dict[str, float] = {}  # job id -> wall clock of its sbatch
        self._worker_start_s: dict[str, float] = {}  # job id -> submit to worker process up
        self._worker_setup_s: dict[str, float] = {}  # job id -> worker up to tasks rebuilt
        self._elements_submitted = 0
        self._background: list[asyncio.Task[None]] = []
        self._last_query_ok = time.monotonic()
        self._bases: set[str] = set()  # base ids sbatch gave us
        self._orphans: set[str] = set()  # base ids of this run's jobs we did not submit
        self._submitting = 0  # sbatch calls in flight
        self._fatal: BaseException | None = None
        self.max_cpus = 0  # the largest node's CPUs (check()); 0: unknown, ask for 1 per job
        self.total_cpus = 0  # the partition's CPUs (check()), for automatic batch sizes
        self.node_count = 1  # the partition's nodes (check())

    # ------------------------------------------------------------------ lifecycle
    def check(self) -> str:
        """Blocking: the cluster answers and accepts our job options (SlurmUnavailable)."""
        line = slurm_client.check_cluster(self.options.sbatch_options())
        nodes = slurm_client.partition_nodes(self.options.partition)
        if nodes:
            self.max_cpus, self.total_cpus = max(nodes.values()), sum(nodes.values())
            self.node_count = len(nodes)
        else:
            self.max_cpus, self.total_cpus = 1, 1
        return line

    def _step_nodes(self, it: _Item) -> int:
        """Nodes for a job of this candidate: >1 only for MPI ranks run as srun steps."""
        env = self.task_spec.get("env") or {}
        if env.get("CODEGEN_MPI_LAUNCHER") != "srun":
            return 1
        meta = it.sample.metadata
        if meta.get("language") != "mpi" and meta.get("variant") not in ("mpi", "mpi+omp"):
            return 1
        want = self.options.mpi_nodes or (2 if self.node_count >= 2 else 1)
        return max(1, min(want, self.node_count))

    def _prepare(self) -> None:
        self.dir.mkdir(parents=True, exist_ok=True)
        self._script = self.dir / "job.sh"
        root = Path(codegen_eval.__file__).resolve().parent.parent
        self._script.write_text(
            "#!/bin/sh\n# codegen-eval slurm executor: score one batch (codegen_eval/executors)\n"
            f"export PYTHONPATH={shlex.quote(str(root))}${{PYTHONPATH:+:$PYTHONPATH}}\n"
            f'exec {shlex.quote(self.options.python)} -m codegen_eval.executors.worker "$1"\n',
            encoding="utf-8",
        )
        self._script.chmod(0o755)

    async def __aenter__(self) -> SlurmExecutor:
        self._prepare()
        self._background = [
            asyncio.create_task(self._batcher(), name="slurm-batcher"),
            asyncio.create_task(self._poller(), name="slurm-poller"),
        ]
        return self

    async def __aexit__(self, *exc: object) -> None:
        for t in self._background:
            t.cancel()
        for t in self._background:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await t
        # Elements that delivered everything are left to exit by themselves.
        live = sorted(e.job_id for e in self._elements.values() if e.items)
        if live:  # an interrupted run leaves nothing running on the cluster
            with contextlib.suppress(SlurmError):
                await slurm_client.cancel(live)
        for item in [
            *self._buffer,
            *(i for e in self._elements.values() for i in e.items.values()),
        ]:
            if not item.future.done():
                item.future.cancel()

    # ------------------------------------------------------------------ scoring
    async def score(
        self, task: Task, sample: Sample, cand: Candidate, key: str
    ) -> tuple[Score, dict[str, Any]]:
        if self._fatal is not None:
            raise self._fatal
        fut: asyncio.Future[tuple[Score, dict[str, Any]]] = (
            asyncio.get_running_loop().create_future()
        )
        self._buffer.append(_Item(key, task, sample, cand, fut))
        self._wake.set()
        return await fut

    def stats(self) -> dict[str, Any]:
        """Scheduling figures for benchmarks: submissions, sbatch time, queue wait."""

        def median(xs: list[float]) -> float | None:
            return sorted(xs)[len(xs) // 2] if xs else None

        return {
            "submissions": self._submissions,
            "jobs": self._elements_submitted,
            "worker_setup_s_median": median(list(self._worker_setup_s.values())),
            "submit_to_worker_s_min": min(self._worker_start_s.values(), default=None),
            "retried": self._retried,
            "orphans_cancelled": len(self._orphans),
            "sbatch_s_median": median(self._submit_s),
            "start_lag_s_median": median(self._start_lag_s),
        }

    def status_line(self) -> str:
        queued = sum(e.state in QUEUED for e in self._elements.values())
        running = len(self._elements) - queued
        retried = f", {self._retried} retried" if self._retried else ""
        return (
            f"slurm jobs: {queued} queued, {running} running, {self._finished_jobs} done"
            f"{retried}; {len(self._buffer)} candidates batching"
        )

    def _status(self) -> None:
        if self.on_status is not None:
            self.on_status(self.status_line())

    # ------------------------------------------------------------------ batching
    def _batch_count(self, n: int, need: int) -> int:
        if self.options.batch_size:
            return -(-n // max(1, self.options.batch_size))
        slots = max(1, (self.total_cpus or 1) // max(need, self.options.cpus_per_task))
        count = min(slots, max(1, n // MIN_AUTO_BATCH))
        return max(count, -(-n // MAX_AUTO_BATCH))

    async def _batcher(self) -> None:
        size = self.options.batch_size or MAX_AUTO_BATCH
        while True:
            await self._wake.wait()
            self._wake.clear()
            deadline = time.monotonic() + self.options.linger_s
            # A partial batch waits a little for more candidates (generation trickles in).
            while len(self._buffer) < size and time.monotonic() < deadline:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), deadline - time.monotonic())
                self._wake.clear()
            items, self._buffer = self._buffer, []
            groups: dict[tuple[int, int], list[_Item]] = {}
            for it in items:  # one job size per group: a 4-rank sweep gets its 4 CPUs
                groups.setdefault((self._cpus_for(it.sample), self._step_nodes(it)), []).append(it)
            for (need, nodes), group in sorted(groups.items()):
                # Dealt round-robin, not cut in runs: neighbours in arrival order tend to be
                # alike (one suite's heavy problems together); one slow batch holds the run.
                count = self._batch_count(len(group), need * nodes)
                batches = [group[i::count] for i in range(count)]
                for start in range(0, len(batches), MAX_ARRAY):
                    await self._submit(batches[start : start + MAX_ARRAY], need, nodes)
            self._status()

    def _cpus_for(self, sample: Sample) -> int:
        """CPUs one candidate of `sample` needs: its largest ranks x threads launch config
        (hpc-kernels' configs, ParEval's launch plan) or its "cpus" hint, at most the
        largest node's."""
        return max(1, min(sweep_cpus(sample), self.max_cpus or 1))

    async def _submit(self, batches: list[list[_Item]], need: int, nodes: int = 1) -> None:
        """One sbatch --array; each element gets max(cpus_per_task, need) CPUs and scores
        (CPUs granted // need) candidates at once. With nodes > 1 (MPI ranks as srun steps)
        each element holds one task of `need` CPUs on each of `nodes` nodes: the worker runs
        on the first, its steps spread their ranks over all of them."""
        if not batches:
            return
        self._submissions += 1
        sub = self._write_batches(batches, need)
        argv = [
            f"--job-name={self.job_name}",
            f"--array=0-{len(batches) - 1}",
            f"--output={sub}/slurm-%a.out",
            f"--chdir={sub}",
            "--no-requeue",
            "--export=ALL",
            *self.options.sbatch_options(),
            # the last --cpus-per-task wins over sbatch_options' own
            f"--cpus-per-task={max(self.options.cpus_per_task, need)}",
            *([f"--nodes={nodes}", f"--ntasks={nodes}"] if nodes > 1 else []),
        ]
        error, base = "", None
        self._submitting += 1
        try:
            for attempt in range(3):  # a busy controller refuses now and then
                t0 = time.monotonic()
                try:
                    base = await slurm_client.submit(
                        argv, [str(self._script), str(sub)], job_name=self.job_name,
                        tag=f"{sub.name}.{attempt}",
                    )  # fmt: skip
                    self._submit_s.append(time.monotonic() - t0)
                    break
                except SlurmError as exc:
                    error = str(exc)
                    await asyncio.sleep(1.0 + attempt)
        finally:
            self._submitting -= 1
        if base is None:
            for batch in batches:
                for it in batch:
                    it.attempts += 1
                    self._settle(it, "SUBMIT_FAILED", "", error)
            return
        now = time.monotonic()
        self._bases.add(base)
        self._elements_submitted += len(batches)
        for i, batch in enumerate(batches):
            job_id = f"{base}_{i}"
            self._submitted_at[job_id] = time.time()
            for it in batch:
                it.attempts += 1
            self._elements[job_id] = _Element(
                job_id, {it.key: it for it in batch}, sub / f"result-{i}.jsonl", now
            )

    def _write_batches(self, batches: list[list[_Item]], need: int) -> Path:
        sub = self.dir / f"s{self._submissions:05d}"
        sub.mkdir(parents=True, exist_ok=True)
        for i, batch in enumerate(batches):
            payload = {
                "task_spec": self.task_spec,
                "score_timeout_s": self.score_timeout_s,
                "cpus_per_candidate": need,
                "items": [
                    {
                        "key": it.key,
                        "suite": it.task.name,
                        "sample_id": it.sample.id,
                        "index": it.cand.index,
                        "code": it.cand.code,
                        "raw": it.cand.raw,
                        "metadata": it.cand.metadata,
                    }
                    for it in batch
                ],
            }
            (sub / f"batch-{i}.json").write_text(
                json.dumps(payload, ensure_ascii=False, default=str), encoding="utf-8"
            )
        return sub

    # ------------------------------------------------------------------ polling
    async def _poller(self) -> None:
        while True:
            await asyncio.sleep(self.options.poll_interval_s)
            if not self._elements:
                continue
            for el in list(self._elements.values()):
                self._read_results(el)
            try:
                states = await slurm_client.query(self.job_name)
                self._last_query_ok = time.monotonic()
            except SlurmError as exc:
                if time.monotonic() - self._last_query_ok > self.options.controller_grace_s:
                    self._abort(exc)
                    return
                continue
            # With an sbatch in flight, a job we do not know yet may be the one it is making.
            if not self._submitting:
                await self._cancel_orphans(states)
            for el in list(self._elements.values()):
                self._update(el, states.get(el.job_id))
            self._status()

    async def _cancel_orphans(self, states: dict[str, slurm_client.JobState]) -> None:
        """Jobs of this run (by name) that no sbatch answer gave us: an sbatch that failed on
        our side after the controller had accepted it, and whose retry was submitted again.
        Their candidates are scored by the retry; cancel them so nothing is scored twice."""
        orphans = sorted(
            {sid.split("_")[0] for sid, st in states.items() if not st.terminal}
            - self._bases
            - self._orphans
        )
        if orphans:
            self._orphans.update(orphans)
            with contextlib.suppress(SlurmError):
                await slurm_client.cancel(orphans)

    def _update(self, el: _Element, st: slurm_client.JobState | None) -> None:
        if st is None:
            # Not (or no longer) known to the controller: purged after MinJobAge, or a
            # controller restarted with fresh state. Give sbatch's answer a moment to show.
            el.unseen_polls += 1
            if el.unseen_polls < 4:
                return
            el.state, el.reason = "LOST", "unknown to the controller"
        else:
            el.unseen_polls = 0
            if el.state in QUEUED and st.state not in QUEUED:
                self._start_lag_s.append(time.monotonic() - el.submitted)
            el.state, el.reason = st.state, st.reason
            if not st.terminal:
                return
        # Ended: read what the job wrote last. On shared storage a result can show up a
        # moment after the state changes, so wait one more poll before declaring it missing.
        self._read_results(el)
        el.ended_polls += 1
        if el.items and el.ended_polls < 2:
            return
        del self._elements[el.job_id]
        self._finished_jobs += 1
        why = f"slurm job {el.job_id} ended {el.state}"
        if el.items and (tail := _output_tail(el)):
            why += f" (job output: {tail})"
        for it in el.items.values():
            self._settle(it, el.state, el.reason, why)

    def _read_results(self, el: _Element) -> None:
        try:
            with el.results.open("rb") as fh:
                fh.seek(el.offset)
                data = fh.read()
        except FileNotFoundError:
            return
        end = data.rfind(b"\n")
        if end < 0:
            return
        el.offset += end + 1
        for line in data[: end + 1].splitlines():
            try:
                rec = json.loads(line)
                item = el.items.pop(rec["key"])
            except (ValueError, KeyError, TypeError):
                continue  # not ours or already settled: the first result wins
            s = rec["score"]
            score = Score(
                float(s["value"]),
                str(s["status"]),
                s.get("failure_class"),
                dict(s.get("metrics") or {}),
                str(s.get("explanation") or ""),
                metadata=dict(s.get("metadata") or {}),
            )
            info = {
                "kind": "slurm",
                "job_id": str(rec.get("job_id") or el.job_id),
                "node": str(rec.get("node") or ""),
                "attempts": item.attempts,
            }
            if el.job_id not in self._worker_setup_s and rec.get("worker_ready"):
                self._worker_setup_s[el.job_id] = rec["worker_ready"] - rec["worker_started"]
                submitted = self._submitted_at.get(el.job_id, rec["worker_started"])
                self._worker_start_s[el.job_id] = rec["worker_started"] - submitted
            if rec.get("cpus_granted"):
                info["cpus_granted"] = int(rec["cpus_granted"])
            if rec.get("restarts"):  # Slurm reran this same job (requeue) before this result
                info["restarts"] = int(rec["restarts"])
            if not item.future.done():
                item.future.set_result((score, info))

    def _settle(self, it: _Item, state: str, reason: str, why: str) -> None:
        """A candidate whose job ended without its result: retry, or infra_error."""
        it.last_state = state
        if it.attempts < self.options.max_attempts and state != "SUBMIT_FAILED":
            self._retried += 1
            self._buffer.append(it)
            self._wake.set()
            return
        detail = f" ({reason})" if reason and reason != "None" else ""
        score = Score(
            0.0,
            "error",
            FailureClass.INFRA_ERROR,  # exactly: infra errors are never cached or blamed
            explanation=f"{why}{detail} on attempt {it.attempts} of "
            f"{self.options.max_attempts}; the cluster failed, the candidate was not judged",
        )
        info = {"kind": "slurm", "job_id": "", "state": state, "attempts": it.attempts}
        if not it.future.done():
            it.future.set_result((score, info))

    def _abort(self, exc: BaseException) -> None:
        from codegen_eval.runner import RunAborted

        self._fatal = RunAborted(
            f"the Slurm controller stopped answering for {self.options.controller_grace_s:.0f} s "
            f"({exc})"
        )
        for el in self._elements.values():
            for it in el.items.values():
                if not it.future.done():
                    it.future.set_exception(self._fatal)
        for it in self._buffer:
            if not it.future.done():
                it.future.set_exception(self._fatal)


def _output_tail(el: _Element, lines: int = 3) -> str:
    """The last lines the element's job printed (a worker's traceback names the cause)."""
    index = el.job_id.rsplit("_", 1)[-1]
    try:
        text = (el.results.parent / f"slurm-{index}.out").read_text(errors="replace")
    except OSError:
        return ""
    return " | ".join(line.strip() for line in text.strip().splitlines()[-lines:])[:600]


def sweep_cpus(sample: Sample) -> int:
    """The largest ranks x threads among a sample's launch configurations, or its "cpus"
    hint (a kernel build), 1 without either."""
    meta = sample.metadata
    sizes = [int(np_) * int(t) for np_, t in meta.get("configs") or []]
    sizes.append(int(meta.get("cpus") or 1))
    sizes += [int(c.get("procs", 1)) * int(c.get("threads", 1)) for c in meta.get("launch") or []]
    return max(sizes, default=1)


def job_ids_in(records: Sequence[dict[str, Any]]) -> set[str]:
    """The Slurm job ids a run's score records name (tests and benchmarks)."""
    return {
        str((r.get("executor") or {}).get("job_id"))
        for r in records
        if (r.get("executor") or {}).get("job_id")
    }
