"""The console comes from a guest running model-written code: a console made to hurt the
reader (look-alike headers by the thousand, a line of megabytes, a mangled name that refers
to itself) must be read in bounded time and never raise."""

from __future__ import annotations

import time

import pytest

from codegen_eval.kernelgym.crash import MAX_REPORTS, parse_console

FLOODS = {
    # every line a KASAN headline of one task: detail searches retried at each of them
    "tagged-headers": "".join(
        f"[  1.{i:06d}][  T1] BUG: KASAN: use-after-free in fn_x+0x1/0x2\n" for i in range(5000)
    ),
    "untagged-warnings": "WARNING: CPU: 0 PID: 1 at lib/debugobjects.c:1 fn_x+0x1/0x2\n" * 5000,
    "one-line": "WARNING: lib/debugobjects.c " * 40000,
    "stall-without-dispatcher": "[  1.0][  T1] INFO: rcu_sched self-detected stall on CPU\n"
    + "".join(f"[  1.{i:06d}][  T1]  apic_timer_interrupt+0x1/0x2\n" for i in range(5000)),
}


@pytest.mark.parametrize("name", sorted(FLOODS))
def test_floods_are_read_in_bounded_time(name: str) -> None:
    start = time.process_time()
    reports = parse_console(FLOODS[name])
    assert time.process_time() - start < 10  # well under 1 s CPU here
    assert 1 <= len(reports) <= MAX_REPORTS
    assert all(len(r.title) <= 120 for r in reports)


def test_self_referring_mangled_name_is_kept_raw() -> None:
    console = (
        "BUG: unable to handle page fault for address: 0000000000000000\n"
        "RIP: 0010:_RNvB0_3abc+0x1/0x2\nCall Trace:\n _RNvB0_3abc+0x1/0x2\n"
    )
    (rep,) = parse_console(console)
    assert rep.title == "BUG: unable to handle kernel paging request in _RNvB0_3abc"
