"""What a kernel patch is made of: the symbols and instructions its built objects gained.

A candidate kernel patch runs with full privileges in the guest, so nothing the guest reports
about it can be trusted: a module can rewrite the reproducer on the guest's disk, read the
per-boot nonce from `/init`, print the run markers and restart the machine. What can be
judged is the built code itself, on the host, where no candidate code runs:

- **imports**: the undefined symbols of the candidate's object (a module's `.ko`, or each
  changed `.o` of a kernel tree) against the pristine object's. A symbol the pristine object
  does not use must be on `ALLOWED_IMPORTS` (or a sanitizer prefix), else the patch is
  `tamper:<symbol>`. The allow-list holds allocation, locks, strings and number parsing,
  printing and the compiler's own helpers; never file I/O, restart or reboot, usermode
  helpers, module or symbol lookups, signals or process exit, other tasks' memory, deferred
  work or threads (`NEVER_CLASSES` names them in the reason, and a test keeps the two apart).
  Symbols are read from the ELF symbol table in Python (no tool runs on the object here).
- **instructions**: the object is disassembled (objdump, in the sandbox: the object is
  candidate-made bytes) and the candidate may not gain port I/O, MSR, system-call,
  interrupt, descriptor-table, control-register, hypercall or user-access instructions
  (`tamper:insn:<mnemonic>`), indirect calls or jumps (`tamper:indirect-branch`: a
  function pointer taken from an allowed import's structure, or a constant address), or
  constants that are kernel addresses (`tamper:raw-address`: with `nokaslr` every kernel
  function and variable has a fixed address a patch could call or write).

What this cannot see: an address computed at run time from harmless arithmetic and then
called through a pointer the compiler turns into a direct branch only (it cannot: every call
through a pointer is an indirect branch, flagged above; but a *write* through a computed
pointer into kernel data is an ordinary `mov`, indistinguishable from the module's own
stores), and kernel code reached through an allowed import's legitimate behaviour.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from sandboxes import Limits, open_sandbox

from .buildrun import GYM_BACKEND
from .elfread import Elf, code_targets, read_elf, stray_code_pointers

__all__ = [
    "ALLOWED_IMPORTS",
    "ALLOWED_PREFIXES",
    "NEVER_CLASSES",
    "Profile",
    "Tamper",
    "added_asm",
    "changed_object_pairs",
    "import_problem",
    "instruction_problem",
    "profile",
    "screen_object_pairs",
    "undefined_symbols",
]

# New imports a fix may add. Small on purpose: the bundled fixes add none, and each entry is
# a function whose every use stays inside the module's own data (or reports, or checks).
ALLOWED_IMPORTS = frozenset(
    {
        # memory
        "__kmalloc", "kmalloc_trace", "kmalloc_caches", "kmalloc_large", "kmalloc_node_trace",
        "__kmalloc_node", "kmem_cache_alloc_trace", "kfree", "kfree_sensitive", "krealloc",
        "kvmalloc_node", "kvfree", "kmemdup", "kstrdup", "kstrndup", "memdup_user",
        "memdup_user_nul", "kvfree_call_rcu",
        # locks and RCU
        "mutex_lock", "mutex_unlock", "mutex_trylock", "mutex_lock_interruptible",
        "mutex_lock_killable", "__mutex_init", "mutex_is_locked",
        "_raw_spin_lock", "_raw_spin_unlock", "_raw_spin_trylock", "_raw_spin_lock_irq",
        "_raw_spin_unlock_irq", "_raw_spin_lock_irqsave", "_raw_spin_unlock_irqrestore",
        "_raw_spin_lock_bh", "_raw_spin_unlock_bh", "__raw_spin_lock_init",
        "__rcu_read_lock", "__rcu_read_unlock", "synchronize_rcu",
        # strings, numbers, copies from the caller's buffer
        "strcmp", "strncmp", "strcasecmp", "strncasecmp", "strlen", "strnlen", "strscpy",
        "strim", "strchr", "strrchr", "strstr", "strsep", "memcmp", "memchr", "memcpy",
        "memmove", "memset", "sscanf", "sprintf", "snprintf", "scnprintf", "vsnprintf",
        "kstrtoint", "kstrtouint", "kstrtol", "kstrtoul", "kstrtoll", "kstrtoull", "kstrtou8",
        "kstrtou16", "kstrtos8", "kstrtos16", "kstrtobool", "kstrtoint_from_user",
        "kstrtouint_from_user", "kstrtol_from_user", "kstrtoul_from_user",
        "kstrtoll_from_user", "kstrtoull_from_user", "kstrtobool_from_user",
        "_copy_from_user", "__check_object_size", "simple_write_to_buffer",
        # reports and checks
        "_printk", "__warn_printk", "__list_add_valid", "__list_del_entry_valid",
        "refcount_warn_saturate", "fortify_panic", "__fortify_panic", "__stack_chk_fail",
        # the compiler's and the kernel's own plumbing
        "__fentry__", "__x86_return_thunk", "__preempt_count",
        "__might_sleep", "__might_fault", "__might_resched", "__cond_resched",
        "__SCT__cond_resched", "__SCT__might_resched", "__SCT__preempt_schedule",
        "__SCT__preempt_schedule_notrace", "preempt_schedule", "preempt_schedule_notrace",
        "preempt_count_add", "preempt_count_sub",
    }
)  # fmt: skip
# Sanitizer and coverage hooks: KASAN adds one per new memory access.
ALLOWED_PREFIXES = ("__asan_", "__kasan_", "__ubsan_handle_", "__sanitizer_cov_", "__tsan_")

# What no fix imports anew; named in the reason (a symbol on neither list is refused too).
NEVER_CLASSES: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (name, re.compile(rx))
    for name, rx in (
        ("file I/O", r"^(filp_|file_open|kernel_read|kernel_write|__kernel_write|vfs_|"
         r"kern_path|dentry_open|do_sys_open|ksys_|fput|fget|__fput|d_path|file_path|"
         r"kernel_file_open|user_path|lookup_one|iterate_dir|filemap_|init_)"),
        ("restart or reboot", r"(restart|reboot|power_?off|halt|^panic$|kexec|^emergency_)"),
        ("usermode helpers and module loading", r"^(call_usermodehelper|__request_module|"
         r"request_module|usermodehelper|kernel_execve|fork_usermode)"),
        ("symbol and module lookups", r"(kallsyms|^__?symbol_(get|put)|^find_symbol|kprobe|"
         r"^find_module|^__module_|^sprint_symbol|^module_put|^try_module_get)"),
        ("signals and process exit", r"^(send_sig|kill_|force_sig|do_send_sig|__send_sig|"
         r"do_exit|do_group_exit|complete_and_exit|group_send_sig|__kill_pgrp)"),
        ("other tasks' memory and raw memory", r"^(access_process_vm|access_remote_vm|"
         r"get_user_pages|pin_user_pages|get_task_mm|get_pid_task|find_task_by|find_get_pid|"
         r"find_vpid|pid_task|init_task|copy_to_kernel_nofault|"
         r"copy_from_kernel_nofault|_copy_to_user|__put_user|vm_mmap|remap_pfn|ioremap|"
         r"memremap|set_memory_|text_poke|page_offset_base|vmalloc_base|phys_base)"),
        ("deferred work and threads", r"^(kthread_|kernel_thread|queue_|schedule_work|"
         r"schedule_delayed_work|mod_timer|add_timer|timer_setup|init_timer|call_rcu|"
         r"system_\w*wq|tasklet_|__tasklet_|irq_work|stop_machine|on_each_cpu|smp_call)"),
        ("indirect calls", r"^(__x86_indirect_thunk_|__x86_indirect_call_thunk|"
         r"__SCT__(?!(cond_resched|might_resched|preempt_schedule|preempt_schedule_notrace)$))"),
    )
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class Tamper:
    """Why a candidate's built code is refused: `what` is the symbol, `insn:<mnemonic>`,
    `indirect-branch`, `raw-address` or `asm`."""

    what: str
    why: str

    @property
    def label(self) -> str:
        return f"tamper:{self.what}"

    def __str__(self) -> str:
        return f"{self.label}: {self.why}"


def never_class(symbol: str) -> str | None:
    """The class of things no fix imports that `symbol` belongs to, if one names it."""
    for name, rx in NEVER_CLASSES:
        if rx.search(symbol):
            return name
    return None


def allowed(symbol: str) -> bool:
    return symbol in ALLOWED_IMPORTS or symbol.startswith(ALLOWED_PREFIXES)


# ------------------------------------------------------------------------------ ELF symbols


def undefined_symbols(data: bytes) -> set[str]:
    """The undefined symbols of an x86-64 relocatable ELF (a `.o` or a `.ko`): what it imports.
    Parsed here rather than by nm: the bytes are candidate-made. ValueError: not such an
    object (gcc never makes one that fails here)."""
    return elf_symbols(data)[0]


def elf_symbols(data: bytes) -> tuple[set[str], set[str]]:
    """(undefined symbols, defined function symbols) of an x86-64 relocatable ELF."""
    elf = read_elf(data)
    return elf.undefined, elf.functions


def import_problem(pristine: set[str], candidate: set[str], where: str) -> Tamper | None:
    """The new imports of `candidate` that are neither the pristine object's nor allowed, or
    None. Named by the most telling one: the first that a class of NEVER_CLASSES names."""
    refused = sorted(s for s in candidate - pristine if not allowed(s))
    if not refused:
        return None
    named = [s for s in refused if never_class(s)]
    symbol = (named or refused)[0]
    kind = never_class(symbol)
    because = f" ({kind})" if kind else ""
    others = [s for s in refused if s != symbol]
    also = f"; also new: {', '.join(others[:12])}" if others else ""
    return Tamper(
        symbol,
        f"the patch makes {where} import {symbol}{because}, which the unpatched build does "
        f"not use and the allow-list does not hold (docs/kernel-gym.md, What a patch is made "
        f"of){also}",
    )


# ------------------------------------------------------------------------------ instructions

# Instructions no fix adds: port I/O (the serial console, QEMU's exit ports), MSRs, system
# calls and interrupts from the kernel, descriptor tables, TLB/cache control, hypercalls,
# user-memory access windows.
SENSITIVE = re.compile(
    r"^(in[bwl]?|out[bwl]?|ins[bwld]|outs[bwld]|wrmsr\w*|rdmsr\w*|"
    r"syscall|sysenter|sysexit\w*|sysret\w*|int|into|int1|icebp|iret\w*|lret\w*|ljmp\w*|"
    r"lcall\w*|hlt|lgdt\w*|lidt\w*|lldt|ltr|lmsw|clts|invlpg\w*|invpcid|wbinvd|wbnoinvd|"
    r"invd|swapgs|vmcall|vmmcall|vmlaunch|vmresume|vmread|vmwrite|vmxon|vmxoff|vmfunc|"
    r"vmrun|vmload|vmsave|vmptrld|vmclear|xsetbv|wrpkru|wr[fg]sbase|stac|clac|encl[su]|"
    r"tdcall|seamcall)$"
)
_PREFIXES = frozenset(
    "rep repz repe repnz repne lock notrack bnd cs ds es fs gs ss data16 addr32 rex rex.W "
    "xacquire xrelease".split()
)
_CONTROL_REG = re.compile(r"%(cr|db|dr)\d")
_HEX64 = re.compile(r"0x[0-9a-f]{16}\b")
# "<offset>: R_X86_64_<type>\t<symbol>[+-addend]" beside its instruction (objdump -w).
_RELOC = re.compile(r"R_X86_64_(\w+)\s+([^\s+-]+)")
_ABS_RELOC = re.compile(r"\*ABS\*([+-])0x([0-9a-f]+)")
# Kernel and module address space, without the top 16 MiB where small negative numbers
# (-EINVAL, masks) live.
_KERNEL_LO, _KERNEL_HI = 0xFFFF800000000000, 0xFFFFFFFFFF000000


@dataclass(slots=True)
class Profile:
    """What one object's code contains of the things a fix never adds."""

    sensitive: Counter[str] = field(default_factory=Counter)
    indirect: int = 0
    addresses: set[int] = field(default_factory=set)
    # Symbols and sections whose address the code takes (`mov $sym`, `lea sym(%rip)`), as
    # opposed to calling them or loading from them.
    taken: Counter[str] = field(default_factory=Counter)
    # Where instructions start, per code section, and the direct branches' targets.
    starts: dict[str, set[int]] = field(default_factory=dict)
    branches: list[tuple[str, int]] = field(default_factory=list)


def _instruction(line: str) -> tuple[int, str, str] | None:
    """(offset, mnemonic, operands) of one `objdump -d --no-show-raw-insn` line."""
    parts = line.split("\t")
    if len(parts) < 2 or not re.match(r"^\s*[0-9a-f]+:$", parts[0]):
        return None
    words = parts[1].split()
    while words and words[0] in _PREFIXES:
        words = words[1:]
    if not words:
        return None
    return int(parts[0].strip()[:-1], 16), words[0], " ".join(words[1:])


_SECTION = re.compile(r"^Disassembly of section (\S+):$")
_BRANCH_TARGET = re.compile(r"^([0-9a-f]+) <")


def profile(disassembly: str) -> Profile:
    """Read `objdump -dr --no-show-raw-insn -w` output."""
    prof = Profile()
    section = ""
    for line in disassembly.splitlines():
        if m := _SECTION.match(line):
            section = m.group(1)
            continue
        # A relocation against an absolute symbol is a raw address (`call 0xffffffff8...`
        # in assembly): objdump prints it as *ABS*+addend, beside the instruction (-w).
        for sign, value in _ABS_RELOC.findall(line):
            addend = int(value, 16) * (-1 if sign == "-" else 1)
            prof.addresses |= _kernel_addresses(f"{addend % (1 << 64):#018x}")
        insn = _instruction(line)
        if insn is None:
            continue
        offset, mnemonic, operands = insn
        prof.starts.setdefault(section, set()).add(offset)
        reloc = _RELOC.search(line)
        # A branch the assembler resolved (no relocation: objdump's target of one with a
        # relocation is only the next instruction's address).
        if (
            reloc is None
            and mnemonic.startswith(("j", "call", "loop", "xbegin"))
            and (target := _BRANCH_TARGET.match(operands))
        ):
            prof.branches.append((section, int(target.group(1), 16)))
        if reloc and mnemonic.rstrip("q") not in ("call", "jmp"):
            if operands.startswith("$") or mnemonic.startswith("lea"):
                prof.taken[reloc.group(2)] += 1
        if SENSITIVE.match(mnemonic) or (
            mnemonic.startswith("mov") and _CONTROL_REG.search(operands)
        ):
            prof.sensitive[mnemonic] += 1
        if mnemonic.rstrip("q") in ("call", "jmp") and operands.startswith("*"):
            prof.indirect += 1
        prof.addresses |= _kernel_addresses(operands)
    return prof


def misaligned(prof: Profile, targets: Iterable[tuple[str, int]] = ()) -> list[str]:
    """Branch targets, and code addresses stored in data (`targets`: section, offset), that
    fall inside an instruction as objdump decoded it. A compiler never makes one; assembly
    that hides an instruction inside another's bytes (`jmp 1f; .byte 0x48, 0xb8; 1: out`
    reads as one `movabs`) needs one, to reach what the disassembly does not show."""
    out = []
    for section, target in [*prof.branches, *targets]:
        starts = prof.starts.get(section)
        # up to the last instruction's end (an x86 instruction is at most 15 bytes)
        if starts and target not in starts and min(starts) < target < max(starts) + 15:
            out.append(f"{section}+{target:#x}")
    return out


def _kernel_addresses(text: str) -> set[int]:
    found = (int(h, 16) for h in _HEX64.findall(text))
    return {a for a in found if _KERNEL_LO <= a < _KERNEL_HI}


def instruction_problem(pristine: Profile, candidate: Profile, where: str) -> Tamper | None:
    for mnemonic, n in sorted(candidate.sensitive.items()):
        if n > pristine.sensitive[mnemonic]:
            return Tamper(
                f"insn:{mnemonic}",
                f"the patch adds `{mnemonic}` instructions to {where} (port I/O, MSR, system "
                "call, interrupt, hypercall or privileged-register instructions reach past "
                "what any import could)",
            )
    if candidate.indirect > pristine.indirect:
        return Tamper(
            "indirect-branch",
            f"the patch adds indirect calls or jumps to {where}: a call through a pointer "
            "can reach any kernel function without importing it",
        )
    new = sorted(candidate.addresses - pristine.addresses)
    if new:
        return Tamper(
            "raw-address",
            f"the patch adds the kernel address {new[0]:#x} as a constant to {where}: "
            "kernel functions and data are reached through imports, not fixed addresses",
        )
    return None


# Imported variables a fix may read and index (kmalloc's size-class table).
DATA_IMPORTS = frozenset({"kmalloc_caches", "__preempt_count"})


def address_problem(
    pristine: Profile, candidate: Profile, imports: set[str], functions: set[str], where: str
) -> Tamper | None:
    """Code that takes the address of a function (an import, or one of the object's own) more
    often than the pristine code. The address of `_printk` plus a constant is any kernel
    function, with no import and no constant that looks like an address; stored in an
    operations structure, the kernel itself makes the indirect call."""
    for target, n in sorted(candidate.taken.items()):
        if n <= pristine.taken[target]:
            continue
        code = target.startswith(".") and "text" in target
        if (target in imports and target not in DATA_IMPORTS) or target in functions or code:
            return Tamper(
                f"address-of:{target}",
                f"the patch takes the address of the function {target} in {where}'s code: "
                "with an offset added, a function's address is any kernel function",
            )
    return None


def _overlap_problem(
    before_p: Profile, after_p: Profile, elves: tuple[Elf | None, Elf], where: str
) -> Tamper | None:
    before, after = elves
    old = len(misaligned(before_p, code_targets(before))) if before else 0
    new = misaligned(after_p, code_targets(after))
    if len(new) <= old:
        return None
    return Tamper(
        "overlapping-code",
        f"{where} has a branch or a code pointer into the middle of an instruction "
        f"({new[0]}): instructions hidden inside others, which the disassembly does not show",
    )


def _pointer_problem(before: Elf | None, after: Elf, where: str) -> Tamper | None:
    old = set(stray_code_pointers(before, DATA_IMPORTS)) if before else set()
    new = [p for p in stray_code_pointers(after, DATA_IMPORTS) if p not in old]
    if not new:
        return None
    return Tamper(
        f"address-of:{new[0]}",
        f"the patch stores the pointer {new[0]} in {where}'s data: an offset from a function "
        "is any kernel function, and the kernel calls through operations structures",
    )


# Disassembly is of candidate-made bytes: objdump runs in the sandbox.
DISASSEMBLE_LIMITS = Limits(wall_s=300, memory_mb=2048, pids=16, output_bytes=256 << 20)


async def _disassemble(objects: Sequence[bytes]) -> list[str]:
    out: list[str] = []
    async with open_sandbox(GYM_BACKEND) as sb:
        for i, data in enumerate(objects):
            name = f"obj{i}.o"
            await sb.write_file(name, data)
            r = await sb.exec(
                ["objdump", "-dr", "--no-show-raw-insn", "-w", name], limits=DISASSEMBLE_LIMITS
            )
            if not r.ok or r.truncated:
                raise ValueError(f"objdump could not read object {i}: {r.status} {r.stderr[:300]}")
            out.append(r.stdout)
    return out


async def screen_object_pairs(
    pairs: Iterable[tuple[Path | None, Path]], *, label: str | None = None
) -> Tamper | None:
    """The first thing a candidate object gained that no fix adds, for (pristine, candidate)
    object pairs: a module's `.ko` against the unpatched module's, or each `.o` of a kernel
    tree that the patch changed against the pristine build's (None: a file the patch added,
    judged against nothing). `label` names the objects in the reason (default: the file)."""
    pairs = list(pairs)
    datas: list[bytes] = []
    for pristine, candidate in pairs:
        datas += [pristine.read_bytes() if pristine else b"", candidate.read_bytes()]
    symbols: list[tuple[set[str], set[str]]] = []
    elves: list[tuple[Elf | None, Elf]] = []
    for k, (_pristine, candidate) in enumerate(pairs):
        where = label or candidate.name
        try:
            before = read_elf(datas[2 * k]) if datas[2 * k] else None
            after = read_elf(datas[2 * k + 1])
            problem = import_problem(
                before.undefined if before else set(), after.undefined, where
            ) or _pointer_problem(before, after, where)
        except ValueError as exc:
            return Tamper("object", f"{where} is not an object gcc makes: {exc}")
        if problem:
            return problem
        symbols.append((after.undefined, after.functions))
        elves.append((before, after))
    texts = await _disassemble([d for d in datas if d])
    it = iter(texts)
    for k, (_pristine, candidate) in enumerate(pairs):
        where = label or candidate.name
        before_p = profile(next(it)) if datas[2 * k] else Profile()
        after_p = profile(next(it))
        problem = (
            _overlap_problem(before_p, after_p, elves[k], where)
            or instruction_problem(before_p, after_p, where)
            or address_problem(before_p, after_p, *symbols[k], where)
        )
        if problem:
            return problem
    return None


def changed_object_pairs(pristine_dir: Path, candidate_dir: Path) -> list[tuple[Path | None, Path]]:
    """(pristine, candidate) for every `.o` a candidate's build in `candidate_dir` (a scratch
    copy of the pristine build directory `pristine_dir`, mtimes kept) rebuilt or added: what
    `screen_object_pairs` judges for a kernel tree. A header change rebuilds many objects;
    each is compared with its own pristine object, so what the pristine code already held
    (the real-mode boot code's port I/O) is no finding. Links of objects (`vmlinux.o`,
    `.tmp_*` kallsyms objects) are not compiled from the patch and are left out."""
    pairs: list[tuple[Path | None, Path]] = []
    for obj in sorted(candidate_dir.rglob("*.o")):
        if obj.is_symlink() or not obj.is_file():
            continue
        if obj.name == "vmlinux.o" or obj.name.startswith(".tmp"):
            continue
        rel = obj.relative_to(candidate_dir)
        before = pristine_dir / rel
        if not before.is_file():
            pairs.append((None, obj))
            continue
        a, b = before.stat(), obj.stat()
        if (a.st_size, a.st_mtime_ns) == (b.st_size, b.st_mtime_ns):
            continue  # untouched by make: the copy's own metadata
        if a.st_size != b.st_size or before.read_bytes() != obj.read_bytes():
            pairs.append((before, obj))
    return pairs


_ASM = re.compile(r"\b(asm|__asm|__asm__)\b|\.incbin|\.byte\b")
# Builtins that hand code kernel addresses without an import: the return address points
# into the kernel function that called the module, and an offset from it is any function.
_ADDRESS_BUILTINS = re.compile(
    r"\b__builtin_(return_address|frame_address|extract_return_addr|stack_address)\b"
)


def added_asm(patch_text: str) -> Tamper | None:
    """Inline assembly, and the builtins that reveal kernel addresses, in the lines a patch
    adds. A text screen is weak (a macro can spell `__asm__` by token pasting): the object
    screen is what decides, this only names the obvious cases early and plainly; a
    pasted-together builtin is one of the limits docs/kernel-gym.md lists."""
    for line in patch_text.splitlines():
        if not line.startswith("+") or line.startswith("+++"):
            continue
        code = line[1:].strip()[:80]
        if _ASM.search(line):
            return Tamper("asm", f"the patch adds inline assembly ({code!r}): a fix is C")
        if m := _ADDRESS_BUILTINS.search(line):
            return Tamper(
                f"builtin:{m.group(1)}",
                f"the patch reads a kernel address with __builtin_{m.group(1)} ({code!r})",
            )
    return None
