"""Reading a user's JSONL file: blank lines skipped, a bad line named by file and number."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any


def jsonl_records(path: Path, error: type[Exception] = ValueError) -> Iterator[tuple[int, Any]]:
    """(line number, parsed value) for each non-blank line; `error` on a line that is not JSON."""
    with path.open(encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                yield lineno, json.loads(line)
            except json.JSONDecodeError as exc:
                raise error(f"{path}:{lineno}: not JSON ({exc.msg})") from None
