"""appl.window: requests fitted to a context window; servers' overflow messages understood."""

from __future__ import annotations

from appl.config import configure, get_config, reset_config
from appl.errors import ContextOverflowError
from appl.models.openai_provider import context_overflow
from appl.types import Message, ToolCall
from appl.window import ContextBudget, context_window


def _conversation() -> list[Message]:
    call = ToolCall("c1", "read_file", '{"path": "x.c"}')
    return [
        Message("system", "You fix kernel bugs. " * 20),
        Message("user", "The crash report: " + "stack frame " * 600),
        Message("assistant", None, tool_calls=(call,)),
        Message("tool", "line of code\n" * 700, tool_call_id="c1"),
        Message("assistant", "I think the lookup may fail. " * 40),
        Message("user", "Result of your patch: build_failed. " + "error: x " * 200),
    ]


def test_fit_keeps_the_task_and_the_newest_message_and_leaves_room() -> None:
    msgs = _conversation()
    budget = ContextBudget(2048, max_tokens=1024, min_tokens=256)
    assert budget.estimate(msgs) > 2048  # it does not fit as it is
    out, max_tokens = budget.fit(msgs)
    assert out[0] == msgs[0] and out[-1].content == msgs[-1].content
    assert out[1].role == "user" and out[1].content.startswith("The crash report")
    assert 256 <= max_tokens <= 1024
    assert budget.estimate(out) + max_tokens <= 2048
    # a tool result never survives without the call that asked for it
    for i, m in enumerate(out):
        if m.role == "tool":
            assert out[i - 1].tool_calls


def test_fit_cuts_the_protected_head_last_and_says_so() -> None:
    msgs = [Message("system", "s " * 50), Message("user", "report " * 4000)]
    out, max_tokens = ContextBudget(1024, max_tokens=512, min_tokens=200).fit(msgs)
    assert "characters cut to fit the context" in out[1].content
    assert max_tokens >= 200


def test_unknown_window_changes_nothing() -> None:
    msgs = _conversation()
    assert ContextBudget(None, max_tokens=300).fit(msgs) == (msgs, 300)


def test_overflow_teaches_the_budget_the_servers_numbers() -> None:
    budget = ContextBudget(100_000, max_tokens=512)
    before = budget.chars_per_token
    error = ContextOverflowError("too long", requested=4787, window=4096)
    budget.overflowed(error, estimated=3000)
    assert budget.window == 4096 and budget.chars_per_token < before
    out, _ = budget.fit(_conversation())
    assert budget.estimate(out) <= 4096


def test_server_messages_are_recognised() -> None:
    llama = "Requested tokens (4787) exceed context window of 4096"
    openai = (
        "This model's maximum context length is 4096 tokens. However, you requested 6835 "
        "tokens (4787 in the messages, 2048 in the completion)."
    )
    assert context_overflow(llama) == (4787, 4096)
    assert context_overflow(openai) == (6835, 4096)
    assert context_overflow("the request exceeds the available context size") == (None, None)
    assert context_overflow("invalid value for temperature") is None


def test_local_window_comes_from_the_server_flags_and_remote_from_config() -> None:
    saved = get_config()
    try:
        assert context_window("local") == 4096
        remote = {"provider": "openai", "api_key": "k"}
        configure(models={"rx": {**remote, "context_window": 8192}, "ry": remote})
        assert context_window("rx") == 8192
        assert context_window("ry") is None
        configure(
            models={"local": {"provider": "local", "api_key": "local", "options": {"n_ctx": 2048}}}
        )
        assert context_window("local") == 2048
    finally:
        reset_config(saved)
