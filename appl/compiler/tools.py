"""Tools for plans: an `appl.tools.Tool` (spec from type hints + docstring, pydantic argument
validation) plus the scheduling policy the executor needs and a plain tool lacks: a latency
estimate (critical-path ordering), a concurrency limit, a timeout and retries."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import Executor
from dataclasses import dataclass
from typing import Any

from appl import tools as appl_tools
from appl.types import ToolSpec


@dataclass(eq=False)
class PlanTool:
    """A callable a plan may use.

    latency_s: expected seconds per call; None means "learn it" (the executor keeps an EWMA
        of observed durations and uses its default until the first observation).
    max_concurrency: calls of this tool that may run at once (None: no per-tool limit).
    timeout_s: a call running longer fails with TimeoutError. A sync tool's thread cannot be
        killed: it is abandoned and its eventual result ignored.
    retries: extra attempts after an exception or timeout (never after cancellation), waiting
        retry_backoff_s * 2**attempt between them.
    """

    base: appl_tools.Tool
    latency_s: float | None = None
    max_concurrency: int | None = None
    timeout_s: float | None = None
    retries: int = 0
    retry_backoff_s: float = 0.0

    def __post_init__(self) -> None:
        if self.max_concurrency is not None and self.max_concurrency < 1:
            raise ValueError(f"tool {self.name!r}: max_concurrency must be >= 1")
        if self.retries < 0:
            raise ValueError(f"tool {self.name!r}: retries must be >= 0")

    @property
    def name(self) -> str:
        return self.base.name

    @property
    def spec(self) -> ToolSpec:
        return self.base.spec

    @property
    def parameters(self) -> dict[str, Any]:
        return self.base.spec.parameters

    @property
    def param_names(self) -> list[str]:
        return list((self.parameters.get("properties") or {}).keys())

    async def call(self, args: Mapping[str, Any], pool: Executor | None = None) -> Any:
        """Validate (pydantic, from the signature) and run once. Sync functions run in `pool`,
        the executor's own threads: asyncio's default pool has only cpu+4 workers, which
        would silently serialize a wide plan of blocking tools on a small machine."""
        parsed = self.base.arguments_model.model_validate(dict(args))
        kwargs = {name: getattr(parsed, name) for name in type(parsed).model_fields}
        if self.base.is_async:
            return await self.base.func(**kwargs)
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(pool, functools.partial(self.base.func, **kwargs))

    def describe(self) -> str:
        """One line for prompts: `name(a: string, b?: integer) - description`."""
        props = self.parameters.get("properties") or {}
        required = set(self.parameters.get("required") or ())
        params = ", ".join(
            f"{n}{'' if n in required else '?'}: {_type_name(s)}" for n, s in props.items()
        )
        return f"{self.name}({params}) - {self.spec.description}".strip()


def _type_name(schema: Mapping[str, Any]) -> str:
    t = schema.get("type")
    if isinstance(t, list):
        return " | ".join(map(str, t))
    if "anyOf" in schema:
        return " | ".join(_type_name(s) for s in schema["anyOf"])
    if t == "array" and isinstance(schema.get("items"), Mapping):
        return f"array[{_type_name(schema['items'])}]"
    return str(t or "any")


def tool(
    fn: Callable[..., Any] | appl_tools.Tool | None = None,
    *,
    name: str | None = None,
    description: str | None = None,
    latency_s: float | None = None,
    max_concurrency: int | None = None,
    timeout_s: float | None = None,
    retries: int = 0,
    retry_backoff_s: float = 0.0,
) -> Any:
    """`@tool` / `@tool(latency_s=0.5, max_concurrency=2, ...)` / `tool(fn, ...)` -> PlanTool."""

    def make(f: Callable[..., Any] | appl_tools.Tool) -> PlanTool:
        base = (
            f
            if isinstance(f, appl_tools.Tool)
            else appl_tools.Tool(f, name=name, description=description)
        )
        return PlanTool(base, latency_s, max_concurrency, timeout_s, retries, retry_backoff_s)

    return make(fn) if fn is not None else make


def as_plan_tools(
    items: Iterable[PlanTool | appl_tools.Tool | Callable[..., Any]],
) -> dict[str, PlanTool]:
    """Tools by name; plain functions and `appl.tools.Tool`s get the default policy."""
    out: dict[str, PlanTool] = {}
    for item in items:
        t = item if isinstance(item, PlanTool) else tool(item)
        if t.name in out:
            raise ValueError(f"two tools are named {t.name!r}")
        if t.name in ("join", "Finish", "Replan"):
            raise ValueError(f"{t.name!r} is reserved by the plan/answer formats")
        out[t.name] = t
    return out
