"""hpc-kernels: nine numerical kernels x five programming models (serial, OpenMP, MPI,
MPI+OpenMP, CUDA) = 45 samples. Candidates are linked with our guest runtime and run under a
trusted host that feeds them inputs, times them and checks them against its own sequential
reference without ever running candidate code; see docs/suite-hpc-kernels.md."""

from __future__ import annotations

from collections.abc import Sequence

from codegen_eval.registry import register_suite
from codegen_eval.types import Sample, Task

from .problems import PROBLEMS, VARIANTS, Problem, build_prompt
from .protocol import HostVerdict, parse_host_verdict
from .scorer import HpcKernelsScorer
from .trusted import guest_files

__all__ = [
    "PROBLEMS",
    "VARIANTS",
    "HostVerdict",
    "HpcKernelsScorer",
    "Problem",
    "build_prompt",
    "hpc_kernels_task",
    "make_sample",
    "parse_host_verdict",
]


def make_sample(problem: Problem, variant: str) -> Sample:
    family, language, model, configs = VARIANTS[variant]
    return Sample(
        id=f"{problem.name}/{variant}",
        input=build_prompt(problem, variant),
        target=problem.source(variant),
        metadata={
            "problem": problem.name,
            "variant": variant,
            "language": language,
            "parallel_model": model,
            "signature": problem.signatures[family],
            "np": sorted({n for n, _ in configs}),
            "threads": sorted({t for _, t in configs}),
            "configs": [list(c) for c in configs],
        },
        # our guest runtime and the problem's call glue; never the host side (reference.c)
        files=guest_files(problem.name, variant),
    )


@register_suite("hpc-kernels", "AXPY..CG, scan, histogram in serial/OpenMP/MPI/hybrid/CUDA")
def hpc_kernels_task(
    variants: Sequence[str] | None = None,
    problems: Sequence[str] | None = None,
    limit: int | None = None,
    *,
    backend: str | None = None,
    reps: int = 5,
    run_timeout_s: float = 60.0,
) -> Task:
    """Samples are ordered problem-major (axpy/serial, axpy/openmp, ...). `variants` and
    `problems` filter by name (unknown names raise ValueError); `limit` keeps the first n."""
    chosen_v = list(variants) if variants else list(VARIANTS)
    chosen_p = list(problems) if problems else list(PROBLEMS)
    for name, known in ((chosen_v, VARIANTS), (chosen_p, PROBLEMS)):
        unknown = sorted(set(name) - set(known))
        if unknown:
            raise ValueError(f"unknown {unknown}; known: {', '.join(known)}")
    dataset = [make_sample(PROBLEMS[p], v) for p in chosen_p for v in chosen_v]
    if limit is not None:
        dataset = dataset[:limit]
    scorer = HpcKernelsScorer(backend=backend, reps=reps, run_timeout_s=run_timeout_s)
    return Task(
        name="hpc-kernels",
        dataset=dataset,
        scorer=scorer,
        metadata={"variants": chosen_v, "problems": chosen_p},
    )
