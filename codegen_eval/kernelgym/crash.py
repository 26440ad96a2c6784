"""Find kernel crash reports in a console log and give each a normalised title and frames.

Titles follow the conventions syzbot made common ("KASAN: use-after-free Read in f",
"WARNING in f", "INFO: task hung in f", ...), so titles of bundled bugs and of kBench records
compare directly. The function in a title is taken from the report header, else from RIP,
else from the first call-trace frame that is not reporting/scheduling/locking machinery.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import asdict, dataclass, field

_TS = re.compile(r"^\s*\[\s*\d+\.\d+\](?:\[\s*[TC]\d+\])?\s?")
_FRAME = re.compile(
    r"^\s*(?P<unreliable>\?\s+)?(?P<func>[A-Za-z_][\w.$]*)"
    r"(?:\+(?P<off>0x[0-9a-f]+)/0x[0-9a-f]+)?"
    r"(?:\s+\[(?P<module>[\w-]+)\])?"
    r"(?:\s+(?P<file>[\w/.+\-]+\.[chS]):(?P<line>\d+))?"
    r"(?P<inline>\s+\[inline\])?\s*$"
)
_ADDR = re.compile(r"^\s*\[<[0-9a-f]+>\]")  # kmemleak's "[<ffffffff81234567>] f+0x1/0x2"
_RIP = re.compile(r"RIP: [0-9a-f]{4}:(?P<func>[A-Za-z_][\w.$]*)\+0x[0-9a-f]+/0x[0-9a-f]+")
_END = re.compile(
    r"^(---\[ end (trace|Kernel panic)|Kernel Offset:|Rebooting in|Kernel panic - not syncing)"
)

# Frames that describe how a report was produced, not where the bug is.
_SKIP = re.compile(
    r"^(dump_stack\w*|show_stack|__dump_stack|print_\w+|printk\w*|_printk|vprintk\w*|"
    r"panic|__warn\w*|warn_slowpath\w*|report_bug|handle_bug|do_error_trap|do_trap|"
    r"exc_\w+|asm_exc_\w+|asm_sysvec_\w+|sysvec_\w+|__sysvec_\w+|irq_exit\w*|"
    r"kasan_\w+|__kasan_\w+|____kasan_\w+|check_memory_region\w*|__asan_\w+|"
    r"kmem_cache_free|kfree|kfree_sensitive|__kmem_cache_free|slab_free\w*|__slab_free|"
    r"do_slab_free|kmalloc\w*|__kmalloc\w*|kmem_cache_alloc\w*|kobject_put|"
    r"ubsan_\w+|__ubsan_\w+|refcount_\w+|__refcount_\w+|"
    r"__schedule|schedule\w*|io_schedule\w*|__mutex_lock\w*|mutex_lock\w*|"
    r"__down\w*|down\w*|rwsem_\w+|_raw_spin_\w+|__might_sleep|__might_resched|"
    r"__might_fault|might_fault|__cond_resched|lock_acquire|__lock_acquire|"
    r"wait_for_completion\w*|__wait_for_common|do_wait_for_common|"
    r"entry_SYSCALL_64\w*|do_syscall_64|x64_sys_call|ksys_\w+|vfs_\w+|"
    r"proc_reg_\w+|pde_\w+|full_proxy_\w+|"
    r"ret_from_fork\w*|kthread|worker_thread|process_one_work|"
    r"watchdog_timer_fn|__hrtimer_run_queues|hrtimer_interrupt|__run_hrtimer|"
    r"rcu_\w+|update_process_times|tick_\w+|__sysvec_apic_timer_interrupt|"
    r"native_\w+|__list_\w+_valid\w*|lockdep_\w+|check_\w*deadlock\w*|check_noncircular|"
    r"check_prevs?_add|validate_chain|print_\w+_bug|context_switch|"
    r"inode_lock\w*|lock_sock\w*|rtnl_lock\w*|"
    r"__bad_area\w*|bad_area\w*|page_fault_oops|kernelmode_fixup_or_oops|"
    r"__die\w*|die|oops_\w+|do_user_addr_fault|handle_page_fault|no_context)$"
)


@dataclass(slots=True)
class Frame:
    func: str
    offset: str | None = None
    module: str | None = None
    file: str | None = None
    line: int | None = None
    inline: bool = False


@dataclass(slots=True)
class CrashReport:
    title: str
    kind: str  # KASAN, BUG, WARNING, GPF, PANIC, HUNG, LOCKUP, STALL, UBSAN, ...
    frames: list[Frame] = field(default_factory=list)
    report: str = ""  # the report's lines, timestamps removed
    rip: str | None = None
    start_line: int = 0

    def to_dict(self) -> dict[str, object]:
        return asdict(self)

    @property
    def files(self) -> list[str]:
        return list(dict.fromkeys(f.file for f in self.frames if f.file))

    @property
    def functions(self) -> list[str]:
        return list(dict.fromkeys(f.func for f in self.frames))


def _clean(console: str) -> list[str]:
    return [_TS.sub("", line.rstrip("\r")) for line in console.splitlines()]


def parse_frames(lines: list[str]) -> list[Frame]:
    """Reliable frames of the first call trace in `lines` (lines starting with '? ' dropped)."""
    frames: list[Frame] = []
    in_trace = False
    for line in lines:
        s = line.strip()
        if s.startswith(("Call Trace:", "backtrace:")):
            if in_trace and frames:
                break
            in_trace = True
            continue
        if not in_trace or s in {"<TASK>", "</TASK>", "<IRQ>", "</IRQ>", "<NMI>", "</NMI>"}:
            continue
        m = _FRAME.match(_ADDR.sub("", line))
        if not m or not (m["off"] or m["file"]):
            if frames and not s:
                break
            if frames and (s.startswith(("RIP:", "Modules linked in", "---[")) or "=" * 5 in s):
                break
            continue
        if m["unreliable"]:
            continue
        frames.append(
            Frame(
                func=m["func"],
                offset=m["off"],
                module=m["module"],
                file=m["file"],
                line=int(m["line"]) if m["line"] else None,
                inline=bool(m["inline"]),
            )
        )
    return frames


def _skipped(func: str) -> bool:
    return bool(_SKIP.match(func.split(".")[0]))


def _first_useful(frames: list[Frame]) -> str | None:
    for frame in frames:
        if not _skipped(frame.func):
            return _strip_suffix(frame.func)
    return _strip_suffix(frames[0].func) if frames else None


def _func_of(header: str) -> str | None:
    m = re.search(r"\bin ([A-Za-z_][\w.$]*)\+0x", header) or re.search(
        r"\bat ([A-Za-z_][\w.$]*)\+0x", header
    )
    return m.group(1) if m else None


def _strip_suffix(func: str | None) -> str | None:
    # Compiler clones (f.cold, f.isra.0, f.constprop.0) name the same source function.
    return func.split(".")[0] if func else func


def _no_cpu(what: str) -> str:
    return re.sub(r" on CPU#\d+", "", what)


Titler = Callable[[re.Match[str], list[str], list[Frame], str | None], tuple[str, str]]


def _pick(header_func: str | None, rip: str | None, frames: list[Frame]) -> str:
    for cand in (header_func, rip):
        if cand and not _skipped(cand):
            return _strip_suffix(cand) or cand
    return _first_useful(frames) or header_func or rip or "unknown"


def _kasan(m: re.Match[str], body: list[str], frames: list[Frame], rip: str | None):
    bug_type = m["type"]
    access = ""
    for line in body[1:6]:
        if a := re.match(r"(Read|Write) of size", line.strip()):
            access = " " + a.group(1)
            break
    func = _pick(_strip_suffix(m["func"]), None, frames)
    return "KASAN", f"KASAN: {bug_type}{access} in {func}"


def _simple(kind: str, prefix: str, use_rip: bool = True) -> Titler:
    def titler(m: re.Match[str], body: list[str], frames: list[Frame], rip: str | None):
        header = m.groupdict().get("func")
        return kind, f"{prefix} in {_pick(header, rip if use_rip else None, frames)}"

    return titler


def _warning(m: re.Match[str], body: list[str], frames: list[Frame], rip: str | None):
    text = "\n".join(body[:4])
    if "refcount_t:" in text or m["func"] == "refcount_warn_saturate":
        return "WARNING", f"WARNING: refcount bug in {_first_useful(frames) or 'unknown'}"
    return "WARNING", f"WARNING in {_pick(m['func'], rip, frames)}"


def _panic(m: re.Match[str], body: list[str], frames: list[Frame], rip: str | None):
    msg = m["msg"].strip()
    if sp := re.match(r"stack-protector: Kernel stack is corrupted in: (\S+)", msg):
        func = _strip_suffix(sp.group(1).split("+")[0])
        return "PANIC", f"kernel panic: stack-protector in {func}"
    msg = re.sub(r"\s*\d+(\.\d+)?\s*$", "", msg)  # drop trailing counters ("... CPU 0")
    return "PANIC", f"kernel panic: {msg}"


# (marker regex matched against a cleaned line, titler). Order matters: first match wins.
_MARKERS: list[tuple[re.Pattern[str], Titler]] = [
    (
        re.compile(r"^BUG: KASAN: (?P<type>[\w\- ]+?) in (?P<func>[\w.$]+)"),
        _kasan,
    ),
    (
        re.compile(r"^BUG: KFENCE: (?P<type>[\w\- ]+?) in (?P<func>[\w.$]+)"),
        lambda m, b, f, r: ("KFENCE", f"KFENCE: {m['type']} in {_pick(m['func'], None, f)}"),
    ),
    (
        re.compile(r"^UBSAN: (?P<type>[\w\- ]+?) in (?P<file>\S+)"),
        lambda m, b, f, r: ("UBSAN", f"UBSAN: {m['type']} in {_first_useful(f) or 'unknown'}"),
    ),
    (
        re.compile(r"^BUG: kernel NULL pointer dereference"),
        _simple("BUG", "BUG: kernel NULL pointer dereference"),
    ),
    (
        re.compile(r"^BUG: unable to handle (page fault|kernel paging request)"),
        _simple("BUG", "BUG: unable to handle kernel paging request"),
    ),
    (
        re.compile(r"^(?:watchdog: )?BUG: soft lockup - CPU#\d+ stuck"),
        _simple("LOCKUP", "BUG: soft lockup"),
    ),
    (
        re.compile(
            r"^BUG: (?P<what>scheduling while atomic|sleeping function called from "
            r"invalid context|workqueue lockup|Bad page state|Bad rss-counter state|"
            r"spinlock \w+ on CPU#\d+|stack guard page was hit)"
        ),
        lambda m, b, f, r: ("BUG", f"BUG: {_no_cpu(m['what'])} in {_pick(None, None, f)}"),
    ),
    (
        re.compile(r"^(list_add corruption|list_del corruption|list_add double add)"),
        lambda m, b, f, r: ("BUG", f"BUG: corrupted list in {_first_useful(f) or 'unknown'}"),
    ),
    (
        re.compile(r"^BUG: memory leak"),
        lambda m, b, f, r: ("LEAK", f"memory leak in {_first_useful(f) or 'unknown'}"),
    ),
    (
        re.compile(r"^kernel BUG at (?P<where>\S+?)!?$"),
        _simple("BUG", "kernel BUG"),
    ),
    (
        re.compile(r"^WARNING: CPU: \d+ PID: \d+ at \S+ (?P<func>[\w.$]+)\+0x"),
        _warning,
    ),
    (
        re.compile(r"^WARNING: possible (circular locking dependency|recursive locking) detected"),
        lambda m, b, f, r: ("LOCKDEP", f"possible deadlock in {_first_useful(f) or 'unknown'}"),
    ),
    (
        re.compile(
            r"^WARNING: (?P<what>inconsistent lock state|suspicious RCU usage|"
            r"bad unlock balance detected!?|lock held when returning to user space!?)"
        ),
        lambda m, b, f, r: (
            "LOCKDEP",
            f"WARNING: {m['what'].rstrip('!')} in {_first_useful(f) or 'unknown'}",
        ),
    ),
    (
        re.compile(r"^general protection fault"),
        _simple("GPF", "general protection fault"),
    ),
    (
        re.compile(r"^divide error: "),
        _simple("BUG", "divide error"),
    ),
    (
        re.compile(r"^invalid opcode: "),
        _simple("BUG", "invalid opcode"),
    ),
    (
        re.compile(r"^INFO: task \S+ blocked for more than \d+ seconds"),
        lambda m, b, f, r: ("HUNG", f"INFO: task hung in {_first_useful(f) or 'unknown'}"),
    ),
    (
        re.compile(r"^(rcu: )?INFO: rcu_\w+ (self-)?detected stalls? on CPU"),
        lambda m, b, f, r: (
            "STALL",
            f"INFO: rcu detected stall in {_pick(None, r, f)}",
        ),
    ),
    (
        re.compile(r"^Kernel panic - not syncing: (?P<msg>.*)$"),
        _panic,
    ),
]


def _report_end(lines: list[str], start: int) -> int:
    """Index after the report that starts at `start`: an end marker, the closing '=====' rule
    of KASAN/UBSAN reports, or the start of another report (whichever comes first)."""
    for i in range(start + 1, min(len(lines), start + 400)):
        line = lines[i]
        if _END.match(line):
            return i + 1
        if i - start >= 2 and re.fullmatch(r"={20,}", line.strip()):
            return i + 1
        # A KASAN header repeats for inlined frames on the next line, and "kernel BUG at" /
        # "list_add corruption" are followed by their oops line ("invalid opcode: 0000 [#1]"):
        # both belong to the report they follow.
        if i - start < 8 and ("[#" in line or line.startswith("kernel BUG at")):
            continue
        if i - start >= 3 and any(p.match(line) for p, t in _MARKERS if t is not _panic):
            return i
    return min(len(lines), start + 400)


def parse_console(console: str) -> list[CrashReport]:
    """Every crash report in the console, in order. A panic that merely follows a report
    (panic_on_warn, oops=panic, fatal exception) is part of that report, not a new crash."""
    lines = _clean(console)
    reports: list[CrashReport] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        for pattern, titler in _MARKERS:
            m = pattern.match(line)
            if not m:
                continue
            if titler is _panic and reports:
                break  # consequence of the report before it
            end = _report_end(lines, i)
            body = lines[i:end]
            # The header may precede the stack by a few lines; the trace may come before the
            # header for a lockup (the RIP register dump is part of the body).
            frames = parse_frames(body)
            rip_m = next((r for r in map(_RIP.search, body) if r), None)
            rip = _strip_suffix(rip_m["func"]) if rip_m else None
            kind, title = titler(m, body, frames, rip)
            reports.append(
                CrashReport(
                    title=title,
                    kind=kind,
                    frames=frames,
                    report="\n".join(body),
                    rip=rip,
                    start_line=i,
                )
            )
            i = end - 1
            break
        i += 1
    return reports


def first_crash(console: str) -> CrashReport | None:
    reports = parse_console(console)
    return reports[0] if reports else None


def normalize_title(title: str) -> str:
    """Compare titles loosely: syzbot's numbering suffix " (2)" and clone suffixes dropped."""
    title = re.sub(r"\s+\(\d+\)$", "", title.strip())
    return re.sub(r"\b([A-Za-z_]\w*)\.(?:cold|isra|constprop|part)(?:\.\d+)*\b", r"\1", title)


def titles_match(a: str, b: str) -> bool:
    return normalize_title(a) == normalize_title(b)
