"""Runner glue: pack module + reproducer into an initramfs, boot, run the reproducer K times,
read the crash from the console.

The guest's /init prints fixed markers (KGYM-BOOTED, KGYM-RUN i, KGYM-RUN-END i rc=N,
KGYM-DONE <nonce>); the nonce is fresh per boot, so "the reproducer finished K times and the
kernel was still alive" needs a token no patch written beforehand can know.

A candidate kernel patch runs in that kernel, though, and kernel code can read the nonce from
`/init`. What keeps it from forging the markers is where they travel: /init writes them to the
console through the tty, each alone on its line, and the kernel's own messages reach the same
serial line only through printk, which starts every line with a timestamp (`printk.time=1`
on the command line): a marker is read only at the start of a line, so a printed one is no
marker. Writing the serial port without printk takes what the object screen refuses before
the VM boots (imports.py: file I/O on /dev/console or the tty, port I/O instructions, calls
through pointers or fixed addresses); docs/kernel-gym.md lists what it cannot see.
"""

from __future__ import annotations

import asyncio
import re
import secrets
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from codegen_eval.kernelgym.crash import CrashReport, parse_console
from sandboxes.qemu import VMResult, VMSpec, VMStatus, build_initramfs, run_vm

# Detectors made fatal and quick enough for a benchmark, slow enough not to fire by accident on
# a loaded host (TCG guest time follows the host clock: a starved VM looks "stuck").
DETECTOR_CMDLINE = (
    "panic_on_warn=1 hung_task_panic=1 softlockup_panic=1 watchdog_thresh=4 "
    "sysctl.kernel.hung_task_timeout_secs=5 nmi_watchdog=0 printk.devkmsg=on"
    # Every line printk writes starts with "[    1.234567] ": see the module docstring.
    " printk.time=1"
)


@dataclass(slots=True)
class ReproConfig:
    runs: int = 3  # reproducer executions per boot (K)
    repro_timeout_s: float = 20.0
    accel: str = "auto"
    memory_mb: int = 512
    cpus: int = 1
    boot_wall_s: float = 60.0  # budget for boot + module load, added to K * repro_timeout_s
    hang_s: float = 25.0
    extra_cmdline: str = ""


@dataclass(slots=True)
class ReproResult:
    vm: VMResult
    crashes: list[CrashReport] = field(default_factory=list)
    booted: bool = False
    module_loaded: bool = True
    completed_runs: int = 0
    finished: bool = False  # all K runs done and the kernel alive (nonce seen)
    guest_boot_s: float | None = None  # guest uptime when /init started
    # The reproducer's exit code per run, and the lines where a bundled reproducer says the
    # module no longer does its job (KGYM-FUNC-FAIL, exit code FUNCTION_BROKEN_RC).
    exit_codes: list[int] = field(default_factory=list)
    function_failures: list[str] = field(default_factory=list)

    @property
    def boot_s(self) -> float | None:
        """Wall time from QEMU start to /init: host time to first output + guest uptime."""
        if self.guest_boot_s is None or self.vm.first_output_s is None:
            return None
        return self.vm.first_output_s + self.guest_boot_s

    @property
    def crash(self) -> CrashReport | None:
        return self.crashes[0] if self.crashes else None

    @property
    def console(self) -> str:
        return self.vm.console

    def excerpt(self, lines: int = 80) -> str:
        """What an agent should read: the crash report, else the tail of the console."""
        if self.crash:
            return "\n".join(self.crash.report.splitlines()[:lines])
        return "\n".join(self.vm.console.splitlines()[-lines:])


# A bundled reproducer that also checks the module's behaviour exits with this code (and
# prints a KGYM-FUNC-FAIL line) when a command that must work did not: a "fix" that makes the
# module refuse everything runs clean, but it is not a fix.
FUNCTION_BROKEN_RC = 42


def init_script(runs: int, repro_timeout_s: float, nonce: str, with_module: bool) -> str:
    module = (
        'busybox insmod /lib/modules/bug.ko || echo "KGYM-INSMOD-FAILED"\n' if with_module else ""
    )
    return f"""#!/bin/sh
export PATH=/bin:/sbin
busybox mount -t proc proc /proc
busybox mount -t sysfs sys /sys
busybox mount -t devtmpfs dev /dev 2>/dev/null
busybox mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
echo "KGYM-BOOTED uptime=$(busybox cut -d' ' -f1 /proc/uptime)"
{module}i=1
while [ $i -le {runs} ]; do
  echo "KGYM-RUN $i"
  busybox timeout {int(repro_timeout_s)} /bin/repro
  rc=$?
  # On a line of its own even after output that did not end one.
  printf '\nKGYM-RUN-END %s rc=%s\n' $i $rc
  i=$((i+1))
done
printf '\nKGYM-DONE %s\n' {nonce}
busybox reboot -f
"""


def _marker(text: str) -> str:
    """A marker's regex: only at the start of a line (printk's lines start with a timestamp)."""
    return rf"(?m)^{text}\r?$"


@dataclass(slots=True)
class Markers:
    booted: bool
    guest_boot_s: float | None
    module_loaded: bool
    exit_codes: list[int]
    done: bool  # this boot's KGYM-DONE <nonce>


def parse_markers(console: str, nonce: str) -> Markers:
    """What /init's markers say, read only where printk cannot write them."""
    up = re.search(r"(?m)^KGYM-BOOTED uptime=([\d.]+)\r?$", console)
    return Markers(
        booted=up is not None,
        guest_boot_s=float(up.group(1)) if up else None,
        module_loaded=re.search(_marker("KGYM-INSMOD-FAILED"), console) is None,
        exit_codes=[int(rc) for rc in re.findall(_marker(r"KGYM-RUN-END \d+ rc=(\d+)"), console)],
        done=re.search(_marker(f"KGYM-DONE {nonce}"), console) is not None,
    )


def _initramfs(tmp: Path, repro: Path, module: Path | None, script: str) -> Path:
    files: dict[str, bytes] = {"bin/repro": repro.read_bytes()}
    if module is not None:
        files["lib/modules/bug.ko"] = module.read_bytes()
    return build_initramfs(tmp / "initramfs.cpio", script, files)


async def run_reproducer(
    kernel: Path,
    repro: Path,
    module: Path | None = None,
    config: ReproConfig | None = None,
    *,
    log_path: Path | None = None,
) -> ReproResult:
    cfg = config or ReproConfig()
    nonce = secrets.token_hex(8)
    with tempfile.TemporaryDirectory(prefix="kgym-run-") as tmp:
        initrd = await asyncio.to_thread(
            _initramfs,
            Path(tmp),
            repro,
            module,
            init_script(cfg.runs, cfg.repro_timeout_s, nonce, module is not None),
        )
        spec = VMSpec(
            kernel=kernel,
            initrd=initrd,
            cmdline=f"{DETECTOR_CMDLINE} {cfg.extra_cmdline}".strip(),
            memory_mb=cfg.memory_mb,
            cpus=cfg.cpus,
            accel=cfg.accel,
            wall_s=cfg.boot_wall_s + cfg.runs * (cfg.repro_timeout_s + 2),
            no_output_s=30.0,
            hang_s=cfg.hang_s,
            panic_on_oops=True,
            panic_on_warn=True,
            log_path=log_path,
            # After a report the kernel panics and reboots; cap the wait if it does not.
            stop_patterns=(r"Kernel panic - not syncing", _marker(f"KGYM-DONE {nonce}")),
            stop_grace_s=5.0,
        )
        vm = await run_vm(spec)
    return run_result(vm, nonce)


def run_result(vm: VMResult, nonce: str) -> ReproResult:
    """Read one boot's console: crashes, and the markers of this boot's /init."""
    console = vm.console
    marks = parse_markers(console, nonce)
    return ReproResult(
        vm=vm,
        crashes=parse_console(console),
        booted=marks.booted,
        module_loaded=marks.module_loaded,
        completed_runs=len(marks.exit_codes),
        guest_boot_s=marks.guest_boot_s,
        exit_codes=marks.exit_codes,
        function_failures=re.findall(r"KGYM-FUNC-FAIL[^\r\n]*", console)[:8],
        finished=marks.done and vm.status in (VMStatus.EXITED, VMStatus.STOPPED),
    )
