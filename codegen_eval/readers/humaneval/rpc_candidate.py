"""The candidate's side of the HumanEval RPC: load the candidate program and answer calls.

Runs as ``he_guard python3 -I rpc_candidate.py SOURCE ENTRY`` in the candidate's process,
requests on fd 3, answers on fd 4, stdout and stderr into the log. Nothing here is trusted:
the candidate can rewrite every line of it at run time, and that is fine, because all it can
send the checker is plain data (rpc_codec) that the checker decodes into builtin values.
"""

from __future__ import annotations

import builtins
import os
import sys

TYPE_CHECKING = False  # importing typing costs the sandbox's interpreter ~7 ms at start
if TYPE_CHECKING:
    from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import rpc_codec as codec  # noqa: E402

REQ, RESP = 3, 4


def _text(exc: BaseException) -> str:
    try:
        return str(exc)[:2000]
    except Exception:
        return "<unprintable>"


def _raise_named(name: str, text: str) -> BaseException:
    cls = getattr(builtins, name, None)
    if isinstance(cls, type) and issubclass(cls, Exception):
        try:
            return cls(text)
        except Exception:
            pass
    return RuntimeError(f"{name}: {text}")


class Server:
    def __init__(self, ns: dict[str, Any], entry: str) -> None:
        self.ns, self.entry = ns, entry

    def _callable(self, handle: int) -> Any:
        """A function the test passed: calling it asks the checker to run it."""

        def call_back(*args: Any, **kwargs: Any) -> Any:
            codec.send(
                RESP,
                [
                    "cb",
                    handle,
                    codec.encode(list(args), lenient=True),
                    codec.encode(kwargs, lenient=True),
                ],
            )
            while True:
                msg = codec.recv(REQ)
                if msg is None:
                    raise SystemExit(0)
                if msg[0] == "cbret":
                    return codec.decode(msg[1])
                if msg[0] == "cbraise":
                    raise _raise_named(str(msg[1]), str(msg[2]))
                if msg[0] == "call":  # the callback calls the candidate again
                    self.answer(msg)

        return call_back

    def answer(self, msg: list[Any]) -> None:
        try:
            args = codec.decode(msg[1], callback=self._callable)
            kwargs = codec.decode(msg[2], callback=self._callable)
            result = self.ns[self.entry](*args, **kwargs)
            try:
                out = ["ret", codec.encode(result, lenient=True)]
            except codec.Unsupported as exc:
                out = ["badret", _text(exc)]
        except BaseException as exc:  # SystemExit too: the checker calls that tampering
            out = ["raise", type(exc).__name__, _text(exc)]
        codec.send(RESP, out)

    def serve(self) -> None:
        while (msg := codec.recv(REQ)) is not None:
            if msg[0] == "call" and len(msg) == 3:
                self.answer(msg)


def main() -> None:
    source, entry = sys.argv[1], sys.argv[2]
    ns: dict[str, Any] = {"__name__": "__main__", "__builtins__": builtins}
    try:
        with open(source, encoding="utf-8") as fh:
            code = compile(fh.read(), source, "exec")
        exec(code, ns)
        if not callable(ns.get(entry)):
            raise NameError(f"name {entry!r} is not defined")
    except BaseException as exc:
        codec.send(RESP, ["load_error", type(exc).__name__, _text(exc)])
        return
    sys.stdout.flush()
    codec.send(RESP, ["ready"])
    Server(ns, entry).serve()


if __name__ == "__main__":
    main()
