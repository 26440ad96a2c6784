"""All crash families, in the order a console line is tried against their markers."""

from __future__ import annotations

from codegen_eval.kernelgym.crash.kinds import (
    BUG,
    ONLY_IP,
    WARNING,
    Family,
    S,
    ip_then_trace,
    trace_walk,
)
from codegen_eval.kernelgym.crash.kinds_other import (
    BAD_ACCESS,
    INFO,
    KERNEL_BUG,
    KERNEL_PANIC,
    UBSAN,
    fault,
    only,
)
from codegen_eval.kernelgym.crash.patterns import rx

FAMILIES: tuple[Family, ...] = (
    BUG,
    WARNING,
    INFO,
    fault("Unable to handle kernel", "BUG: unable to handle kernel {1} in {2}",
           alts=("bad-access in {2}",),
           headline="Unable to handle kernel (paging request|NULL pointer dereference|access to user memory)"),
    Family("general protection fault",
           (S("general protection fault.*:", "general protection fault in {1}", alts=BAD_ACCESS,
              walk=ip_then_trace()),),
           not_crash=(rx(r"general protection fault .* error:\d+ in "),)),  # a user-space fault
    fault("stack segment: ", "stack segment fault in {1}", alts=()),
    KERNEL_PANIC,
    only("PANIC: double fault", "PANIC: double fault", "PANIC: double fault in {1}", walk=ONLY_IP),
    only("rust_kernel: panicked", "rust_kernel: panicked", "{1} in {2}",
          detail="rust_kernel: panicked at [^\n]*?\n(.+?)\n",
          walk=trace_walk(skip=(r"__rustc::rust_begin_unwind",))),
    KERNEL_BUG,
    only("Kernel BUG", "Kernel BUG (.*)", "kernel BUG {1}"),
    only("BUG kmalloc-", "BUG kmalloc-.*: Object already free", "BUG: Object already free"),
    only("divide error:", "divide error: ", "divide error in {1}", walk=ONLY_IP),
    # misspelt so by Linux 5.9-5.10
    only("divide_error:", "divide_error: ", "divide error in {1}", walk=ONLY_IP),
    only("invalid opcode:", "invalid opcode: ", "invalid opcode in {1}", walk=ONLY_IP),
    only("int3:", "int3: ", "int3 in {1}", walk=ip_then_trace()),
    UBSAN,
    Family("Booting the kernel.",
           (S("^Booting the kernel", "unexpected kernel reboot", has_trace=False),),
           # boot messages echoed back by a mount option parser are not a reboot
           not_crash=(rx("Parsing ELF|Decompressing Linux|Unknown parameter '"),)),
    only("unregister_netdevice: waiting for", "unregister_netdevice: waiting for (?:.*) to become free",
          "unregister_netdevice: waiting for DEV to become free", has_trace=False),
    only("VFS: Close: file count is 0", "VFS: Close: file count is 0",
          "VFS: Close: file count is zero (use-after-free)", has_trace=False),
    only("VFS: Busy inodes after unmount", "VFS: Busy inodes after unmount",
          "VFS: Busy inodes after unmount (use-after-free)", has_trace=False),
    # arm: these are arm's words for page faults and NULL dereferences
    fault("Internal error:", "Internal error in {1}"),
    fault("Unhandled fault:", "Unhandled fault in {1}"),
    fault("Alignment trap:", "Alignment trap in {1}", alts=()),
    Family("trusty: panic", (
        S("trusty: panic.* ASSERT FAILED", "trusty: ASSERT FAILED: {1}",
          detail=r"trusty: panic \(.*?\):(?: DEBUG)? ASSERT FAILED at \(.*?\): (.+)", has_trace=False),
        S("trusty: panic.* ASSERT FAILED.*: *(.*)", "trusty: ASSERT FAILED: {1}", broken=True),
        S("trusty: panic", "trusty: panic: {1}", detail=r"trusty: panic \(.*?\): (.+)",
          has_trace=False),
    )),
    Family("fatal error:", (S("fatal error:", "go runtime error", has_trace=False),),
           not_crash=(rx("ALSA"), rx("fatal error: cannot create timer"))),
    # Messages of syzkaller's own executor and of Go programs.
    only("SYZFAIL:", "SYZFAIL:(.*)", "SYZFAIL:{1}", has_trace=False),
    only("SYZFATAL:", "SYZFATAL:(.*)()", "SYZFATAL:{1}", alts=("SYZFATAL{2}",), has_trace=False),
    Family("panic:", (
        S("panic: Sentry detected .* stuck task", "panic: Sentry detected stuck tasks", has_trace=False),
        S("panic:(.*)", "panic:{1}", has_trace=False),
    ), not_crash=(rx("_panic:"), rx("xlog_status:"), rx(r"ddb\.onpanic:"), rx("evtlog_status:"))),
)  # fmt: skip

# A report ends where another one starts, except for these lines, which are part of the report
# they follow (the trap behind a BUG, the panic that oops=panic/panic_on_warn adds, ...).
CONTINUES_REPORT = tuple(
    rx(p)
    for p in (
        "invalid opcode: 0000",
        "Kernel panic - not syncing",
        "unregister_netdevice: waiting for",
        "PANIC: double fault",  # often while handling a fault of the same report
        "Internal error:",
    )
)
# Messages that are not bugs but print a stack: met inside a report, they mix foreign frames in.
FOREIGN_STACKS = (
    "vmalloc: allocation failure:",
    "FAULT_INJECTION: forcing a failure",
    "FAULT_FLAG_ALLOW_RETRY missing",
)
