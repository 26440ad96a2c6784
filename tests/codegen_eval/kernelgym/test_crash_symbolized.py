"""Crash reports as syzbot publishes them (symbolized: `f+0x1/0x2 file.c:3` frames, inlined
functions as extra `g file.h:4 [inline]` lines, the headline repeated once per inlined
function) are titled as the console the kernel printed. Each fixture in reports/symbolized/
was written for these tests in syzbot's layout, one per crash kind plus the older formats
(4.x KASAN "at addr", WARNING "f+0x..()", "(null)" oopses, "[<addr>]" traces); its `.raw`
twin is the same report with the symbolization stripped (by a one-line perl filter, not by
the code under test)."""

from __future__ import annotations

import time
import tracemalloc
from pathlib import Path

import pytest

from codegen_eval.kernelgym.crash import first_crash, parse_console, title_of_report
from codegen_eval.kernelgym.crash.symbolized import is_symbolized, unsymbolize

HERE = Path(__file__).parent
SYMBOLIZED = HERE / "reports" / "symbolized"

# The title syzbot files each report under (the one its unsymbolized console gets).
TITLES = {
    "kasan": "KASAN: slab-use-after-free Read in gadget_unbind",
    "kmsan": "KMSAN: uninit-value in tinyfs_fill_super",
    "kcsan": "KCSAN: data-race in ring_update / ring_peek",
    "warning": "WARNING in skb_segment",
    "kernel_bug": "kernel BUG in ext4_do_writepages",
    "gpf": "general protection fault in nci_hci_msg_rx",
    "lockdep": "possible deadlock in knob_ioctl",
    "rcu_stall": "INFO: rcu detected stall in knob_ioctl",
    "hung_task": "INFO: task hung in knob_release",
    "memleak": "memory leak in knob_new_ctx",
    "ubsan": "UBSAN: array-index-out-of-bounds in knob_write",
    "kfence": "KFENCE: use-after-free read in knob_get",
    "old_kasan_at_addr": "KASAN: use-after-free Read in knob_match",
    "old_warning_parens": "WARNING in knob_sendmsg",
    "old_null_oops": "BUG: unable to handle kernel NULL pointer dereference in knob_poll",
}


def _read(name: str) -> str:
    return (SYMBOLIZED / f"{name}.txt").read_text()


def test_every_fixture_has_its_twin_and_a_title() -> None:
    names = {p.name.removesuffix(".txt") for p in SYMBOLIZED.glob("*.txt")}
    assert names == set(TITLES) | {f"{n}.raw" for n in TITLES}


@pytest.mark.parametrize("name", sorted(TITLES))
def test_symbolized_report_gets_the_unsymbolized_title(name: str) -> None:
    symbolized, raw = _read(name), _read(f"{name}.raw")
    assert is_symbolized(symbolized) and not is_symbolized(raw)
    for text in (symbolized, raw):
        crash = first_crash(text)
        assert crash is not None
        assert (crash.title, crash.corrupted_reason) == (TITLES[name], "")


@pytest.mark.parametrize("name", ["kasan", "warning", "kfence", "old_kasan_at_addr"])
def test_repeated_headline_is_one_report(name: str) -> None:
    # The copies of a headline (one per inlined function) are not reports of their own.
    assert [r.title for r in parse_console(_read(name))] == [TITLES[name]]


def test_agents_still_read_the_source_positions() -> None:
    crash = first_crash(_read("kasan"))
    assert crash is not None
    assert "include/linux/list.h:148 [inline]" in crash.report  # the inlined frames too
    by_func = {f.func: f for f in crash.frames}
    assert (by_func["gadget_unbind"].file, by_func["gadget_unbind"].line) == (
        "drivers/misc/gadget/core.c",
        412,
    )
    assert by_func["list_del"].inline
    assert crash.guilty == "gadget_unbind"


def test_title_of_report_gives_the_consoles_title() -> None:
    # A record's report (symbolized, as syzbot links it) and the console a run prints (raw)
    # are the same bug by title.
    expected = title_of_report(_read("warning"))
    seen = parse_console(
        "[  10.1][ T10] " + _read("warning.raw").replace("\n", "\n[  10.1][ T10] ")
    )
    assert expected is not None and not expected.corrupted
    assert seen and seen[0].same_bug(expected.title)
    assert title_of_report("[    0.0] Linux version 6.1.0\n") is None


def test_twice_symbolized_report() -> None:
    # syzbot published some reports with each position appended twice.
    text = (
        _read("kasan")
        .replace("list.h:148 [inline]\n", "list.h:148 [inline] drivers/misc/gadget/core.c:412\n")
        .replace("core.c:412\n", "core.c:412 drivers/misc/gadget/core.c:412\n")
    )
    crash = first_crash(text)
    assert crash is not None and crash.title == TITLES["kasan"]


def test_a_lone_inline_line_is_not_dropped() -> None:
    # Only the symbolizer's own layout is undone: an "[inline]" headline not followed by its
    # printed line (same prefix, a frame with an offset) stays, and so the crash is seen.
    console = (
        "BUG: KASAN: use-after-free in knob_get drivers/misc/knob.c:171 [inline]\n"
        "Read of size 8 at addr ffff88823bd1cf80 by task a/1\n"
        "Call Trace:\n knob_get+0x61/0x1a0\n knob_ioctl+0x12c/0x4c0\n"
    )
    assert unsymbolize(console.split("\n"))[0] == console.split("\n")
    (crash,) = parse_console(console)
    assert crash.kind == "KASAN" and crash.corrupted


def test_raw_gym_consoles_are_left_as_they_are() -> None:
    for path in sorted((HERE / "consoles").glob("*.txt")):
        assert not is_symbolized(path.read_text()), path.name


# Consoles of 10 MB made to hurt the reader: each must be read in bounded time and memory
# and whatever it shows must be flagged corrupted (never a clean title, never a hang).
_MB = 10 * 1024 * 1024


def _fill(unit: str) -> str:
    return unit * (_MB // len(unit) + 1)


_KASAN_HEAD = "BUG: KASAN: use-after-free in fn_x+0x1/0x2\nRead of size 1 at addr ffff by task x\n"
HOSTILE = {
    "kasan-headlines": lambda: _fill("BUG: KASAN: use-after-free in fn_x+0x1/0x2\n"),
    "inline-headlines": lambda: _fill("BUG: KASAN: use-after-free in fn_x a/b.c:1 [inline]\n"),
    "symbolized-trace": lambda: _KASAN_HEAD + "Call Trace:\n" + _fill(" fn_y+0x1/0x2 a/b.c:12\n"),
    "endless-trace": lambda: _KASAN_HEAD + "Call Trace:\n" + _fill(" fn_y+0x1/0x2\n"),
    "one-line": lambda: _fill("WARNING: lib/debugobjects.c "),
    "warnings": lambda: _fill("WARNING: CPU: 0 PID: 1 at lib/debugobjects.c:1 fn_x+0x1/0x2\n"),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_ten_megabyte_hostile_console(name: str) -> None:
    console = HOSTILE[name]()
    tracemalloc.start()
    start = time.process_time()
    try:
        reports = parse_console(console)
        cpu = time.process_time() - start
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert cpu < 60  # 1-6 s measured here, on a loaded machine
    assert peak < 12 * len(console)  # 6-10x measured: lines as Python strings
    assert reports and all(r.corrupted for r in reports)


def test_old_kmsan_report_with_a_call_trace_heading() -> None:
    # The out-of-tree KMSAN of 2017-2021 printed CPU lines and "Call Trace:" after its
    # headline; the frames below are the report's own (its origin comes later, as today).
    console = (
        "BUG: KMSAN: uninit-value in knob_parse+0x87f/0x5540 drivers/misc/knob.c:1015\n"
        "CPU: 0 PID: 28621 Comm: syz-executor.1 Not tainted 5.6.0-rc6-syzkaller #0\n"
        "Hardware name: Google Google Compute Engine/Google Compute Engine\n"
        "Call Trace:\n <IRQ>\n __dump_stack lib/dump_stack.c:77 [inline]\n"
        " dump_stack+0x1c9/0x220 lib/dump_stack.c:118\n"
        " kmsan_report+0xf7/0x1e0 mm/kmsan/kmsan_report.c:118\n"
        " __msan_warning+0x58/0xa0 mm/kmsan/kmsan_instr.c:215\n"
        " knob_parse+0x87f/0x5540 drivers/misc/knob.c:1015\n"
        " knob_rx+0x21de/0x5840 drivers/misc/knob.c:1088\n"
        "Uninit was created at:\n kmsan_internal_poison_shadow+0x66/0xd0\n"
        " knob_alloc+0x4a/0x90 drivers/misc/knob.c:50\n"
    )
    for text in (console, "\n".join(unsymbolize(console.split("\n"))[0])):
        crash = first_crash(text)
        assert crash is not None and crash.title == "KMSAN: uninit-value in knob_parse"


def test_syzbot_boot_and_test_error_prefixes_are_not_part_of_the_crash_title() -> None:
    # syzbot titles a crash during boot or its smoke test "<tree> boot error: <title>".
    crash = first_crash(_read("warning"))
    assert crash is not None
    assert crash.same_bug("upstream boot error: WARNING in skb_segment")
    assert crash.same_bug("linux-next test error: WARNING in skb_segment (2)")
    assert not crash.same_bug("upstream build error: WARNING in skb_segment")


def test_report_as_given_leaves_out_unreliable_and_other_tasks_lines() -> None:
    tagged = "".join(f"[  52.1][ T5123] {line}\n" for line in _read("kasan").splitlines())
    tagged = tagged.replace(
        "[  52.1][ T5123]  gadget_release+",
        "[  52.1][ T5123]  ? stale_fn+0x1/0x2 mm/stale.c:3\n"
        "[  52.1][ T7777]  other_task_fn+0x1/0x2 kernel/other.c:9\n"
        "[  52.1][ T5123]  gadget_release+",
    )
    crash = first_crash(tagged)
    assert crash is not None and crash.title == TITLES["kasan"]
    assert "gadget_release" in crash.functions
    assert "stale_fn" not in crash.functions and "other_task_fn" not in crash.report
    assert "include/linux/list.h:148 [inline]" in crash.report


def test_arm32_frames_symbolized_inside_parentheses() -> None:
    given = [
        "[<c0a1b2c4>] (knob_lookup) from [<c0a1b3d0>] (knob_get drivers/misc/knob.c:150 [inline])",
        "[<c0a1b2c4>] (knob_lookup) from [<c0a1b3d0>] (knob_get+0x61/0x1a0 drivers/misc/knob.c:171)",
    ]
    printed, origin = unsymbolize(given)
    assert printed == ["[<c0a1b2c4>] (knob_lookup) from [<c0a1b3d0>] (knob_get+0x61/0x1a0)"]
    assert list(origin) == [1]
