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
from dataclasses import dataclass
from typing import Any

from appl.types import GenRequest


@dataclass(frozen=True, slots=True)
class CallSite:
    """What is known about a gen when it is written, before its inputs resolve."""

    file: str
    line: int
    path: str  # the logical path of the enclosing frame plus "/gen@L<line>"
    occurrence: int


@dataclass(frozen=True, slots=True)
class CallIdentity:
    site: str
    path: str
    occurrence: int
    step: int
    request_hash: str

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
    }


def request_hash(request: GenRequest) -> str:
    canonical = json.dumps(
        request_to_jsonable(request), sort_keys=True, separators=(",", ":"), default=str
    )
    return hashlib.sha256(canonical.encode()).hexdigest()


def compute_call_identity(site: CallSite, request: GenRequest, step: int = 0) -> CallIdentity:
    """THE identity function: everything that names a model call goes through here."""
    return CallIdentity(
        site=f"{site.file}:{site.line}",
        path=site.path,
        occurrence=site.occurrence,
        step=step,
        request_hash=request_hash(request),
    )
