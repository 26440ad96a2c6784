"""The crash kinds the reader knows: how each starts, how its title is written, which frame
names it, and which lines look like it but are not crashes.

A `Family` is found by a marker (a plain substring of a console line, e.g. "BUG:"). Its
`shapes` are the report layouts of that family; the shape whose `headline` occurs earliest in
the report decides the title (on a tie, the first listed that yields a title). `title` is a
template: `{1}`, `{2}`, ... are the headline's captured groups (or `detail`'s when it has one),
followed by the frame chosen for each frame group of the `walk`. Titles follow syzbot's
wording, so that they compare with the titles of real syzbot/kBench bugs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from codegen_eval.kernelgym.crash.patterns import CALL_TRACE, IP_LINE, rx
from codegen_eval.kernelgym.crash.stack import TRACE, Walk


@dataclass(frozen=True, slots=True)
class Shape:
    headline: re.Pattern[str]
    title: str
    detail: re.Pattern[str] | None = None  # must match too, else the report is corrupted
    alts: tuple[str, ...] = ()  # other titles syzbot files the same bug under
    walk: Walk | None = None
    has_trace: bool = True  # False: such reports carry no call trace (never "no trace")
    broken: bool = False  # such a report is always a corrupted one


@dataclass(frozen=True, slots=True)
class Family:
    marker: str
    shapes: tuple[Shape, ...]
    not_crash: tuple[re.Pattern[str], ...] = ()  # lines with the marker that are benign


def S(headline: str, title: str, **kw: object) -> Shape:
    detail = kw.pop("detail", None)
    return Shape(rx(headline), title, detail=rx(detail) if detail else None, **kw)  # type: ignore[arg-type]


def trace_walk(*extra: str, skip: tuple[str, ...] = (), chooser: str | None = None) -> Walk:
    """The frames of the first call trace (after the lines matching `extra`, in order)."""
    return Walk((*(rx(e) for e in extra), CALL_TRACE, TRACE), skip=skip, chooser=chooser)


def ip_then_trace(skip: tuple[str, ...] = (), chooser: str | None = None) -> Walk:
    """The faulting function (RIP/pc line) unless skipped, then the call trace."""
    return Walk((IP_LINE, CALL_TRACE, TRACE), skip=skip, chooser=chooser)


def _warning_walk(*skip: str) -> Walk:
    # A WARN traps: the trace starts at the RIP line (powerpc: "--- interrupt: N at f");
    # older kernels print only a "Call Trace:".
    start = re.compile(f"(?:{IP_LINE.pattern}|--- interrupt: [0-9]+ at {rx('<FN>').pattern})")
    return Walk((start, TRACE), skip=skip, fallback=(CALL_TRACE, TRACE))


_KMSAN_ORIGIN = "(Local variable .* created at:|Uninit was created at:)"


def _kmsan(kind: str, title: str, detail: str, alts: tuple[str, ...], skip: tuple[str, ...]
           ) -> tuple[Shape, Shape]:  # fmt: skip
    """A KMSAN report's frames come right after its headline; the out-of-tree KMSAN of
    2017-2021 printed a "Call Trace:" heading (and CPU lines) first, whose frames are the
    same ones."""
    headline = f"BUG: KMSAN:{' ' + kind if kind else ''}"
    old = S(
        headline,
        title,
        detail=detail + r".*\n(?:.*\n){0,4}?Call Trace:",
        alts=alts,
        walk=Walk((CALL_TRACE, TRACE, rx(_KMSAN_ORIGIN), TRACE), skip=skip),
        has_trace=False,
    )
    new = S(
        headline,
        title,
        detail=detail,
        alts=alts,
        walk=Walk((TRACE, rx(_KMSAN_ORIGIN), TRACE), skip=skip),
        has_trace=False,
    )
    return old, new


ONLY_IP = Walk((IP_LINE,))
_LOCK_HELD_AT = (
    r"(?:.*\n)+?.*leaving the kernel with locks still held(?:.*\n)+?.*at: (?:<PC> +)?<FN>"
)

BUG = Family(
    "BUG:",
    (
        S(
            "BUG: KASAN:",
            "KASAN: {1} {3} in {4}",
            detail=r"BUG: KASAN: ([a-z\-]+) in <FN>(?:.*\n)+?.*(Read|Write) (?:of size|at addr) (?:[0-9a-f]+)",
            alts=("bad-access in {4}",),
            walk=trace_walk(
                r"BUG: KASAN: (?:[a-z\-]+) in <FN>",
                skip=("kernel_fault", "tag_check", "mem_abort", "^el1_", "^el1h_"),
            ),
        ),
        S(
            "BUG: KASAN:",
            "KASAN: invalid-free in {2}",
            detail=r"BUG: KASAN: (?:double-free or invalid-free|double-free|invalid-free) in <FN>",
            alts=("invalid-free in {2}",),
            walk=trace_walk(
                r"BUG: KASAN: (?:double-free or invalid-free|double-free|invalid-free) in <FN>",
                skip=("slab_", "kfree", "vunmap", "vfree"),
            ),
        ),
        S(r"BUG: KASAN: ([a-z\-]+) on address(?:.*\n)+?.*(Read|Write) of size ([0-9]+)",
          "KASAN: {1} {2}"),
        S("BUG: KASAN: (.*)", "KASAN: {1}", broken=True),
        *_kmsan(
            "kernel-usb-infoleak",
            "KMSAN: kernel-usb-infoleak in {2}",
            detail="BUG: KMSAN: kernel-usb-infoleak in <FN>",
            alts=("KMSAN origin in {3}",),
            skip=("alloc_skb", "usb_submit_urb", "usb_start_wait_urb", "usb_bulk_msg",
                  "usb_interrupt_msg", "usb_control_msg"),
        ),
        *_kmsan(
            "",
            "KMSAN: {1} in {3}",
            detail=r"BUG: KMSAN: ([a-z\-]+) in <FN>",
            alts=("bad-access in {3}",),
            # the generic crypto code is where the value is used, rarely where it is wrong
            skip=("alloc_skb", "netlink_ack", "netlink_rcv_skb", "_encrypt$",
                  "^(?:crypto|cipher|drbg|rng)_"),
        ),
        S("BUG: KCSAN: data-race", "KCSAN: {1}", detail="BUG: KCSAN: (.*)", has_trace=False),
        S("BUG: KCSAN:", "KCSAN: {1}", detail="BUG: KCSAN: (.*)", has_trace=False),
        S(
            "BUG: KFENCE: (use-after-free|out-of-bounds) (read|write) in <FN>",
            "KFENCE: {1} {2} in {4}",
            alts=("bad-access in {4}",),
            walk=Walk((rx(r"BUG: KFENCE: (?:[a-z\- ]+) in <FN>"), TRACE)),
        ),
        S(
            "BUG: KFENCE: invalid free in <FN>",
            "KFENCE: invalid free in {2}",
            alts=("invalid-free in {2}",),
            walk=Walk((rx(r"BUG: KFENCE: (?:[a-z\- ]+) in <FN>"), TRACE)),
            has_trace=False,
        ),
        S(
            "BUG: KFENCE: invalid (read|write) in <FN>",
            "KFENCE: invalid {1} in {3}",
            alts=("bad-access in {3}",),
            walk=Walk((rx(r"BUG: KFENCE: (?:[a-z\- ]+) in <FN>"), TRACE)),
        ),
        S(
            "BUG: KFENCE: memory corruption in <FN>",
            "KFENCE: memory corruption in {2}",
            walk=Walk((rx(r"BUG: KFENCE: (?:[a-z\- ]+) in <FN>"), TRACE)),
            has_trace=False,
        ),
        S(
            "BUG: (?:unable to handle kernel paging request|unable to handle page fault for "
            "address|Unable to handle kernel data access)",
            "BUG: unable to handle kernel paging request in {1}",
            alts=("bad-access in {1}",),
            walk=ip_then_trace(),
        ),
        S(
            "BUG: (?:unable to handle kernel NULL pointer dereference|kernel NULL pointer "
            "dereference|Kernel NULL pointer dereference)",
            "BUG: unable to handle kernel NULL pointer dereference in {1}",
            alts=("bad-access in {1}",),
            walk=ip_then_trace(),
        ),
        # The second half of this header is a separate printk and is often lost.
        S("BUG: (?:unable to handle kernel|Unable to handle kernel)",
          "BUG: unable to handle kernel", broken=True),
        S(
            "BUG: (spinlock|rwlock) (lockup suspected|already unlocked|recursion|cpu recursion"
            "|bad magic|wrong owner|wrong CPU|trylock failure on UP)",
            "BUG: {1} {2} in {3}",
            walk=trace_walk(skip=("spin_", "_lock", "_unlock")),
        ),
        S("BUG: soft lockup", "BUG: soft lockup in {1}", alts=("stall in {1}",),
          walk=ip_then_trace(chooser="stall")),
        S("BUG: .*still has locks held!", "BUG: still has locks held in {1}",
          detail="BUG: .*still has locks held!(?:.*\\n)+?.*<PC> +<FN>"),
        S("BUG: scheduling while atomic", "BUG: scheduling while atomic in {1}",
          walk=trace_walk(skip=("schedule",))),
        S("BUG: lock held when returning to user space",
          "BUG: lock held when returning to user space in {1}",
          detail="BUG: lock held when returning to user space" + _LOCK_HELD_AT, has_trace=False),
        S("BUG: bad unlock balance detected!", "BUG: bad unlock balance in {1}",
          walk=trace_walk("<PC> +<FN>")),
        S("BUG: held lock freed!", "BUG: held lock freed in {1}",
          detail="BUG: held lock freed!(?:.*\\n)+?.*<PC> +<FN>"),
        S("BUG: Bad rss-counter state", "BUG: Bad rss-counter state", has_trace=False),
        S("BUG: non-zero nr_ptes on freeing mm", "BUG: non-zero nr_ptes on freeing mm",
          has_trace=False),
        S("BUG: non-zero nr_pmds on freeing mm", "BUG: non-zero nr_pmds on freeing mm",
          has_trace=False),
        # Block device names (loop0, loop1) would split one bug into many: left out.
        S("BUG: Dentry .* still in use", "BUG: Dentry still in use in {1}",
          detail=r"BUG: Dentry .* still in use \([0-9]+\) \[(unmount) of ([^\]]+)\]",
          alts=("BUG: Dentry still in use [{1} of {2}]",)),
        S(
            "BUG: Bad page (state|cache)",
            "BUG: Bad page {1} in {2}",
            walk=Walk(
                (rx("page last allocated"), TRACE),
                skip=("(free|put|get|update|release)_page", "free_unref", "^_*folio",
                      "truncate_inode_pages", "page_frag_free", "alloc", "vmap", "page_owner"),
            ),
        ),
        S("BUG: Bad page map", "BUG: Bad page map"),
        S("BUG: workqueue lockup", "BUG: workqueue lockup", has_trace=False),
        S("BUG: sleeping function called from invalid context at (.*)",
          "BUG: sleeping function called from invalid context in {2}", walk=trace_walk()),
        S(
            r"BUG: using ([a-z_]+)\(\) in preemptible",
            "BUG: using {1}() in preemptible code in {2}",
            walk=trace_walk(skip=("dump_stack", "preemption", "preempt", "debug_", "processor_id",
                              "this_cpu")),
        ),
        S("BUG: workqueue leaked lock or atomic", "BUG: workqueue leaked lock or atomic in {1}",
          detail=r"BUG: workqueue leaked lock or atomic(?:.*\n)+?.*last function: ([a-zA-Z0-9_]+)\n",
          has_trace=False),
        S(
            "BUG: memory leak",
            "memory leak in {1}",
            walk=Walk(
                (rx(r"backtrace(?: \(crc [0-9a-fA-F]*\))?:"), TRACE),
                skip=("kmemleak", "mmap", "kmem", "slab", "alloc", "create_object", "idr_get",
                      "list_lru_init", "kasprintf", "kvasprintf", "pcpu_create", "strdup",
                      "strndup", "memdup"),
            ),
        ),
        S("BUG: .*stack guard page was hit at", "BUG: stack guard page was hit in {1}",
          alts=("stack-overflow in {1}",), walk=ip_then_trace(chooser="stall")),
        # arm prints this lockdep report differently from x86 ("WARNING: ... lock_"): one title.
        S("BUG: Invalid wait context", "WARNING: locking bug in {1}",
          walk=trace_walk(skip=("lock_sock", "release_sock"))),
        S(r"BUG:\s*(?:\n|$)", "BUG: corrupted", broken=True),
    ),
    not_crash=tuple(
        rx(p) for p in ("ODEBUG:", "Boot_DEBUG:", "xlog_status:", "DEBUG:",
                        "BUG: no syscalls can create resource")
    ),
)  # fmt: skip

_WARN_HEAD = "WARNING: .*"
WARNING = Family(
    "WARNING:",
    (
        S(_WARN_HEAD + r"lib/debugobjects\.c.* (?:debug_print|debug_check|at)",
          "WARNING: ODEBUG bug in {1}",
          walk=_warning_walk("debug_", "rcu", "hrtimer_", "timer_", "work_", "percpu_",
                             "vunmap", "vfree", "__free_", "debug_check", "kobject_")),
        S(_WARN_HEAD + r"mm/usercopy\.c.* (?:usercopy_warn|at)", "WARNING: bad usercopy in {1}",
          walk=_warning_walk("usercopy", "__check")),
        S(_WARN_HEAD + r"lib/kobject\.c.* (?:kobject_|at)", "WARNING: kobject bug in {1}",
          walk=_warning_walk("kobject_")),
        S(_WARN_HEAD + r"fs/proc/generic\.c.* (?:proc_register|at)",
          "WARNING: proc registration bug in {1}", walk=_warning_walk("proc_")),
        S(_WARN_HEAD + r"lib/refcount\.c.* (?:refcount_|at)", "WARNING: refcount bug in {1}",
          walk=_warning_walk("refcount", "kobject_")),
        S(_WARN_HEAD + r"kernel/locking/lockdep\.c.*lock_", "WARNING: locking bug in {1}",
          walk=_warning_walk("lock_sock", "release_sock")),
        S("WARNING: .*still has locks held!", "WARNING: still has locks held in {1}",
          detail=r"WARNING: .*still has locks held!(?:.*\n)+?.*at: <FN>"),
        S("WARNING: Nested lock was not taken", "WARNING: nested lock was not taken in {1}",
          walk=_warning_walk()),
        S("WARNING: lock held when returning to user space",
          "WARNING: lock held when returning to user space in {1}",
          detail="WARNING: lock held when returning to user space" + _LOCK_HELD_AT,
          has_trace=False),
        S(_WARN_HEAD + r"mm/.*\.c.* k?.?malloc", "WARNING: kmalloc bug in {1}",
          walk=_warning_walk("kmalloc", "krealloc", "slab", "kmem")),
        S(_WARN_HEAD + r"mm/vmalloc.c.*__vmalloc_node", "WARNING: zero-size vmalloc in {1}",
          walk=_warning_walk()),
        S("WARNING: .* usb_submit_urb", "WARNING in {1}/usb_submit_urb",
          walk=_warning_walk("usb_submit_urb", "usb_start_wait_urb", "usb_bulk_msg",
                             "usb_interrupt_msg", "usb_control_msg")),
        # Since Linux 6.19: "WARNING: fs/x.c:12 at 0x1, CPU#0: comm/pid".
        S(r"WARNING: <SRC> at 0x\d+, CPU#\d+", "WARNING in {2}", walk=_warning_walk()),
        S("WARNING: .* at <SRC> <FN>", "WARNING in {3}", walk=_warning_walk()),
        S("WARNING: <SRC> at <FN>", "WARNING in {3}", walk=_warning_walk()),
        S(r"WARNING: \[.*\] <SRC> at <FN>.*", "WARNING in {3}", walk=_warning_walk()),
        S(
            "WARNING: possible circular locking dependency detected",
            "possible deadlock in {1}",
            detail=r"WARNING: possible circular locking dependency detected(?:.*\n)+?.*is trying to acquire lock",
            walk=Walk(
                (rx("at: (?:<PC> +)?<FN>"), rx("at: (?:<PC> +)?<FN>"), TRACE),
                # locks of work items: any deadlock there belongs to the workqueue code
                skip=("process_one_work", "flush_workqueue", "drain_workqueue",
                      "destroy_workqueue"),
            ),
        ),
        S("WARNING: possible irq lock inversion dependency detected", "possible deadlock in {1}",
          detail=r"WARNING: possible irq lock inversion dependency detected(?:.*\n)+?.*just "
                 r"changed the state of lock(?:.*\n)+?.*at: (?:<PC> +)?<FN>"),
        S("WARNING: .*-safe -> .*-unsafe lock order detected", "possible deadlock in {1}",
          walk=Walk((rx("which became (?:.*) at:"), TRACE))),
        S("WARNING: possible recursive locking detected", "possible deadlock in {1}",
          detail=r"WARNING: possible recursive locking detected(?:.*\n)+?.*is trying to "
                 r"acquire lock(?:.*\n)+?.*at: (?:<PC> +)?<FN>"),
        S("WARNING: inconsistent lock state", "inconsistent lock state in {2}",
          detail=r"WARNING: inconsistent lock state(?:.*\n)+?.*takes(?:.*\n)+?.*at: (?:<PC> +)?<FN>",
          walk=trace_walk()),
        S("WARNING: suspicious RCU usage", "WARNING: suspicious RCU usage in {2}",
          detail=r"WARNING: suspicious RCU usage(?:.*\n)+?.*?<SRC>",
          walk=trace_walk(skip=("rcu", "kmem", "slab"))),
        S("WARNING: kernel stack regs at [0-9a-f]+ in [^ ]* has bad '([^']+)' value",
          "WARNING: kernel stack regs has bad '{1}' value", has_trace=False),
        S("WARNING: kernel stack frame pointer at [0-9a-f]+ in [^ ]* has bad value",
          "WARNING: kernel stack frame pointer has bad value", has_trace=False),
        S("WARNING: bad unlock balance detected!", "WARNING: bad unlock balance in {1}",
          walk=trace_walk("<PC> +<FN>")),
        S("WARNING: held lock freed!", "WARNING: held lock freed in {1}",
          detail=r"WARNING: held lock freed!(?:.*\n)+?.*at:(?: <PC>)? +<FN>"),
        S("WARNING: kernel stack regs .* has bad 'bp' value",
          "WARNING: kernel stack regs has bad value", has_trace=False),
        S("WARNING: kernel stack frame pointer .* has bad value",
          "WARNING: kernel stack regs has bad value", has_trace=False),
        S(r"WARNING:\s*(?:\n|$)", "WARNING: corrupted", broken=True),
    ),
    not_crash=tuple(
        rx(p)
        for p in (
            "WARNING: /etc/ssh/moduli does not exist, using fixed modulus",
            "WARNING: workqueue cpumask: online intersect > possible intersect",
            "WARNING: [Tt]he mand mount option",
            r"WARNING: Unsupported flag value\(s\) of 0x%x in DT_FLAGS_1",
            "WARNING: Unprivileged eBPF is enabled with eIBRS",
            r"WARNING: fbcon: Driver '(.*)' missed to adjust virtual screen size "
            r"(\((?:\d+)x(?:\d+) vs\. (?:\d+)x(?:\d+)\))",
            "WARNING: See https.* for mitigation options.",
            "WARNING: kernel not compiled with CPU_SRSO",
            r"EXT4-[Ff][Ss](?: \(.*\))?:",
            r"(?i)warning: .* uses (deprecated v2 capabilities|wireless extensions)",
            r"XFS \(\w+\): WARNING",
        )
    ),
)  # fmt: skip
