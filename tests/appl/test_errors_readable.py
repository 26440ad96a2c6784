"""Errors a user reads: short tracebacks that start at their own line, connection failures in
words, and replay misses that give the right advice."""

from __future__ import annotations

import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from appl import ModelConnectionError, ReplayMissError, config, gen, ppl
from appl.testing import Rule
from appl.trace import recording, replaying


def _dead_port() -> int:
    with socket.socket() as s:  # bound, never listening: connections are refused
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


PROGRAM = """
import appl
from appl import gen, ppl

appl.configure(models={{"m": {{"provider": "openai", "base_url": "http://127.0.0.1:{port}/v1",
                "api_key": "k", "api_key_env": None, "max_retries": 1,
                "backoff_base_s": 0.01}}}}, default_model="m")

@ppl
def prog():
    "hello"
    return gen()

print(prog())  # the user's line
"""


def test_a_dead_server_is_one_short_traceback_from_the_user_s_line(tmp_path: Path) -> None:
    script = tmp_path / "prog.py"
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        script.write_text(textwrap.dedent(PROGRAM.format(port=holder.getsockname()[1])))
        done = subprocess.run(
            [sys.executable, str(script)], capture_output=True, text=True, timeout=120
        )
    assert done.returncode == 1
    err = done.stderr
    lines = err.splitlines()
    assert len(lines) <= 30, err  # it was 99 lines of aiohttp and runtime frames
    last_traceback = err.rsplit("Traceback (most recent call last):", 1)[1]
    first_frame = last_traceback.strip().splitlines()[0]
    assert str(script) in first_frame and "print(prog())" in last_traceback
    assert "aiohttp" not in last_traceback and "runtime.py" not in last_traceback
    assert "connection refused (is the server running?)" in lines[-1]
    assert "ssl:default" not in lines[-1]


async def test_the_cause_stays_in_dunder_cause() -> None:
    port = _dead_port()
    config.configure(
        models={
            "dead": {"provider": "openai", "base_url": f"http://127.0.0.1:{port}/v1",
                     "api_key": "k", "api_key_env": None, "max_retries": 0}
        }
    )  # fmt: skip

    @ppl
    async def ask() -> str:
        """Doc."""
        "hello"
        return await gen(model="dead")

    try:
        with pytest.raises(ModelConnectionError) as caught:
            await ask()
    finally:
        config.reset_config()
    assert "cannot connect to http://127.0.0.1" in str(caught.value)
    assert caught.value.__cause__ is not None


@ppl
async def _ask(q: str) -> str:
    """Doc."""
    f"Q: {q}"
    return await gen()


async def test_a_replay_under_another_default_model_says_which_one(scripted, tmp_path) -> None:
    scripted([Rule(reply="fine")])
    trace = tmp_path / "t.jsonl"
    with recording(trace):
        assert await _ask("x") == "fine"
    scripted([Rule(reply="fine")], alias="other")  # now the default model is "other"
    with replaying(trace), pytest.raises(ReplayMissError) as caught:
        await _ask("x")
    message = str(caught.value)
    assert "set the default model to 'scripted' as when recorded" in message
    assert "re-record" not in message
