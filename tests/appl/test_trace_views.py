"""Views of a trace: the terminal tree, Chrome trace events, diff, and the HTML page."""

from __future__ import annotations

import asyncio
import json
import struct
import subprocess
import zlib
from pathlib import Path

import pytest
from rich.console import Console

from appl import gen, ppl
from appl.testing import Rule
from appl.trace import read_trace, recording
from appl.trace._html import render_html
from appl.trace._text import diff_traces, show
from appl.trace.cli import main as trace_cli

CHROMIUM = "/usr/bin/chromium"


def shout(text: str) -> str:
    """Shout the text."""
    return text.upper()


@ppl
async def worker(item: str) -> str:
    """Doc."""
    f"Work on {item}"
    return await gen()


@ppl
async def fanout(n: int, tag: str = "") -> list[str]:
    """Doc."""
    results = list(await asyncio.gather(*(worker(f"w{i}{tag}") for i in range(n))))
    "Now shout via the tool, please"
    results.append(await gen(tools=[shout], run_tools=True))
    return results


def rules(reply: str = "done") -> list[Rule]:
    return [
        Rule(match=lambda b: b["messages"][-1]["role"] == "tool", reply="shouted"),
        Rule(match="shout", tool_calls=[{"name": "shout", "arguments": {"text": "hi"}}]),
        Rule(match="Work on", reply=reply, latency=0.15),
    ]


@pytest.fixture
async def trace_file(scripted, tmp_path: Path) -> Path:
    scripted(rules(), model={"price_input_per_mtok": 2.0, "price_output_per_mtok": 4.0})
    path = tmp_path / "fanout.jsonl"
    with recording(path, program="fanout demo"):
        assert await fanout(4) == ["done"] * 4 + ["shouted"]
    return path


def test_show_prints_the_tree_with_timings_tokens_and_cost(trace_file: Path) -> None:
    console = Console(record=True, width=200)
    show(read_trace(trace_file), console)
    text = console.export_text()
    assert "run fanout" in text and "5 model calls" not in text  # 4 workers + 2 tool rounds
    assert "6 model calls" in text
    for i in range(4):
        assert f"worker[{i}]" in text
    assert "tool shout" in text and "'done'" in text and "→ shout" in text
    assert "tok" in text and "$0.000" in text


def test_cli_show_and_bad_file_exit_codes(trace_file: Path, tmp_path: Path, capsys) -> None:
    assert trace_cli(["show", str(trace_file)]) == 0
    bogus = tmp_path / "bogus.jsonl"
    bogus.write_text('{"not": "a trace"}\n')
    assert trace_cli(["show", str(bogus)]) == 2
    assert "not an appl trace" in capsys.readouterr().err


def test_chrome_export_is_valid_trace_event_json_with_overlapping_calls(
    trace_file: Path, tmp_path: Path
) -> None:
    out = tmp_path / "chrome.json"
    assert trace_cli(["export", str(trace_file), "--chrome", str(out)]) == 0
    doc = json.loads(out.read_text())
    assert isinstance(doc["traceEvents"], list) and doc["displayTimeUnit"] == "ms"
    for event in doc["traceEvents"]:
        assert event["ph"] in {"X", "M", "i"}
        assert isinstance(event["pid"], int) and isinstance(event["tid"], int)
        assert isinstance(event["name"], str)
        if event["ph"] == "X":
            assert isinstance(event["ts"], int | float) and event["ts"] >= 0
            assert isinstance(event["dur"], int | float) and event["dur"] > 0
    names = {e["args"]["name"] for e in doc["traceEvents"] if e["name"] == "thread_name"}
    assert {"model calls #0", "model calls #1", "@ppl calls #0", "tools #0"} <= names
    gens = [e for e in doc["traceEvents"] if e["ph"] == "X" and e["cat"] == "model"]
    assert len(gens) == 6
    workers = [e for e in gens if "worker" in e["name"]]
    overlapping = [
        (a, b)
        for a in workers
        for b in workers
        if a is not b and a["ts"] < b["ts"] + b["dur"] and b["ts"] < a["ts"] + a["dur"]
    ]
    assert overlapping  # the four workers ran at the same time ...
    assert all(a["tid"] != b["tid"] for a, b in overlapping)  # ... on separate lanes
    assert len({e["tid"] for e in workers}) == 4
    assert all(e["args"]["completion_tokens"] > 0 for e in gens)


async def test_diff_reports_changed_prompts_replies_and_added_calls(
    scripted, trace_file: Path, tmp_path: Path, capsys
) -> None:
    scripted(rules(reply="different"))
    other = tmp_path / "other.jsonl"
    with recording(other):
        await fanout(5, tag="x")
    result = diff_traces(read_trace(trace_file), read_trace(other))
    assert result.changed
    worker0 = next(k for k in result.prompt_changed if "worker[0]" in k)
    assert "-Work on w0" in result.prompt_changed[worker0]
    assert "+Work on w0x" in result.prompt_changed[worker0]
    assert "+different" in result.reply_changed[worker0]
    assert [k for k in result.added if "worker[4]" in k]
    assert not result.removed
    assert trace_cli(["diff", str(trace_file), str(other)]) == 1
    assert "calls added" in capsys.readouterr().out
    assert trace_cli(["diff", str(trace_file), str(trace_file)]) == 0


def _chromium(args: list[str], profile: Path) -> subprocess.CompletedProcess[str]:
    base = [
        CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu",
        "--disable-background-networking", "--disable-component-update", "--disable-sync",
        "--no-first-run", f"--user-data-dir={profile}",
    ]  # fmt: skip
    return subprocess.run(base + args, capture_output=True, text=True, timeout=90)


def _png_pixels(path: Path) -> tuple[int, int, bytes]:
    """Width, height and the inflated (filtered) pixel rows of a PNG."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, width, height = 8, b"", 0, 0
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind, body = data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + length]
        if kind == b"IHDR":
            width, height = struct.unpack(">II", body[:8])
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    return width, height, zlib.decompress(idat)


def test_html_page_renders_in_headless_chromium(trace_file: Path, tmp_path: Path) -> None:
    page = tmp_path / "trace.html"
    assert trace_cli(["html", str(trace_file), "-o", str(page)]) == 0
    html = page.read_text()
    # self-contained: no external script, stylesheet, image or font
    for needle in ("<link", "src=", "url(", "@import"):
        assert needle not in html
    dom = _chromium(["--dump-dom", page.as_uri()], tmp_path / "profile1")
    assert dom.returncode == 0, dom.stderr[-2000:]
    rendered = dom.stdout
    for i in range(4):
        assert f'data-key="fanout/worker[{i}]/gen@L' in rendered
    assert "Work on w3" in rendered and "shouted" in rendered
    assert 'class="tick"' in rendered  # the inline script ran and drew the time axis
    assert 'data-rendered="' in rendered and 'data-rendered="0"' not in rendered
    shot = tmp_path / "shot.png"
    done = _chromium(
        [f"--screenshot={shot}", "--window-size=1200,900", page.as_uri()], tmp_path / "profile2"
    )
    assert done.returncode == 0 and shot.exists(), done.stderr[-2000:]
    width, height, pixels = _png_pixels(shot)
    assert (width, height) == (1200, 900)
    assert len(set(pixels)) > 50  # not a blank page: header, bars and text in many colours


def test_the_appl_console_script_has_the_trace_commands(trace_file: Path, tmp_path: Path) -> None:
    out = tmp_path / "c.json"
    from appl.cli import main as appl_main

    assert appl_main(["trace", "export", str(trace_file), "--chrome", str(out)]) == 0
    assert json.loads(out.read_text())["traceEvents"]


async def test_a_model_with_no_price_shows_no_price_not_a_zero(scripted, tmp_path: Path) -> None:
    scripted([Rule(reply="free")])  # no price configured
    path = tmp_path / "free.jsonl"

    @ppl
    async def ask() -> str:
        """Doc."""
        "hello"
        return await gen()

    with recording(path):
        assert await ask() == "free"
    console = Console(record=True, width=200)
    show(read_trace(path), console)
    text = console.export_text()
    assert "no price" in text and "$0.00000" not in text
    page = render_html(read_trace(path))
    assert "no price" in page and "$0.00000" not in page
