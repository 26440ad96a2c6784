"""The payload seccomp filter: one list of rules (`RULES`), compiled two ways.

* For bwrap: built with libseccomp through ctypes and handed over as a BPF program
  (``--seccomp FD``), see `filter_bpf`.
* For docker: the same rules written as a seccomp profile (`docker_profile`), which runc
  compiles with the same libseccomp. One source of truth, so the two backends cannot drift.

The filter allows by default and denies the calls that only an escape attempt needs: the
terminal-injection ioctls (TIOCSTI, TIOCLINUX), ptrace, mounts, new namespaces, keyrings,
kernel modules, BPF, perf, userfaultfd, io_uring (whose requests, sockets included, bypass
seccomp), and sockets of any family but AF_UNIX, AF_INET, AF_INET6, AF_NETLINK and
AF_PACKET: AF_VSOCK is not network-namespaced (a payload could bind the machine's vsock
ports), and each rare family (AF_KEY, AF_ALG, AF_CAN, AF_BLUETOOTH, AF_TIPC, AF_RDS ...) is
kernel attack surface a payload would even load as a module on first use. clone3 gets
ENOSYS so glibc falls back to clone(2), whose namespace flags can be inspected. libseccomp
kills a process that calls in through a foreign ABI (int 0x80 / x32), so the rules cannot be
bypassed that way (the i386 socketcall(2) included).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import functools
import json
import logging
import os
import platform
from dataclasses import dataclass

log = logging.getLogger(__name__)

_SCMP_ACT_ALLOW = 0x7FFF0000
# libseccomp's enum scmp_compare, and the names docker's profile format gives them.
_CMP_CODES = {"GT": 6, "MASKED_EQ": 7}


def _act_errno(code: int) -> int:
    return 0x00050000 | (code & 0xFFFF)


class _ArgCmp(ctypes.Structure):
    _fields_ = (
        ("arg", ctypes.c_uint),
        ("op", ctypes.c_int),
        ("datum_a", ctypes.c_uint64),
        ("datum_b", ctypes.c_uint64),
    )


@dataclass(frozen=True, slots=True)
class Cmp:
    """One argument comparison: `arg op a [b]` in libseccomp's terms (MASKED_EQ: a is the
    mask, b the value)."""

    arg: int
    op: str
    a: int
    b: int = 0


@dataclass(frozen=True, slots=True)
class Rule:
    """Deny `syscall` with `errno_` when every comparison holds (none: always)."""

    syscall: str
    errno_: int
    cmps: tuple[Cmp, ...] = ()


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
    # ptrace's relatives: another process's descriptors and memory advice (same uid)
    "pidfd_getfd",
    "process_madvise",
    "mount",
    "umount2",
    "pivot_root",
    "move_mount",
    "open_tree",
    "fsopen",
    "fsmount",
    "fsconfig",
    "fspick",
    "mount_setattr",
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
    # Obsolete calls docker's default profile refused (legacy kernel code no toolchain needs;
    # those the architecture lacks are skipped).
    "uselib",
    "ustat",
    "sysfs",
    "_sysctl",
    "nfsservctl",
    "create_module",
    "get_kernel_syms",
    "query_module",
    "vm86",
    "vm86old",
)

# Socket families a payload may open (socket(2) and socketpair(2) arg 0): local, IP (empty
# in the sandbox's own network namespace), netlink (namespaced; glibc's getifaddrs and
# Open MPI use NETLINK_ROUTE) and packet (needs CAP_NET_RAW, which no payload has). Every
# other family gets EAFNOSUPPORT, as on a kernel built without it, so programs fall back.
AF_UNIX, AF_INET, AF_INET6, AF_NETLINK, AF_PACKET = 1, 2, 10, 16, 17
AF_VSOCK = 40
ALLOWED_FAMILIES: frozenset[int] = frozenset({AF_UNIX, AF_INET, AF_INET6, AF_NETLINK, AF_PACKET})
_LOW32 = 0xFFFFFFFF


def _family_rules(call: str) -> list[Rule]:
    top = max(ALLOWED_FAMILIES)
    # Anything above the highest allowed family, compared on the whole 64-bit register: high
    # garbage bits (the kernel reads an int) make the call fail, never pass.
    rules = [Rule(call, errno.EAFNOSUPPORT, (Cmp(0, "GT", top),))]
    rules += [
        Rule(call, errno.EAFNOSUPPORT, (Cmp(0, "MASKED_EQ", _LOW32, fam),))
        for fam in range(1, top)
        if fam not in ALLOWED_FAMILIES
    ]
    return rules


def _rules() -> tuple[Rule, ...]:
    rules = [Rule(name, errno.EPERM) for name in DENIED_SYSCALLS]
    # Terminal injection: the ioctl request is arg 1; compare its low 32 bits only.
    rules += [
        Rule("ioctl", errno.EPERM, (Cmp(1, "MASKED_EQ", _LOW32, r),)) for r in (TIOCSTI, TIOCLINUX)
    ]
    # clone3 passes flags in memory that seccomp cannot read: make glibc fall back to
    # clone(2), whose namespace flags are checked one by one.
    rules.append(Rule("clone3", errno.ENOSYS))
    rules += [Rule("clone", errno.EPERM, (Cmp(0, "MASKED_EQ", f, f),)) for f in _NS_FLAGS.values()]
    rules += _family_rules("socket") + _family_rules("socketpair")
    return tuple(rules)


RULES: tuple[Rule, ...] = _rules()


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
    lib.seccomp_load.restype = ctypes.c_int
    lib.seccomp_load.argtypes = (ctypes.c_void_p,)
    lib.seccomp_release.restype = None
    lib.seccomp_release.argtypes = (ctypes.c_void_p,)
    return lib


def _add(lib: ctypes.CDLL, ctx: int, rule: Rule) -> None:
    nr = lib.seccomp_syscall_resolve_name(rule.syscall.encode())
    if nr < 0:  # not a syscall on this architecture (e.g. an old one): nothing to deny
        return
    cmps = [_ArgCmp(c.arg, _CMP_CODES[c.op], c.a, c.b) for c in rule.cmps]
    arr = (_ArgCmp * max(1, len(cmps)))(*cmps)
    rc = lib.seccomp_rule_add_array(ctx, _act_errno(rule.errno_), nr, len(cmps), arr)
    if rc < 0:
        raise OSError(-rc, f"seccomp_rule_add({rule.syscall}) failed")


def _context(lib: ctypes.CDLL, rules: tuple[Rule, ...]) -> int:
    """A libseccomp context holding `rules`; the caller releases it."""
    ctx = lib.seccomp_init(_SCMP_ACT_ALLOW)
    if not ctx:
        raise OSError(errno.ENOMEM, "seccomp_init failed")
    try:
        for rule in rules:
            _add(lib, ctx, rule)
    except BaseException:
        lib.seccomp_release(ctx)
        raise
    return int(ctx)


@functools.cache
def filter_bpf() -> bytes | None:
    """The compiled BPF program, or None where libseccomp cannot be loaded (the caller then
    reports ``limits_enforced["seccomp"] = False``). Built once per process."""
    lib = _lib()
    if lib is None:
        return None
    try:
        ctx = _context(lib, RULES)
    except OSError as exc:
        log.warning("seccomp filter unavailable: %s", exc)
        return None
    try:
        return _export(lib, ctx)
    except OSError as exc:
        log.warning("seccomp filter unavailable: %s", exc)
        return None
    finally:
        lib.seccomp_release(ctx)


def _export(lib: ctypes.CDLL, ctx: int) -> bytes:
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


def filter_fd() -> int | None:
    """A fresh readable fd holding the filter (bwrap consumes it); the caller closes it."""
    prog = filter_bpf()
    if prog is None:
        return None
    fd = os.memfd_create("codegen-seccomp", os.MFD_CLOEXEC)
    os.write(fd, prog)
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


# -- docker ------------------------------------------------------------------------------------
_DOCKER_ARCH = {"x86_64": "SCMP_ARCH_X86_64", "aarch64": "SCMP_ARCH_AARCH64"}


def docker_profile(rules: tuple[Rule, ...] = RULES) -> dict[str, object]:
    """`rules` as a docker seccomp profile (``--security-opt seccomp=<json>``). It replaces
    docker's default profile: allow by default, deny exactly what bwrap's filter denies.
    Only the native architecture is listed, so a foreign-ABI call (int 0x80) hits
    libseccomp's bad-architecture action (kill), as under bwrap."""
    arch = _DOCKER_ARCH.get(platform.machine())
    syscalls = []
    for rule in rules:
        entry: dict[str, object] = {
            "names": [rule.syscall],
            "action": "SCMP_ACT_ERRNO",
            "errnoRet": rule.errno_,
        }
        if rule.cmps:
            entry["args"] = [
                {"index": c.arg, "value": c.a, "valueTwo": c.b, "op": f"SCMP_CMP_{c.op}"}
                for c in rule.cmps
            ]
        syscalls.append(entry)
    return {
        "defaultAction": "SCMP_ACT_ALLOW",
        "architectures": [arch] if arch else [],
        "syscalls": syscalls,
    }


def docker_profile_json() -> str:
    return json.dumps(docker_profile(), separators=(",", ":"))


def load_docker_profile_here(profile: dict[str, object]) -> None:
    """Install `profile` on the calling thread with libseccomp, the way runc compiles it
    (tests run a probe under it in a child process where no engine runs). Irreversible: call
    it only in a process made for that."""
    lib = _lib()
    if lib is None:
        raise OSError(errno.ENOSYS, "libseccomp is not available")
    ctx = _context(lib, rules_from_docker_profile(profile))
    try:
        rc = lib.seccomp_load(ctx)
        if rc < 0:
            raise OSError(-rc, "seccomp_load failed")
    finally:
        lib.seccomp_release(ctx)


def rules_from_docker_profile(profile: dict[str, object]) -> tuple[Rule, ...]:
    """Read a profile written by `docker_profile` back into rules (a round trip the tests
    use to check that the profile says what the filter says)."""
    if profile.get("defaultAction") != "SCMP_ACT_ALLOW":
        raise ValueError("only allow-by-default profiles are read back")
    out = []
    entries = profile["syscalls"]
    assert isinstance(entries, list)
    for e in entries:
        if e["action"] != "SCMP_ACT_ERRNO":
            raise ValueError(f"unexpected action {e['action']!r}")
        cmps = tuple(
            Cmp(a["index"], a["op"].removeprefix("SCMP_CMP_"), a["value"], a.get("valueTwo", 0))
            for a in e.get("args", ())
        )
        out += [Rule(name, int(e["errnoRet"]), cmps) for name in e["names"]]
    return tuple(out)
