"""ParEvalScorer: build a candidate as upstream does and run it over the launch sweep.

Verdict modes:
  upstream  the driver's own `Validation: PASS` line, printed from inside the candidate's
            process (upstream-compatible, FORGEABLE: the candidate can print it itself). The
            cheap hardening: source screens (screen.py), the full driver line sequence, exit 0
            on every run, timings that fit in the run's wall time.
  trusted   the verdict comes from a process with no candidate code (trusted.py); the
            candidate's process only computes outputs for inputs the trusted side recorded.

A candidate passes when every launch config it is run at passes (upstream: `are_all_valid`,
and pass@k's "all runs valid").
"""

from __future__ import annotations

import dataclasses
import hashlib
from dataclasses import dataclass
from typing import Any

from codegen_eval.failures import classify_compile_result, classify_exec, short_log
from codegen_eval.readers._renamed import backend_keyword
from codegen_eval.readers.pareval.build import (
    BUILD_LIMITS,
    CpuTokens,
    DriverObjects,
    exec_summary,
    launch,
    link_command,
    parse_driver_output,
    timing_consistent,
)
from codegen_eval.readers.pareval.checkout import MODELS, LaunchConfig, config_of, generated_code
from codegen_eval.readers.pareval.screen import driver_identifiers, screen_candidate
from codegen_eval.readers.pareval.trusted import TRUSTED_LABEL, TrustedRunner  # noqa: F401
from codegen_eval.types import Candidate, FailureClass, Sample, Score
from sandboxes import ExecStatus, Limits, open_sandbox

VERDICT_UPSTREAM = "upstream"
VERDICT_TRUSTED = "trusted"
UPSTREAM_LABEL = "in-process driver verdict (upstream-compatible, forgeable)"


@dataclass
class RunSettings:
    run_timeout_s: float = 120.0  # upstream run-all.py's --run-timeout default
    memory_mb: int = 4096
    pids: int = 512


async def _digest(sb: Any, path: str) -> str:
    try:
        return hashlib.sha256(await sb.read_file(path)).hexdigest()
    except (OSError, ValueError):  # gone, a symlink, a directory: not the file we built
        return ""


class ParEvalScorer:
    def __init__(
        self,
        *,
        driver_sources: dict[str, str],
        backend: str | None = None,
        verdict: str = VERDICT_UPSTREAM,
        cores: int = 2,
        niter: int = 5,
        settings: RunSettings | None = None,
        sandbox: str | None = None,  # deprecated spelling of backend
    ) -> None:
        if verdict not in (VERDICT_UPSTREAM, VERDICT_TRUSTED):
            raise ValueError(f"verdict must be {VERDICT_UPSTREAM!r} or {VERDICT_TRUSTED!r}")
        self.backend = backend_keyword(backend, sandbox, "ParEvalScorer")
        self.verdict = verdict
        self.tokens = CpuTokens(cores)
        self.objects = DriverObjects(driver_sources, self.backend)
        self.niter = niter
        self.settings = settings or RunSettings()
        self._trusted: Any = None
        self._idents: dict[str, frozenset[str]] = {}

    def _driver_identifiers(self, sample: Sample) -> frozenset[str]:
        key = str(sample.metadata.get("bench_dir", sample.id))
        if key not in self._idents:
            self._idents[key] = driver_identifiers(*sample.files.values())
        return self._idents[key]

    def run_limits(self) -> Limits:
        s = self.settings
        return Limits(wall_s=s.run_timeout_s, memory_mb=s.memory_mb, pids=s.pids, tmp_mb=256)

    async def score(self, sample: Sample, candidate: Candidate) -> Score:
        meta = sample.metadata
        if not candidate.code.strip():
            return Score(0.0, "fail", FailureClass.NO_CODE, explanation="no code in the reply")
        hit = screen_candidate(
            candidate.code,
            baseline_name=str(meta.get("baseline_name", "")),
            driver_identifiers=self._driver_identifiers(sample),
            in_process_verdict=self.verdict == VERDICT_UPSTREAM,
        )
        if hit is not None:
            return Score(
                0.0,
                "fail",
                FailureClass.with_detail(FailureClass.FORBIDDEN_CONSTRUCT, hit[0]),
                explanation=hit[1],
            )
        if self.verdict == VERDICT_TRUSTED:
            if self._trusted is None:
                self._trusted = TrustedRunner(self)
            score = await self._trusted.score(sample, candidate)
        else:
            score = await self._score_upstream(sample, candidate)
        if score.status in ("fail", "error") and (issue := meta.get("upstream_issue")):
            score.explanation = f"{score.explanation} [{issue}]"
        return score

    async def _score_upstream(self, sample: Sample, candidate: Candidate) -> Score:
        meta = sample.metadata
        spec = MODELS[str(meta["variant"])]
        obj = await self.objects.get(spec, self.tokens)
        if isinstance(obj, str):
            return Score(0.0, "error", FailureClass.INFRA_ERROR, explanation=obj)
        files: dict[str, str | bytes] = dict(sample.files)
        files[f"cpp/models/{spec.driver_obj}"] = obj
        files[f"gen/generated-code.{spec.gen_ext}"] = generated_code(sample, candidate.code)
        configs = [config_of(c) for c in meta["launch"]]
        async with open_sandbox(self.backend) as sb:
            async with self.tokens.hold(1):
                build = await sb.exec(
                    link_command(spec, str(meta["bench_dir"]), str(meta["problem_size"])),
                    files=files,
                    limits=BUILD_LIMITS,
                )
            if (fc := classify_compile_result(build)) is not None:
                return Score(0.0, "fail", fc, explanation=short_log(build.stderr + build.stdout))
            if spec.gpu and not sb.gpu_visible():
                return Score(
                    0.0,
                    "skipped",
                    FailureClass.SKIPPED_NO_GPU,
                    explanation="compiled; no GPU visible here, so not run",
                )
            return await self._run_sweep(sb, spec, configs)

    async def _run_sweep(self, sb: Any, spec: Any, configs: list[LaunchConfig]) -> Score:
        metrics: dict[str, float] = {}
        best: list[float] = []
        built = await _digest(sb, "a.out")
        for cfg in configs:
            limits = self.run_limits()
            if spec.gpu:
                limits = dataclasses.replace(limits, gpus=1)
            async with self.tokens.hold(cfg.resources):
                run = await launch(sb, spec, cfg, "a.out", limits)
            r = run.result
            if run.granted is not None:
                metrics.update(run.granted.metrics(cfg.label))
            where = f"at {cfg.label}"
            # The sweep reuses one build: a run that replaced it would choose what the
            # next config executes.
            if await _digest(sb, "a.out") != built:
                return Score(
                    0.0,
                    "fail",
                    FailureClass.with_detail(FailureClass.TAMPER, "binary_replaced"),
                    explanation=f"{where}: the run changed or removed the built a.out",
                )
            if r.status is ExecStatus.SKIPPED_NO_GPU:
                return Score(0.0, "skipped", FailureClass.SKIPPED_NO_GPU, explanation=r.stderr)
            if (fc := classify_exec(r)) is not None:
                return Score(
                    0.0,
                    "fail",
                    fc,
                    explanation=f"{where}: {exec_summary(r)}: {short_log(r.stderr + r.stdout)}",
                )
            outcome, values = parse_driver_output(r.stdout)
            if outcome == "fail":
                return Score(
                    0.0, "fail", FailureClass.WRONG_ANSWER, explanation=f"{where}: Validation: FAIL"
                )
            if outcome != "pass":
                detail = (
                    "incomplete_output" if outcome.startswith("no validation") else "bad_protocol"
                )
                return Score(
                    0.0,
                    "fail",
                    FailureClass.with_detail(FailureClass.TAMPER, detail),
                    explanation=f"{where}: {outcome}",
                )
            if not timing_consistent(values, r.wall_s, self.niter):
                return Score(
                    0.0,
                    "fail",
                    FailureClass.with_detail(FailureClass.TAMPER, "timing"),
                    explanation=(
                        f"{where}: reported {self.niter} x (Time {values['Time']:.4g} + "
                        f"BestSequential {values['BestSequential']:.4g}) s in a {r.wall_s:.3g} s run"
                    ),
                )
            metrics[f"runtime_s@{cfg.label}"] = values["Time"]
            metrics[f"best_s@{cfg.label}"] = values["BestSequential"]
            best.append(values["BestSequential"])
        largest = max(configs, key=lambda c: (c.resources, c.procs))
        metrics["runtime_s"] = metrics[f"runtime_s@{largest.label}"]
        metrics["best_sequential_s"] = min(best)
        metrics["resources"] = float(largest.resources)
        if metrics["runtime_s"] > 0:
            metrics["speedup"] = metrics["best_sequential_s"] / metrics["runtime_s"]
        return Score(
            1.0,
            "pass",
            metrics=metrics,
            explanation=f"{UPSTREAM_LABEL}; all of {', '.join(c.label for c in configs)} passed",
        )
