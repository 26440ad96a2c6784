"""End to end through the real embedded llama.cpp server (Qwen2.5-Coder-0.5B, CPU).

Slow: every test shares one server (started once per process, as in real programs), and
answers are kept short. The setup script installs the server package and the weights.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from appl.local.server import _LIVE, shared_server
from appl.models import close_models, get_model
from appl.types import GenRequest, Message, ToolSpec

pytestmark = pytest.mark.slow


def _req(prompt: str, **kw: object) -> GenRequest:
    return GenRequest(model="local", messages=[Message("user", prompt)], temperature=0, **kw)  # type: ignore[arg-type]


async def test_json_schema_output_is_valid() -> None:
    schema = {
        "type": "object",
        "properties": {"language": {"type": "string"}, "parallel": {"type": "boolean"}},
        "required": ["language", "parallel"],
    }
    fmt = {"type": "json_schema", "json_schema": {"name": "answer", "schema": schema}}
    try:
        resp = await get_model("local").generate(
            _req(
                "Is OpenMP a parallel programming API for C? Answer in JSON.",
                response_format=fmt,
                max_tokens=40,
            )
        )
    finally:
        await close_models()
    data = json.loads(resp.text)
    assert set(data) >= {"language", "parallel"} and isinstance(data["parallel"], bool)
    assert resp.usage.completion_tokens > 0 and resp.usage.prompt_tokens > 0


async def test_streaming_delivers_chunks_that_add_up_to_the_text() -> None:
    chunks: list[str] = []
    try:
        resp = await get_model("local").generate(
            _req("Count from 1 to 8, separated by spaces.", stream=True, max_tokens=30),
            on_text=chunks.append,
        )
    finally:
        await close_models()
    assert len(chunks) > 1
    assert "".join(chunks) == resp.text and "3" in resp.text


async def test_forced_tool_call_returns_parseable_arguments() -> None:
    tool = ToolSpec(
        name="compile_code",
        description="Compile a C source file with the given optimisation level.",
        parameters={
            "type": "object",
            "properties": {"filename": {"type": "string"}, "opt_level": {"type": "integer"}},
            "required": ["filename", "opt_level"],
        },
    )
    choice = {"type": "function", "function": {"name": "compile_code"}}
    try:
        resp = await get_model("local").generate(
            _req("Compile main.c at -O2.", tools=[tool], tool_choice=choice, max_tokens=60)
        )
    finally:
        await close_models()
    assert resp.tool_calls, resp.text
    call = resp.tool_calls[0]
    assert call.name == "compile_code"
    args = json.loads(call.arguments)
    assert isinstance(args["filename"], str) and isinstance(args["opt_level"], int)


async def test_concurrent_programs_share_one_server() -> None:
    import asyncio

    try:
        a, b = await asyncio.gather(
            get_model("local").generate(_req("Say yes.", max_tokens=3)),
            get_model("local").generate(_req("Say no.", max_tokens=3)),
        )
    finally:
        await close_models()
    assert a.text and b.text
    assert len([s for s in _LIVE if s.running]) == 1
    assert shared_server().running


def test_server_dies_with_its_parent_even_on_sigkill(tmp_path) -> None:
    script = textwrap.dedent(
        """
        import sys, time
        from appl.local.server import shared_server
        s = shared_server()
        s.start()
        print(s._proc.pid, flush=True)
        time.sleep(600)
        """
    )
    parent = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        assert parent.stdout is not None
        server_pid = int(parent.stdout.readline())
        os.kill(server_pid, 0)  # alive
    finally:
        parent.kill()  # SIGKILL: no atexit handler runs
        parent.wait()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            os.kill(server_pid, 0)
        except ProcessLookupError:
            return
        try:  # reap if it is our grandchild turned zombie under init (it is not ours: ignore)
            os.waitpid(server_pid, os.WNOHANG)
        except ChildProcessError:
            pass
        time.sleep(0.2)
    os.kill(server_pid, signal.SIGKILL)
    pytest.fail("the local server outlived its SIGKILLed parent by 30 s")


async def test_auto_tool_choice_is_emulated_and_yields_a_tool_call() -> None:
    tool = ToolSpec(
        name="get_weather",
        description="Current weather for a city.",
        parameters={
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    )
    try:
        resp = await get_model("local").generate(
            _req(
                "Use the get_weather tool to look up the weather in Paris.",
                tools=[tool],
                max_tokens=60,
            )
        )
    finally:
        await close_models()
    assert resp.tool_calls, f"no tool call; text was {resp.text!r}"
    assert resp.tool_calls[0].name == "get_weather"
    assert "paris" in json.loads(resp.tool_calls[0].arguments)["city"].lower()


def test_serve_local_command_serves_until_ctrl_c() -> None:
    import socket
    import urllib.request

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen(
        [sys.executable, "-m", "appl.cli", "serve-local", "--port", str(port)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        models = None
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=2) as r:
                    models = json.loads(r.read())
                    break
            except OSError:
                time.sleep(0.3)
        assert models is not None, "appl serve-local never answered"
        assert models["data"][0]["id"] == "local"
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    with pytest.raises(OSError):  # the server went with it
        urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=2)
