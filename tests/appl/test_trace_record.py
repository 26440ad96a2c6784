"""Recording: the file format, how tracing is turned on, and that off costs nothing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from appl import config, events, gen, ppl
from appl.testing import Rule
from appl.trace import SCHEMA_VERSION, cassette, read_trace, recording


@ppl
async def ask(question: str) -> str:
    """Doc."""
    f"Q: {question}"
    return await gen()


@ppl
async def probe_listeners() -> bool:
    """Doc."""
    return events.has_listeners()


async def test_header_then_one_line_per_event_flushed_as_it_happens(
    scripted, tmp_path: Path
) -> None:
    scripted([Rule(reply="A1")], model={"api_key": "sk-very-secret"})
    trace = tmp_path / "run.jsonl"
    seen_mid_run: list[str] = []

    @ppl
    async def two_steps() -> str:
        """Doc."""
        "first"
        await gen()
        # the first gen's response must already be on disk while the run goes on
        seen_mid_run.extend(json.loads(line)["type"] for line in trace.read_text().splitlines())
        "second"
        return await gen()

    with recording(trace, program="two_steps demo"):
        assert await two_steps() == "A1"
    assert "gen_response" in seen_mid_run and "run_end" not in seen_mid_run
    text = trace.read_text()
    assert "sk-very-secret" not in text  # the config in the header has secrets removed
    lines = [json.loads(line) for line in text.splitlines()]
    header = lines[0]
    assert header["type"] == "header" and header["version"] == SCHEMA_VERSION
    assert header["program"] == "two_steps demo" and header["started_at"].endswith("Z")
    assert header["config"]["models"]["scripted"]["api_key"] == "***"
    kinds = [r["type"] for r in lines[1:]]
    assert kinds[0] == "run_start" and kinds[-1] == "run_end"
    assert kinds.count("gen_request") == kinds.count("gen_response") == 2
    assert [r["seq"] for r in lines[1:]] == list(range(1, len(lines)))
    response = next(r for r in lines if r["type"] == "gen_response")
    assert response["call"]["path"].startswith("two_steps/gen@L")
    assert response["data"]["usage"]["completion_tokens"] > 0
    assert "latency_s" in response["data"] and "cost_usd" in response["data"]


async def test_tracing_off_installs_no_listener(scripted, monkeypatch, tmp_path: Path) -> None:
    scripted()
    monkeypatch.delenv("APPL_TRACE", raising=False)
    monkeypatch.delenv("APPL_REPLAY", raising=False)
    assert await probe_listeners() is False
    with recording(tmp_path / "on.jsonl"):
        assert await probe_listeners() is True
    assert await probe_listeners() is False


async def test_env_variable_turns_tracing_on_for_every_run(
    scripted, monkeypatch, tmp_path: Path
) -> None:
    scripted([Rule(reply="env")])
    trace = tmp_path / "env.jsonl"
    monkeypatch.setenv("APPL_TRACE", str(trace))
    assert await ask("a") == "env"
    assert await ask("b") == "env"
    monkeypatch.delenv("APPL_TRACE")
    from appl.trace._record import _close_auto_writers

    _close_auto_writers()
    read = read_trace(trace)
    runs = {r["run"] for r in read.records}
    assert len(runs) == 2  # one file, two runs
    assert sum(r["type"] == "gen_response" for r in read.records) == 2


async def test_config_trace_table_turns_tracing_on(scripted, monkeypatch, tmp_path: Path) -> None:
    scripted([Rule(reply="cfg")])
    monkeypatch.delenv("APPL_TRACE", raising=False)
    trace = tmp_path / "cfg.jsonl"
    config.configure(sections={"trace": {"path": str(trace)}})
    try:
        assert await probe_listeners() is True
        assert await ask("c") == "cfg"
    finally:
        config.configure(sections={})
        from appl.trace._record import _close_auto_writers

        _close_auto_writers()
    assert any(r["type"] == "gen_response" for r in read_trace(trace).records)


def _crash(
    tmp_path: Path, base_url: str, trace: Path, body: str
) -> subprocess.CompletedProcess[str]:
    """Run `body` (a program that crashes) in a child process configured for the scripted
    server at `base_url`, traced to `trace` through APPL_TRACE."""
    script = tmp_path / "prog.py"
    head = f"""
        import os
        import appl
        from appl import gen, ppl

        appl.configure(models={{"s": {{"provider": "openai", "base_url": {base_url!r},
                        "api_key": "k", "api_key_env": None}}}}, default_model="s")
    """
    script.write_text(textwrap.dedent(head) + textwrap.dedent(body))
    env = {**os.environ, "APPL_TRACE": str(trace)}
    return subprocess.run(
        [sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=60
    )


def test_a_crashed_process_keeps_every_event_written_before_the_crash(
    scripted, tmp_path: Path
) -> None:
    server = scripted([Rule(reply="before crash")])
    trace = tmp_path / "crash.jsonl"
    done = _crash(tmp_path, server.base_url, trace, """
        @ppl
        def prog():
            "Docstring: not prompt text."
            "hello"
            print(gen())
            os._exit(3)  # a hard crash: no atexit, no close, no flush at exit

        prog()
    """)  # fmt: skip
    assert done.returncode == 3, done.stderr
    assert "before crash" in done.stdout
    kinds = [r["type"] for r in read_trace(trace).records]
    assert "gen_response" in kinds and "run_end" not in kinds


async def test_cassette_records_when_absent_then_replays(scripted, tmp_path: Path) -> None:
    server = scripted([Rule(reply="taped")])
    tape = tmp_path / "traces" / "ask.jsonl"
    with cassette(tape) as mode:
        assert mode == "record"
        assert await ask("x") == "taped"
    assert tape.exists() and not tape.with_name("ask.jsonl.partial").exists()
    with cassette(tape) as mode:
        assert mode == "replay"
        assert await ask("x") == "taped"
    assert len(server.requests) == 1


def test_the_pytest_fixture_records_then_replays_strictly(tmp_path: Path) -> None:
    """A real pytest session per step: record (file absent), replay, then a changed prompt."""
    test_file = tmp_path / "test_prog.py"
    test_file.write_text(
        textwrap.dedent(
            """
            import os
            from appl import config, gen, ppl
            from appl.testing import Rule, ScriptedServer

            @ppl
            async def ask(q):
                "Doc."
                f"Q: {q}"
                return await gen()

            async def test_ask(appl_replay):
                with ScriptedServer([Rule(reply="from server")]) as server:
                    config.configure(models={"s": {"provider": "openai", "api_key": "k",
                        "api_key_env": None, "base_url": server.base_url}}, default_model="s")
                    with appl_replay("traces/ask.jsonl"):
                        assert await ask(os.environ["QUESTION"]) == "from server"
                    print("REQUESTS", len(server.requests))
            """
        )
    )

    def session(question: str, *extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-s", "-p", "no:cacheprovider",
             "--rootdir", str(tmp_path), "-o", "asyncio_mode=auto", str(test_file), *extra],
            cwd=tmp_path, env={**os.environ, "QUESTION": question},
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip

    first = session("one")
    assert first.returncode == 0, first.stdout + first.stderr
    assert "REQUESTS 1" in first.stdout and (tmp_path / "traces" / "ask.jsonl").exists()
    second = session("one")
    assert second.returncode == 0 and "REQUESTS 0" in second.stdout, second.stdout
    changed = session("two")
    assert changed.returncode == 1 and "ReplayMissError" in changed.stdout
    assert "+Q: two" in changed.stdout and "-Q: one" in changed.stdout
    rerecord = session("two", "--appl-record")
    assert rerecord.returncode == 0 and "REQUESTS 1" in rerecord.stdout, rerecord.stdout


async def test_recording_never_silently_replaces_a_trace(scripted, tmp_path: Path) -> None:
    scripted([Rule(reply="first")])
    trace = tmp_path / "keep.jsonl"
    with recording(trace):
        assert await ask("a") == "first"
    before = trace.read_bytes()
    with pytest.raises(FileExistsError, match="overwrite=True"), recording(trace):
        await ask("b")
    assert trace.read_bytes() == before
    with recording(trace, overwrite=True):
        assert await ask("c") == "first"
    assert trace.read_bytes() != before


def test_a_stream_cut_by_a_crash_keeps_the_text_that_came(scripted, tmp_path: Path) -> None:
    words = [f"w{i:03d}" for i in range(200)]
    # paced: the program sees chunk 80 while the server is still sending the rest
    server = scripted([Rule(reply=" ".join(words))], tokens_per_s=100)
    trace = tmp_path / "cut.jsonl"
    done = _crash(tmp_path, server.base_url, trace, """
        @ppl
        async def prog():
            "Docstring: not prompt text."
            "tell a long story"
            seen = 0
            async for chunk in gen(stream=True):
                seen += 1
                if seen == 80:
                    os._exit(3)  # a hard crash mid-stream: no gen_response is written

        appl.run(prog())
    """)  # fmt: skip
    assert done.returncode == 3, done.stderr
    records = read_trace(trace).records
    assert "gen_response" not in [r["type"] for r in records]
    kept = "".join(c for r in records if r["type"] == "gen_chunks" for c in r["data"]["chunks"])
    assert len(kept.split()) >= 32  # at most one batch (32 chunks) is lost
    assert " ".join(words).startswith(kept)
    shown = subprocess.run(
        [sys.executable, "-m", "appl.trace", "show", str(trace)],
        env={**os.environ, "COLUMNS": "250"}, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert "streamed before the cut" in shown.stdout and "w000" in shown.stdout, shown.stdout
