"""Inspect tasks over the public benchmarks a user has a copy of (nothing is downloaded):

    inspect eval codegen_eval/verilogeval -T path=CHECKOUT [-T mode=spec-to-rtl|code-complete|v1]
    inspect eval codegen_eval/pareval -T path=CHECKOUT [-T models=serial,omp] [-T verdict=trusted]
    inspect eval codegen_eval/humaneval -T path=FILE.jsonl

Each takes the common options too (codegen_eval.inspect_tasks.tasks). A missing path, an
unknown mode or model, or a file that is not in the reader's format is one line.
"""

from __future__ import annotations

import sys
from typing import Any

from inspect_ai import Task, task

from codegen_eval.inspect_tasks.options import (
    TaskOptionError,
    check_backend,
    need_path,
    parse_common,
    reject_unknown,
)
from codegen_eval.inspect_tasks.tasks import PACKAGE, _common_of, _registered, build_task


@task(name=_registered("verilogeval"))
def verilogeval(
    path: str | None = None,
    mode: str | None = None,
    descriptions: str | None = None,
    include_known_bad: bool = False,
    policy_exclusions: bool = False,
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
    """VerilogEval v2 (spec-to-rtl, code-complete) or v1 from your copy, scored with our
    Verilog scorer and upstream's pass rules."""
    from codegen_eval.readers.verilogeval import VerilogEvalFormatError, resolve_mode
    from codegen_eval.readers.verilogeval import verilogeval as read

    name = f"{PACKAGE}/verilogeval"
    own = ("path", "mode", "descriptions", "include_known_bad", "policy_exclusions")
    reject_unknown(name, unknown, own)
    common = parse_common(name, **_common_of(locals()))
    source = need_path(name, "path", path, kind="checkout")
    desc = need_path(name, "descriptions", descriptions) if descriptions else None
    check_backend(name, common.backend)
    try:
        chosen, _ = resolve_mode(source, mode)
        suite = read(
            source,
            chosen,  # type: ignore[arg-type]
            descriptions=desc,
            include_known_bad=bool(include_known_bad),
            policy_exclusions=bool(policy_exclusions),
            progress=lambda msg: print(f"verilogeval: {msg}", file=sys.stderr),
            backend=common.backend,
        )
    except (VerilogEvalFormatError, OSError, ValueError) as exc:
        raise TaskOptionError(f"{name}: {exc}") from None
    return build_task(name, suite, common)


@task(name=_registered("pareval"))
def pareval(
    path: str | None = None,
    models: str = "serial,omp",
    verdict: str = "upstream",
    prompts: str = "generation",
    cores: int | None = None,
    launch_configs: str | None = None,
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
    """ParEval from your checkout, built and run as upstream does (verdict=trusted: decided
    by a process without candidate code)."""
    from codegen_eval.readers import load_pareval

    name = f"{PACKAGE}/pareval"
    own = ("path", "models", "verdict", "prompts", "cores", "launch_configs")
    reject_unknown(name, unknown, own)
    common = parse_common(name, **_common_of(locals()))
    source = need_path(name, "path", path, kind="checkout")
    if not source.is_dir():
        raise TaskOptionError(f"{name}: -T path={source} is not a directory (a ParEval checkout)")
    if str(verdict) not in ("upstream", "trusted"):
        raise TaskOptionError(f"{name}: -T verdict={verdict} is not one of upstream, trusted")
    if str(prompts) not in ("generation", "translation"):
        raise TaskOptionError(f"{name}: -T prompts={prompts} is not one of generation, translation")
    if cores is not None and int(cores) < 1:
        raise TaskOptionError(f"{name}: -T cores must be >= 1")
    configs = need_path(name, "launch_configs", launch_configs) if launch_configs else None
    check_backend(name, common.backend)
    try:
        suite = load_pareval(
            source,
            prompts=str(prompts),
            models=tuple(m for m in str(models).split(",") if m),
            backend=common.backend,
            verdict=str(verdict),
            cores=int(cores) if cores is not None else None,
            launch_configs=configs,
        )
    except (OSError, ValueError) as exc:
        raise TaskOptionError(f"{name}: {exc}") from None
    return build_task(name, suite, common)


@task(name=_registered("humaneval"))
def humaneval(
    path: str | None = None,
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
    """A HumanEval-style JSONL (HumanEval, HumanEval-X C/C++); the test runs in a checker
    process apart from the candidate."""
    from codegen_eval.readers import load_humaneval

    name = f"{PACKAGE}/humaneval"
    reject_unknown(name, unknown, ("path",))
    common = parse_common(name, **_common_of(locals()))
    source = need_path(name, "path", path, kind="file.jsonl")
    check_backend(name, common.backend)
    try:
        suite = load_humaneval(source, backend=common.backend)
    except (OSError, ValueError) as exc:
        raise TaskOptionError(f"{name}: {exc}") from None
    return build_task(name, suite, common)


__all__ = ["humaneval", "pareval", "verilogeval"]
