"""Crash kinds other than "BUG:" and "WARNING:" reports (see kinds.py for the table's form)."""

from __future__ import annotations

from codegen_eval.kernelgym.crash.kinds import Family, S, ip_then_trace, trace_walk
from codegen_eval.kernelgym.crash.patterns import IP_LINE, rx
from codegen_eval.kernelgym.crash.stack import TRACE, Walk

_AT = r"(?:.*\n)+?.*at: <PC> +<FN>"

INFO = Family(
    "INFO:",
    (
        # Old kernels printed lockdep reports under "INFO:" with a closing " ]".
        S("INFO: possible circular locking dependency detected", "possible deadlock in {1}",
          detail=r"INFO: possible circular locking dependency detected \](?:.*\n)+?.*is trying to acquire lock" + _AT),
        S("INFO: possible irq lock inversion dependency detected", "possible deadlock in {1}",
          detail=r"INFO: possible irq lock inversion dependency detected \](?:.*\n)+?.*just changed the state of lock" + _AT),
        S("INFO: SOFTIRQ-safe -> SOFTIRQ-unsafe lock order detected", "possible deadlock in {1}",
          detail=r"INFO: SOFTIRQ-safe -> SOFTIRQ-unsafe lock order detected \](?:.*\n)+?.*is trying to acquire" + _AT),
        S("INFO: possible recursive locking detected", "possible deadlock in {1}",
          detail=r"INFO: possible recursive locking detected \](?:.*\n)+?.*is trying to acquire lock" + _AT),
        S("INFO: inconsistent lock state", "inconsistent lock state in {1}",
          detail=r"INFO: inconsistent lock state \](?:.*\n)+?.*takes" + _AT),
        # The stalled CPU's own stack follows the timer interrupt that noticed the stall; the
        # frames above it are the interrupt path, not the looping code.
        S(
            "INFO: rcu_(?:preempt|sched|bh|tasks) (?:self-)?detected(?: expedited)? stall",
            "INFO: rcu detected stall in {1}",
            alts=("stall in {1}",),
            walk=Walk(
                (rx("apic_timer_interrupt"), IP_LINE, TRACE),
                skip=("apic_timer_interrupt", "rcu"),
                chooser="stall",
                fallback=(rx("(?:apic_timer_interrupt|Exception stack|el1h_64_irq)"), TRACE),
            ),
        ),
        S("INFO: trying to register non-static key", "INFO: trying to register non-static key in {1}",
          walk=trace_walk(skip=("stack", "lock", "IRQ"))),
        S("INFO: suspicious RCU usage", "INFO: suspicious RCU usage in {2}",
          detail=r"INFO: suspicious RCU usage(?:.*\n)+?.*?<SRC>",
          walk=trace_walk(skip=("rcu", "kmem", "slab"))),
        S("INFO: task <TASK> blocked (?:in I/O wait )?for more than [0-9]+ seconds",
          "INFO: task hung in {1}", alts=("hang in {1}",), walk=trace_walk(chooser="hang")),
        S("INFO: task <TASK> can't die for more than .* seconds", "INFO: task can't die in {1}",
          alts=("hang in {1}",), walk=trace_walk(skip=("schedule",))),
        # What is left of an old-style KASAN report whose header was lost.
        S("INFO: (Freed|Allocated) in (.*)", "INFO: {1} in {2}", broken=True),
        S(r"INFO:\s*(?:\n|$)", "INFO: corrupted", broken=True),
    ),
    not_crash=tuple(
        rx(p)
        for p in (
            "INFO: lockdep is turned off", "INFO: Stall ended before state dump start",
            "INFO: NMI handler", "INFO: recovery required on readonly filesystem",
            "(handler|interrupt).*took too long", "INFO: sys_.* is not present in /proc/kallsyms",
            "INFO: no syscalls can create resource", "rmt_storage:INFO:", "_INFO:",
        )
    ),
)  # fmt: skip

BAD_ACCESS = ("bad-access in {1}",)


def fault(marker: str, title: str, alts: tuple[str, ...] = BAD_ACCESS, **kw: object) -> Family:
    """A fault report named after the faulting function (IP line, else the call trace)."""
    return Family(
        marker, (S(kw.pop("headline", marker), title, alts=alts, walk=ip_then_trace()),), **kw
    )  # type: ignore[arg-type]


_PANIC = "Kernel panic - not syncing: "
KERNEL_PANIC = Family(
    "Kernel panic",
    (
        # The symbol may be missing and the stack unusable when the stack itself is smashed.
        S(_PANIC + "stack-protector:", "kernel panic: stack is corrupted in {1}",
          detail=_PANIC + "stack-protector: Kernel stack is corrupted in: <FN>", has_trace=False),
        S(_PANIC + "stack-protector:", "kernel panic: stack is corrupted in {1}",
          detail=_PANIC + "stack-protector: Kernel stack is corrupted in: [a-f0-9]+",
          walk=trace_walk(skip=("stack_chk",))),
        S(_PANIC + "corrupted stack end", "kernel panic: corrupted stack end in {1}",
          detail=_PANIC + "corrupted stack end detected inside scheduler",
          alts=("stack-overflow in {1}",),
          walk=trace_walk(skip=("schedule", "retint_kernel"), chooser="stall")),
        S(_PANIC + "kernel stack overflow", "kernel stack overflow in {1}",
          alts=("stack-overflow in {1}",), walk=trace_walk(skip=("bad_stack",), chooser="stall")),
        S(_PANIC + "Attempted to kill init!", "kernel panic: Attempted to kill init!"),
        S(_PANIC + "Couldn't open N_TTY ldisc for [^ ]+ --- error -[0-9]+",
          "kernel panic: Couldn't open N_TTY ldisc"),
        # These panics follow a report (oops=panic, panic_on_warn, hung_task_panic): met on
        # their own, the report before them was lost.
        S(_PANIC + "Fatal exception", "kernel panic: Fatal exception", broken=True),
        S(_PANIC + "panic_on_warn set", "kernel panic: panic_on_warn set", broken=True),
        S(_PANIC + "hung_task: blocked tasks", "kernel panic: hung_task: blocked tasks",
          broken=True),
        S(_PANIC + "(.*)", "kernel panic: {1}"),
    ),
)  # fmt: skip

KERNEL_BUG = Family(
    "kernel BUG",
    (
        S("kernel BUG at mm/usercopy.c", "BUG: bad usercopy in {1}",
          walk=trace_walk(skip=("usercopy", "__check"))),
        S("kernel BUG at lib/list_debug.c", "BUG: corrupted list in {1}",
          alts=("bad-access in {1}",), walk=trace_walk()),
        # skb helpers BUG_ON their arguments: the caller is at fault.
        S("kernel BUG at (.*)", "kernel BUG in {2}", walk=ip_then_trace(skip=("^skb_",))),
    ),
)  # fmt: skip


def only(marker: str, headline: str, title: str, **kw: object) -> Family:
    return Family(marker, (S(headline, title, **kw),))


UBSAN = Family(
    "UBSAN:",
    (
        S("UBSAN:", "UBSAN: undefined-behaviour in {1}", detail="UBSAN: Undefined behaviour in",
          walk=trace_walk(skip=("ubsan", "overflow"))),
        S("UBSAN: array-index-out-of-bounds in", "UBSAN: array-index-out-of-bounds in {1}",
          alts=BAD_ACCESS, walk=trace_walk(skip=("ubsan", "overflow"))),
        S("UBSAN:", "UBSAN: {1} in {2}", detail="UBSAN: (.*?) in",
          walk=trace_walk(skip=("ubsan", "overflow"))),
    ),
)  # fmt: skip
