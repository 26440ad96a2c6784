"""A blocking wrapper for scripts: one private event loop per `SyncSandbox`.
Do not use it from inside a running event loop (use `open_sandbox` there)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from .base import FileContent, Sandbox, _make, current_backend
from .types import ExecResult, Limits


class SyncSandbox:
    def __init__(self, backend: str | None = None, **options: Any) -> None:
        """backend: as `open_sandbox`'s (None: `current_backend()`, read here, in the caller's
        context, not on this wrapper's private loop)."""
        self._runner = asyncio.Runner()
        self._sb: Sandbox = _make(backend or current_backend(), **options)
        try:
            self._runner.run(self._sb.start())
        except BaseException:
            self._runner.run(self._sb.close())
            self._runner.close()
            raise

    @property
    def sandbox(self) -> Sandbox:
        return self._sb

    def exec(
        self,
        cmd: Sequence[str],
        *,
        files: Mapping[str, FileContent] | None = None,
        limits: Limits | None = None,
        stdin: FileContent | None = None,
        env: Mapping[str, str] | None = None,
    ) -> ExecResult:
        return self._runner.run(
            self._sb.exec(cmd, files=files, limits=limits, stdin=stdin, env=env)
        )

    def write_file(self, path: str, content: FileContent, *, executable: bool = False) -> None:
        self._runner.run(self._sb.write_file(path, content, executable=executable))

    def read_file(self, path: str) -> bytes:
        return self._runner.run(self._sb.read_file(path))

    def read_text(self, path: str) -> str:
        return self._runner.run(self._sb.read_text(path))

    def run(self, coro: Any) -> Any:
        """Run any coroutine (e.g. a toolchain recipe call) on this sandbox's loop."""
        return self._runner.run(coro)

    def close(self) -> None:
        try:
            self._runner.run(self._sb.close())
        finally:
            self._runner.close()

    def __enter__(self) -> SyncSandbox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@contextmanager
def open_sandbox_sync(backend: str | None = None, **options: Any) -> Iterator[SyncSandbox]:
    sb = SyncSandbox(backend, **options)
    try:
        yield sb
    finally:
        sb.close()
