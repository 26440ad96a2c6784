"""Side-by-side timing shared by the reader benchmarks (rtllm.py, verilogeval.py, cvdp.py):
rounds that alternate upstream's loop and ours, so that the machine's load falls on both
sides alike, and the medians and ratios of their wall and CPU time."""

from __future__ import annotations

import resource
import statistics
from collections.abc import Callable, Mapping
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


def alternate(
    rounds: int, upstream: Callable[[], Run], ours: Callable[[], Run]
) -> tuple[list[Run], list[Run]]:
    """Run both sides `rounds` times, upstream first in odd rounds and ours first in even
    ones, printing a line per run; (upstream's runs, ours)."""
    runs: dict[str, list[Run]] = {"upstream": [], "ours": []}
    for i in range(rounds):
        order = [("upstream", upstream), ("ours", ours)]
        for name, fn in order if i % 2 == 0 else order[::-1]:
            verdicts, wall, cpu = fn()
            runs[name].append((verdicts, wall, cpu))
            print(f"  round {i + 1} {name:8}: {wall:6.2f} s wall {cpu:6.2f} s CPU "
                  f"({passed(verdicts)}/{len(verdicts)} pass)", flush=True)  # fmt: skip
    return runs["upstream"], runs["ours"]


def print_medians(up_runs: list[Run], our_runs: list[Run], upstream: str, ours: str) -> None:
    """The medians of each side's wall and CPU time, and ours over upstream's."""

    def med(runs: list[Run], k: int) -> float:
        return statistics.median(float(r[k]) for r in runs)

    uw, uc, ow, oc = med(up_runs, 1), med(up_runs, 2), med(our_runs, 1), med(our_runs, 2)
    width = max(len(upstream), len(ours)) + 1
    print(f"{upstream + ':':{width}} {uw:6.2f} s wall {uc:6.2f} s CPU (median of {len(up_runs)})")
    print(f"{ours + ':':{width}} {ow:6.2f} s wall {oc:6.2f} s CPU")
    print(f"ours / upstream: wall {ow / uw:.2f}x, CPU {oc / uc:.2f}x")
