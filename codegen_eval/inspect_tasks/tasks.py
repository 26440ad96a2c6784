"""One Inspect `@task` per built-in suite and reader, under the `codegen_eval` entry point:

    inspect eval codegen_eval/verilog -T solver=reference --model mockllm/model --limit 6
    inspect eval codegen_eval/omp_pragma --model openai/gpt-4o-mini --epochs 5 -T k=1,5
    inspect eval codegen_eval/verilogeval -T path=verilog-eval -T mode=spec-to-rtl
    inspect eval codegen_eval/pareval -T path=ParEval -T models=serial,omp -T verdict=trusted
    inspect eval codegen_eval/humaneval -T path=problems.jsonl -T solver=file -T samples=s.jsonl

Common options (codegen_eval.inspect_tasks.options): solver=generate|repair|reference|file,
samples=FILE (file), backend=bwrap|docker, filter=GLOB, limit=N (first N problems, before
Inspect's own --limit), k=1,5 (pass@k through Inspect's pass_at reducers; sets the default
epochs to the largest k), temperature/max_tokens/seed (default: Inspect's --temperature etc.,
else codegen-eval run's 0.8/1024/0), rounds (repair), max_sandboxes (scorings at once).
"""

from __future__ import annotations

from typing import Any

from inspect_ai import Epochs, Task, task
from inspect_ai.dataset import Sample as InspectSample
from inspect_ai.scorer import pass_at

from codegen_eval.inspect_tasks.options import (
    DEFAULT_MAX_TOKENS,
    DEFAULT_TEMPERATURE,
    Common,
    TaskOptionError,
    check_backend,
    parse_common,
    reject_unknown,
)
from codegen_eval.inspect_tasks.scorer import verdict_scorer
from codegen_eval.inspect_tasks.solvers import candidate_solver, repair_solver
from codegen_eval.problem_ids import Selection
from codegen_eval.types import Sample
from codegen_eval.types import Task as Suite

PACKAGE = "codegen_eval"


def _registered(short: str) -> str:
    """The name to give @task so that Inspect registers `codegen_eval/<short>`. Inspect
    prefixes the package name itself when it recognises the package as installed (a wheel in
    site-packages); an editable install of the `codegen-lab` distribution is not recognised
    (the distribution is not named after the package), so there the prefix is ours to add."""
    from inspect_ai._util.package import get_installed_package_name

    return short if get_installed_package_name(_registered) else f"{PACKAGE}/{short}"


def _select(name: str, suite: Suite, common: Common) -> list[Sample]:
    samples = list(suite.dataset)
    if common.filter:
        # codegen-eval's rule: the qualified id SUITE/ID or any '/'-tail of it
        chosen = Selection.of(common.filter)
        samples = [s for s in samples if chosen.matches(suite.name, s.id)]
    if common.limit is not None:
        samples = samples[: common.limit]
    if not samples:
        ids = ", ".join(s.id for s in list(suite.dataset)[:3]) or "none"
        what = f"-T filter={common.filter!r}" if common.filter else "the selection"
        raise TaskOptionError(f"{name}: {what} matches no problem id (ids look like {ids})")
    return samples


def _generation_settings(common: Common) -> dict[str, Any]:
    """-T values, else Inspect's --temperature/--max-tokens/--seed, else our defaults."""
    from inspect_ai.model._generate_config import active_generate_config

    active = active_generate_config()
    temperature = common.temperature if common.temperature is not None else active.temperature
    max_tokens = common.max_tokens if common.max_tokens is not None else active.max_tokens
    seed = common.seed if common.seed is not None else active.seed
    return {
        "temperature": DEFAULT_TEMPERATURE if temperature is None else temperature,
        "max_tokens": DEFAULT_MAX_TOKENS if max_tokens is None else max_tokens,
        "seed": 0 if seed is None else seed,
    }


class _Lazy:
    """Our solver, built on the first candidate asked for: the generation settings are read
    inside Inspect's sample context, where its --temperature etc. are active."""

    def __init__(self, name: str, suite: Suite, common: Common) -> None:
        self.name, self.suite, self.common = name, suite, common
        self._solver: Any = None

    def _build(self) -> Any:
        from appl.models.inspect_provider import ALIAS
        from codegen_eval.solvers import FileSolver, GenerateSolver, ReferenceSolver

        kind = self.common.solver
        if kind == "reference":
            return ReferenceSolver()
        if kind == "file":
            assert self.common.samples is not None
            return FileSolver(self.common.samples)
        settings = _generation_settings(self.common)
        if kind == "generate":
            return GenerateSolver(ALIAS, **settings)
        return repair_solver(
            self.suite,
            model=ALIAS,
            rounds=self.common.rounds,
            max_scoring=self.common.max_sandboxes,
            **settings,
        )

    async def solve_one(self, sample: Sample, index: int) -> Any:
        if self._solver is None:
            self._solver = self._build()
        return await self._solver.solve_one(sample, index)


def _check_samples_file(name: str, common: Common, selected: list[Sample]) -> None:
    """-T solver=file: the file must have candidates for the selected problems."""
    from codegen_eval.solvers import FileSolver, SamplesFileError

    if common.solver != "file" or common.samples is None:
        return
    try:
        ids = set(FileSolver(common.samples).sample_ids)
    except SamplesFileError as exc:
        raise TaskOptionError(f"{name}: {exc}") from None
    if not ids & {s.id for s in selected}:
        some = ", ".join(sorted(ids)[:3])
        raise TaskOptionError(
            f"{name}: no id in {common.samples} matches a selected problem (file ids: {some})"
        )


def build_task(name: str, suite: Suite, common: Common) -> Task:
    """An Inspect Task over one of our suites (`name`: the task's Inspect name)."""
    selected = _select(name, suite, common)
    _check_samples_file(name, common, selected)
    samples = {s.id: s for s in selected}
    dataset = [
        InspectSample(
            id=s.id,
            input=s.input,
            target=s.target,
            metadata={
                "language": str(s.metadata.get("language", "")),
                "variant": str(s.metadata.get("variant", "")),
            },
        )
        for s in selected
    ]
    uses_model = common.solver in ("generate", "repair")
    epochs: Epochs | None = None
    if common.ks != (1,):
        epochs = Epochs(max(common.ks), [pass_at(k) for k in common.ks])
    metadata = {
        PACKAGE: {
            "suite": suite.name,
            "solver": common.solver,
            "samples": str(common.samples) if common.samples else None,
            "backend": common.backend,
            "filter": common.filter,
            "limit": common.limit,
            "ks": list(common.ks),
            "excluded": dict(suite.excluded),
            "log_header": dict(suite.log_header) if suite.log_header else None,
        }
    }
    return Task(
        dataset=dataset,
        solver=candidate_solver(_Lazy(name, suite, common), samples, uses_model=uses_model),
        scorer=verdict_scorer(suite, samples, ks=common.ks, max_sandboxes=common.max_sandboxes),
        epochs=epochs,
        metadata=_json_safe(metadata),
    )


def _json_safe(value: Any) -> Any:
    import json

    return json.loads(json.dumps(value, default=str))


def _builtin(short: str, suite_name: str, options: dict[str, Any], unknown: dict[str, Any]) -> Task:
    name = f"{PACKAGE}/{short}"
    reject_unknown(name, unknown)
    common = parse_common(name, **options)
    check_backend(name, common.backend)
    from codegen_eval.registry import get_suite

    return build_task(name, get_suite(suite_name, backend=common.backend), common)


# ------------------------------------------------------------------ built-in suites
# Each task lists the common options by name (what `inspect list tasks` and -T completion
# show); **unknown catches misspelt ones, which are an error rather than silently ignored.


@task(name=_registered("verilog"))
def verilog(
    solver: str = "generate",
    samples: str | None = None,
    backend: str | None = None,
    filter: str | None = None,
    limit: int | None = None,
    k: str | int = 1,
    temperature: float | None = None,
    max_tokens: int | None = None,
    seed: int | None = None,
    rounds: int = 3,
    max_sandboxes: int | None = None,
    **unknown: Any,
) -> Task:
    """Spec-to-RTL Verilog problems simulated with Icarus Verilog."""
    return _builtin("verilog", "verilog", _common_of(locals()), unknown)


@task(name=_registered("hpc_kernels"))
def hpc_kernels(
    solver: str = "generate",
    samples: str | None = None,
    backend: str | None = None,
    filter: str | None = None,
    limit: int | None = None,
    k: str | int = 1,
    temperature: float | None = None,
    max_tokens: int | None = None,
    seed: int | None = None,
    rounds: int = 3,
    max_sandboxes: int | None = None,
    **unknown: Any,
) -> Task:
    """HPC kernels (serial, OpenMP, MPI, hybrid, CUDA) built and run against references."""
    return _builtin("hpc_kernels", "hpc-kernels", _common_of(locals()), unknown)


@task(name=_registered("omp_pragma"))
def omp_pragma(
    solver: str = "generate",
    samples: str | None = None,
    backend: str | None = None,
    filter: str | None = None,
    limit: int | None = None,
    k: str | int = 1,
    temperature: float | None = None,
    max_tokens: int | None = None,
    seed: int | None = None,
    rounds: int = 3,
    max_sandboxes: int | None = None,
    **unknown: Any,
) -> Task:
    """Predict the OpenMP pragma of a loop (or none); checked by gcc -fopenmp runs."""
    return _builtin("omp_pragma", "omp-pragma", _common_of(locals()), unknown)


@task(name=_registered("mpi_completion"))
def mpi_completion(
    solver: str = "generate",
    samples: str | None = None,
    backend: str | None = None,
    filter: str | None = None,
    limit: int | None = None,
    k: str | int = 1,
    temperature: float | None = None,
    max_tokens: int | None = None,
    seed: int | None = None,
    rounds: int = 3,
    max_sandboxes: int | None = None,
    **unknown: Any,
) -> Task:
    """Restore the removed MPI calls of a program; mpirun np=2,3,4 run check."""
    return _builtin("mpi_completion", "mpi-completion", _common_of(locals()), unknown)


def _common_of(values: dict[str, Any], drop: tuple[str, ...] = ()) -> dict[str, Any]:
    """The common options among a task function's locals."""
    from codegen_eval.inspect_tasks.options import COMMON

    return {k: values[k] for k in COMMON if k in values and k not in drop}


__all__ = ["build_task", "hpc_kernels", "mpi_completion", "omp_pragma", "verilog"]
