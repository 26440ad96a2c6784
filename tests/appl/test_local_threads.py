"""How many threads an embedded llama.cpp server takes: the cores shared out among the local
servers already running. Two servers that both took every core of this 2-core machine
finished no Verilog problem in 7 minutes; with one thread each they finished four in 4."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time

import pytest

from appl.local.server import ServerFlags, local_server_pids


def test_a_running_llama_server_is_counted() -> None:
    # Any process whose command line is a llama.cpp server's counts (ours or a user's). By
    # pid: other tests' servers may start or stop meanwhile.
    fake = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(60)", "-m", "llama_cpp.server"]
    )
    try:
        # Popen returns once exec has begun, but /proc/PID/cmdline stays empty until the kernel
        # has laid out the new argv: poll rather than read once.
        deadline = time.monotonic() + 30
        while fake.pid not in local_server_pids() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert fake.pid in local_server_pids()
    finally:
        fake.kill()
        fake.wait()
    assert fake.pid not in local_server_pids()


def test_explicit_threads_are_kept() -> None:
    argv = ServerFlags(n_threads=3).argv(os.devnull, "127.0.0.1", 1)  # type: ignore[arg-type]
    assert argv[argv.index("--n_threads") + 1] == "3"


@pytest.mark.slow
def test_two_servers_started_at_once_do_not_both_take_every_core() -> None:
    script = textwrap.dedent(
        """
        import sys, time
        from appl.local.server import shared_server
        s = shared_server()
        s.start()
        args = s._proc.args
        print(args[args.index("--n_threads") + 1], flush=True)
        sys.stdin.read()  # keep the server until the test is done
        s.stop()
        """
    )
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        for _ in range(2)
    ]
    try:
        threads = [int(p.stdout.readline()) for p in procs]  # type: ignore[union-attr]
    finally:
        for p in procs:
            p.communicate("", timeout=60)
    cores = os.cpu_count() or 2
    assert min(threads) <= max(1, cores // 2), threads
