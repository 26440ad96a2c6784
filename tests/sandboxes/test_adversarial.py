"""Adversarial conformance: payloads that go after what the harness gave exec() or after the
machinery around the run (pid 1, descriptors, later execs, cleanup, the disk). Parametrized
over the isolating backends, bwrap and docker (unsafe-local is not a sandbox: see
docs/sandboxes.md)."""

from __future__ import annotations

import secrets
from pathlib import Path

from sandboxes import Limits, Sandbox, toolchains

SCAN_C = (Path(__file__).with_name("secret_scan.c")).read_text()


async def test_exec_env_is_visible_only_in_the_payloads_own_environment(
    iso_sb: Sandbox | None,
) -> None:
    if iso_sb is None:
        return
    b = await toolchains.get("c").compile(iso_sb, {"scan.c": SCAN_C}, output="scan")
    assert b.ok, b.exec_result.stderr
    secret = secrets.token_hex(16)
    # Through a shell, so another payload process (sh, same env) and pid 1 are there to scan.
    r = await iso_sb.exec(
        ["sh", "-c", "./scan; echo done"],
        env={"SECRET_NAME": "HARNESS_KEY", "HARNESS_KEY": secret},
        limits=Limits(wall_s=60),
    )
    assert r.ok, r
    lines = r.stdout.splitlines()
    assert lines[-1] == "done" and any(x.startswith("scanned ") for x in lines), r.stdout
    # The one process that certainly holds the value in its environment, the shell, must be
    # found: otherwise the scan could not have found a leak either.
    env_pids = {int(x.split()[1]) for x in lines if x.startswith("ENV ")}
    assert env_pids, r.stdout
    leaks = [x for x in lines if x.startswith("FOUND") and not x.endswith(("(its env)", "(own)"))]
    assert leaks == [], r.stdout
    if iso_sb.backend == "bwrap":
        # Our stdout pipe is root's: pid 1's descriptors cannot be reopened. (In docker,
        # tini's stdout is the payload's own stdout stream; writing there is no new channel.)
        assert "ROOT-FD-WRITE" not in lines
    assert secret not in r.stderr
    # pid 1 shows nothing of the launch machinery: no bwrap options, no host paths.
    r = await iso_sb.exec(["sh", "-c", "tr '\\0' ' ' < /proc/1/cmdline"])
    assert r.ok, r
    assert "--setenv" not in r.stdout and "--args" not in r.stdout and "bwrap" not in r.stdout
    assert str(iso_sb.run_dir) not in r.stdout
    if iso_sb.backend == "bwrap":
        assert r.limits_enforced["sandbox_init"] is True
        # Our init is not dumpable: its memory, environment and descriptors are closed.
        r = await iso_sb.exec(
            [
                "sh",
                "-c",
                "for f in mem environ maps; do cat /proc/1/$f >/dev/null; done; ls /proc/1/fd",
            ]
        )
        assert r.stderr.count("Permission denied") == 4, r.stderr
