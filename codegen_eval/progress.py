"""Progress of a run on stderr: rich bars on a terminal; elsewhere (a CI log, a pipe) one
plain line every `interval_s`, from a heartbeat thread, so a long run never looks hung.

The heartbeat reads an `appl.clock.Clock` (the real one by default): tests drive it with
`appl.testing.FakeClock` and see each line at the fake second it is due.
"""

from __future__ import annotations

import sys
import threading
from typing import Any, TextIO

from appl.clock import SYSTEM_CLOCK, Clock

MIN_WAIT_S = 0.05  # the heartbeat thread never spins faster than this


class Progress:
    """Counts of generations and scores, shown as bars or heartbeat lines. A no-op when
    disabled. `out` is where lines go (default: the current sys.stderr)."""

    def __init__(
        self,
        enabled: bool,
        interval_s: float = 30.0,
        *,
        clock: Clock = SYSTEM_CLOCK,
        out: TextIO | None = None,
    ) -> None:
        self._p: Any = None
        self._lines = False
        self._totals = {"gen": 0, "score": 0}
        self._done = {"gen": 0, "score": 0}
        self._clock = clock
        self._out = out
        self._due = threading.Lock()  # the heartbeat thread and the event loop both print
        self._t0 = clock.monotonic()
        self._interval_s = interval_s
        self._next_line = self._t0 + interval_s
        self._status = ""
        self._executor_row: Any = None
        if enabled and not sys.stderr.isatty():
            self._lines = True
        elif enabled:
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, TimeElapsedColumn
            from rich.progress import Progress as Bars

            self._p = Bars(
                "[progress.description]{task.description}",
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                console=Console(stderr=True),
            )
            self._gen = self._p.add_task("generate", total=0)
            self._score = self._p.add_task("score", total=0)

    def __enter__(self) -> Progress:
        if self._p is not None:
            self._p.start()
        elif self._lines:
            # a heartbeat: a line every interval even while nothing finishes (one slow model
            # call on a local model can take minutes; a pipe must not look hung meanwhile)
            self._stop = threading.Event()
            self._beat = threading.Thread(target=self._heartbeat, daemon=True, name="progress")
            self._beat.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._p is not None:
            self._p.stop()
        elif self._lines:
            self._stop.set()
            self._beat.join()

    def _heartbeat(self) -> None:
        wait = self._clock.wait
        while not wait(self._stop, max(MIN_WAIT_S, self._next_line - self._clock.monotonic())):
            self._line_if_due()

    def _line_if_due(self) -> None:
        with self._due:
            now = self._clock.monotonic()
            if now < self._next_line:
                return
            self._next_line = now + self._interval_s
        print(self.line(), file=self._out or sys.stderr, flush=True)

    def add(self, *, gen: int = 0, score: int = 0) -> None:
        self._totals["gen"] += gen
        self._totals["score"] += score
        if self._p is not None:
            if gen:
                self._p.update(self._gen, total=(self._p.tasks[self._gen].total or 0) + gen)
            if score:
                self._p.update(self._score, total=(self._p.tasks[self._score].total or 0) + score)

    def done(self, *, gen: int = 0, score: int = 0) -> None:
        self._done["gen"] += gen
        self._done["score"] += score
        if self._p is not None:
            if gen:
                self._p.advance(self._gen, gen)
            if score:
                self._p.advance(self._score, score)
        elif self._lines:
            self._line_if_due()

    def status(self, text: str) -> None:
        """An executor's own state (e.g. slurm jobs queued / running / done)."""
        if text == self._status:
            return
        self._status = text
        if self._p is not None:
            if self._executor_row is None:
                self._executor_row = self._p.add_task(text, total=None)
            self._p.update(self._executor_row, description=text)
        elif self._lines:
            self._line_if_due()

    def line(self) -> str:
        elapsed = int(self._clock.monotonic() - self._t0)
        extra = f"; {self._status}" if self._status else ""
        return (
            f"progress: scored {self._done['score']}/{self._totals['score']}, "
            f"generated {self._done['gen']}/{self._totals['gen']} "
            f"({elapsed // 60}m{elapsed % 60:02d}s){extra}"
        )
