"""Suites register themselves by name; the CLI and the runner look them up here.

    @register_suite("verilog", "Spec-to-RTL problems simulated with Icarus Verilog")
    def verilog_suite(**options) -> Task: ...

Suite modules are imported lazily (`_BUILTIN_MODULES`) so `codegen-eval list` stays fast and
a suite whose toolchain is missing fails only when it is used, with a clear error.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from codegen_eval.errors import CodegenEvalError
from codegen_eval.types import Task

SuiteFactory = Callable[..., Task]

# name -> module that registers it on import. Suite authors add their line here.
_BUILTIN_MODULES: dict[str, str] = {
    "hpc-kernels": "codegen_eval.suites.hpc_kernels",
    "verilog": "codegen_eval.suites.verilog",
    "mpi-completion": "codegen_eval.suites.mpi_completion",
    "omp-pragma": "codegen_eval.suites.omp_pragma",
}


@dataclass(frozen=True, slots=True)
class SuiteInfo:
    name: str
    description: str
    factory: SuiteFactory


_REGISTRY: dict[str, SuiteInfo] = {}


class UnknownSuiteError(CodegenEvalError, KeyError):
    def __str__(self) -> str:  # KeyError quotes its message; this one reads as a sentence
        return str(self.args[0])


def register_suite(name: str, description: str) -> Callable[[SuiteFactory], SuiteFactory]:
    def decorate(factory: SuiteFactory) -> SuiteFactory:
        _REGISTRY[name] = SuiteInfo(name, description, factory)
        return factory

    return decorate


def _load(name: str) -> None:
    module = _BUILTIN_MODULES.get(name)
    if module and name not in _REGISTRY:
        importlib.import_module(module)


def get_suite(name: str, *, backend: str | None = None, **options: Any) -> Task:
    """Build the Task for suite `name`; options are suite-specific (e.g. variants, limit).

    backend: the sandbox backend the suite's scorer opens, handed to a factory that takes
    `backend` (or **options); a factory that takes neither is called without it, and its
    scorer opens `sandboxes.current_backend()` (the run's `use_backend` block)."""
    _load(name)
    if name not in _REGISTRY:
        known = ", ".join(sorted(set(_REGISTRY) | set(_BUILTIN_MODULES)))
        raise UnknownSuiteError(f"unknown suite {name!r}; known suites: {known}")
    factory = _REGISTRY[name].factory
    if backend is not None and _takes(factory, "backend"):
        options["backend"] = backend
    return factory(**options)


def _takes(factory: SuiteFactory, keyword: str) -> bool:
    try:
        params = inspect.signature(factory).parameters.values()
    except (TypeError, ValueError):  # no signature to read (a builtin): do not guess
        return False
    return any(
        p.kind is p.VAR_KEYWORD or (p.name == keyword and p.kind is not p.POSITIONAL_ONLY)
        for p in params
    )


def list_suites() -> list[SuiteInfo]:
    for name in _BUILTIN_MODULES:
        try:
            _load(name)
        except ImportError:
            continue  # a suite that is not built yet is simply not listed
    return sorted(_REGISTRY.values(), key=lambda s: s.name)
