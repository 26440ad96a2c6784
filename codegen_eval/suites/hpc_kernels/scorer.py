"""Scorer of the hpc-kernels suite: build the candidate into our driver, run it at every
configuration of its variant, and read the verdict the driver wrote.

Trust: nothing the candidate prints is read. Each run gets a fresh random nonce (env
HPCK_NONCE, wiped by the driver before any candidate code runs) and seed; the driver compares
the candidate's output with its own sequential reference recomputed from the seed and writes
``hpck-<nonce>.res`` with a keyed checksum. No file, a bad checksum or pass=0 is a fail.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass

from codegen_eval.failures import classify_compile_result, classify_exec, short_log
from codegen_eval.types import Candidate, FailureClass, Sample, Score
from sandboxes import ExecStatus, Limits, Sandbox, open_sandbox, toolchains

_STD = ["-O2", "-std=gnu11"]


def fnv1a64(text: str) -> int:
    """Must match hpck_mac() in harness.h."""
    h = 0xCBF29CE484222325
    for byte in text.encode():
        h = ((h ^ byte) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h


@dataclass(frozen=True, slots=True)
class Verdict:
    passed: bool
    cand_s: float
    base_s: float
    err: float
    detail: str


def parse_verdict(text: str, nonce: str) -> Verdict | None:
    """The driver's verdict, or None when the file is malformed or its checksum is wrong."""
    lines = text.splitlines()
    if len(lines) != 2 or not lines[1].startswith("mac="):
        return None
    payload = lines[0]
    if lines[1] != f"mac={fnv1a64(f'{nonce}|{payload}'):016x}":
        return None
    fields = dict(kv.split("=", 1) for kv in payload.split() if "=" in kv)
    try:
        return Verdict(
            passed=fields["pass"] == "1",
            cand_s=float(fields["cand_s"]),
            base_s=float(fields["base_s"]),
            err=float(fields["err"]),
            detail=fields.get("detail", "-"),
        )
    except (KeyError, ValueError):
        return None


def _build_commands(variant: str) -> tuple[list[str], list[str]]:
    """(compile both translation units, link) for a variant. Two steps so a compile error in
    the candidate and a link error (wrong name or signature, a main()) are told apart."""
    if variant == "cuda":
        return (
            ["nvcc", "-O2", "-c", "p/driver.cu", "solution.cu"],
            ["nvcc", "-O2", "driver.o", "solution.o", "-o", "prog"],
        )
    cc = "mpicc" if variant.startswith("mpi") else "gcc"
    flags = [*_STD, *(["-fopenmp"] if "openmp" in variant else [])]
    defs = ["-DHPCK_MPI"] if variant.startswith("mpi") else []
    return (
        [cc, *flags, *defs, "-c", "p/driver.c", "solution.c"],
        [cc, *flags, "driver.o", "solution.o", "-o", "prog", "-lm"],
    )


class HpcKernelsScorer:
    """Scorer protocol implementation. `reps`: timed repetitions per run (best is kept);
    `run_timeout_s`: wall limit per run (a hang or deadlock becomes timeout)."""

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
        async with open_sandbox(self.backend) as sb:
            return await self._score_in(sb, sample, candidate.code)

    async def _score_in(self, sb: Sandbox, sample: Sample, code: str) -> Score:
        variant: str = sample.metadata["variant"]
        is_cuda = variant == "cuda"
        files = dict(sample.files)
        if is_cuda:  # nvcc needs the .cu suffix to compile the driver as CUDA
            files["p/driver.cu"] = files.pop("p/driver.c")
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
        return await self._run_all(sb, sample)

    async def _run_all(self, sb: Sandbox, sample: Sample) -> Score:
        variant: str = sample.metadata["variant"]
        recipe = toolchains.get(
            "cuda" if variant == "cuda" else "mpi" if variant.startswith("mpi") else "c"
        )
        metrics: dict[str, float] = {}
        notes: list[str] = []
        last: Verdict | None = None
        for np_, threads in sample.metadata["configs"]:
            nonce, seed = secrets.token_hex(16), secrets.randbelow(2**31)
            tag = f"np{np_}xt{threads}"
            env = {
                "HPCK_NONCE": nonce,
                "HPCK_SEED": str(seed),
                "HPCK_REPS": str(self.reps),
                "OMP_NUM_THREADS": str(threads),
                # idle OpenMP workers and MPI ranks must not spin while the driver times
                # its sequential baseline on the same cores
                "OMP_WAIT_POLICY": "passive",
                "OMPI_MCA_mpi_yield_when_idle": "1",
                # vader's single-copy path (process_vm_readv) is refused inside the sandbox
                "OMPI_MCA_btl_vader_single_copy_mechanism": "none",
            }
            limits = Limits(
                wall_s=self.run_timeout_s,
                memory_mb=self.memory_mb,
                pids=512,
                gpus=1 if variant == "cuda" else 0,
            )
            r = await recipe.run(
                sb, "prog", np=np_ if variant.startswith("mpi") else None, limits=limits, env=env
            )
            where = f"at np={np_} threads={threads} (seed {seed})"
            if r.status == ExecStatus.SKIPPED_NO_GPU:
                return Score(0.0, "skipped", FailureClass.SKIPPED_NO_GPU, metrics, r.stderr)
            if (cls := classify_exec(r)) is not None:
                log = short_log(r.stderr + r.stdout, 1500)
                return Score(0.0, "fail", cls, metrics, f"{cls} {where}\n{log}")
            try:
                text = await sb.read_text(f"hpck-{nonce}.res", max_bytes=4096)
            except (FileNotFoundError, PermissionError):
                text = ""
            verdict = parse_verdict(text, nonce) if text else None
            if verdict is None:
                # the process ended "fine" without our driver finishing (exit() in the
                # candidate, a forged or truncated file): never a pass
                why = "no_verdict" if not text else "bad_verdict"
                return Score(0.0, "fail", f"{FailureClass.WRONG_ANSWER}:{why}", metrics,
                             f"driver verdict missing or invalid {where}")  # fmt: skip
            if not verdict.passed:
                return Score(0.0, "fail", FailureClass.WRONG_ANSWER, metrics,
                             f"{verdict.detail} {where}, error measure {verdict.err:g}")  # fmt: skip
            speedup = verdict.base_s / verdict.cand_s if verdict.cand_s > 0 else 0.0
            metrics[f"runtime_s@{tag}"] = verdict.cand_s
            metrics[f"speedup@{tag}"] = speedup
            notes.append(f"{tag}: {verdict.cand_s * 1e3:.2f} ms, speedup {speedup:.2f}")
            last = verdict
        assert last is not None
        np_, threads = sample.metadata["configs"][-1]
        speedup = last.base_s / last.cand_s if last.cand_s > 0 else 0.0
        metrics.update(
            runtime_s=last.cand_s,
            baseline_s=last.base_s,
            speedup=speedup,
            efficiency=speedup / (np_ * threads),
            np=float(np_),
            threads=float(threads),
        )
        return Score(1.0, "pass", None, metrics, "; ".join(notes))
