"""The crash reader on small consoles of our own, one per class of syzkaller behaviour that the
gym depends on (issue 14): the panic_on_warn cut, frames to skip, per-kind frame choice,
markers, title wording, arm traces, corrupted reports, and same-bug matching."""

from __future__ import annotations

from codegen_eval.kernelgym.crash import CrashReport, first_crash, parse_console, same_bug


def console(*lines: str, task: str | None = None) -> str:
    """Timestamped console lines; `task` adds a CONFIG_PRINTK_CALLER tag ("T123")."""
    tag = f"[{task:>6}]" if task else ""
    return "".join(f"[  {100 + i / 1000:.6f}]{tag} {line}\n" for i, line in enumerate(lines))


def crash(text: str) -> CrashReport:
    rep = first_crash(text)
    assert rep is not None, text
    return rep


WARN_HEAD = (
    "------------[ cut here ]------------",
    "WARNING: CPU: 0 PID: 4242 at net/core/widget.c:120 widget_check+0x1c/0x40",
    "Modules linked in:",
    "CPU: 0 PID: 4242 Comm: repro Not tainted 6.1.0 #1",
    "RIP: 0010:widget_check+0x1c/0x40",
)
TRACE_TAIL = (
    "Call Trace:",
    " <TASK>",
    " widget_ioctl+0x2a/0x60",
    " __x64_sys_ioctl+0x8b/0xc0",
    " do_syscall_64+0x3b/0x90",
    " entry_SYSCALL_64_after_hwframe+0x63/0xcd",
    " </TASK>",
)


# 1. panic_on_warn: the panic may come before the trace --------------------------------------


def test_short_warning_keeps_the_stack_printed_after_its_panic() -> None:
    # A WARN whose own stack is not printed before panic_on_warn fires: the panic's stack is
    # the only one, and the report must not be cut at the panic line.
    text = console(
        "WARNING: CPU: 1 PID: 77 at fs/gizmo.c:88 gizmo_flush+0x10/0x20",
        "Kernel panic - not syncing: panic_on_warn set ...",
        "CPU: 1 PID: 77 Comm: repro Not tainted 6.1.0 #1",
        "Call Trace:",
        " dump_stack_lvl+0x44/0x5c",
        " panic+0x118/0x2f4",
        " __warn.cold+0x1c/0x60",
        " report_bug+0x9e/0xc0",
        " gizmo_flush+0x10/0x20",
        " gizmo_release+0x22/0x40",
        "Kernel Offset: disabled",
    )
    rep = crash(text)
    assert rep.title == "WARNING in gizmo_flush"
    assert not rep.corrupted


def test_long_report_drops_the_panic_and_what_follows() -> None:
    body = [*WARN_HEAD, *(f"R{n:02}: 0000000000000000" for n in range(16)), *TRACE_TAIL]
    tail = ["Kernel panic - not syncing: panic_on_warn set ...", "Call Trace:", " other_fn+0x1/0x2"]
    rep = crash(console(*body, *tail))
    assert rep.title == "WARNING in widget_check"
    assert "other_fn" not in rep.report and "Kernel panic" not in rep.report
    # One crash, not two: the panic is the report's consequence.
    assert len(parse_console(console(*body, *tail))) == 1


def test_panic_on_warn_alone_is_a_corrupted_report() -> None:
    rep = crash(console("Kernel panic - not syncing: panic_on_warn set ...", "Kernel Offset: x"))
    assert rep.title == "kernel panic: panic_on_warn set"
    assert rep.corrupted and not rep.same_bug("kernel panic: panic_on_warn set")


# 2. frames that are never the bug -----------------------------------------------------------


def test_helpers_thunks_coverage_and_fortify_frames_are_skipped() -> None:
    text = console(
        "BUG: KASAN: slab-out-of-bounds in memcpy+0x20/0x60",
        "Write of size 8 at addr ffff888012345678 by task repro/99",
        "Call Trace:",
        " <TASK>",
        " dump_stack_lvl+0x44/0x5c",
        " kasan_report+0xbf/0x1f0",
        " memcpy+0x20/0x60",
        " __x86_indirect_thunk_rax+0x10/0x20",
        " __sanitizer_cov_trace_pc+0x5/0x60",
        " fortify_panic+0x10/0x20",
        " strscpy+0x10/0x40",
        " sprocket_copy+0x55/0x90",
        " sprocket_write+0x12/0x40",
        " </TASK>",
    )
    rep = crash(text)
    assert rep.title == "KASAN: slab-out-of-bounds Write in sprocket_copy"
    assert "bad-access in sprocket_copy" in rep.alt_titles
    assert rep.guilty == "sprocket_copy"


def test_unreliable_frames_are_never_chosen() -> None:
    text = console(
        "BUG: kernel NULL pointer dereference, address: 0000000000000008",
        "RIP: 0010:0x0",
        "Call Trace:",
        " ? decoy_fn+0x1/0x2",
        " lever_pull+0x3/0x10",
    )
    assert (
        crash(text).title == "BUG: unable to handle kernel NULL pointer dereference in lever_pull"
    )


# 3. per-kind frame choice: stalls, hangs, syscall prefixes -----------------------------------


def test_rcu_stall_names_the_code_below_the_timer_interrupt() -> None:
    text = console(
        "rcu: INFO: rcu_preempt self-detected stall on CPU",
        "rcu: \t0-....: (10500 ticks this GP)",
        "Call Trace:",
        " <IRQ>",
        " rcu_sched_clock_irq+0x5c4/0x1c10",
        " update_process_times+0x12b/0x1a0",
        " tick_sched_timer+0x8a/0x100",
        " sysvec_apic_timer_interrupt+0x8e/0xc0",
        " </IRQ>",
        " <TASK>",
        " asm_sysvec_apic_timer_interrupt+0x1a/0x20",
        "RIP: 0010:spin_forever+0x2f/0x70",
        " spin_forever+0x2f/0x70",
        " loop_helper+0x10/0x20",
        " loop_ioctl+0x44/0x90",
        " vfs_ioctl+0x4a/0x80",
        " __x64_sys_ioctl+0x8b/0xc0",
        " do_syscall_64+0x3b/0x90",
        " </TASK>",
    )
    rep = crash(text)
    # The interrupt part (rcu_sched_clock_irq, tick_sched_timer) is not the stall; the frame
    # above the first dispatcher (vfs_ioctl) is.
    assert rep.title == "INFO: rcu detected stall in loop_ioctl"
    assert "stall in loop_ioctl" in rep.alt_titles


def test_soft_lockup_in_a_syscall_is_named_after_the_syscall() -> None:
    text = console(
        "watchdog: BUG: soft lockup - CPU#0 stuck for 22s! [repro:84]",
        "RIP: 0010:_raw_spin_lock+0x10/0x30",
        "Call Trace:",
        " <TASK>",
        " _raw_spin_lock+0x10/0x30",
        " __se_sys_frobnicate+0x20/0x40",
        " do_syscall_64+0x3b/0x90",
        " </TASK>",
    )
    rep = crash(text)
    assert rep.title == "BUG: soft lockup in frobnicate"  # prefixes stripped
    assert "BUG: soft lockup in __se_sys_frobnicate" in rep.alt_titles  # as printed
    assert "BUG: soft lockup in sys_frobnicate" in rep.alt_titles


def test_hung_tasks_waiting_for_rcu_are_one_bucket() -> None:
    text = console(
        "INFO: task kworker/0:1:12 blocked for more than 143 seconds.",
        "Call Trace:",
        " <TASK>",
        " __schedule+0x1a/0x50",
        " schedule+0x5d/0xd0",
        " synchronize_rcu_expedited+0x4d0/0x590",
        " gadget_teardown+0x10/0x40",
        " </TASK>",
    )
    rep = crash(text)
    assert rep.title == "INFO: task hung in synchronize_rcu"
    assert "hang in synchronize_rcu" in rep.alt_titles
    assert "INFO: task hung in synchronize_rcu_expedited" in rep.alt_titles  # as printed


def test_cross_cpu_calls_are_one_bucket() -> None:
    text = console(
        "rcu: INFO: rcu_sched detected stalls on CPUs/tasks:",
        "Call Trace:",
        " <IRQ>",
        " apic_timer_interrupt+0x10/0x20",
        " </IRQ>",
        "RIP: 0010:csd_lock_wait+0x10/0x20",
        " csd_lock_wait+0x10/0x20",
        " smp_call_function_many_cond+0x1f0/0x300",
        " on_each_cpu_cond_mask+0x20/0x40",
    )
    assert crash(text).title == "INFO: rcu detected stall in smp_call_function"


# 4. markers the old reader missed -----------------------------------------------------------


def test_kmsan_titles_the_use_and_alt_names_the_origin() -> None:
    text = console(
        "BUG: KMSAN: uninit-value in knob_parse+0x20/0x40",
        " knob_parse+0x20/0x40",
        " knob_write+0x10/0x30",
        "",
        "Uninit was created at:",
        " __kmalloc+0x10/0x20",
        " knob_alloc+0x10/0x30",
    )
    rep = crash(text)
    assert rep.title == "KMSAN: uninit-value in knob_parse"
    assert rep.kind == "KMSAN" and not rep.corrupted


def test_kcsan_data_race_title_is_its_header() -> None:
    text = console(
        "BUG: KCSAN: data-race in dial_read / dial_write",
        "write to 0xffff888012345678 of 4 bytes by task 5 on cpu 1:",
        " dial_write+0x1/0x2",
    )
    rep = crash(text)
    assert rep.title == "KCSAN: data-race in dial_read / dial_write"


def test_smp_processor_id_in_preemptible_code() -> None:
    text = console(
        "BUG: using smp_processor_id() in preemptible [00000000] code: repro/123",
        "caller is cog_turn+0x10/0x20",
        "Call Trace:",
        " dump_stack_lvl+0x44/0x5c",
        " check_preemption_disabled+0xd0/0xe0",
        " debug_smp_processor_id+0x10/0x20",
        " cog_turn+0x10/0x20",
    )
    assert crash(text).title == "BUG: using smp_processor_id() in preemptible code in cog_turn"


def test_spinlock_and_lockdep_reports() -> None:
    spin = console(
        "BUG: spinlock already unlocked on CPU#1, repro/55",
        " lock: latch_lock+0x0/0x20, .magic: dead4ead",
        "Call Trace:",
        " do_raw_spin_unlock+0x10/0x20",
        " _raw_spin_unlock+0x10/0x20",
        " latch_release+0x10/0x20",
    )
    assert crash(spin).title == "BUG: spinlock already unlocked in latch_release"
    inconsistent = console(
        "================================",
        "WARNING: inconsistent lock state",
        "--------------------------------",
        "inconsistent {SOFTIRQ-ON-W} -> {IN-SOFTIRQ-W} usage.",
        "repro/9 [HC0[0]:SC1[1]:HE1:SE0] takes:",
        "ffff888012345678 (&bell->lock){+.?.}-{2:2}, at: bell_ring+0x10/0x20",
        "Call Trace:",
        " bell_ring+0x10/0x20",
    )
    rep = crash(inconsistent)
    assert rep.title == "inconsistent lock state in bell_ring"  # no "WARNING:" prefix
    assert rep.kind == "LOCKDEP"


def test_header_with_a_prefix_and_caller_tags() -> None:
    text = console(
        "syz-executor: BUG: unable to handle page fault for address: ffffc90000000000",
        "RIP: 0010:pane_draw+0x3/0x10",
        "Call Trace:",
        " pane_draw+0x3/0x10",
        task="T4242",
    )
    # Another task's lines in between do not belong to the report.
    other = "[  100.000500][  T777] Call Trace:\n[  100.000600][  T777]  wrong_fn+0x1/0x2\n"
    lines = text.splitlines(keepends=True)
    rep = crash(lines[0] + other + "".join(lines[1:]))
    assert rep.title == "BUG: unable to handle kernel paging request in pane_draw"


# 5. title wording ---------------------------------------------------------------------------


def _warning_at(path: str, func: str) -> str:
    return console(
        f"WARNING: CPU: 0 PID: 1 at {path}:10 {func}+0x1/0x2",
        f"RIP: 0010:{func}+0x1/0x2",
        *TRACE_TAIL,
    )


def test_warning_sub_kinds_keep_their_names() -> None:
    odebug = _warning_at("lib/debugobjects.c", "debug_print_object")
    assert crash(odebug).title == "WARNING: ODEBUG bug in widget_ioctl"
    refcount = _warning_at("lib/refcount.c", "refcount_warn_saturate")
    assert crash(refcount).title == "WARNING: refcount bug in widget_ioctl"
    locking = _warning_at("kernel/locking/lockdep.c", "lock_release")
    assert crash(locking).title == "WARNING: locking bug in widget_ioctl"
    assert crash(console(*WARN_HEAD, *TRACE_TAIL)).title == "WARNING in widget_check"


def test_ubsan_and_panic_wording_and_numbers() -> None:
    ubsan = console(
        "UBSAN: shift-out-of-bounds in fs/gear.c:42:9",
        "shift exponent 77 is too large for 32-bit type 'int'",
        "Call Trace:",
        " dump_stack_lvl+0x44/0x5c",
        " ubsan_epilogue+0x5/0x30",
        " __ubsan_handle_shift_out_of_bounds+0x10/0x20",
        " gear_shift+0x10/0x20",
    )
    assert crash(ubsan).title == "UBSAN: shift-out-of-bounds in gear_shift"
    smashed = console(
        "Kernel panic - not syncing: stack-protector: Kernel stack is corrupted in: valve_open+0x60/0x70"
    )
    assert crash(smashed).title == "kernel panic: stack is corrupted in valve_open"
    oom = console(
        "Kernel panic - not syncing: Out of memory: compulsory panic_on_oom is enabled on 3 nodes"
    )
    assert (
        crash(oom).title
        == "kernel panic: Out of memory: compulsory panic_on_oom is enabled on NUM nodes"
    )


# 6. arm traces ------------------------------------------------------------------------------


def test_arm64_call_trace_and_pc() -> None:
    text = console(
        "Unable to handle kernel NULL pointer dereference at virtual address 0000000000000000",
        "Internal error: Oops: 96000006 [#1] PREEMPT SMP",
        "pc : rotor_spin+0x14/0x40",
        "lr : rotor_ioctl+0x2c/0x60",
        "Call trace:",
        " rotor_spin+0x14/0x40",
        " rotor_ioctl+0x2c/0x60",
        " __arm64_sys_ioctl+0xa8/0xf0",
        " invoke_syscall+0x48/0x114",
    )
    rep = crash(text)
    assert rep.title == "BUG: unable to handle kernel NULL pointer dereference in rotor_spin"
    assert rep.rip == "rotor_spin"


def test_arm32_from_lines_give_both_functions() -> None:
    text = console(
        "Unable to handle kernel paging request at virtual address 00001000",
        "PC is at 0x0",
        "Backtrace:",
        "[<8030a1b4>] (piston_push) from [<8030a2c8>] (piston_write+0x2c/0x40)",
        "[<8030a2c8>] (piston_write) from [<80200f00>] (vfs_write+0xb0/0x2f0)",
    )
    rep = crash(text)
    assert rep.title == "BUG: unable to handle kernel paging request in piston_push"
    assert rep.functions[:2] == ["piston_push", "piston_write"]


# 7. corrupted reports -----------------------------------------------------------------------


def test_question_mark_only_trace_is_corrupted() -> None:
    text = console(
        "general protection fault, probably for non-canonical address 0xdffffc0000000000: 0000",
        "RIP: 0010:0x0",
        "Call Trace:",
        " ? wheel_turn+0x1/0x2",
        " ? axle_spin+0x1/0x2",
        " ",
        "Modules linked in:",
    )
    rep = crash(text)
    assert rep.title == "general protection fault in corrupted"
    assert rep.corrupted


def test_timestamp_inside_the_title_and_fault_injection_frames() -> None:
    merged = console("WARNING: CPU: 0 PID: 1 at [  12.3456] lost.c:1 lost_fn+0x1/0x2", *TRACE_TAIL)
    assert crash(merged).corrupted
    injected = console(
        "BUG: KASAN: use-after-free in cam_turn+0x10/0x20",
        "Read of size 4 at addr ffff888012345678 by task repro/1",
        "Call Trace:",
        " should_fail+0x10/0x20",
        " cam_turn+0x10/0x20",
    )
    rep = crash(injected)
    # The header still names the function, but the trace is mixed with an injected failure's.
    assert rep.corrupted and rep.title == "KASAN: use-after-free Read in cam_turn"
    assert not rep.same_bug("KASAN: use-after-free Read in cam_turn")


def test_lookalikes_are_not_crashes() -> None:
    text = console(
        "WARNING: workqueue cpumask: online intersect > possible intersect",
        "INFO: lockdep is turned off.",
        "ODEBUG: object is on stack, but not annotated",
        "general protection fault ip:7f00 sp:7ffe error:0 in libc.so.6[7f00+1000]",
        "EXT4-fs (loop0): WARNING: mounting unchecked fs",
        "Run /init as init process",
    )
    assert parse_console(text) == []


# same bug -----------------------------------------------------------------------------------


def test_same_bug_uses_alt_titles_and_kind_independent_titles() -> None:
    gpf = ["general protection fault in spindle_get", "bad-access in spindle_get"]
    assert same_bug(gpf, "KASAN: null-ptr-deref Read in spindle_get")
    assert same_bug(["KASAN: use-after-free Read in f (2)"], "KASAN: use-after-free Read in f")
    assert not same_bug(gpf, "general protection fault in spindle_put")
    assert not same_bug(gpf, "general protection fault in spindle_get", corrupted=True)
    # A hang is not a stall, however the function is named.
    assert not same_bug(["INFO: task hung in f", "hang in f"], "INFO: rcu detected stall in f")


# mangled names ------------------------------------------------------------------------------


def test_rust_and_cpp_frames_are_demangled() -> None:
    from codegen_eval.kernelgym.crash.demangle import demangle

    assert demangle("_RNvNtCs123_7mycrate6module8function") == "mycrate::module::function"
    assert demangle("_RNvMNtCs1_5crate3modNtB2_4Type4func") == "<crate::mod::Type>::func"
    assert demangle("_Z6knob_xii") == "knob_x"
    assert demangle("_Rnot_v0") == "_Rnot_v0"  # unreadable: kept
    text = console(
        "rust_kernel: panicked at drivers/gear/lib.rs:10:5:",
        "attempt to add with overflow",
        "------------[ cut here ]------------",
        "kernel BUG at rust/helpers/bug.c:7!",
        "Oops: invalid opcode: 0000 [#1] PREEMPT SMP",
        "RIP: 0010:rust_helper_BUG+0x8/0x10",
        "Call Trace:",
        " <TASK>",
        " _RNvCs1_7___rustc17rust_begin_unwind+0x15b/0x160",
        " _RNvNtCs2_4core9panicking9panic_fmt+0x84/0x90",
        " _RNvMNtCs1_5crate3modNtB2_4Type4func+0x10/0x20",
        " </TASK>",
        task="T298",
    )
    assert crash(text).title == "attempt to add with overflow in <crate::mod::Type>::func"
