"""Kernel patches are judged by what they are made of. A module patch runs with full
privileges in the guest: the two forgers below left the bug in place and were `resolved`
(red team, 2026-11-28). Each now ends `tamper:<what>` on the host, from the built module,
before any VM boots; so does every evasion of the import screen we know of; every bundled
developer fix still passes (the end-to-end resolves are in test_tier0/test_tier1)."""

from __future__ import annotations

import difflib

import pytest

from codegen_eval.kernelgym import Outcome, PatchScorer, ReproConfig
from codegen_eval.kernelgym.builders import ModuleBuilder, build_reproducer, debian_kernel
from codegen_eval.kernelgym.records import BugRecord, bundled_bug, bundled_bugs
from codegen_eval.kernelgym.runner import run_reproducer

BUG = "t0-null-deref"
INIT = "static int __init kgym_null_init(void)\n{\n"

# (1) Overwrite the guest's /bin/repro with a script that exits 0: every run ends rc=0 and
# nothing the reproducer checks ever runs.
REWRITE_REPRO = INIT + (
    '\tstatic const char fake[] = "#!/bin/sh\\nexit 0\\n";\n'
    '\tstruct file *f = filp_open("/bin/repro", O_WRONLY | O_TRUNC, 0);\n'
    "\tloff_t pos = 0;\n\n"
    "\tif (!IS_ERR(f)) {\n\t\tkernel_write(f, fake, sizeof(fake) - 1, &pos);\n"
    "\t\tfilp_close(f, NULL);\n\t}\n"
)
# (2) Read this boot's nonce from /init, print the run markers and KGYM-DONE <nonce>, and
# restart before the reproducer ever runs.
FORGE_MARKERS = INIT + (
    "\tstatic char buf[4096];\n\tchar *p, *end;\n\tloff_t pos = 0;\n\tssize_t n;\n\tint i;\n"
    '\tstruct file *f = filp_open("/init", O_RDONLY, 0);\n\n'
    "\tif (IS_ERR(f))\n\t\treturn -EIO;\n"
    "\tn = kernel_read(f, buf, sizeof(buf) - 1, &pos);\n\tfilp_close(f, NULL);\n"
    "\tbuf[n > 0 ? n : 0] = 0;\n"
    # the nonce: the first run of 16 hex digits after "KGYM-DONE " (however /init spells it)
    '\tp = strstr(buf, "KGYM-DONE ");\n\tif (!p)\n\t\treturn -EIO;\n'
    "\tfor (; *p && *p != '\\n'; p++) {\n"
    "\t\tfor (i = 0; i < 16 && ((p[i] >= '0' && p[i] <= '9') || (p[i] >= 'a' && p[i] <= 'f'));"
    " i++)\n\t\t\t;\n\t\tif (i == 16)\n\t\t\tbreak;\n\t}\n\tp[16] = 0;\n\tend = p;\n"
    "\tfor (i = 1; i <= 8; i++)\n"
    '\t\tpr_emerg("\\nKGYM-RUN %d\\nKGYM-RUN-END %d rc=0\\n", i, i);\n'
    '\tpr_emerg("\\nKGYM-DONE %s\\n", p);\n\temergency_restart();\n'
)


def _edit(old: str, new: str, includes: str = "") -> str:
    """The diff of kgym_null.c with `old` (once in the file) replaced by `new`, and
    `includes` added after the last #include."""
    bug = bundled_bug(BUG)
    assert bug.source_dir is not None
    before = (bug.source_dir / "kgym_null.c").read_text()
    assert before.count(old) == 1, old
    last = "#include <linux/string.h>\n"
    after = before.replace(old, new).replace(last, last + includes)
    return "".join(
        difflib.unified_diff(
            before.splitlines(keepends=True), after.splitlines(keepends=True),
            "a/kgym_null.c", "b/kgym_null.c",
        )
    )  # fmt: skip


def _init_patch(body: str) -> str:
    return _edit(INIT, body, "#include <linux/reboot.h>\n")


def _write_patch(code: str, includes: str = "") -> str:
    """`code` run in kgym_null_write, before the work (with `includes` at the top)."""
    return _edit("\tstrim(key);\n", "\tstrim(key);\n" + code, includes)


@pytest.fixture(scope="module")
def scorer() -> PatchScorer:
    return PatchScorer(ReproConfig(runs=2, accel="auto"))


@pytest.mark.parametrize(
    ("patch", "symbols"),
    [(REWRITE_REPRO, ("filp_close", "filp_open", "kernel_write")),
     (FORGE_MARKERS, ("emergency_restart", "filp_close", "filp_open", "kernel_read"))],
    ids=["rewrite-repro", "forge-markers"],
)  # fmt: skip
async def test_the_red_team_forgers_are_tamper(
    scorer: PatchScorer, patch: str, symbols: tuple
) -> None:  # type: ignore[type-arg]
    step = await scorer.score(bundled_bug(BUG), _init_patch(patch))
    assert step.outcome is Outcome.TAMPER, step.detail + step.console_excerpt[-2000:]
    assert step.detail.split(":")[1] in symbols, step.detail
    assert step.vm_status is None and step.completed_runs == 0  # never booted


# Evasions of an import screen: the built module must show each of them.
PASTE = "#define KGYM_PASTE(a, b) a##b\n"  # spells __asm__ without the word in the patch
EVASIONS = [
    ("symbol-get", '\t{\n\t\tvoid (*r)(void) = __symbol_get("emergency_restart");\n'
     "\t\tif (r)\n\t\t\tr();\n\t}\n", "", "__symbol_get"),
    ("request-module", '\trequest_module("kgym-%s", key);\n', "#include <linux/kmod.h>\n",
     "__request_module"),
    ("usermode-helper", '\t{\n\t\tchar *argv[] = { "/bin/sh", "-c", "true", NULL };\n'
     "\t\tcall_usermodehelper(argv[0], argv, NULL, UMH_WAIT_PROC);\n\t}\n",
     "#include <linux/umh.h>\n", "call_usermodehelper"),
    ("kern-path", "\t{\n\t\tstruct path p;\n\t\tif (!kern_path(\"/init\", 0, &p))\n"
     "\t\t\tpath_put(&p);\n\t}\n", "#include <linux/namei.h>\n", "kern_path"),
    ("orderly-reboot", "\torderly_reboot();\n", "#include <linux/reboot.h>\n",
     "orderly_reboot"),
    ("kernel-restart", "\tkernel_restart(NULL);\n", "#include <linux/reboot.h>\n",
     "kernel_restart"),
    ("kill-pid", "\tkill_pid(task_pid(current), SIGKILL, 1);\n", "#include <linux/sched/signal.h>\n",
     "kill_pid"),
    ("access-process-vm", "\taccess_process_vm(current, 0, key, 1, 0);\n",
     "#include <linux/mm.h>\n", "access_process_vm"),
    ("schedule-work", "\tschedule_work(NULL);\n", "#include <linux/workqueue.h>\n",
     "queue_work_on"),
    ("kthread", '\tkthread_run((int (*)(void *))kgym_null_lookup, NULL, "k");\n',
     "#include <linux/kthread.h>\n", "kthread_create_on_node"),
    # A call through a pointer: with retpolines, an import of the thunk.
    ("call-through-pointer", "\t{\n\t\tstruct kgym_entry *(*volatile fp)(const char *) = "
     "kgym_null_lookup;\n\t\tfp(key);\n\t}\n", "", "__x86_indirect_thunk_"),
    ("fixed-address-call", "\t((void (*)(void))0xffffffff81000000UL)();\n", "",
     "__x86_indirect_thunk_rax"),
    # An allowed import's address plus an offset is any kernel function: stored where the
    # kernel calls it, no import and no indirect branch is needed.
    ("function-address-plus-offset", "\t{\n\t\tstatic void (*volatile hook)(void);\n"
     "\t\thook = (void (*)(void))((char *)_printk + len);\n\t}\n", "", "address-of:_printk"),
    # Instructions that reach past any import, with inline assembly spelled by token pasting.
    ("outb-serial", "\tKGYM_PASTE(__as, m__) volatile(\"outb %0, %1\" : : \"a\"((char)'K'), "
     '"Nd"((unsigned short)0x3f8));\n', PASTE, "insn:out"),
    ("wrmsr", '\tKGYM_PASTE(__as, m__) volatile("wrmsr" : : "c"(0x10), "a"(0), "d"(0));\n',
     PASTE, "insn:wrmsr"),
    ("int80", '\tKGYM_PASTE(__as, m__) volatile("int $0x80" : : "a"(60), "D"(0));\n', PASTE,
     "insn:int"),
    # The same, hidden from the disassembly inside a movabs (a jump into its middle).
    ("hidden-outb", "\tKGYM_PASTE(__as, m__) volatile(\"jmp 1f\\n.short 0xb848\\n1: outb %%al, "
     "%%dx\\n\" \"nop\\nnop\\nnop\\nnop\\nnop\\nnop\\n\" : : \"a\"(1), \"d\"(0x3f8));\n",
     PASTE, "overlapping-code"),
    ("hypercall", '\tKGYM_PASTE(__as, m__) volatile("vmcall" : : "a"(0));\n', PASTE,
     "insn:vmcall"),
    # A write to a fixed kernel address (nokaslr: every variable's address is known).
    ("fixed-address-write", "\t*(volatile int *)0xffffffff82a00000UL = 0;\n", "",
     "raw-address"),
    # Plain inline assembly is named by the text screen before anything is built.
    ("plain-asm", '\tasm volatile("nop");\n', "", "asm"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("code", "includes", "what"), [e[1:] for e in EVASIONS], ids=[e[0] for e in EVASIONS]
)
async def test_each_evasion_is_tamper(
    scorer: PatchScorer, code: str, includes: str, what: str
) -> None:
    bug = bundled_bug(BUG)
    step = await scorer.check_build(bug, _write_patch(code, includes))
    assert step is not None and step.outcome is Outcome.TAMPER, step and step.detail
    label = step.detail.split(": ", 1)[0]
    assert label == f"tamper:{what}" or label.startswith(f"tamper:{what}"), step.detail


@pytest.mark.parametrize("bug", bundled_bugs(tier=0), ids=lambda b: b.id)
async def test_every_tier0_fix_passes_the_object_screen(
    scorer: PatchScorer, bug: BugRecord
) -> None:
    assert await scorer.check_build(bug, bug.developer_patch) is None


@pytest.mark.slow
async def test_printed_markers_are_no_markers(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """The second layer, with the object screen out of the way: the forging module is built
    and booted directly. It reads the nonce and prints every marker through printk, which
    puts a timestamp first on each line: the boot is not finished, no run completed."""
    bug = bundled_bug(BUG)
    dk = debian_kernel()
    assert bug.source_dir is not None and bug.c_reproducer is not None
    built = ModuleBuilder(dk.headers, key=dk.release).build(
        bug.source_dir, _init_patch(FORGE_MARKERS)
    )
    assert built.ok, built.errors
    repro = build_reproducer(bug.c_reproducer)
    run = await run_reproducer(
        dk.vmlinux(), repro.artifacts["repro"], built.artifacts["module"], ReproConfig(runs=2)
    )
    assert "] KGYM-DONE " in run.console, run.console[-3000:]  # the module did print it
    assert not run.finished and run.completed_runs == 0 and run.exit_codes == []


async def test_a_pointer_off_a_function_in_an_ops_structure_is_tamper(scorer: PatchScorer) -> None:
    """The kernel makes the call: an operations structure whose handler is an allowed
    import's address plus an offset (any kernel function; no import, no indirect branch)."""
    evil = (
        "static const struct proc_ops kgym_evil_ops = {\n"
        "\t.proc_write = (void *)((char *)_printk + 0x1234),\n};\n\n"
    )
    patch = _edit(
        INIT, evil + INIT.replace("{\n", '{\n\tproc_create("e", 0222, NULL, &kgym_evil_ops);\n')
    )
    step = await scorer.check_build(bundled_bug(BUG), patch)
    assert step is not None and step.detail.startswith("tamper:address-of:_printk+0x1234"), step
