"""Units below the seam: status classification, rlimits, seccomp, cgroup layout."""

from __future__ import annotations

import os
import resource
import signal

from sandboxes import ExecStatus, Limits, seccomp
from sandboxes._runner import PayloadEnd, classify, read_report, rlimits_for
from sandboxes.cgroups import RunCgroup, layout


def _c(rc: int, **kw: object) -> ExecStatus:
    args: dict[str, object] = {
        "killed_for": None, "oom": False, "pids_hit": False, "cpu_s": 0.1,
        "limits": Limits(wall_s=5), "shell_style": True,
    }  # fmt: skip
    args.update(kw)
    return classify(rc, **args)[0]  # type: ignore[arg-type]


def test_classification_priorities() -> None:
    assert _c(0) is ExecStatus.OK
    assert _c(3) is ExecStatus.NONZERO_EXIT
    assert _c(128 + 11) is ExecStatus.SIGNAL
    # a signal alone is no limit: the sweep decides file size, the CPU time decides CPU
    assert _c(128 + signal.SIGXFSZ) is ExecStatus.SIGNAL
    assert _c(128 + signal.SIGXCPU) is ExecStatus.SIGNAL
    assert _c(128 + signal.SIGXCPU, cpu_s=5.9) is ExecStatus.CPU_LIMIT  # ceil(5 + 1) - slack
    assert _c(137, cpu_s=6.0) is ExecStatus.CPU_LIMIT  # RLIMIT_CPU hard limit
    assert _c(137, oom=True, killed_for=ExecStatus.WALL_TIMEOUT) is ExecStatus.MEMORY_LIMIT
    assert _c(137, pids_hit=True, killed_for=ExecStatus.WALL_TIMEOUT) is ExecStatus.PIDS_LIMIT
    assert _c(0, pids_hit=True) is ExecStatus.OK  # hit the cap but coped
    assert _c(137, killed_for=ExecStatus.OUTPUT_LIMIT) is ExecStatus.OUTPUT_LIMIT
    assert _c(-9, killed_for=ExecStatus.WALL_TIMEOUT, shell_style=False) is ExecStatus.WALL_TIMEOUT
    assert classify(-11, killed_for=None, oom=False, pids_hit=False, cpu_s=None,
                    limits=Limits(), shell_style=False) == (ExecStatus.SIGNAL, None, 11)  # fmt: skip


def test_classification_from_the_inits_report() -> None:
    """With the init's report (bwrap), bwrap's 128+N says nothing: exit(152) is an exit."""
    x = PayloadEnd
    assert _c(152, end=x(152, None, 0.0)) is ExecStatus.NONZERO_EXIT
    assert _c(153, end=x(153, None, 0.0)) is ExecStatus.NONZERO_EXIT
    assert _c(137, end=x(137, None, 0.0)) is ExecStatus.NONZERO_EXIT
    assert _c(137, end=x(137, None, 0.0), oom=True) is ExecStatus.NONZERO_EXIT
    assert _c(0, end=x(0, None, 0.0), oom=True) is ExecStatus.OK  # a child's OOM
    assert _c(137, end=x(None, 9, 0.0), oom=True) is ExecStatus.MEMORY_LIMIT
    assert _c(137, oom=True) is ExecStatus.MEMORY_LIMIT  # no report: the init was killed too
    assert _c(152, end=x(None, 24, 1.0), cpu_s=9.0) is ExecStatus.SIGNAL  # its own, lowered
    assert _c(152, end=x(None, 24, 5.9), cpu_s=0.0) is ExecStatus.CPU_LIMIT
    assert _c(137, end=x(None, 9, 7.0)) is ExecStatus.CPU_LIMIT
    assert _c(139, end=x(None, 11, 0.0)) is ExecStatus.SIGNAL
    assert classify(152, killed_for=None, oom=False, pids_hit=False, cpu_s=None,
                    limits=Limits(), shell_style=True, end=x(None, 24, None)) == (
        ExecStatus.SIGNAL, None, 24)  # fmt: skip


def test_report_lines_are_parsed_strictly() -> None:
    def parse(data: bytes) -> PayloadEnd | None:
        r, w = os.pipe()
        os.write(w, data)
        os.close(w)
        try:
            return read_report(r)
        finally:
            os.close(r)

    assert parse(b"exited 152 cpu_ms 3\n") == PayloadEnd(152, None, 0.003)
    assert parse(b"killed 24 cpu_ms 11000\n") == PayloadEnd(None, 24, 11.0)
    assert parse(b"killed 9 cpu_ms -1\n") == PayloadEnd(None, 9, None)
    for bad in (b"", b"exited x cpu_ms 1", b"exited 1 cpu_ms 1\nkilled 9 cpu_ms 1", b"ok"):
        assert parse(bad) is None, bad


def test_rlimits() -> None:
    lim = Limits(wall_s=2.5, file_bytes=1000, pids=10)
    got = {r: (s, h) for r, s, h in rlimits_for(lim, memory_cgroup=True, pids_cgroup=False)}
    # no cpu_s: a backstop above the wall limit (ceil(2.5 + 1)), so the wall timer decides
    assert got[resource.RLIMIT_CPU] == (4, 5)
    explicit = rlimits_for(Limits(wall_s=2.5, cpu_s=1.2), memory_cgroup=True, pids_cgroup=False)
    assert {r: (s, h) for r, s, h in explicit}[resource.RLIMIT_CPU] == (2, 3)
    assert got[resource.RLIMIT_FSIZE] == (1000, 1000)
    assert got[resource.RLIMIT_CORE] == (0, 0)
    assert got[resource.RLIMIT_NPROC] == (10, 10)
    assert resource.RLIMIT_AS not in got
    got = {r: (s, h) for r, s, h in rlimits_for(lim, memory_cgroup=False, pids_cgroup=True)}
    assert got[resource.RLIMIT_AS][0] == (lim.memory_mb * 4) << 20
    assert got[resource.RLIMIT_NPROC][0] >= 4096


def test_seccomp_filter_builds() -> None:
    prog = seccomp.filter_bpf()
    assert prog is not None and len(prog) % 8 == 0 and len(prog) > 100  # sock_filter = 8 bytes
    fd = seccomp.filter_fd()
    assert fd is not None
    import os

    try:
        assert os.read(fd, 1 << 16) == prog
    finally:
        os.close(fd)


def test_cgroup_lifecycle() -> None:
    lay = layout()
    assert lay.version in (1, 2)  # root on this machine kind: cgroups are writable
    cg = RunCgroup(lay)
    cg.create(memory_bytes=64 << 20, pids=16, cpus=None)
    assert cg.enforced["memory"] and cg.enforced["pids"]
    dirs = list(cg.dirs.values())
    assert all(d.exists() for d in dirs)
    assert cg.pids_alive() == [] and not cg.oom_killed() and not cg.pids_hit()
    cg.remove()
    assert not any(d.exists() for d in dirs)


def test_launcher_gates_before_the_target_runs() -> None:
    """The C launcher joins the cgroup, sets rlimits and drops to the sandbox uid before the
    target's first instruction; a gate it cannot set up means the target never runs."""
    import os
    import subprocess

    from sandboxes._launcher import launcher_argv, launcher_path

    exe = launcher_path()
    assert exe is not None  # gcc is on this machine kind: the fast path is the default
    cg = RunCgroup(layout())
    cg.create(memory_bytes=64 << 20, pids=16, cpus=None)
    try:
        argv = launcher_argv(
            exe,
            ["sh", "-c", "cat /proc/self/status /proc/self/cgroup; ulimit -n; ulimit -c"],
            cgroup_procs=cg.procs_files(),
            rlimits=[(resource.RLIMIT_NOFILE, 77, 77), (resource.RLIMIT_CORE, 0, 0)],
            uid=65534,
            gid=65534,
        )
        p = subprocess.run(argv, capture_output=True, text=True, timeout=30)
        assert p.returncode == 0, p.stderr
        lines = p.stdout.splitlines()
        status = {k: v.split() for k, _, v in (x.partition(":\t") for x in lines)}
        assert status["Uid"] == ["65534"] * 4 and status["Gid"] == ["65534"] * 4
        assert status["Groups"] == [] and status["CapEff"] == ["0000000000000000"]
        for ctl in cg.dirs:
            assert any(cg.name in x and ctl in x for x in lines), ctl
        assert lines[-2:] == ["77", "0"]
        # Gate failure: the target never runs.
        bad = launcher_argv(
            exe, ["touch", "/tmp/never"], cgroup_procs=["/nonexistent/cgroup.procs"],
            rlimits=[], uid=65534, gid=65534,
        )  # fmt: skip
        p = subprocess.run(bad, capture_output=True, text=True, timeout=30)
        assert p.returncode == 127 and p.stderr.startswith("sandbox-launcher: ")
        assert not os.path.exists("/tmp/never")
    finally:
        cg.remove()
