"""The @ppl language: what becomes prompt text, roles, context modes and prompt helpers.
Prompts are checked in the messages a real OpenAI-protocol server received."""

from __future__ import annotations

import asyncio
import inspect
from typing import Any

import pytest

from appl import (
    AIMessage,
    ApplError,
    BulletList,
    GenFuture,
    NumberedList,
    PromptText,
    Section,
    SystemMessage,
    Tagged,
    current_prompt,
    gen,
    ppl,
    role,
)
from appl.testing import Rule


def messages(server: Any, index: int = -1) -> list[dict[str, Any]]:
    return [
        {"role": m["role"], "content": m["content"]} for m in server.requests[index]["messages"]
    ]


async def test_bare_strings_become_the_prompt_and_the_docstring_does_not(scripted) -> None:
    server = scripted()
    topic = "sorting"

    @ppl
    async def program(n: int) -> str:
        """This docstring is documentation, not prompt."""
        "Line one."
        f"Explain {topic} in {n} words."
        x = "assigned strings are not prompt"
        x.upper()  # a call returning a plain str is not prompt either
        x  # ...but a bare name holding a str is
        [1, 2].append(3)
        return await gen()

    assert await program(5) == "ok"
    assert messages(server) == [
        {
            "role": "user",
            "content": "Line one.\nExplain sorting in 5 words.\nassigned strings are not prompt",
        }
    ]
    assert program.__doc__ == "This docstring is documentation, not prompt."


async def test_roles_with_blocks_and_message_statements(scripted) -> None:
    server = scripted()

    @ppl
    async def program() -> str:
        """Doc."""
        with role("system"):
            "You are a careful assistant."
        "What is 2+2?"
        AIMessage("4")
        SystemMessage("Be brief.")
        "And 3+3?"
        return await gen()

    await program()
    assert messages(server) == [
        {"role": "system", "content": "You are a careful assistant."},
        {"role": "user", "content": "What is 2+2?"},
        {"role": "assistant", "content": "4"},
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "And 3+3?"},
    ]


async def test_bad_role_is_rejected() -> None:
    @ppl
    async def program() -> None:
        """Doc."""
        with role("wizard"):  # type: ignore[arg-type]
            "hi"

    with pytest.raises(ValueError, match="role must be one of"):
        await program()


async def test_context_modes(scripted) -> None:
    server = scripted([Rule(match="", reply=lambda body: f"reply{len(body['messages'])}")])

    @ppl(ctx="new")
    async def fresh() -> str:
        """Doc."""
        "callee"
        return await gen()

    @ppl(ctx="copy")
    async def copied() -> str:
        """Doc."""
        "callee"
        return await gen()

    @ppl(ctx="same")
    async def shared() -> None:
        """Doc."""
        "added by callee"

    @ppl
    async def caller(which: str) -> str:
        """Doc."""
        "caller text"
        if which == "new":
            await fresh()
        elif which == "copy":
            await copied()
        else:
            await shared()
        "after"
        return await gen()

    await caller("new")
    assert messages(server, -2) == [{"role": "user", "content": "callee"}]
    await caller("copy")
    assert messages(server, -2) == [{"role": "user", "content": "caller text\ncallee"}]
    assert messages(server, -1) == [{"role": "user", "content": "caller text\nafter"}]
    await caller("same")
    assert messages(server, -1) == [
        {"role": "user", "content": "caller text\nadded by callee\nafter"}
    ]


async def test_resume_keeps_the_functions_own_prompt_across_calls(scripted) -> None:
    server = scripted([Rule(match="", reply=lambda body: f"answer{len(body['messages'])}")])

    @ppl(ctx="resume")
    async def chat(message: str) -> str:
        """Doc."""
        message
        reply = gen()
        with role("assistant"):
            reply
        return await reply

    assert await chat("hello") == "answer1"
    assert await chat("again") == "answer3"
    assert messages(server) == [
        {"role": "user", "content": "hello"},
        {"role": "assistant", "content": "answer1"},
        {"role": "user", "content": "again"},
    ]
    chat.reset_resume()
    assert await chat("fresh") == "answer1"


async def test_fstring_with_a_pending_future_keeps_it_lazy(scripted) -> None:
    scripted([Rule(match="Ada", reply="hi Ada"), Rule(match="name?", reply="Ada", latency=0.2)])
    seen: dict[str, Any] = {}

    @ppl
    async def program() -> str:
        """Doc."""
        "name?"
        name = gen()
        greeting = f"Say hi to {name!s:>5}."
        seen["lazy"] = greeting
        seen["ready_kind"] = type(f"{1 + 1:03d}")
        greeting
        text = await greeting
        seen["text"] = text
        return await gen()

    assert await program() == "hi Ada"
    assert isinstance(seen["lazy"], PromptText)
    assert seen["ready_kind"] is str  # no pending futures: an ordinary str
    assert seen["text"] == "Say hi to   Ada."


async def test_prompt_helpers_render_and_keep_futures(scripted) -> None:
    server = scripted([Rule(match="first?", reply="FIRST", latency=0.1)])

    @ppl
    async def program() -> str:
        """Doc."""
        "first?"
        first = gen()
        Tagged("doc", "some code", "more")
        NumberedList(["alpha", first])
        BulletList(["x", "y"])
        Section("Notes", "be kind")
        return await gen()

    await program()
    assert messages(server)[0]["content"] == "\n".join(
        [
            "first?",
            "<doc>\nsome code\nmore\n</doc>",
            "1. alpha\n2. FIRST",
            "- x\n- y",
            "## Notes\nbe kind",
        ]
    )
    with pytest.raises(ValueError, match="invalid tag"):
        Tagged("bad tag", "x")


async def test_gen_future_concatenation_stays_lazy(scripted) -> None:
    scripted([Rule(match="q", reply="A", latency=0.1)])

    @ppl
    async def program() -> tuple[Any, str]:
        """Doc."""
        "q"
        answer = gen()
        combined = "answer: " + answer
        return combined, await combined

    combined, text = await program()
    assert isinstance(combined, PromptText)
    assert text == "answer: A"


async def test_closures_methods_and_line_numbers_survive_compilation(scripted) -> None:
    server = scripted()
    prefix = "closure value"
    counter = 0

    class Agent:
        greeting = "from a method"

        @ppl
        async def ask(self) -> str:
            """Doc."""
            nonlocal counter
            counter += 1
            f"{prefix} / {self.greeting}"
            return await gen()

        @ppl
        async def where(self) -> int:
            """Doc."""
            return inspect.currentframe().f_lineno  # type: ignore[union-attr]

    agent = Agent()
    assert await agent.ask() == "ok"
    assert counter == 1
    assert messages(server)[0]["content"] == "closure value / from a method"
    source_lines, first = inspect.getsourcelines(Agent.where.original)
    expected = first + next(i for i, line in enumerate(source_lines) if "f_lineno" in line)
    assert await agent.where() == expected


def test_decorators_between_ppl_and_def_are_refused() -> None:
    def other(f: Any) -> Any:
        return f

    with pytest.raises(ApplError, match="directly above the def"):

        @ppl
        @other
        def program() -> None:
            """Doc."""


def test_generator_functions_and_bad_modes_are_refused() -> None:
    with pytest.raises(TypeError, match="generator"):

        @ppl
        def produce() -> Any:
            """Doc."""
            yield 1

    with pytest.raises(ValueError, match="ctx must be one of"):

        @ppl(ctx="shared")  # type: ignore[arg-type]
        def program() -> None:
            """Doc."""


async def test_current_prompt_is_inspectable(scripted) -> None:
    scripted()

    @ppl
    async def program() -> list[Any]:
        """Doc."""
        "one"
        SystemMessage("two")
        return current_prompt().render()

    rendered = await program()
    assert [(m.role, m.content) for m in rendered] == [("user", "one"), ("system", "two")]


async def test_a_bare_gen_statement_adds_its_reply_to_the_prompt(scripted) -> None:
    server = scripted([Rule(match="draft", reply="my draft", latency=0.05)])
    futures: list[GenFuture] = []

    @ppl
    async def program() -> str:
        """Doc."""
        "Write a draft."
        with role("assistant"):
            gen(max_tokens=10)
        "Now critique it."
        futures.append(gen())
        return await futures[0]

    await program()
    await asyncio.sleep(0)
    assert messages(server) == [
        {"role": "user", "content": "Write a draft."},
        {"role": "assistant", "content": "my draft"},
        {"role": "user", "content": "Now critique it."},
    ]
    assert server.requests[0]["max_tokens"] == 10
