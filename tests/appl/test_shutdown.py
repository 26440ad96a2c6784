"""Clean shutdown: no "Unclosed ..." warnings and no open connections, however a program ends
(asyncio.run, a sync run, a loop never closed, Ctrl-C in async and sync code).

Each program runs in a child interpreter with `-X dev` (ResourceWarnings shown, asyncio debug)
so warnings printed at exit, after any in-process check could look, are seen too. The child
runs its own scripted server and, after the program, prints how many client connections the
server still holds open (0 when the client closed them, rather than the OS at exit).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

PRELUDE = textwrap.dedent(
    """
    import asyncio, sys, time
    from appl import ppl, gen, configure
    from appl.testing import Rule, ScriptedServer

    server = ScriptedServer([Rule(match="slow", reply="s", latency=60)]).start()
    configure(
        models={"m": {"provider": "openai", "api_key": "x", "api_key_env": None,
                      "base_url": server.base_url}},
        default_model="m",
    )

    def client_ends_open():
        # client sockets still ESTABLISHED to the server (state 01 in /proc/net/tcp); a
        # closed client end moves to FIN_WAIT/TIME_WAIT even while the server's handler
        # sleeps through a scripted latency without reading
        port = f"{server.port:04X}"
        count = 0
        with open("/proc/net/tcp") as table:
            for line in list(table)[1:]:
                fields = line.split()
                if fields[2].endswith(":" + port) and fields[3] == "01":
                    count += 1
        return count

    def open_connections():
        deadline = time.monotonic() + 2.0
        while client_ends_open() and time.monotonic() < deadline:
            time.sleep(0.02)
        return client_ends_open()

    @ppl
    async def ask(q):
        q
        return await gen()

    @ppl
    def ask_sync(q):
        q
        return str(gen())
    """
)

PROGRAMS = {
    "asyncio.run": """
        print(asyncio.run(ask("hi")), asyncio.run(ask("again")))
        print("OPEN", open_connections())
    """,
    "sync run": """
        print(ask_sync("hi"))
        print("OPEN", open_connections())
    """,
    "loop never closed": """
        loop = asyncio.new_event_loop()
        print(loop.run_until_complete(ask("hi")))
        print("OPEN", "checked at exit")
    """,
}
# The program's own fault, not appl's: it never closes the loop it made.
ALLOWED = {"loop never closed": "unclosed event loop"}


def _run_child(tmp: Path, body: str, *, interrupt_after: str | None = None) -> tuple[int, str, str]:
    program = tmp / "program.py"  # @ppl needs the source in a file
    program.write_text(PRELUDE + textwrap.dedent(body))
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-X", "dev", str(program)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    if interrupt_after is not None:
        assert proc.stdout is not None
        line = proc.stdout.readline()  # the program says when the slow gen is in flight
        assert interrupt_after in line, line
        time.sleep(0.3)
        proc.send_signal(signal.SIGINT)
    try:
        out, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    return proc.returncode, out, err


def _assert_clean(err: str, allowed: str = "") -> None:
    bad = [
        ln
        for ln in err.splitlines()
        if ("nclosed" in ln or "ResourceWarning" in ln) and not (allowed and allowed in ln)
    ]
    assert not bad, "shutdown left resources open:\n" + err[-3000:]


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_programs_end_without_unclosed_warnings(name: str, tmp_path: Path) -> None:
    rc, out, err = _run_child(tmp_path, PROGRAMS[name])
    assert rc == 0, err[-3000:]
    _assert_clean(err, ALLOWED.get(name, ""))
    assert "OPEN 0" in out or "checked at exit" in out, out


def test_ctrl_c_in_an_async_program_closes_everything(tmp_path: Path) -> None:
    body = """
        async def main():
            await ask("hi")
            print("IN FLIGHT", flush=True)
            await ask("slow")

        try:
            asyncio.run(main())
        except KeyboardInterrupt:
            print("INTERRUPTED", "OPEN", open_connections())
    """
    rc, out, err = _run_child(tmp_path, body, interrupt_after="IN FLIGHT")
    assert rc == 0, err[-3000:]  # the program caught the KeyboardInterrupt and exited
    assert "INTERRUPTED OPEN 0" in out, out + err[-3000:]
    _assert_clean(err)


def test_ctrl_c_in_a_sync_program_closes_everything(tmp_path: Path) -> None:
    body = """
        @ppl
        def main():
            "hi"
            str(gen())
            print("IN FLIGHT", flush=True)
            "slow"
            return str(gen())

        try:
            main()
        except KeyboardInterrupt:
            print("INTERRUPTED", "OPEN", open_connections())
    """
    rc, out, err = _run_child(tmp_path, body, interrupt_after="IN FLIGHT")
    assert rc == 0, err[-3000:]  # the program caught the KeyboardInterrupt and exited
    assert "INTERRUPTED OPEN 0" in out, out + err[-3000:]
    _assert_clean(err)


def test_finished_sync_runs_leave_no_event_loops_behind() -> None:
    """Each sync run makes an event loop; the hook that closes its models at shutdown must
    not keep it alive afterwards."""
    import asyncio
    import gc

    from appl import gen, ppl
    from appl.testing import Rule
    from tests.appl.helpers_lang import sync_server

    @ppl
    def ask(q: str) -> str:
        q
        return str(gen())

    def loops() -> int:
        gc.collect()
        return sum(isinstance(o, asyncio.AbstractEventLoop) for o in gc.get_objects())

    with sync_server([Rule(reply="ok")]):
        ask("warm-up")
        before = loops()
        for i in range(5):
            assert ask(f"q{i}") == "ok"
        assert loops() == before
