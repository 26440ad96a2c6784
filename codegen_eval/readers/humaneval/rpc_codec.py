"""Plain data across the HumanEval RPC: what the checker and the candidate's process send each
other. Standard library only: this file is copied next to the runners into the trusted cache
directory and imported there by the sandbox's python3.

A value crosses as JSON of tagged pairs, ``[tag, payload]``, and is rebuilt on the other side
from builtin types only, so the checker never holds an object whose class the candidate
wrote (no custom ``__eq__``, ``__hash__`` or ``__del__``, no exception objects, no code):

    N None   T/F bool   i int (hex text: linear time, no digit limit)   f float (repr text,
    so inf, -inf and nan round-trip)   c complex   s str   b bytes   B bytearray
    l list   t tuple   S set   Z frozenset   d dict (list of [key, value] pairs)
    fn a callable that stays with the checker (arguments only; the candidate calls it back)

Messages are length-prefixed (4 bytes, big-endian) JSON arrays, at most MAX_MESSAGE bytes.
"""

from __future__ import annotations

import json
import math
import os

TYPE_CHECKING = False  # importing typing costs the sandbox's interpreter ~7 ms at start
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

MAX_MESSAGE = 64 << 20
MAX_DEPTH = 200


class ProtocolError(Exception):
    """What came over the pipe is not a well-formed message."""


class Unsupported(TypeError):
    """A value that cannot cross as plain data."""


def _hex(n: int) -> str:
    return f"-{-n:x}" if n < 0 else f"{n:x}"


def encode(
    v: Any, *, lenient: bool, handle: Callable[[Any], int] | None = None, depth: int = 0
) -> Any:
    """The tagged form of `v`. lenient (the candidate's side): subclasses and numpy-like
    scalars become their builtin base, as an in-process comparison would see them; strict
    (the checker's side): other objects are refused, callables become handles."""
    if depth > MAX_DEPTH:
        raise Unsupported(f"nested deeper than {MAX_DEPTH}")
    d = depth + 1
    if v is None:
        return ["N"]
    if isinstance(v, bool):
        return ["T" if v else "F"]
    if isinstance(v, int):
        return ["i", _hex(int(v))]
    if isinstance(v, float):
        return ["f", repr(float(v))]
    if isinstance(v, complex):
        return ["c", [repr(float(v.real)), repr(float(v.imag))]]
    if isinstance(v, str):
        return ["s", str.__str__(v)]
    if isinstance(v, bytearray):
        return ["B", bytes(v).hex()]
    if isinstance(v, bytes):
        return ["b", bytes(v).hex()]
    if isinstance(v, list):
        return ["l", [encode(x, lenient=lenient, handle=handle, depth=d) for x in list(v)]]
    if isinstance(v, tuple):
        return ["t", [encode(x, lenient=lenient, handle=handle, depth=d) for x in tuple(v)]]
    if isinstance(v, frozenset):
        return ["Z", [encode(x, lenient=lenient, handle=handle, depth=d) for x in frozenset(v)]]
    if isinstance(v, set):
        return ["S", [encode(x, lenient=lenient, handle=handle, depth=d) for x in set(v)]]
    if isinstance(v, dict):
        return [
            "d",
            [
                [
                    encode(k, lenient=lenient, handle=handle, depth=d),
                    encode(x, lenient=lenient, handle=handle, depth=d),
                ]
                for k, x in dict(v).items()
            ],
        ]
    if lenient:
        # numpy scalars and arrays (a candidate may compute with numpy)
        for attr in ("tolist", "item"):
            conv = getattr(type(v), attr, None)
            if callable(conv):
                return encode(conv(v), lenient=lenient, handle=handle, depth=d)
    elif handle is not None and callable(v):
        return ["fn", handle(v)]
    raise Unsupported(f"a {type(v).__name__} cannot cross between the processes")


def decode(t: Any, *, callback: Callable[[int], Any] | None = None, depth: int = 0) -> Any:
    """Rebuild a value from its tagged form, with builtin types only. Raises ProtocolError
    on anything malformed."""
    if depth > MAX_DEPTH or not isinstance(t, list) or not t or not isinstance(t[0], str):
        raise ProtocolError("malformed value")
    tag, d = t[0], depth + 1
    try:
        if tag in ("N", "T", "F") and len(t) == 1:
            return None if tag == "N" else tag == "T"
        if len(t) != 2:
            raise ProtocolError("malformed value")
        p = t[1]
        if tag == "i" and isinstance(p, str) and len(p) <= 1 << 24:
            return int(p, 16)
        if tag == "f" and isinstance(p, str) and len(p) <= 40:
            return float(p)
        if tag == "c" and isinstance(p, list) and len(p) == 2:
            return complex(float(p[0][:40]), float(p[1][:40]))
        if tag == "s" and isinstance(p, str):
            return p
        if tag in ("b", "B") and isinstance(p, str):
            raw = bytes.fromhex(p)
            return raw if tag == "b" else bytearray(raw)
        if tag in ("l", "t", "S", "Z") and isinstance(p, list):
            items = [decode(x, callback=callback, depth=d) for x in p]
            return {"l": list, "t": tuple, "S": set, "Z": frozenset}[tag](items)
        if tag == "d" and isinstance(p, list):
            out = {}
            for pair in p:
                if not isinstance(pair, list) or len(pair) != 2:
                    raise ProtocolError("malformed dict entry")
                out[decode(pair[0], callback=callback, depth=d)] = decode(
                    pair[1], callback=callback, depth=d
                )
            return out
        if tag == "fn" and callback is not None and isinstance(p, int):
            return callback(p)
    except (TypeError, ValueError, OverflowError, AttributeError) as exc:
        raise ProtocolError(f"malformed {tag!r} value: {exc}") from None
    raise ProtocolError(f"unknown or malformed tag {tag!r}")


def same_value(a: Any, b: Any) -> bool:
    """Equality that also holds for nan (used by tests of the codec)."""
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return type(a) is type(b) and a == b


# -- framing ----------------------------------------------------------------------------------
def send(fd: int, msg: list[Any]) -> None:
    data = json.dumps(msg, ensure_ascii=True, separators=(",", ":")).encode()
    if len(data) > MAX_MESSAGE:
        raise Unsupported(f"message of {len(data)} bytes is over the {MAX_MESSAGE} limit")
    view = memoryview(len(data).to_bytes(4, "big") + data)
    while view:
        view = view[os.write(fd, view) :]


def read_exact(fd: int, n: int, wait: Callable[[], None] | None = None) -> bytes:
    """n bytes from fd; b"" at end of file before the first byte. `wait` is called before
    each read and may raise (the checker's per-call deadline)."""
    chunks, got = [], 0
    while got < n:
        if wait is not None:
            wait()
        chunk = os.read(fd, min(n - got, 1 << 20))
        if not chunk:
            if got:
                raise ProtocolError("message cut short")
            return b""
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def recv(fd: int, wait: Callable[[], None] | None = None) -> list[Any] | None:
    """The next message, or None at end of file."""
    head = read_exact(fd, 4, wait)
    if not head:
        return None
    size = int.from_bytes(head, "big")
    if size > MAX_MESSAGE:
        raise ProtocolError(f"message of {size} bytes announced")
    body = read_exact(fd, size, wait)
    if len(body) != size:
        raise ProtocolError("message cut short")
    try:
        msg = json.loads(body)
    except (ValueError, RecursionError) as exc:
        raise ProtocolError(f"not JSON: {str(exc)[:80]}") from None
    if not isinstance(msg, list) or not msg or not isinstance(msg[0], str):
        raise ProtocolError("a message is a non-empty JSON array led by its kind")
    return msg
