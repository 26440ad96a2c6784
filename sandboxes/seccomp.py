"""A seccomp filter for payloads, built with libseccomp through ctypes and handed to bwrap
as a BPF program (``--seccomp FD``).

The filter allows by default and denies (EPERM, or ENOSYS for clone3 so glibc falls back to
clone, where the flags can be inspected) the calls that only an escape attempt needs: the
terminal-injection ioctls (TIOCSTI, TIOCLINUX), ptrace, mounts, new namespaces, keyrings,
kernel modules, BPF, perf, userfaultfd, io_uring. libseccomp kills a process that calls in
through a foreign ABI (int 0x80 / x32), so the rules cannot be bypassed that way.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import functools
import logging
import os

log = logging.getLogger(__name__)

_SCMP_ACT_ALLOW = 0x7FFF0000
_SCMP_CMP_MASKED_EQ = 7


def _act_errno(code: int) -> int:
    return 0x00050000 | (code & 0xFFFF)


class _ArgCmp(ctypes.Structure):
    _fields_ = (
        ("arg", ctypes.c_uint),
        ("op", ctypes.c_int),
        ("datum_a", ctypes.c_uint64),
        ("datum_b", ctypes.c_uint64),
    )


TIOCSTI = 0x5412
TIOCLINUX = 0x541C
_NS_FLAGS = {
    "CLONE_NEWNS": 0x00020000,
    "CLONE_NEWCGROUP": 0x02000000,
    "CLONE_NEWUTS": 0x04000000,
    "CLONE_NEWIPC": 0x08000000,
    "CLONE_NEWUSER": 0x10000000,
    "CLONE_NEWPID": 0x20000000,
    "CLONE_NEWNET": 0x40000000,
}

DENIED_SYSCALLS: tuple[str, ...] = (
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "mount",
    "umount2",
    "pivot_root",
    "move_mount",
    "open_tree",
    "fsopen",
    "fsmount",
    "fsconfig",
    "unshare",
    "setns",
    "keyctl",
    "add_key",
    "request_key",
    "bpf",
    "perf_event_open",
    "userfaultfd",
    "io_uring_setup",
    "io_uring_enter",
    "io_uring_register",
    "kexec_load",
    "kexec_file_load",
    "init_module",
    "finit_module",
    "delete_module",
    "swapon",
    "swapoff",
    "reboot",
    "acct",
    "quotactl",
    "lookup_dcookie",
    "syslog",
)


@functools.cache
def _lib() -> ctypes.CDLL | None:
    name = ctypes.util.find_library("seccomp")
    if not name:
        return None
    try:
        lib = ctypes.CDLL(name, use_errno=True)
    except OSError:
        return None
    lib.seccomp_init.restype = ctypes.c_void_p
    lib.seccomp_init.argtypes = (ctypes.c_uint32,)
    lib.seccomp_syscall_resolve_name.restype = ctypes.c_int
    lib.seccomp_syscall_resolve_name.argtypes = (ctypes.c_char_p,)
    lib.seccomp_rule_add_array.restype = ctypes.c_int
    lib.seccomp_rule_add_array.argtypes = (
        ctypes.c_void_p,
        ctypes.c_uint32,
        ctypes.c_int,
        ctypes.c_uint,
        ctypes.POINTER(_ArgCmp),
    )
    lib.seccomp_export_bpf.restype = ctypes.c_int
    lib.seccomp_export_bpf.argtypes = (ctypes.c_void_p, ctypes.c_int)
    lib.seccomp_release.restype = None
    lib.seccomp_release.argtypes = (ctypes.c_void_p,)
    return lib


def _add(lib: ctypes.CDLL, ctx: int, action: int, name: str, *cmps: _ArgCmp) -> None:
    nr = lib.seccomp_syscall_resolve_name(name.encode())
    if nr < 0:  # not a syscall on this architecture (e.g. an old one): nothing to deny
        return
    arr = (_ArgCmp * max(1, len(cmps)))(*cmps)
    rc = lib.seccomp_rule_add_array(ctx, action, nr, len(cmps), arr)
    if rc < 0:
        raise OSError(-rc, f"seccomp_rule_add({name}) failed")


def _masked(arg: int, mask: int, value: int) -> _ArgCmp:
    return _ArgCmp(arg, _SCMP_CMP_MASKED_EQ, mask, value)


@functools.cache
def filter_bpf() -> bytes | None:
    """The compiled BPF program, or None where libseccomp cannot be loaded (the caller then
    reports ``limits_enforced["seccomp"] = False``). Built once per process."""
    lib = _lib()
    if lib is None:
        return None
    ctx = lib.seccomp_init(_SCMP_ACT_ALLOW)
    if not ctx:
        return None
    eperm = _act_errno(errno.EPERM)
    try:
        for name in DENIED_SYSCALLS:
            _add(lib, ctx, eperm, name)
        # Terminal injection: the ioctl request is arg 1; compare its low 32 bits only.
        for req in (TIOCSTI, TIOCLINUX):
            _add(lib, ctx, eperm, "ioctl", _masked(1, 0xFFFFFFFF, req))
        # clone3 passes flags in memory that seccomp cannot read: make glibc fall back to
        # clone(2), whose namespace flags are checked one by one.
        _add(lib, ctx, _act_errno(errno.ENOSYS), "clone3")
        for flag in _NS_FLAGS.values():
            _add(lib, ctx, eperm, "clone", _masked(0, flag, flag))
        rfd, wfd = os.pipe()
        try:
            rc = lib.seccomp_export_bpf(ctx, wfd)
            os.close(wfd)
            wfd = -1
            if rc < 0:
                raise OSError(-rc, "seccomp_export_bpf failed")
            chunks = []
            while chunk := os.read(rfd, 65536):
                chunks.append(chunk)
            return b"".join(chunks)
        finally:
            os.close(rfd)
            if wfd >= 0:
                os.close(wfd)
    except OSError as exc:
        log.warning("seccomp filter unavailable: %s", exc)
        return None
    finally:
        lib.seccomp_release(ctx)


def filter_fd() -> int | None:
    """A fresh readable fd holding the filter (bwrap consumes it); the caller closes it."""
    prog = filter_bpf()
    if prog is None:
        return None
    fd = os.memfd_create("codegen-seccomp", os.MFD_CLOEXEC)
    os.write(fd, prog)
    os.lseek(fd, 0, os.SEEK_SET)
    return fd
