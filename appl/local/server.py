"""The embedded llama.cpp server: started on first use on a free port, health-checked, shared
by every program of the process, stopped at exit.

No orphan server: the child is started through `appl.local._child`, which holds the read end
of a pipe whose write end only this process has. When this process dies for any reason
(even SIGKILL), the pipe reaches EOF and the child exits. (PR_SET_PDEATHSIG is not used: it
fires when the *thread* that forked exits, and we may start the server from a worker thread.)
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from appl.errors import LocalModelError
from appl.local.catalog import LocalModelSpec, resolve_spec
from appl.local.weights import ensure_weights


@dataclass(frozen=True, slots=True)
class ServerFlags:
    """llama_cpp.server flags that are known to matter (measured, see shared/FACTS.md)."""

    n_ctx: int = 4096
    n_threads: int | None = None  # None: chosen when the server starts (default_threads)
    # The server's default (True) silently cut 3 of 4 concurrent streams to zero chunks.
    interrupt_requests: bool = False
    model_alias: str = "local"
    extra_args: tuple[str, ...] = ()

    def argv(self, model_path: Path, host: str, port: int) -> list[str]:
        threads = self.n_threads or default_threads()
        return [
            "--model", str(model_path),
            "--model_alias", self.model_alias,
            "--host", host,
            "--port", str(port),
            "--n_ctx", str(self.n_ctx),
            "--n_threads", str(threads),
            "--interrupt_requests", str(self.interrupt_requests),
            *self.extra_args,
        ]  # fmt: skip


def default_threads() -> int:
    """All cores on a quiet machine, shared out among the local servers already running, one
    on a busy one.

    llama.cpp's worker threads spin while they wait for each other; when the cores are already
    oversubscribed that turns into a collapse rather than a slowdown. Measured here with the
    0.5B model under a load average of 11 on 2 cores: 1 thread 10.9 s, 2 threads 22.0 s for the
    same 9-token answer (idle, 2 threads is the faster). Two servers started side by side on an
    idle 2-core machine (generate and repair runs of benchmarks/repair_budget.py) both took 2
    threads: no Verilog problem finished in 7 minutes; with 1 thread each, 3 and 1 finished in
    4 minutes. Override with options.n_threads.
    """
    cores = os.cpu_count() or 2
    try:
        busy = os.getloadavg()[0] > cores
    except OSError:
        busy = False
    if busy:
        return 1
    return max(1, cores // (1 + len(local_server_pids())))


def local_server_pids() -> set[int]:
    """llama.cpp servers of this machine already running (ours or a user's), from /proc."""
    if not os.path.isdir("/proc"):
        return set()
    return {int(e.name) for e in os.scandir("/proc") if e.name.isdigit() and _is_server(e.name)}


def _is_server(pid: int | str) -> bool:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            cmdline = fh.read(4096)
    except OSError:
        return False
    return b"appl.local._child" in cmdline or b"llama_cpp.server" in cmdline


def _await_cmdline(proc: subprocess.Popen[bytes], timeout: float = 5.0) -> None:
    # Popen returns once exec has begun, but /proc/PID/cmdline is empty until the kernel has
    # laid out the new argv: keep the machine lock until a server starting next can count ours.
    deadline = time.monotonic() + timeout
    while proc.poll() is None and time.monotonic() < deadline:
        if _is_server(proc.pid):
            return
        time.sleep(0.01)


@contextlib.contextmanager
def _machine_lock() -> Iterator[None]:
    path = Path(tempfile.gettempdir()) / f"appl-local-start-{os.getuid()}.lock"
    with open(path, "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def server_package_available() -> bool:
    return importlib.util.find_spec("llama_cpp") is not None


def _free_port(host: str) -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


class LocalServer:
    """One llama.cpp server process. `start()` is idempotent and thread-safe."""

    def __init__(
        self,
        spec: LocalModelSpec,
        flags: ServerFlags | None = None,
        *,
        host: str = "127.0.0.1",
        port: int | None = None,
        ready_timeout_s: float = 180.0,
    ) -> None:
        self.spec = spec
        self.flags = flags or ServerFlags()
        self.host = host
        self.port = port
        self.ready_timeout_s = ready_timeout_s
        self._proc: subprocess.Popen[bytes] | None = None
        self._lifeline_w: int | None = None
        self._log_path: Path | None = None
        self._lock = threading.Lock()

    @property
    def base_url(self) -> str:
        if self.port is None:
            raise LocalModelError("the local server has not been started")
        return f"http://{self.host}:{self.port}/v1"

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def start(self) -> str:
        with self._lock:
            if self.running:
                return self.base_url
            if not server_package_available():
                raise LocalModelError(
                    "the local model server (llama-cpp-python[server]) is not installed; "
                    "run `scripts/setup.sh --local-model`"
                )
            model_path = ensure_weights(self.spec)
            self.port = self.port or _free_port(self.host)
            read_fd, write_fd = os.pipe()
            log = tempfile.NamedTemporaryFile(
                prefix="appl-local-server-", suffix=".log", delete=False
            )
            self._log_path = Path(log.name)
            # Choosing the thread count and starting the process under one machine-wide lock:
            # a server started at the same moment by another process counts this one.
            with _machine_lock():
                cmd = [sys.executable, "-m", "appl.local._child", str(read_fd),
                       *self.flags.argv(model_path, self.host, self.port)]  # fmt: skip
                try:
                    self._proc = subprocess.Popen(
                        cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                        pass_fds=(read_fd,), start_new_session=True,
                    )  # fmt: skip
                finally:
                    os.close(read_fd)
                    log.close()
                _await_cmdline(self._proc)
            self._lifeline_w = write_fd
            _LIVE.add(self)
            try:
                self._wait_ready()
            except BaseException:
                self._stop_locked()
                raise
            return self.base_url

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + self.ready_timeout_s
        url = f"http://{self.host}:{self.port}/v1/models"
        while time.monotonic() < deadline:
            assert self._proc is not None
            if self._proc.poll() is not None:
                raise LocalModelError(
                    f"the local server exited with code {self._proc.returncode} while starting; "
                    f"last lines of its log ({self._log_path}):\n{self.log_tail()}"
                )
            try:
                with urllib.request.urlopen(url, timeout=2) as resp:
                    if resp.status == 200 and json.loads(resp.read()).get("data"):
                        return
            except (urllib.error.URLError, ConnectionError, TimeoutError, ValueError):
                pass
            time.sleep(0.1)  # start-up only: the server has no readiness signal to wait on
        raise LocalModelError(
            f"the local server did not answer {url} within {self.ready_timeout_s:.0f} s; "
            f"last lines of its log:\n{self.log_tail()}"
        )

    def log_tail(self, lines: int = 20) -> str:
        if not self._log_path or not self._log_path.exists():
            return ""
        return "\n".join(self._log_path.read_text(errors="replace").splitlines()[-lines:])

    def stop(self) -> None:
        with self._lock:
            self._stop_locked()

    def _stop_locked(self) -> None:
        proc, self._proc = self._proc, None
        if self._lifeline_w is not None:
            os.close(self._lifeline_w)  # the child sees EOF and exits on its own
            self._lifeline_w = None
        if proc is not None and proc.poll() is None:
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        _LIVE.discard(self)


_LIVE: set[LocalServer] = set()
# Keyed by the flags as given: None means "defaults", whose thread count is decided once, when
# the server is first created, so a change in load never starts a second server.
_SHARED: dict[tuple[str, ServerFlags | None], LocalServer] = {}
_SHARED_LOCK = threading.Lock()


def shared_server(model: str | None = None, flags: ServerFlags | None = None) -> LocalServer:
    """The process-wide server for `model` with `flags` (created, not started)."""
    spec = resolve_spec(model)
    key = (spec.name, flags)
    with _SHARED_LOCK:
        if key not in _SHARED:
            _SHARED[key] = LocalServer(spec, flags)
        return _SHARED[key]


@atexit.register
def _stop_all() -> None:
    for server in list(_LIVE):
        server.stop()
