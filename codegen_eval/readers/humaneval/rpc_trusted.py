"""The checker of a Python HumanEval sample: runs the problem's test in a process that holds no
candidate code and prints the one verdict the scorer believes.

Started by the scorer inside the sandbox as ``python3 -I <cache>/rpc_trusted.py``; this file,
rpc_codec.py and tagging.py live in a directory the sandbox sees read-only. Standard library
only (the sandbox's python3 runs it, not the project's venv).

Order matters:
  1. mark this process not dumpable, so a process of the same uid (the candidate) can open
     none of its /proc/<pid>/mem, environ or fd/ entries;
  2. read the whole request from stdin (key, prompt, test, entry point, limits) before any
     candidate process exists, so the pipe holds nothing when one does;
  3. start the candidate's process through he_guard (seccomp + Landlock), stdin /dev/null,
     stdout and stderr into a log file, the RPC on fds 3 and 4;
  4. exec the prompt (for helpers such as HumanEval/32's poly) and the test here, bind the
     entry point to a proxy that calls the candidate over the RPC, run check(proxy);
  5. print one line ``HEV {json} mac=<tag>``, SipHash-tagged with the key.
"""

from __future__ import annotations

import builtins
import ctypes
import fcntl
import json
import os
import select
import signal
import sys
import time

TYPE_CHECKING = False  # importing typing costs the sandbox's interpreter ~7 ms at start
if TYPE_CHECKING:
    from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import rpc_codec as codec  # noqa: E402
import tagging  # noqa: E402

PREFIX = "HEV "
_PR_SET_DUMPABLE = 4
# Exceptions the candidate may raise and the test may see as such (rebuilt here from the
# name and the message only). Anything else arrives as CandidateError.
_PASS_THROUGH = {
    name: cls
    for name, cls in vars(builtins).items()
    if isinstance(cls, type)
    and issubclass(cls, Exception)
    and not issubclass(cls, (StopIteration, StopAsyncIteration, Warning))
}


class CandidateError(RuntimeError):
    """The candidate raised something that is not a plain builtin exception."""


class Verdict(BaseException):
    """Ends the sample with a failure class; BaseException so `except Exception` in a test
    cannot swallow it."""

    def __init__(self, failure_class: str, detail: str) -> None:
        super().__init__(detail)
        self.failure_class, self.detail = failure_class, detail


class SampleTimeout(BaseException):
    pass


def _no_dump() -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_DUMPABLE, 0)")


def _read_request() -> dict[str, Any]:
    fd = sys.stdin.fileno()
    line = b""
    while not line.endswith(b"\n"):
        c = os.read(fd, 1)
        if not c or len(line) > 20:
            raise SystemExit("rpc_trusted: bad request header")
        line += c
    body = codec.read_exact(fd, int(line))
    os.close(fd)
    os.open(os.devnull, os.O_RDONLY)  # fd 0 again, empty
    return json.loads(body)


class Candidate:
    """The candidate's process and the proxy the test calls."""

    def __init__(self, req: dict[str, Any], deadline: float) -> None:
        self.entry = req["entry"]
        self.call_s = float(req["call_s"])
        self.deadline = deadline
        self.calls = 0
        self.callables: list[Any] = []
        to_cand_r, self.to_cand = os.pipe()
        self.from_cand, from_cand_w = os.pipe()
        log = os.open(req["log"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o644)
        null = os.open(os.devnull, os.O_RDONLY)
        # above 4, so that the dup2 onto 3 and 4 below cannot clobber one another
        high = [fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10) for fd in (to_cand_r, from_cand_w)]
        env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "TMPDIR": "/tmp"}
        env["HOME"] = os.getcwd()
        # Every descriptor of ours is close-on-exec; the child gets exactly 0-4 (dup2 clears
        # the flag) and never our stdout, the scorer's channel.
        self.pid = os.posix_spawn(
            req["guard"],
            [req["guard"], sys.executable, "-I", req["runner"], req["source"], self.entry],
            env,
            file_actions=[
                (os.POSIX_SPAWN_DUP2, null, 0),
                (os.POSIX_SPAWN_DUP2, log, 1),
                (os.POSIX_SPAWN_DUP2, log, 2),
                (os.POSIX_SPAWN_DUP2, high[0], 3),
                (os.POSIX_SPAWN_DUP2, high[1], 4),
            ],
        )
        self.status: int | None = None
        for fd in (to_cand_r, from_cand_w, log, null, *high):
            os.close(fd)

    # -- waiting ------------------------------------------------------------------------------
    def _wait(self, until: float) -> None:
        left = min(until, self.deadline) - time.monotonic()
        if left <= 0 or not select.select([self.from_cand], [], [], left)[0]:
            which = "the sample's" if self.deadline <= until else "a call's"
            raise Verdict("timeout:wall", f"the candidate ran past {which} time limit")

    def _recv(self, until: float) -> list[Any]:
        try:
            msg = codec.recv(self.from_cand, lambda: self._wait(until))
        except codec.ProtocolError as exc:
            raise Verdict("tamper:protocol", str(exc)) from None
        if msg is None:
            raise self._gone()
        return msg

    def _reap(self, wait_s: float) -> int | None:
        """The candidate's exit status (negative: killed by that signal), None if it still
        runs after wait_s."""
        end = time.monotonic() + wait_s
        while self.status is None:
            pid, st = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.status = os.waitstatus_to_exitcode(st)
            elif time.monotonic() >= end:
                return None
            else:
                time.sleep(0.005)
        return self.status

    def _gone(self) -> Verdict:
        rc = self._reap(2.0)
        if rc is None:
            return Verdict("tamper:protocol", "the candidate closed its pipe and kept running")
        if rc == 0:
            return Verdict("tamper:exit", "the candidate's process exited (status 0) mid-test")
        if rc < 0:
            try:
                name = signal.Signals(-rc).name
            except ValueError:
                name = f"SIG{-rc}"
            return Verdict(f"runtime_crash:{name}", f"the candidate's process died of {name}")
        return Verdict("nonzero_exit", f"the candidate's process exited with status {rc}")

    def start(self) -> None:
        msg = self._recv(time.monotonic() + max(self.call_s, 5.0))
        if msg[0] == "ready":
            return
        if msg[0] == "load_error" and len(msg) == 3:
            name, text = str(msg[1]), str(msg[2])
            if name in ("SyntaxError", "IndentationError", "TabError"):
                raise Verdict("compile_error:syntax", f"{name}: {text}")
            if name in ("NameError", "ImportError", "ModuleNotFoundError"):
                raise Verdict("compile_error:undeclared", f"{name}: {text}")
            if name == "SystemExit":
                raise Verdict("tamper:exit", "the candidate called exit while loading")
            raise Verdict("nonzero_exit", f"{name} while loading: {text}")
        raise Verdict("tamper:protocol", f"unexpected first message {str(msg[0])[:40]!r}")

    # -- calls ---------------------------------------------------------------------------------
    def _handle(self, fn: Any) -> int:
        self.callables.append(fn)
        return len(self.callables) - 1

    def _send(self, msg: list[Any]) -> None:
        try:
            codec.send(self.to_cand, msg)
        except BrokenPipeError:
            raise self._gone() from None

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        try:
            enc = codec.encode(list(args), lenient=False, handle=self._handle)
            kw = codec.encode(kwargs, lenient=False, handle=self._handle)
        except codec.Unsupported as exc:
            raise Verdict("infra_error:unsupported_argument", f"the test passes {exc}") from None
        self.calls += 1
        until = time.monotonic() + self.call_s
        self._send(["call", enc, kw])
        while True:
            msg = self._recv(until)
            try:
                if msg[0] == "ret" and len(msg) == 2:
                    return codec.decode(msg[1])
                if msg[0] == "badret" and len(msg) == 2:
                    raise Verdict(
                        "wrong_answer", f"the answer is not plain data: {str(msg[1])[:200]}"
                    )
                if msg[0] == "raise" and len(msg) == 3:
                    raise _rebuild(str(msg[1])[:100], str(msg[2])[:2000])
                if msg[0] == "cb" and len(msg) == 4:
                    self._callback(msg[1], msg[2], msg[3])
                    continue
            except codec.ProtocolError as exc:
                raise Verdict("tamper:protocol", str(exc)) from None
            raise Verdict("tamper:protocol", f"unexpected message {str(msg[0])[:40]!r}")

    def _callback(self, handle: Any, args: Any, kwargs: Any) -> None:
        """The candidate calls a function the test passed it: run it here on plain data."""
        if not isinstance(handle, int) or not 0 <= handle < len(self.callables):
            raise codec.ProtocolError("bad callback handle")
        a, kw = codec.decode(args), codec.decode(kwargs)
        if not isinstance(a, list) or not isinstance(kw, dict):
            raise codec.ProtocolError("bad callback arguments")
        try:
            out = ["cbret", codec.encode(self.callables[handle](*a, **kw), lenient=False)]
        except Verdict:
            raise
        except Exception as exc:
            out = ["cbraise", type(exc).__name__, str(exc)[:2000]]
        self._send(out)

    def close(self) -> None:
        for fd in (self.to_cand, self.from_cand):
            try:
                os.close(fd)
            except OSError:
                pass
        if self._reap(0) is None:
            try:
                os.kill(self.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self._reap(5.0)


def _rebuild(name: str, text: str) -> BaseException:
    if name in ("SystemExit", "KeyboardInterrupt", "GeneratorExit"):
        return Verdict("tamper:exit", f"the candidate raised {name}")
    cls = _PASS_THROUGH.get(name)
    if cls is not None:
        try:
            exc = cls(text)
        except Exception:
            exc = CandidateError(f"{name}: {text}")
    else:
        exc = CandidateError(f"{name}: {text}")
    exc.he_from_candidate = True  # type: ignore[attr-defined]
    return exc


def _exec_prompt(prompt: str, ns: dict[str, Any]) -> None:
    """The prompt's helpers (HumanEval/32's poly, /38's encode_cyclic) for the test; the
    entry point itself is replaced by the proxy afterwards."""
    for src in (prompt, prompt + "    pass\n"):
        try:
            exec(compile(src, "<prompt>", "exec"), ns)
            return
        except SyntaxError:
            continue
        except Exception:
            return


def judge(req: dict[str, Any]) -> tuple[str, str | None, str, int]:
    """(verdict, failure class, detail, calls)."""
    deadline = time.monotonic() + float(req["total_s"])

    def on_alarm(*_: Any) -> None:
        raise SampleTimeout

    signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, float(req["total_s"]))
    cand: Candidate | None = None
    try:
        ns: dict[str, Any] = {"__name__": "__main__", "__builtins__": builtins}
        _exec_prompt(req["prompt"], ns)
        try:
            test = compile(req["test"], "<test>", "exec")
        except SyntaxError as exc:
            return "error", "infra_error:bad_test", f"the test does not compile: {exc}", 0
        cand = Candidate(req, deadline)
        cand.start()
        ns[req["entry"]] = cand
        exec(test, ns)
        check = ns.get("check")
        if not callable(check):
            return "error", "infra_error:bad_test", "the test defines no check()", cand.calls
        check(cand)
        return "pass", None, "", cand.calls
    except Verdict as v:
        status = "error" if v.failure_class.startswith("infra_error") else "fail"
        return status, v.failure_class, v.detail, cand.calls if cand else 0
    except SampleTimeout:
        return (
            "fail",
            "timeout:wall",
            "the sample ran past its time limit",
            cand.calls if cand else 0,
        )
    except AssertionError as exc:
        import traceback

        lines = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == "<test>"]
        lineno = lines[-1].lineno if lines and lines[-1].lineno else 0
        text = req["test"].splitlines()[lineno - 1].strip() if 0 < lineno else ""
        msg = f"assertion failed at test line {lineno}: {text[:300]}"
        return (
            "fail",
            "wrong_answer",
            msg + (f" ({exc})" if str(exc) else ""),
            cand.calls if cand else 0,
        )
    except MemoryError as exc:
        if not getattr(exc, "he_from_candidate", False):  # the checker's own allocation
            return "fail", "resource_limit:memory", "out of memory", cand.calls if cand else 0
        # raised by candidate code within the limit: its exception, like any other (a
        # process killed at the sandbox's limit is runtime_crash:SIGKILL + the cgroup's count)
        return (
            "fail",
            "nonzero_exit",
            f"the candidate raised MemoryError: {exc}",
            cand.calls if cand else 0,
        )
    except RecursionError as exc:
        return "fail", "nonzero_exit", f"RecursionError: {exc}", cand.calls if cand else 0
    except Exception as exc:
        who = (
            "the candidate raised"
            if getattr(exc, "he_from_candidate", False)
            else "the test raised"
        )
        return (
            "fail",
            "nonzero_exit",
            f"{who} {type(exc).__name__}: {exc}",
            cand.calls if cand else 0,
        )
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        if cand is not None:
            cand.close()


def main() -> None:
    _no_dump()
    req = _read_request()
    key = bytes.fromhex(req.pop("key"))
    status, fc, detail, calls = judge(req)
    body = PREFIX + json.dumps(
        {"verdict": status, "class": fc, "calls": calls, "detail": detail[:1000]},
        ensure_ascii=True,
    )
    os.write(1, (tagging.tag_line(key, body) + "\n").encode())


if __name__ == "__main__":
    main()
