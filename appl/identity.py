"""The deterministic identity of a model call, computed in exactly one place.

A recorded trace is replayed by matching calls, and matching must not depend on thread
scheduling or completion order. So a call is named by where it sits in the program:

* `site`       - "file:line" of the `gen(...)` call (file relative to the working directory
                 when it lies under it, so traces move between checkouts);
* `path`       - the logical path through @ppl calls, e.g. "main/solve[2]/gen@L14": each
                 @ppl call appends "name[i]" where i counts earlier calls of that function from
                 the same caller, in program order (allocated when the call is made, not when
                 it finishes);
* `occurrence` - how many times this same gen line already ran inside that same frame (a gen
                 in a loop gets 0, 1, 2, ...);
* `step`       - which model request of the gen this is: 0 for the first, then one more per
                 tool round or structured-output retry;
* `request_hash` - sha256 over the canonical JSON of the resolved request, so a replay can
                 tell "same call, different prompt" apart from a missing call.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import FrozenInstanceError, dataclass
from typing import Any

from appl.types import GenRequest


@dataclass(frozen=True, slots=True)
class CallSite:
    """What is known about a gen when it is written, before its inputs resolve."""

    file: str
    line: int
    path: str  # the logical path of the enclosing frame plus "/gen@L<line>"
    occurrence: int


class CallIdentity:
    """The identity of one model request (immutable; compared and hashed on all five fields).

    `request_hash` is computed on first use: hashing the canonical JSON of every request
    costs more than the rest of the runtime's work per gen, and without a tracer or a replay
    resolver nothing reads it.
    """

    __slots__ = ("_request", "_request_hash", "occurrence", "path", "site", "step")
    __match_args__ = ("site", "path", "occurrence", "step", "request_hash")

    site: str
    path: str
    occurrence: int
    step: int
    _request_hash: str | None  # computed on first use from _request
    _request: GenRequest | None

    def __init__(self, site: str, path: str, occurrence: int, step: int, request_hash: str):
        init = object.__setattr__
        init(self, "site", site)
        init(self, "path", path)
        init(self, "occurrence", occurrence)
        init(self, "step", step)
        init(self, "_request_hash", request_hash)
        init(self, "_request", None)

    @classmethod
    def _for_request(
        cls, site: str, path: str, occurrence: int, step: int, request: GenRequest
    ) -> CallIdentity:
        identity = cls(site, path, occurrence, step, "")
        object.__setattr__(identity, "_request_hash", None)
        object.__setattr__(identity, "_request", request)
        return identity

    @property
    def request_hash(self) -> str:
        value = self._request_hash
        if value is None:
            assert self._request is not None  # set with _request_hash None, cleared after
            value = request_hash(self._request)
            object.__setattr__(self, "_request_hash", value)
            object.__setattr__(self, "_request", None)
        return value

    def __setattr__(self, name: str, value: Any) -> None:
        raise FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise FrozenInstanceError(f"cannot delete field {name!r}")

    def _fields(self) -> tuple[str, str, int, int, str]:
        return (self.site, self.path, self.occurrence, self.step, self.request_hash)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        assert isinstance(other, CallIdentity)
        return self._fields() == other._fields()

    def __hash__(self) -> int:
        return hash(self._fields())

    def __repr__(self) -> str:
        return (
            f"CallIdentity(site={self.site!r}, path={self.path!r}, "
            f"occurrence={self.occurrence!r}, step={self.step!r}, "
            f"request_hash={self.request_hash!r})"
        )

    def __reduce__(self) -> tuple[Any, ...]:
        return (CallIdentity, self._fields())

    @property
    def key(self) -> str:
        """A compact string key for indexes: path#occurrence.step (hash kept separate)."""
        return f"{self.path}#{self.occurrence}.{self.step}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "site": self.site,
            "path": self.path,
            "occurrence": self.occurrence,
            "step": self.step,
            "request_hash": self.request_hash,
        }


def display_file(filename: str) -> str:
    """The file part of a call site: relative to the cwd when possible, else as given."""
    try:
        rel = os.path.relpath(filename)
    except ValueError:  # another drive on Windows
        return filename
    return filename if rel.startswith("..") else rel


def request_to_jsonable(request: GenRequest) -> dict[str, Any]:
    """The request as plain JSON data (also what events carry)."""
    return {
        "model": request.model,
        "messages": [m.to_openai() for m in request.messages],
        "temperature": request.temperature,
        "top_p": request.top_p,
        "max_tokens": request.max_tokens,
        "stop": request.stop,
        "seed": request.seed,
        "tools": [t.to_openai() for t in request.tools],
        "tool_choice": request.tool_choice,
        "response_format": request.response_format,
        "stream": request.stream,
        "extra": request.extra,
        # only when asked for: the hashes of one-choice requests stay as they were
        **({"n": request.n} if request.n != 1 else {}),
    }


def request_hash(request: GenRequest) -> str:
    canonical = json.dumps(
        request_to_jsonable(request), sort_keys=True, separators=(",", ":"), default=str
    )
    return hashlib.sha256(canonical.encode()).hexdigest()


def compute_call_identity(site: CallSite, request: GenRequest, step: int = 0) -> CallIdentity:
    """THE identity function: everything that names a model call goes through here."""
    return CallIdentity._for_request(
        f"{site.file}:{site.line}", site.path, site.occurrence, step, request
    )
