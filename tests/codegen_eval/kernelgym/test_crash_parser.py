"""Crash parser on real consoles of our tier-0 runs and on hand-written syzbot-format reports."""

from __future__ import annotations

from pathlib import Path

import pytest

from codegen_eval.kernelgym.crash import first_crash, normalize_title, parse_console, titles_match

HERE = Path(__file__).parent

# Consoles captured from the bundled tier-0 bugs booting Debian's 6.1 kernel under QEMU.
REAL = {
    "t0-bug-on": "kernel BUG in kgym_bugon_push",
    "t0-divide-error": "divide error in kgym_div_avg",
    "t0-gpf": "general protection fault in kgym_gpf_pop",
    "t0-hung-task": "INFO: task hung in kgym_hung_write",
    "t0-list-corruption": "BUG: corrupted list in kgym_list_register",
    "t0-null-deref": "BUG: unable to handle kernel NULL pointer dereference in kgym_null_write",
    "t0-refcount": "WARNING: refcount bug in kgym_ref_write",
    "t0-soft-lockup": "BUG: soft lockup in proc_reg_write",
    "t0-warn": "WARNING in kgym_warn_start",
    # KASAN reports of the tier-1 kernel (linux-source-6.1, tinyconfig + KASAN)
    "t1-double-free": "KASAN: invalid-free in kgym_df_write",
    "t1-slab-out-of-bounds": "KASAN: slab-out-of-bounds Read in kgym_oob_write",
    "t1-use-after-free": "KASAN: use-after-free Read in kgym_uaf_write",
    "t1-tree-groups-oob": "KASAN: slab-out-of-bounds Write in sys_setgroups",
    "t1-tree-groups-uaf": "KASAN: use-after-free Write in set_groups",
}

SYZBOT = {
    "kasan_uaf": "KASAN: use-after-free Read in sco_chan_del",
    "gpf_kasan_null": "general protection fault in ext4_xattr_set_entry",
    "warning_file": "WARNING in mb_find_extent",
    "hung_task": "INFO: task hung in do_truncate",
    "rcu_stall": "INFO: rcu detected stall in net_tx_action",
    "lockdep": "possible deadlock in ovl_copy_up_one",
    "ubsan": "UBSAN: array-index-out-of-bounds in dbAllocDmapLev",
    "kernel_bug_at": "kernel BUG in clear_inode",
    "stack_protector": "kernel panic: stack is corrupted in nfc_llcp_parse_gb_tlv",
    "memleak": "memory leak in netlink_sendmsg",
}


@pytest.mark.parametrize("name", sorted(REAL))
def test_real_tier0_consoles(name: str) -> None:
    reports = parse_console((HERE / "consoles" / f"{name}.txt").read_text())
    # One crash per console: the panic that follows a report is not a second crash.
    assert [r.title for r in reports] == [REAL[name]]
    crash = reports[0]
    if name.startswith("t1-tree"):
        return  # injected into the kernel's own code: no module involved
    # The faulting code is the buggy module: in RIP, or in a frame tagged [kgym_...].
    in_module = any(f.module and f.module.startswith("kgym_") for f in crash.frames)
    in_title = crash.title.split(" in ")[-1].startswith("kgym_")
    assert in_module or in_title or (crash.rip or "").startswith("kgym_"), crash.report


@pytest.mark.parametrize("name", sorted(SYZBOT))
def test_syzbot_format_reports(name: str) -> None:
    crash = first_crash((HERE / "reports" / f"{name}.txt").read_text())
    assert crash is not None
    assert crash.title == SYZBOT[name]


def test_frames_carry_file_line_and_inline() -> None:
    crash = first_crash((HERE / "reports" / "kasan_uaf.txt").read_text())
    assert crash is not None and crash.kind == "KASAN"
    by_func = {f.func: f for f in crash.frames}
    assert by_func["sco_chan_del"].file == "net/bluetooth/sco.c"
    assert by_func["sco_chan_del"].line == 172
    assert by_func["sco_chan_del"].offset == "0x3b1"
    assert by_func["hci_conn_drop"].inline
    assert "net/bluetooth/sco.c" in crash.files
    # "Allocated by" stacks are not part of the crash stack.
    assert "hci_conn_add" not in crash.functions
    assert "Read of size 4" in crash.report


def test_unreliable_frames_dropped_and_module_kept() -> None:
    crash = first_crash((HERE / "consoles" / "t0-soft-lockup.txt").read_text())
    assert crash is not None
    assert crash.rip == "kgym_lockup_scan"
    assert crash.frames[0].func == "kgym_lockup_write"
    assert crash.frames[0].module == "kgym_lockup"
    assert "exit_to_user_mode_prepare" not in crash.functions  # only '? ' frames had it


def test_clean_console_has_no_crash() -> None:
    console = (
        "[    0.000000] Linux version 6.1.0\n[    1.2] Run /init as init process\nKGYM-DONE x\n"
    )
    assert parse_console(console) == []


def test_panic_without_report_is_its_own_crash() -> None:
    console = (
        "[    3.1] Kernel panic - not syncing: VFS: Unable to mount root fs on unknown-block(0,0)\n"
    )
    (crash,) = parse_console(console)
    assert crash.title == "kernel panic: VFS: Unable to mount root fs on unknown-block(NUM,NUM)"


def test_two_reports_in_one_console() -> None:
    text = (HERE / "reports" / "warning_file.txt").read_text().replace("Kernel panic", "xx")
    text += (HERE / "reports" / "gpf_kasan_null.txt").read_text()
    assert [r.title for r in parse_console(text)] == [
        "WARNING in mb_find_extent",
        "general protection fault in ext4_xattr_set_entry",
    ]


def test_title_normalisation() -> None:
    assert normalize_title("WARNING in mb_find_extent (3)") == "WARNING in mb_find_extent"
    assert titles_match("kernel BUG in f.cold", "kernel BUG in f")
    assert not titles_match("WARNING in f", "WARNING in g")
