"""Compiler output is the candidate's to shape (`#error` echoes any line), and the harness
parses it. Issue: the gcc pattern backtracked on one long `#error [-W [-W ...` line, on the
harness's event loop: a 120 KB source compiled in 0.06 s stalled the harness 24-32 s (240 KB:
76 s) and an honest candidate running beside it came back `wall_timeout` with `OK 42`."""

from __future__ import annotations

import asyncio
import time

import pytest

from sandboxes import Limits, open_sandbox, toolchains
from sandboxes.toolchains.diagnostics import MAX_LINE, PARSERS, parse_gcc


def _hostile(size: int) -> str:
    return "#error " + "[-W " * (size // 4)


@pytest.mark.parametrize("size", [120_000, 240_000])
@pytest.mark.parametrize("name", sorted(PARSERS))
def test_every_parser_is_fast_on_a_hostile_line(name: str, size: int) -> None:
    lines = {
        "gcc-shaped": f"a.c:1:2: error: {_hostile(size)}",
        "file-shaped": "a.c:" * (size // 4),
        "nvcc-shaped": "k.cu(" * (size // 5) + "1): error #",
        "no-colon": "x" * size,
    }
    parse = PARSERS[name]
    for shape, line in lines.items():
        t0 = time.process_time()
        parse(line + "\n" + line)
        assert time.process_time() - t0 < 1.0, (name, shape)


def test_the_input_is_bounded() -> None:
    one = "a.c:1:2: warning: unused [-Wunused]\n"
    many = parse_gcc(one * 100_000)
    assert 0 < len(many) <= 2000
    long = parse_gcc(f"a.c:3:1: error: {'x' * 100_000} [-Wfoo]\n")
    assert len(long) == 1 and len(long[0].message) < MAX_LINE
    assert long[0].code is None  # the tail, option name included, was cut


def test_the_option_name_still_splits_off() -> None:
    (d,) = parse_gcc("a.c:1:21: warning: x [y] makes integer [-Wint-conversion]\n")
    assert (d.message, d.code) == ("x [y] makes integer", "-Wint-conversion")
    (d,) = parse_gcc("a.c:1:2: error: #error [-W [-W\n")
    assert (d.message, d.code) == ("#error [-W [-W", None)


async def test_an_honest_candidate_beside_a_hostile_compile_gets_its_own_verdict() -> None:
    """The hostile compile's log (gcc echoes the 120 KB line) is parsed while an honest
    candidate compiles and runs under a 5 s wall limit: the honest one prints OK 42 and
    exits ok, and the event loop never stops for long (it ticks every 50 ms)."""
    c = toolchains.get("c")
    loop = asyncio.get_running_loop()
    worst_lag = 0.0
    done = asyncio.Event()

    async def heartbeat() -> None:
        nonlocal worst_lag
        last = loop.time()
        while not done.is_set():
            await asyncio.sleep(0.05)
            now = loop.time()
            worst_lag = max(worst_lag, now - last - 0.05)
            last = now

    async def hostile() -> int:
        async with open_sandbox() as sb:
            r = await c.compile(sb, {"h.c": _hostile(120_000) + "\nint main(void) { return 0; }\n"})
            assert not r.ok
            return len(r.exec_result.stderr)

    async def honest() -> tuple[bool, str]:
        async with open_sandbox() as sb:
            src = '#include <stdio.h>\nint main(void) { puts("OK 42"); return 0; }\n'
            outs = []
            for _ in range(3):  # keep running while the hostile log is parsed
                b = await c.compile(sb, {"m.c": src})
                assert b.ok and b.artifact is not None
                r = await c.run(sb, b.artifact, limits=Limits(wall_s=5, memory_mb=256, pids=16))
                outs.append((r.ok, r.stdout.strip()))
            return all(ok for ok, _ in outs), outs[-1][1]

    beat = asyncio.ensure_future(heartbeat())
    try:
        echoed, (ok, out) = await asyncio.gather(hostile(), honest())
    finally:
        done.set()
        await beat
    assert echoed > 100_000  # gcc did echo the line: the parser saw it
    assert ok and out == "OK 42"
    assert worst_lag < 1.0, f"the event loop stalled {worst_lag:.1f} s"
