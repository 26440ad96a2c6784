# ruff: noqa: ASYNC220, ASYNC240  (tests inspect host state synchronously, on purpose)
"""QEMU confined like any other payload (sandboxes/qemu/confine.py): a uid of its own, no
network, no view of host processes or files, seccomp twice, /dev/kvm only when used.

The escape is simulated by running a hostile program in QEMU's place, in the very same
confinement: whatever it reaches, a guest that broke out of QEMU would reach."""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import shutil
import socket
import stat
import subprocess
import tempfile
from pathlib import Path

import pytest

from sandboxes.base import sandbox_uid
from sandboxes.qemu import VMSpec, VMStatus, build_initramfs, confine, extract_vmlinux, run_vm

from .test_qemu import _debian_vmlinuz

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="uid separation needs root")


@pytest.fixture(scope="module")
def vmlinux(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return extract_vmlinux(_debian_vmlinuz(), tmp_path_factory.mktemp("k") / "vmlinux")


async def _confined_python(script: str, *, want_kvm: bool = False) -> tuple[dict, int]:
    """Run `script` with the system python where QEMU would run; its last stdout line is
    JSON."""
    with tempfile.TemporaryDirectory(prefix="qemu-probe-") as d:
        wd = Path(d)
        wd.chmod(0o755)
        async with confine.confined(
            lambda kvm: ["/usr/bin/python3", "-c", script], wd, want_kvm=want_kvm, memory_mb=64
        ) as cp:
            out, err = await asyncio.wait_for(cp.proc.communicate(), timeout=60)
            assert cp.proc.returncode == 0, err.decode()
            return json.loads(out.decode().splitlines()[-1]), cp.uid


def _status(pid: int) -> dict[str, str]:
    lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    return dict(line.split(":", 1) for line in lines if ":" in line)


async def test_running_qemu_is_in_a_sandbox_of_its_own(vmlinux: Path, tmp_path: Path) -> None:
    tag = f"confined-{secrets.token_hex(6)}.cpio"
    initrd = build_initramfs(tmp_path / tag, "#!/bin/sh\necho UP\nbusybox sleep 100\n")
    task = asyncio.create_task(run_vm(VMSpec(vmlinux, initrd, accel="tcg", wall_s=120)))
    try:
        pid = None
        for _ in range(300):
            await asyncio.sleep(0.1)
            pid = _qemu_with(tag)
            if pid is not None and int(_status(pid).get("Seccomp_filters", "0")) >= 2:
                break
        assert pid is not None, "QEMU did not start"
        st = _status(pid)
        uids = {int(x) for x in st["Uid"].split()}
        assert len(uids) == 1 and uids.isdisjoint({0, sandbox_uid()}), st["Uid"]
        assert st["Seccomp"].strip() == "2"
        assert int(st["Seccomp_filters"]) >= 2  # the sandbox's and QEMU's own -sandbox
        assert st["NoNewPrivs"].strip() == "1"
        assert int(st["CapEff"], 16) == 0
        for ns in ("net", "pid", "mnt", "user", "ipc"):
            assert os.readlink(f"/proc/{pid}/ns/{ns}") != os.readlink(f"/proc/self/ns/{ns}"), ns
        # its root is the sandbox's: no host home, no repository, no host /tmp
        assert not os.path.exists(f"/proc/{pid}/root/root/.bashrc")
        assert sorted(os.listdir(f"/proc/{pid}/root/tmp")) == []
        assert any("codegen" in line for line in Path(f"/proc/{pid}/cgroup").read_text().split())
    finally:
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    assert _qemu_with(tag) is None


def _qemu_with(tag: str) -> int | None:
    for proc in Path("/proc").iterdir():
        try:
            if tag.encode() in (proc / "cmdline").read_bytes() and (
                (proc / "comm").read_text().startswith("qemu-system")
            ):
                return int(proc.name)
        except (OSError, ValueError):
            continue
    return None


ESCAPED = r"""
import errno, glob, json, os, socket
out = {"uid": os.getuid()}
found = []
for p in glob.glob("/proc/[0-9]*/environ"):
    try:
        if SECRET.encode() in open(p, "rb").read():
            found.append(p)
    except OSError:
        pass
out["env_leaks"] = found
out["pids_seen"] = len(glob.glob("/proc/[0-9]*"))
try:
    with open(CANDIDATE, "a") as f:
        f.write("pwned")
    out["wrote_candidate"] = True
except OSError as e:
    out["wrote_candidate"] = e.errno
def attempt(fam, typ, addr=None):
    try:
        s = socket.socket(fam, typ)
        if addr:
            s.settimeout(3)
            s.connect(addr)
        return "ok"
    except OSError as e:
        return e.errno
out["inet"] = attempt(socket.AF_INET, socket.SOCK_STREAM, ("1.1.1.1", 80))
out["vsock"] = attempt(40, socket.SOCK_STREAM)
out["abstract"] = attempt(socket.AF_UNIX, socket.SOCK_STREAM, "\0" + ABSTRACT)
out["home"] = os.path.exists("/root") or os.path.exists("/home")
out["shadow"] = os.path.exists("/etc/shadow")
out["kvm"] = os.path.exists("/dev/kvm")
try:
    os.kill(-1, 9)
except OSError:
    pass
print(json.dumps(out))
"""


async def test_an_escaped_qemu_reaches_no_candidate_and_no_network() -> None:
    secret = secrets.token_hex(16)
    cand_dir = Path(tempfile.mkdtemp(prefix="codegen-candidate-"))
    uid = sandbox_uid()
    victim = cand_dir / "out.txt"
    victim.write_text("answer\n")
    for p in (cand_dir, victim):
        os.chown(p, uid, uid)
    cand_dir.chmod(0o755)
    # A running candidate: the sandbox uid, a secret in its environment.
    candidate = subprocess.Popen(
        ["sleep", "300"], user=uid, group=uid, env={"HARNESS_KEY": secret}, cwd=cand_dir
    )
    # A host service on an abstract unix socket (lives in the network namespace).
    host = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    abstract = f"codegen-host-{secret[:8]}"
    host.bind("\0" + abstract)
    host.listen(4)
    try:
        script = (
            f"SECRET = {secret!r}\nCANDIDATE = {str(victim)!r}\nABSTRACT = {abstract!r}\n" + ESCAPED
        )
        got, vm_uid = await _confined_python(script)
        assert got["uid"] == vm_uid and vm_uid not in (0, uid)
        assert got["env_leaks"] == [] and got["pids_seen"] <= 3  # our init, python
        assert got["wrote_candidate"] != True  # noqa: E712  (an errno otherwise)
        assert victim.read_text() == "answer\n"
        assert got["inet"] != "ok" and got["vsock"] == 97  # EAFNOSUPPORT
        assert got["abstract"] == 111  # ECONNREFUSED: no such name in its namespace
        assert got["home"] is False and got["shadow"] is False and got["kvm"] is False
        assert candidate.poll() is None  # kill(-1) reached nothing outside
    finally:
        host.close()
        candidate.kill()
        candidate.wait()
        shutil.rmtree(cand_dir)


async def test_concurrent_vms_get_distinct_uids() -> None:
    script = "import json, os, time; time.sleep(1); print(json.dumps(os.getuid()))"
    (a, ua), (b, ub) = await asyncio.gather(_confined_python(script), _confined_python(script))
    assert (a, b) == (ua, ub) and ua != ub
    assert {ua, ub}.isdisjoint({0, sandbox_uid()})


KVM_OPEN = r"""
import json, os
try:
    os.close(os.open("/dev/kvm", os.O_RDWR))
    print(json.dumps("open"))
except OSError as e:
    print(json.dumps(e.errno))
"""


async def test_kvm_is_bound_in_only_when_used_and_opens() -> None:
    kvm_ok, _ = confine.kvm_access(confine.uid_base())
    assert kvm_ok, "this machine kind has /dev/kvm, group kvm, mode 0660"
    got, _ = await _confined_python(KVM_OPEN, want_kvm=True)
    assert got == "open"
    got, _ = await _confined_python(KVM_OPEN, want_kvm=False)
    assert got == 2  # ENOENT: not in the sandbox's /dev


async def test_unusable_kvm_falls_back_to_tcg_with_a_note(
    vmlinux: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    node = tmp_path / "kvm"
    os.mknod(node, stat.S_IFCHR | 0o600, os.makedev(10, 232))  # root only
    monkeypatch.setattr(confine, "KVM", str(node))
    initrd = build_initramfs(
        tmp_path / "r.cpio", "#!/bin/sh\necho FELL-BACK\nbusybox poweroff -f\n"
    )
    res = await run_vm(VMSpec(vmlinux, initrd, accel="kvm", wall_s=120, no_output_s=90))
    assert res.status is VMStatus.EXITED and "FELL-BACK" in res.console, res.console[-1000:]
    assert res.accel == "tcg" and "accel=tcg" in " ".join(res.command)
    assert len(res.notes) == 1 and "TCG instead of KVM" in res.notes[0]
