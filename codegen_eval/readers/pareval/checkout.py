"""What a ParEval checkout says about building and running a prompt, read the way upstream's
own driver scripts read it (drivers/cpp/cpp_driver_wrapper.py, drivers/driver_wrapper.py,
drivers/cpp/Makefile, prompts/create-serial-tests.py). Nothing here runs code.

Layout (the user's clone of parallelcodefoundry/ParEval):
    prompts/generation-prompts.json, prompts/translation-prompts.json
    drivers/problem-sizes.json            {problem: {model: "(1<<20)"}}
    drivers/launch-configs.json           {model: {"format": "srun ... {exec_path} {args} ...",
                                                   "params": [{"num_threads": 2}, ...]}}
    drivers/cpp/utilities.hpp             needs -DUSE_<MODEL> and -DDRIVER_PROBLEM_SIZE
    drivers/cpp/models/<model>-driver.cc  main(); built to an object first (the Makefile)
    drivers/cpp/benchmarks/<type>/<name>/{cpu.cc,gpu.cu,kokkos.cc,baseline.hpp}
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from codegen_eval.ctext import matching_brace
from codegen_eval.errors import CodegenEvalError
from codegen_eval.readers.pareval.bodies import declared_functions, helpers_called
from codegen_eval.types import Sample

# The seven parallelism models upstream knows, in its order.
ALL_MODELS = ("serial", "omp", "mpi", "mpi+omp", "kokkos", "cuda", "hip")
DEFAULT_PROBLEM_SIZE = "(1<<18)"  # upstream's fallback when problem-sizes.json has no entry


@dataclass(frozen=True)
class ModelSpec:
    """How upstream builds one parallelism model. `cxx`/`cxxflags` are the link step of
    cpp_driver_wrapper.COMPILER_SETTINGS; `obj_cxx`/`obj_flags` the Makefile's rule for the
    model's driver object."""

    name: str
    cxx: str
    cxxflags: str
    obj_cxx: str
    obj_flags: str
    driver_src: str  # under drivers/cpp/models/
    bench_file: str  # under drivers/cpp/benchmarks/<type>/<name>/
    gen_ext: str = "hpp"  # generated-code.<ext>
    mpi: bool = False
    gpu: bool = False

    @property
    def driver_obj(self) -> str:
        return self.driver_src.rsplit(".", 1)[0] + ".o"

    @property
    def macro(self) -> str:
        # Upstream passes f"-DUSE_{model.upper()}": for mpi+omp that is `-DUSE_MPI+OMP`, which
        # the preprocessor reads as `#define USE_MPI +OMP 1`, so mpi+omp builds see USE_MPI
        # (not USE_MPI_OMP). We pass the same text so the same code paths are compiled.
        return f"-DUSE_{self.name.upper()}"


MODELS: dict[str, ModelSpec] = {
    "serial": ModelSpec(
        "serial", "g++", "-std=c++17 -O3", "g++", "-std=c++17 -O3",
        "serial-driver.cc", "cpu.cc",
    ),
    "omp": ModelSpec(
        "omp", "g++", "-std=c++17 -O3 -fopenmp", "g++", "-std=c++17 -O3 -fopenmp",
        "omp-driver.cc", "cpu.cc",
    ),
    "mpi": ModelSpec(
        "mpi", "mpicxx", "-std=c++17 -O3", "mpicxx", "-std=c++17 -O3",
        "mpi-driver.cc", "cpu.cc", mpi=True,
    ),
    "mpi+omp": ModelSpec(
        "mpi+omp", "mpicxx", "-std=c++17 -O3 -fopenmp", "mpicxx", "-std=c++17 -O3 -fopenmp",
        "mpi-omp-driver.cc", "cpu.cc", mpi=True,
    ),
    "cuda": ModelSpec(
        "cuda", "nvcc",
        '-std=c++17 --generate-code arch=compute_80,code=sm_80 -O3 -Xcompiler "-std=c++17 -O3"',
        "nvcc", "-std=c++17 -O3", "cuda-driver.cu", "gpu.cu", gen_ext="cuh", gpu=True,
    ),
    "hip": ModelSpec(
        "hip", "hipcc",
        '-std=c++17 -O3 -Xcompiler "-std=c++17" -Xcompiler "-O3" -Wno-unused-result',
        "hipcc", "-std=c++17 -O3 -Wno-unused-result", "hip-driver.cu", "gpu.cu",
        gen_ext="cuh", gpu=True,
    ),
}  # fmt: skip


class ParEvalFormatError(CodegenEvalError, ValueError):
    """A file of the checkout is not in the shape upstream's scripts expect."""


# ----------------------------------------------------------------------------- launch plans
@dataclass(frozen=True)
class LaunchConfig:
    """One entry of launch-configs.json's params, translated for a local executor: `procs`
    MPI ranks (from srun's -n), `threads` (num_threads, 1 if absent) and the program's own
    arguments after `{exec_path} {args}` (e.g. the omp driver's thread count)."""

    procs: int
    threads: int
    argv: tuple[str, ...]
    params: dict[str, Any] = field(default_factory=dict, compare=False)

    @property
    def resources(self) -> int:
        return self.procs * self.threads

    @property
    def label(self) -> str:
        return ",".join(f"{k}={v}" for k, v in self.params.items()) or "default"


@dataclass(frozen=True)
class LaunchPlan:
    model: str
    configs: tuple[LaunchConfig, ...]  # the ones run here, in upstream's order
    dropped: tuple[LaunchConfig, ...]  # over the cap
    cap: int

    @property
    def largest(self) -> LaunchConfig:
        """The config whose runtime feeds speedup_n@k: upstream fixes n at its largest
        config (omp 32 threads, mpi 512 ranks, ...); here the largest one run."""
        return max(self.configs, key=lambda c: (c.resources, c.procs))

    def describe(self) -> dict[str, Any]:
        return {
            "cap": self.cap,
            "run": [c.label for c in self.configs],
            "dropped_over_cap": [c.label for c in self.dropped],
        }


_LAUNCHERS = {"srun", "mpirun", "mpiexec"}
_NP_FLAGS = {"-n", "--ntasks", "-np"}


def launch_plan(model: str, entry: dict[str, Any], cap: int) -> LaunchPlan:
    """Translate upstream's launch entry for `model`. srun's -N/-c/--tasks-per-node have no
    local meaning (one node; thread counts reach the program as its argument); -n is the rank
    count. Configs needing more than `cap` cores (ranks x threads) are dropped and listed."""
    fmt, params = entry.get("format"), entry.get("params")
    if not isinstance(fmt, str) or not isinstance(params, list) or not params:
        raise ParEvalFormatError(f"launch config of {model!r} needs a format and params")
    tokens = fmt.split()
    if "{exec_path}" not in tokens:
        raise ParEvalFormatError(f"launch format of {model!r} has no {{exec_path}}: {fmt!r}")
    at = tokens.index("{exec_path}")
    prefix, suffix = tokens[:at], [t for t in tokens[at + 1 :] if t != "{args}"]
    if prefix and prefix[0] not in _LAUNCHERS:
        raise ParEvalFormatError(f"launch format of {model!r}: unknown launcher {prefix[0]!r}")
    configs: list[LaunchConfig] = []
    for p in params:
        try:
            pre = [t.format(**p) for t in prefix]
            argv = tuple(t.format(**p) for t in suffix)
        except (KeyError, IndexError) as exc:
            raise ParEvalFormatError(f"launch config of {model!r}: {exc} not in {p}") from None
        procs = 1
        for i, tok in enumerate(pre[:-1]):
            if tok in _NP_FLAGS:
                procs = int(pre[i + 1])
        configs.append(LaunchConfig(procs, int(p.get("num_threads", 1)), argv, dict(p)))
    kept = tuple(c for c in configs if c.resources <= cap)
    if not kept:  # the smallest config is bigger than the machine: run it oversubscribed
        kept = (min(configs, key=lambda c: c.resources),)
    dropped = tuple(c for c in configs if c not in kept)
    return LaunchPlan(model, kept, dropped, cap)


def load_launch_configs(path: Path) -> dict[str, dict[str, Any]]:
    return _read_json(path, dict)


def load_problem_sizes(path: Path) -> dict[str, dict[str, str]]:
    return _read_json(path, dict) if path.exists() else {}


def _read_json(path: Path, kind: type) -> Any:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise FileNotFoundError(f"{path} not found (is this a ParEval checkout?)") from None
    except json.JSONDecodeError as exc:
        raise ParEvalFormatError(f"{path}: not JSON ({exc.msg} at line {exc.lineno})") from None
    if not isinstance(data, kind):
        raise ParEvalFormatError(f"{path}: expected a JSON {kind.__name__}")
    return data


# --------------------------------------------------------------------------- source helpers
_SIGNATURE = re.compile(r"(\w+)\s*\((.*)\)\s*(?:const\s*)?\{\s*$")


def patch_prompt(prompt: str) -> str:
    """Upstream's patch_prompt: NO_INLINE after the first space-separated word of the last
    line (the return type), so `compute()` really calls the candidate."""
    lines = prompt.split("\n")
    parts = lines[-1].split(" ")
    if len(parts) < 2:
        raise ParEvalFormatError(f"cannot find the return type in {lines[-1]!r}")
    parts.insert(1, "NO_INLINE")
    return "\n".join([*lines[:-1], " ".join(parts)])


def split_params(params: str) -> list[str]:
    """Top-level comma split of a parameter list (templates keep their commas)."""
    out, depth, cur = [], 0, ""
    for ch in params:
        if ch in "<([":
            depth += 1
        elif ch in ">)]":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        out.append(cur.strip())
    return out


def param_name(param: str) -> str:
    names = re.findall(r"[A-Za-z_]\w*", param.split("=")[0])
    return names[-1] if names else ""


@dataclass(frozen=True)
class Signature:
    name: str
    params: tuple[str, ...]  # declarations, e.g. "std::vector<double> const& x"

    @property
    def param_names(self) -> tuple[str, ...]:
        return tuple(param_name(p) for p in self.params)


def prompt_signature(prompt: str) -> Signature | None:
    """The function a prompt opens on its last line (`ret name(args) {`)."""
    last = prompt.rstrip().split("\n")[-1]
    m = _SIGNATURE.search(last)
    if m is None:
        return None
    return Signature(m.group(1), tuple(split_params(m.group(2))))


def function_body(source: str, name: str) -> tuple[str, str, int] | None:
    """(signature line, body text after its `{` up to and including the closing `}`,
    offset of the line) of the first definition of `name` whose line ends with `{`."""
    for m in re.finditer(
        rf"^[^\n]*\b{re.escape(name)}\s*\([^\n]*\)[^\n;]*\{{[ \t]*$", source, re.M
    ):
        open_at = m.end() - 1
        while source[open_at] != "{":
            open_at -= 1
        close = matching_brace(source, open_at)
        if close is not None:
            return m.group(0), source[open_at + 1 : close + 1], m.start()
    return None


def called_in(source: str, function: str) -> str | None:
    """The name of the function called by the one-line body of `function(Context *ctx)` in a
    benchmark driver (compute -> candidate, best -> baseline)."""
    m = re.search(rf"\b{function}\s*\(\s*Context\s*\*\s*\w+\s*\)\s*\{{", source)
    if m is None:
        return None
    close = matching_brace(source, m.end() - 1)
    if close is None:
        return None  # the driver's text ends inside the function
    calls = re.findall(r"([A-Za-z_]\w*)\s*\(", source[m.end() : close])
    return calls[0] if calls else None


@dataclass(frozen=True)
class Reference:
    """ParEval's sequential baseline for a prompt: the function best() calls, as a body
    completion of the prompt (what upstream's create-serial-tests.py feeds its drivers)."""

    baseline_name: str
    declaration: str  # its signature line as a declaration (`...;`)
    completion: str  # body + closing brace, parameters renamed to the prompt's if needed


def reference_for(prompt: str, driver_src: str, baseline_src: str) -> Reference | None:
    sig = prompt_signature(prompt)
    best = called_in(driver_src, "best")
    if sig is None or best is None:
        return None
    found = function_body(baseline_src, best)
    if found is None:
        return None
    line, body, _ = found
    decl = line.rstrip()[:-1].rstrip() + ";"
    m = _SIGNATURE.search(line)
    base_names = [param_name(p) for p in split_params(m.group(2))] if m else []
    aliases = [
        f"    auto &&{b} = {p};"
        for b, p in zip(base_names, sig.param_names, strict=False)
        if b and p and b != p
    ]
    completion = ("\n" + "\n".join(aliases) if aliases else "") + body
    # Helpers of baseline.hpp that the body calls (16's dfs) come with it, renamed: the
    # trusted mode's producer traps every baseline.hpp body but the helpers the prompt
    # declares, and an answer that leans on the rest is leaning on the baseline.
    promised = declared_functions(prompt)
    helpers = helpers_called(baseline_src, body, promised | {best})
    if helpers:
        rename = {d.name: f"pe_ref_{d.name}" for d in helpers}
        pattern = re.compile(r"\b(" + "|".join(map(re.escape, rename)) + r")\b")
        own = [baseline_src[d.start : d.close + 1].strip() for d in helpers]
        head = patch_prompt(prompt).rstrip().split("\n")[-1]
        text = "\n\n".join([*own, head + completion])
        completion = pattern.sub(lambda m: rename[m.group(1)], text)
    return Reference(best, decl, completion)


def generated_code(sample: Sample, code: str) -> str:
    """generated-code.hpp: upstream writes patch_prompt(prompt) + "\\n" + output, the output
    being the body that completes the prompt. A reply that starts with the prompt has it
    removed first (upstream's postprocess); a reply that defines the whole function is used
    after the prompt's preamble instead (a chat model's usual answer)."""
    prompt = str(sample.metadata["prompt"])
    if code.startswith(prompt):
        code = code[len(prompt) :]
    sig = prompt_signature(prompt)
    # a definition: at the start of a line, a return type, the name, balanced parameters, `{`
    # (a call such as `while (f(x) > 0) {` is not one)
    definition = (
        rf"^[ \t]*(?:[\w:<>,*&]+[ \t]+)+{re.escape(sig.name)}\s*"
        rf"\((?:[^()]|\([^()]*\))*\)\s*(?:const\s*)?\{{"
        if sig
        else None
    )
    if definition and re.search(definition, code, re.M):
        preamble = "\n".join(prompt.rstrip().split("\n")[:-1])
        return f"{preamble}\n{code}\n"
    return patch_prompt(prompt) + "\n" + code


def config_of(meta: dict[str, Any]) -> LaunchConfig:
    return LaunchConfig(
        int(meta["procs"]), int(meta["threads"]), tuple(meta["argv"]), dict(meta["params"])
    )
