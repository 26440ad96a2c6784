"""The APPL paper's patterns written in plain Python over gen results, sync and async.

A gen result behaves as its resolved value (docs/appl.md, "Using a result"): equal texts
compare and hash equal, so Counter, set, dict, sorted and max give the expected answers, and
json.dumps writes the text (or a structured value's JSON data). Replies come from a real
OpenAI-protocol server; the order in which concurrent requests take them does not matter to
any assertion below (each checks a multiset, or a value unique in it).
"""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from typing import Any

import pydantic
import pytest

from appl import ApplError, GenFuture, gen, ppl
from appl.testing import Rule
from tests.appl.helpers_lang import sync_server

VOTES = ["42", "41", "42", "7", "42"]  # the majority answer is "42" (3 of 5)
DRAFTS = ["short", "a much longer draft", "mid draft", "short"]


class City(pydantic.BaseModel):
    name: str
    population: int


# --- sync programs -------------------------------------------------------------------------


def test_self_consistency_vote_with_counter_sync() -> None:
    with sync_server([Rule(match="vote", replies=VOTES)]) as server:

        @ppl
        def vote() -> tuple[str, int, list[GenFuture]]:
            """Self-consistency: sample five answers, keep the most common."""
            "vote: what is 6*7?"
            answers = [gen(temperature=1.0) for _ in range(5)]
            best, count = Counter(answers).most_common(1)[0]
            return str(best), count, answers

        best, count, answers = vote()
    assert (best, count) == ("42", 3)
    assert len(server.requests) == 5
    assert answers.count("42") == 3  # list.count compares with ==
    assert "7" in answers and "9" not in answers


def test_best_of_n_dedup_sorting_and_json_sync() -> None:
    with sync_server([Rule(match="draft", replies=DRAFTS)]):

        @ppl
        def drafts() -> dict[str, Any]:
            """Best-of-n and friends over four drafts."""
            "draft a slogan"
            out = [gen() for _ in range(4)]
            return {
                "longest": max(out, key=len),
                "unique": set(out),
                "sorted": sorted(out),
                "by_key": {d: len(d) for d in out},
                "json": json.dumps({"drafts": out, "first": out[0]}),
                "formatted": f"{out[0]:>20}|",
                "upper": sorted(d.upper() for d in out),
            }

        got = drafts()
    assert got["longest"] == "a much longer draft"
    assert got["unique"] == {"short", "a much longer draft", "mid draft"}
    assert len(got["unique"]) == 3
    assert [str(d) for d in got["sorted"]] == sorted(DRAFTS)
    assert got["by_key"] == {"short": 5, "a much longer draft": 19, "mid draft": 9}
    data = json.loads(got["json"])
    assert sorted(data["drafts"]) == sorted(DRAFTS) and data["first"] in DRAFTS
    assert got["formatted"].endswith("|") and len(got["formatted"]) == 21
    assert got["upper"] == sorted(d.upper() for d in DRAFTS)


def test_result_equality_hash_ordering_and_str_methods_sync() -> None:
    with sync_server([Rule(match="x", reply=" Paris ")]):

        @ppl
        def program() -> tuple[GenFuture, GenFuture]:
            """Two equal answers."""
            "x"
            return gen(), gen()

        a, b = program()
    assert a == " Paris " and " Paris " == a and a == b and not (a != b)
    assert hash(a) == hash(b) == hash(" Paris ")
    assert {a: 1}[" Paris "] == 1 and len({a, b, " Paris "}) == 1
    assert a < "Zurich" and a >= " Paris " and "Paris" in a and a.strip() == "Paris"
    assert len(a) == 7 and bool(a) and a[1:6] == "Paris" and a * 2 == " Paris  Paris "


def test_structured_results_compare_and_dump_as_their_value_sync() -> None:
    paris = {"name": "Paris", "population": 2100000}
    with sync_server([Rule(match="city", reply=paris)]):

        @ppl
        def program() -> GenFuture:
            """A structured answer."""
            "city please"
            return gen(response_format=City)

        city = program()
    # the sync top level hands back the value itself, not a future
    assert isinstance(city, City) and not isinstance(city, GenFuture)
    assert city == City(**paris)
    assert city.name == "Paris" and city.population == 2100000
    assert json.loads(city.model_dump_json()) == paris
    with pytest.raises(TypeError, match="unhashable"):  # as the pydantic object itself
        hash(city)


def test_numbers_from_results() -> None:
    with sync_server([Rule(match="n", reply="17")]):

        @ppl
        def program() -> GenFuture:
            """A number."""
            "n"
            return gen()

        n = program()
    assert int(n) + 1 == 18 and float(n) == 17.0


# --- async programs ------------------------------------------------------------------------


async def test_self_consistency_vote_with_counter_async(scripted) -> None:
    server = scripted([Rule(match="vote", replies=VOTES)])

    @ppl
    async def vote() -> tuple[str, int]:
        """Self-consistency, async: await the samples, then vote in plain Python."""
        "vote: what is 6*7?"
        answers = [gen(temperature=1.0) for _ in range(5)]
        await asyncio.gather(*answers)  # pending results are fine to gather
        best, count = Counter(answers).most_common(1)[0]
        return str(best), count

    assert await vote() == ("42", 3)
    assert len(server.requests) == 5


async def test_best_of_n_dedup_sorting_and_json_async(scripted) -> None:
    scripted([Rule(match="draft", replies=DRAFTS)])

    @ppl
    async def drafts() -> dict[str, Any]:
        """Best-of-n and friends, async."""
        "draft a slogan"
        out = [gen() for _ in range(4)]
        for draft in out:
            await draft
        return {
            "longest": max(out, key=len),
            "unique": set(out),
            "sorted": [str(d) for d in sorted(out)],
            "json": json.dumps(out),
        }

    got = await drafts()
    assert got["longest"] == "a much longer draft"
    assert got["unique"] == set(DRAFTS) and len(got["unique"]) == 3
    assert got["sorted"] == sorted(DRAFTS)
    assert sorted(json.loads(got["json"])) == sorted(DRAFTS)


async def test_sync_body_called_from_async_code_reads_results_blockingly(scripted) -> None:
    scripted([Rule(match="vote", replies=VOTES)])

    @ppl
    def vote() -> str:
        """A sync body run from async code (in a worker thread): reading blocks there."""
        "vote"
        return str(Counter(gen() for _ in range(5)).most_common(1)[0][0])

    assert await vote() == "42"


async def test_reading_a_pending_result_on_the_loop_thread_is_a_clear_error(scripted) -> None:
    scripted([Rule(match="slow", reply="done", latency=0.3)])
    seen: list[str] = []

    @ppl
    async def program() -> str:
        """Reading before awaiting would deadlock the loop: refused with advice."""
        "slow"
        fut = gen()
        for read in (
            lambda: fut == "done",
            lambda: hash(fut),
            lambda: len(fut),
            lambda: json.dumps(fut),
            lambda: Counter([fut]),
        ):
            with pytest.raises(ApplError, match="await") as info:
                read()
            seen.append(str(info.value))
        assert await fut == "done"
        assert fut == "done" and hash(fut) == hash("done")  # fine once resolved
        return str(fut)

    assert await program() == "done"
    assert len(seen) == 5 and all("deadlock" in s for s in seen)


# --- lists of drafts in the prompt (one item per line, lazily) -------------------------------


def _last_prompt(server: Any) -> str:
    return "\n".join(m["content"] for m in server.requests[-1]["messages"])


def test_list_of_drafts_prompt_sync() -> None:
    rules = [Rule(match="Pick", reply="B"), Rule(match="draft", replies=["A", "B", "C"])]
    with sync_server(rules) as server:

        @ppl
        def judge() -> str:
            "draft a slogan"
            drafts = [gen() for _ in range(3)]
            "Pick the best of:"
            drafts  # a bare list statement: each draft on its own line
            return str(gen())

        assert judge() == "B"
    lines = _last_prompt(server).splitlines()
    assert lines[:2] == ["draft a slogan", "Pick the best of:"]
    assert sorted(lines[2:]) == ["A", "B", "C"]


async def test_list_of_drafts_prompt_async_stays_lazy(scripted) -> None:
    server = scripted(
        [Rule(match="Pick", reply="B"), Rule(match="draft", replies=["A", "B"], latency=0.2)]
    )

    @ppl
    async def judge(topic: str) -> str:
        f"draft about {topic}"
        drafts = [gen(), gen()]
        "Pick one of:"
        (drafts[0], f"or: {drafts[1]}")  # a tuple of a pending result and a lazy f-string
        verdict = gen()  # reached without waiting: the list kept its items pending
        assert not verdict.done() and not drafts[0].done()
        return await verdict

    assert await judge("tea") == "B"
    lines = _last_prompt(server).splitlines()
    assert lines[:2] == ["draft about tea", "Pick one of:"]
    assert {lines[2], lines[3].removeprefix("or: ")} == {"A", "B"}


async def test_list_statements_that_are_not_prompt(scripted) -> None:
    server = scripted()

    @ppl
    async def program() -> str:
        "start"
        seen: list[int] = []
        [seen.append(i) for i in range(2)]  # a list of None: not prompt
        sorted(["x", "y"])  # a call's list, like a call's str: not prompt
        [1, 2]
        ["end", ("nested", "items")]
        return await gen()

    await program()
    assert _last_prompt(server) == "start\nend\nnested\nitems"

    @ppl
    async def mixed() -> str:
        "start"
        ["a", 3]
        return await gen()

    with pytest.raises(ApplError, match="mixes prompt text with int 3"):
        await mixed()


# --- the docstring rule (APPL's): triple quotes are documentation, single quotes prompt -----


async def test_leading_single_quoted_string_is_prompt(scripted) -> None:
    server = scripted()

    @ppl
    async def answer(question: str) -> str:
        "Answer in one word."
        question
        return await gen()

    await answer("Capital of France?")
    assert _last_prompt(server) == "Answer in one word.\nCapital of France?"


async def test_docstring_as_adds_the_docstring(scripted) -> None:
    server = scripted()

    @ppl(docstring_as="system")
    async def answer(question: str) -> str:
        """You are terse.

        Answer in one word.
        """
        question
        return await gen()

    await answer("Capital?")
    assert server.requests[-1]["messages"] == [
        {"role": "system", "content": "You are terse.\n\nAnswer in one word."},
        {"role": "user", "content": "Capital?"},
    ]
    assert answer.__doc__ is not None and "terse" in answer.__doc__


async def test_empty_prompt_error_names_the_docstring_rule(scripted) -> None:
    scripted()

    @ppl
    async def only_doc() -> str:
        """Answer in one word."""
        return await gen()

    with pytest.raises(ApplError, match="empty prompt") as info:
        await only_doc()
    message = str(info.value)
    assert "docstring" in message and "single quotes" in message
    assert 'docstring_as="user"' in message

    @ppl
    async def nothing() -> str:
        return await gen()

    with pytest.raises(ApplError, match=r"nothing was added to .*nothing's prompt"):
        await nothing()
    with pytest.raises(ValueError, match="docstring_as"):
        ppl(docstring_as="assistant")(nothing.original)
