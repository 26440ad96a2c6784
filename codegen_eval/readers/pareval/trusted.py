"""The trusted verdict for ParEval: decided by a process that contains no candidate code.

Upstream's driver calls the candidate and the baseline in one process and prints the verdict
there, so the candidate can forge it. Here (see pareval_trusted.h for the C++ side):

  1. checker (built once per problem and model from ParEval's own cpu.cc, with a stub in
     place of the candidate function; no candidate code) runs in `record` mode in a trusted
     sandbox: validate() runs with the baseline answering, and every call's arguments are
     written to calls.<rank>.bin. Cached per (problem, model, ranks).
  2. producer (the candidate compiled as upstream compiles it, with our main, the driver cut
     after the candidate's code and every baseline function body a trap: producer_files)
     runs in the candidate's sandbox at each launch config, once per recorded call: it sees
     that call only, answers it and writes the outputs to results.<rank>.bin, which are read
     back before the next call is shown. A later call can carry what an earlier answer should
     be (validate() reusing its output vector, or starting a trial from the previous one's
     answer); shown all at once, the candidate copied it and only the last trial was judged.
     That is all it can influence.
  3. checker runs in `check` mode in a fresh trusted sandbox with the recorded calls and the
     candidate's results: validate() compares them with the baseline exactly as upstream's
     driver does, and rank 0 prints the verdict.

What it covers: serial, omp, mpi, mpi+omp, whose functions take std::vector / std::array /
std::string / scalars / plain structs (all 60 ParEval problems). Not timing: the candidate's
speed is measured only by upstream's in-process driver (see docs/codegen-eval.md for why a
trusted timer for ParEval is out of reach), so trusted runs report no speedup.
"""

from __future__ import annotations

import asyncio
import re
import secrets
import shlex
from importlib import resources
from typing import TYPE_CHECKING, Any

from codegen_eval.failures import classify_compile_result, classify_exec, short_log
from codegen_eval.readers.pareval.bodies import declared_functions, driver_prefix, trap_bodies
from codegen_eval.readers.pareval.build import (
    BUILD_LIMITS,
    exec_summary,
    launch,
    run_command,
)
from codegen_eval.readers.pareval.checkout import (
    MODELS,
    LaunchConfig,
    ModelSpec,
    config_of,
    generated_code,
    patch_prompt,
    prompt_signature,
)
from codegen_eval.types import Candidate, FailureClass, Sample, Score
from sandboxes import open_sandbox

if TYPE_CHECKING:
    from codegen_eval.readers.pareval.scorer import ParEvalScorer

TRUSTED_LABEL = "trusted verdict (no candidate code in the deciding process)"
HEADER = "pareval_trusted.h"
MAX_RESULTS_BYTES = 64 << 20  # per rank; validation inputs are small


def trusted_header() -> str:
    return resources.files("codegen_eval.readers.pareval").joinpath(HEADER).read_text("utf-8")


def stub_code(sample: Sample) -> str | None:
    """The checker's generated-code.hpp: the prompt (NO_INLINE-patched like upstream), the
    baseline declared, and a body that hands every call to pe_trusted::Stub."""
    meta = sample.metadata
    prompt, baseline, decl = (
        str(meta["prompt"]),
        str(meta["baseline_name"]),
        str(meta["baseline_decl"]),
    )
    sig = prompt_signature(prompt)
    if sig is None or not baseline or not decl:
        return None
    lines = patch_prompt(prompt).split("\n")
    args = ", ".join([f"&{baseline}", *sig.param_names])
    return "\n".join(
        [
            f'#include "{HEADER}"',
            *lines[:-1],
            decl,
            lines[-1],
            # `::name`: a parameter may share the function's name (42_sort_sorted_ranks'
            # `ranks`), and inside the body the bare name would be the parameter
            f"    return pe_trusted::Stub<decltype(&::{sig.name})>::call({args});",
            "}",
            "",
        ]
    )


def producer_files(sample: Sample, spec: ModelSpec) -> dict[str, str | bytes]:
    """The harness files for the candidate's build, which must hold no working copy of the
    code the verdict compares with: the candidate reaches whatever is in its binary (the
    driver's best() called with a fake Context, a function found in its own symbol table,
    names built with `##`), so renaming is no defence and removal is.

    * the benchmark driver is cut after its `#include "generated-code.hpp"`: the candidate's
      code is compiled after the same includes as upstream's, and best(), validate() and a
      baseline.hpp included after the answer are not in the producer at all;
    * every function body in the benchmark's other headers (baseline.hpp: the baseline, its
      helpers, validation references such as fftCooleyTookey) is a trap, except the helpers
      the prompt declares for the answer to call (05_fft_inverse_fft's `fft`);
    * the baseline is also renamed to a random name, so a call by name that the source screen
      cannot see (a macro) fails to build rather than reaching the trap at run time."""
    meta = sample.metadata
    name = str(meta.get("baseline_name", ""))
    bench = str(meta["bench_dir"])
    keep = declared_functions(str(meta["prompt"])) - {name}
    hidden = "pe_" + secrets.token_hex(12)
    files: dict[str, str | bytes] = dict(sample.files)
    for key, text in sample.files.items():
        if not key.startswith(bench + "/") or not isinstance(text, str):
            continue
        if key == f"{bench}/{spec.bench_file}":
            text = driver_prefix(text)
        elif key.endswith((".hpp", ".h", ".cuh")):
            text = trap_bodies(text, keep)
        files[key] = re.sub(rf"\b{re.escape(name)}\b", hidden, text) if name else text
    return files


def _build(spec: ModelSpec, meta: dict[str, Any], main_file: str, out: str) -> list[str]:
    return shlex.split(
        f'{spec.cxx} {spec.cxxflags} -Igen -DDRIVER_PROBLEM_SIZE="{meta["problem_size"]}" '
        f"-Icpp -Icpp/models {spec.macro} {main_file} -o {out}"
    )


def _tamper(why: str) -> Score:
    return Score(
        0.0, "fail", FailureClass.with_detail(FailureClass.TAMPER, "bad_protocol"), explanation=why
    )


def _rank_files(stem: str, procs: int) -> list[str]:
    return [f"{stem}.{r}.bin" for r in range(procs)]


def split_records(data: bytes) -> list[bytes] | None:
    """The records of a calls/results file, each with its own length prefix (a little-endian
    u64), or None if the file does not parse."""
    out: list[bytes] = []
    at = 0
    while at < len(data):
        if len(data) - at < 8:
            return None
        end = at + 8 + int.from_bytes(data[at : at + 8], "little")
        if end > len(data):
            return None
        out.append(data[at:end])
        at = end
    return out


def calls_one_by_one(calls: dict[str, bytes]) -> list[dict[str, bytes]] | str:
    """Each recorded call on its own: {calls.<rank>.bin: that call's record} per call."""
    per_rank: dict[str, list[bytes]] = {}
    for name, data in calls.items():
        if (recs := split_records(data)) is None:
            return f"the recorded {name} does not parse"
        per_rank[name] = recs
    counts = {len(recs) for recs in per_rank.values()}
    if len(counts) != 1:
        return f"the ranks made different numbers of validation calls: {sorted(counts)}"
    (n,) = counts
    return [{name: recs[k] for name, recs in per_rank.items()} for k in range(n)]


class TrustedRunner:
    def __init__(self, scorer: ParEvalScorer) -> None:
        self.scorer = scorer
        self.header = trusted_header()
        self._checkers: dict[str, bytes | str] = {}
        self._records: dict[tuple[str, int], dict[str, bytes] | str] = {}
        self._locks: dict[Any, asyncio.Lock] = {}

    # ------------------------------------------------------------------ trusted side
    async def checker(self, sample: Sample, spec: ModelSpec) -> bytes | str:
        key = f"{sample.metadata['bench_dir']}|{spec.name}"
        async with self._locks.setdefault(key, asyncio.Lock()):
            if key not in self._checkers:
                self._checkers[key] = await self._build_checker(sample, spec)
            return self._checkers[key]

    async def _build_checker(self, sample: Sample, spec: ModelSpec) -> bytes | str:
        stub = stub_code(sample)
        if stub is None:
            return "no baseline function found for the trusted checker"
        meta = sample.metadata
        files: dict[str, str | bytes] = dict(sample.files)
        files[f"gen/{HEADER}"] = self.header
        files[f"gen/generated-code.{spec.gen_ext}"] = stub
        files["checker.cc"] = (
            f'#include "{meta["bench_dir"]}/{spec.bench_file}"\n'
            "int main(int argc, char **argv) {\n"
            "    return pe_trusted::checker_main<Context>(argc, argv, &init, &validate, &destroy);\n"
            "}\n"
        )
        async with self.scorer.tokens.hold(1), open_sandbox(self.scorer.backend) as sb:
            r = await sb.exec(
                _build(spec, meta, "checker.cc", "checker"), files=files, limits=BUILD_LIMITS
            )
            if not r.ok:
                return f"the trusted checker did not build: {short_log(r.stderr)[-600:]}"
            return await sb.read_file("checker")

    async def recording(
        self, sample: Sample, spec: ModelSpec, checker: bytes, procs: int
    ) -> dict[str, bytes] | str:
        key = (f"{sample.metadata['bench_dir']}|{spec.name}", procs)
        async with self._locks.setdefault(key, asyncio.Lock()):
            if key not in self._records:
                self._records[key] = await self._record(spec, checker, procs)
            return self._records[key]

    async def _run_checker(
        self, spec: ModelSpec, checker: bytes, procs: int, mode: str, files: dict[str, bytes]
    ) -> tuple[Any, dict[str, bytes]]:
        cfg = LaunchConfig(procs, 1, (mode,))
        argv, env = run_command(spec, cfg, exe="./checker")
        async with open_sandbox(self.scorer.backend) as sb:
            await sb.write_file("checker", checker, executable=True)
            for name, data in files.items():
                await sb.write_file(name, data)
            async with self.scorer.tokens.hold(procs):
                r = await sb.exec(argv, limits=self.scorer.run_limits(), env=env)
            out: dict[str, bytes] = {}
            if mode == "record" and r.ok:
                for name in _rank_files("calls", procs):
                    out[name] = await sb.read_file(name, max_bytes=MAX_RESULTS_BYTES)
            return r, out

    async def _record(self, spec: ModelSpec, checker: bytes, procs: int) -> dict[str, bytes] | str:
        r, calls = await self._run_checker(spec, checker, procs, "record", {})
        if not r.ok or "PE_VERDICT PASS" not in r.stdout:
            # validate() stops at the first trial the baseline fails, so the later calls
            # cannot be recorded and no candidate can be judged
            return (
                "the baseline does not pass its own driver here, so the trusted mode cannot "
                f"record the validation calls ({exec_summary(r)}): "
                f"{short_log(r.stdout + r.stderr)[-400:]}"
            )
        return calls

    # -------------------------------------------------------------------- per candidate
    async def score(self, sample: Sample, candidate: Candidate) -> Score:
        meta = sample.metadata
        spec = MODELS[str(meta["variant"])]
        checker = await self.checker(sample, spec)
        if isinstance(checker, str):
            return Score(0.0, "error", FailureClass.INFRA_ERROR, explanation=checker)
        sig = prompt_signature(str(meta["prompt"]))
        assert sig is not None  # stub_code succeeded
        try:
            files = producer_files(sample, spec)
        except ValueError as exc:  # a checkout whose driver or header we cannot cut
            why = f"cannot build the producer without the baseline: {exc}"
            return Score(0.0, "error", FailureClass.INFRA_ERROR, explanation=why)
        files[f"gen/{HEADER}"] = self.header
        files[f"gen/generated-code.{spec.gen_ext}"] = generated_code(sample, candidate.code)
        files["producer.cc"] = (
            f'#include "{meta["bench_dir"]}/{spec.bench_file}"\n'
            f'#include "gen/{HEADER}"\n'
            "int main(int argc, char **argv) {\n"
            f"    return pe_trusted::producer_main(&::{sig.name}, argc, argv);\n"
            "}\n"
        )
        configs = [config_of(c) for c in meta["launch"]]
        async with open_sandbox(self.scorer.backend) as sb:
            async with self.scorer.tokens.hold(1):
                build = await sb.exec(
                    _build(spec, meta, "producer.cc", "producer"), files=files, limits=BUILD_LIMITS
                )
            if (fc := classify_compile_result(build)) is not None:
                return Score(0.0, "fail", fc, explanation=short_log(build.stderr + build.stdout))
            metrics = {"resources": float(max(c.resources for c in configs))}
            for cfg in configs:
                verdict = await self._one_config(sb, sample, spec, checker, cfg, metrics)
                if verdict is not None:
                    return verdict
        return Score(
            1.0,
            "pass",
            metrics=metrics,
            explanation=f"{TRUSTED_LABEL}; all of {', '.join(c.label for c in configs)} passed",
        )

    async def _one_config(
        self,
        sb: Any,
        sample: Sample,
        spec: ModelSpec,
        checker: bytes,
        cfg: LaunchConfig,
        metrics: dict[str, float],
    ) -> Score | None:
        where = f"at {cfg.label}"
        calls = await self.recording(sample, spec, checker, cfg.procs)
        if isinstance(calls, str):
            return Score(0.0, "error", FailureClass.INFRA_ERROR, explanation=calls)
        one_by_one = calls_one_by_one(calls)
        if isinstance(one_by_one, str):
            return Score(0.0, "error", FailureClass.INFRA_ERROR, explanation=one_by_one)
        outputs = _rank_files("results", cfg.procs)
        answers: dict[str, list[bytes]] = {name: [] for name in outputs}
        for k, call in enumerate(one_by_one):
            # our own earlier answers travel back in, for output vectors validate() reuses
            earlier = {f"earlier.{r}.bin": b"".join(answers[f"results.{r}.bin"]) for r in range(cfg.procs)}  # fmt: skip
            at = f"{where}, validation call {k + 1} of {len(one_by_one)}"
            got = await self._answer(sb, spec, cfg, {**call, **earlier}, outputs, at, metrics)
            if isinstance(got, Score):
                return got
            for name in outputs:
                answers[name].append(got[name])
        results = {name: b"".join(parts) for name, parts in answers.items()}
        check, _ = await self._run_checker(spec, checker, cfg.procs, "check", {**calls, **results})
        return self._verdict(check, where)

    async def _answer(
        self,
        sb: Any,
        spec: ModelSpec,
        cfg: LaunchConfig,
        inputs: dict[str, bytes],
        outputs: list[str],
        where: str,
        metrics: dict[str, float],
    ) -> Score | dict[str, bytes]:
        """One producer run on one recorded call: its answer per rank (one record each)."""
        async with self.scorer.tokens.hold(cfg.resources):
            run = await launch(
                sb, spec, cfg, "producer", self.scorer.run_limits(), inputs=inputs,
                outputs=outputs, max_output_bytes=MAX_RESULTS_BYTES,
            )  # fmt: skip
        r = run.result
        if run.granted is not None:
            metrics.update(run.granted.metrics(cfg.label))
        if (fc := classify_exec(r)) is not None:
            return Score(
                0.0,
                "fail",
                fc,
                explanation=f"{where}: {exec_summary(r)}: {short_log(r.stderr + r.stdout)}",
            )
        for name in outputs:
            if len(run.files[name]) > MAX_RESULTS_BYTES:
                return _tamper(f"{where}: {name} is larger than {MAX_RESULTS_BYTES} bytes")
            records = split_records(run.files[name])
            if records is None or len(records) != 1:
                return _tamper(f"{where}: {name} is not one answer to the one call shown")
        return {name: run.files[name] for name in outputs}

    @staticmethod
    def _verdict(check: Any, where: str) -> Score | None:
        out = check.stdout
        if "PE_BAD_RESULTS" in out:
            line = next(ln for ln in out.splitlines() if "PE_BAD_RESULTS" in ln)
            return _tamper(f"{where}: the candidate's outputs do not parse: {line}")
        if "PE_STEERED" in out:
            # validate()'s later calls depend on the candidate's earlier answers (no ParEval
            # driver does this today): they differ from the baseline's, which is a wrong answer
            why = f"{where}: the candidate's answers led validate() off the recorded calls"
            return Score(0.0, "fail", FailureClass.WRONG_ANSWER, explanation=why)
        if "PE_DIVERGED" in out or "PE_PROTOCOL" in out:
            why = f"{where}: trusted checker: {short_log(out + check.stderr)}"
            return Score(0.0, "error", FailureClass.INFRA_ERROR, explanation=why)
        if check.ok and "PE_VERDICT PASS" in out:
            return None
        if check.ok and "PE_VERDICT FAIL" in out:
            why = f"{where}: the trusted checker's validate() failed"
            if "PE_NONFINITE" in out:
                why = f"{where}: an answer holds NaN or Inf where the baseline's value is finite"
            return Score(0.0, "fail", FailureClass.WRONG_ANSWER, explanation=why)
        # validate() crashed or hung on what the candidate returned (e.g. an output vector
        # shorter than the driver indexes): the candidate's answer is wrong.
        why = (
            f"{where}: the trusted checker failed on the candidate's outputs: {exec_summary(check)}"
        )
        return Score(0.0, "fail", FailureClass.WRONG_ANSWER, explanation=why)
