"""Runs llama_cpp.server in this process, and exits when the parent's lifeline pipe closes.

Usage (internal): python -m appl.local._child LIFELINE_FD <llama_cpp.server args...>
"""

from __future__ import annotations

import os
import sys
import threading


def _watch_lifeline(fd: int) -> None:
    # read() returns b"" only when every write end is closed: the parent is gone.
    while os.read(fd, 1):
        pass
    os._exit(0)


def main() -> None:
    fd = int(sys.argv[1])
    threading.Thread(target=_watch_lifeline, args=(fd,), daemon=True).start()
    sys.argv = ["llama_cpp.server", *sys.argv[2:]]
    from llama_cpp.server.__main__ import main as serve

    serve()  # type: ignore[no-untyped-call]  # llama_cpp's entry point has no annotations


if __name__ == "__main__":
    main()
