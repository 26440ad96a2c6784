"""The `-T` options every codegen_eval Inspect task takes, checked before any work.

Bad input is a `TaskOptionError`: Inspect's CLI prints a PrerequisiteError as its message
alone (one line, exit code 1), where any other exception from a task function is a traceback.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from inspect_ai._util.error import PrerequisiteError

from codegen_eval.errors import CodegenEvalError

SOLVERS = ("generate", "repair", "reference", "file")
BACKENDS = ("bwrap", "docker")
COMMON = (
    "solver",
    "samples",
    "backend",
    "filter",
    "limit",
    "k",
    "temperature",
    "max_tokens",
    "seed",
    "rounds",
    "max_sandboxes",
)
DEFAULT_TEMPERATURE = 0.8  # codegen-eval run's defaults, so both send the same requests
DEFAULT_MAX_TOKENS = 1024


class TaskOptionError(CodegenEvalError, PrerequisiteError):
    """A task option Inspect's CLI reports in one line."""

    def __init__(self, message: str) -> None:
        super().__init__(message)

    def __str__(self) -> str:
        return str(self.message)


@dataclass(frozen=True)
class Common:
    solver: str
    samples: Path | None
    backend: str
    filter: str | None
    limit: int | None
    ks: tuple[int, ...]
    temperature: float | None
    max_tokens: int | None
    seed: int | None
    rounds: int
    max_sandboxes: int


def reject_unknown(task: str, unknown: Mapping[str, Any], own: tuple[str, ...] = ()) -> None:
    if unknown:
        names = ", ".join(sorted(unknown))
        known = ", ".join((*own, *COMMON))
        raise TaskOptionError(f"{task}: unknown task option(s) {names} (known: {known})")


T = TypeVar("T")


def _typed(task: str, name: str, value: Any, kind: Callable[[Any], T]) -> T | None:
    if value is None or value == "":
        return None
    try:
        return kind(value)
    except (TypeError, ValueError):
        raise TaskOptionError(f"{task}: -T {name}={value!r} is not a {kind.__name__}") from None


def parse_ks(task: str, value: Any) -> tuple[int, ...]:
    """-T k=1,5 (a YAML int when one value)."""
    text = str(value if value is not None else 1)
    try:
        ks = tuple(sorted({int(x) for x in text.split(",") if x.strip()}))
    except ValueError:
        raise TaskOptionError(
            f"{task}: -T k wants comma-separated integers, got {text!r}"
        ) from None
    if not ks or min(ks) < 1:
        raise TaskOptionError(f"{task}: -T k values must be >= 1 (got {text!r})")
    return ks


def parse_common(
    task: str,
    *,
    solver: Any = "generate",
    samples: Any = None,
    backend: Any = None,
    filter: Any = None,
    limit: Any = None,
    k: Any = 1,
    temperature: Any = None,
    max_tokens: Any = None,
    seed: Any = None,
    rounds: Any = 3,
    max_sandboxes: Any = None,
) -> Common:
    solver = str(solver)
    if solver not in SOLVERS:
        raise TaskOptionError(f"{task}: -T solver={solver} is not one of {', '.join(SOLVERS)}")
    samples_path = Path(str(samples)).expanduser() if samples else None
    if solver == "file" and samples_path is None:
        raise TaskOptionError(f"{task}: -T solver=file needs -T samples=FILE.jsonl")
    if samples_path is not None and solver != "file":
        raise TaskOptionError(f"{task}: -T samples is read only by -T solver=file")
    if samples_path is not None and not samples_path.is_file():
        raise TaskOptionError(f"{task}: -T samples={samples_path}: no such file")
    from sandboxes import current_backend  # $CODEGEN_SANDBOX: the user's default, read here

    chosen = str(backend or current_backend())
    if chosen not in BACKENDS:
        raise TaskOptionError(
            f"{task}: -T backend={chosen} is not supported (one of {', '.join(BACKENDS)})"
        )
    lim = _typed(task, "limit", limit, int)
    if lim is not None and lim < 1:
        raise TaskOptionError(f"{task}: -T limit must be >= 1 (got {lim})")
    rounds_n = _typed(task, "rounds", rounds, int) or 3
    if rounds_n < 1:
        raise TaskOptionError(f"{task}: -T rounds must be >= 1 (got {rounds_n})")
    sandboxes = _typed(task, "max_sandboxes", max_sandboxes, int) or os.cpu_count() or 1
    if sandboxes < 1:
        raise TaskOptionError(f"{task}: -T max_sandboxes must be >= 1")
    return Common(
        solver=solver,
        samples=samples_path,
        backend=chosen,
        filter=str(filter) if filter else None,
        limit=lim,
        ks=parse_ks(task, k),
        temperature=_typed(task, "temperature", temperature, float),
        max_tokens=_typed(task, "max_tokens", max_tokens, int),
        seed=_typed(task, "seed", seed, int),
        rounds=rounds_n,
        max_sandboxes=sandboxes,
    )


def need_path(task: str, name: str, value: Any, *, kind: str = "path") -> Path:
    if not value:
        raise TaskOptionError(f"{task}: needs -T {name}={kind.upper()}")
    path = Path(str(value)).expanduser()
    if not path.exists():
        raise TaskOptionError(f"{task}: -T {name}={path}: no such file or directory")
    return path.resolve()


def _run_blocking(make: Callable[[], Any]) -> Any:
    """Run a coroutine to completion from sync code, in a thread when a loop is running
    (Inspect may build tasks from inside its own loop)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(make())
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = asyncio.run(make())
        except BaseException as exc:
            box["error"] = exc

    thread = threading.Thread(target=target, name="codegen-probe")
    thread.start()
    thread.join()
    if "error" in box:
        raise box["error"]
    return box["value"]


def check_backend(task: str, backend: str) -> None:
    """Run `true` once in the backend the task's scorers will open (the task hands
    `backend` to the suite or reader explicitly; nothing global is set): a backend that cannot
    start is one line now, not an infra_error per sample later."""
    from sandboxes import Limits, SandboxError, open_sandbox

    async def probe() -> Any:
        async with open_sandbox(backend) as sb:
            return await sb.exec(["true"], limits=Limits(wall_s=30))

    try:
        result = _run_blocking(probe)
    except (SandboxError, OSError) as exc:
        first = " ".join(str(exc).split())[:300]
        raise TaskOptionError(
            f"{task}: sandbox backend {backend!r} is not usable: {first}"
        ) from None
    if result.status != "ok":
        raise TaskOptionError(
            f"{task}: sandbox backend {backend!r} is not usable: `true` ended {result.status}"
        )
