"""Side-by-side timing shared by the reader benchmarks (rtllm.py, verilogeval.py, cvdp.py):
rounds that rotate the order of the sides (upstream's tools, upstream's own loop, ours), so
that the machine's load falls on every side alike, and the medians and ratios of their wall
and CPU time."""

from __future__ import annotations

import resource
import statistics
from collections.abc import Callable, Mapping, Sequence
from typing import Any

# one side's run: {problem id: verdict}, wall seconds, CPU seconds
Run = tuple[Mapping[str, Any], float, float]


def cpu_split() -> tuple[float, float]:
    """CPU seconds so far: (this process, its finished children)."""
    me, kids = (
        resource.getrusage(resource.RUSAGE_SELF),
        resource.getrusage(resource.RUSAGE_CHILDREN),
    )
    return me.ru_utime + me.ru_stime, kids.ru_utime + kids.ru_stime


def cpu_total() -> float:
    return sum(cpu_split())


def passed(verdicts: Mapping[str, Any]) -> int:
    """Passes among verdicts that are a bool or a (bool, why) pair."""
    return sum(bool(v[0] if isinstance(v, tuple) else v) for v in verdicts.values())


def rotate(rounds: int, sides: Sequence[tuple[str, Callable[[], Run]]]) -> dict[str, list[Run]]:
    """Run every side `rounds` times; round i starts with side i mod n and keeps the given
    order from there, so over n rounds each side runs once in each place (for two sides:
    first, then second, in turn). Prints a line per run; {side's name: its runs}."""
    runs: dict[str, list[Run]] = {name: [] for name, _ in sides}
    width = max(len(name) for name, _ in sides)
    for i in range(rounds):
        k = i % len(sides)
        for name, fn in [*sides[k:], *sides[:k]]:
            verdicts, wall, cpu = fn()
            runs[name].append((verdicts, wall, cpu))
            print(f"  round {i + 1} {name:{width}}: {wall:6.2f} s wall {cpu:6.2f} s CPU "
                  f"({passed(verdicts)}/{len(verdicts)} pass)", flush=True)  # fmt: skip
    return runs


def alternate(
    rounds: int, upstream: Callable[[], Run], ours: Callable[[], Run]
) -> tuple[list[Run], list[Run]]:
    """Run both sides `rounds` times, upstream first in odd rounds and ours first in even
    ones, printing a line per run; (upstream's runs, ours)."""
    runs = rotate(rounds, [("upstream", upstream), ("ours", ours)])
    return runs["upstream"], runs["ours"]


def median_wall_cpu(runs: list[Run]) -> tuple[float, float]:
    return (statistics.median(float(r[1]) for r in runs),
            statistics.median(float(r[2]) for r in runs))  # fmt: skip


def print_against(runs: Mapping[str, list[Run]], labels: Mapping[str, str], ours: str) -> None:
    """Each side's median wall and CPU under its label (`labels` gives the order), then ours
    over every other side: `ours / <side>: wall Wx, CPU Cx`."""
    width = max(len(label) for label in labels.values()) + 1
    med = {name: median_wall_cpu(runs[name]) for name in labels}
    for name, label in labels.items():
        w, c = med[name]
        print(f"{label + ':':{width}} {w:6.2f} s wall {c:6.2f} s CPU (median of {len(runs[name])})")
    ow, oc = med[ours]
    for name in labels:
        if name != ours:
            w, c = med[name]
            print(f"ours / {name}: wall {ow / w:.2f}x, CPU {oc / c:.2f}x")


def print_medians(up_runs: list[Run], our_runs: list[Run], upstream: str, ours: str) -> None:
    """The medians of each side's wall and CPU time, and ours over upstream's."""
    runs = {"upstream": up_runs, "ours": our_runs}
    print_against(runs, {"upstream": upstream, "ours": ours}, "ours")
