"""Scorer of the hpc-kernels suite: build the candidate with our guest runtime, run it at
every configuration of its variant under our trusted host, and read the host's verdict.

Trust (docs/suite-hpc-kernels.md, "Threat model"): the verdict and every time come from
`hpck_host`, which never runs candidate code. It chooses secret seeds, writes each
repetition's inputs into the candidate's shared memory while the candidate is stopped, times
the repetition on its own clock from SIGCONT to the last "done", checks the outputs with its
own reference, and tags its one verdict line with a key that only this scorer and the host
hold. The host, the guard (the seccomp filter that keeps candidate processes from forking or
signalling anyone but themselves) and the no-dump library are built from our sources into a
directory the sandbox sees read-only. The host also decides every exec in the tree it
launches (mpirun included: nothing it spawns for a candidate runs unguarded) and counts the
processes at every stop. Nothing a candidate prints or writes is believed.
"""

from __future__ import annotations

import contextlib
import os
import re

from codegen_eval.failures import classify_compile_result, classify_exec, short_log
from codegen_eval.types import Candidate, FailureClass, Sample, Score
from sandboxes import ExecResult, ExecStatus, Limits, Sandbox, open_sandbox, toolchains

from .protocol import HostVerdict, new_key, parse_host_verdict
from .trusted import TrustedBinaries, TrustedBuildError, trusted_binaries

_STD = ["-O2", "-std=gnu11"]
_LOG_BYTES = 64 << 10
_LOG_NAME = re.compile(r"cand-[0-9a-f]{16}\.log")


def family_of(variant: str) -> str:
    return "cuda" if variant == "cuda" else "mpi" if variant.startswith("mpi") else "shared"


def _build_commands(variant: str) -> tuple[list[str], list[str]]:
    """(compile the three translation units, link). Two steps so a compile error in the
    candidate and a link error (wrong name or signature, a main()) are told apart."""
    fam = f"-DHPCK_FAMILY_{family_of(variant).upper()}"
    if variant == "cuda":
        return (
            ["nvcc", "-O2", "-DHPCK_GUEST", fam, "-Ip", "-c", "p/guest_main.cu", "p/call.cu",
             "solution.cu"],
            ["nvcc", "-O2", "guest_main.o", "call.o", "solution.o", "-o", "prog"],
        )  # fmt: skip
    cc = "mpicc" if variant.startswith("mpi") else "gcc"
    flags = [*_STD, *(["-fopenmp"] if "openmp" in variant else [])]
    return (
        [cc, *flags, "-DHPCK_GUEST", fam, "-Ip", "-c", "p/guest_main.c", "p/call.c", "solution.c"],
        [cc, *flags, "guest_main.o", "call.o", "solution.o", "-o", "prog", "-lm"],
    )


def _crash_class(v: HostVerdict, log: str) -> str:
    """A crash the host saw (its detail: signal_N_when or exit_N_when, or a guest gone),
    classified like any program run; cand.log (the candidate's own output, which it controls)
    only refines the class of a failure, it can never make one."""
    parts = v.detail.split("_")
    if parts[:2] == ["exit", "0"]:
        # left with status 0 before the host was done: the outputs were never all produced
        return FailureClass.with_detail(FailureClass.WRONG_ANSWER, "exited_early")
    if parts[0] == "signal" and len(parts) > 1 and parts[1].isdigit():
        fake = ExecResult(ExecStatus.SIGNAL, None, int(parts[1]), "", log, False, 0.0, None, None)
    else:
        code = int(parts[1]) if parts[0] == "exit" and parts[1:2] and parts[1].isdigit() else 1
        fake = ExecResult(ExecStatus.NONZERO_EXIT, code, None, "", log, False, 0.0, None, None)
    return classify_exec(fake) or FailureClass.NONZERO_EXIT


def _reclaim_run_dir(sb: Sandbox) -> None:
    """Give the run directory its mode back before a run: it is the scorer's, but the sandbox
    uid owns it, so candidate code can chmod it (it cannot chown it). A candidate that set it
    to 0555 after a right answer at np=1 left the next host unable to create its log, and its
    wrong answer at np=2 came out as an infra error, which is not cached and is re-scored.
    What this cannot undo (a run directory filled up) the error rule in _run_all catches."""
    if sb.run_dir is not None:
        with contextlib.suppress(OSError):
            os.chmod(sb.run_dir, 0o700)


def _candidate_caused(v: HostVerdict, candidate_ran: bool) -> bool:
    """Whether the host's error could be the candidate's doing: candidate code ran before it
    (an earlier configuration in this run directory, or this one's candidate processes), and
    it is not our reference failing (fault=host). The sandbox failing raises instead."""
    if v.fields.get("fault") == "host":
        return False
    return candidate_ran or v.fields.get("cand_started") == "1"


class HpcKernelsScorer:
    """Scorer protocol implementation. `reps`: timed repetitions per configuration (the best
    window is kept); `run_timeout_s`: wall limit per configuration (hang or deadlock =
    timeout)."""

    def __init__(
        self,
        *,
        backend: str | None = None,
        reps: int = 5,
        run_timeout_s: float = 60.0,
        compile_timeout_s: float = 120.0,
        memory_mb: int = 4096,
    ) -> None:
        self.backend = backend
        self.reps = reps
        self.run_timeout_s = run_timeout_s
        self.compile_timeout_s = compile_timeout_s
        self.memory_mb = memory_mb

    async def score(self, sample: Sample, candidate: Candidate) -> Score:
        if not candidate.code.strip():
            return Score(0.0, "fail", FailureClass.NO_CODE, explanation="empty candidate")
        variant: str = sample.metadata["variant"]
        try:
            trusted = await trusted_binaries(sample.metadata["problem"], family_of(variant))
        except TrustedBuildError as exc:
            return Score(0.0, "error", FailureClass.INFRA_ERROR, explanation=str(exc)[:2000])
        async with open_sandbox(self.backend, extra_ro_binds=(str(trusted.root),)) as sb:
            return await self._score_in(sb, sample, candidate.code, trusted)

    async def _score_in(
        self, sb: Sandbox, sample: Sample, code: str, trusted: TrustedBinaries
    ) -> Score:
        variant: str = sample.metadata["variant"]
        is_cuda = variant == "cuda"
        files = dict(sample.files)  # the guest runtime: trusted.guest_files()
        files["solution.cu" if is_cuda else "solution.c"] = code
        compile_cmd, link_cmd = _build_commands(variant)
        climits = Limits(wall_s=self.compile_timeout_s, memory_mb=4096, pids=256, tmp_mb=1024)
        for step, cmd in (("compile", compile_cmd), ("link", link_cmd)):
            r = await sb.exec(cmd, files=files if step == "compile" else None, limits=climits)
            if (cls := classify_compile_result(r)) is not None:
                if step == "link" and cls.startswith(FailureClass.COMPILE_ERROR):
                    cls = FailureClass.LINK_ERROR  # both objects exist: only linking failed
                return Score(0.0, "fail", cls, explanation=short_log(r.stderr + r.stdout))
        if is_cuda and not sb.gpu_visible():
            return Score(
                0.0,
                "skipped",
                FailureClass.SKIPPED_NO_GPU,
                explanation="compiled with nvcc; not run: no GPU visible",
            )
        return await self._run_all(sb, sample, trusted)

    async def _run_once(
        self, sb: Sandbox, variant: str, np_: int, threads: int, trusted: TrustedBinaries
    ) -> tuple[ExecResult, HostVerdict | None]:
        recipe = toolchains.get("mpi" if variant.startswith("mpi") else "c")
        key = new_key()
        launch = recipe.run_command(
            str(trusted.guard), ["./prog"], np_ if variant.startswith("mpi") else None
        )
        cmd = [
            str(trusted.host), "--np", str(np_ if variant.startswith("mpi") else 1),
            "--reps", str(self.reps), "--timeout", f"{self.run_timeout_s:g}",
            "--nodump", str(trusted.nodump), "--guard", str(trusted.guard),
            "--base", str(trusted.base), "--", *launch,
        ]  # fmt: skip
        env = recipe.run_env(threads)
        env.update(
            {
                # No configuration from the run directory: $HOME is the run directory, and an
                # earlier run's candidate could have planted ~/.openmpi/mca-params.conf with
                # orte_fork_agent=<its own program>, run by mpirun before our guard.
                "HOME": "/nonexistent",
                "OMPI_MCA_mca_base_param_files": "/etc/openmpi/openmpi-mca-params.conf",
                "OMP_NUM_THREADS": str(threads),
                # idle OpenMP workers and MPI ranks must not spin while they wait for the
                # next repetition
                "OMP_WAIT_POLICY": "passive",
                "OMPI_MCA_mpi_yield_when_idle": "1",
                # vader's single-copy path (process_vm_readv) is refused inside the sandbox
                "OMPI_MCA_btl_vader_single_copy_mechanism": "none",
            }
        )
        if variant == "serial":
            # the guard's filter refuses clone: a "serial" candidate starts no threads
            env["HPCK_SINGLE_THREAD"] = "1"
        if np_ * threads <= (os.cpu_count() or 1) and threads > 1:
            # Threads pinned one per CPU: after the host's SIGCONT the scheduler tends to leave
            # a process's threads together on one CPU for milliseconds (2-thread windows
            # measured up to 1.8x slower unpinned here). Not when oversubscribed: pinned
            # threads of several ranks meeting at barriers were 5x slower (cg, 2x2 on 2 CPUs).
            env.update({"OMP_PROC_BIND": "spread", "OMP_PLACES": "threads"})
        limits = Limits(
            # the host stops at run_timeout_s and reports; the sandbox is the backstop
            wall_s=self.run_timeout_s + 10,
            memory_mb=self.memory_mb,
            pids=512,
            # the host's arenas are memfds, which RLIMIT_FSIZE caps too (scan's is 61 MiB)
            file_bytes=256 << 20,
            gpus=1 if variant == "cuda" else 0,
        )
        r = await sb.exec(cmd, limits=limits, env=env, stdin=key.hex() + "\n")
        return r, parse_host_verdict(r.stdout, key)

    async def _candidate_log(self, sb: Sandbox, v: HostVerdict | None) -> str:
        """The candidate's own output (its stdout and stderr), named by the host's verdict."""
        name = v.fields.get("log", "") if v else ""
        if not _LOG_NAME.fullmatch(name):
            return ""
        try:
            return await sb.read_text(name, max_bytes=_LOG_BYTES)
        except (FileNotFoundError, PermissionError, IsADirectoryError, NotADirectoryError):
            return ""

    async def _run_all(self, sb: Sandbox, sample: Sample, trusted: TrustedBinaries) -> Score:
        variant: str = sample.metadata["variant"]
        metrics: dict[str, float] = {}
        notes: list[str] = []
        last: HostVerdict | None = None
        candidate_ran = False  # an earlier configuration ran candidate code in this run dir
        for np_, threads in sample.metadata["configs"]:
            tag = f"np{np_}xt{threads}"
            where = f"at np={np_} threads={threads}"
            _reclaim_run_dir(sb)
            r, v = await self._run_once(sb, variant, np_, threads, trusted)
            if r.status == ExecStatus.SKIPPED_NO_GPU:
                return Score(0.0, "skipped", FailureClass.SKIPPED_NO_GPU, metrics, r.stderr)
            if r.status != ExecStatus.OK or v is None:
                # A limit the sandbox enforced (memory, pids, wall) is the cause even when the
                # host managed to report; no tagged line at all means something stopped the
                # host or buried its line (e.g. an output flood): never a pass.
                cls = classify_exec(r, check_sanitizers=False)
                if cls is None:
                    cls = f"{FailureClass.TAMPER}:no_verdict"
                log = short_log(await self._candidate_log(sb, v) + r.stderr, 1500)
                return Score(0.0, "fail", cls, metrics, f"{cls} {where}\n{log}")
            if v.status != "pass":
                log = await self._candidate_log(sb, v)
                cls = {
                    "wrong": FailureClass.WRONG_ANSWER,
                    "timeout": FailureClass.with_detail(FailureClass.TIMEOUT, "wall"),
                    "tamper": FailureClass.with_detail(FailureClass.TAMPER, v.detail),
                    "error": FailureClass.INFRA_ERROR,
                }.get(v.status) or _crash_class(v, log)
                if cls == FailureClass.INFRA_ERROR and _candidate_caused(v, candidate_ran):
                    cls = FailureClass.with_detail(FailureClass.TAMPER, "environment")
                status = "error" if cls == FailureClass.INFRA_ERROR else "fail"
                explanation = f"{cls} {where}: {v.detail}"
                if v.status == "wrong" and "err" in v.fields:
                    explanation += f", error measure {v.fields['err'].split(',')[-1]}"
                if log.strip():
                    explanation += "\n" + short_log(log, 1500)
                return Score(0.0, status, cls, metrics, explanation)
            if not v.cand_s or not v.base_s:
                return Score(0.0, "error", FailureClass.INFRA_ERROR, metrics,
                             f"host reported no times {where}")  # fmt: skip
            speedup = v.base_s / v.cand_s
            metrics[f"runtime_s@{tag}"] = v.cand_s
            metrics[f"speedup@{tag}"] = speedup
            notes.append(f"{tag}: {v.cand_s * 1e3:.2f} ms, speedup {speedup:.2f}")
            last = v
            candidate_ran = True
        assert last is not None and last.cand_s and last.base_s
        np_, threads = sample.metadata["configs"][-1]
        speedup = last.base_s / last.cand_s
        metrics.update(
            runtime_s=last.cand_s,
            runtime_mean_s=last.mean_s or last.cand_s,
            baseline_s=last.base_s,
            speedup=speedup,
            efficiency=speedup / (np_ * threads),
            np=float(np_),
            threads=float(threads),
        )
        return Score(1.0, "pass", None, metrics, "; ".join(notes))
