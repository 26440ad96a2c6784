"""QEMU backend: boot a kernel + initramfs with no network and a captured serial console.

result = await run_vm(VMSpec(kernel="vmlinux", initrd="root.cpio", wall_s=60))
result.status      # exited | stopped | no_output | hang | wall_timeout | output_limit | lost_connection
result.console     # the serial console text (capped)
"""

from sandboxes.qemu.image import (
    CpioEntry,
    build_initramfs,
    busybox_path,
    extract_vmlinux,
    write_cpio,
)
from sandboxes.qemu.vm import (
    Accel,
    VMResult,
    VMSpec,
    VMStatus,
    choose_accel,
    measure_accels,
    qemu_available,
    run_vm,
    run_vm_sync,
)

__all__ = [
    "Accel",
    "CpioEntry",
    "VMResult",
    "VMSpec",
    "VMStatus",
    "build_initramfs",
    "busybox_path",
    "choose_accel",
    "extract_vmlinux",
    "measure_accels",
    "qemu_available",
    "run_vm",
    "run_vm_sync",
    "write_cpio",
]
