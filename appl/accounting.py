"""Usage, cost and budgets.

Every model call goes through `reserve(...)` before it is sent and `Reservation.settle(...)`
after it answers (or `release()` if it failed). A reservation checks every active budget: the
ones opened with `with budget(...):` in this context (nested ones all apply, and tasks spawned
inside inherit them through contextvars) plus the process-wide one from `[budget]` in
appl.toml. Reserving first makes concurrent calls safe: ten calls started at once against a
budget of five calls cannot all pass the check.
"""

from __future__ import annotations

import contextlib
import contextvars
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field, replace

from appl.errors import BudgetExceededError
from appl.types import GenRequest, Usage

__all__ = [
    "Budget",
    "ModelUsage",
    "Reservation",
    "RunUsage",
    "budget",
    "current_usage",
    "estimate_prompt_tokens",
    "estimate_tokens",
    "reserve",
    "reset_usage",
    "track_usage",
]


def estimate_tokens(text: str) -> int:
    """A cheap upper-ish estimate of tokens in `text` (~4 characters per token)."""
    return len(text) // 4 + 1


def estimate_prompt_tokens(request: GenRequest) -> int:
    """The prompt's estimated tokens: messages (plus ~4 tokens of chat framing each) and tool
    schemas. One estimate for budgets, tpm and streams whose server reports no usage."""
    prompt = sum(estimate_tokens(m.content or "") + 4 for m in request.messages)
    return prompt + sum(estimate_tokens(str(t.parameters)) + 8 for t in request.tools)


@dataclass(slots=True)
class ModelUsage:
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


@dataclass(slots=True)
class RunUsage:
    """Totals over a run: calls, tokens, cost, and the same per model alias."""

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    by_model: dict[str, ModelUsage] = field(default_factory=dict)

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def add(self, model: str, usage: Usage, cost_usd: float) -> None:
        for bucket in (self, self.by_model.setdefault(model, ModelUsage())):
            bucket.calls += 1
            bucket.prompt_tokens += usage.prompt_tokens
            bucket.completion_tokens += usage.completion_tokens
            bucket.cost_usd += cost_usd

    def snapshot(self) -> RunUsage:
        return replace(self, by_model={k: replace(v) for k, v in self.by_model.items()})


_lock = threading.Lock()  # budgets and usage may be shared by several threads' event loops
_process_usage = RunUsage()
_usage_scopes: contextvars.ContextVar[tuple[RunUsage, ...]] = contextvars.ContextVar(
    "appl_usage_scopes", default=()
)


def current_usage() -> RunUsage:
    """A snapshot of the innermost `track_usage()` scope, else of the whole process."""
    scopes = _usage_scopes.get()
    with _lock:
        return (scopes[-1] if scopes else _process_usage).snapshot()


def reset_usage() -> None:
    """Zero the process-wide totals (tests, or between runs in one process)."""
    global _process_usage
    with _lock:
        _process_usage = RunUsage()


@contextlib.contextmanager
def track_usage() -> Iterator[RunUsage]:
    """Count the calls made inside (tasks spawned inside included) into a fresh RunUsage."""
    scope = RunUsage()
    token = _usage_scopes.set((*_usage_scopes.get(), scope))
    try:
        yield scope
    finally:
        _usage_scopes.reset(token)


@dataclass(eq=False)
class Budget:
    """Limits on calls, tokens and cost. `used_*` are settled totals, `reserved_*` in flight."""

    max_calls: int | None = None
    max_tokens: int | None = None
    max_cost_usd: float | None = None
    name: str = "budget"
    used_calls: int = 0
    used_tokens: int = 0
    used_cost_usd: float = 0.0
    reserved_calls: int = 0
    reserved_tokens: int = 0
    reserved_cost_usd: float = 0.0

    def _check(self, tokens: int, cost: float) -> None:
        checks = (
            ("calls", self.max_calls, self.used_calls, self.reserved_calls, 1),
            ("tokens", self.max_tokens, self.used_tokens, self.reserved_tokens, tokens),
            ("cost_usd", self.max_cost_usd, self.used_cost_usd, self.reserved_cost_usd, cost),
        )
        for what, limit, used, reserved, need in checks:
            if limit is not None and used + reserved + need > limit:
                raise BudgetExceededError(
                    f"{self.name}: the next call would exceed max_{what}={limit:g} "
                    f"(used {used:g}, in flight {reserved:g}, this call needs ~{need:g})",
                    budget=f"{self.name}.{what}",
                    limit=float(limit),
                    used=float(used + reserved),
                )


_budgets: contextvars.ContextVar[tuple[Budget, ...]] = contextvars.ContextVar(
    "appl_budgets", default=()
)
_process_budget: tuple[int, Budget | None] = (-1, None)  # (config generation, budget)


@contextlib.contextmanager
def budget(
    max_calls: int | None = None,
    max_tokens: int | None = None,
    max_cost_usd: float | None = None,
    *,
    name: str = "budget",
) -> Iterator[Budget]:
    """Limit the model calls made inside this block (and tasks spawned inside it)."""
    b = Budget(max_calls=max_calls, max_tokens=max_tokens, max_cost_usd=max_cost_usd, name=name)
    token = _budgets.set((*_budgets.get(), b))
    try:
        yield b
    finally:
        _budgets.reset(token)


def process_budget() -> Budget | None:
    """The process-wide budget from the config's [budget] table (None when it sets no limit)."""
    global _process_budget
    from appl.config import config_generation, get_config

    generation = config_generation()
    if _process_budget[0] != generation:
        cfg = get_config().budget
        limited = any(v is not None for v in (cfg.max_calls, cfg.max_tokens, cfg.max_cost_usd))
        new = (
            Budget(cfg.max_calls, cfg.max_tokens, cfg.max_cost_usd, name="config [budget]")
            if limited
            else None
        )
        _process_budget = (generation, new)
    return _process_budget[1]


class Reservation:
    """Tokens and cost held for one call in every active budget until it settles."""

    __slots__ = ("_budgets", "_cost", "_done", "_scopes", "_tokens")

    def __init__(
        self, budgets: tuple[Budget, ...], scopes: tuple[RunUsage, ...], tokens: int, cost: float
    ):
        self._budgets, self._scopes, self._tokens, self._cost = budgets, scopes, tokens, cost
        self._done = False

    def release(self) -> None:
        """The call failed: give the reservation back (nothing was spent)."""
        with _lock:
            if not self._done:
                self._done = True
                self._unreserve()

    def settle(self, model: str, usage: Usage, cost_usd: float) -> None:
        """The call answered: replace the reservation by what it actually used."""
        with _lock:
            if self._done:
                return
            self._done = True
            self._unreserve()
            for b in self._budgets:
                b.used_calls += 1
                b.used_tokens += usage.total_tokens
                b.used_cost_usd += cost_usd
            for scope in (_process_usage, *self._scopes):
                scope.add(model, usage, cost_usd)

    def _unreserve(self) -> None:
        for b in self._budgets:
            b.reserved_calls -= 1
            b.reserved_tokens -= self._tokens
            b.reserved_cost_usd -= self._cost


def reserve(tokens: int, cost_usd: float) -> Reservation:
    """Check every active budget for one more call of ~`tokens` costing ~`cost_usd`, and hold it.

    Raises BudgetExceededError (naming the budget, limit and usage) before anything is sent.
    """
    budgets = _budgets.get()
    process = process_budget()
    if process is not None:
        budgets = (process, *budgets)
    with _lock:
        for b in budgets:
            b._check(tokens, cost_usd)
        for b in budgets:
            b.reserved_calls += 1
            b.reserved_tokens += tokens
            b.reserved_cost_usd += cost_usd
    return Reservation(budgets, _usage_scopes.get(), tokens, cost_usd)
