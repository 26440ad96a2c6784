"""Record once, replay forever: the logic behind the pytest fixture `appl_replay`."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Literal

from appl.trace._record import recording
from appl.trace._replay import ReplayMode, replaying

CassetteMode = Literal["record", "replay"]


@contextmanager
def cassette(
    path: str | Path, *, record: bool | None = None, mode: ReplayMode = "strict"
) -> Iterator[CassetteMode]:
    """Record to `path` when it is absent (or `record=True`), else replay it (strictly).

    A recording is written to "<path>.partial" and renamed only when the block succeeds, so a
    failed test never leaves a half trace that later replays would trust. Yields which of
    the two happened.
    """
    file = Path(path)
    if record is None:
        record = not file.exists()
    if not record:
        with replaying(file, mode=mode):
            yield "replay"
        return
    partial = file.with_name(file.name + ".partial")
    # a .partial left by an interrupted recording is stale by definition
    with recording(partial, program=f"cassette {file.name}", overwrite=True):
        yield "record"
    os.replace(partial, file)  # only reached when the block raised nothing
