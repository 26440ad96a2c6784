"""Choosing the function a crash title names: which frames to skip, how to walk a report.

A report names "where" a bug is by one function. The top frames of a trace are usually the
machinery that noticed or printed the problem (sanitizers, WARN/BUG plumbing, printk), generic
helpers every subsystem calls (allocators, string and list helpers, locking primitives) or
entry code; the title takes the first frame that is none of these. Every pattern below is
searched for anywhere in a function name (so `kasan` also skips `__kasan_check_read`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from codegen_eval.kernelgym.crash.demangle import demangle
from codegen_eval.kernelgym.crash.patterns import (
    FAULT_INJECTION_FRAME,
    FRAME_LINES,
    is_trace_start,
)

# Grouped by why the frames say nothing about the bug.
_SKIP_GROUPS: dict[str, tuple[str, ...]] = {
    "sanitizers and their checks": (
        r"__(?:sanitizer|asan|msan)|k[am]san|hwasan|kcsan_setup_watchpoint",
        r"check_(?:memory_region|heap_object|object)|read_word_at_a_time",
        r"(?:read|write)_once_.*nocheck|__phys_addr|__fortify_report",
    ),
    "reporting: traps, BUG/WARN, stack dumps, printing": (
        r"panic|invalid_op|(?:report|fixup)_bug|do_error|_trap$|do_trap|assertfail",
        r"print_(?:address_description|report|usage_bug|tainted|unlock|hex_dump)",
        r"(?:show|walk)_stack|dump_(?:stack|backtrace)|warn_(?:slowpath|alloc|bogus)|__warn",
        r"^get_taint$|stack_trace_(?:consume_entry|save)|arch_stack_walk|hex_dump_to_buffer",
        r"program_check_(?:exception|common)",
        r"string|pointer|s(?:c?n)printf|kv?asprintf|printk|va_format",
        r"dev_(?:info|notice|warn|err|alert|crit|emerg)",
    ),
    "memory and page-cache allocation": (
        r"alloc_page|k?v?[mzc]alloc|krealloc|kmem_cache|allocate_slab|slab_",
        r"__alloc_frozen_pages_noprof|folio_(?:alloc|unlock)|filemap_alloc_folio",
        r"__filemap_get_folio|find_or_create_page|do_read_cache_folio|read_cache_page",
        r"pagecache_get_page|grab_cache_page_write_begin|find_lock_entries",
        r"^kv?free$|kfree_skb|xas_(?:start|load|find)|truncate_inode_pages_range",
        r"^(?:un)?lock_page|mark_buffer_dirty",
    ),
    "debug objects, lockdep and locking primitives": (
        r"debug_object|(?:timer|work)_is_static_object|imbalance_bug|lockdep|perf_trace",
        r"bh_(?:en|dis)able|lock_(?:acquire|release|class|timer_base)|mark_lock",
        r"(?:reacquire|mark)_held_locks|raw_spin_rq|spin_(?:try|un)?lock",
        r"(?:read|write)_(?:try|un)?lock|^down$|down_(?:read|write|trylock)|up_(?:read|write)",
        r"^(?:__|rt_)?mutex_|owner_on_cpu|osq_(?:un)?lock|(?:trace|lockdep)_(?:hard|soft)irq",
        r"seqprop_assert",
    ),
    "atomics, bit operations, reference counts": (
        r"atomic(?:64)?_(?:dec|inc|read|set|or|xor|and|add|sub|fetch|xchg|cmpxchg|try)",
        r"(?:set|clear|change|test)_bit|^(?:refcount|kref)_|ref_tracker",
        r"^iput(?:_final)?$|^ihold$|^put_device$|dput|drop_nlink|ida_free",
    ),
    "string, memory and user-copy helpers": (
        r"mem(?:cpy|cmp|set|chr|move|dup)|str(?:n?cmp|[lns]?cpy|n?len|n?str|chr|n?dup)",
        r"copy_(?:to|from)_(?:user|iter)|copy_(?:page|folio)_to_iter|copy_page_from_iter",
        r"^copy(?:in|out)$|(?:put|get)_user|might_(?:fault|sleep)|__might_resched",
        r"extract_(?:user|iter)_to_sg|^crc\d+|crc_itu_t|_indirect_thunk_",
    ),
    "lists and trees": (
        r"list_(?:add|del|replace|move|splice)|^(?:__)?rb_|^klist_|rhashtable_lookup",
    ),
    "work, timers, waiting": (
        r"__wake_up|del_timer|flush_work|__cancel_work_timer|cancel_work_sync",
        r"try_to_grab_pending|(?:drain|destroy)_workqueue|queue_work|insert_work",
        r"__queue_delayed_work|queue_delayed_work_on|finish_wait|kthread_stop|^complete$",
        r"wait_for_completion|cleanup_srcu_struct|__timer_delete_sync|sk_stop_timer_sync",
        r"__mod_timer",
    ),
    "device model and driver core teardown": (
        r"kobject_|add_uevent_var|get_device_parent|devres_release_all",
        r"device_(?:add|del|unregister|destroy|release|for_each_child|remove_file)",
        r"hwrng_unregister|i2c_del_adapter|__unregister_client|rollback_registered",
        r"unregister_netdev|sysfs_remove|tty_unregister_device|dummy_urb_enqueue",
        r"usb_kill_(?:urb|anchored_urbs)|usb_control_msg|usb_(?:hcd_)?submit_urb",
    ),
    "port I/O accessors": (r"(?:read|write)[bwlq]$|logic_(?:in|out)",),
    "arm64 fault entry": (
        r"do_(?:kernel|translation)_fault|do_mem_abort|el1_abort|el1h_64_sync(?:_handler)?",
    ),
}
SKIP_ALWAYS: tuple[str, ...] = tuple(p for group in _SKIP_GROUPS.values() for p in group)

# Syscall entry points are spelled per architecture and kernel version (__x64_sys_read,
# __se_sys_read, SyS_read, ksys_read): the title uses the shortest spelling left after
# removing one of these.
SYSCALL_PREFIXES: tuple[str, ...] = (
    "SYSC_", "SyS_", "sys_", "__x64_", "__ia32_", "__arm64_", "____sys_", "___sys_", "__sys_",
    "__se_", "__se_sys_", "__do_sys_", "compat_SYSC_", "compat_SyS_", "ksys_",
)  # fmt: skip


_HAS_SYSCALL_PREFIX = re.compile("|".join(SYSCALL_PREFIXES))


def strip_syscall_prefix(func: str) -> str:
    if not _HAS_SYSCALL_PREFIX.match(func):
        return func
    return min((func.removeprefix(p) for p in SYSCALL_PREFIXES), key=len)


_skip_cache: dict[tuple[str, ...], re.Pattern[str]] = {}


def skip_regex(extra: tuple[str, ...]) -> re.Pattern[str]:
    """One regex for the frames to skip: the common list plus a kind's own."""
    found = _skip_cache.get(extra)
    if found is None:
        found = _skip_cache[extra] = re.compile("|".join(SKIP_ALWAYS + extra))
    return found


# Stalls and lockups loop somewhere below a dispatcher; the frame just above the first of
# these dispatchers (a syscall, a work item, a timer, a file or socket operation, ...) names
# the looping code better than the random top frame the watchdog interrupted.
_STALL_DISPATCHERS = re.compile(
    "|".join(
        (
            # work items, syscall entry (per architecture), softirqs, timers, kthreads, boot
            r"process_one_work|do_(?:fast_)?syscall_|sysenter_dispatch|tracesys_phase2",
            r"el0_svc_handler|invoke_syscall|ret_fast_syscall|netif_receive_skb|do_softirq",
            r"call_timer_fn|_run_timers|run_timer_softirq|hrtimer_run|run_ksoftirqd",
            r"smpboot_thread_fn|^kthread$|start_secondary|cpu_startup_entry|ret_from_fork",
            # file operations: read/write/ioctl/mmap/open are too generic, their callee is not
            r"vfs_(?:write|read|iter_read|iter_write|ioctl|open)|do_iter_(?:read|write)",
            r"call_(?:read|write)_iter|new_sync_(?:read|write)|ksys_ioctl|compat_ioctl",
            r"compat_sys_ioctl|blkdev_(?:driver_)?ioctl|do_iter_readv_writev|^call_mmap",
            r"mmap_region|do_mmap|do_dentry_open",
            # socket operations
            r"^sock_(?:sendmsg|recvmsg|release|mmap|do_ioctl|ioctl)|^__sock_release",
            r"^setsockopt$|kernel_setsockopt|sock_common_setsockopt|^listen$|kernel_listen",
            r"sk_common_release|^accept$|kernel_accept|^compat_sock_ioctl",
            r"^(?:nfnetlink|rtnetlink)_rcv_msg|^netlink_dump|^(?:sys_)?(?:socketpair|connect|ioctl)",
            # page faults, return to user space, cross-CPU calls, tasklets
            r"__do_fault|do_page_fault|^page_fault$|__fput|task_work_run|exit_to_usermode",
            r"smp_call_function|tasklet_(?:hi_)?action",
        )
    )
)


def stall_frame(frames: Sequence[str]) -> int | None:
    """Index of the frame that names a stall, or None when no dispatcher is in the stack.
    Cross-CPU calls all land in one bucket (the caller is named `smp_call_function`)."""
    for i, frame in enumerate(frames):
        if _STALL_DISPATCHERS.search(frame):
            return i if "smp_call_function" in frame else max(i - 1, 0)
    return None


# Hung tasks block at a victim's wait, not at the culprit: waits on RCU grace periods and on
# rtnl_lock are each one bucket, whatever called them.
_HANG_BUCKETS = (
    ("rtnl_lock", None),
    ("synchronize_rcu", "synchronize_rcu"),
    ("synchronize_srcu", "synchronize_rcu"),
    ("synchronize_net", "synchronize_rcu"),
    ("synchronize_sched", "synchronize_rcu"),
)
_HANG_WAITS = (
    "sched", "_lock", "_slowlock", "down", "rwsem", "completion", "kthread", "wait",
    "synchronize", "context_switch", "__switch_to", "cancel_delayed_work", "rcu_barrier",
)  # fmt: skip


def hang_frame(frames: Sequence[str]) -> tuple[int, str] | None:
    for i, frame in enumerate(frames):
        for needle, bucket in _HANG_BUCKETS:
            if needle in frame:
                return i, bucket or frame
    for i, frame in enumerate(frames):
        if not any(w in frame for w in _HANG_WAITS):
            return i, frame
    return None


def _choose_stall(frames: Sequence[str]) -> tuple[int, str] | None:
    i = stall_frame(frames)
    if i is None:
        return None
    return i, "smp_call_function" if "smp_call_function" in frames[i] else frames[i]


# A chooser gets the candidate frames (syscall prefixes removed) and returns the index and name
# of the one to use, or None; without a chooser the first candidate is used.
Chooser = Callable[[Sequence[str]], "tuple[int, str] | None"]
CHOOSERS: dict[str, Chooser] = {"stall": _choose_stall, "hang": hang_frame}


TRACE = None  # a walk step meaning "read a stack trace from here"


@dataclass(frozen=True, slots=True)
class Walk:
    """How a kind finds its frame(s): `steps` are matched in order against the report's lines;
    a regex step consumes lines up to the first match (its groups are frames), a TRACE step
    reads frame lines up to the next trace heading. Each TRACE after the first closes a group
    of frames: one chosen frame per group goes into the title. `fallback` is tried when the
    steps find nothing."""

    steps: tuple[re.Pattern[str] | None, ...]
    skip: tuple[str, ...] = ()
    chooser: str | None = None
    fallback: tuple[re.Pattern[str] | None, ...] = ()


@dataclass(frozen=True, slots=True)
class Chosen:
    name: str  # syscall prefixes removed; "corrupted" when nothing fit
    raw: str  # as printed


_skipped_memo: dict[tuple[re.Pattern[str], str], bool] = {}


def _skipped(skip: re.Pattern[str], name: str) -> bool:
    # The skip regex is a long alternation tried at every position of the name; function
    # names recur across reports, so the answers are kept (bounded).
    key = (skip, name)
    found = _skipped_memo.get(key)
    if found is None:
        if len(_skipped_memo) > 50_000:
            _skipped_memo.clear()
        found = _skipped_memo[key] = skip.search(name) is not None
    return found


def _frames_of(
    match: re.Match[str], skip: re.Pattern[str], into: list[str], first_only: bool
) -> None:
    for name in match.groups():
        if name is None:
            continue
        if first_only and into:
            return  # only the first candidate will be used: the rest need no skip check
        name = demangle(name)
        if not _skipped(skip, name):
            into.append(name)


def _choose(candidates: list[str], chooser: Chooser | None) -> Chosen | None:
    if not candidates:
        return None
    if chooser is None:
        return Chosen(strip_syscall_prefix(candidates[0]), candidates[0])
    picked = chooser([strip_syscall_prefix(c) for c in candidates])
    return Chosen(picked[1], candidates[picked[0]]) if picked and picked[1] else None


def _fault_injected(line: str) -> bool:
    """A fault-injection frame (should_fail): the crash was injected, the stack is not the
    bug's own, so the walk stops and the report is not trusted."""
    return "should_fail" in line and FAULT_INJECTION_FRAME.search(line) is not None


def _walk_once(
    lines: list[str], steps: tuple[re.Pattern[str] | None, ...], skip: re.Pattern[str],
    chooser: Chooser | None,
) -> tuple[list[Chosen], bool]:  # fmt: skip
    chosen: list[Chosen] = []
    ok = True
    candidates: list[str] = []
    traces = 0
    pos = 0
    step = 0

    def close_group() -> None:
        nonlocal ok, candidates
        pick = _choose(candidates, chooser)
        if pick is None:
            pick, ok = Chosen("corrupted", "corrupted"), False
        chosen.append(pick)
        candidates = []

    while True:
        if step == len(steps) or (steps[step] is TRACE and traces > 0):
            close_group()
        if step == len(steps):
            return chosen, ok
        pattern = steps[step]
        if pattern is TRACE:
            traces += 1
            nxt = steps[step + 1] if step + 1 < len(steps) else None
            while pos < len(lines):
                line = lines[pos]
                pos += 1
                if _fault_injected(line):
                    ok = False
                    break
                if is_trace_start(line):
                    break
                if nxt is not None and (m := nxt.search(line)):
                    _frames_of(m, skip, candidates, chooser is None)
                    step += 1  # the next step matched on this very line
                    break
                for frame_re in FRAME_LINES:  # anchored at the line start
                    if m := frame_re.match(line):
                        _frames_of(m, skip, candidates, chooser is None)
                        break
        else:
            while pos < len(lines):
                line = lines[pos]
                pos += 1
                if _fault_injected(line):
                    ok = False
                    break
                if m := pattern.search(line):
                    _frames_of(m, skip, candidates, chooser is None)
                    break
        step += 1


def walk(walker: Walk, text: str) -> tuple[list[Chosen], bool]:
    """The chosen frame of each group, and False when a group had none (corrupted report)."""
    lines = text.split("\n")
    skip = skip_regex(walker.skip)
    chooser = CHOOSERS[walker.chooser] if walker.chooser else None
    chosen, ok = _walk_once(lines, walker.steps, skip, chooser)
    if ok or not walker.fallback:
        return chosen, ok
    return _walk_once(lines, walker.fallback, skip, chooser)
