"""Kernel surface a payload reaches without any privilege: socket families that are not
network-namespaced (AF_VSOCK) or rarely used (loaded as modules on first use), io_uring
(whose requests bypass seccomp), ptrace and /proc writes into the sandbox's pid 1, and the
32-bit entry point (int 0x80) that skips the x86_64 rules. Every isolating backend must refuse
them the same way, because both compile one rule list (sandboxes/seccomp.py); the docker
profile is also checked without an engine, by compiling it with libseccomp."""

from __future__ import annotations

import errno
import json
import secrets
import signal
import socket
import subprocess
import sys

import pytest

from sandboxes import ExecStatus, Sandbox, seccomp, toolchains

SOCKETS_C = r"""#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>
static void try(const char *what, long fam, int type) {
  errno = 0;
  long s = syscall(SYS_socket, fam, type, 0);
  printf("%s %ld %d\n", what, s < 0 ? -1L : 0L, s < 0 ? errno : 0);
}
int main(void) {
  try("vsock-stream", 40, SOCK_STREAM);
  try("vsock-dgram", 40, SOCK_DGRAM);
  /* the family is an int: high garbage bits must not slip past the rule */
  try("vsock-high-bits", 40L | (1L << 32), SOCK_STREAM);
  try("alg", 38, SOCK_SEQPACKET);
  try("key", 15, SOCK_RAW);
  try("can", 29, SOCK_RAW);
  try("bluetooth", 31, SOCK_STREAM);
  try("tipc", 30, SOCK_RDM);
  try("rds", 21, SOCK_SEQPACKET);
  try("appletalk", 5, SOCK_DGRAM);
  int sv[2];
  errno = 0;
  int r = socketpair(30, SOCK_STREAM, 0, sv); /* TIPC has socketpair */
  printf("tipc-pair %d %d\n", r < 0 ? -1 : 0, r < 0 ? errno : 0);
  try("unix", 1, SOCK_STREAM);
  try("inet", 2, SOCK_DGRAM);
  try("inet6", 10, SOCK_DGRAM);
  try("netlink", 16, SOCK_RAW);
  return 0;
}
"""

PID1_C = r"""#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>
static void report(const char *what, long r) {
  printf("%s %ld %d\n", what, r < 0 ? -1L : r, r < 0 ? errno : 0);
}
int main(void) {
  char params[120];
  memset(params, 0, sizeof params);
  errno = 0;
  report("io_uring_setup", syscall(SYS_io_uring_setup, 4, params));
  errno = 0;
  report("ptrace-attach-1", ptrace(PTRACE_ATTACH, 1, 0, 0));
  errno = 0;
  report("ptrace-seize-1", ptrace(PTRACE_SEIZE, 1, 0, 0));
  char buf[16];
  struct iovec local = {buf, sizeof buf}, remote = {(void *)0x400000, sizeof buf};
  errno = 0;
  report("process_vm_readv-1", syscall(SYS_process_vm_readv, 1, &local, 1, &remote, 1, 0));
  errno = 0;
  int fd = open("/proc/1/oom_score_adj", O_WRONLY);
  long w = fd < 0 ? -1 : write(fd, "1000", 4);
  report("oom_score_adj-1", fd < 0 ? -1 : w);
  errno = 0;
  fd = open("/proc/1/mem", O_RDONLY);
  report("mem-1", fd);
  return 0;
}
"""

# i386 socketcall(SYS_SOCKET, {AF_VSOCK, SOCK_STREAM, 0}) through int 0x80: the x86_64 rules
# never see it. A static non-PIE build keeps the argument block below 4 GiB.
ABI32_C = r"""#include <stdio.h>
static unsigned int args[3] = {40, 1, 0};
int main(void) {
  long ret;
  __asm__ volatile("int $0x80" : "=a"(ret) : "a"(102), "b"(1), "c"(args) : "memory");
  printf("socketcall %ld\n", ret);
  return 0;
}
"""

# x32: the x86_64 entry point with bit 30 set in the number is another ABI; a filter that
# checked only numbers would let socket (41) through as 0x40000029.
X32_C = r"""#include <stdio.h>
#include <unistd.h>
#include <sys/syscall.h>
int main(void) {
  long r = syscall(0x40000000L | 41, 40L, 1L, 0L);
  printf("x32-socket %ld\n", r);
  return 0;
}
"""

# ptrace's relatives: a payload takes a descriptor out of (or advises the memory of) another
# process of its exec, which ptrace's rule alone leaves open.
PIDFD_C = r"""#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>
int main(void) {
  pid_t child = fork();
  if (child == 0) { pause(); _exit(0); }
  long pidfd = syscall(SYS_pidfd_open, child, 0);
  if (pidfd < 0) { perror("pidfd_open"); return 3; }
  errno = 0;
  long fd = syscall(SYS_pidfd_getfd, pidfd, 1, 0);
  printf("pidfd_getfd %ld %d\n", fd < 0 ? -1L : 0L, fd < 0 ? errno : 0);
  char page[1];
  struct iovec iov = {page, 1};
  errno = 0;
  long m = syscall(SYS_process_madvise, pidfd, &iov, 1, 8 /* MADV_COLD... */, 0);
  printf("process_madvise %ld %d\n", m < 0 ? -1L : 0L, m < 0 ? errno : 0);
  kill(child, SIGKILL);
  return 0;
}
"""

EAFNOSUPPORT, EPERM = errno.EAFNOSUPPORT, errno.EPERM


def _table(stdout: str) -> dict[str, tuple[int, int]]:
    out = {}
    for line in stdout.splitlines():
        name, r, e = line.split()
        out[name] = (int(r), int(e))
    return out


async def _build(sb: Sandbox, src: str, name: str, flags: tuple[str, ...] = ()) -> str:
    b = await toolchains.get("c").compile(sb, {f"{name}.c": src}, output=name, extra_flags=flags)
    assert b.ok, b.exec_result.stderr
    return f"./{b.artifact}"


async def test_vsock_and_rare_socket_families_are_refused(iso_sb: Sandbox) -> None:
    r = await iso_sb.exec([await _build(iso_sb, SOCKETS_C, "sockets")])
    assert r.ok, r
    got = _table(r.stdout)
    refused = {k: v for k, v in got.items() if k not in ("unix", "inet", "inet6", "netlink")}
    assert refused and all(v == (-1, EAFNOSUPPORT) for v in refused.values()), got
    # the families programs need still work (Open MPI, getifaddrs, loopback IP)
    assert all(got[k] == (0, 0) for k in ("unix", "inet", "inet6", "netlink")), got
    assert r.limits_enforced["seccomp"] is True


async def test_io_uring_ptrace_and_pid1_are_refused(iso_sb: Sandbox) -> None:
    r = await iso_sb.exec([await _build(iso_sb, PID1_C, "pid1")])
    assert r.ok, r
    got = _table(r.stdout)
    for call in ("io_uring_setup", "ptrace-attach-1", "ptrace-seize-1", "process_vm_readv-1"):
        assert got[call] == (-1, EPERM), (call, got)
    # pid 1 is our non-dumpable init: its /proc files belong to root
    assert got["oom_score_adj-1"] == (-1, errno.EACCES), got
    assert got["mem-1"] == (-1, errno.EACCES), got
    assert r.limits_enforced["sandbox_init"] is True
    r = await iso_sb.exec(["cat", "/proc/1/oom_score_adj"])
    assert r.ok and r.stdout.strip() == "0", r


async def test_foreign_abi_socketcall_is_killed(iso_sb: Sandbox) -> None:
    exe = await _build(iso_sb, ABI32_C, "abi32", ("-static", "-no-pie"))
    r = await iso_sb.exec([exe])
    # libseccomp's bad-architecture action: the process dies of SIGSYS before the call
    assert r.status is ExecStatus.SIGNAL and r.signal == signal.SIGSYS, r
    assert "socketcall" not in r.stdout


async def test_x32_abi_is_killed(iso_sb: Sandbox) -> None:
    r = await iso_sb.exec([await _build(iso_sb, X32_C, "x32")])
    assert r.status is ExecStatus.SIGNAL and r.signal == signal.SIGSYS, r


async def test_pidfd_getfd_and_process_madvise_are_refused(iso_sb: Sandbox) -> None:
    r = await iso_sb.exec([await _build(iso_sb, PIDFD_C, "pidfd")])
    assert r.ok, r
    assert _table(r.stdout) == {"pidfd_getfd": (-1, EPERM), "process_madvise": (-1, EPERM)}


ABSTRACT_C = r"""#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
int main(int argc, char **argv) {
  struct sockaddr_un a = {0};
  a.sun_family = AF_UNIX;
  strncpy(a.sun_path + 1, argv[1], sizeof a.sun_path - 2);
  socklen_t len = offsetof(struct sockaddr_un, sun_path) + 1 + strlen(argv[1]);
  int s = socket(AF_UNIX, SOCK_STREAM, 0);
  int r = connect(s, (struct sockaddr *)&a, len);
  puts(r == 0 ? "CONNECTED" : "refused");
  return 0;
}
"""


async def test_host_abstract_unix_sockets_are_unreachable(iso_sb: Sandbox) -> None:
    """Abstract unix sockets live in the network namespace (containerd-shim's API was one:
    CVE-2020-15257): a payload in its own cannot reach the host's."""
    name = f"codegen-abstract-{secrets.token_hex(6)}"
    host = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        host.bind("\0" + name)
        host.listen(4)
        host.setblocking(False)
        r = await iso_sb.exec([await _build(iso_sb, ABSTRACT_C, "abstract"), name])
        assert r.ok and r.stdout.strip() == "refused", r
        with pytest.raises(BlockingIOError):
            host.accept()
    finally:
        host.close()


# -- the docker profile, without an engine -----------------------------------------------------
def test_docker_profile_is_the_bwrap_rule_list() -> None:
    profile = json.loads(seccomp.docker_profile_json())
    assert profile["defaultAction"] == "SCMP_ACT_ALLOW"
    assert profile["architectures"] == ["SCMP_ARCH_X86_64"]  # nothing else: int 0x80 is killed
    assert seccomp.rules_from_docker_profile(profile) == seccomp.RULES
    names = {n for e in profile["syscalls"] for n in e["names"]}
    assert {"ptrace", "io_uring_setup", "io_uring_enter", "socket", "socketpair"} <= names
    # the same program libseccomp builds for bwrap
    lib = seccomp._lib()
    assert lib is not None
    ctx = seccomp._context(lib, seccomp.rules_from_docker_profile(profile))
    try:
        assert seccomp._export(lib, ctx) == seccomp.filter_bpf()
    finally:
        lib.seccomp_release(ctx)


_PROBE = r"""
import ctypes, errno, json, sys
from sandboxes import seccomp
seccomp.load_docker_profile_here(json.loads(sys.stdin.read()))
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
def call(nr, *args):
    ctypes.set_errno(0)
    r = libc.syscall(ctypes.c_long(nr), *[ctypes.c_long(a) for a in args])
    return [-1 if r < 0 else 0, ctypes.get_errno() if r < 0 else 0]
buf = ctypes.create_string_buffer(120)
print(json.dumps({
    "socket-vsock": call(41, 40, 1, 0),
    "socket-unix": call(41, 1, 1, 0),
    "io_uring_setup": call(425, 4, ctypes.addressof(buf)),
    "ptrace": call(101, 16, 1, 0, 0),
    "unshare": call(272, 0x10000000),
}))
"""


def test_docker_profile_refuses_vsock_io_uring_ptrace_when_loaded() -> None:
    """What runc loads, loaded here with libseccomp in a throwaway child process."""
    p = subprocess.run(
        [sys.executable, "-c", _PROBE],
        input=seccomp.docker_profile_json(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert p.returncode == 0, p.stderr
    got = {k: tuple(v) for k, v in json.loads(p.stdout).items()}
    assert got == {
        "socket-vsock": (-1, EAFNOSUPPORT),
        "socket-unix": (0, 0),
        "io_uring_setup": (-1, EPERM),
        "ptrace": (-1, EPERM),
        "unshare": (-1, EPERM),
    }


@pytest.mark.parametrize("family", [40, 38, 15, 29, 31, 30, 21, 0xFFFF, 1 << 20])
def test_only_the_five_families_pass(family: int) -> None:
    rules = [r for r in seccomp.RULES if r.syscall == "socket"]
    denied = any(
        (c.op == "GT" and family > c.a) or (c.op == "MASKED_EQ" and family & c.a == c.b)
        for r in rules
        for c in r.cmps
    )
    assert denied
