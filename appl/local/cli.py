"""`appl local ...` and `appl serve-local`: the embedded model from the appl command."""

from __future__ import annotations

from typing import Any

from appl.local.__main__ import add_arguments, add_serve_arguments, run


def register_cli(add: Any) -> None:
    add("local", help="manage the embedded local model (fetch, verify, info, serve)",
        configure=add_arguments, run=run)  # fmt: skip
    add("serve-local", help="run the embedded llama.cpp server in the foreground",
        configure=add_serve_arguments, run=run)  # fmt: skip
