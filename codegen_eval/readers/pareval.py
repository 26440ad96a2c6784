"""ParEval: its prompts JSON plus the user's own ParEval checkout, whose C++ drivers we build and
run inside our sandbox (nothing is downloaded; the checkout's Python scripts are not used).

Layout read from the checkout (ParEval's):
    drivers/cpp/*.hpp                                         shared utilities (utilities.hpp)
    drivers/cpp/models/<model>-driver.cc (+ .h)               main() per parallelism model
    drivers/cpp/benchmarks/<problem_type>/<name>/cpu.cc       problem driver (init/compute/
                                                              best/validate/reset/destroy)
    drivers/cpp/benchmarks/<problem_type>/<name>/baseline.hpp reference implementation
The driver includes "generated-code.hpp": the prompt (which ends with the open signature)
followed by the candidate. A candidate that repeats the signature is used after the prompt's
preamble instead, so full functions and bare completions both work.

The binary prints "Validation: PASS|FAIL" and timings ("Time:", "BestSequential:"); the
verdict is parsed outside the sandbox; speedup = BestSequential / Time when both are printed,
with metrics["resources"] = threads or ranks for efficiency.

Samples that cannot be run here are excluded and listed with the reason (never silently
counted as failures): entries of KNOWN_BAD, parallelism models this harness does not build
(kokkos, hip, and cuda without a GPU toolchain), and prompts whose driver is missing from the
checkout.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

from codegen_eval.failures import classify_compile_result, classify_exec, short_log
from codegen_eval.types import Candidate, FailureClass, Sample, Score, Task

# (problem name, parallelism model or "*") -> why it is excluded. Extend with upstream issues
# as they are confirmed; each entry is reported in the run log and the report, never dropped.
KNOWN_BAD: dict[tuple[str, str], str] = {}

# How each parallelism model is built and run here.
MODELS: dict[str, dict[str, Any]] = {
    "serial": {
        "driver": "serial-driver.cc",
        "cxx": "g++",
        "flags": [],
        "args": ["1"],
        "resources": 1,
    },
    "omp": {
        "driver": "omp-driver.cc",
        "cxx": "g++",
        "flags": ["-fopenmp"],
        "args": ["1", "2"],
        "resources": 2,
    },
    "mpi": {
        "driver": "mpi-driver.cc",
        "cxx": "mpicxx",
        "flags": [],
        "args": ["1"],
        "resources": 2,
        "np": 2,
    },
    "mpi+omp": {
        "driver": "mpi-omp-driver.cc",
        "cxx": "mpicxx",
        "flags": ["-fopenmp"],
        "args": ["1", "1"],
        "resources": 2,
        "np": 2,
    },
}
_UNSUPPORTED = {
    "kokkos": "Kokkos is not built by this harness",
    "hip": "needs an AMD GPU (HIP)",
    "cuda": "needs an NVIDIA GPU",
}
_FLOAT = r"([-+0-9.eE]+)"


class ParEvalFormatError(ValueError):
    pass


def load_pareval(
    prompts_json: str | os.PathLike[str],
    checkout: str | os.PathLike[str],
    *,
    models: tuple[str, ...] | None = ("serial", "omp"),
    name: str = "pareval",
    sandbox: str | None = None,
    known_bad: dict[tuple[str, str], str] | None = None,
) -> Task:
    p, root = Path(prompts_json), Path(checkout)
    if not p.exists():
        raise FileNotFoundError(f"ParEval prompts file not found: {p}")
    drivers = root / "drivers" / "cpp"
    if not (drivers / "models").is_dir() or not (drivers / "benchmarks").is_dir():
        raise FileNotFoundError(
            f"{root} does not look like a ParEval checkout: expected drivers/cpp/models and "
            "drivers/cpp/benchmarks"
        )
    try:
        prompts = json.loads(p.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ParEvalFormatError(f"{p}: not JSON ({exc.msg} at line {exc.lineno})") from None
    if not isinstance(prompts, list):
        raise ParEvalFormatError(f"{p}: expected a JSON list of prompt objects")
    bad = {**KNOWN_BAD, **(known_bad or {})}
    samples: list[Sample] = []
    excluded: dict[str, str] = {}
    for i, rec in enumerate(prompts):
        missing = [
            f for f in ("name", "parallelism_model", "prompt", "problem_type") if f not in rec
        ]
        if missing:
            raise ParEvalFormatError(f"{p}: prompt #{i} lacks {', '.join(missing)}")
        pname, model = str(rec["name"]), str(rec["parallelism_model"])
        if models is not None and model not in models:
            continue
        sid = f"{pname}/{model}"
        reason = bad.get((pname, model)) or bad.get((pname, "*"))
        bench = drivers / "benchmarks" / str(rec["problem_type"]) / pname
        if reason is None and model in _UNSUPPORTED:
            reason = _UNSUPPORTED[model]
        if reason is None and model not in MODELS:
            reason = f"unknown parallelism model {model!r}"
        if reason is None and not (bench / "cpu.cc").exists():
            reason = f"no driver in the checkout ({bench.relative_to(root)}/cpu.cc)"
        if reason is None and not (drivers / "models" / MODELS[model]["driver"]).exists():
            reason = f"no {MODELS[model]['driver']} in the checkout"
        if reason is not None:
            excluded[sid] = reason
            continue
        files = {f.name: f.read_text(encoding="utf-8") for f in drivers.glob("*.hpp")}
        files.update(
            {
                f.name: f.read_text(encoding="utf-8")
                for f in bench.iterdir()
                if f.suffix in {".hpp", ".cc", ".h"}
            }
        )
        for f in (drivers / "models").iterdir():
            if f.name.startswith(MODELS[model]["driver"].removesuffix(".cc")) or f.suffix == ".h":
                files[f"models/{f.name}"] = f.read_text(encoding="utf-8")
        baseline = files.get("baseline.hpp", "")
        samples.append(
            Sample(
                id=sid,
                input=str(rec["prompt"]),
                target=_reference_from_baseline(str(rec["prompt"]), baseline),
                metadata={
                    "language": "cpp",
                    "variant": model,
                    "problem_type": rec["problem_type"],
                    "prompt": rec["prompt"],
                },
                files=files,
            )
        )
    return Task(
        name=name,
        dataset=samples,
        scorer=ParEvalScorer(sandbox=sandbox),
        metadata={"excluded": excluded, "source": str(p), "checkout": str(root)},
    )


def _signature(prompt: str) -> tuple[str, str]:
    """(preamble, function name) of a prompt that ends with `ret name(args) {`."""
    lines = prompt.rstrip().splitlines()
    last = lines[-1] if lines else ""
    m = re.search(r"(\w+)\s*\([^()]*(\([^()]*\)[^()]*)*\)\s*(const\s*)?\{\s*$", last)
    return "\n".join(lines[:-1]), (m.group(1) if m else "")


def _reference_from_baseline(prompt: str, baseline: str) -> str:
    """The baseline's implementation renamed to the prompt's function, so the reference solver
    self-checks a harness (ParEval baselines are named correct<Name>)."""
    _, fname = _signature(prompt)
    if not fname or not baseline:
        return ""
    ref = "correct" + fname[0].upper() + fname[1:]
    if ref not in baseline:
        return ""
    body = "\n".join(ln for ln in baseline.splitlines() if not ln.startswith("#pragma once"))
    return body.replace(ref, fname)


def generated_code(sample: Sample, code: str) -> str:
    prompt = str(sample.metadata.get("prompt", sample.input))
    preamble, fname = _signature(prompt)
    if fname and re.search(rf"\b{re.escape(fname)}\s*\([^;]*\)\s*(const\s*)?\{{", code):
        return f"{preamble}\n{code}\n"
    return f"{prompt}\n{code}\n"


class ParEvalScorer:
    def __init__(self, *, sandbox: str | None = None, wall_s: float = 60.0) -> None:
        self.sandbox = sandbox
        self.wall_s = wall_s

    async def score(self, sample: Sample, candidate: Candidate) -> Score:
        from sandboxes import Limits, open_sandbox

        if not candidate.code.strip():
            return Score(0.0, "fail", FailureClass.NO_CODE, explanation="no code in the reply")
        spec = MODELS[str(sample.metadata["variant"])]
        files = dict(sample.files)
        files["generated-code.hpp"] = generated_code(sample, candidate.code)
        driver = f"models/{spec['driver']}"
        build = [
            spec["cxx"],
            "-std=c++17",
            "-O2",
            *spec["flags"],
            "-I.",
            "-Imodels",
            "-o",
            "prog",
            driver,
            "cpu.cc",
        ]
        env = {
            "OMPI_ALLOW_RUN_AS_ROOT": "1",
            "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
            "OMP_NUM_THREADS": "2",
        }
        async with open_sandbox(self.sandbox) as sb:
            c = await sb.exec(
                build, files=files, limits=Limits(wall_s=120, memory_mb=2048), env=env
            )
            if (fc := classify_compile_result(c)) is not None:
                return Score(0.0, "fail", fc, explanation=short_log(c.stderr))
            run = ["./prog", *spec["args"]]
            if "np" in spec:
                run = [
                    "mpirun",
                    "-np",
                    str(spec["np"]),
                    "--oversubscribe",
                    "--mca",
                    "btl",
                    "self,vader",
                    *run,
                ]
            r = await sb.exec(run, limits=Limits(wall_s=self.wall_s, memory_mb=2048), env=env)
        fc = classify_exec(r)
        if fc is not None:
            return Score(0.0, "fail", fc, explanation=short_log(r.stderr + r.stdout))
        m = re.search(r"Validation:\s*(PASS|FAIL)", r.stdout)
        if m is None:
            return Score(
                0.0,
                "fail",
                FailureClass.WRONG_ANSWER,
                explanation="no validation line in the driver output",
            )
        metrics: dict[str, float] = {"resources": float(spec["resources"])}
        t = re.search(rf"^Time:\s*{_FLOAT}", r.stdout, re.MULTILINE)
        b = re.search(rf"^BestSequential:\s*{_FLOAT}", r.stdout, re.MULTILINE)
        if t:
            metrics["runtime_s"] = float(t.group(1))
        if t and b and float(t.group(1)) > 0:
            metrics["speedup"] = float(b.group(1)) / float(t.group(1))
        if m.group(1) == "PASS":
            return Score(1.0, "pass", metrics=metrics)
        return Score(
            0.0, "fail", FailureClass.WRONG_ANSWER, metrics=metrics, explanation="Validation: FAIL"
        )
