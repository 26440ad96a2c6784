"""Budgets and usage totals: enforced before the call that would exceed them, concurrency-safe."""

from __future__ import annotations

import asyncio

import pytest

from appl import config
from appl.accounting import budget, current_usage, track_usage
from appl.errors import BudgetExceededError
from appl.models import get_model
from appl.testing import Rule
from appl.testing.pytest_plugin import MakeScripted
from appl.types import GenRequest, Message


def ask(text: str = "q", **kw: object) -> GenRequest:
    return GenRequest(model="scripted", messages=[Message("user", text)], **kw)  # type: ignore[arg-type]


async def test_call_budget_stops_the_call_that_would_exceed_it(scripted: MakeScripted) -> None:
    server = scripted([Rule(reply="ok")])
    with budget(max_calls=2, name="demo") as b:
        await get_model().generate(ask())
        await get_model().generate(ask())
        with pytest.raises(BudgetExceededError) as info:
            await get_model().generate(ask())
    assert len(server.requests) == 2  # the third call never reached the server
    message = str(info.value)
    assert "demo" in message and "max_calls=2" in message and "used 2" in message
    assert (info.value.budget, info.value.limit, info.value.used) == ("demo.calls", 2, 2)
    assert b.used_calls == 2 and b.reserved_calls == 0
    await get_model().generate(ask())  # outside the block: no limit


async def test_concurrent_calls_cannot_all_pass_the_check(scripted: MakeScripted) -> None:
    server = scripted([Rule(reply="ok", latency=0.05)])
    with budget(max_calls=3):
        results = await asyncio.gather(
            *(get_model().generate(ask()) for _ in range(8)), return_exceptions=True
        )
    assert sum(isinstance(r, BudgetExceededError) for r in results) == 5
    assert len(server.requests) == 3


async def test_token_budget_counts_prompt_estimate_and_max_tokens(scripted: MakeScripted) -> None:
    scripted([Rule(reply="one two three")])
    with budget(max_tokens=60) as b:
        await get_model().generate(ask("hi", max_tokens=10))
        used = b.used_tokens
        assert 0 < used < 60
        with pytest.raises(BudgetExceededError, match="max_tokens=60"):
            await get_model().generate(ask("hi", max_tokens=60))  # would need > 60 - used


async def test_cost_budget_nested_budgets_and_spawned_tasks(scripted: MakeScripted) -> None:
    scripted(
        [Rule(reply="ok")],
        model={"price_input_per_mtok": 1_000_000.0, "price_output_per_mtok": 0.0},
    )
    with budget(max_calls=10, name="outer") as outer:
        with budget(max_cost_usd=8.5, name="inner"):
            # each call costs prompt_tokens dollars (a few): a task spawned here inherits the budget
            first = await asyncio.create_task(get_model().generate(ask()))
            assert first.cost_usd == first.usage.prompt_tokens > 0
            with pytest.raises(
                BudgetExceededError, match=r"inner: the next call would exceed max_cost_usd=8\.5"
            ):
                await asyncio.create_task(get_model().generate(ask("a longer prompt " * 10)))
        assert outer.used_calls == 1 and outer.used_cost_usd == first.cost_usd


async def test_config_budget_is_process_wide(scripted: MakeScripted) -> None:
    scripted([Rule(reply="ok")])
    config.configure(budget={"max_calls": 1})
    await get_model().generate(ask())
    with pytest.raises(BudgetExceededError, match=r"config \[budget\].*max_calls=1"):
        await get_model().generate(ask())


async def test_failed_calls_release_their_reservation(scripted: MakeScripted) -> None:
    scripted([Rule(match="bad", faults=["500"] * 10), Rule(reply="ok")], model={"max_retries": 0})
    with budget(max_calls=1) as b:
        with pytest.raises(Exception, match="HTTP 500"):
            await get_model().generate(ask("bad"))
        assert b.reserved_calls == 0 and b.used_calls == 0
        await get_model().generate(ask("good"))  # the failed call did not use the budget up


async def test_usage_scopes(scripted: MakeScripted) -> None:
    scripted([Rule(reply="a b")])
    await get_model().generate(ask())
    with track_usage() as scope:
        await get_model().generate(ask())
        await get_model().generate(ask())
        assert current_usage().calls == 2
    assert scope.calls == 2 and scope.completion_tokens == 4
    assert current_usage().calls == 3  # the process-wide totals saw all three
